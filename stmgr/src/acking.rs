//! At-least-once delivery in the core (`shared/reference/heron.md` §2.4).
//!
//! Only in `ATLEAST_ONCE` topologies ([`Acking`] exists only then; at-most-once keeps the
//! plain data path, no keys and no tracking):
//!
//! * every (tuple with roots, destination) gets a fresh random non-zero key, written into the
//!   copy in the batch, unless its sender keyed it (a keyed set, whose emits its sender
//!   sent: ours, ahead of a spout's set and with or before a bolt's acks);
//! * a spout tuple XORs its keys into its tree's entry in the [`XorTracker`] (this stream
//!   manager runs the spout); a bolt tuple's keys become one `emits` control tuple per root,
//!   for the stream manager of that root's spout task;
//! * acks and fails (and emits) from local instances are split per root and go the same way,
//!   merged per root while held (an emit riding in an ack:
//!   [`ControlTuples::push_merged`]);
//! * control tuples for a spout task here are applied at once (emits, then acks, then fails
//!   of a set); those for spout tasks elsewhere are held per task and sent, batched, as a
//!   `TupleStreamMessage` whose `HeronTupleSet2` has only a control set;
//! * a tree that completes (XOR zero) or fails is reported to its spout instance as a
//!   `HeronTupleSet2{control: acks|fails [{roots: [{task, key}], ackedtuple: 0}]}`, at the
//!   end of the round, or, while the spout is held by a full window, once it would emit on
//!   them ([`SpoutWindows`]).
//!
//! Tuples lost with a dead process or link are not reported: the spout instance times them
//! out (`topology.message.timeout.secs`) and calls `fail`, and the tracker forgets them as it
//! rotates.

use crate::config::FLUSH_INTERVAL;
use crate::ids::names::{HERON_TUPLE_SET2, TUPLE_STREAM_MESSAGE};
use crate::ids::ConnId;
use crate::outbox::{Dest, Outbox};
use crate::routing::Router;
use crate::spout_windows::SpoutWindows;
use crate::xor::{XorTracker, DEFAULT_NBUCKETS};
use bytes::BytesMut;
use heron_proto::codec::encode_raw;
use heron_proto::keys::KeyBuildHasher;
use heron_proto::system::PhysicalPlan;
use heron_proto::tuple::{read_acks, AckEntry, ControlKind as Kind, ControlTuples, TupleError};
use heron_proto::ReqId;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tracing::info;

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
pub struct AckCounters {
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
    remote: HashMap<i32, ControlTuples, KeyBuildHasher>,
    /// Acks and fails for local spout instances, by task.
    local: HashMap<i32, ControlTuples, KeyBuildHasher>,
    /// When the oldest held control tuple was added (not counting those kept for a held
    /// spout).
    since: Option<Instant>,
    /// The local spouts' windows: whether acks and fails for a spout are kept for now.
    windows: SpoutWindows,
    /// `true` while acks or fails are kept for a held spout.
    kept: bool,
    counters: AckCounters,
    /// Scratch for the entries of one control set.
    entries: Vec<AckEntry>,
}

impl Acking {
    /// Acking for `pplan`, from what there was: `None` unless the plan's topology is
    /// `ATLEAST_ONCE`; the XOR tracker follows the plan's local spout tasks.
    pub fn for_plan(
        was: Option<Acking>,
        pplan: &PhysicalPlan,
        stmgr_id: &str,
        now: Instant,
    ) -> Option<Acking> {
        let Some(timeout) = acking_timeout(pplan) else {
            if was.is_some() {
                info!("acking is off in the new physical plan");
            }
            return None;
        };
        let mut acking = was.unwrap_or_else(|| {
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
                if i.stmgr_id == stmgr_id {
                    local.push(i.info.task_id);
                }
            }
        }
        spouts.sort_unstable();
        acking.spouts = spouts;
        acking.tracker.set_tasks(&local);
        acking.windows = SpoutWindows::for_plan(pplan, &local);
        Some(acking)
    }

