//! The stream manager's configuration and its timing and sizing constants.

use heron_statemgr::StateManagerSpec;
use std::time::Duration;

/// Everything a stream manager needs to start (see `docs/internals.md`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StmgrConfig {
    /// The topology's name.
    pub topology_name: String,
    /// The topology's id (`<name>-<uuid>`).
    pub topology_id: String,
    /// The state manager (`local:/path` or `zk://host:port/root`).
    pub state_manager: StateManagerSpec,
    /// This stream manager's id, `stmgr-<container>`.
    pub stmgr_id: String,
    /// The host other stream managers connect to (and that goes into the physical plan).
    pub host: String,
    /// Port of the stmgr <-> stmgr server.
    pub data_port: u16,
    /// Port of the instance server (bound on 127.0.0.1).
    pub local_data_port: u16,
    /// Every instance of this container; the stream manager registers with the tmaster once
    /// all of them have registered.
    pub instance_ids: Vec<String>,
    /// Largest packet accepted on any connection (Heron's stmgr default: 10 MB).
    pub max_packet_size: usize,
    /// Port of the container's checkpoint manager on 127.0.0.1 (`EFFECTIVELY_ONCE` only).
    pub ckptmgr_port: Option<u16>,
    /// Port of the container's shell (`heron_shell`: its log files, read-only) on `host`,
    /// advertised in the physical plan; `None`: no shell.
    pub shell_port: Option<u16>,
    /// The topology's secret: every connection, accepted or made, starts with its handshake
    /// (`heron_auth`). `None` only for `heron-rs.auth.required=false`.
    pub auth: Option<heron_auth::Secret>,
    /// TLS on the links to other stream managers and to the tmaster
    /// (`heron-rs.tls.enabled`); the instance server stays plain (loopback).
    pub tls: Option<heron_auth::Tls>,
}

/// Heron's stream-manager packet limit, 10 MB.
pub const DEFAULT_MAX_PACKET_SIZE: usize = 10 * 1024 * 1024;

/// How often the stream manager heartbeats the tmaster
/// (`heron.streammgr.tmanager.heartbeat.interval.sec`).
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(10);

/// How long to wait before reconnecting to the tmaster or to another stream manager, and how
/// often the tmaster location is re-read.
pub const RECONNECT_INTERVAL: Duration = Duration::from_secs(1);

/// How long a request (register, hello) may wait for its response.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// A batch to one destination task closes once its tuples take this many bytes.
pub const BATCH_BYTES: usize = 32 * 1024;

/// The longest an open batch waits before it is sent, even while input keeps coming.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(1);

/// Room kept free in every packet for its framing and headers.
pub const PACKET_OVERHEAD: usize = 1024;

/// The most input events the core handles before it looks at its timers and flushes.
pub const MAX_EVENTS_PER_ROUND: usize = 64;

/// How long a new physical plan is held back from local instances while the links to the
/// other stream managers come up.
pub const MESH_WAIT: Duration = Duration::from_secs(5);

/// What the state machine needs of the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreConfig {
    /// The topology's name.
    pub topology_name: String,
    /// The topology's id.
    pub topology_id: String,
    /// This stream manager (`stmgr-<container>`).
    pub stmgr_id: String,
    /// The instances of this container, which must all register.
    pub instance_ids: Vec<String>,
    /// The largest packet read or written.
    pub max_packet_size: usize,
    /// The size at which a batch closes.
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
