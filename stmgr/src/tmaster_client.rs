//! The client of the tmaster (TManager): find it through the state manager, register, pass
//! the physical plans it sends to the core, heartbeat, and start over when the connection
//! drops or the tmaster's location changes.
//!
//! This is control traffic: a `Framed` socket and a plain loop, no batching.

use crate::config::{HEARTBEAT_INTERVAL, RECONNECT_INTERVAL, REQUEST_TIMEOUT};
use crate::event::Event;
use crate::mesh::doubling;
use futures::{SinkExt, StreamExt};
use heron_proto::stmgr::NewPhysicalPlanMessage;
use heron_proto::system::{Instance, StMgr, StMgrStats};
use heron_proto::tmanager::{
    StMgrHeartbeatRequest, StMgrHeartbeatResponse, StMgrRegisterRequest, StMgrRegisterResponse,
    TManagerLocation,
};
use heron_proto::{is_ok, CodecError, HeronCodec, Packet, ReqId};
use heron_statemgr::{StateManager, StateManagerExt};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio::time::{interval_at, timeout, Instant, MissedTickBehavior};
use tokio_util::codec::Framed;
use tracing::{debug, info, warn};

/// Why a session with the tmaster ended.
#[derive(Debug, thiserror::Error)]
enum SessionError {
    #[error("connect failed: {0}")]
    Connect(std::io::Error),
    #[error("authentication failed: {0}")]
    Auth(#[from] heron_auth::AuthError),
    #[error("{0}")]
    Codec(#[from] CodecError),
    #[error("the tmaster closed the connection")]
    Closed,
    #[error("no response from the tmaster within {0:?}")]
    Timeout(std::time::Duration),
    #[error("registration refused: {0}")]
    Refused(String),
    #[error("heartbeat refused: {0}")]
    HeartbeatRefused(String),
    #[error("unexpected {0} from the tmaster")]
    Unexpected(String),
    #[error("the tmaster moved to {0}")]
    Moved(String),
    #[error("the stream manager is shutting down")]
    Shutdown,
}

/// What the tmaster client needs.
pub(crate) struct TmasterClient {
    pub topology_name: String,
    pub topology_id: String,
    /// This stream manager's record in the physical plan.
    pub stmgr: StMgr,
    pub state: Arc<dyn StateManager>,
    pub codec: HeronCodec,
    /// The topology's secret, proven before registering.
    pub auth: Option<heron_auth::Secret>,
    /// TLS to the tmaster (`heron-rs.tls.enabled`).
    pub tls: Option<heron_auth::Tls>,
    /// The instance records to register with; `None` until every instance registered.
    pub instances: watch::Receiver<Option<Vec<Instance>>>,
    pub events: mpsc::Sender<Event>,
    /// Framed messages the core sends the tmaster (stateful processing); dropped while no
    /// session is up.
    pub outgoing: mpsc::UnboundedReceiver<bytes::Bytes>,
}

/// The first wait before the tmaster location is read again; it doubles up to
/// [`RECONNECT_INTERVAL`] (`mesh::doubling`). A stream manager usually starts a few milliseconds before its
/// tmaster writes the location, and a fixed 1-s poll made one topology start in three take a
/// second longer.
const FIRST_LOCATION_POLL: std::time::Duration = std::time::Duration::from_millis(5);

impl TmasterClient {
    /// Runs until the core goes away.
    pub async fn run(mut self) {
        let mut location_misses = 0u32;
        loop {
            let instances = match self.instances.wait_for(Option::is_some).await {
                Ok(v) => v.clone().unwrap_or_default(),
                Err(_) => return,
            };
            while self.outgoing.try_recv().is_ok() {} // nobody to send them to
            let Some(location) = self.read_location().await else {
                if location_misses == 0 {
                    info!("waiting for the tmaster location of {}", self.topology_name);
                }
                location_misses += 1;
                let wait = doubling(FIRST_LOCATION_POLL, RECONNECT_INTERVAL, location_misses);
                tokio::time::sleep(wait).await;
                continue;
            };
            location_misses = 0;
            let addr = format!("{}:{}", location.host, location.server_port);
            match self.session(&location, instances).await {
                Err(SessionError::Shutdown) => return,
                Err(e @ (SessionError::Connect(_) | SessionError::Closed)) => {
                    info!("tmaster at {addr}: {e}")
                }
                Err(e) => warn!("tmaster at {addr}: {e}"),
                Ok(()) => {}
            }
            tokio::time::sleep(RECONNECT_INTERVAL).await;
        }
    }

    /// The tmaster location of this topology, if the state holds one.
    async fn read_location(&self) -> Option<TManagerLocation> {
        let state = Arc::clone(&self.state);
        let name = self.topology_name.clone();
        let read = tokio::task::spawn_blocking(move || state.get_tmanager_location(&name)).await;
        match read {
            Ok(Ok(Some(loc))) if loc.topology_id == self.topology_id => Some(loc),
            Ok(Ok(Some(loc))) => {
                debug!(
                    "the tmaster location is of topology id {:?}, not {:?}",
                    loc.topology_id, self.topology_id
                );
                None
            }
            Ok(Ok(None)) => None,
            Ok(Err(e)) => {
                warn!("cannot read the tmaster location: {e}");
                None
            }
            Err(e) => {
                warn!("tmaster location reader failed: {e}");
                None
            }
        }
    }

    async fn session(
        &mut self,
        location: &TManagerLocation,
        instances: Vec<Instance>,
    ) -> Result<(), SessionError> {
        let port = u16::try_from(location.server_port)
            .map_err(|_| SessionError::Moved(format!("invalid port {}", location.server_port)))?;
        let stream = timeout(
            REQUEST_TIMEOUT,
            TcpStream::connect((location.host.as_str(), port)),
        )
        .await
        .map_err(|_| SessionError::Timeout(REQUEST_TIMEOUT))?
        .map_err(SessionError::Connect)?;
        let _ = stream.set_nodelay(true);
        let stream = heron_auth::dial(stream, self.tls.as_ref(), self.auth.as_ref()).await?;
        let mut conn = Framed::new(stream, self.codec);
        let request = StMgrRegisterRequest {
            stmgr: self.stmgr.clone(),
            instances,
        };
        let reqid = ReqId::random();
        conn.send(Packet::from_message(reqid, &request)).await?;
        let deadline = Instant::now() + REQUEST_TIMEOUT;
        let response: StMgrRegisterResponse = loop {
            let packet = timeout(deadline - Instant::now(), conn.next())
                .await
                .map_err(|_| SessionError::Timeout(REQUEST_TIMEOUT))?
                .ok_or(SessionError::Closed)??;
            if packet.is::<StMgrRegisterResponse>() && packet.reqid == reqid {
                break packet.decode()?;
            }
            self.dispatch(&packet).await?;
        };
        if !is_ok(&response.status) {
            return Err(SessionError::Refused(status_text(&response.status)));
        }
        info!(
            "registered with the tmaster at {}:{}",
            location.host, location.server_port
        );
        if let Some(pplan) = response.pplan {
            self.plan(pplan).await?;
        }

        let mut heartbeat = interval_at(Instant::now() + HEARTBEAT_INTERVAL, HEARTBEAT_INTERVAL);
        heartbeat.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut poll = interval_at(Instant::now() + RECONNECT_INTERVAL, RECONNECT_INTERVAL);
        poll.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = heartbeat.tick() => {
                    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
                    let hb = StMgrHeartbeatRequest {
                        heartbeat_time: now.as_secs() as i64,
                        stats: StMgrStats {},
                    };
                    conn.send(Packet::from_message(ReqId::random(), &hb)).await?;
                }
                _ = poll.tick() => {
                    if let Some(now) = self.read_location().await {
                        if (&now.host, now.server_port) != (&location.host, location.server_port) {
                            return Err(SessionError::Moved(format!("{}:{}", now.host, now.server_port)));
                        }
                    }
                }
                packet = conn.next() => {
                    let packet = packet.ok_or(SessionError::Closed)??;
                    self.dispatch(&packet).await?;
                }
                frame = self.outgoing.recv() => {
                    let frame = frame.ok_or(SessionError::Shutdown)?;
                    conn.get_mut()
                        .write_all(&frame)
                        .await
                        .map_err(|e| SessionError::Codec(CodecError::Io(e)))?;
                }
            }
        }
    }