    /// One root `(task, root)` of an anchored tuple from `src_task` whose copies got keys
    /// XORing to `xor`.
    pub fn rooted(
        &mut self,
        from_spout: bool,
        src_task: i32,
        task: i32,
        root: i64,
        xor: i64,
        now: Instant,
    ) {
        if from_spout {
            if task != src_task {
                self.counters.control_unknown += 1;
            } else if xor == 0 {
                // Nobody consumes it: the tree is complete as it starts.
                self.report(Kind::Ack, task, root, now);
            } else {
                self.tracker.emit(task, root, xor);
            }
        } else if xor != 0 {
            self.route(Kind::Emit, task, root, xor, now);
        }
    }

    /// An emit of `value` for root `(task, root)` (nothing when `value` is 0): applied here
    /// or held for the root's stream manager. For the copies a keyed set's tuple gets beyond
    /// the one its sender keyed.
    pub fn emitted(&mut self, task: i32, root: i64, value: i64, now: Instant) {
        if value != 0 {
            self.route(Kind::Emit, task, root, value, now);
        }
    }

    /// Acks and fails (and emits) from a local instance, split per root and routed to the
    /// root's spout task.
    pub fn on_local_control(&mut self, control: &[u8], now: Instant) -> Result<(), TupleError> {
        self.for_each_control_root(control, |ack, kind, task, root, acked| {
            ack.route(kind, task, root, acked, now)
        })
    }

    /// Control tuples from another stream manager: applied to the spout tasks here.
    pub fn on_remote_control(&mut self, control: &[u8], now: Instant) -> Result<(), TupleError> {
        self.for_each_control_root(control, |ack, kind, task, root, acked| {
            if !ack.apply(kind, task, root, acked, now) {
                ack.counters.control_unknown += 1;
            }
        })
    }

