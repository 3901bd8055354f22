//! `heron submit` for the local cluster, one function per step so a CLI can report progress:
//! check the binary, define, refuse duplicates, assign an id, pack, write state, prepare the
//! working directory, launch one detached executor per container.

use crate::layout;
use crate::process::{spawn_session_leader, stop_groups};
use crate::{define_topology, SchedulerError, DEFAULT_ENVIRON, LOCAL_CLUSTER, VERSION};
use heron_proto::scheduler::SchedulerLocation;
use heron_proto::{api, system, Message};
use heron_statemgr::{StateDir, StateError, StateManager, StateManagerSpec};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What to submit, and where.
#[derive(Clone, Debug)]
pub struct SubmitRequest {
    /// The topology binary (any path; made absolute).
    pub binary: PathBuf,
    /// Arguments for the topology (what follows `--` in every role).
    pub user_args: Vec<String>,
    /// Cluster (`local`, `localzk`, or one defined under `~/.heron/conf/`); the scheduler is
    /// always this local one, the cluster picks the state manager and the directories.
    pub cluster: String,
    /// Role (the submitting user by default).
    pub role: String,
    /// Environ (`default`).
    pub environ: String,
    /// The state manager (`local:/path` or `zk://host:port/root`).
    pub state_manager: StateManagerSpec,
    /// Home directory under which `.herondata/topologies/...` working directories go.
    pub home: PathBuf,
    /// Run the topology's processes with `RUST_LOG=debug` (unless `RUST_LOG` is set).
    pub verbose: bool,
    /// A folder copied into the working directory as `resources/` (Storm's `resources/`:
    /// where shell components' scripts live and run); none by default.
    pub resources: Option<PathBuf>,
    /// The address the topology's daemons bind and advertise to each other (the stream
    /// managers' data port, the tmaster's ports); `127.0.0.1` by default, so nothing
    /// listens beyond this machine unless asked (`heron-rs.host` in the cluster config).
    /// Instance servers and checkpoint managers always stay on loopback.
    pub host: String,
    /// Topology config from the cluster's config, for keys the topology's own config does
    /// not set (`heron-rs.local.cpu.pinning`, [`crate::pinning`]); written into the submitted
    /// topology's config.
    pub topology_defaults: Vec<(String, String)>,
}

impl SubmitRequest {
    /// A request with the defaults: cluster `local`, role [`default_role`], environ
    /// `default`, state root `~/.herondata/repository/state/local`, home `$HOME`.
    pub fn new(binary: impl Into<PathBuf>, user_args: Vec<String>) -> SubmitRequest {
        SubmitRequest {
            binary: binary.into(),
            user_args,
            cluster: LOCAL_CLUSTER.to_string(),
            role: default_role(),
            environ: DEFAULT_ENVIRON.to_string(),
            state_manager: StateManagerSpec::default_local(),
            home: heron_statemgr::home_dir(),
            verbose: false,
            resources: None,
            host: "127.0.0.1".to_string(),
            topology_defaults: Vec::new(),
        }
    }
}

/// `$USER` when it is a usable name, else `heron`.
pub fn default_role() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| heron_statemgr::validate_name(u).is_ok())
        .unwrap_or_else(|| "heron".to_string())
}

/// One running executor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExecutorProcess {
    /// Container id (0 = tmaster container).
    pub shard: i32,
    /// Its pid, which is also its process group id.
    pub pid: i32,
}

/// A topology that was submitted.
#[derive(Clone, Debug)]
pub struct Submitted {
    /// Topology name.
    pub name: String,
    /// Topology id (`<name>-<uuid>`).
    pub id: String,
    /// Cluster.
    pub cluster: String,
    /// Role.
    pub role: String,
    /// Environ.
    pub environ: String,
    /// The state manager the topology's nodes are in.
    pub state_manager: StateManagerSpec,
    /// Working directory of every process.
    pub working_dir: PathBuf,
    /// Containers in the packing plan (not counting the tmaster's).
    pub containers: usize,
    /// Instances in the packing plan.
    pub instances: usize,
    /// The executors this process started, shard 0 first (none when a cluster scheduler
    /// started them).
    pub executors: Vec<ExecutorProcess>,
    /// The shards launched, 0 (the tmaster's container) first.
    pub shards: Vec<i32>,
    /// The scheduler location written to `schedulers/<name>`, if the launcher gave one.
    pub location: Option<SchedulerLocation>,
}