    /// Handles a packet that is not the registration response.
    async fn dispatch(&self, packet: &Packet) -> Result<(), SessionError> {
        if packet.is::<NewPhysicalPlanMessage>() {
            let msg: NewPhysicalPlanMessage = packet.decode()?;
            self.plan(msg.new_pplan).await
        } else if packet.is::<StMgrHeartbeatResponse>() {
            let resp: StMgrHeartbeatResponse = packet.decode()?;
            if is_ok(&resp.status) {
                Ok(())
            } else {
                Err(SessionError::HeartbeatRefused(status_text(&resp.status)))
            }
        } else if packet.type_name().starts_with("heron.proto.ckptmgr.") {
            self.events
                .send(Event::TmasterMessage(packet.clone()))
                .await
                .map_err(|_| SessionError::Shutdown)
        } else {
            Err(SessionError::Unexpected(packet.type_name().to_string()))
        }
    }

    async fn plan(&self, pplan: heron_proto::system::PhysicalPlan) -> Result<(), SessionError> {
        self.events
            .send(Event::Pplan(pplan))
            .await
            .map_err(|_| SessionError::Shutdown)
    }
}

fn status_text(s: &heron_proto::system::Status) -> String {
    let code = heron_proto::system::StatusCode::try_from(s.status)
        .map(|c| c.as_str_name().to_string())
        .unwrap_or_else(|_| s.status.to_string());
    match &s.message {
        Some(m) => format!("{code}: {m}"),
        None => code,
    }
}
