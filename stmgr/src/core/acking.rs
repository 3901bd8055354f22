//! At-least-once delivery in the core (`shared/reference/heron.md` §2.4).
//!
//! Only in `ATLEAST_ONCE` topologies ([`Acking`] exists only then; at-most-once keeps the
//! plain data path, no keys and no tracking):
//!
//! * every (tuple with roots, destination) gets a fresh random non-zero key, written into the
//!   copy in the batch;
//! * a spout tuple XORs its keys into its tree's entry in the [`XorTracker`] (this stream
//!   manager runs the spout); a bolt tuple's keys become one `emits` control tuple per root,
//!   for the stream manager of that root's spout task;
//! * acks and fails from local bolts are split per root and go the same way;
//! * control tuples for a spout task here are applied at once (emits, then acks, then fails
//!   of a set); those for spout tasks elsewhere are held per task and sent, batched, as a
//!   `TupleStreamMessage` whose `HeronTupleSet2` has only a control set;
//! * a tree that completes (XOR zero) or fails is reported to its spout instance as a
//!   `HeronTupleSet2{control: acks|fails [{roots: [{task, key}], ackedtuple: 0}]}`.
//!
//! Tuples lost with a dead process or link are not reported: the spout instance times them
//! out (`topology.message.timeout.secs`) and calls `fail`, and the tracker forgets them as it
//! rotates.

use super::*;
use crate::config::FLUSH_INTERVAL;
use crate::xor::{XorTracker, DEFAULT_NBUCKETS};
use heron_proto::tuple::{
    self as wire, read_acks, AckEntry, ControlKind as Kind, ControlTuples as ControlBuf,
    TupleError as WireError, TupleKey,
};
use std::time::Duration;

/// `topology.reliability.mode` / `topology.acking` / `topology.message.timeout.secs`.
const RELIABILITY_MODE: &str = "topology.reliability.mode";
const ACKING: &str = "topology.acking";
const MESSAGE_TIMEOUT_SECS: &str = "topology.message.timeout.secs";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The message timeout if the plan's topology is `ATLEAST_ONCE`, `None` otherwise.
pub(crate) fn acking_timeout(pplan: &PhysicalPlan) -> Option<Duration> {
    let kvs = pplan
        .topology
        .topology_config
        .as_ref()
        .map_or(&[][..], |c| &c.kvs[..]);
    let get = |key: &str| {
        kvs.iter()
            .rev()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.as_deref())
            .map(str::trim)
    };
    let acking = match get(RELIABILITY_MODE) {
        Some(m) if !m.is_empty() => m.eq_ignore_ascii_case("ATLEAST_ONCE"),
        _ => get(ACKING).is_some_and(|v| v.eq_ignore_ascii_case("true")),
    };
    if !acking {
        return None;
    }
    Some(
        get(MESSAGE_TIMEOUT_SECS)
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|&s| s > 0)
            .map_or(DEFAULT_TIMEOUT, Duration::from_secs),
    )
}

/// A fast PRNG (wyrand) for tuple keys, seeded from the OS.
#[derive(Debug)]
struct KeyRng(u64);

impl KeyRng {
    fn next(&mut self) -> i64 {
        self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
        let t = u128::from(self.0).wrapping_mul(u128::from(self.0 ^ 0xe703_7ed1_a0b4_28db));
        ((t >> 64) as u64 ^ t as u64) as i64
    }
}

/// What acking did, for logs and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AckCounters {
    /// Trees completed and reported to their spout.
    pub completed: u64,
    /// Trees failed and reported to their spout.
    pub failed: u64,
    /// Control tuples sent to other stream managers.
    pub control_to_stmgrs: u64,
    /// Control tuples whose spout task's stream manager or instance was not connected.
    pub control_lost: u64,
    /// Control tuples naming a task that is not a spout of the plan.
    pub control_unknown: u64,
}