impl Submitted {
    /// `<working dir>/log-files`.
    pub fn log_dir(&self) -> PathBuf {
        layout::log_dir(&self.working_dir)
    }
}

/// Progress reported by [`submit_with_progress`].
#[derive(Debug)]
pub enum SubmitEvent<'a> {
    /// About to run the binary's `define` role.
    Defining {
        /// The binary.
        binary: &'a Path,
    },
    /// The topology is defined and has its id.
    Defined {
        /// Topology name.
        name: &'a str,
        /// Topology id.
        id: &'a str,
    },
    /// The packing plan is made.
    Packed {
        /// Containers (stream managers).
        containers: usize,
        /// Instances.
        instances: usize,
    },
    /// `topologies`, `packingplans` and `executionstate` are written.
    StateWritten {
        /// The state manager's description.
        state: &'a str,
    },
    /// The executors are running.
    Launched {
        /// Working directory.
        working_dir: &'a Path,
        /// Executors started by this process (none when a cluster scheduler starts them).
        executors: &'a [ExecutorProcess],
        /// What was launched, in a few words ("3 executors", "Slurm job 12").
        description: &'a str,
    },
}

/// What a [`Launcher`] started.
#[derive(Clone, Debug, Default)]
pub struct Launch {
    /// Executors this process started and can watch (the local scheduler's).
    pub executors: Vec<ExecutorProcess>,
    /// Where the scheduler that runs the containers can be found (`schedulers/<topology>`),
    /// when there is one (a Slurm job, say).
    pub location: Option<SchedulerLocation>,
    /// What was launched, in a few words.
    pub description: String,
}

/// The last step of a submit: starting the containers (shard 0 = the tmaster's) of a
/// topology whose state is written and whose working directory is ready. The local
/// scheduler starts detached executors ([`LocalLauncher`]); a cluster scheduler submits a job.
pub trait Launcher {
    /// Starts `shards` of `topology` (packed as `plan`); on failure nothing may be left
    /// running.
    fn launch(
        &self,
        req: &SubmitRequest,
        topology: &api::Topology,
        plan: &system::PackingPlan,
        shards: &[i32],
        working_dir: &Path,
    ) -> Result<Launch, SchedulerError>;

    /// `true` if this launcher places the processes itself, on this machine, and so can pin
    /// containers to CPUs ([`crate::pinning`]); others refuse a topology that asks for it.
    fn pins_cpus(&self) -> bool {
        false
    }
}

/// The local scheduler: one detached executor per container on this machine
/// ([`launch_executors`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct LocalLauncher;

impl Launcher for LocalLauncher {
    fn launch(
        &self,
        req: &SubmitRequest,
        topology: &api::Topology,
        _plan: &system::PackingPlan,
        shards: &[i32],
        working_dir: &Path,
    ) -> Result<Launch, SchedulerError> {
        let executors = launch_executors(req, topology, shards, working_dir)?;
        let description = match executors.len() {
            1 => "1 executor".to_string(),
            n => format!("{n} executors"),
        };
        Ok(Launch {
            executors,
            location: None,
            description,
        })
    }

    fn pins_cpus(&self) -> bool {
        true
    }
}

/// Submits a topology with no progress reporting. See [`submit_with_progress`].
pub fn submit(req: &SubmitRequest) -> Result<Submitted, SchedulerError> {
    submit_with_progress(req, |_| {})
}

