//! heron-instance: the Heron instance process that runs one spout or bolt task.
//!
//! Heron's model (reference/heron.md §4): a **gateway** owns the TCP connection to the
//! local stream manager (registration, then a socket writer thread doing blocking
//! `std::net` I/O) and an **executor** runs the user's spout or bolt on the thread that
//! called [`run`]. The executor reads the socket itself, in the wait where it would
//! otherwise sleep on an in-queue (`inbox.rs`: one wake-up per delivery instead of two);
//! input it does not take stays in the socket's receive buffer (TCP back pressure on the
//! stream manager). Output goes through the socket directly when it takes it at once, else
//! through a bounded queue to the writer that sleeps without spinning (`queue.rs`); a full
//! out-queue stops `next_tuple` / `execute`.
//!
//! On a lost connection the instance does not reconnect: `run` calls `close` / `cleanup`
//! and returns [`InstanceError::Disconnected`], and the supervising executor restarts the
//! process, which registers afresh.
//!
//! May depend on `heron-proto` and `heron-api` (plus `crossbeam-channel`, `crossbeam-utils`, `bytes`, `prost`,
//! `tracing`); no async runtime.

use std::path::PathBuf;
use std::time::Duration;

use heron_api::HeronTopology;
use heron_proto::codec::CodecError;

mod bolt_loop;
mod executor;
#[doc(hidden)]
pub mod fuzz;
mod gateway;
mod inbound;
mod inbox;
mod linger;
mod metrics;
mod outbound;
pub mod process_stats;
mod queue;
mod spout_loop;
mod stateful;
mod stmgr_socket;
mod stream_metrics;

pub use heron_flow::refill::refill_slots;
pub use metrics::{read_counters, write_counters};

/// What the instance process is told on its command line (docs/internals.md).
#[derive(Clone, Debug)]
pub struct InstanceConfig {
    /// The topology name.
    pub topology_name: String,
    /// The topology id.
    pub topology_id: String,
    /// `container_<c>_<component>_<task>`.
    pub instance_id: String,
    /// The component this task runs.
    pub component_name: String,
    /// The task id.
    pub task_id: i32,
    /// The index of the task among its component's tasks.
    pub component_index: i32,
    /// `stmgr-<container>`.
    pub stmgr_id: String,
    /// The local stream manager's instance port on 127.0.0.1.
    pub stmgr_port: u16,
    /// Where to write the counters file `<metrics_dir>/<instance_id>` (none: not written).
    pub metrics_dir: Option<PathBuf>,
    /// The largest packet accepted from the stream manager (a larger one closes the
    /// connection; `heron.instance.network.options.maximum.packetsize.bytes`, default
    /// [`MAX_PACKET_SIZE`]).
    pub max_packet_size: usize,
    /// The topology's secret, proven to the stream manager before registering
    /// (`heron_auth`). `None` only for `heron-rs.auth.required=false`.
    pub auth: Option<heron_auth::Secret>,
}

/// Timing knobs of [`run_with_options`]; [`Default`] gives the production values.
#[doc(hidden)]
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Give up connecting after this long.
    pub connect_timeout: Duration,
    /// The longest wait between connection attempts (the first waits are shorter and double).
    pub connect_retry_interval: Duration,
    /// Give up waiting for the registration response after this long.
    pub register_timeout: Duration,
    /// Write the counters file this often.
    pub metrics_interval: Duration,
    /// Bounded capacity (in batches) of the executor → gateway queue.
    pub out_queue_capacity: usize,
    /// The executor → gateway queue is full once its batches hold this many bytes.
    pub out_queue_bytes: usize,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            connect_timeout: Duration::from_secs(60),
            connect_retry_interval: Duration::from_secs(1),
            register_timeout: Duration::from_secs(60),
            metrics_interval: Duration::from_secs(1),
            out_queue_capacity: 32,
            out_queue_bytes: QUEUE_BYTES,
        }
    }
}

/// The byte budget of a bolt's out-queue to the gateway's writer (and, as the receive buffer
/// asked of the socket, of what waits for its executor). At saturation every queue between a
/// spout and the slowest bolt is full, so what the queues hold is the topology's queueing
/// latency. 16 batches of up to 128 KiB (the budget before) let the
/// queues of a flat-out word count hold about a second of words between them; 256 KiB is
/// about 10 ms of a word count task's input (`docs/cost-log.md`).
pub const QUEUE_BYTES: usize = 256 << 10;

