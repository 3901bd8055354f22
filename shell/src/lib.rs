//! A container's shell (Heron's `heron-shell`): a small read-only HTTP server, run by each
//! container's stream manager on the port it advertises in the physical plan
//! (`StMgr.shell_port`), through which the tracker shows instances' log files.
//!
//! Routes (Heron shell's paths): `GET /filedata/<path>?offset=O&length=L` →
//! `{"data", "offset", "length", "size"}` (`offset=-1`: the last `L` bytes),
//! `GET /filestats/<path>` → `{"files": [{"name", "size", "is_dir"}]}`, and `GET /health`.
//! Only `log-files/` of the container's working directory is served ([`files::resolve`]);
//! errors are `{"status": "failure", "message"}` with 403 or 404.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! heron_shell::serve(listener, std::env::current_dir()?).await
//! # }
//! ```

pub mod files;

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use files::FileError;
use serde::Deserialize;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;

/// The default page length of `/filedata`.
pub const DEFAULT_LENGTH: u64 = 64 * 1024;

#[derive(Deserialize)]
struct PageQuery {
    offset: Option<i64>,
    length: Option<u64>,
}

fn failure(e: FileError) -> Response {
    let status = match e {
        FileError::Forbidden { .. } => StatusCode::FORBIDDEN,
        FileError::NotFound { .. } => StatusCode::NOT_FOUND,
        FileError::Io { .. } => StatusCode::INTERNAL_SERVER_ERROR,
    };
    (
        status,
        Json(json!({"status": "failure", "message": e.to_string()})),
    )
        .into_response()
}

async fn filedata(
    State(root): State<Arc<PathBuf>>,
    UrlPath(rel): UrlPath<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    let offset = q.offset.unwrap_or(0);
    let length = q.length.unwrap_or(DEFAULT_LENGTH);
    let answer = tokio::task::spawn_blocking(move || {
        let path = files::resolve(&root, &rel)?;
        files::read_page(&path, &rel, offset, length)
    })
    .await;
    match answer {
        Ok(Ok(page)) => Json(page).into_response(),
        Ok(Err(e)) => failure(e),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

async fn filestats(State(root): State<Arc<PathBuf>>, UrlPath(rel): UrlPath<String>) -> Response {
    let answer = tokio::task::spawn_blocking(move || {
        let path = files::resolve(&root, &rel)?;
        files::list(&path, &rel)
    })
    .await;
    match answer {
        Ok(Ok(files)) => Json(json!({ "files": files })).into_response(),
        Ok(Err(e)) => failure(e),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// The shell's routes over the working directory `root`.
pub fn router(root: PathBuf) -> Router {
    Router::new()
        .route("/health", get(|| async { Json(json!("ok")) }))
        .route("/filedata/{*path}", get(filedata))
        .route("/filestats/{*path}", get(filestats))
        .with_state(Arc::new(root))
}

/// Serves the shell for the working directory `root` on `listener` until an error.
pub async fn serve(listener: tokio::net::TcpListener, root: PathBuf) -> std::io::Result<()> {
    axum::serve(listener, router(root)).await
}
