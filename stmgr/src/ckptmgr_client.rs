//! The client of the container's checkpoint manager (`EFFECTIVELY_ONCE` only): connect
//! (retrying), write what the core sends, pass what comes back to the core, start over when
//! the connection drops. The core registers and sends requests; this task only moves frames.
//!
//! This is control traffic, a `Framed` socket and a plain loop. Frames the core sends while
//! the connection is down are dropped: a state that does not reach the checkpoint manager
//! means that checkpoint does not complete, and the core asks for a restore when the
//! connection goes.

use crate::config::RECONNECT_INTERVAL;
use crate::event::Event;
use bytes::Bytes;
use futures::StreamExt;
use heron_proto::HeronCodec;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_util::codec::Framed;
use tracing::{debug, info, warn};

/// Runs until the core goes away: `frames` are written to the checkpoint manager on
/// 127.0.0.1:`port`; its packets and the connection's ups and downs become events.
pub(crate) async fn run(
    port: u16,
    auth: Option<heron_auth::Secret>,
    codec: HeronCodec,
    mut frames: mpsc::UnboundedReceiver<Bytes>,
    events: mpsc::Sender<Event>,
) {
    let mut logged = false;
    loop {
        let stream = match connect(port, auth.as_ref()).await {
            Ok(s) => s,
            Err(e) => {
                if !logged {
                    info!("waiting for the checkpoint manager on port {port}: {e}");
                    logged = true;
                }
                // drop what the core sent meanwhile
                while frames.try_recv().is_ok() {}
                tokio::time::sleep(RECONNECT_INTERVAL).await;
                continue;
            }
        };
        logged = false;
        info!("connected to the checkpoint manager on port {port}");
        if events.send(Event::CkptmgrUp).await.is_err() {
            return;
        }
        let mut conn = Framed::new(stream, codec);
        let why = loop {
            tokio::select! {
                frame = frames.recv() => match frame {
                    Some(bytes) => {
                        // whole frames, already encoded by the core
                        if let Err(e) = conn.get_mut().write_all(&bytes).await {
                            break format!("write failed: {e}");
                        }
                    }
                    None => return,
                },
                packet = conn.next() => match packet {
                    Some(Ok(p)) => {
                        if events.send(Event::CkptmgrPacket(p)).await.is_err() {
                            return;
                        }
                    }
                    Some(Err(e)) => break format!("{e}"),
                    None => break "closed by the checkpoint manager".to_string(),
                },
            }
        };
        drop(conn);
        warn!("checkpoint manager connection lost: {why}");
        if events.send(Event::CkptmgrDown).await.is_err() {
            return;
        }
        debug!("reconnecting to the checkpoint manager");
        tokio::time::sleep(RECONNECT_INTERVAL).await;
    }
}

/// Connects to 127.0.0.1:`port` and proves this stream manager with the topology's secret.
async fn connect(port: u16, auth: Option<&heron_auth::Secret>) -> Result<TcpStream, String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| e.to_string())?;
    let _ = stream.set_nodelay(true);
    if let Some(secret) = auth {
        heron_auth::connect(&mut stream, secret)
            .await
            .map_err(|e| format!("authentication failed: {e}"))?;
    }
    Ok(stream)
}
