//! The `executor` role: one per container. It reads the packing plan, picks its daemons'
//! ports once, starts the container's processes (as the same binary, in the working
//! directory, logging to `log-files/<name>.log`) and restarts them with backoff when they
//! exit, until SIGTERM/SIGINT. Executors of containers >= 1 watch the packing plan: on a
//! change (`heron update`) they stop their processes and start the new plan's, or exit when
//! their container left the plan.

mod plan;
mod ports;
mod signals;
mod supervise;
mod supervisor;

pub use plan::{
    auth_secret_file, container_processes, is_effectively_once, ContainerPorts, ProcessSpec,
    FIXED_CKPTMGR, FIXED_CONTROLLER, FIXED_LOCAL_DATA, FIXED_SERVER, FIXED_SHELL, FIXED_STATS,
};
pub use ports::{free_ports, CLAIMS_PATH, CLAIM_TTL};
pub use supervise::{supervise, supervise_until};
pub use supervisor::{BackoffPolicy, ProcessState, Supervisor};

use crate::SchedulerError;
use heron_proto::api::Topology;
use heron_proto::system::PackingPlan;
use heron_proto::Message;
use heron_statemgr::{
    NodeEvent, NodeWatch, StateDir, StateManager, StateManagerExt, StateManagerSpec,
};
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
    /// The state manager (`local:/path` or `zk://host:port/root`).
    pub state_manager: StateManagerSpec,
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
    /// Listen on [`ContainerPorts::fixed`] instead of picking free ports (a container with
    /// a network of its own, such as a Kubernetes pod, whose ports are declared).
    pub fixed_ports: bool,
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
    let state = cfg.state_manager.open()?;
    let Some((topology, mut plan)) = read_plan(&cfg, &*state, stop)? else {
        tracing::info!("stopped before the packing plan was read");
        return Ok(());
    };
    let ports = if cfg.fixed_ports {
        ContainerPorts::fixed(cfg.shard, is_effectively_once(&topology))
    } else {
        ContainerPorts::pick(cfg.shard, is_effectively_once(&topology))?
    };
    let auth = auth_secret_file(&topology, &cfg.working_dir)?;
    // Containers >= 1 follow the packing plan (`heron update`); the tmaster's container does
    // not depend on it (the tmaster restarts itself on a change).
    let watch = if cfg.shard > 0 {
        match state.watch(StateDir::PackingPlans, &cfg.topology_name) {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!("cannot watch the packing plan ({e}); updates will not apply");
                None
            }
        }
    } else {
        None
    };
    loop {
        let specs = container_processes(&cfg, &plan, ports, auth.as_deref())?;
        tracing::info!("ports {ports:?}; {} processes", specs.len());
        for spec in &specs {
            tracing::debug!("{}: {}", spec.name, spec.args.join(" "));
        }
        let current = plan.encode_to_vec();
        let mut next = None;
        let reload = supervise_until(
            &cfg.binary,
            &cfg.working_dir,
            &specs,
            BackoffPolicy::default(),
            stop,
            &mut || {
                if let Some(w) = &watch {
                    next = next.take().or_else(|| changed_plan(w, &current));
                }
                next.is_some()
            },
        )?;
        let Some(new_plan) = next.filter(|_| reload) else {
            break;
        };
        plan = new_plan;
        if !plan.container_plans.iter().any(|c| c.id == cfg.shard) {
            tracing::info!(
                "container {} is not in the new packing plan; its processes are stopped and \
                 this executor exits",
                cfg.shard
            );
            let _ = std::fs::remove_file(crate::layout::pid_file(&cfg.working_dir, cfg.shard));
            return Ok(());
        }
        tracing::info!(
            "the packing plan changed; restarting container {} with it",
            cfg.shard
        );
    }
    tracing::info!("executor {} stopped", cfg.shard);
    Ok(())
}

/// The newest packing plan the watch reported, if it differs from `current` and parses.
fn changed_plan(watch: &NodeWatch, current: &[u8]) -> Option<PackingPlan> {
    let mut latest = None;
    while let Ok(event) = watch.try_recv() {
        match event {
            NodeEvent::Changed(Some(bytes)) => latest = Some(bytes),
            // Deleted: the topology is being killed; the kill stops us.
            NodeEvent::Changed(None) => latest = None,
            NodeEvent::SessionLost => {
                tracing::warn!("the state manager session ended; packing plan updates stop")
            }
        }
    }
    let bytes = latest.filter(|b| b != current)?;
    match PackingPlan::decode(&bytes[..]) {
        Ok(p) => Some(p),
        Err(e) => {
            tracing::warn!("ignoring an unreadable packing plan: {e}");
            None
        }
    }
}

/// Reads the topology and its packing plan, retrying for a while: `submit` writes them before
/// it starts the executors, but a slow disk or a restarted executor may race. `None` if
/// stopped meanwhile.
fn read_plan(
    cfg: &ExecutorConfig,
    state: &dyn StateManager,
    stop: &AtomicBool,
) -> Result<Option<(Topology, PackingPlan)>, SchedulerError> {
    let deadline = Instant::now() + PLAN_WAIT;
    loop {
        if stop.load(Ordering::SeqCst) {
            return Ok(None);
        }
        let topology = state.get_topology(&cfg.topology_name);
        let plan = state.get_packing_plan(&cfg.topology_name);
        let last_problem = match (topology, plan) {
            (Ok(Some(t)), Ok(Some(p))) if t.id == cfg.topology_id => return Ok(Some((t, p))),
            (Ok(Some(t)), Ok(Some(_))) => {
                return Err(SchedulerError::Executor(format!(
                    "the state at {} holds topology id {}, not {}: this executor belongs to \
                     an earlier submission",
                    cfg.state_manager, t.id, cfg.topology_id
                )))
            }
            (Err(e), _) | (_, Err(e)) => e.to_string(),
            _ => format!(
                "no topology or packing plan for {} at {}",
                cfg.topology_name, cfg.state_manager
            ),
        };
        if Instant::now() >= deadline {
            return Err(SchedulerError::Executor(last_problem));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
