//! The web page: one HTML file and one script, compiled into the binary (no CDN, no build
//! step). The page reads the same REST API as any client.

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

use crate::clusters::Clusters;

const INDEX: &str = include_str!("../assets/index.html");
const APP: &str = include_str!("../assets/app.js");

/// `/`, `/ui` and `/ui/app.js`.
pub fn routes() -> Router<Clusters> {
    Router::new()
        .route("/", get(index))
        .route("/ui", get(index))
        .route("/ui/", get(index))
        .route("/ui/app.js", get(app))
        .route("/favicon.ico", get(favicon))
}

async fn index() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], INDEX)
}

async fn app() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        APP,
    )
}

/// An empty icon, so that browsers log no 404 for it.
async fn favicon() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "image/svg+xml")],
        "<svg xmlns=\"http://www.w3.org/2000/svg\"/>",
    )
}
