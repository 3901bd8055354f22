//! The tmaster's configuration: what the launcher passes, and tunables with Heron's defaults.

use heron_statemgr::StateManagerSpec;
use std::time::Duration;

/// What the launcher passes to a tmaster (`heron-role tmaster ...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TmasterConfig {
    /// The topology's name.
    pub topology_name: String,
    /// The topology's id (`<name>-<uuid>`).
    pub topology_id: String,
    /// The state manager (`local:/path` or `zk://host:port/root`). On ZooKeeper the tmaster
    /// asks for a [`TMASTER_ZK_SESSION_TIMEOUT`] session unless the spec sets one.
    pub state_manager: StateManagerSpec,
    /// The host to bind and to advertise, e.g. `"127.0.0.1"`.
    pub host: String,
    /// Port of the binary Heron protocol server (stream managers, metrics managers). 0 binds
    /// an ephemeral port, and the port actually bound is the one advertised.
    pub server_port: u16,
    /// Port of the controller HTTP endpoint (`/activate`, `/deactivate`,
    /// `/runtime_config/update`). 0 binds an ephemeral port.
    pub controller_port: u16,
    /// Port of the stats HTTP endpoint (advertised only; not served yet).
    pub stats_port: u16,
    /// Port of the container's checkpoint manager on 127.0.0.1 (`EFFECTIVELY_ONCE` only).
    pub ckptmgr_port: Option<u16>,
    /// The topology's secret: connections to the server port must pass its handshake
    /// (`heron_auth`), the controller wants its bearer token, and the tmaster proves itself
    /// to the checkpoint manager with it. `None` only for `heron-rs.auth.required=false`.
    pub auth: Option<heron_auth::Secret>,
    /// TLS on the server port (`heron-rs.tls.enabled`): stream managers connect from other
    /// hosts.
    pub tls: Option<heron_auth::Tls>,
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
    /// How many times to try creating the location node while another tmaster's node exists
    /// (`heron.tmanager.establish.retry.times`, 30).
    pub establish_retry_times: u32,
    /// The wait between those tries (`heron.tmanager.establish.retry.interval.sec`, 1 s).
    pub establish_retry_interval: Duration,
}

/// The ZooKeeper session timeout the tmaster asks for unless its spec sets one: 10 s instead
/// of Heron's 30 s. A crashed tmaster's ephemeral location node lives until its session times
/// out, and its restarted successor waits for that (retrying 30 × 1 s), so a shorter session
/// makes the successor take over within the retry budget. The cost: a tmaster cut off from
/// ZooKeeper for more than 10 s loses its node and exits (the executor restarts it).
pub const TMASTER_ZK_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

impl Default for TmasterOptions {
    fn default() -> Self {
        TmasterOptions {
            stmgr_state_timeout: Duration::from_secs(60),
            max_packet_size: 16 * 1024 * 1024,
            packing_plan_retry_interval: Duration::from_secs(1),
            packing_plan_attempts: 30,
            state_watch_interval: Duration::from_secs(1),
            outbox_capacity: 1024,
            establish_retry_times: 30,
            establish_retry_interval: Duration::from_secs(1),
        }
    }
}
