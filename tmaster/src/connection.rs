//! One accepted connection: framing, decoding and dispatch into the shell's event queue.
//!
//! Bad input never reaches the core: a framing error (garbage, a truncated or oversized
//! packet), a payload that does not decode, or a well-formed packet of a type the tmaster does
//! not handle closes the connection with a warning. (Heron's servers log and drop unknown
//! types; we close, so a confused peer finds out at once instead of waiting on replies.)

use crate::core::{Request, StatefulReport};
use crate::daemon::Event;
use crate::registry::ConnId;
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use heron_proto::ckptmgr::{InstanceStateStored, ResetTopologyState, RestoreTopologyStateResponse};
use heron_proto::tmanager::{PublishMetrics, StMgrHeartbeatRequest, StMgrRegisterRequest};
use heron_proto::{CodecError, HeronCodec, Name, Packet};
use std::net::SocketAddr;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_util::codec::Framed;
use tracing::{debug, warn};

/// What a connection must pass before the shell hears of it: TLS and the handshake with the
/// topology's secret, holding one of the listener's handshake slots meanwhile.
pub(crate) struct Admission {
    /// TLS (`heron-rs.tls.enabled`).
    pub tls: Option<heron_auth::Tls>,
    /// The topology's secret.
    pub secret: Option<heron_auth::Secret>,
    /// Given back once the handshakes are over.
    pub slot: tokio::sync::OwnedSemaphorePermit,
}

/// Serves one connection until the peer closes it, it sends bad input, or the shell drops its
/// outbox. Always tells the shell when it is done.
pub(crate) async fn serve(
    conn: ConnId,
    stream: TcpStream,
    peer: SocketAddr,
    events: mpsc::Sender<Event>,
    codec: HeronCodec,
    outbox_capacity: usize,
    admission: Option<Admission>,
) {
    let _ = stream.set_nodelay(true);
    let stream = match admission {
        None => heron_auth::Link::Plain(stream),
        Some(Admission { tls, secret, slot }) => {
            // Before the shell hears of the connection: a peer without the secret can neither
            // register nor displace a registered stream manager.
            match heron_auth::admit(stream, tls.as_ref(), secret.as_ref()).await {
                Ok(link) => {
                    drop(slot);
                    link
                }
                Err(e) => {
                    warn!(%peer, conn, "refusing a connection from {peer}: authentication failed: {e}");
                    return;
                }
            }
        }
    };
    let (outbox, mut outgoing) = mpsc::channel::<Bytes>(outbox_capacity.max(1));
    if events
        .send(Event::Connected { conn, peer, outbox })
        .await
        .is_err()
    {
        return;
    }
    debug!(%peer, conn, "connection accepted");
    let mut framed = Framed::new(stream, codec);
    loop {
        tokio::select! {
            read = framed.next() => match read {
                None => {
                    debug!(%peer, conn, "connection closed by the peer");
                    break;
                }
                Some(Err(e)) => {
                    warn!(%peer, conn, reason = %e, "closing connection: unreadable input");
                    break;
                }
                Some(Ok(packet)) => match decode(&packet) {
                    Ok(Some(request)) => {
                        let event = Event::Request { conn, reqid: packet.reqid, request };
                        if events.send(event).await.is_err() {
                            return;
                        }
                    }
                    Ok(None) => {
                        warn!(
                            %peer,
                            conn,
                            type_name = packet.type_name(),
                            "closing connection: a message of a type the tmaster does not handle"
                        );
                        break;
                    }
                    Err(e) => {
                        warn!(%peer, conn, reason = %e, "closing connection: undecodable message");
                        break;
                    }
                },
            },
            out = outgoing.recv() => match out {
                Some(bytes) => {
                    if let Err(e) = framed.send(bytes).await {
                        warn!(%peer, conn, reason = %e, "closing connection: write failed");
                        break;
                    }
                }
                None => {
                    debug!(%peer, conn, "connection closed by the tmaster");
                    break;
                }
            },
        }
    }
    let _ = events.send(Event::Closed { conn }).await;
}

/// Decodes a packet the tmaster handles; `Ok(None)` for other type names.
pub(crate) fn decode(packet: &Packet) -> Result<Option<Request>, CodecError> {
    let name = packet.type_name();
    Ok(Some(if name == StMgrRegisterRequest::full_name() {
        Request::Register(packet.decode()?)
    } else if name == StMgrHeartbeatRequest::full_name() {
        Request::Heartbeat(packet.decode()?)
    } else if name == PublishMetrics::full_name() {
        Request::Metrics(packet.decode()?)
    } else if name == InstanceStateStored::full_name() {
        Request::Stateful(StatefulReport::Stored(packet.decode()?))
    } else if name == RestoreTopologyStateResponse::full_name() {
        Request::Stateful(StatefulReport::Restored(packet.decode()?))
    } else if name == ResetTopologyState::full_name() {
        Request::Stateful(StatefulReport::Reset(packet.decode()?))
    } else {
        return Ok(None);
    }))
}
