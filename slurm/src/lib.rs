//! Heron's Slurm scheduler (`org.apache.heron.scheduler.slurm.SlurmScheduler`) for heron-rs.
//!
//! A topology is one batch job (`sbatch`) whose job steps are its containers: container 0
//! (the tmaster's) and one per stream manager, each the `executor` role of the topology
//! binary started by `srun` on a node of the allocation (see [`job`]). The working directory
//! (`~/.herondata/topologies/<cluster>/<role>/<topology>`, with the binary's path) must be
//! on a folder every node shares, as a home directory on a cluster is; the state manager is
//! normally ZooKeeper. Like Heron's, the scheduler is a library inside the `heron` CLI, not
//! a service.
//!
//! * submit ([`Slurm`] as the submit's [`Launcher`]): writes the job script, runs `sbatch`,
//!   records the job id in `schedulers/<topology>` (Heron's `SchedulerLocation`, link
//!   `slurm:<job id>`) and in `slurm-job.pid` in the working directory.
//! * [`kill`]: `scancel` of the job, a wait until Slurm reports it ended, then the state
//!   nodes, pid files and secret deleted.
//! * [`restart`]: `scancel` of the container's job step; the job script runs it again.
//! * [`update`]: the new packing plan is written; when it adds containers the job is
//!   submitted again with every container (Heron's update flow for a scheduler that cannot
//!   grow a running job), otherwise the running executors follow the plan themselves.
//!
//! Cluster keys (in the cluster's `scheduler.yaml`, say): `heron-rs.slurm.nodes` (nodes to
//! spread the containers over; one per container by default, as Heron's script asks),
//! `heron-rs.slurm.partition` and `heron-rs.slurm.time` (`sbatch --partition`/`--time`).

pub mod commands;
pub mod job;

use heron_proto::scheduler::SchedulerLocation;
use heron_proto::{api, Message};
use heron_scheduler::{
    executor_args, layout, KillReport, KillRequest, Launch, Launcher, RestartRequest,
    SchedulerError, SubmitRequest, UpdateReport, UpdateRequest,
};
use heron_statemgr::{StateDir, StateManager, StateManagerExt};
use job::{JobSpec, COMMAND_FILE, JOB_ID_FILE, SCRIPT_FILE};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// The key of the number of nodes.
pub const KEY_NODES: &str = "heron-rs.slurm.nodes";
/// The key of the partition.
pub const KEY_PARTITION: &str = "heron-rs.slurm.partition";
/// The key of the time limit.
pub const KEY_TIME: &str = "heron-rs.slurm.time";
/// The prefix of the job link in `schedulers/<topology>`.
pub const LINK_PREFIX: &str = "slurm:";

/// How long kill waits for Slurm to end the job, and restart for the new step.
const WAIT: Duration = Duration::from_secs(60);

/// A cluster's Slurm settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Slurm {
    /// Nodes to spread the containers over (`None`: one per container).
    pub nodes: Option<usize>,
    /// `--partition`.
    pub partition: Option<String>,
    /// `--time`.
    pub time: Option<String>,
}

impl Slurm {
    /// The settings in a cluster's keys.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// let keys = BTreeMap::from([("heron-rs.slurm.nodes".to_string(), "2".to_string())]);
    /// assert_eq!(heron_slurm::Slurm::from_config(&keys).unwrap().nodes, Some(2));
    /// let bad = BTreeMap::from([("heron-rs.slurm.nodes".to_string(), "two".to_string())]);
    /// assert!(heron_slurm::Slurm::from_config(&bad).unwrap_err().to_string().contains("heron-rs.slurm.nodes"));
    /// ```
    pub fn from_config(values: &BTreeMap<String, String>) -> Result<Slurm, SchedulerError> {
        let nodes = match values.get(KEY_NODES) {
            None => None,
            Some(v) => Some(
                v.trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| SchedulerError::Cluster {
                        scheduler: "slurm",
                        reason: format!("{KEY_NODES}={v}: expected a positive number of nodes"),
                    })?,
            ),
        };
        let text = |key: &str| {
            values
                .get(key)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        Ok(Slurm {
            nodes,
            partition: text(KEY_PARTITION),
            time: text(KEY_TIME),
        })
    }

