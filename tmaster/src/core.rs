//! The tmaster's event loop: owns the registry and the metrics store, answers requests, writes
//! the physical plan and pushes it, and watches the state for our location and the packing
//! plan. Every connection task feeds it events through one queue, so the state machines need
//! no locks.

use crate::controller;
use crate::http::Answer;
use crate::metrics::MetricsStore;
use crate::registry::{ConnId, PlanStep, Publish, Registry};
use crate::TmasterError;
use bytes::{Bytes, BytesMut};
use heron_proto::codec::encode_message;
use heron_proto::stmgr::NewPhysicalPlanMessage;
use heron_proto::system::StatusCode;
use heron_proto::tmanager::{
    PublishMetrics, StMgrHeartbeatRequest, StMgrHeartbeatResponse, StMgrRegisterRequest,
    TManagerLocation,
};
use heron_proto::{Message, Name, ReqId};
use heron_statemgr::{NodeEvent, StateDir, StateError, StateManager, StateManagerExt};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, error, info, warn};

/// A decoded message the tmaster handles.
#[derive(Debug)]
pub(crate) enum Request {
    /// `StMgrRegisterRequest`.
    Register(StMgrRegisterRequest),
    /// `StMgrHeartbeatRequest`.
    Heartbeat(StMgrHeartbeatRequest),
    /// `PublishMetrics` (one-way).
    Metrics(PublishMetrics),
}

/// What connection tasks tell the core.
#[derive(Debug)]
pub(crate) enum Event {
    /// A connection was accepted; `outbox` carries framed packets to it.
    Connected {
        conn: ConnId,
        peer: SocketAddr,
        outbox: mpsc::Sender<Bytes>,
    },
    /// A message arrived.
    Request {
        conn: ConnId,
        reqid: ReqId,
        request: Request,
    },
    /// The connection is gone.
    Closed { conn: ConnId },
    /// A watched node changed (`tmanagers` or `packingplans`), or the session ended.
    State { dir: StateDir, event: NodeEvent },
    /// A controller HTTP request (`/activate`, ...); the answer goes to `reply`.
    Control {
        path: String,
        query: Vec<(String, String)>,
        reply: oneshot::Sender<Answer>,
    },
}

struct Conn {
    peer: SocketAddr,
    outbox: mpsc::Sender<Bytes>,
}

/// The core state.
pub(crate) struct Core {
    state: Arc<dyn StateManager>,
    location: TManagerLocation,
    packing_plan_bytes: Vec<u8>,
    registry: Registry,
    metrics: MetricsStore,
    conns: HashMap<ConnId, Conn>,
}

impl Core {
    pub(crate) fn new(
        state: Arc<dyn StateManager>,
        location: TManagerLocation,
        packing_plan_bytes: Vec<u8>,
        registry: Registry,
    ) -> Core {
        Core {
            state,
            location,
            packing_plan_bytes,
            registry,
            metrics: MetricsStore::new(),
            conns: HashMap::new(),
        }
    }

    /// Publishes into `metrics` (shared with the stats server) instead of a private store.
    pub(crate) fn with_metrics(mut self, metrics: MetricsStore) -> Core {
        self.metrics = metrics;
        self
    }

    fn topology(&self) -> &str {
        &self.location.topology_name
    }

    /// Runs until a fatal error (or until every event sender is gone).
    pub(crate) async fn run(
        mut self,
        mut events: mpsc::Receiver<Event>,
        watch_interval: Duration,
    ) -> Result<(), TmasterError> {
        let mut watch = tokio::time::interval(watch_interval);
        watch.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        watch.tick().await;
        loop {
            tokio::select! {
                event = events.recv() => match event {
                    Some(event) => self.handle(event)?,
                    None => return Ok(()),
                },
                _ = watch.tick() => self.watch_state()?,
            }
        }
    }

    fn handle(&mut self, event: Event) -> Result<(), TmasterError> {
        match event {
            Event::Connected { conn, peer, outbox } => {
                self.conns.insert(conn, Conn { peer, outbox });
            }
            Event::Closed { conn } => self.close(conn, "connection closed"),
            Event::State { dir, event } => self.state_event(dir, event)?,
            Event::Control { path, query, reply } => {
                let answer = self.control(&path, &query)?;
                let _ = reply.send(answer);
            }
            Event::Request {
                conn,
                reqid,
                request,
            } => {
                let Some(peer) = self.conns.get(&conn).map(|c| c.peer) else {
                    debug!(conn, "dropping a message from a connection already closed");
                    return Ok(());
                };
                match request {
                    Request::Register(r) => self.register(conn, peer, reqid, r)?,
                    Request::Heartbeat(h) => self.heartbeat(conn, peer, reqid, h.heartbeat_time),
                    Request::Metrics(m) => {
                        debug!(%peer, metrics = m.metrics.len(), exceptions = m.exceptions.len(), "metrics published");
                        self.metrics.publish(m);
                    }
                }
            }
        }
        Ok(())
    }

