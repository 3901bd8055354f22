//! The stream manager's state machine: it composes the parts that each own one concern and
//! carries their decisions out as [`Action`]s.
//!
//! * [`Conns`]: connections, their roles, instance registration;
//! * [`Mesh`]: the links to the other stream managers and their reconnect schedule;
//! * [`Router`] and [`TupleCache`]: the routing table a plan implies, per-destination
//!   batches in their wire form; [`Outbox`]: per-connection buffers, the slot table;
//! * [`Acking`]: XOR acking (`ATLEAST_ONCE` only);
//! * [`BackPressure`] and [`PressurePlan`]: watermark decisions, notices, spout pauses.
//!
//! It does no I/O. The async shell ([`crate::daemon`]) feeds it events (a connection came, a
//! packet arrived, a connection went, a plan arrived, time passed) and carries out the
//! [`Action`]s it returns: bytes to write, connections to close or open, a registration to
//! send to the tmaster. Frames for one connection are appended to one buffer and handed out
//! once per round, so a connection gets one write per round whatever the number of batches.

use crate::acking::{AckCounters, Acking};
use crate::backpressure::plan::PressurePlan;
use crate::backpressure::BackPressure;
use crate::config::{MESH_WAIT, PACKET_OVERHEAD};
use crate::conns::{Conns, Role};
use crate::error::{ConnError, TupleContext};
pub(crate) use crate::ids::names;
pub use crate::ids::{ConnId, Incoming};
use crate::instance_server::check_registration;
use crate::mesh::{Connect, Mesh};
use crate::outbox::{Delivered, Dest, Outbox};
use crate::route_set::{RouteInto, Routed};
use crate::routing::Router;
use crate::stmgr_server::check_hello;
use crate::tuple_cache::TupleCache;
use bytes::{Bytes, BytesMut};
use heron_proto::codec::{encode_message, encode_raw};
use heron_proto::stmgr::{
    NewInstanceAssignmentMessage, RegisterInstanceRequest, RegisterInstanceResponse,
    StrMgrHelloRequest, StrMgrHelloResponse, TupleStreamMessage,
};
use heron_proto::system::{PhysicalPlan, StatusCode};
use heron_proto::tuple as wire;
use heron_proto::{status, Message, Name, Packet, ReqId};
use names::*;
use std::time::Instant;
use tracing::{debug, error, info, warn};

mod parts;
mod pressure;
mod stateful;
pub use crate::config::CoreConfig;
pub use parts::{Action, Bytes4, Counters};
pub use stateful::StatefulCounters;

/// The stream manager's state machine.
#[derive(Debug)]
pub struct Core {
    cfg: CoreConfig,
    now: Instant,
    conns: Conns,
    pplan: Option<PhysicalPlan>,
    /// Whether local instances have been given the current plan. A new plan is held back
    /// until every outgoing link to the other stream managers is up (or [`MESH_WAIT`] has
    /// passed), so spouts do not start emitting into links that would drop their tuples.
    assigned: bool,
    /// When a held-back plan is handed out anyway.
    assign_deadline: Option<Instant>,
    router: Option<Router>,
    cache: TupleCache,
    out: Outbox,
    mesh: Mesh,
    /// Hellos that came before the first physical plan, answered when it comes.
    held_hellos: Vec<(ConnId, ReqId, StrMgrHelloRequest)>,
    actions: Vec<Action>,
    counters: Counters,
    scratch: Vec<u32>,
    /// XOR acking, only for ATLEAST_ONCE topologies.
    acking: Option<Acking>,
    /// Back pressure: slow connections, announcing peers, throttled spouts.
    bp: BackPressure,
    /// What back pressure needs of the plan; the paused spout connections.
    bpp: PressurePlan,
    /// Checkpoints and restores, only for EFFECTIVELY_ONCE topologies.
    stateful: Option<Box<stateful::StatefulPart>>,
    /// The checkpoint manager's connection is up (it may come before the plan that says
    /// the topology is EFFECTIVELY_ONCE).
    ckptmgr_up: bool,
}

