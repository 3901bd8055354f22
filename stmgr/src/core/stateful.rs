//! Effectively once in the core (`shared/reference/heron.md` §5): checkpoint markers from
//! local instances go downstream in order with their data and their state to the checkpoint
//! manager; markers from upstream are aligned per destination ([`crate::checkpoint`], in the
//! outbox); the tmaster's checkpoint, restore, start and "saved" messages are carried out; a
//! restore ([`crate::restorer`]) drops what is in flight and hands every local instance the
//! state of the checkpoint restored.
//!
//! Until this stream manager has been told to start processing (after its first restore),
//! and during every restore, data tuples from local instances are dropped: they were produced
//! before the state the topology is rolled back to. Tuples and markers from other stream
//! managers carry the txid of the restore they follow ([`crate::restore_epoch`]): another
//! restore's are dropped, the current one's held until the start.

use super::{Action, Core};
use crate::checkpoint::Gateway;
use crate::conns::Role;
use crate::error::ConnError;
use crate::ids::ConnId;
use crate::restore_epoch::{Admit, Overflow, RestoreEpoch};
use crate::restorer::{RestoreAction, Restorer};
use crate::stateful_plan::StatefulPlan;
use bytes::Bytes;
use heron_proto::ckptmgr::{
    DownstreamStatefulCheckpoint, GetInstanceStateRequest, GetInstanceStateResponse,
    InitiateStatefulCheckpoint, InstanceStateCheckpoint, InstanceStateStored, RegisterStMgrRequest,
    RegisterStMgrResponse, ResetTopologyState, RestoreInstanceStateRequest,
    RestoreInstanceStateResponse, RestoreTopologyStateRequest, RestoreTopologyStateResponse,
    SaveInstanceStateRequest, SaveInstanceStateResponse, StartInstanceStatefulProcessing,
    StartStatefulCheckpoint, StartStmgrStatefulProcessing, StatefulConsistentCheckpointSaved,
    StoreInstanceStateCheckpoint,
};
use heron_proto::codec::{encode_message, frame};
use heron_proto::stmgr::TupleStreamMessage;
use heron_proto::system::{PhysicalPlan, StatusCode};
use heron_proto::{status, Message, Name, Packet, ReqId};
use tracing::{debug, info, warn};

/// The prefix of every checkpoint-manager message type name.
pub(crate) const CKPT_PREFIX: &str = "heron.proto.ckptmgr.";

/// `heron.streammgr.stateful.buffer.size.mb`: how much alignment may hold per destination.
const BUFFER_SIZE_MB: &str = "heron.streammgr.stateful.buffer.size.mb";
/// Heron's default for it.
const DEFAULT_BUFFER_MB: usize = 100;

/// What checkpointing counts (Heron's stateful stream-manager metrics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatefulCounters {
    /// Data tuples dropped because they came during a restore or before the first start.
    pub dropped_during_restore: u64,
    /// Instance states sent to the checkpoint manager.
    pub states_saved: u64,
    /// Instance states the checkpoint manager confirmed (reported to the tmaster).
    pub states_stored: u64,
    /// Restores carried out.
    pub restores: u64,
    /// Checkpoint alignments completed for local tasks.
    pub alignments: u64,
    /// Alignments abandoned because their buffer would have overflowed.
    pub forced_drains: u64,
}

/// The stream manager's checkpointing state.
#[derive(Debug)]
pub(crate) struct StatefulPart {
    plan: StatefulPlan,
    restorer: Restorer,
    /// Processing was started since this stream manager began.
    started: bool,
    registered_with_ckptmgr: bool,
    scratch: Vec<RestoreAction>,
    /// The restore that tuples from other stream managers must follow.
    epoch: RestoreEpoch<Inbound>,
    counters: StatefulCounters,
}

/// A message from another stream manager that may wait for the start.
#[derive(Debug)]
pub(super) enum Inbound {
    /// A tuple set.
    Tuples(TupleStreamMessage),
    /// A checkpoint marker.
    Marker(DownstreamStatefulCheckpoint),
}

impl Inbound {
    /// The data tuples it holds.
    fn tuples(&self) -> u64 {
        match self {
            Inbound::Tuples(m) => u64::try_from(m.num_tuples).unwrap_or(0),
            Inbound::Marker(_) => 0,
        }
    }