/// The acking state of an `ATLEAST_ONCE` topology.
#[derive(Debug)]
pub(crate) struct Acking {
    tracker: XorTracker,
    /// Every spout task of the plan, sorted.
    spouts: Vec<i32>,
    rng: KeyRng,
    /// Control tuples for spout tasks of other stream managers, by task.
    remote: HashMap<i32, ControlBuf>,
    /// Acks and fails for local spout instances, by task.
    local: HashMap<i32, ControlBuf>,
    /// When the oldest held control tuple was added.
    since: Option<Instant>,
    counters: AckCounters,
    /// Scratch for the entries of one control set.
    entries: Vec<AckEntry>,
}

impl Acking {
    /// Reads an encoded control set and calls `f(self, kind, task, root, acked)` for every
    /// root of its entries: emits first (an ack must not meet its tree before the emits that
    /// go with it), then acks, then fails. Nothing is applied from a malformed set.
    fn for_each_control_root(
        &mut self,
        control: &[u8],
        mut f: impl FnMut(&mut Acking, Kind, i32, i64, i64),
    ) -> Result<(), WireError> {
        let mut entries = std::mem::take(&mut self.entries);
        entries.clear();
        let read = read_acks(control, &mut entries);
        if read.is_ok() {
            for kind in [Kind::Emit, Kind::Ack, Kind::Fail] {
                for e in entries.iter().filter(|e| e.kind == kind) {
                    e.for_each_root(control, |task, root| f(self, kind, task, root, e.acked));
                }
            }
        }
        self.entries = entries;
        read
    }

    fn new(timeout: Duration, now: Instant) -> Acking {
        Acking {
            tracker: XorTracker::new(&[], timeout, DEFAULT_NBUCKETS, now),
            spouts: Vec::new(),
            rng: KeyRng(rand::random()),
            remote: HashMap::new(),
            local: HashMap::new(),
            since: None,
            counters: AckCounters::default(),
            entries: Vec::new(),
        }
    }

    /// A key for the next copy of a tuple: non-zero, and not cancelling `xor` (the keys so
    /// far), so that a spout tree never starts at zero.
    fn next_key(&mut self, xor: i64) -> i64 {
        loop {
            let k = self.rng.next();
            if k != 0 && k != xor {
                return k;
            }
        }
    }

    fn is_spout(&self, task: i32) -> bool {
        self.spouts.binary_search(&task).is_ok()
    }

    fn hold(&mut self, now: Instant) {
        self.since.get_or_insert(now);
    }

    /// Tells the local spout `task` that tree `root` completed (`Kind::Ack`) or failed.
    fn report(&mut self, kind: Kind, task: i32, root: i64, now: Instant) {
        match kind {
            Kind::Fail => self.counters.failed += 1,
            _ => self.counters.completed += 1,
        }
        let kind = if kind == Kind::Fail {
            Kind::Fail
        } else {
            Kind::Ack
        };
        self.local
            .entry(task)
            .or_default()
            .push(kind, &[(task, root)], 0);
        self.hold(now);
    }

    /// Applies a control tuple for a spout task of this stream manager; `false` if the task
    /// is not tracked here.
    fn apply(&mut self, kind: Kind, task: i32, root: i64, value: i64, now: Instant) -> bool {
        if !self.tracker.tracks(task) {
            return false;
        }
        let done = match kind {
            Kind::Emit => self.tracker.emit(task, root, value),
            Kind::Ack => self.tracker.ack(task, root, value),
            Kind::Fail => self.tracker.fail(task, root),
        };
        if done {
            self.report(kind, task, root, now);
        }
        true
    }

    /// A control tuple for root `(task, root)`: applied here, or held for the stream manager
    /// that runs the task.
    fn route(&mut self, kind: Kind, task: i32, root: i64, value: i64, now: Instant) {
        if self.apply(kind, task, root, value, now) {
            return;
        }
        if self.is_spout(task) {
            self.remote
                .entry(task)
                .or_default()
                .push(kind, &[(task, root)], value);
            self.hold(now);
        } else {
            self.counters.control_unknown += 1;
        }
    }

    /// Bytes held for one destination beyond which it is sent at once.
    fn over(&self, limit: usize) -> bool {
        self.remote
            .values()
            .chain(self.local.values())
            .any(|b| b.len() >= limit)
    }
}