impl Core {
    /// A stream manager with no connections and no plan.
    pub fn new(cfg: CoreConfig, now: Instant) -> Core {
        let cache = TupleCache::new(cfg.batch_bytes, cfg.max_packet_size, PACKET_OVERHEAD);
        let mut core = Core {
            mesh: Mesh::new(&cfg.stmgr_id),
            cfg,
            now,
            conns: Conns::default(),
            pplan: None,
            assigned: false,
            assign_deadline: None,
            router: None,
            cache,
            out: Outbox::default(),
            held_hellos: Vec::new(),
            actions: Vec::new(),
            counters: Counters::default(),
            scratch: Vec::new(),
            acking: None,
            bp: BackPressure::default(),
            bpp: PressurePlan::default(),
            stateful: None,
            ckptmgr_up: false,
        };
        // A container without instances registers with the tmaster at once.
        core.maybe_register_with_tmaster();
        core
    }

    /// What the shell must do now, in order.
    pub fn drain_actions(&mut self) -> std::vec::Drain<'_, Action> {
        self.actions.drain(..)
    }

    /// Tuple counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Delivery counters.
    pub fn delivered(&self) -> &Delivered {
        self.out.delivered()
    }

    /// A server accepted a connection from `peer`.
    pub fn on_connected(&mut self, conn: ConnId, kind: Incoming, peer: String) {
        let role = self.conns.accepted(conn, kind, peer);
        debug!(conn, "accepted {role} connection");
    }

    /// A connection ended (peer closed, read or write failed).
    pub fn on_closed(&mut self, conn: ConnId, now: Instant) {
        self.now = now;
        if let Some(role) = self.conns.role(conn) {
            info!(conn, peer = %self.conns.peer(conn), "{role} disconnected");
            self.close(conn);
        }
    }

    /// A packet arrived on `conn`. A packet that does not belong there closes the connection.
    pub fn on_packet(&mut self, conn: ConnId, packet: &Packet, now: Instant) {
        self.now = now;
        let Some(role) = self.conns.role(conn) else {
            return; // already closed; late packets are dropped
        };
        let len = packet.wire_len() as u64;
        match role {
            Role::Instance { .. } => self.counters.bytes.from_instances += len,
            Role::Stmgr { .. } => self.counters.bytes.from_stmgrs += len,
            _ => {}
        }
        let result = match (role, packet.type_name()) {
            (Role::Instance { task_id, .. }, HERON_TUPLE_SET) => {
                let task = *task_id;
                self.on_tuple_set(task, &packet.payload)
            }
            (Role::Stmgr { .. }, TUPLE_STREAM_MESSAGE) => self.on_stream_message(&packet.payload),
            (Role::Stmgr { stmgr_id }, START_BACK_PRESSURE | STOP_BACK_PRESSURE) => {
                let (from, start) = (stmgr_id.clone(), packet.type_name() == START_BACK_PRESSURE);
                self.on_back_pressure_notice(&from, start, packet)
            }
            (Role::PendingInstance, REGISTER_INSTANCE_REQUEST) => self.on_register(conn, packet),
            (Role::PendingStmgr, HELLO_REQUEST) => self.on_hello(conn, packet),
            (Role::Instance { .. } | Role::Stmgr { .. }, name)
                if name.starts_with(stateful::CKPT_PREFIX) =>
            {
                let role = role.clone();
                self.on_stateful_packet(&role, packet)
            }
            (_, name) => Err(ConnError::Unexpected(name.to_string())),
        };
        if let Err(reason) = result {
            if let Some(role) = self.conns.role(conn) {
                warn!(conn, peer = %self.conns.peer(conn), "closing {role} connection: {reason}");
            }
            self.close(conn);
        }
    }

    /// A `HeronTupleSet` from the local instance of task `src_task`. Its data goes first, so
    /// that anchored emits are counted before the acks of the same message (Heron's order).
    fn on_tuple_set(&mut self, src_task: i32, payload: &[u8]) -> Result<(), ConnError> {
        let parts = wire::split_tuple_set(payload).map_err(|e| TupleContext::TupleSet.error(e))?;
        if let Some(data) = parts.data {
            self.on_data(src_task, data)?;
        }
        match parts.control {
            Some(control) => self.on_control(src_task, control),
            None => Ok(()),
        }
    }

    /// Routes every tuple of an encoded `HeronDataTupleSet` into the tuple cache.
    fn on_data(&mut self, src_task: i32, data: &[u8]) -> Result<(), ConnError> {
        let set = wire::split_data_set(data).map_err(|e| TupleContext::DataSet.error(e))?;
        if self.dropping_data() {
            self.count_dropped(set.count());
            return Ok(());
        }
        let Some(router) = self.router.as_mut() else {
            self.counters.tuples_without_plan += set.count();
            return Ok(());
        };
        let Some(stream) = router.stream_index(set.component, set.stream) else {
            self.counters.tuples_without_consumer += set.count();
            return Ok(());
        };
        let field = router.stream_field(stream).clone();
        let mut into = RouteInto {
            router,
            cache: &mut self.cache,
            out: &mut self.out,
            scratch: &mut self.scratch,
            now: self.now,
            acking: self.acking.as_mut(),
        };
        let mut routed = Routed::default();
        // a set its sender addressed to one task, with no trees to key (or keyed by its
        // sender, who sent the emits itself; a spout's ahead of the set): forwarded whole
        let forward = match set.dest_task {
            Some(task) if into.acking.is_none() || set.keyed => {
                into.router.sole_addressed_slot(stream, task)
            }
            _ => None,
        };
        let result = match forward {
            Some(slot) => into.forward_set(src_task, stream, &field, slot, &set, &mut routed),
            None => into.route_set(src_task, stream, &field, &set, &mut routed),
        };
        self.counters.add(routed);
        result.map_err(|e| TupleContext::Tuple(src_task).error(e))
    }

    /// A batch from another stream manager: its `set` goes to the local instance unparsed
    /// (in ATLEAST_ONCE after its control tuples were applied here).
    fn on_stream_message(&mut self, payload: &Bytes) -> Result<(), ConnError> {
        let msg =
            TupleStreamMessage::decode(payload.clone()).map_err(|source| ConnError::Message {
                what: "TupleStreamMessage",
                source,
            })?;
        self.counters.sets_from_stmgrs += 1;
        if self.stateful.is_some() {
            match self.admit_inbound(stateful::Inbound::Tuples(msg)) {
                Some(stateful::Inbound::Tuples(msg)) => return self.deliver_stream_message(msg),
                _ => return Ok(()),
            }
        }
        self.deliver_stream_message(msg)
    }

    /// A batch from another stream manager, admitted: to the local instance.
    fn deliver_stream_message(&mut self, msg: TupleStreamMessage) -> Result<(), ConnError> {
        let mut set = msg.set;
        if self.acking.is_some() {
            match self.on_remote_control(set)? {
                Some(forward) => set = forward,
                None => return Ok(()), // control only: applied here
            }
        }
        let slot = self.router.as_ref().and_then(|r| r.slot_of(msg.task_id));
        let n = u64::try_from(msg.num_tuples).unwrap_or(0);
        if !self.out.forward_to_instance(slot, msg.src_task_id, &set, n) {
            debug!(
                task = msg.task_id,
                "dropping a tuple set for a task that is not connected here"
            );
        }
        Ok(())
    }

    /// Acks and fails (and emits) from a local instance, routed to their roots' spouts.
    fn on_control(&mut self, src_task: i32, control: &[u8]) -> Result<(), ConnError> {
        let Some(ack) = self.acking.as_mut() else {
            if self.counters.control_sets_ignored == 0 {
                info!("ignoring control tuples (first from task {src_task}): the topology is not ATLEAST_ONCE");
            }
            self.counters.control_sets_ignored += 1;
            return Ok(());
        };
        ack.on_local_control(control, self.now)
            .map_err(|e| TupleContext::Control(src_task).error(e))?;
        self.flush_control(false);
        Ok(())
    }

    /// A `TupleStreamMessage`'s set (ATLEAST_ONCE): applies its control tuples for spout
    /// tasks here; returns what to forward to the destination instance: the set unchanged if
    /// it has no control part, its data part alone if it has both, nothing if control only.
    fn on_remote_control(&mut self, set: Bytes) -> Result<Option<Bytes>, ConnError> {
        let parts = wire::split_set2(&set).map_err(|e| TupleContext::TupleSet2.error(e))?;
        let Some(c) = parts.control else {
            return Ok(Some(set));
        };
        if let Some(ack) = self.acking.as_mut() {
            ack.on_remote_control(c, self.now)
                .map_err(|e| TupleContext::RemoteControl.error(e))?;
        }
        self.flush_control(false);
        Ok(parts.data.map(|d| {
            let mut b = BytesMut::with_capacity(d.len() + 16);
            wire::put_data_set2(&mut b, d, parts.src_task);
            b.freeze()
        }))
    }

    /// Sends held control tuples: all of them with `all`, else only large buffers.
    fn flush_control(&mut self, all: bool) {
        if let (Some(ack), Some(router)) = (self.acking.as_mut(), self.router.as_ref()) {
            ack.flush(all, self.cfg.batch_bytes, router, &mut self.out, self.now);
        }
    }

    fn on_register(&mut self, conn: ConnId, packet: &Packet) -> Result<(), ConnError> {
        let req: RegisterInstanceRequest = packet.decode()?;
        if let Err(reason) = check_registration(&req, &self.cfg) {
            warn!(conn, peer = %self.conns.peer(conn), "refusing instance registration: {reason}");
            let resp = RegisterInstanceResponse {
                status: status(StatusCode::Notok, reason),
                pplan: None,
            };
            self.send_message(conn, &packet.reqid, &resp);
            self.close(conn);
            return Ok(());
        }
        let instance = req.instance;
        let id = instance.instance_id.clone();
        let task = instance.info.task_id;
        if let Some(old) = self.conns.register(conn, instance) {
            info!(
                conn,
                "instance {id} registered again; closing its previous connection"
            );
            self.close(old);
        }
        info!(conn, task, "instance {id} registered");
        let resp = RegisterInstanceResponse {
            status: status(StatusCode::Ok, None),
            pplan: if self.assigned {
                self.pplan.clone()
            } else {
                None
            },
        };
        self.send_message(conn, &packet.reqid, &resp);
        self.rebuild_routes();
        self.back_pressure_joined(conn);
        self.maybe_register_with_tmaster();
        self.stateful_registered(task);
        Ok(())
    }

    fn maybe_register_with_tmaster(&mut self) {
        if let Some(all) = self.conns.report(&self.cfg.instance_ids) {
            info!("all {} instances registered", all.len());
            self.actions.push(Action::RegisterWithTmaster(all));
        }
    }

    fn send_message<M: Message + Name>(&mut self, conn: ConnId, reqid: &ReqId, msg: &M) {
        encode_message(self.out.buf(conn), reqid, msg);
    }

    /// Forgets a connection, after handing out what was buffered for it.
    fn close(&mut self, conn: ConnId) {
        let Some(role) = self.conns.remove(conn) else {
            return;
        };
        self.send_round(true);
        if let Some(rest) = self.out.remove(conn) {
            self.actions.push(Action::Send(conn, rest));
        }
        self.actions.push(Action::Close(conn));
        self.bp.forget_conn(conn);
        self.bpp.forget(conn);
        self.stateful_closed(&role);
        match role {
            Role::Instance { .. } => self.rebuild_routes(),
            Role::Stmgr { stmgr_id } => {
                if self.mesh.hello_closed(&stmgr_id, conn) {
                    // a stream manager that went away announces nothing any more
                    self.bp.remote(&stmgr_id, Vec::new());
                }
            }
            Role::StmgrClient { stmgr_id } => {
                self.mesh.client_closed(&stmgr_id, conn, self.now);
                self.rebuild_routes();
            }
            Role::PendingInstance | Role::PendingStmgr => {}
        }
        self.apply_back_pressure();
    }

    /// Recomputes where every slot's batches go (after any plan or connection change).
    fn rebuild_routes(&mut self) {
        let (conns, mesh) = (&self.conns, &self.mesh);
        let Some(router) = &self.router else {
            self.out.set_slots([]);
            return;
        };
        self.out.set_slots(router.tasks().iter().map(|t| {
            let conn = if t.local {
                conns.instance_conn(&t.instance_id)
            } else {
                mesh.link(&t.stmgr_id)
            };
            conn.map(|conn| Dest {
                conn,
                local: t.local,
                task_id: t.task_id,
            })
        }));
    }

    /// A physical plan from the tmaster.
    pub fn on_pplan(&mut self, pplan: PhysicalPlan, now: Instant) {
        self.now = now;
        let cfg = &self.cfg;
        if pplan.topology.name != cfg.topology_name || pplan.topology.id != cfg.topology_id {
            warn!(
                "ignoring a physical plan of topology {:?} ({:?})",
                pplan.topology.name, pplan.topology.id
            );
            return;
        }
        if !pplan.stmgrs.iter().any(|s| s.id == cfg.stmgr_id) {
            warn!("ignoring a physical plan without {}", cfg.stmgr_id);
            return;
        }
        if self.pplan.as_ref() == Some(&pplan) {
            debug!("the physical plan did not change");
            return;
        }
        let router = match Router::new(&pplan, &cfg.stmgr_id) {
            Ok(r) => r,
            Err(e) => {
                error!("cannot route the new physical plan, keeping the previous one: {e}");
                return;
            }
        };
        info!(
            stmgrs = pplan.stmgrs.len(),
            instances = pplan.instances.len(),
            "new physical plan"
        );
        // What is batched was routed by the old plan: send it by the old table.
        let out = &mut self.out;
        self.cache.flush(&mut |slot, b| out.deliver(slot, b));
        self.flush_control(true);
        self.cache.resize(router.tasks().len());
        self.router = Some(router);
        self.acking = Acking::for_plan(self.acking.take(), &pplan, &self.cfg.stmgr_id, now);
        self.update_back_pressure(&pplan);
        self.stateful_plan(&pplan);
        let update = self.mesh.update(&pplan.stmgrs, now);
        self.pplan = Some(pplan);
        self.register_with_ckptmgr();
        for conn in update.close {
            self.close(conn);
        }
        self.connect(update.connect);
        self.rebuild_routes();
        self.answer_held_hellos();
        self.assigned = false;
        self.assign_deadline = Some(now + MESH_WAIT);
        self.maybe_send_assignments();
    }

    /// Hands the current plan to the local instances once every outgoing stream-manager link
    /// is up, or once [`MESH_WAIT`] has passed (a peer that is down then loses its tuples, as
    /// in Heron).
    fn maybe_send_assignments(&mut self) {
        if self.assigned || self.pplan.is_none() {
            return;
        }
        let mesh_up = self.mesh.all_up();
        let late = self.assign_deadline.is_some_and(|d| self.now >= d);
        if !mesh_up && !late {
            return;
        }
        if !mesh_up {
            warn!(
                "handing out the physical plan before every stream manager link is up \
                 (waited {MESH_WAIT:?}); tuples to the missing ones are dropped until they connect"
            );
        }
        self.assigned = true;
        self.assign_deadline = None;
        let Some(pplan) = &self.pplan else { return };
        let payload = NewInstanceAssignmentMessage {
            pplan: pplan.clone(),
        }
        .encode_to_vec();
        let name = NewInstanceAssignmentMessage::full_name();
        let conns: Vec<ConnId> = self.conns.instance_conns().collect();
        for conn in conns {
            encode_raw(self.out.buf(conn), &name, &ReqId::ZERO, &payload);
        }
    }

    /// The end of a round of input: send open batches if `idle` (no more input pending) or
    /// if they have waited long enough, then hand out every connection's buffered frames.
    pub fn end_round(&mut self, now: Instant, idle: bool) {
        self.now = now;
        if self.cache.due(now, idle) {
            let out = &mut self.out;
            self.cache.flush(&mut |slot, b| out.deliver(slot, b));
        }
        if self.acking.as_mut().is_some_and(|a| a.end_round(now, idle)) {
            self.flush_control(true);
        }
        self.stateful_round();
        self.send_round(false);
    }

    /// Hands the buffered frames to their connections' writers, counting the bytes: only the
    /// full chunks with `chunks_only`.
    fn send_round(&mut self, chunks_only: bool) {
        let (conns, bytes, actions) = (&self.conns, &mut self.counters.bytes, &mut self.actions);
        self.out.drain(chunks_only, |conn, frames| {
            match conns.role(conn) {
                Some(Role::Instance { .. }) => bytes.to_instances += frames.len() as u64,
                Some(Role::StmgrClient { .. }) => bytes.to_stmgrs += frames.len() as u64,
                _ => {}
            }
            actions.push(Action::Send(conn, frames));
        });
    }

    /// When [`Core::on_timer`] and [`Core::end_round`] must run next at the latest.
    pub fn next_deadline(&self) -> Option<Instant> {
        let poll = self
            .bp
            .polling()
            .then(|| self.now + self.bp.poll_interval());
        self.mesh
            .deadline()
            .into_iter()
            .chain(self.cache.deadline())
            .chain(self.assign_deadline)
            .chain(self.acking.as_ref().map(Acking::deadline))
            .chain(poll)
            .min()
    }

    /// Spout tuple trees tracked here.
    pub fn pending_trees(&self) -> usize {
        self.acking.as_ref().map_or(0, Acking::pending_trees)
    }

    /// Acking counters (zero when not acking).
    pub fn ack_counters(&self) -> AckCounters {
        self.acking
            .as_ref()
            .map(|a| a.counters().clone())
            .unwrap_or_default()
    }
}