    /// Its restore txid.
    fn restore_txid(&self) -> Option<i64> {
        match self {
            Inbound::Tuples(m) => m.restore_txid,
            Inbound::Marker(m) => m.restore_txid,
        }
    }

    /// About the memory it holds.
    fn bytes(&self) -> usize {
        match self {
            Inbound::Tuples(m) => m.set.len(),
            Inbound::Marker(m) => m.checkpoint_id.len(),
        }
    }
}

impl StatefulPart {
    /// `true` while data tuples must be dropped.
    fn dropping(&self) -> bool {
        !self.started || self.restorer.in_progress()
    }
}

/// The topology config value of `key` in the plan (the last one set).
fn config_value<'p>(pplan: &'p PhysicalPlan, key: &str) -> Option<&'p str> {
    heron_proto::config_value(&pplan.topology, key)
}

/// Whether the plan's topology runs `EFFECTIVELY_ONCE`.
fn effectively_once(pplan: &PhysicalPlan) -> bool {
    config_value(pplan, "topology.reliability.mode")
        .is_some_and(|m| m.eq_ignore_ascii_case("EFFECTIVELY_ONCE"))
}

/// The alignment buffer limit in bytes ([`BUFFER_SIZE_MB`]; a bad value is logged and the
/// default used).
fn buffer_limit(pplan: &PhysicalPlan) -> usize {
    let mb = match config_value(pplan, BUFFER_SIZE_MB) {
        None => DEFAULT_BUFFER_MB,
        Some(v) => v.trim().parse::<usize>().unwrap_or_else(|_| {
            warn!("{BUFFER_SIZE_MB} {v:?} is not a whole number of MB; using {DEFAULT_BUFFER_MB}");
            DEFAULT_BUFFER_MB
        }),
    };
    mb.saturating_mul(1 << 20)
}

/// A request (to the checkpoint manager): a fresh REQID, echoed in its response.
fn request<M: Message + Name>(msg: &M) -> Bytes {
    frame(&ReqId::random(), msg)
}

/// A one-way message (to the tmaster): the zero REQID.
fn one_way<M: Message + Name>(msg: &M) -> Bytes {
    frame(&ReqId::ZERO, msg)
}

impl Core {
    /// Checkpointing counters (zero unless `EFFECTIVELY_ONCE`).
    pub fn stateful_counters(&self) -> StatefulCounters {
        let mut c = self
            .stateful
            .as_ref()
            .map(|s| s.counters)
            .unwrap_or_default();
        if let Some(stats) = self.out.gate().map(Gateway::stats) {
            c.alignments = stats.completed;
            c.forced_drains = stats.forced_drains;
        }
        c
    }

    /// `true` while data must be dropped (a restore runs, or processing never started).
    #[inline]
    pub(super) fn dropping_data(&self) -> bool {
        self.stateful.as_ref().is_some_and(|s| s.dropping())
    }

    /// Counts `n` data tuples dropped for a restore.
    pub(super) fn count_dropped(&mut self, n: u64) {
        if let Some(s) = self.stateful.as_mut() {
            s.counters.dropped_during_restore += n;
        }
    }

    /// A new plan: what checkpointing needs of it (nothing unless `EFFECTIVELY_ONCE`).
    pub(super) fn stateful_plan(&mut self, pplan: &PhysicalPlan) {
        if !effectively_once(pplan) {
            self.stateful = None;
            self.out.set_gate(None);
            return;
        }
        let plan = StatefulPlan::new(pplan, &self.cfg.stmgr_id);
        let limit = buffer_limit(pplan);
        let mut gate = Gateway::new(limit);
        gate.set_upstreams(plan.upstreams.clone());
        self.out.set_gate(Some(gate));
        match self.stateful.as_mut() {
            Some(s) => {
                s.restorer.set_local_tasks(plan.local_tasks());
                s.epoch.set_limit(limit);
                s.plan = plan;
            }
            None => {
                info!("the topology runs EFFECTIVELY_ONCE: tuples flow once the tmaster's restore completes");
                self.stateful = Some(Box::new(StatefulPart {
                    restorer: Restorer::new(plan.local_tasks()),
                    plan,
                    started: false,
                    registered_with_ckptmgr: false,
                    scratch: Vec::new(),
                    epoch: RestoreEpoch::new(limit),
                    counters: StatefulCounters::default(),
                }));
            }
        }
    }

