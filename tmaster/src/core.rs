//! The tmaster's decision core: a synchronous state machine over the registry, the metrics
//! store and the state checks, with time passed in.
//!
//! It does no I/O and reads no clock. The async shell ([`crate::daemon`]) feeds it events (a
//! connection came or went, a message arrived, a controller request, a watched node changed,
//! a state read came back, time passed) and carries out the [`Action`]s it queues, in order:
//! bytes to send, connections to close, the physical plan to write, state to read, a
//! controller answer, or the error to stop with. [`Core::next_deadline`] says when the core
//! next wants [`Core::on_timer`] (the periodic state check).
//!
//! The metrics store is in-memory and shared with the stats server; its buckets are wall-clock
//! unix seconds, read by the store itself when a message is recorded (see
//! [`MetricsStore::publish`]).

use crate::controller;
use crate::metrics::MetricsStore;
use crate::registry::{ConnId, PlanStep, Publish, Registry};
use crate::stateful::StatefulController;
use crate::TmasterError;
use bytes::Bytes;
use heron_proto::codec::frame;
use heron_proto::stmgr::NewPhysicalPlanMessage;
use heron_proto::system::{PhysicalPlan, StatusCode};
use heron_proto::tmanager::{
    PublishMetrics, StMgrHeartbeatRequest, StMgrHeartbeatResponse, StMgrRegisterRequest,
    TManagerLocation,
};
use heron_proto::{Message, Name, ReqId};
use heron_statemgr::{NodeEvent, StateDir, StateError};
pub(crate) use stateful::StatefulReport;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
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
    /// A checkpoint or restore report (one-way, `EFFECTIVELY_ONCE`).
    Stateful(StatefulReport),
}

/// A controller answer: HTTP status and a plain-text body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answer {
    pub status: u16,
    pub body: String,
}

/// What the shell must do, in the order queued. After [`Action::Exit`], or a failed
/// [`Action::WritePplan`], nothing more is carried out.
#[derive(Debug)]
pub(crate) enum Action {
    /// Queue these bytes (whole frames) on the connection's outbox. If the outbox is full,
    /// drop it (the peer does not read) and tell the core ([`Core::on_stuck`]).
    Send(ConnId, Bytes),
    /// Drop the connection's outbox, which ends its task.
    Close(ConnId),
    /// Write the plan to `pplans/<topology>`; a failure stops the tmaster. Sends of the plan
    /// follow.
    WritePplan(PhysicalPlan),
    /// Delete `pplans/<topology>`, best effort (the packing plan changed).
    DeletePplan,
    /// Read our location node and hand the result to [`Core::on_location_read`].
    ReadLocation,
    /// Read the packing plan and hand the result to [`Core::on_packing_plan_read`].
    ReadPackingPlan,
    /// Answer the controller request being handled.
    Reply(Answer),
    /// Write `statefulcheckpoints/<topology>`; a failure is logged (the next consistent
    /// checkpoint writes it again).
    WriteCheckpoints(heron_proto::ckptmgr::StatefulConsistentCheckpoints),
    /// Send this framed request to the checkpoint manager (dropped if not connected).
    ToCkptmgr(Bytes),
    /// Stop with this error.
    Exit(TmasterError),
}

/// The core state.
pub(crate) struct Core {
    location: TManagerLocation,
    packing_plan_bytes: Vec<u8>,
    registry: Registry,
    metrics: MetricsStore,
    /// Peer address of every open connection.
    peers: HashMap<ConnId, SocketAddr>,
    watch_interval: Duration,
    /// When the next periodic state check is due.
    watch_at: Instant,
    actions: VecDeque<Action>,
    /// Checkpoints and restores, only for `EFFECTIVELY_ONCE` topologies.
    stateful: Option<StatefulController>,
}

impl Core {
    /// A core for the tmaster at `location` running the packing plan `packing_plan_bytes`
    /// (as stored), publishing into `metrics` (shared with the stats server). The first
    /// state check is due `watch_interval` after `now`.
    pub(crate) fn new(
        location: TManagerLocation,
        packing_plan_bytes: Vec<u8>,
        registry: Registry,
        metrics: MetricsStore,
        watch_interval: Duration,
        now: Instant,
    ) -> Core {
        Core {
            location,
            packing_plan_bytes,
            registry,
            metrics,
            peers: HashMap::new(),
            watch_interval,
            watch_at: now + watch_interval,
            actions: VecDeque::new(),
            stateful: None,
        }
    }

    fn topology(&self) -> &str {
        &self.location.topology_name
    }