/// Submits a topology to the local scheduler: every step in order, calling `progress` after
/// each. On failure, state written so far is removed and started executors are stopped.
pub fn submit_with_progress(
    req: &SubmitRequest,
    progress: impl FnMut(SubmitEvent<'_>),
) -> Result<Submitted, SchedulerError> {
    submit_with(req, &LocalLauncher, progress)
}

/// [`submit_with_progress`] with the containers started by `launcher`; its scheduler
/// location, if any, is written to `schedulers/<name>` (Heron's `SchedulerLocation`).
pub fn submit_with(
    req: &SubmitRequest,
    launcher: &dyn Launcher,
    mut progress: impl FnMut(SubmitEvent<'_>),
) -> Result<Submitted, SchedulerError> {
    check_request(req)?;
    let binary = check_binary(&req.binary)?;
    // the state manager first: an unreachable one is the first thing to hear about
    let state_manager = absolute_spec(&req.state_manager)?;
    let state = state_manager.open()?;
    let state = &*state;
    progress(SubmitEvent::Defining { binary: &binary });
    let mut topology = define_topology(&binary, &req.user_args)?;
    for (key, value) in &req.topology_defaults {
        if heron_proto::config_value(&topology, key).is_none() {
            let config = topology
                .topology_config
                .get_or_insert_with(Default::default);
            crate::update::set_kv(config, key, value);
        }
    }
    crate::modes::check_supported(&topology)?;
    ensure_not_running(state, &req.cluster, &topology.name)?;
    topology.id = new_topology_id(&topology.name);
    progress(SubmitEvent::Defined {
        name: &topology.name,
        id: &topology.id,
    });
    let pinning =
        crate::pinning::CpuPinning::from_config(|k| heron_proto::config_value(&topology, k));
    if pinning.is_ok_and(|p| p != crate::pinning::CpuPinning::None) && !launcher.pins_cpus() {
        return Err(SchedulerError::Unsupported {
            name: topology.name.clone(),
            reason: format!(
                "{} is for the local scheduler; this one binds CPUs with its own settings",
                crate::pinning::KEY
            ),
        });
    }
    let plan = pack(&topology)?;
    let containers = plan.container_plans.len();
    let instances = plan
        .container_plans
        .iter()
        .map(|c| c.instance_plans.len())
        .sum();
    progress(SubmitEvent::Packed {
        containers,
        instances,
    });
    let exec = execution_state(&topology, req, SystemTime::now());
    write_state(state, &topology, &plan, &exec)?;
    let described = state.describe();
    progress(SubmitEvent::StateWritten { state: &described });
    let mut shards = vec![0];
    shards.extend(plan.container_plans.iter().map(|c| c.id));
    let launched = prepare_working_dir(req, &topology.name).and_then(|wd| {
        write_secret(&topology, &wd)?;
        let req = SubmitRequest {
            binary: binary.clone(),
            state_manager: state_manager.clone(),
            ..req.clone()
        };
        launcher
            .launch(&req, &topology, &plan, &shards, &wd)
            .map(|launch| (wd, launch))
    });
    let (working_dir, launch) = match launched {
        Ok(v) => v,
        Err(e) => {
            rollback(
                state,
                &topology.name,
                &[
                    StateDir::Topologies,
                    StateDir::PackingPlans,
                    StateDir::ExecutionState,
                ],
            );
            return Err(e);
        }
    };
    if let Some(location) = &launch.location {
        // the job runs: a failed write costs only the tracker's view (kill finds the job in
        // the working directory too)
        if let Err(e) = state.set(
            StateDir::Schedulers,
            &topology.name,
            &location.encode_to_vec(),
        ) {
            tracing::warn!("writing schedulers/{}: {e}", topology.name);
        }
    }
    progress(SubmitEvent::Launched {
        working_dir: &working_dir,
        executors: &launch.executors,
        description: &launch.description,
    });
    Ok(Submitted {
        name: topology.name,
        id: topology.id,
        cluster: req.cluster.clone(),
        role: req.role.clone(),
        environ: req.environ.clone(),
        state_manager,
        working_dir,
        containers,
        instances,
        executors: launch.executors,
        shards,
        location: launch.location,
    })
}

fn check_request(req: &SubmitRequest) -> Result<(), SchedulerError> {
    for (what, value) in [
        ("cluster", &req.cluster),
        ("role", &req.role),
        ("environ", &req.environ),
    ] {
        if heron_statemgr::validate_name(value).is_err() {
            return Err(SchedulerError::InvalidName {
                what,
                value: value.clone(),
            });
        }
    }
    Ok(())
}

/// A local spec with its path made absolute (the executors run elsewhere).
fn absolute_spec(spec: &StateManagerSpec) -> Result<StateManagerSpec, SchedulerError> {
    Ok(match spec {
        StateManagerSpec::Local(root) => StateManagerSpec::Local(absolute(root)?),
        other => other.clone(),
    })
}

fn absolute(path: &Path) -> Result<PathBuf, SchedulerError> {
    std::path::absolute(path).map_err(SchedulerError::io(format!("resolving {}", path.display())))
}

/// Checks that the binary exists and is an executable file; returns its absolute path.
pub fn check_binary(path: &Path) -> Result<PathBuf, SchedulerError> {
    let bad = |reason: &str| SchedulerError::Binary {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    };
    if path.as_os_str().is_empty() {
        return Err(bad("no path given"));
    }
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(bad("does not exist")),
        Err(e) => return Err(bad(&format!("cannot be read: {e}"))),
    };
    if meta.is_dir() {
        return Err(bad("is a directory, not a topology binary"));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(bad(
            "is not executable (chmod +x it, or build it with cargo)",
        ));
    }
    std::fs::canonicalize(path).map_err(|e| bad(&format!("cannot be resolved: {e}")))
}

/// Refuses a topology whose `topologies/<name>` node exists.
pub fn ensure_not_running(
    state: &dyn StateManager,
    cluster: &str,
    name: &str,
) -> Result<(), SchedulerError> {
    if state.get(StateDir::Topologies, name)?.is_some() {
        return Err(SchedulerError::AlreadyRunning {
            name: name.to_string(),
            cluster: cluster.to_string(),
            state: state.describe(),
        });
    }
    Ok(())
}

/// `<name>-<uuid v4>`.
pub fn new_topology_id(name: &str) -> String {
    format!("{name}-{}", uuid::Uuid::new_v4())
}

/// Round-robin packing; the plan's id is the topology id.
pub fn pack(topology: &api::Topology) -> Result<system::PackingPlan, SchedulerError> {
    heron_packer::round_robin(topology, &topology.id).map_err(|e| SchedulerError::Packing {
        name: topology.name.clone(),
        reason: e.to_string(),
    })
}

/// The `executionstate` node of a submission.
pub fn execution_state(
    topology: &api::Topology,
    req: &SubmitRequest,
    now: SystemTime,
) -> system::ExecutionState {
    let submitted = now.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    let user = std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| req.role.clone());
    system::ExecutionState {
        topology_name: topology.name.clone(),
        topology_id: topology.id.clone(),
        submission_time: Some(submitted.as_secs() as i64),
        submission_user: Some(user.clone()),
        cluster: req.cluster.clone(),
        environ: req.environ.clone(),
        role: req.role.clone(),
        release_state: Some(system::HeronReleaseState {
            release_username: Some(user),
            release_tag: None,
            release_version: Some(VERSION.to_string()),
        }),
    }
}