    fn register(
        &mut self,
        conn: ConnId,
        peer: SocketAddr,
        reqid: ReqId,
        request: StMgrRegisterRequest,
    ) -> Result<(), TmasterError> {
        let id = request.stmgr.id.clone();
        let instances = request.instances.len();
        let outcome = self.registry.register(conn, request, Instant::now());
        let status = &outcome.response.status;
        if status.status == StatusCode::Ok as i32 {
            info!(%peer, stmgr = %id, instances, "stream manager registered");
        } else {
            warn!(
                %peer,
                stmgr = %id,
                status = ?StatusCode::try_from(status.status).unwrap_or(StatusCode::Notok),
                reason = status.message.as_deref().unwrap_or(""),
                "refused a stream manager registration"
            );
        }
        self.send(conn, &reqid, &outcome.response);
        if let Some(old) = outcome.replaced {
            warn!(stmgr = %id, old_conn = old, "replacing a registration whose heartbeats timed out; closing its connection");
            self.conns.remove(&old);
        }
        self.metrics
            .set_registration(self.registry.registered(), self.registry.absent());
        match outcome.plan {
            PlanStep::Waiting => {
                let absent = self.registry.absent();
                if outcome.response.status.status == StatusCode::Ok as i32 && !absent.is_empty() {
                    info!(?absent, "waiting for stream managers");
                }
            }
            PlanStep::Publish(p) => self.publish(p)?,
            PlanStep::Invalid(e) => {
                error!(topology = %self.topology(), reason = %e, "not publishing the physical plan")
            }
        }
        Ok(())
    }

    /// Writes the plan to `pplans/<topology>`, then pushes it to every registered stmgr.
    fn publish(&mut self, p: Publish) -> Result<(), TmasterError> {
        let name = self.topology().to_string();
        self.state
            .set_proto(StateDir::PPlans, &name, &p.pplan)
            .map_err(|source| TmasterError::State {
                what: format!("writing pplans/{name}"),
                source,
            })?;
        info!(
            topology = %name,
            stmgrs = p.pplan.stmgrs.len(),
            instances = p.pplan.instances.len(),
            "physical plan written; pushing it to every stream manager"
        );
        let msg = NewPhysicalPlanMessage { new_pplan: p.pplan };
        let bytes = frame(&ReqId::ZERO, &msg);
        for conn in p.recipients {
            self.push(conn, bytes.clone());
        }
        Ok(())
    }

    /// A controller request: check it, apply it to the current plan, write the new plan and
    /// push it (Heron's TManager controller semantics, see [`controller`]).
    fn control(&mut self, path: &str, query: &[(String, String)]) -> Result<Answer, TmasterError> {
        let refused = |r: controller::Refusal| {
            warn!(path, reason = %r, "controller request refused");
            Answer {
                status: r.http,
                body: r.to_string(),
            }
        };
        let command = match controller::parse(path, query, &self.location.topology_id) {
            Ok(c) => c,
            Err(r) => return Ok(refused(r)),
        };
        let Some(current) = self.registry.pplan() else {
            return Ok(Answer {
                status: 500,
                body: "the tmaster has no physical plan yet; retry once every stream manager \
                       registered"
                    .into(),
            });
        };
        let plan = match controller::apply(current, &command) {
            Ok(p) => p,
            Err(r) => return Ok(refused(r)),
        };
        info!(topology = %self.topology(), ?command, state = plan.topology.state, "controller request");
        let publish = self.registry.replace_pplan(plan);
        self.publish(publish)?;
        Ok(Answer {
            status: 200,
            body: format!("{path}: done\n"),
        })
    }

