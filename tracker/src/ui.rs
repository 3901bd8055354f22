//! The web page: one HTML file, two scripts and the uPlot charting library (1.6.32, MIT,
//! its licence served beside it), compiled into the binary (no CDN, no build step). The page
//! reads the same REST API as any client.

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

use crate::clusters::Clusters;

const INDEX: &str = include_str!("../assets/index.html");

/// The page's other files: (path, content type, text).
const ASSETS: [(&str, &str, &str); 5] = [
    (
        "/ui/app.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/app.js"),
    ),
    (
        "/ui/views.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/views.js"),
    ),
    (
        "/ui/uPlot.iife.min.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/uPlot.iife.min.js"),
    ),
    (
        "/ui/uPlot.min.css",
        "text/css; charset=utf-8",
        include_str!("../assets/uPlot.min.css"),
    ),
    (
        "/ui/uPlot.LICENSE",
        "text/plain; charset=utf-8",
        include_str!("../assets/uPlot.LICENSE"),
    ),
];

/// `/`, `/ui` and the page's files under `/ui/`.
pub fn routes() -> Router<Clusters> {
    let mut r = Router::new()
        .route("/", get(index))
        .route("/ui", get(index))
        .route("/ui/", get(index))
        .route("/favicon.ico", get(favicon));
    for (path, content_type, text) in ASSETS {
        r = r.route(
            path,
            get(move || async move { ([(header::CONTENT_TYPE, content_type)], text) }),
        );
    }
    r
}

async fn index() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], INDEX)
}

/// An empty icon, so that browsers log no 404 for it.
async fn favicon() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "image/svg+xml")],
        "<svg xmlns=\"http://www.w3.org/2000/svg\"/>",
    )
}
