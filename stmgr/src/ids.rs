//! The names every part of the stream manager shares: connection ids, which server accepted
//! a connection, and the message type names the core dispatches on.

/// Identifies one connection for the life of the process.
pub type ConnId = u64;

/// Which server accepted a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Incoming {
    /// The instance server (`local_data_port`).
    Instance,
    /// The stream-manager server (`data_port`).
    Stmgr,
}

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