    /// Records a heartbeat. The tmaster's own clock times registrations out; the stmgr's
    /// `heartbeat_time` is only logged.
    fn heartbeat(&mut self, conn: ConnId, peer: SocketAddr, reqid: ReqId, stmgr_time: i64) {
        let code = self.registry.heartbeat(conn, Instant::now());
        let status = if code == StatusCode::Ok {
            debug!(%peer, stmgr = self.registry.stmgr_of(conn).unwrap_or(""), stmgr_time, "heartbeat");
            heron_proto::status(code, None)
        } else {
            warn!(%peer, "heartbeat from a connection that has not registered");
            heron_proto::status(code, Some("not registered".to_string()))
        };
        self.send(conn, &reqid, &StMgrHeartbeatResponse { status });
    }

    fn send<M: Message + Name>(&mut self, conn: ConnId, reqid: &ReqId, msg: &M) {
        let bytes = frame(reqid, msg);
        self.push(conn, bytes);
    }

    fn push(&mut self, conn: ConnId, bytes: Bytes) {
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        match c.outbox.try_send(bytes) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                warn!(peer = %c.peer, "peer does not read its messages; closing the connection");
                self.close(conn, "outbox full");
            }
            // The connection task has ended; its Closed event is on the way.
            Err(TrySendError::Closed(_)) => {}
        }
    }

    /// Forgets a connection: dropping its outbox ends its task; its stmgr becomes absent.
    fn close(&mut self, conn: ConnId, why: &str) {
        let peer = self.conns.remove(&conn).map(|c| c.peer);
        if let Some(id) = self.registry.disconnect(conn) {
            self.metrics
                .set_registration(self.registry.registered(), self.registry.absent());
            warn!(
                peer = ?peer,
                stmgr = %id,
                why,
                absent = ?self.registry.absent(),
                "stream manager disconnected; it is absent until it registers again"
            );
        }
    }

    /// A watch event: our location must still be there and name us, the session must live,
    /// and the packing plan must be the one we run (see [`Core::watch_state`]).
    fn state_event(&mut self, dir: StateDir, event: NodeEvent) -> Result<(), TmasterError> {
        let name = self.topology().to_string();
        match (dir, event) {
            (_, NodeEvent::SessionLost) => Err(TmasterError::SessionLost(name)),
            (StateDir::TManagers, NodeEvent::Changed(None)) => {
                Err(TmasterError::LocationLost(name))
            }
            (StateDir::TManagers, NodeEvent::Changed(Some(bytes))) => {
                match TManagerLocation::decode(&bytes[..]) {
                    Ok(l) if l == self.location => Ok(()),
                    _ => Err(TmasterError::LocationTaken(name)),
                }
            }
            (StateDir::PackingPlans, NodeEvent::Changed(now)) => {
                if now.as_deref() == Some(&self.packing_plan_bytes[..]) {
                    return Ok(());
                }
                if let Err(e) = self.state.delete(StateDir::PPlans, &name) {
                    warn!(topology = %name, error = %e, "cannot delete the physical plan");
                }
                Err(TmasterError::PackingPlanChanged(name))
            }
            _ => Ok(()),
        }
    }

    /// Our location node must still name us, and the packing plan must not have changed (an
    /// update): then the pplan is deleted and the tmaster exits to be restarted with it.
    fn watch_state(&mut self) -> Result<(), TmasterError> {
        let name = self.topology().to_string();
        match self.state.get_tmanager_location(&name) {
            Ok(None) => return Err(TmasterError::LocationLost(name)),
            Err(StateError::SessionExpired { .. }) => return Err(TmasterError::SessionLost(name)),
            Ok(Some(l)) if l != self.location => return Err(TmasterError::LocationTaken(name)),
            Ok(Some(_)) => {}
            Err(e) => warn!(topology = %name, error = %e, "cannot read our location node"),
        }
        match self.state.get(StateDir::PackingPlans, &name) {
            Ok(now) if now.as_deref() != Some(&self.packing_plan_bytes[..]) => {
                if let Err(e) = self.state.delete(StateDir::PPlans, &name) {
                    warn!(topology = %name, error = %e, "cannot delete the physical plan");
                }
                return Err(TmasterError::PackingPlanChanged(name));
            }
            Ok(_) => {}
            Err(e) => warn!(topology = %name, error = %e, "cannot read the packing plan"),
        }
        Ok(())
    }
}

/// One framed packet.
fn frame<M: Message + Name>(reqid: &ReqId, msg: &M) -> Bytes {
    let mut buf = BytesMut::new();
    encode_message(&mut buf, reqid, msg);
    buf.freeze()
}