/// Writes `topologies`, `packingplans` and `executionstate`, in that order. `topologies` is
/// created (so a concurrent submit of the same name loses); on any failure the nodes this
/// call wrote are deleted again.
pub fn write_state(
    state: &dyn StateManager,
    topology: &api::Topology,
    plan: &system::PackingPlan,
    exec: &system::ExecutionState,
) -> Result<(), SchedulerError> {
    let name = &topology.name;
    match state.create(StateDir::Topologies, name, &topology.encode_to_vec(), false) {
        Ok(()) => {}
        Err(StateError::AlreadyExists { .. }) => {
            return Err(SchedulerError::AlreadyRunning {
                name: name.clone(),
                cluster: exec.cluster.clone(),
                state: state.describe(),
            })
        }
        Err(e) => return Err(e.into()),
    }
    let rest: [(StateDir, Vec<u8>); 2] = [
        (StateDir::PackingPlans, plan.encode_to_vec()),
        (StateDir::ExecutionState, exec.encode_to_vec()),
    ];
    let mut written = vec![StateDir::Topologies];
    for (dir, bytes) in rest {
        if let Err(e) = state.set(dir, name, &bytes) {
            written.push(dir); // a failed write may have left a node behind
            rollback(state, name, &written);
            return Err(e.into());
        }
        written.push(dir);
    }
    Ok(())
}

fn rollback(state: &dyn StateManager, name: &str, dirs: &[StateDir]) {
    for dir in dirs.iter().rev() {
        if let Err(e) = state.delete(*dir, name) {
            tracing::warn!("rolling back {}/{name}: {e}", dir.name());
        }
    }
}

/// Makes the topology's secret (`<working dir>/auth/secret`, mode 0600) when its config
/// wants authentication, and its TLS identity next to it when it wants TLS; what a previous
/// run left there is removed first.
pub fn write_secret(topology: &api::Topology, working_dir: &Path) -> Result<(), SchedulerError> {
    let path = layout::secret_file(working_dir);
    let dir = path.parent().unwrap_or(working_dir);
    if dir.exists() {
        std::fs::remove_dir_all(dir)
            .map_err(SchedulerError::io(format!("removing {}", dir.display())))?;
    }
    if crate::auth_required(topology)? {
        heron_auth::Secret::create(&path)?;
        if crate::tls_enabled(topology)? {
            heron_auth::Tls::create(dir)?;
        }
    }
    Ok(())
}

