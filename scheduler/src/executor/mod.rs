//! The `executor` role: one per container. It reads the packing plan, picks its daemons'
//! ports once, starts the container's processes (as the same binary, in the working
//! directory, logging to `log-files/<name>.log`) and restarts them with backoff when they
//! exit, until SIGTERM/SIGINT.

mod plan;
mod signals;
mod supervise;
mod supervisor;

pub use plan::{container_processes, free_ports, ContainerPorts, ProcessSpec};
pub use supervise::supervise;
pub use supervisor::{BackoffPolicy, ProcessState, Supervisor};

use crate::SchedulerError;
use heron_proto::system::PackingPlan;
use heron_statemgr::{LocalFsStateManager, StateManagerExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long the executor waits for its topology's state to appear.
const PLAN_WAIT: Duration = Duration::from_secs(10);

/// What the `executor` role was started with.
#[derive(Clone, Debug)]
pub struct ExecutorConfig {
    /// Container id: 0 runs the tmaster, N >= 1 runs `stmgr-N` and container N's instances.
    pub shard: i32,
    /// Topology name.
    pub topology_name: String,
    /// Topology id.
    pub topology_id: String,
    /// Root of the local file-system state manager.
    pub state_root: PathBuf,
    /// Cluster.
    pub cluster: String,
    /// Role.
    pub role: String,
    /// Environ.
    pub environ: String,
    /// The topology's user arguments (passed on after `--`).
    pub user_args: Vec<String>,
    /// The binary the processes run (the executor's own: `std::env::current_exe()`).
    pub binary: PathBuf,
    /// Working directory of the processes (the executor's own).
    pub working_dir: PathBuf,
    /// Host the daemons advertise and bind (`127.0.0.1`).
    pub host: String,
}

/// Runs the executor until SIGTERM/SIGINT; then stops the container's processes and returns.
pub fn run(cfg: ExecutorConfig) -> Result<(), SchedulerError> {
    let stop = signals::termination_flag();
    tracing::info!(
        "executor {} of topology {} ({}) starting in {}",
        cfg.shard,
        cfg.topology_name,
        cfg.topology_id,
        cfg.working_dir.display()
    );
    let Some(plan) = read_plan(&cfg, stop)? else {
        tracing::info!("stopped before the packing plan was read");
        return Ok(());
    };
    let ports = ContainerPorts::pick(cfg.shard)?;
    let specs = container_processes(&cfg, &plan, ports)?;
    tracing::info!("ports {ports:?}; {} processes", specs.len());
    for spec in &specs {
        tracing::debug!("{}: {}", spec.name, spec.args.join(" "));
    }
    supervise(
        &cfg.binary,
        &cfg.working_dir,
        &specs,
        BackoffPolicy::default(),
        stop,
    )?;
    tracing::info!("executor {} stopped", cfg.shard);
    Ok(())
}

/// Reads the packing plan, retrying for a while: `submit` writes it before it starts the
/// executors, but a slow disk or a restarted executor may race. `None` if stopped meanwhile.
fn read_plan(
    cfg: &ExecutorConfig,
    stop: &AtomicBool,
) -> Result<Option<PackingPlan>, SchedulerError> {
    let state = LocalFsStateManager::new(&cfg.state_root);
    let deadline = Instant::now() + PLAN_WAIT;
    loop {
        if stop.load(Ordering::SeqCst) {
            return Ok(None);
        }
        let topology = state.get_topology(&cfg.topology_name);
        let plan = state.get_packing_plan(&cfg.topology_name);
        let last_problem = match (topology, plan) {
            (Ok(Some(t)), Ok(Some(p))) if t.id == cfg.topology_id => return Ok(Some(p)),
            (Ok(Some(t)), Ok(Some(_))) => {
                return Err(SchedulerError::Executor(format!(
                    "the state at {} holds topology id {}, not {}: this executor belongs to \
                     an earlier submission",
                    cfg.state_root.display(),
                    t.id,
                    cfg.topology_id
                )))
            }
            (Err(e), _) | (_, Err(e)) => e.to_string(),
            _ => format!(
                "no topology or packing plan for {} at {}",
                cfg.topology_name,
                cfg.state_root.display()
            ),
        };
        if Instant::now() >= deadline {
            return Err(SchedulerError::Executor(last_problem));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
