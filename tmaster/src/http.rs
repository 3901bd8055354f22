//! The controller's HTTP server (axum) on `controller_port`: every GET or POST, whatever the
//! path, goes to the core as [`Event::Control`] with its path and query pairs; the core
//! decides (see [`crate::controller`]) and its answer is sent back as plain text.
//!
//! With the topology's secret every request must carry `Authorization: Bearer <token>`
//! ([`heron_auth::Secret::bearer_token`]); one without it gets 401 and never reaches the core.

use crate::daemon::Event;
use axum::extract::{ConnectInfo, Query, State};
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use std::net::SocketAddr;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tracing::warn;

/// What every request needs: the way to the core and the secret tokens are checked against.
#[derive(Clone)]
pub(crate) struct Controller {
    events: mpsc::Sender<Event>,
    auth: Option<heron_auth::Secret>,
}

/// The controller's routes: everything goes to the core through `events`.
pub(crate) fn router(events: mpsc::Sender<Event>, auth: Option<heron_auth::Secret>) -> Router {
    Router::new()
        .fallback(handle)
        .with_state(Controller { events, auth })
}

/// Serves the controller on `listener` until the task is dropped.
pub(crate) async fn serve(
    listener: TcpListener,
    events: mpsc::Sender<Event>,
    auth: Option<heron_auth::Secret>,
) {
    let app = router(events, auth).into_make_service_with_connect_info::<SocketAddr>();
    if let Err(e) = axum::serve(listener, app).await {
        warn!(error = %e, "the controller server stopped");
    }
}

async fn handle(
    State(Controller { events, auth }): State<Controller>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    method: Method,
    headers: HeaderMap,
    uri: Uri,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    if method != Method::GET && method != Method::POST {
        return (StatusCode::METHOD_NOT_ALLOWED, "use GET or POST\n").into_response();
    }
    if let Some(secret) = &auth {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if !secret.check_bearer(given) {
            let what = if given.is_some() { "a wrong" } else { "no" };
            warn!(%peer, path = uri.path(), "refusing a controller request with {what} bearer token");
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "this topology's controller needs Authorization: Bearer <token> \
                 (heron activate/deactivate/update read it from the topology's working \
                 directory)\n",
            )
                .into_response();
        }
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
        tokio::spawn(serve(listener, tx, None));
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

    #[tokio::test]
    async fn with_a_secret_only_requests_with_its_token_reach_the_core() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let secret = heron_auth::Secret::generate();
        let (tx, mut rx) = mpsc::channel(4);
        tokio::spawn(serve(listener, tx, Some(secret.clone())));
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen2 = seen.clone();
        tokio::spawn(async move {
            while let Some(Event::Control { path, reply, .. }) = rx.recv().await {
                seen2.lock().unwrap().push(path);
                let _ = reply.send(Answer {
                    status: 200,
                    body: "ok".into(),
                });
            }
        });
        let line = "POST /deactivate?topologyid=T-1 HTTP/1.1";
        let out = request(port, line).await;
        assert!(out.starts_with("HTTP/1.1 401"), "{out}");
        assert!(out.contains("Bearer"), "{out}");
        let wrong = heron_auth::Secret::generate().bearer_token();
        let out = request(port, &format!("{line}\r\nAuthorization: Bearer {wrong}")).await;
        assert!(out.starts_with("HTTP/1.1 401"), "{out}");
        assert!(
            seen.lock().unwrap().is_empty(),
            "refused requests reached the core"
        );
        let token = secret.bearer_token();
        let out = request(port, &format!("{line}\r\nAuthorization: Bearer {token}")).await;
        assert!(out.starts_with("HTTP/1.1 200"), "{out}");
        assert_eq!(*seen.lock().unwrap(), vec!["/deactivate".to_string()]);
    }
}