    /// Registers with the checkpoint manager once it is connected and a plan is here.
    pub(super) fn register_with_ckptmgr(&mut self) {
        let Some(s) = self.stateful.as_mut() else {
            return;
        };
        let Some(pplan) = &self.pplan else { return };
        if !self.ckptmgr_up || s.registered_with_ckptmgr {
            return;
        }
        s.registered_with_ckptmgr = true;
        let req = RegisterStMgrRequest {
            topology_name: self.cfg.topology_name.clone(),
            topology_id: self.cfg.topology_id.clone(),
            stmgr_id: self.cfg.stmgr_id.clone(),
            physical_plan: pplan.clone(),
        };
        self.actions.push(Action::ToCkptmgr(request(&req)));
    }

    /// A checkpoint-manager message on a connection of `role`.
    pub(super) fn on_stateful_packet(
        &mut self,
        role: &Role,
        packet: &Packet,
    ) -> Result<(), ConnError> {
        if self.stateful.is_none() {
            return Err(ConnError::Unexpected(format!(
                "{} (the topology is not EFFECTIVELY_ONCE)",
                packet.type_name()
            )));
        }
        match role {
            Role::Instance { task_id, .. } if packet.is::<StoreInstanceStateCheckpoint>() => {
                let m: StoreInstanceStateCheckpoint = packet.decode()?;
                self.on_instance_state(*task_id, m.state);
            }
            Role::Instance { task_id, .. } if packet.is::<RestoreInstanceStateResponse>() => {
                let m: RestoreInstanceStateResponse = packet.decode()?;
                let ok = m.status.status == StatusCode::Ok as i32;
                if !ok {
                    warn!(
                        task = task_id,
                        "instance failed to restore: {:?}", m.status.message
                    );
                }
                self.restore_step(|r, out| {
                    r.on_instance_restored(*task_id, &m.checkpoint_id, ok, out)
                });
            }
            Role::Stmgr { .. } if packet.is::<DownstreamStatefulCheckpoint>() => {
                let m: DownstreamStatefulCheckpoint = packet.decode()?;
                if let Some(Inbound::Marker(m)) = self.admit_inbound(Inbound::Marker(m)) {
                    self.deliver_marker(&m);
                }
            }
            _ => return Err(ConnError::Unexpected(packet.type_name().to_string())),
        }
        Ok(())
    }

    /// A message from another stream manager, in `EFFECTIVELY_ONCE`: returned if it is to be
    /// delivered now; held until the start, or dropped (and counted), otherwise.
    pub(super) fn admit_inbound(&mut self, item: Inbound) -> Option<Inbound> {
        let s = self.stateful.as_mut()?;
        match s.epoch.admit(item.restore_txid()) {
            Admit::Deliver => return Some(item),
            Admit::Drop => s.counters.dropped_during_restore += item.tuples(),
            Admit::Hold => {
                let bytes = item.bytes();
                if let Err(Overflow(dropped)) = s.epoch.hold(item, bytes) {
                    s.counters.dropped_during_restore +=
                        dropped.iter().map(Inbound::tuples).sum::<u64>();
                    warn!(
                        limit_bytes = s.epoch.limit(),
                        "tuples from other stream managers waiting for the start of processing \
                         overflowed their buffer ({BUFFER_SIZE_MB}); dropping them and asking \
                         the tmaster to restore the topology again"
                    );
                    let m = ResetTopologyState {
                        dead_stmgr: None,
                        dead_taskid: None,
                        reason: "tuples held for the start of processing overflowed".to_string(),
                    };
                    self.actions.push(Action::ToTmaster(one_way(&m)));
                }
            }
        }
        None
    }

    /// A checkpoint marker from another stream manager, admitted.
    fn deliver_marker(&mut self, m: &DownstreamStatefulCheckpoint) {
        self.out
            .gate_marker(m.destination_task_id, m.origin_task_id, &m.checkpoint_id);
    }

