//! The stream manager's state machine: connections and their roles, instance registration,
//! the physical plan, the stmgr mesh's reconnect schedule, and the data path (routing into the
//! tuple cache, framing closed batches for their connections).
//!
//! It does no I/O. The async shell ([`crate::daemon`]) feeds it events (a connection came, a
//! packet arrived, a connection went, a plan arrived, time passed) and carries out the
//! [`Action`]s it returns: bytes to write, connections to close or open, a registration to
//! send to the tmaster. Frames for one connection are appended to one buffer and handed out
//! once per round, so a connection gets one write per round whatever the number of batches.
//!
//! In `ATLEAST_ONCE` topologies the data path also gives every copy of an anchored tuple a
//! key and routes acks, fails and emits to the XOR tracker of the root's spout
//! (`core::acking`); otherwise control tuples are counted and ignored.

use crate::config::{StmgrConfig, BATCH_BYTES, MESH_WAIT, PACKET_OVERHEAD, RECONNECT_INTERVAL};
use crate::instance_server::check_registration;
use crate::routing::Router;
use crate::tuple_cache::{Batch, TupleCache};
use bytes::{Bytes, BytesMut};
use heron_proto::codec::{encode_message, encode_raw};
use heron_proto::stmgr::{
    NewInstanceAssignmentMessage, RegisterInstanceRequest, RegisterInstanceResponse,
    StrMgrHelloRequest, StrMgrHelloResponse, TupleStreamMessage,
};
use heron_proto::system::{Instance, PhysicalPlan, StatusCode};
use heron_proto::tuple as wire;
use heron_proto::{status, Message, Name, Packet, ReqId};
use std::collections::HashMap;
use std::time::Instant;
use tracing::{debug, error, info, warn};

/// Identifies one connection for the life of the process.
pub(crate) type ConnId = u64;

/// Type names dispatched on (checked against `M::full_name()` in the tests).
pub(crate) mod names {
    pub const HERON_TUPLE_SET: &str = "heron.proto.system.HeronTupleSet";
    pub const HERON_TUPLE_SET2: &str = "heron.proto.system.HeronTupleSet2";
    pub const REGISTER_INSTANCE_REQUEST: &str = "heron.proto.stmgr.RegisterInstanceRequest";
    pub const HELLO_REQUEST: &str = "heron.proto.stmgr.StrMgrHelloRequest";
    pub const TUPLE_STREAM_MESSAGE: &str = "heron.proto.stmgr.TupleStreamMessage";
    pub const START_BACK_PRESSURE: &str = "heron.proto.stmgr.StartBackPressureMessage";
    pub const STOP_BACK_PRESSURE: &str = "heron.proto.stmgr.StopBackPressureMessage";
}
use names::*;

/// What the state machine needs of the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CoreConfig {
    pub topology_name: String,
    pub topology_id: String,
    pub stmgr_id: String,
    pub instance_ids: Vec<String>,
    pub max_packet_size: usize,
    pub batch_bytes: usize,
}

impl From<&StmgrConfig> for CoreConfig {
    fn from(c: &StmgrConfig) -> CoreConfig {
        CoreConfig {
            topology_name: c.topology_name.clone(),
            topology_id: c.topology_id.clone(),
            stmgr_id: c.stmgr_id.clone(),
            instance_ids: c.instance_ids.clone(),
            max_packet_size: c.max_packet_size,
            batch_bytes: BATCH_BYTES,
        }
    }
}

/// Which server accepted a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Incoming {
    /// The instance server (`local_data_port`).
    Instance,
    /// The stream-manager server (`data_port`).
    Stmgr,
}