/// The mesh: hellos in, client links out.
impl Core {
    fn on_hello(&mut self, conn: ConnId, packet: &Packet) -> Result<(), ConnError> {
        let req: StrMgrHelloRequest = packet.decode()?;
        if self.pplan.is_none() {
            // Membership cannot be checked yet, and tuples the peer would send now could not
            // be routed: answer once the plan is here. The peer waits (it only sends data
            // after an OK) and retries if that takes longer than its request timeout.
            debug!(
                conn,
                "holding the hello of {} until the physical plan arrives", req.stmgr
            );
            self.held_hellos.push((conn, packet.reqid, req));
            return Ok(());
        }
        self.answer_hello(conn, &packet.reqid, req);
        Ok(())
    }

    /// Answers the hellos that waited for the first physical plan.
    fn answer_held_hellos(&mut self) {
        for (conn, reqid, req) in std::mem::take(&mut self.held_hellos) {
            if self.conns.is_open(conn) {
                self.answer_hello(conn, &reqid, req);
            }
        }
    }

    fn answer_hello(&mut self, conn: ConnId, reqid: &ReqId, req: StrMgrHelloRequest) {
        let cfg = &self.cfg;
        let checked = check_hello(
            &req,
            &cfg.topology_name,
            &cfg.topology_id,
            &cfg.stmgr_id,
            self.pplan.as_ref(),
        );
        let ok = checked.is_ok();
        if let Err(reason) = &checked {
            warn!(conn, peer = %self.conns.peer(conn), "refusing stream manager hello: {reason}");
        }
        let resp = StrMgrHelloResponse {
            status: match checked {
                Ok(()) => status(StatusCode::Ok, None),
                Err(reason) => status(StatusCode::Notok, reason),
            },
        };
        self.send_message(conn, reqid, &resp);
        if !ok {
            self.close(conn);
            return;
        }
        let id = req.stmgr;
        info!(conn, peer = %self.conns.peer(conn), "stream manager {id} connected");
        if let Some(old) = self.mesh.hello(&id, conn) {
            info!(
                conn = old,
                "stream manager {id} said hello again; closing its previous connection"
            );
            self.close(old);
        }
        self.conns.hello(conn, &id);
    }