/// Creates the working directory with its `log-files` and `metrics` directories and copies
/// the request's resources folder into it as `resources/`; returns its path. The binary runs
/// in place.
pub fn prepare_working_dir(req: &SubmitRequest, name: &str) -> Result<PathBuf, SchedulerError> {
    let home = absolute(&req.home)?;
    let wd = layout::working_dir(&home, &req.cluster, &req.role, name);
    for dir in [layout::log_dir(&wd), layout::metrics_dir(&wd)] {
        std::fs::create_dir_all(&dir)
            .map_err(SchedulerError::io(format!("creating {}", dir.display())))?;
    }
    if let Some(resources) = &req.resources {
        crate::resources::install(&absolute(resources)?, &wd)?;
    }
    Ok(wd)
}

/// Starts one detached executor per shard (each a session leader, stdout/stderr to
/// `log-files/executor-N.log`, cwd the working dir) and writes its pid file. If one cannot
/// be started, the ones already started are stopped and their pid files removed.
pub fn launch_executors(
    req: &SubmitRequest,
    topology: &api::Topology,
    shards: &[i32],
    working_dir: &Path,
) -> Result<Vec<ExecutorProcess>, SchedulerError> {
    let place = crate::pinning::Placement::for_topology(topology)?;
    let mut started: Vec<ExecutorProcess> = Vec::new();
    for &shard in shards {
        match launch_executor(req, topology, shard, place.cpu_for(shard), working_dir) {
            Ok(pid) => started.push(ExecutorProcess { shard, pid }),
            Err(e) => {
                let groups: Vec<i32> = started.iter().map(|e| e.pid).collect();
                stop_groups(&groups, Duration::from_secs(2));
                let _ = layout::remove_pid_files(working_dir);
                return Err(e);
            }
        }
    }
    Ok(started)
}

/// The arguments of container `shard`'s executor (after the binary): `heron-role executor
/// --shard N ...  -- <user args>`, what every scheduler runs in the container.
pub fn executor_args(req: &SubmitRequest, topology: &api::Topology, shard: i32) -> Vec<String> {
    let mut args: Vec<String> = [
        "heron-role",
        "executor",
        "--shard",
        &shard.to_string(),
        "--topology-name",
        &topology.name,
        "--topology-id",
        &topology.id,
        "--state-manager",
        &req.state_manager.to_string(),
        "--cluster",
        &req.cluster,
        "--role",
        &req.role,
        "--environ",
        &req.environ,
        "--host",
        &req.host,
        "--",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(req.user_args.iter().cloned());
    args
}

fn launch_executor(
    req: &SubmitRequest,
    topology: &api::Topology,
    shard: i32,
    cpu: Option<usize>,
    working_dir: &Path,
) -> Result<i32, SchedulerError> {
    let name = format!("executor-{shard}");
    let log_path = layout::log_file(working_dir, &name);
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(SchedulerError::io(format!(
            "opening {}",
            log_path.display()
        )))?;
    let log2 = log.try_clone().map_err(SchedulerError::io(format!(
        "opening {}",
        log_path.display()
    )))?;
    let mut cmd = Command::new(&req.binary);
    cmd.args(executor_args(req, topology, shard))
        .current_dir(working_dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2);
    if req.verbose && std::env::var_os("RUST_LOG").is_none() {
        cmd.env("RUST_LOG", "debug");
    }
    if let Some(cpu) = cpu {
        crate::pinning::pin(&mut cmd, cpu);
    }
    let child = spawn_session_leader(&mut cmd).map_err(SchedulerError::io(format!(
        "starting {name} ({})",
        req.binary.display()
    )))?;
    let pid = child.id() as i32;
    // The child is not waited for here: it outlives this call (kill reaps it if it is ours).
    drop(child);
    if let Err(e) = layout::write_pid_file(working_dir, shard, pid) {
        stop_groups(&[pid], Duration::from_secs(2));
        return Err(e);
    }
    Ok(pid)
}

#[cfg(test)]
mod tests;