/// What the shell must do.
#[derive(Debug)]
pub(crate) enum Action {
    /// Write these bytes (whole frames) to the connection.
    Send(ConnId, Bytes),
    /// Close the connection once what was sent to it is written.
    Close(ConnId),
    /// Open a client connection to another stream manager and say hello; report the
    /// outcome with `attempt`.
    ConnectStmgr {
        stmgr_id: String,
        host: String,
        port: u16,
        attempt: u64,
    },
    /// Every instance has registered: register (again, on reconnects) with these records.
    RegisterWithTmaster(Vec<Instance>),
    /// Stop (`true`) or resume reading from the connection (a local spout, back pressure).
    PauseReads(ConnId, bool),
}

/// What happened to tuples, for logs and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Counters {
    /// Data tuples received from local instances.
    pub tuples_from_instances: u64,
    /// Tuples on streams nobody consumes, or for which a grouping chose no task.
    pub tuples_without_consumer: u64,
    /// Tuples that arrived before the physical plan.
    pub tuples_without_plan: u64,
    /// Tuples too large to fit in a packet.
    pub tuples_too_large: u64,
    /// Control tuple sets ignored (the topology is not ATLEAST_ONCE).
    pub control_sets_ignored: u64,
    /// Tuple sets received from other stream managers.
    pub sets_from_stmgrs: u64,
    /// Bytes (whole packets) received from local instances, from and to other stream
    /// managers, and written to local instances.
    pub bytes: Bytes4,
}

/// Bytes of whole packets by direction (Heron's `__bytes_{from,to}_{workers,stmgrs}`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Bytes4 {
    pub from_instances: u64,
    pub to_instances: u64,
    pub from_stmgrs: u64,
    pub to_stmgrs: u64,
}

/// Tuples handed to connections or lost, counted where batches are delivered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Delivered {
    /// Tuples written to local instances.
    pub to_instances: u64,
    /// Tuples written to other stream managers.
    pub to_stmgrs: u64,
    /// Tuples whose destination was not connected.
    pub lost: u64,
}

#[derive(Debug)]
enum Role {
    PendingInstance,
    Instance { instance_id: String, task_id: i32 },
    PendingStmgr,
    Stmgr { stmgr_id: String },
    StmgrClient { stmgr_id: String },
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Role::PendingInstance => write!(f, "unregistered instance"),
            Role::Instance { instance_id, .. } => write!(f, "instance {instance_id}"),
            Role::PendingStmgr => write!(f, "stream manager (no hello yet)"),
            Role::Stmgr { stmgr_id } => write!(f, "stream manager {stmgr_id} (incoming)"),
            Role::StmgrClient { stmgr_id } => write!(f, "stream manager {stmgr_id} (outgoing)"),
        }
    }
}

#[derive(Debug)]
struct Conn {
    role: Role,
    peer: String,
}

#[derive(Debug)]
struct Registered {
    instance: Instance,
    conn: Option<ConnId>,
}

/// Where a slot's batches go.
#[derive(Debug, Clone, Copy)]
struct Dest {
    conn: ConnId,
    local: bool,
    task_id: i32,
}

/// Per-connection output buffers and the slot -> connection table.
#[derive(Debug, Default)]
struct Outbox {
    slots: Vec<Option<Dest>>,
    bufs: HashMap<ConnId, BytesMut>,
    /// Connections whose buffer went from empty to non-empty this round.
    dirty: Vec<ConnId>,
    /// Full chunks taken off a connection's buffer this round, in order.
    ready: Vec<(ConnId, Bytes)>,
    delivered: Delivered,
}

/// A connection's buffer is handed out in chunks of about this size. Buffers that grew
/// through a whole saturated round reached several MB by doubling: each growth copied what
/// was there, and past glibc's mmap threshold each buffer was a fresh mapping, page-faulted
/// in and unmapped again (measured: ~8 % of a saturated stream manager's time).
const OUT_CHUNK: usize = 256 << 10;

impl Outbox {
    fn buf(&mut self, conn: ConnId) -> &mut BytesMut {
        let buf = self.bufs.entry(conn).or_default();
        if buf.len() >= OUT_CHUNK {
            self.ready.push((conn, buf.split().freeze()));
        }
        if buf.is_empty() {
            if buf.capacity() < OUT_CHUNK / 4 {
                buf.reserve(OUT_CHUNK);
            }
            self.dirty.push(conn);
        }
        buf
    }

