//! `heron restart` for the local scheduler: restart the processes of one container, or of
//! every container.
//!
//! Each container is an executor (a session leader) and its children. Restarting a container
//! terminates the children (SIGTERM, SIGKILL after the grace period); the executor, which
//! stays, starts them again at once as it does after any exit. Container 0 holds the tmaster,
//! which re-creates its location node (waiting out its predecessor's ZooKeeper session if it
//! did not close it) and rebuilds the physical plan when the stream managers register again.

use crate::layout;
use crate::process::{group_members, signal_process};
use crate::submit::default_role;
use crate::{SchedulerError, LOCAL_CLUSTER};
use heron_statemgr::{StateManagerExt, StateManagerSpec};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What to restart.
#[derive(Clone, Debug)]
pub struct RestartRequest {
    /// Topology name.
    pub name: String,
    /// Cluster (names the working directory).
    pub cluster: String,
    /// Role used when the execution state does not say.
    pub role: String,
    /// The state manager holding the topology's nodes.
    pub state_manager: StateManagerSpec,
    /// Home directory of the working directories.
    pub home: PathBuf,
    /// One container, or `None` for every container (Heron's `-1`).
    pub container: Option<i32>,
    /// How long processes get after SIGTERM before SIGKILL.
    pub grace: Duration,
}

impl RestartRequest {
    /// Every container of `name` on the local cluster, defaults as [`crate::KillRequest::new`].
    pub fn new(name: impl Into<String>) -> RestartRequest {
        RestartRequest {
            name: name.into(),
            cluster: LOCAL_CLUSTER.to_string(),
            role: default_role(),
            state_manager: StateManagerSpec::default_local(),
            home: heron_statemgr::home_dir(),
            container: None,
            grace: Duration::from_secs(5),
        }
    }
}

/// Restarts the processes of the requested containers; returns the containers restarted
/// and how many processes were stopped.
pub fn restart(req: &RestartRequest) -> Result<Vec<(i32, usize)>, SchedulerError> {
    let name = &req.name;
    let not_found = || SchedulerError::not_found(name, &req.cluster);
    if heron_statemgr::validate_name(name).is_err() {
        return Err(not_found());
    }
    let state = req.state_manager.open()?;
    if state.get_execution_state(name)?.is_none() {
        return Err(not_found());
    }
    let working_dir =
        layout::topology_working_dir(&*state, &req.home, &req.cluster, &req.role, name);
    let executors = layout::read_pid_files(&working_dir)?;
    let chosen: Vec<(i32, i32)> = executors
        .into_iter()
        .filter(|(shard, _)| req.container.is_none_or(|c| c == *shard))
        .collect();
    if chosen.is_empty() {
        return Err(SchedulerError::Executor(match req.container {
            Some(c) => format!("topology {name} has no running container {c}"),
            None => format!("topology {name} has no running executors"),
        }));
    }
    let mut done = Vec::new();
    for (shard, pgid) in chosen {
        let children: Vec<i32> = group_members(pgid)
            .into_iter()
            .filter(|&p| p != pgid)
            .collect();
        tracing::info!("restarting container {shard} of {name}: stopping {children:?}");
        for &p in &children {
            let _ = signal_process(p, libc::SIGTERM);
        }
        let deadline = Instant::now() + req.grace;
        while Instant::now() < deadline && children.iter().any(|p| group_members(pgid).contains(p))
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        for &p in &children {
            if group_members(pgid).contains(&p) {
                let _ = signal_process(p, libc::SIGKILL);
            }
        }
        done.push((shard, children.len()));
    }
    Ok(done)
}