    fn spec<'a>(
        &'a self,
        name: &'a str,
        working_dir: &'a Path,
        containers: Vec<(i32, Vec<String>)>,
        verbose: bool,
    ) -> JobSpec<'a> {
        let n = containers.len();
        JobSpec {
            name,
            working_dir,
            containers,
            nodes: self.nodes.unwrap_or(n),
            partition: self.partition.as_deref(),
            time: self.time.as_deref(),
            verbose,
        }
    }

    /// Writes the job's files and submits it: the job id.
    fn submit_job(&self, spec: &JobSpec<'_>) -> Result<String, SchedulerError> {
        let wd = spec.working_dir;
        let script = wd.join(SCRIPT_FILE);
        write(&script, spec.script().as_bytes())?;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
            .map_err(SchedulerError::io(format!("chmod {}", script.display())))?;
        if let Some((_, command)) = spec.containers.first() {
            write(&wd.join(COMMAND_FILE), &job::encode_command(command))?;
        }
        let id = commands::sbatch(&spec.sbatch_args(), wd)?;
        write(&wd.join(JOB_ID_FILE), format!("{id}\n").as_bytes())?;
        tracing::info!(
            "submitted Slurm job {id} for {}: {} containers on {} nodes",
            spec.name,
            spec.containers.len(),
            spec.node_count()
        );
        Ok(id)
    }
}

impl Launcher for Slurm {
    fn launch(
        &self,
        req: &SubmitRequest,
        topology: &api::Topology,
        _plan: &heron_proto::system::PackingPlan,
        shards: &[i32],
        working_dir: &Path,
    ) -> Result<Launch, SchedulerError> {
        let binary = req.binary.display().to_string();
        let containers = shards
            .iter()
            .map(|&shard| {
                let mut command = vec![binary.clone()];
                command.extend(executor_args(req, topology, shard));
                (shard, command)
            })
            .collect();
        let spec = self.spec(&topology.name, working_dir, containers, req.verbose);
        let id = self.submit_job(&spec)?;
        Ok(Launch {
            executors: Vec::new(),
            location: Some(location(&topology.name, &id)),
            description: format!(
                "Slurm job {id} ({} containers as job steps on {} nodes)",
                shards.len(),
                spec.node_count()
            ),
        })
    }
}