    /// Frames a closed batch for its destination.
    fn deliver(&mut self, slot: u32, batch: &mut Batch) {
        let n = u64::from(batch.tuples());
        match self.slots.get(slot as usize).copied().flatten() {
            Some(Dest {
                conn, local: true, ..
            }) => {
                encode_raw(
                    self.buf(conn),
                    HERON_TUPLE_SET2,
                    &ReqId::ZERO,
                    batch.tuple_set(),
                );
                self.delivered.to_instances += n;
            }
            Some(Dest { conn, task_id, .. }) => {
                let payload = batch.stream_message(task_id);
                encode_raw(self.buf(conn), TUPLE_STREAM_MESSAGE, &ReqId::ZERO, payload);
                self.delivered.to_stmgrs += n;
            }
            None => {
                if self.delivered.lost == 0 {
                    warn!(
                        slot,
                        tuples = n,
                        "dropping tuples for a task whose instance or stream manager is not connected \
                         (further drops are only counted)"
                    );
                }
                self.delivered.lost += n;
            }
        }
    }
}

/// The stream manager's state machine.
#[derive(Debug)]
pub(crate) struct Core {
    cfg: CoreConfig,
    now: Instant,
    conns: HashMap<ConnId, Conn>,
    registered: HashMap<String, Registered>,
    /// The instance records last handed to the tmaster client.
    reported: Option<Vec<Instance>>,
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
    /// Outgoing connections to the other stream managers of the plan.
    peers: HashMap<String, Peer>,
    /// Incoming connections that said hello, by stream manager id.
    hellos: HashMap<String, ConnId>,
    /// Hellos that came before the first physical plan, answered when it comes.
    held_hellos: Vec<(ConnId, ReqId, StrMgrHelloRequest)>,
    next_attempt: u64,
    actions: Vec<Action>,
    counters: Counters,
    scratch: Vec<u32>,
    /// XOR acking, only for ATLEAST_ONCE topologies.
    acking: Option<acking::Acking>,
    /// Back pressure: slow connections, announcing peers, throttled spouts.
    bp: crate::backpressure::BackPressure,
    /// What back pressure needs of the plan; the paused spout connections.
    bpp: backpressure::BpPlan,
}