/// A spout's out-queue budget and socket send buffer. A spout's tuples are the roots of all
/// the work downstream (a sentence becomes eight words in a word count), and it writes few
/// bytes per second: the 256 KiB of a bolt's queue and socket held about 10 ms each of one
/// spout's sentences, and 30 ms of end-to-end latency flat out (`docs/cost-log.md`). 32 KiB is
/// one flush.
pub const SPOUT_BUFFER_BYTES: usize = 32 << 10;

/// Heron's instance maximum packet size (`heron.instance.network.options.maximum.packetsize.bytes`).
pub const MAX_PACKET_SIZE: usize = 10 * 1024 * 1024;

/// Why the instance stopped. Every variant is fatal: the process should exit and be restarted.
#[derive(Debug, thiserror::Error)]
pub enum InstanceError {
    /// No stream manager accepted a connection in time.
    #[error(
        "could not connect to the stream manager at 127.0.0.1:{port} within {waited:?}: {source}"
    )]
    Connect {
        /// The stream manager's port.
        port: u16,
        /// How long we tried.
        waited: Duration,
        /// The last connection error.
        source: std::io::Error,
    },
    /// The stream manager did not pass the handshake, or refused ours.
    #[error("authentication with the stream manager failed: {0}")]
    Auth(#[from] heron_auth::AuthError),
    /// Socket I/O failed while registering.
    #[error("i/o error talking to the stream manager: {0}")]
    Io(#[from] std::io::Error),
    /// The stream manager sent something unreadable while registering.
    #[error("bad packet from the stream manager: {0}")]
    Codec(#[from] CodecError),
    /// The stream manager sent a tuple set that is not a `HeronTupleSet2`.
    #[error("bad tuple set from the stream manager: {0}")]
    TupleSet(#[from] heron_proto::tuple::TupleError),
    /// The stream manager refused the registration.
    #[error("the stream manager refused to register instance {instance_id}: {message}")]
    RegisterRefused {
        /// Our instance id.
        instance_id: String,
        /// The status code and message.
        message: String,
    },
    /// No registration response in time.
    #[error("no registration response from the stream manager within {0:?}")]
    RegisterTimeout(Duration),
    /// The connection to the stream manager was lost (or it sent a malformed packet).
    #[error("the connection to the stream manager was lost")]
    Disconnected,
    /// Our task is not in the physical plan, or it changed component.
    #[error("the physical plan does not assign task {task_id} to component {component:?}")]
    AssignmentChanged {
        /// Our task id.
        task_id: i32,
        /// Our component.
        component: String,
    },
    /// A new physical plan has other tasks than the one the component started with (a
    /// parallelism change): the instance exits, and its restart opens the component with the
    /// new plan (its task list, its share of the work).
    #[error("the physical plan's tasks changed (heron update); restarting with the new plan")]
    PlanChanged,
    /// The topology has no such component (the binary and the plan disagree).
    #[error("the topology has no component {0:?}")]
    UnknownComponent(String),
    /// The context could not be built from the physical plan.
    #[error("physical plan: {0}")]
    Context(#[from] heron_api::ContextError),
    /// A gateway thread could not be started.
    #[error("could not start the gateway thread: {0}")]
    Thread(std::io::Error),
}

/// Runs the instance until it must exit: connects to the local stream manager (retrying
/// every second for a minute), registers, waits for the physical plan, then runs the
/// component. Returns when the connection is lost (after calling `close` / `cleanup`) or
/// on a fatal error; never returns `Ok` today.
pub fn run(config: InstanceConfig, topology: &HeronTopology) -> Result<(), InstanceError> {
    run_with_options(config, topology, RunOptions::default())
}

/// [`run`] with explicit timing knobs (for tests).
#[doc(hidden)]
pub fn run_with_options(
    config: InstanceConfig,
    topology: &HeronTopology,
    mut options: RunOptions,
) -> Result<(), InstanceError> {
    if !topology
        .component_names()
        .any(|c| c == config.component_name)
    {
        return Err(InstanceError::UnknownComponent(config.component_name));
    }
    // Per-stream counts, kept by the gateway threads and written with the counters file.
    let _stream_metrics = stream_metrics::enter();
    let send_buffer = if topology.is_spout(&config.component_name) {
        options.out_queue_bytes = options.out_queue_bytes.min(SPOUT_BUFFER_BYTES);
        SPOUT_BUFFER_BYTES
    } else {
        heron_flow::SEND_BUFFER
    };
    let conn = gateway::connect_and_register(&config, &options, send_buffer)?;
    let gateway = gateway::Gateway::start(conn, &options)?;
    let result = executor::run(&config, topology, &options, &gateway);
    gateway.shutdown();
    result
}