/// The `schedulers/<topology>` node of a job.
pub fn location(name: &str, job: &str) -> SchedulerLocation {
    SchedulerLocation {
        topology_name: name.to_string(),
        http_endpoint: String::new(),
        job_page_link: vec![format!("{LINK_PREFIX}{job}")],
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), SchedulerError> {
    std::fs::write(path, bytes).map_err(SchedulerError::io(format!("writing {}", path.display())))
}

/// The topology's job id: from `schedulers/<name>`, else from the working directory.
fn job_id(state: &dyn StateManager, name: &str, working_dir: &Path) -> Option<String> {
    let from_state = state
        .get(StateDir::Schedulers, name)
        .ok()
        .flatten()
        .and_then(|b| SchedulerLocation::decode(&b[..]).ok())
        .and_then(|l| {
            l.job_page_link
                .iter()
                .find_map(|link| link.strip_prefix(LINK_PREFIX).map(str::to_string))
        });
    from_state.or_else(|| {
        std::fs::read_to_string(working_dir.join(JOB_ID_FILE))
            .ok()
            .and_then(|s| commands::parse_job_id(&s))
    })
}

/// Waits until Slurm reports `job` ended (or forgot it).
fn wait_job_ended(job: &str, timeout: Duration) -> Result<(), SchedulerError> {
    let deadline = Instant::now() + timeout;
    loop {
        let state = commands::job_state(job)?;
        match state.as_deref() {
            None => return Ok(()),
            Some(s) if !commands::is_live(s) => return Ok(()),
            Some(s) if Instant::now() >= deadline => {
                return Err(SchedulerError::Cluster {
                    scheduler: "slurm",
                    reason: format!(
                        "job {job} is still {s} {}s after scancel; the state is kept so kill \
                         can be run again",
                        timeout.as_secs()
                    ),
                })
            }
            Some(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// `heron kill` on Slurm: cancels the job, waits for it to end, deletes the state.
pub fn kill(req: &KillRequest) -> Result<KillReport, SchedulerError> {
    let name = &req.name;
    let not_found = || SchedulerError::not_found(name, &req.cluster);
    if heron_statemgr::validate_name(name).is_err() {
        return Err(not_found());
    }
    let state = req.state_manager.open()?;
    let wd = layout::topology_working_dir(&*state, &req.home, &req.cluster, &req.role, name);
    let job = job_id(&*state, name, &wd);
    let mut has_state = false;
    for dir in StateDir::ALL {
        has_state |= state.get(dir, name)?.is_some();
    }
    if !has_state && job.is_none() {
        return Err(not_found());
    }
    if let Some(job) = &job {
        tracing::info!("killing topology {name}: scancel {job}");
        if commands::job_state(job)?.is_some_and(|s| commands::is_live(&s)) {
            commands::scancel(job)?;
        }
        wait_job_ended(job, req.grace + WAIT)?;
    }
    heron_scheduler::clean_up(&*state, name, &wd)?;
    for file in [JOB_ID_FILE, COMMAND_FILE] {
        let _ = std::fs::remove_file(wd.join(file));
    }
    Ok(KillReport {
        name: name.clone(),
        working_dir: wd,
        executors: Vec::new(),
    })
}

/// One container restarted: its old and new job step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Restarted {
    /// The container.
    pub shard: i32,
    /// The step cancelled.
    pub old_step: String,
    /// The step that replaced it.
    pub new_step: String,
    /// The nodes the new step runs on.
    pub nodes: String,
}

/// `heron restart` on Slurm: cancels the job step of the container (every container when
/// `req.container` is `None`) and waits for the job script to run it again.
pub fn restart(req: &RestartRequest) -> Result<Vec<Restarted>, SchedulerError> {
    let name = &req.name;
    let state = req.state_manager.open()?;
    if heron_statemgr::validate_name(name).is_err() || state.get_topology(name)?.is_none() {
        return Err(SchedulerError::not_found(name, &req.cluster));
    }
    let wd = layout::topology_working_dir(&*state, &req.home, &req.cluster, &req.role, name);
    let job = job_id(&*state, name, &wd).ok_or_else(|| {
        SchedulerError::Executor(format!("topology {name} has no Slurm job on record"))
    })?;
    let chosen: Vec<(i32, commands::Step)> = commands::steps(&job)?
        .into_iter()
        .filter_map(|s| job::shard_of(&s.name).map(|shard| (shard, s)))
        .filter(|(shard, _)| req.container.is_none_or(|c| c == *shard))
        .collect();
    if chosen.is_empty() {
        return Err(SchedulerError::Executor(match req.container {
            Some(c) => format!("topology {name} has no running container {c} in Slurm job {job}"),
            None => format!("topology {name} has no running containers in Slurm job {job}"),
        }));
    }
    for (shard, step) in &chosen {
        tracing::info!(
            "restarting container {shard} of {name}: scancel {}",
            step.id
        );
        commands::scancel(&step.id)?;
    }
    let deadline = Instant::now() + WAIT;
    let mut done = Vec::new();
    for (shard, old) in chosen {
        loop {
            let new = commands::steps(&job)?
                .into_iter()
                .find(|s| s.name == job::step_name(shard) && s.id != old.id);
            if let Some(new) = new {
                done.push(Restarted {
                    shard,
                    old_step: old.id,
                    new_step: new.id,
                    nodes: new.nodes,
                });
                break;
            }
            if Instant::now() >= deadline {
                return Err(SchedulerError::Cluster {
                    scheduler: "slurm",
                    reason: format!(
                        "container {shard} of {name} did not come back within {}s after \
                         scancel {} (see log-files/slurm-job-{job}.log)",
                        WAIT.as_secs(),
                        old.id
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    Ok(done)
}

/// `heron update` on Slurm: see the crate docs.
pub fn update(req: &UpdateRequest, slurm: &Slurm) -> Result<UpdateReport, SchedulerError> {
    let name = req.name.clone();
    heron_scheduler::update_with(req, &mut |wd, _, old, new| {
        let old_ids: Vec<i32> = old.container_plans.iter().map(|c| c.id).collect();
        if new.container_plans.iter().all(|c| old_ids.contains(&c.id)) {
            return Ok(Vec::new());
        }
        let state = req.state_manager.open()?;
        let command = std::fs::read(wd.join(COMMAND_FILE))
            .ok()
            .and_then(|b| job::decode_command(&b))
            .ok_or_else(|| {
                SchedulerError::Executor(format!(
                    "{} holds no executor command to submit {name} again with",
                    wd.join(COMMAND_FILE).display()
                ))
            })?;
        if let Some(job) = job_id(&*state, &name, wd) {
            tracing::info!(
                "update of {name} adds containers: cancelling job {job} to submit it again"
            );
            commands::scancel(&job)?;
            wait_job_ended(&job, WAIT)?;
        }
        let mut shards = vec![0];
        shards.extend(new.container_plans.iter().map(|c| c.id));
        let containers = shards
            .iter()
            .map(|&s| (s, job::for_shard(&command, s)))
            .collect();
        let verbose =
            std::fs::read_to_string(wd.join(SCRIPT_FILE)).is_ok_and(|s| s.contains("RUST_LOG"));
        let spec = slurm.spec(&name, wd, containers, verbose);
        let id = slurm.submit_job(&spec)?;
        state.set(
            StateDir::Schedulers,
            &name,
            &location(&name, &id).encode_to_vec(),
        )?;
        Ok(Vec::new())
    })
}
