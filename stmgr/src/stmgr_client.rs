//! One attempt at a client connection to another stream manager: connect, say hello, wait
//! for OK. The outcome goes back to the core, which owns the retry schedule; on success the
//! socket becomes an ordinary connection that this stream manager sends tuples on.

use crate::config::REQUEST_TIMEOUT;
use crate::event::Event;
use bytes::BytesMut;
use futures::{SinkExt, StreamExt};
use heron_auth::Link;
use heron_proto::stmgr::{StrMgrHelloRequest, StrMgrHelloResponse};
use heron_proto::{is_ok, CodecError, HeronCodec, Packet, ReqId};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_util::codec::Framed;
use tracing::{debug, warn};

/// How this stream manager introduces itself to a peer: the topology's secret (proven
/// first, see `heron_auth`) and then the hello naming it.
#[derive(Clone, Debug)]
pub(crate) struct Introduction {
    /// Names this stream manager and its topology.
    pub hello: StrMgrHelloRequest,
    /// The topology's secret; `None` with `heron-rs.auth.required=false`.
    pub auth: Option<heron_auth::Secret>,
    /// TLS to the peer (`heron-rs.tls.enabled`).
    pub tls: Option<heron_auth::Tls>,
    /// This stream manager's host: a peer on the same host is tried on its local mesh socket
    /// first ([`heron_flow::local_socket::mesh_name`]).
    pub host: String,
}

/// Why an attempt failed.
#[derive(Debug, thiserror::Error)]
enum HelloError {
    #[error("connect failed: {0}")]
    Connect(std::io::Error),
    #[error("authentication failed: {0}")]
    Auth(#[from] heron_auth::AuthError),
    #[error("{0}")]
    Codec(#[from] CodecError),
    #[error("the connection closed before the hello response")]
    Closed,
    #[error("no hello response within {0:?}")]
    Timeout(std::time::Duration),
    #[error("bad hello response: {0}")]
    Unexpected(String),
    #[error("hello refused: {0}")]
    Refused(String),
}

/// Tries once to connect to `stmgr_id` at `host:port`; reports the outcome as
/// [`Event::StmgrClientUp`] or [`Event::StmgrClientFailed`].
pub(crate) async fn connect(
    stmgr_id: String,
    host: String,
    port: u16,
    attempt: u64,
    intro: Introduction,
    codec: HeronCodec,
    events: mpsc::Sender<Event>,
) {
    let outcome =
        match tokio::time::timeout(REQUEST_TIMEOUT, handshake(&host, port, &intro, codec)).await {
            Ok(r) => r,
            Err(_) => Err(HelloError::Timeout(REQUEST_TIMEOUT)),
        };
    let event = match outcome {
        Ok((stream, leftover)) => Event::StmgrClientUp {
            stmgr_id,
            attempt,
            stream,
            leftover,
        },
        Err(e) => {
            match e {
                HelloError::Connect(_) | HelloError::Closed | HelloError::Timeout(_) => {
                    debug!("cannot connect to stream manager {stmgr_id} at {host}:{port}: {e}")
                }
                _ => warn!("cannot connect to stream manager {stmgr_id} at {host}:{port}: {e}"),
            }
            Event::StmgrClientFailed { stmgr_id, attempt }
        }
    };
    let _ = events.send(event).await;
}

/// The connection to the peer at `host:port`, its secret's handshake done: the peer's local
/// mesh socket when it is on this host (the same host name, no TLS, and the socket there), or
/// else its TCP port. Only a peer that is not there on the local socket falls back to TCP: one
/// that is and fails the handshake is a failed attempt, as on TCP.
async fn dial(host: &str, port: u16, intro: &Introduction) -> Result<Link, HelloError> {
    if intro.tls.is_none() && host == intro.host {
        if let Some(stream) = connect_mesh_socket(host, port).await {
            let mut link = Link::Local(stream);
            if let Some(secret) = &intro.auth {
                heron_auth::connect(&mut link, secret).await?;
            }
            return Ok(link);
        }
    }
    let stream = TcpStream::connect((host, port))
        .await
        .map_err(HelloError::Connect)?;
    crate::net::tune_data_socket(&stream).map_err(HelloError::Connect)?;
    Ok(heron_auth::dial(stream, intro.tls.as_ref(), intro.auth.as_ref()).await?)
}

/// A connection to the local mesh socket of the stream manager serving stream managers on
/// `host:port` of this host; `None` when nothing listens there (another runtime's stream
/// manager, another network namespace, a system without abstract sockets).
async fn connect_mesh_socket(host: &str, port: u16) -> Option<tokio::net::UnixStream> {
    let addr = heron_flow::local_socket::mesh_address(host, port).ok()?;
    // std connects to an abstract address (tokio only to paths); a connect that waits for a
    // full backlog waits on a thread of the blocking pool, not on the event loop's
    let connected = tokio::task::spawn_blocking(move || {
        let s = std::os::unix::net::UnixStream::connect_addr(&addr)?;
        s.set_nonblocking(true)?;
        Ok::<_, std::io::Error>(s)
    })
    .await
    .ok()?;
    let stream = match connected.and_then(tokio::net::UnixStream::from_std) {
        Ok(s) => s,
        Err(e) => {
            debug!(
                "no local mesh socket @{}: {e}",
                heron_flow::local_socket::mesh_name(host, port)
            );
            return None;
        }
    };
    if let Err(e) = crate::net::tune_local_socket(&stream) {
        debug!("cannot set the local mesh socket's options: {e}");
    }
    Some(stream)
}

async fn handshake(
    host: &str,
    port: u16,
    intro: &Introduction,
    codec: HeronCodec,
) -> Result<(Link, BytesMut), HelloError> {
    let stream = dial(host, port, intro).await?;
    let mut framed = Framed::new(stream, codec);
    let reqid = ReqId::random();
    framed
        .send(Packet::from_message(reqid, &intro.hello))
        .await?;
    let packet = framed.next().await.ok_or(HelloError::Closed)??;
    if packet.reqid != reqid {
        return Err(HelloError::Unexpected(format!(
            "{} with another request id",
            packet.type_name()
        )));
    }
    let resp: StrMgrHelloResponse = packet
        .decode()
        .map_err(|e| HelloError::Unexpected(e.to_string()))?;
    if !is_ok(&resp.status) {
        return Err(HelloError::Refused(
            resp.status.message.unwrap_or_else(|| "NOTOK".into()),
        ));
    }
    let parts = framed.into_parts();
    Ok((parts.io, parts.read_buf))
}
