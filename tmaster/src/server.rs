//! The accept loop of the binary protocol server.

use crate::connection::{self, Admission};
use crate::daemon::Event;
use crate::registry::ConnId;
use heron_proto::HeronCodec;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tracing::warn;

/// Accepts connections forever, one task per connection.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    events: mpsc::Sender<Event>,
    codec: HeronCodec,
    outbox_capacity: usize,
    tls: Option<heron_auth::Tls>,
    auth: Option<heron_auth::Secret>,
) {
    let mut next: ConnId = 1;
    let slots = heron_auth::PendingHandshakes::default();
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                // A slot for the handshake; the connection gives it back once proven.
                let admission = if tls.is_none() && auth.is_none() {
                    None
                } else {
                    match slots.admit(&peer) {
                        Some(slot) => Some(Admission {
                            tls: tls.clone(),
                            secret: auth.clone(),
                            slot,
                        }),
                        None => continue,
                    }
                };
                let conn = next;
                next += 1;
                tokio::spawn(connection::serve(
                    conn,
                    stream,
                    peer,
                    events.clone(),
                    codec,
                    outbox_capacity,
                    admission,
                ));
            }
            Err(e) => {
                // Out of file descriptors and the like: back off rather than spin.
                warn!(error = %e, "cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}