impl Core {
    /// Turns acking on, off or keeps it, for a new plan (whose router is installed).
    pub(super) fn update_acking(&mut self, pplan: &PhysicalPlan, now: Instant) {
        let Some(timeout) = acking_timeout(pplan) else {
            if self.acking.take().is_some() {
                info!("acking is off in the new physical plan");
            }
            return;
        };
        let acking = self.acking.get_or_insert_with(|| {
            info!("ATLEAST_ONCE: tracking spout tuple trees (message timeout {timeout:?})");
            Acking::new(timeout, now)
        });
        let spout_names: Vec<&str> = pplan
            .topology
            .spouts
            .iter()
            .map(|s| s.comp.name.as_str())
            .collect();
        let mut spouts = Vec::new();
        let mut local = Vec::new();
        for i in &pplan.instances {
            if spout_names.contains(&i.info.component_name.as_str()) {
                spouts.push(i.info.task_id);
                if i.stmgr_id == self.cfg.stmgr_id {
                    local.push(i.info.task_id);
                }
            }
        }
        spouts.sort_unstable();
        acking.spouts = spouts;
        acking.tracker.set_tasks(&local);
    }

    /// Routes the tuples of a data set with keys (ATLEAST_ONCE). Returns (tuples, unrouted,
    /// too large).
    pub(super) fn route_keyed(
        &mut self,
        src_task: i32,
        stream: u32,
        field: &[u8],
        set: &wire::DataSetRef<'_>,
    ) -> Result<(u64, u64, u64), WireError> {
        let (Some(router), Some(ack)) = (self.router.as_mut(), self.acking.as_mut()) else {
            return Ok((0, 0, 0));
        };
        let (cache, out, scratch, now) =
            (&mut self.cache, &mut self.out, &mut self.scratch, self.now);
        let mut deliver = |slot: u32, b: &mut Batch| out.deliver(slot, b);
        let from_spout = ack.tracker.tracks(src_task);
        let (mut tuples, mut unrouted, mut too_large) = (0u64, 0u64, 0u64);
        set.for_each_tuple(|tuple| {
            let scan = wire::scan_tuple(tuple)?;
            tuples += 1;
            scratch.clear();
            router.route(stream, tuple, &scan, scratch);
            if scratch.is_empty() {
                unrouted += 1;
            }
            if scan.roots == 0 {
                for &slot in scratch.iter() {
                    if !cache.push(slot, src_task, stream, field, tuple, now, &mut deliver) {
                        too_large += 1;
                    }
                }
                return Ok(());
            }
            let offset = scan.key_offset;
            let mut xor = 0i64;
            for &slot in scratch.iter() {
                let key = ack.next_key(xor);
                xor ^= key;
                let key = Some(TupleKey { offset, key });
                if !cache.push_keyed(slot, src_task, stream, field, tuple, key, now, &mut deliver) {
                    too_large += 1;
                }
            }
            scan.for_each_root(tuple, |task, root| {
                if from_spout {
                    if task != src_task {
                        ack.counters.control_unknown += 1;
                    } else if xor == 0 {
                        // Nobody consumes it: the tree is complete as it starts.
                        ack.report(Kind::Ack, task, root, now);
                    } else {
                        ack.tracker.emit(task, root, xor);
                    }
                } else if xor != 0 {
                    ack.route(Kind::Emit, task, root, xor, now);
                }
            });
            Ok(())
        })?;
        Ok((tuples, unrouted, too_large))
    }

    /// Acks and fails (and emits) from a local instance, split per root and routed to the
    /// root's spout task.
    pub(super) fn on_control(&mut self, src_task: i32, control: &[u8]) -> Result<(), String> {
        let now = self.now;
        let Some(ack) = self.acking.as_mut() else {
            if self.counters.control_sets_ignored == 0 {
                info!("ignoring control tuples (first from task {src_task}): the topology is not ATLEAST_ONCE");
            }
            self.counters.control_sets_ignored += 1;
            return Ok(());
        };
        ack.for_each_control_root(control, |ack, kind, task, root, acked| {
            ack.route(kind, task, root, acked, now)
        })
        .map_err(|e| format!("malformed control tuples from task {src_task}: {e}"))?;
        self.flush_control(false);
        Ok(())
    }

