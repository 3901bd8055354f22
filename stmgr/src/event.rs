//! What the I/O tasks (servers, connection readers, the stmgr and tmaster clients) tell the
//! async shell, through one queue. Its own module, so that the tasks and the shell that
//! spawns them do not import each other.

use crate::ids::{ConnId, Incoming};
use bytes::BytesMut;
use heron_auth::Link;
use heron_proto::system::PhysicalPlan;
use heron_proto::Packet;

/// What tasks tell the shell (which feeds the core).
#[derive(Debug)]
pub(crate) enum Event {
    /// A server accepted a connection.
    Accepted {
        stream: Link,
        /// Where it came from (an address, or the local socket), for logs.
        peer: String,
        kind: Incoming,
    },
    /// Packets read from a connection, in order.
    Packets { conn: ConnId, packets: Vec<Packet> },
    /// A connection ended.
    Closed { conn: ConnId },
    /// A client connection to another stream manager said hello successfully.
    StmgrClientUp {
        stmgr_id: String,
        attempt: u64,
        stream: Link,
        leftover: BytesMut,
    },
    /// A client connection attempt failed.
    StmgrClientFailed { stmgr_id: String, attempt: u64 },
    /// The tmaster sent a physical plan.
    Pplan(PhysicalPlan),
    /// The tmaster sent a checkpoint-manager message (`EFFECTIVELY_ONCE`).
    TmasterMessage(Packet),
    /// The checkpoint manager connection is up.
    CkptmgrUp,
    /// The checkpoint manager connection is gone.
    CkptmgrDown,
    /// The checkpoint manager sent a packet.
    CkptmgrPacket(Packet),
}
