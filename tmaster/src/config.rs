//! The tmaster's configuration: what the launcher passes, and tunables with Heron's defaults.

use std::path::PathBuf;
use std::time::Duration;

/// What the launcher passes to a tmaster (`heron-role tmaster ...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TmasterConfig {
    /// The topology's name.
    pub topology_name: String,
    /// The topology's id (`<name>-<uuid>`).
    pub topology_id: String,
    /// Root of the local file-system state manager.
    pub state_root: PathBuf,
    /// The host to bind and to advertise, e.g. `"127.0.0.1"`.
    pub host: String,
    /// Port of the binary Heron protocol server (stream managers, metrics managers). 0 binds
    /// an ephemeral port, and the port actually bound is the one advertised.
    pub server_port: u16,
    /// Port of the controller HTTP endpoint (advertised only; not served yet).
    pub controller_port: u16,
    /// Port of the stats HTTP endpoint (advertised only; not served yet).
    pub stats_port: u16,
}

/// Tunables. [`Default`] gives Heron's values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TmasterOptions {
    /// A registered stmgr whose last heartbeat is newer than this blocks a second registration
    /// of its id (`heron.tmanager.stmgr.state.timeout.sec`, 60 s).
    pub stmgr_state_timeout: Duration,
    /// Largest packet accepted on the server port
    /// (`heron.tmanager.network.server.options.maximum.packet.mb`, 16 MiB).
    pub max_packet_size: usize,
    /// How often to look for the packing plan at start-up (1 s).
    pub packing_plan_retry_interval: Duration,
    /// How many times to look for the packing plan before giving up (30).
    pub packing_plan_attempts: u32,
    /// How often to check that the location node is still ours and the packing plan unchanged
    /// (1 s).
    pub state_watch_interval: Duration,
    /// Packets queued for one connection before it is considered stuck and closed (1024).
    pub outbox_capacity: usize,
}

impl Default for TmasterOptions {
    fn default() -> Self {
        TmasterOptions {
            stmgr_state_timeout: Duration::from_secs(60),
            max_packet_size: 16 * 1024 * 1024,
            packing_plan_retry_interval: Duration::from_secs(1),
            packing_plan_attempts: 30,
            state_watch_interval: Duration::from_secs(1),
            outbox_capacity: 1024,
        }
    }
}