impl Core {
    /// A stream manager with no connections and no plan.
    pub fn new(cfg: CoreConfig, now: Instant) -> Core {
        let cache = TupleCache::new(cfg.batch_bytes, cfg.max_packet_size, PACKET_OVERHEAD);
        let mut core = Core {
            cfg,
            now,
            conns: HashMap::new(),
            registered: HashMap::new(),
            reported: None,
            pplan: None,
            assigned: false,
            assign_deadline: None,
            router: None,
            cache,
            out: Outbox::default(),
            peers: HashMap::new(),
            hellos: HashMap::new(),
            held_hellos: Vec::new(),
            next_attempt: 0,
            actions: Vec::new(),
            counters: Counters::default(),
            scratch: Vec::new(),
            acking: None,
            bp: Default::default(),
            bpp: Default::default(),
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
        &self.out.delivered
    }

    /// A server accepted a connection from `peer`.
    pub fn on_connected(&mut self, conn: ConnId, kind: Incoming, peer: String) {
        let role = match kind {
            Incoming::Instance => Role::PendingInstance,
            Incoming::Stmgr => Role::PendingStmgr,
        };
        debug!(conn, %peer, "accepted {role} connection");
        self.conns.insert(conn, Conn { role, peer });
    }

    /// A connection ended (peer closed, read or write failed).
    pub fn on_closed(&mut self, conn: ConnId, now: Instant) {
        self.now = now;
        if let Some(c) = self.conns.get(&conn) {
            info!(conn, peer = %c.peer, "{} disconnected", c.role);
            self.close(conn);
        }
    }

    /// A packet arrived on `conn`. A packet that does not belong there closes the connection.
    pub fn on_packet(&mut self, conn: ConnId, packet: &Packet, now: Instant) {
        self.now = now;
        let Some(c) = self.conns.get(&conn) else {
            return; // already closed; late packets are dropped
        };
        let len = packet.wire_len() as u64;
        match c.role {
            Role::Instance { .. } => self.counters.bytes.from_instances += len,
            Role::Stmgr { .. } => self.counters.bytes.from_stmgrs += len,
            _ => {}
        }
        let result = match (&c.role, packet.type_name()) {
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
            (_, name) => Err(format!("unexpected {name}")),
        };
        if let Err(reason) = result {
            if let Some(c) = self.conns.get(&conn) {
                warn!(conn, peer = %c.peer, "closing {} connection: {reason}", c.role);
            }
            self.close(conn);
        }
    }

    /// A `HeronTupleSet` from the local instance of task `src_task`. Its data goes first, so
    /// that anchored emits are counted before the acks of the same message (Heron's order).
    fn on_tuple_set(&mut self, src_task: i32, payload: &[u8]) -> Result<(), String> {
        let parts =
            wire::split_tuple_set(payload).map_err(|e| format!("malformed HeronTupleSet: {e}"))?;
        let routed = match parts.data {
            Some(data) => self.on_data(src_task, data),
            None => Ok(()),
        };
        routed?;
        match parts.control {
            Some(control) => self.on_control(src_task, control),
            None => Ok(()),
        }
    }

    /// Routes every tuple of an encoded `HeronDataTupleSet` into the tuple cache.
    fn on_data(&mut self, src_task: i32, data: &[u8]) -> Result<(), String> {
        let set =
            wire::split_data_set(data).map_err(|e| format!("malformed HeronDataTupleSet: {e}"))?;
        let Some(router) = self.router.as_mut() else {
            self.counters.tuples_without_plan += set.count();
            return Ok(());
        };
        let Some(stream) = router.stream_index(set.component, set.stream) else {
            self.counters.tuples_without_consumer += set.count();
            return Ok(());
        };
        let field = router.stream_field(stream).clone();
        if self.acking.is_some() {
            let routed = self.route_keyed(src_task, stream, &field, &set);
            let (tuples, unrouted, too_large) =
                routed.map_err(|e| format!("malformed tuple from task {src_task}: {e}"))?;
            self.counters.tuples_from_instances += tuples;
            self.counters.tuples_without_consumer += unrouted;
            self.counters.tuples_too_large += too_large;
            return Ok(());
        }
        let (cache, out, scratch, now) =
            (&mut self.cache, &mut self.out, &mut self.scratch, self.now);
        let mut deliver = |slot: u32, b: &mut Batch| out.deliver(slot, b);
        let (mut tuples, mut unrouted, mut too_large) = (0u64, 0u64, 0u64);
        let result = set.for_each_tuple(|tuple| {
            let scan = wire::scan_tuple(tuple)?;
            tuples += 1;
            scratch.clear();
            router.route(stream, tuple, &scan, scratch);
            if scratch.is_empty() {
                unrouted += 1;
            }
            for &slot in scratch.iter() {
                if !cache.push(slot, src_task, stream, &field, tuple, now, &mut deliver) {
                    too_large += 1;
                }
            }
            Ok(())
        });
        self.counters.tuples_from_instances += tuples;
        self.counters.tuples_without_consumer += unrouted;
        self.counters.tuples_too_large += too_large;
        result.map_err(|e| format!("malformed tuple from task {src_task}: {e}"))
    }

    /// A batch from another stream manager: its `set` goes to the local instance unparsed.
    fn on_stream_message(&mut self, payload: &Bytes) -> Result<(), String> {
        let msg = TupleStreamMessage::decode(payload.clone())
            .map_err(|e| format!("malformed TupleStreamMessage: {e}"))?;
        self.counters.sets_from_stmgrs += 1;
        let mut set = msg.set;
        if self.acking.is_some() {
            match self.on_remote_control(set)? {
                Some(forward) => set = forward,
                None => return Ok(()), // control only: applied here
            }
        }
        let dest = self
            .router
            .as_ref()
            .and_then(|r| r.slot_of(msg.task_id))
            .and_then(|slot| self.out.slots.get(slot as usize).copied().flatten());
        let n = u64::try_from(msg.num_tuples).unwrap_or(0);
        match dest {
            Some(Dest {
                conn, local: true, ..
            }) => {
                encode_raw(self.out.buf(conn), HERON_TUPLE_SET2, &ReqId::ZERO, &set);
                self.out.delivered.to_instances += n;
            }
            _ => {
                debug!(
                    task = msg.task_id,
                    "dropping a tuple set for a task that is not connected here"
                );
                self.out.delivered.lost += n;
            }
        }
        Ok(())
    }

    fn on_register(&mut self, conn: ConnId, packet: &Packet) -> Result<(), String> {
        let req: RegisterInstanceRequest = packet.decode().map_err(|e| e.to_string())?;
        if let Err(reason) = check_registration(&req, &self.cfg) {
            warn!(conn, peer = %self.conns[&conn].peer, "refusing instance registration: {reason}");
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
        if let Some(old) = self.registered.get(&id).and_then(|r| r.conn) {
            info!(
                conn,
                "instance {id} registered again; closing its previous connection"
            );
            self.close(old);
        }
        info!(
            conn,
            task = instance.info.task_id,
            "instance {id} registered"
        );
        if let Some(c) = self.conns.get_mut(&conn) {
            c.role = Role::Instance {
                instance_id: id.clone(),
                task_id: instance.info.task_id,
            };
        }
        self.registered.insert(
            id,
            Registered {
                instance,
                conn: Some(conn),
            },
        );
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
        Ok(())
    }

    fn maybe_register_with_tmaster(&mut self) {
        let all: Option<Vec<Instance>> = self
            .cfg
            .instance_ids
            .iter()
            .map(|id| self.registered.get(id).map(|r| r.instance.clone()))
            .collect();
        let Some(all) = all else { return };
        if self.reported.as_ref() == Some(&all) {
            return;
        }
        info!("all {} instances registered", all.len());
        self.reported = Some(all.clone());
        self.actions.push(Action::RegisterWithTmaster(all));
    }

    fn send_message<M: Message + Name>(&mut self, conn: ConnId, reqid: &ReqId, msg: &M) {
        encode_message(self.out.buf(conn), reqid, msg);
    }

    /// Forgets a connection, after handing out what was buffered for it.
    fn close(&mut self, conn: ConnId) {
        let Some(c) = self.conns.remove(&conn) else {
            return;
        };
        self.send_ready();
        if let Some(buf) = self.out.bufs.remove(&conn) {
            if !buf.is_empty() {
                self.actions.push(Action::Send(conn, buf.freeze()));
            }
        }
        self.actions.push(Action::Close(conn));
        self.back_pressure_closed(conn);
        match c.role {
            Role::Instance { instance_id, .. } => {
                if let Some(r) = self.registered.get_mut(&instance_id) {
                    if r.conn == Some(conn) {
                        r.conn = None;
                    }
                }
                self.rebuild_routes();
            }
            Role::Stmgr { stmgr_id } => {
                if self.hellos.get(&stmgr_id) == Some(&conn) {
                    self.hellos.remove(&stmgr_id);
                    // a stream manager that went away announces nothing any more
                    self.bp.remote(&stmgr_id, Vec::new());
                }
            }
            Role::StmgrClient { stmgr_id } => {
                if let Some(p) = self.peers.get_mut(&stmgr_id) {
                    if p.state == (PeerState::Connected { conn }) {
                        p.state = PeerState::Waiting {
                            retry_at: self.now + RECONNECT_INTERVAL,
                        };
                    }
                }
                self.rebuild_routes();
            }
            Role::PendingInstance | Role::PendingStmgr => {}
        }
        self.apply_back_pressure();
    }

    /// Recomputes where every slot's batches go (after any plan or connection change).
    fn rebuild_routes(&mut self) {
        self.out.slots.clear();
        let Some(router) = &self.router else { return };
        for t in router.tasks() {
            let conn = if t.local {
                self.registered.get(&t.instance_id).and_then(|r| r.conn)
            } else {
                self.peers.get(&t.stmgr_id).and_then(|p| match p.state {
                    PeerState::Connected { conn } => Some(conn),
                    _ => None,
                })
            };
            self.out.slots.push(conn.map(|conn| Dest {
                conn,
                local: t.local,
                task_id: t.task_id,
            }));
        }
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
        self.update_acking(&pplan, now);
        self.update_back_pressure(&pplan);
        self.pplan = Some(pplan);
        self.update_peers();
        self.rebuild_routes();
        self.answer_held_hellos();
        self.assigned = false;
        self.assign_deadline = Some(now + MESH_WAIT);
        self.maybe_send_assignments();
    }

    /// Hands the current plan to the local instances once every outgoing stream-manager link
    /// is up, or once [`MESH_WAIT`] has passed (a peer that is down then loses its tuples, as
    /// in Heron).
    pub(crate) fn maybe_send_assignments(&mut self) {
        if self.assigned || self.pplan.is_none() {
            return;
        }
        let mesh_up = self
            .peers
            .values()
            .all(|p| matches!(p.state, PeerState::Connected { .. }));
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
        self.send_assignments();
    }

    fn send_assignments(&mut self) {
        let Some(pplan) = &self.pplan else { return };
        let payload = NewInstanceAssignmentMessage {
            pplan: pplan.clone(),
        }
        .encode_to_vec();
        let name = NewInstanceAssignmentMessage::full_name();
        let conns: Vec<ConnId> = self.registered.values().filter_map(|r| r.conn).collect();
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
        self.acking_round(now, idle);
        self.send_ready();
        let mut dirty = std::mem::take(&mut self.out.dirty);
        for conn in dirty.drain(..) {
            if let Some(buf) = self.out.bufs.get_mut(&conn) {
                if !buf.is_empty() {
                    let frames = buf.split().freeze();
                    self.send(conn, frames);
                }
            }
        }
        self.out.dirty = dirty;
    }

    /// Hands out the full chunks taken off connection buffers, in order.
    fn send_ready(&mut self) {
        let mut ready = std::mem::take(&mut self.out.ready);
        for (conn, frames) in ready.drain(..) {
            self.send(conn, frames);
        }
        self.out.ready = ready;
    }

    /// Hands `frames` to the connection's writer, counting the bytes.
    fn send(&mut self, conn: ConnId, frames: Bytes) {
        let bytes = &mut self.counters.bytes;
        match self.conns.get(&conn).map(|c| &c.role) {
            Some(Role::Instance { .. }) => bytes.to_instances += frames.len() as u64,
            Some(Role::StmgrClient { .. }) => bytes.to_stmgrs += frames.len() as u64,
            _ => {}
        }
        self.actions.push(Action::Send(conn, frames));
    }

    /// When [`Core::on_timer`] and [`Core::end_round`] must run next at the latest.
    pub fn next_deadline(&self) -> Option<Instant> {
        let retries = self.peers.values().filter_map(|p| match p.state {
            PeerState::Waiting { retry_at } => Some(retry_at),
            _ => None,
        });
        retries
            .chain(self.cache.deadline())
            .chain(self.assign_deadline)
            .chain(self.acking_deadline())
            .chain(self.back_pressure_deadline())
            .min()
    }
}

mod acking;
mod backpressure;
#[cfg(test)]
use backpressure::{watermarks, BACKLOG_POLL};
mod mesh;
#[cfg(test)]
pub(crate) use acking::acking_timeout;
use mesh::{Peer, PeerState};

#[cfg(test)]
mod tests;