    /// A local instance stored its state for a checkpoint: its marker goes to every
    /// downstream task after the tuples it emitted before it, and its state to the
    /// checkpoint manager.
    fn on_instance_state(&mut self, task: i32, state: InstanceStateCheckpoint) {
        let Some(s) = self.stateful.as_ref() else {
            return;
        };
        if s.dropping() {
            debug!(task, checkpoint = %state.checkpoint_id, "ignoring a state stored before the restore");
            return;
        }
        let Some(instance) = s.plan.local.get(&task).cloned() else {
            return;
        };
        let downstreams = s.plan.downstreams.get(&task).cloned().unwrap_or_default();
        // the task's tuples batched so far go before its marker
        let out = &mut self.out;
        self.cache.flush(&mut |slot, b| out.deliver(slot, b));
        let id = state.checkpoint_id.clone();
        for dest in downstreams {
            let Some(stmgr) = self
                .stateful
                .as_ref()
                .and_then(|s| s.plan.stmgr_of.get(&dest))
            else {
                continue;
            };
            if *stmgr == self.cfg.stmgr_id {
                self.out.gate_marker(dest, task, &id);
            } else if let Some(conn) = self.mesh.link(stmgr) {
                let m = DownstreamStatefulCheckpoint {
                    origin_task_id: task,
                    destination_task_id: dest,
                    checkpoint_id: id.clone(),
                    restore_txid: self.stateful.as_ref().and_then(|s| s.epoch.txid()),
                };
                encode_message(self.out.buf(conn), &ReqId::ZERO, &m);
            } else {
                debug!(task, dest, %stmgr, "no link for a checkpoint marker; this checkpoint cannot complete");
            }
        }
        let req = SaveInstanceStateRequest {
            instance,
            checkpoint: state,
        };
        if let Some(s) = self.stateful.as_mut() {
            s.counters.states_saved += 1;
        }
        self.actions.push(Action::ToCkptmgr(request(&req)));
    }

    /// A message from the tmaster.
    pub fn on_tmaster_message(&mut self, packet: &Packet, now: std::time::Instant) {
        self.now = now;
        if self.stateful.is_none() {
            warn!(type_name = packet.type_name(), "ignoring a stateful message from the tmaster: the topology is not EFFECTIVELY_ONCE (or no plan yet)");
            return;
        }
        let result: Result<(), heron_proto::CodecError> = (|| {
            if packet.is::<StartStatefulCheckpoint>() {
                let m: StartStatefulCheckpoint = packet.decode()?;
                self.start_checkpoint(&m.checkpoint_id);
            } else if packet.is::<RestoreTopologyStateRequest>() {
                let m: RestoreTopologyStateRequest = packet.decode()?;
                info!(checkpoint = %m.checkpoint_id, txid = m.restore_txid, "restoring the topology's state");
                if let Some(s) = self.stateful.as_mut() {
                    s.counters.restores += 1;
                    let held = s.epoch.on_restore(m.restore_txid);
                    s.counters.dropped_during_restore +=
                        held.iter().map(Inbound::tuples).sum::<u64>();
                }
                self.out.set_restore_txid(Some(m.restore_txid));
                self.restore_step(|r, out| {
                    r.on_restore_request(&m.checkpoint_id, m.restore_txid, out)
                });
            } else if packet.is::<StartStmgrStatefulProcessing>() {
                let m: StartStmgrStatefulProcessing = packet.decode()?;
                self.restore_step(|r, out| r.on_start_processing(&m.checkpoint_id, out));
            } else if packet.is::<StatefulConsistentCheckpointSaved>() {
                let m: StatefulConsistentCheckpointSaved = packet.decode()?;
                debug!(checkpoint = %m.consistent_checkpoint.checkpoint_id, "checkpoint globally consistent");
                let conns: Vec<ConnId> = self.conns.instance_conns().collect();
                for conn in conns {
                    encode_message(self.out.buf(conn), &ReqId::ZERO, &m);
                }
            } else {
                warn!(
                    type_name = packet.type_name(),
                    "ignoring an unexpected message from the tmaster"
                );
            }
            Ok(())
        })();
        if let Err(e) = result {
            warn!("ignoring an undecodable message from the tmaster: {e}");
        }
    }

    /// The tmaster's marker: local spouts save their state first.
    fn start_checkpoint(&mut self, id: &str) {
        let Some(s) = self.stateful.as_ref() else {
            return;
        };
        if s.dropping() {
            debug!(checkpoint = id, "not checkpointing during a restore");
            return;
        }
        let spouts = s.plan.local_spouts.clone();
        let m = InitiateStatefulCheckpoint {
            checkpoint_id: id.to_string(),
        };
        for task in spouts {
            if let Some(conn) = self.task_conn(task) {
                encode_message(self.out.buf(conn), &ReqId::ZERO, &m);
            }
        }
    }

