//! The tmaster's client of its container's checkpoint manager (`EFFECTIVELY_ONCE` only):
//! connect (retrying), register (`RegisterTManagerRequest`), write the cleaning requests the
//! core queues, log the answers. Requests queued while the connection is down are dropped:
//! the next consistent checkpoint asks again, and cleaning is idempotent.

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use heron_proto::ckptmgr::{
    CleanStatefulCheckpointResponse, RegisterTManagerRequest, RegisterTManagerResponse,
};
use heron_proto::system::StatusCode;
use heron_proto::{HeronCodec, Packet, ReqId};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_util::codec::Framed;
use tracing::{debug, info, warn};

/// How long to wait between connection attempts.
const RETRY: Duration = Duration::from_secs(1);

/// Runs until `frames` closes.
pub(crate) async fn run(
    port: u16,
    topology_name: String,
    topology_id: String,
    auth: Option<heron_auth::Secret>,
    codec: HeronCodec,
    mut frames: mpsc::UnboundedReceiver<Bytes>,
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
                while frames.try_recv().is_ok() {}
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        logged = false;
        let mut conn = Framed::new(stream, codec);
        let register = RegisterTManagerRequest {
            topology_name: topology_name.clone(),
            topology_id: topology_id.clone(),
        };
        if conn
            .send(Packet::from_message(ReqId::random(), &register))
            .await
            .is_err()
        {
            tokio::time::sleep(RETRY).await;
            continue;
        }
        info!("connected to the checkpoint manager on port {port}");
        let why = loop {
            tokio::select! {
                frame = frames.recv() => match frame {
                    Some(bytes) => {
                        if let Err(e) = conn.get_mut().write_all(&bytes).await {
                            break format!("write failed: {e}");
                        }
                    }
                    None => return,
                },
                packet = conn.next() => match packet {
                    Some(Ok(p)) => log_answer(&p),
                    Some(Err(e)) => break e.to_string(),
                    None => break "closed by the checkpoint manager".to_string(),
                },
            }
        };
        warn!("checkpoint manager connection lost: {why}");
        tokio::time::sleep(RETRY).await;
    }
}

fn log_answer(p: &Packet) {
    let ok = |s: &heron_proto::system::Status| s.status == StatusCode::Ok as i32;
    if p.is::<CleanStatefulCheckpointResponse>() {
        match p.decode::<CleanStatefulCheckpointResponse>() {
            Ok(r) if ok(&r.status) => {
                debug!(cleaned = ?r.cleaned_checkpoint_ids, "old checkpoints cleaned")
            }
            Ok(r) => warn!("cleaning checkpoints failed: {:?}", r.status.message),
            Err(e) => warn!("undecodable answer from the checkpoint manager: {e}"),
        }
    } else if p.is::<RegisterTManagerResponse>() {
        match p.decode::<RegisterTManagerResponse>() {
            Ok(r) if ok(&r.status) => debug!("registered with the checkpoint manager"),
            Ok(r) => warn!("the checkpoint manager refused us: {:?}", r.status.message),
            Err(e) => warn!("undecodable answer from the checkpoint manager: {e}"),
        }
    } else {
        warn!(
            type_name = p.type_name(),
            "unexpected message from the checkpoint manager"
        );
    }
}

/// Connects to 127.0.0.1:`port` and proves the tmaster with the topology's secret.
async fn connect(port: u16, auth: Option<&heron_auth::Secret>) -> Result<TcpStream, String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| e.to_string())?;
    if let Some(secret) = auth {
        heron_auth::connect(&mut stream, secret)
            .await
            .map_err(|e| format!("authentication failed: {e}"))?;
    }
    Ok(stream)
}
