//! Thin public handles on the data-path internals, for the criterion benches in `benches/`
//! (`routing`, `xor`). Not an API: hidden from the docs, not for use outside this crate's
//! benches and tests. Every type forwards to the crate-private one of the same name; errors
//! become strings. [`instance`] builds plan records for benches and tests alike.

use std::time::{Duration, Instant};

use heron_proto::system::{Instance, InstanceInfo, PhysicalPlan};
use heron_proto::Packet;

/// The plan record of task `task` of `component` in the container of `stmgr`
/// (`stmgr-<c>`), with Heron's instance id `container_<c>_<component>_<task>`. Shared by the
/// benches, the unit tests and the integration tests.
pub fn instance(stmgr: &str, component: &str, task: i32) -> Instance {
    let container = stmgr.trim_start_matches("stmgr-");
    Instance {
        instance_id: format!("container_{container}_{component}_{task}"),
        stmgr_id: stmgr.into(),
        info: InstanceInfo {
            task_id: task,
            component_index: 0,
            component_name: component.into(),
            ..Default::default()
        },
    }
}

/// `crate::routing::Router`.
pub struct Router(crate::routing::Router);

impl Router {
    /// The routing table of `pplan` seen from `my_stmgr`.
    pub fn new(pplan: &PhysicalPlan, my_stmgr: &str) -> Result<Router, String> {
        crate::routing::Router::new(pplan, my_stmgr)
            .map(Router)
            .map_err(|e| e.to_string())
    }

    /// The index of a stream with subscribers.
    pub fn stream_index(&self, component: &str, stream: &str) -> Option<u32> {
        self.0.stream_index(component, stream)
    }

    /// Checks an encoded tuple and appends its destination slots (`false`: malformed).
    #[inline]
    pub fn route(&mut self, stream: u32, tuple: &[u8], out: &mut Vec<u32>) -> bool {
        match heron_proto::tuple::scan_tuple(tuple) {
            Ok(scan) => {
                self.0.route(stream, tuple, &scan, out);
                true
            }
            Err(_) => false,
        }
    }
}

/// `crate::xor::XorTracker` with Heron's 3 buckets.
pub struct XorTracker(crate::xor::XorTracker);

impl XorTracker {
    /// Trackers for `spout_tasks`; first rotation `timeout` after `now`.
    pub fn new(spout_tasks: &[i32], timeout: Duration, now: Instant) -> XorTracker {
        XorTracker(crate::xor::XorTracker::new(
            spout_tasks,
            timeout,
            crate::xor::DEFAULT_NBUCKETS,
            now,
        ))
    }

    /// XORs emitted keys into a tree; `true` when that completed it.
    #[inline]
    pub fn emit(&mut self, task: i32, root: i64, value: i64) -> bool {
        self.0.emit(task, root, value)
    }

    /// An ack; `true` when the tree completed.
    #[inline]
    pub fn ack(&mut self, task: i32, root: i64, value: i64) -> bool {
        self.0.ack(task, root, value)
    }

    /// A fail; `true` if the tree was tracked.
    #[inline]
    pub fn fail(&mut self, task: i32, root: i64) -> bool {
        self.0.fail(task, root)
    }

    /// Rotates for every interval ended by `now`.
    pub fn on_time(&mut self, now: Instant) {
        self.0.on_time(now)
    }

    /// When the next rotation is due.
    pub fn deadline(&self) -> Instant {
        self.0.deadline()
    }

    /// Trees tracked.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// `true` when no tree is tracked.
    pub fn is_empty(&self) -> bool {
        self.0.len() == 0
    }

    /// Entries dropped by rotations so far.
    pub fn expired(&self) -> u64 {
        self.0.expired
    }
}

/// `crate::core::Core`, the whole synchronous data path: a packet in, batches framed per
/// connection out.
pub struct Core(crate::core::Core);

impl Core {
    /// A stream manager with no connections and no plan (batches of
    /// `crate::BATCH_BYTES`, packets up to `crate::DEFAULT_MAX_PACKET_SIZE`).
    pub fn new(
        topology_name: &str,
        topology_id: &str,
        stmgr_id: &str,
        instance_ids: &[String],
        now: Instant,
    ) -> Core {
        Core(crate::core::Core::new(
            crate::core::CoreConfig {
                topology_name: topology_name.into(),
                topology_id: topology_id.into(),
                stmgr_id: stmgr_id.into(),
                instance_ids: instance_ids.to_vec(),
                max_packet_size: crate::DEFAULT_MAX_PACKET_SIZE,
                batch_bytes: crate::BATCH_BYTES,
            },
            now,
        ))
    }

    /// The instance server accepted connection `conn`.
    pub fn instance_connected(&mut self, conn: u64) {
        self.0.on_connected(
            conn,
            crate::core::Incoming::Instance,
            format!("bench-{conn}"),
        )
    }

    /// A packet arrived on `conn`.
    #[inline]
    pub fn on_packet(&mut self, conn: u64, packet: &Packet, now: Instant) {
        self.0.on_packet(conn, packet, now)
    }

    /// A physical plan from the tmaster.
    pub fn on_pplan(&mut self, pplan: PhysicalPlan, now: Instant) {
        self.0.on_pplan(pplan, now)
    }

    /// Ends a round and drops the resulting actions; returns the bytes it would write.
    pub fn end_round(&mut self, now: Instant, idle: bool) -> usize {
        self.0.end_round(now, idle);
        self.0
            .drain_actions()
            .map(|a| match a {
                crate::core::Action::Send(_, b) => b.len(),
                _ => 0,
            })
            .sum()
    }

    /// Tuples received from instances so far.
    pub fn tuples_from_instances(&self) -> u64 {
        self.0.counters().tuples_from_instances
    }

    /// Tuples delivered to local instances so far.
    pub fn tuples_to_instances(&self) -> u64 {
        self.0.delivered().to_instances
    }

    /// Spout tuple trees tracked (ATLEAST_ONCE).
    pub fn pending_trees(&self) -> usize {
        self.0.pending_trees()
    }
}