    /// The connection of local task `task`'s instance.
    fn task_conn(&self, task: i32) -> Option<ConnId> {
        let s = self.stateful.as_ref()?;
        let instance = s.plan.local.get(&task)?;
        self.conns.instance_conn(&instance.instance_id)
    }

    /// The checkpoint manager connection is up (again).
    pub fn on_ckptmgr_up(&mut self, now: std::time::Instant) {
        self.now = now;
        self.ckptmgr_up = true;
        if let Some(s) = self.stateful.as_mut() {
            s.registered_with_ckptmgr = false;
        }
        self.register_with_ckptmgr();
        self.restore_step(|r, out| r.on_ckptmgr_connected(out));
    }

    /// The checkpoint manager connection is gone: states in flight are lost, so the
    /// topology must roll back.
    pub fn on_ckptmgr_down(&mut self, now: std::time::Instant) {
        self.now = now;
        let was_up = std::mem::replace(&mut self.ckptmgr_up, false);
        let Some(s) = self.stateful.as_mut() else {
            return;
        };
        s.registered_with_ckptmgr = false;
        if was_up {
            self.reset_topology(None, None, "lost the connection to the checkpoint manager");
        }
    }

    /// A message from the checkpoint manager.
    pub fn on_ckptmgr_message(&mut self, packet: &Packet, now: std::time::Instant) {
        self.now = now;
        if self.stateful.is_none() {
            return;
        }
        let result: Result<(), heron_proto::CodecError> = (|| {
            if packet.is::<SaveInstanceStateResponse>() {
                let m: SaveInstanceStateResponse = packet.decode()?;
                if m.status.status != StatusCode::Ok as i32 {
                    warn!(instance = %m.instance.instance_id, checkpoint = %m.checkpoint_id, "the checkpoint manager could not save a state: {:?}", m.status.message);
                    return Ok(());
                }
                if let Some(s) = self.stateful.as_mut() {
                    s.counters.states_stored += 1;
                }
                let stored = InstanceStateStored {
                    checkpoint_id: m.checkpoint_id,
                    instance: m.instance,
                };
                self.actions.push(Action::ToTmaster(one_way(&stored)));
            } else if packet.is::<GetInstanceStateResponse>() {
                let m: GetInstanceStateResponse = packet.decode()?;
                let task = m.instance.info.task_id;
                let result = if m.status.status == StatusCode::Ok as i32 {
                    Ok(m.checkpoint.and_then(|c| c.state))
                } else {
                    Err(m
                        .status
                        .message
                        .unwrap_or_else(|| "the checkpoint manager refused".to_string()))
                };
                self.restore_step(|r, out| r.on_ckptmgr_state(task, &m.checkpoint_id, result, out));
            } else if packet.is::<RegisterStMgrResponse>() {
                let m: RegisterStMgrResponse = packet.decode()?;
                if m.status.status != StatusCode::Ok as i32 {
                    warn!(
                        "the checkpoint manager refused our registration: {:?}",
                        m.status.message
                    );
                }
            } else {
                warn!(
                    type_name = packet.type_name(),
                    "ignoring an unexpected message from the checkpoint manager"
                );
            }
            Ok(())
        })();
        if let Err(e) = result {
            warn!("ignoring an undecodable message from the checkpoint manager: {e}");
        }
    }

    /// Asks the tmaster to roll the topology back.
    pub(super) fn reset_topology(
        &mut self,
        dead_stmgr: Option<String>,
        dead_task: Option<i32>,
        reason: &str,
    ) {
        let Some(s) = self.stateful.as_ref() else {
            return;
        };
        if !s.started {
            return; // a restore is needed anyway; the tmaster is running it
        }
        warn!(reason, "asking the tmaster to restore the topology's state");
        let m = ResetTopologyState {
            dead_stmgr,
            dead_taskid: dead_task,
            reason: reason.to_string(),
        };
        self.actions.push(Action::ToTmaster(one_way(&m)));
    }