    /// Sends held control tuples: all of them with `all` (but those a held spout would not
    /// emit on yet at `now`), else only buffers over `limit` bytes; each to the connection of
    /// its spout task's slot.
    pub fn flush(
        &mut self,
        all: bool,
        limit: usize,
        router: &Router,
        out: &mut Outbox,
        now: Instant,
    ) {
        if (self.since.is_none() && !self.kept) || (!all && !self.over(limit)) {
            return;
        }
        let mut frames: Vec<(ConnId, &'static str, BytesMut)> = Vec::new();
        let counters = &mut self.counters;
        let (tracker, windows) = (&self.tracker, &mut self.windows);
        let mut kept = false;
        let local = self.local.iter_mut().map(|(t, b)| (t, b, true));
        let remote = self.remote.iter_mut().map(|(t, b)| (t, b, false));
        for (&task, buf, is_local) in remote.chain(local) {
            if buf.is_empty() || (!all && buf.len() < limit) {
                continue;
            }
            if is_local && buf.len() < limit && !windows.release(task, tracker.pending(task), now) {
                kept = true;
                continue;
            }
            let mut payload = BytesMut::with_capacity(buf.len() + 32);
            match router.slot_of(task).and_then(|s| out.dest(s)) {
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
            self.since = None;
            self.kept = kept;
        }
        for (conn, name, payload) in frames {
            encode_raw(out.buf(conn), name, &ReqId::ZERO, &payload);
        }
    }

    /// The end of a round at `now`: rotates the tracker and notes which local spouts' windows
    /// are full; `true` if the held control tuples must be sent (`idle`, or they waited the
    /// flush interval, or a held spout would now emit on what is kept for it).
    pub fn end_round(&mut self, now: Instant, idle: bool) -> bool {
        self.tracker.on_time(now);
        let (tracker, local) = (&self.tracker, &self.local);
        let released = self.windows.end_round(now, |task| {
            let held = local.get(&task).map_or(0, |b| b.count() as usize);
            (tracker.pending(task), held)
        });
        (self.kept && released)
            || self
                .since
                .is_some_and(|t| idle || now >= t + FLUSH_INTERVAL)
    }

    /// When acking needs the end of a round next.
    pub fn deadline(&self) -> Instant {
        let flush = self.since.map(|t| t + FLUSH_INTERVAL);
        let kept = self.windows.deadline().filter(|_| self.kept);
        [flush, kept]
            .into_iter()
            .flatten()
            .fold(self.tracker.deadline(), Instant::min)
    }

    /// Spout tuple trees tracked here.
    pub fn pending_trees(&self) -> usize {
        self.tracker.len()
    }

    /// What acking did.
    pub fn counters(&self) -> &AckCounters {
        &self.counters
    }

    /// Reads an encoded control set and calls `f(self, kind, task, root, acked)` for every
    /// root of its entries: emits first (an ack must not meet its tree before the emits that
    /// go with it), then acks, then fails. Nothing is applied from a malformed set.
    fn for_each_control_root(
        &mut self,
        control: &[u8],
        mut f: impl FnMut(&mut Acking, Kind, i32, i64, i64),
    ) -> Result<(), TupleError> {
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
            remote: HashMap::default(),
            local: HashMap::default(),
            since: None,
            windows: SpoutWindows::default(),
            kept: false,
            counters: AckCounters::default(),
            entries: Vec::new(),
        }
    }

    /// A key for the next copy of a tuple: non-zero, and not cancelling `xor` (the keys so
    /// far), so that a spout tree never starts at zero.
    pub fn next_key(&mut self, xor: i64) -> i64 {
        loop {
            let k = self.rng.next();
            if k != 0 && k != xor {
                return k;
            }
        }
    }

    /// `true` if `task` is a spout task of this stream manager (its trees are tracked here).
    pub fn tracks(&self, task: i32) -> bool {
        self.tracker.tracks(task)
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
        let Some(trees) = self.tracker.trees_mut(task) else {
            return false;
        };
        let done = match kind {
            Kind::Emit => trees.anchor(root, value),
            Kind::Ack => trees.ack(root, value),
            Kind::Fail => trees.remove(root),
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
            // merged per root: the emits and acks held for one root become one entry
            self.remote
                .entry(task)
                .or_default()
                .push_merged(kind, &[(task, root)], value);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::two_spouts_one_bolt;
    use heron_proto::api;

    /// spout 1 here, spout 2 on stmgr-2, bolt 3; `mode` with a 3 s timeout.
    fn plan(mode: &str) -> PhysicalPlan {
        let mode = ("topology.reliability.mode", mode);
        two_spouts_one_bolt(
            api::Grouping::Shuffle,
            &[mode, ("topology.message.timeout.secs", "3")],
        )
    }

    #[test]
    fn a_tree_completes_when_its_acks_cancel_its_emits() {
        let t0 = Instant::now();
        assert!(Acking::for_plan(None, &plan("ATMOST_ONCE"), "stmgr-1", t0).is_none());
        let mut ack = Acking::for_plan(None, &plan("ATLEAST_ONCE"), "stmgr-1", t0).unwrap();
        assert!(ack.tracks(1) && !ack.tracks(2) && !ack.tracks(3));
        // spout 1 emits root 7 to two bolts with keys k1 ^ k2
        let (k1, k2) = (ack.next_key(0), 0x55);
        ack.rooted(true, 1, 1, 7, k1 ^ k2, t0);
        assert_eq!(ack.pending_trees(), 1);
        assert!(!ack.end_round(t0, false), "nothing held yet");
        // the bolt acks both copies: the tree completes and spout 1 is told at the round's end
        let mut c = ControlTuples::default();
        c.push(Kind::Ack, &[(1, 7)], k1);
        c.push(Kind::Ack, &[(1, 7)], k2);
        ack.on_local_control(c.as_bytes(), t0).unwrap();
        assert_eq!(ack.pending_trees(), 0);
        assert_eq!(ack.counters().completed, 1);
        assert!(ack.end_round(t0, true));
        assert_eq!(ack.deadline().min(t0 + FLUSH_INTERVAL), t0 + FLUSH_INTERVAL);
        // an ack for spout 2's tree is held for stmgr-2; one for a bolt task is unknown
        let mut c = ControlTuples::default();
        c.push(Kind::Ack, &[(2, 9)], 1);
        c.push(Kind::Fail, &[(3, 9)], 0);
        ack.on_local_control(c.as_bytes(), t0).unwrap();
        assert_eq!(ack.counters().control_unknown, 1);
        assert!(ack.remote.get(&2).is_some_and(|b| b.count() == 1));
        // from another stream manager, a control tuple for a spout not tracked here is unknown
        ack.on_remote_control(c.as_bytes(), t0).unwrap();
        assert_eq!(ack.counters().control_unknown, 3);
        assert!(
            ack.on_local_control(&[0x0a, 0], t0).is_err(),
            "no ackedtuple"
        );
    }
}