    fn connect(&mut self, connects: Vec<Connect>) {
        for c in connects {
            self.actions.push(Action::ConnectStmgr {
                stmgr_id: c.stmgr_id,
                host: c.host,
                port: c.port,
                attempt: c.attempt,
            });
        }
    }

    /// The client connection `attempt` to `stmgr_id` said hello successfully.
    pub fn on_stmgr_client_up(
        &mut self,
        stmgr_id: &str,
        attempt: u64,
        conn: ConnId,
        peer: String,
        now: Instant,
    ) {
        self.now = now;
        if !self.mesh.client_up(stmgr_id, attempt, conn) {
            debug!(conn, "dropping an outdated connection to {stmgr_id}");
            self.actions.push(Action::Close(conn));
            return;
        }
        info!(conn, %peer, "connected to stream manager {stmgr_id}");
        self.conns.linked(conn, stmgr_id, peer);
        self.rebuild_routes();
        self.back_pressure_joined(conn);
        self.maybe_send_assignments();
    }

    /// The client connection `attempt` to `stmgr_id` failed; retry later.
    pub fn on_stmgr_client_failed(&mut self, stmgr_id: &str, attempt: u64, now: Instant) {
        self.now = now;
        self.mesh.client_failed(stmgr_id, attempt, now);
    }

    /// Time passed: reconnect to stream managers whose retry time came.
    pub fn on_timer(&mut self, now: Instant) {
        self.now = now;
        self.maybe_send_assignments();
        let due = self.mesh.due(now);
        self.connect(due);
    }
}

#[cfg(test)]
pub(crate) use crate::acking::acking_timeout;
#[cfg(test)]
use crate::config::RECONNECT_INTERVAL;
#[cfg(test)]
use crate::outbox::OUT_CHUNK;

#[cfg(test)]
mod tests;