    /// A connection of `role` closed: a local instance or a peer stream manager that went
    /// away lost tuples and state, so the topology must roll back.
    pub(super) fn stateful_closed(&mut self, role: &Role) {
        if self.stateful.is_none() {
            return;
        }
        match role {
            Role::Instance {
                task_id,
                instance_id,
            } => {
                let task = *task_id;
                if let Some(s) = self.stateful.as_mut() {
                    s.restorer.on_instance_disconnected(task);
                }
                let reason = format!("instance {instance_id} disconnected");
                self.reset_topology(None, Some(*task_id), &reason);
            }
            Role::StmgrClient { stmgr_id } => {
                let reason = format!("lost the connection to stream manager {stmgr_id}");
                self.reset_topology(Some(stmgr_id.clone()), None, &reason);
            }
            _ => {}
        }
    }

    /// A local instance registered: during a restore it gets its state again.
    pub(super) fn stateful_registered(&mut self, task: i32) {
        self.restore_step(|r, out| r.on_instance_connected(task, out));
    }

    /// Once per round during a restore: the response waits for every stream-manager link.
    pub(super) fn stateful_round(&mut self) {
        if self
            .stateful
            .as_ref()
            .is_some_and(|s| s.restorer.in_progress())
        {
            let up = self.mesh.all_up();
            self.restore_step(|r, out| r.on_mesh_up(up, out));
        }
    }

    /// Runs one restorer step and carries out what it decided.
    fn restore_step(&mut self, step: impl FnOnce(&mut Restorer, &mut Vec<RestoreAction>)) {
        let Some(s) = self.stateful.as_mut() else {
            return;
        };
        let mut actions = std::mem::take(&mut s.scratch);
        step(&mut s.restorer, &mut actions);
        for a in actions.drain(..) {
            self.restore_action(a);
        }
        if let Some(s) = self.stateful.as_mut() {
            s.scratch = actions;
        }
    }

    fn restore_action(&mut self, action: RestoreAction) {
        match action {
            RestoreAction::DropInFlight => {
                let mut dropped = self.cache.discard();
                if let Some(g) = self.out.gate_mut() {
                    dropped += g.clear();
                }
                self.count_dropped(dropped);
            }
            RestoreAction::GetState {
                task_id,
                checkpoint_id,
            } => {
                let Some(instance) = self
                    .stateful
                    .as_ref()
                    .and_then(|s| s.plan.local.get(&task_id).cloned())
                else {
                    return;
                };
                let req = GetInstanceStateRequest {
                    instance,
                    checkpoint_id,
                };
                self.actions.push(Action::ToCkptmgr(request(&req)));
            }
            RestoreAction::RestoreInstance {
                task_id,
                checkpoint_id,
                state,
            } => {
                let Some(conn) = self.task_conn(task_id) else {
                    debug!(task = task_id, "restore waits for the instance to connect");
                    return;
                };
                let m = RestoreInstanceStateRequest {
                    state: InstanceStateCheckpoint {
                        checkpoint_id,
                        state,
                        state_location: None,
                    },
                };
                encode_message(self.out.buf(conn), &ReqId::ZERO, &m);
            }
            RestoreAction::Respond {
                ok,
                checkpoint_id,
                txid,
                message,
            } => {
                info!(ok, checkpoint = %checkpoint_id, txid, "restore done here; telling the tmaster");
                let code = if ok {
                    StatusCode::Ok
                } else {
                    StatusCode::Notok
                };
                let m = RestoreTopologyStateResponse {
                    status: status(code, message),
                    checkpoint_id,
                    restore_txid: txid,
                };
                self.actions.push(Action::ToTmaster(one_way(&m)));
            }
            RestoreAction::StartInstances { checkpoint_id } => {
                info!(checkpoint = %checkpoint_id, "processing starts");
                if let Some(s) = self.stateful.as_mut() {
                    s.started = true;
                }
                let m = StartInstanceStatefulProcessing { checkpoint_id };
                let conns: Vec<ConnId> = self.conns.instance_conns().collect();
                for conn in conns {
                    encode_message(self.out.buf(conn), &ReqId::ZERO, &m);
                }
                // what peers that started first sent, behind the start on each connection
                let held = self
                    .stateful
                    .as_mut()
                    .map(|s| s.epoch.on_start())
                    .unwrap_or_default();
                for item in held {
                    match item {
                        Inbound::Tuples(m) => {
                            if let Err(e) = self.deliver_stream_message(m) {
                                warn!("dropping a held tuple set: {e}");
                            }
                        }
                        Inbound::Marker(m) => self.deliver_marker(&m),
                    }
                }
            }
        }
    }
}
