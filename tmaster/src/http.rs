//! The controller's HTTP server (axum) on `controller_port`: every GET or POST, whatever the
//! path, goes to the core as [`Event::Control`] with its path and query pairs; the core
//! decides (see [`crate::controller`]) and its answer is sent back as plain text.

use crate::daemon::Event;
use axum::extract::{Query, State};
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tracing::warn;

/// The controller's routes: everything goes to the core through `events`.
pub(crate) fn router(events: mpsc::Sender<Event>) -> Router {
    Router::new().fallback(handle).with_state(events)
}

/// Serves the controller on `listener` until the task is dropped.
pub(crate) async fn serve(listener: TcpListener, events: mpsc::Sender<Event>) {
    if let Err(e) = axum::serve(listener, router(events)).await {
        warn!(error = %e, "the controller server stopped");
    }
}

async fn handle(
    State(events): State<mpsc::Sender<Event>>,
    method: Method,
    uri: Uri,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    if method != Method::GET && method != Method::POST {
        return (StatusCode::METHOD_NOT_ALLOWED, "use GET or POST\n").into_response();
    }
    let (reply, rx) = oneshot::channel();
    let control = Event::Control {
        path: uri.path().to_string(),
        query,
        reply,
    };
    let answer = match events.send(control).await {
        Ok(()) => rx.await.ok(),
        Err(_) => None,
    };
    match answer {
        Some(a) => (
            StatusCode::from_u16(a.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            a.body,
        )
            .into_response(),
        None => (StatusCode::SERVICE_UNAVAILABLE, "the tmaster is stopping\n").into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::Answer;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn request(port: u16, line: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        s.write_all(format!("{line}\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn requests_reach_the_core_and_its_answer_comes_back() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, mut rx) = mpsc::channel(4);
        tokio::spawn(serve(listener, tx));
        // a fake core: echoes what it got
        tokio::spawn(async move {
            while let Some(Event::Control { path, query, reply }) = rx.recv().await {
                let status = if path == "/activate" { 200 } else { 400 };
                let _ = reply.send(Answer {
                    status,
                    body: format!("{path} {query:?}"),
                });
            }
        });
        let out = request(
            port,
            "POST /runtime_config/update?topologyid=T-1&runtime-config=a%3Ab:c+d HTTP/1.1",
        )
        .await;
        assert!(out.starts_with("HTTP/1.1 400"), "{out}");
        assert!(
            out.contains(
                r#"/runtime_config/update [("topologyid", "T-1"), ("runtime-config", "a:b:c d")]"#
            ),
            "{out}"
        );
        let out = request(port, "GET /activate?topologyid=T-1 HTTP/1.1").await;
        assert!(out.starts_with("HTTP/1.1 200"), "{out}");
        let out = request(port, "DELETE /activate HTTP/1.1").await;
        assert!(out.starts_with("HTTP/1.1 405"), "{out}");
    }
}
