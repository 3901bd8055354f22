//! `heron kill` for the local cluster: stop every executor's process group, then delete the
//! topology's state and pid files.
//!
//! Each executor is a session leader, so its process group holds the executor and every
//! process it started (they also die by `PR_SET_PDEATHSIG` when it dies). Signalling the
//! group reaches them even when the executor itself was SIGKILLed earlier.

use crate::layout;
use crate::process::{cmdline, group_members, reap_if_child, stop_groups};
use crate::submit::{default_role, ExecutorProcess};
use crate::{SchedulerError, LOCAL_CLUSTER};
use heron_statemgr::{StateDir, StateManagerExt, StateManagerSpec};
use std::path::PathBuf;
use std::time::Duration;

/// What to kill, and where to look for it.
#[derive(Clone, Debug)]
pub struct KillRequest {
    /// Topology name.
    pub name: String,
    /// Cluster (names the working directory).
    pub cluster: String,
    /// Role used when the execution state does not say (the submitting user by default).
    pub role: String,
    /// The state manager holding the topology's nodes.
    pub state_manager: StateManagerSpec,
    /// Home directory of the working directories.
    pub home: PathBuf,
    /// How long the executors get after SIGTERM before SIGKILL.
    pub grace: Duration,
}

impl KillRequest {
    /// A request with the defaults (cluster `local`, `$HOME`, the default state root, 5 s).
    pub fn new(name: impl Into<String>) -> KillRequest {
        KillRequest {
            name: name.into(),
            cluster: LOCAL_CLUSTER.to_string(),
            role: default_role(),
            state_manager: StateManagerSpec::default_local(),
            home: heron_statemgr::home_dir(),
            grace: Duration::from_secs(5),
        }
    }
}

/// What a kill did.
#[derive(Clone, Debug)]
pub struct KillReport {
    /// Topology name.
    pub name: String,
    /// Its working directory (kept: it has the logs).
    pub working_dir: PathBuf,
    /// Executors found in pid files (their groups are gone now).
    pub executors: Vec<ExecutorProcess>,
}

/// Kills a topology. Errors with [`SchedulerError::NotFound`] when it has neither state nor
/// pid files, and with [`SchedulerError::Survivors`] (state kept, so kill can be retried)
/// when processes outlive SIGKILL.
pub fn kill(req: &KillRequest) -> Result<KillReport, SchedulerError> {
    let name = &req.name;
    if heron_statemgr::validate_name(name).is_err() {
        return Err(SchedulerError::NotFound {
            name: name.clone(),
            cluster: req.cluster.clone(),
        });
    }
    let state = req.state_manager.open()?;
    let working_dir =
        layout::topology_working_dir(&*state, &req.home, &req.cluster, &req.role, name);
    let executors: Vec<ExecutorProcess> = layout::read_pid_files(&working_dir)?
        .into_iter()
        .map(|(shard, pid)| ExecutorProcess { shard, pid })
        .collect();
    let mut has_state = false;
    for dir in StateDir::ALL {
        has_state |= state.get(dir, name)?.is_some();
    }
    if !has_state && executors.is_empty() {
        return Err(SchedulerError::NotFound {
            name: name.clone(),
            cluster: req.cluster.clone(),
        });
    }
    let groups: Vec<i32> = executors
        .iter()
        .filter(|e| group_is_topologys(e.pid, name))
        .map(|e| e.pid)
        .collect();
    tracing::info!("killing topology {name}: executor process groups {groups:?}");
    let survivors = stop_groups(&groups, req.grace);
    if !survivors.is_empty() {
        return Err(SchedulerError::Survivors {
            name: name.clone(),
            pids: survivors,
        });
    }
    clean_up(&*state, name, &working_dir)?;
    Ok(KillReport {
        name: name.clone(),
        working_dir,
        executors,
    })
}

/// The last step of every kill, once no process of the topology runs: deletes its state
/// nodes, its pid files and its secret (the working directory stays: it has the logs).
pub fn clean_up(
    state: &dyn heron_statemgr::StateManager,
    name: &str,
    working_dir: &std::path::Path,
) -> Result<(), SchedulerError> {
    state.delete_topology(name)?;
    layout::remove_pid_files(working_dir)?;
    remove_secret(working_dir)
}

/// `true` when group `pgid` has a live process running a role of topology `name`. A pid
/// file can be stale (its group gone and the number reused): such a group is left alone.
fn group_is_topologys(pgid: i32, name: &str) -> bool {
    reap_if_child(pgid);
    let members = group_members(pgid);
    if members.is_empty() {
        return false;
    }
    let ours = members.iter().any(|&pid| {
        let args = cmdline(pid);
        args.iter().any(|a| a == "heron-role")
            && args
                .windows(2)
                .any(|w| w[0] == "--topology-name" && w[1] == name)
    });
    if !ours {
        tracing::warn!(
            "process group {pgid} from a pid file of topology {name} runs no heron role of \
             it (stale pid file?); leaving it alone"
        );
    }
    ours
}

/// Deletes the topology's secret and TLS identity (`auth/`): a killed topology's token opens
/// nothing any more.
fn remove_secret(working_dir: &std::path::Path) -> Result<(), SchedulerError> {
    let secret = layout::secret_file(working_dir);
    let path = secret.parent().unwrap_or(working_dir);
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(SchedulerError::io(format!("removing {}", path.display()))(
            e,
        )),
    }
}

#[cfg(test)]
mod tests;