    /// A `TupleStreamMessage`'s set (ATLEAST_ONCE): applies its control tuples for spout
    /// tasks here; returns what to forward to the destination instance: the set unchanged if
    /// it has no control part, its data part alone if it has both, nothing if control only.
    pub(super) fn on_remote_control(&mut self, set: Bytes) -> Result<Option<Bytes>, String> {
        let parts = wire::split_set2(&set).map_err(|e| format!("malformed HeronTupleSet2: {e}"))?;
        let Some(c) = parts.control else {
            return Ok(Some(set));
        };
        let now = self.now;
        if let Some(ack) = self.acking.as_mut() {
            ack.for_each_control_root(c, |ack, kind, task, root, acked| {
                if !ack.apply(kind, task, root, acked, now) {
                    ack.counters.control_unknown += 1;
                }
            })
            .map_err(|e| format!("malformed control tuples from a stream manager: {e}"))?;
        }
        self.flush_control(false);
        Ok(parts.data.map(|d| {
            let mut b = BytesMut::with_capacity(d.len() + 16);
            wire::put_data_set2(&mut b, d, parts.src_task);
            b.freeze()
        }))
    }

    /// Sends held control tuples: all of them with `all`, else only buffers over the batch
    /// size.
    pub(super) fn flush_control(&mut self, all: bool) {
        let limit = self.cfg.batch_bytes;
        let (Some(ack), Some(router)) = (self.acking.as_mut(), self.router.as_ref()) else {
            return;
        };
        if ack.since.is_none() || (!all && !ack.over(limit)) {
            return;
        }
        let out = &mut self.out;
        let dest = |task: i32| {
            router
                .slot_of(task)
                .and_then(|s| out.slots.get(s as usize).copied().flatten())
        };
        let mut frames: Vec<(ConnId, &'static str, BytesMut)> = Vec::new();
        let counters = &mut ack.counters;
        for (&task, buf) in ack.remote.iter_mut().chain(ack.local.iter_mut()) {
            if buf.is_empty() || (!all && buf.len() < limit) {
                continue;
            }
            let mut payload = BytesMut::with_capacity(buf.len() + 32);
            match dest(task) {
                Some(Dest {
                    conn, local: false, ..
                }) => {
                    counters.control_to_stmgrs += u64::from(buf.count());
                    buf.take_stream_message(task, task, &mut payload);
                    frames.push((conn, TUPLE_STREAM_MESSAGE, payload));
                }
                Some(Dest {
                    conn, local: true, ..
                }) => {
                    buf.take_tuple_set(task, &mut payload);
                    frames.push((conn, HERON_TUPLE_SET2, payload));
                }
                None => {
                    counters.control_lost += u64::from(buf.count());
                    buf.clear();
                }
            }
        }
        if all {
            ack.since = None;
        }
        for (conn, name, payload) in frames {
            encode_raw(out.buf(conn), name, &ReqId::ZERO, &payload);
        }
    }

    /// Ends an acking round: sends held control tuples if idle or due; rotates the tracker.
    pub(super) fn acking_round(&mut self, now: Instant, idle: bool) {
        let Some(ack) = self.acking.as_mut() else {
            return;
        };
        ack.tracker.on_time(now);
        if ack.since.is_some_and(|t| idle || now >= t + FLUSH_INTERVAL) {
            self.flush_control(true);
        }
    }

    /// When acking needs [`Core::end_round`] next.
    pub(super) fn acking_deadline(&self) -> Option<Instant> {
        let ack = self.acking.as_ref()?;
        let flush = ack.since.map(|t| t + FLUSH_INTERVAL);
        Some(flush.map_or(ack.tracker.deadline(), |f| f.min(ack.tracker.deadline())))
    }

    /// Spout tuple trees tracked here.
    pub fn pending_trees(&self) -> usize {
        self.acking.as_ref().map_or(0, |a| a.tracker.len())
    }

    /// Acking counters (zero when not acking).
    pub fn ack_counters(&self) -> AckCounters {
        self.acking
            .as_ref()
            .map(|a| a.counters.clone())
            .unwrap_or_default()
    }
}
