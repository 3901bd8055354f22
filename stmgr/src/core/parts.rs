//! What goes into and comes out of the core: its configuration, the actions the shell carries
//! out, and the counters it keeps.

use crate::ids::ConnId;
use crate::route_set::Routed;
use bytes::Bytes;
use heron_proto::system::Instance;

/// What the shell must do.
#[derive(Debug)]
pub enum Action {
    /// Write these bytes (whole frames) to the connection.
    Send(ConnId, Bytes),
    /// Close the connection once what was sent to it is written.
    Close(ConnId),
    /// Open a client connection to another stream manager and say hello; report the
    /// outcome with `attempt`.
    ConnectStmgr {
        /// The stream manager.
        stmgr_id: String,
        /// Its host.
        host: String,
        /// Its data port.
        port: u16,
        /// The attempt, to report the outcome with.
        attempt: u64,
    },
    /// Every instance has registered: register (again, on reconnects) with these records.
    RegisterWithTmaster(Vec<Instance>),
    /// Stop (`true`) or resume reading from the connection (a local spout, back pressure).
    PauseReads(ConnId, bool),
    /// Send this framed message to the tmaster (dropped if it is not connected).
    ToTmaster(Bytes),
    /// Send this framed message to the checkpoint manager (dropped if it is not connected).
    ToCkptmgr(Bytes),
}

/// What happened to tuples, for logs and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
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
pub struct Bytes4 {
    /// From local instances.
    pub from_instances: u64,
    /// To local instances.
    pub to_instances: u64,
    /// From other stream managers.
    pub from_stmgrs: u64,
    /// To other stream managers.
    pub to_stmgrs: u64,
}

impl Counters {
    /// Counts what routing a data set did.
    pub(crate) fn add(&mut self, r: Routed) {
        self.tuples_from_instances += r.tuples;
        self.tuples_without_consumer += r.unrouted;
        self.tuples_too_large += r.too_large;
    }
}