    /// The next action to carry out.
    pub(crate) fn next_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// When [`Core::on_timer`] is next due.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        let stateful = self
            .stateful
            .as_ref()
            .and_then(StatefulController::next_deadline);
        Some(stateful.map_or(self.watch_at, |s| s.min(self.watch_at)))
    }

    /// Time passed: at the deadline, check our location node and the packing plan. A late
    /// check schedules the next one a whole interval after it (no burst of catch-up checks).
    pub(crate) fn on_timer(&mut self, now: Instant) {
        if now < self.watch_at {
            return;
        }
        let next = self.watch_at + self.watch_interval;
        self.watch_at = if now < next {
            next
        } else {
            now + self.watch_interval
        };
        self.actions.push_back(Action::ReadLocation);
    }

    /// A connection was accepted.
    pub(crate) fn on_connected(&mut self, conn: ConnId, peer: SocketAddr) {
        self.peers.insert(conn, peer);
    }

    /// The connection is gone.
    pub(crate) fn on_closed(&mut self, conn: ConnId, now: Instant) {
        if let Some(stmgr) = self.close(conn, "connection closed") {
            self.stateful_presence(now);
            self.stateful_lost(&stmgr, now);
        }
    }

    /// The connection's outbox was full: the peer does not read, and the shell dropped the
    /// outbox (which ends the connection's task).
    pub(crate) fn on_stuck(&mut self, conn: ConnId) {
        if let Some(peer) = self.peers.get(&conn) {
            warn!(%peer, "peer does not read its messages; closing the connection");
        }
        let _ = self.close(conn, "outbox full");
    }

    /// A message arrived on `conn` at `now`.
    pub(crate) fn on_request(
        &mut self,
        conn: ConnId,
        reqid: ReqId,
        request: Request,
        now: Instant,
    ) {
        let Some(peer) = self.peers.get(&conn).copied() else {
            debug!(conn, "dropping a message from a connection already closed");
            return;
        };
        match request {
            Request::Register(r) => self.register(conn, peer, reqid, r, now),
            Request::Heartbeat(h) => self.heartbeat(conn, peer, reqid, h.heartbeat_time, now),
            Request::Metrics(m) => {
                debug!(%peer, metrics = m.metrics.len(), exceptions = m.exceptions.len(), "metrics published");
                self.metrics.publish(m);
            }
            Request::Stateful(r) => match self.registry.stmgr_of(conn) {
                Some(stmgr) => {
                    let stmgr = stmgr.to_string();
                    self.on_stateful_report(&stmgr, r, now);
                }
                None => warn!(%peer, "ignoring a stateful message from an unregistered connection"),
            },
        }
    }

    fn register(
        &mut self,
        conn: ConnId,
        peer: SocketAddr,
        reqid: ReqId,
        request: StMgrRegisterRequest,
        now: Instant,
    ) {
        let id = request.stmgr.id.clone();
        let instances = request.instances.len();
        let outcome = self.registry.register(conn, request, now);
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
            self.peers.remove(&old);
            self.actions.push_back(Action::Close(old));
        }
        self.metrics
            .set_registration(self.registry.registered(), self.registry.absent());
        self.stateful_presence(now);
        match outcome.plan {
            PlanStep::Waiting => {
                let absent = self.registry.absent();
                if outcome.response.status.status == StatusCode::Ok as i32 && !absent.is_empty() {
                    info!(?absent, "waiting for stream managers");
                }
            }
            PlanStep::Publish(p) => {
                self.publish(p);
                self.stateful_published(now);
            }
            PlanStep::Invalid(e) => {
                error!(topology = %self.topology(), reason = %e, "not publishing the physical plan")
            }
        }
    }

    /// Writes the plan to `pplans/<topology>`, then pushes it to every registered stmgr.
    fn publish(&mut self, p: Publish) {
        let msg = NewPhysicalPlanMessage {
            new_pplan: p.pplan.clone(),
        };
        self.actions.push_back(Action::WritePplan(p.pplan));
        let bytes = frame(&ReqId::ZERO, &msg);
        for conn in p.recipients {
            self.push(conn, bytes.clone());
        }
    }

    /// A controller request: check it, apply it to the current plan, write the new plan and
    /// push it (Heron's TManager controller semantics, see [`controller`]). The answer is
    /// queued as [`Action::Reply`], after the plan's write and sends.
    pub(crate) fn on_control(&mut self, path: &str, query: &[(String, String)]) {
        let answer = self.control(path, query);
        self.actions.push_back(Action::Reply(answer));
    }

    fn control(&mut self, path: &str, query: &[(String, String)]) -> Answer {
        let refused = |r: controller::Refusal| {
            warn!(path, reason = %r, "controller request refused");
            Answer {
                status: r.http,
                body: r.to_string(),
            }
        };
        let command = match controller::parse(path, query, &self.location.topology_id) {
            Ok(c) => c,
            Err(r) => return refused(r),
        };
        let Some(current) = self.registry.pplan() else {
            return Answer {
                status: 500,
                body: "the tmaster has no physical plan yet; retry once every stream manager \
                       registered"
                    .into(),
            };
        };
        let plan = match controller::apply(current, &command) {
            Ok(p) => p,
            Err(r) => return refused(r),
        };
        info!(topology = %self.topology(), ?command, state = plan.topology.state, "controller request");
        let publish = self.registry.replace_pplan(plan);
        self.publish(publish);
        Answer {
            status: 200,
            body: format!("{path}: done\n"),
        }
    }

    /// Records a heartbeat. The tmaster's own clock (`now`) times registrations out; the
    /// stmgr's `heartbeat_time` is only logged.
    fn heartbeat(
        &mut self,
        conn: ConnId,
        peer: SocketAddr,
        reqid: ReqId,
        stmgr_time: i64,
        now: Instant,
    ) {
        let code = self.registry.heartbeat(conn, now);
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
        if self.peers.contains_key(&conn) {
            self.actions.push_back(Action::Send(conn, bytes));
        }
    }

    /// Forgets a connection: its stmgr becomes absent.
    fn close(&mut self, conn: ConnId, why: &str) -> Option<String> {
        let peer = self.peers.remove(&conn);
        let gone = self.registry.disconnect(conn);
        if let Some(id) = &gone {
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
        gone
    }

    fn exit(&mut self, error: TmasterError) {
        self.actions.push_back(Action::Exit(error));
    }

    /// A watch event: our location must still be there and name us, the session must live,
    /// and the packing plan must be the one we run.
    pub(crate) fn on_state(&mut self, dir: StateDir, event: NodeEvent) {
        let name = self.topology().to_string();
        match (dir, event) {
            (_, NodeEvent::SessionLost) => self.exit(TmasterError::SessionLost(name)),
            (StateDir::TManagers, NodeEvent::Changed(None)) => {
                self.exit(TmasterError::LocationLost(name))
            }
            (StateDir::TManagers, NodeEvent::Changed(Some(bytes))) => {
                match TManagerLocation::decode(&bytes[..]) {
                    Ok(l) if l == self.location => {}
                    _ => self.exit(TmasterError::LocationTaken(name)),
                }
            }
            (StateDir::PackingPlans, NodeEvent::Changed(now)) => {
                self.packing_plan_is(now.as_deref());
            }
            _ => {}
        }
    }

    /// The packing plan is now `now` (`None`: deleted). A change is an update: the pplan is
    /// deleted and the tmaster exits to be restarted with the new plan.
    fn packing_plan_is(&mut self, now: Option<&[u8]>) {
        if now == Some(&self.packing_plan_bytes[..]) {
            return;
        }
        let name = self.topology().to_string();
        self.actions.push_back(Action::DeletePplan);
        self.exit(TmasterError::PackingPlanChanged(name));
    }

    /// The periodic check read our location node: it must still name us; then the packing
    /// plan is read. A read error other than an expired session is logged and the check goes
    /// on.
    pub(crate) fn on_location_read(&mut self, read: Result<Option<TManagerLocation>, StateError>) {
        let name = self.topology().to_string();
        match read {
            Ok(None) => return self.exit(TmasterError::LocationLost(name)),
            Err(StateError::SessionExpired { .. }) => {
                return self.exit(TmasterError::SessionLost(name))
            }
            Ok(Some(l)) if l != self.location => {
                return self.exit(TmasterError::LocationTaken(name))
            }
            Ok(Some(_)) => {}
            Err(e) => warn!(topology = %name, error = %e, "cannot read our location node"),
        }
        self.actions.push_back(Action::ReadPackingPlan);
    }

    /// The periodic check read the packing plan: it must not have changed.
    pub(crate) fn on_packing_plan_read(&mut self, read: Result<Option<Vec<u8>>, StateError>) {
        match read {
            Ok(now) => self.packing_plan_is(now.as_deref()),
            Err(e) => {
                warn!(topology = %self.topology(), error = %e, "cannot read the packing plan")
            }
        }
    }
}

mod stateful;
#[cfg(test)]
use stateful::{RESTORES_METRIC, TMASTER_COMPONENT};

#[cfg(test)]
mod tests;
