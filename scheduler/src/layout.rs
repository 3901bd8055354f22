//! Where a topology's files live on this machine (`docs/internals.md`, "Processes and flags").
//!
//! ```text
//! ~/.herondata/topologies/<cluster>/<role>/<topology>/   working dir of every process
//!     executor-<N>.pid                                    pid (= process group) of executor N
//!     auth/secret                                         the topology's secret (mode 0600)
//!     log-files/<name>.log                                executor-N, tmaster, stmgr-N, <instance id>
//!     metrics/<instance id>                               instance counters
//! ```

use crate::SchedulerError;
use std::path::{Path, PathBuf};

/// The working directory of a running topology: under the role its `executionstate` node
/// names (the submitting one), `role` when the node is missing or unreadable.
pub fn topology_working_dir(
    state: &dyn heron_statemgr::StateManager,
    home: &Path,
    cluster: &str,
    role: &str,
    topology: &str,
) -> PathBuf {
    use heron_statemgr::StateManagerExt;
    let role = state
        .get_execution_state(topology)
        .ok()
        .flatten()
        .map(|e| e.role)
        .filter(|r| heron_statemgr::validate_name(r).is_ok())
        .unwrap_or_else(|| role.to_string());
    working_dir(home, cluster, &role, topology)
}

/// `<home>/.herondata/topologies/<cluster>/<role>/<topology>`.
pub fn working_dir(home: &Path, cluster: &str, role: &str, topology: &str) -> PathBuf {
    home.join(".herondata")
        .join("topologies")
        .join(cluster)
        .join(role)
        .join(topology)
}

/// `<working dir>/log-files`.
pub fn log_dir(working_dir: &Path) -> PathBuf {
    working_dir.join("log-files")
}

/// `<working dir>/log-files/<name>.log`.
pub fn log_file(working_dir: &Path, name: &str) -> PathBuf {
    log_dir(working_dir).join(format!("{name}.log"))
}

/// `<working dir>/metrics`.
pub fn metrics_dir(working_dir: &Path) -> PathBuf {
    working_dir.join("metrics")
}

/// `<working dir>/auth/secret`: the topology's secret (`heron_auth`), mode 0600 in a 0700
/// directory, written by `heron submit` and read by every process and by the CLI.
pub fn secret_file(working_dir: &Path) -> PathBuf {
    working_dir.join("auth").join("secret")
}

/// `<working dir>/executor-<shard>.pid`.
pub fn pid_file(working_dir: &Path, shard: i32) -> PathBuf {
    working_dir.join(format!("executor-{shard}.pid"))
}

/// Writes a pid file (atomically: a reader sees no file or the whole pid).
pub fn write_pid_file(working_dir: &Path, shard: i32, pid: i32) -> Result<(), SchedulerError> {
    let path = pid_file(working_dir, shard);
    let tmp = working_dir.join(format!(".executor-{shard}.pid.tmp"));
    std::fs::write(&tmp, format!("{pid}\n"))
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(SchedulerError::io(format!("writing {}", path.display())))
}

/// The executor pid files in a working directory: `(shard, pid)`, sorted by shard. Files that
/// do not hold a pid are skipped; a missing directory has none.
pub fn read_pid_files(working_dir: &Path) -> Result<Vec<(i32, i32)>, SchedulerError> {
    let entries = match std::fs::read_dir(working_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(SchedulerError::io(format!(
                "reading {}",
                working_dir.display()
            ))(e))
        }
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(shard) = name
            .to_str()
            .and_then(|n| n.strip_prefix("executor-"))
            .and_then(|n| n.strip_suffix(".pid"))
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let pid = std::fs::read_to_string(entry.path())
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok());
        if let Some(pid) = pid.filter(|p| *p > 1) {
            found.push((shard, pid));
        }
    }
    found.sort_unstable();
    Ok(found)
}

/// Deletes every executor pid file (`executor-<N>.pid`) in a working directory.
pub fn remove_pid_files(working_dir: &Path) -> Result<(), SchedulerError> {
    let Ok(entries) = std::fs::read_dir(working_dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let is_pid_file = name
            .to_str()
            .and_then(|n| n.strip_prefix("executor-"))
            .and_then(|n| n.strip_suffix(".pid"))
            .is_some_and(|n| n.parse::<i32>().is_ok());
        if !is_pid_file {
            continue;
        }
        match std::fs::remove_file(entry.path()) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(SchedulerError::io(format!(
                    "removing {}",
                    entry.path().display()
                ))(e))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn working_dir_follows_herons_layout() {
        assert_eq!(
            working_dir(Path::new("/home/u"), "local", "alice", "WordCount"),
            PathBuf::from("/home/u/.herondata/topologies/local/alice/WordCount")
        );
        assert_eq!(
            log_file(Path::new("/w"), "stmgr-1"),
            PathBuf::from("/w/log-files/stmgr-1.log")
        );
    }

    #[test]
    fn pid_files_round_trip_and_skip_junk() {
        let dir = std::env::temp_dir().join(format!("heron-layout-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        write_pid_file(&dir, 2, 4242).unwrap();
        write_pid_file(&dir, 0, 4240).unwrap();
        std::fs::write(dir.join("executor-7.pid"), "not a pid").unwrap();
        std::fs::write(dir.join("executor-x.pid"), "12").unwrap();
        assert_eq!(read_pid_files(&dir).unwrap(), vec![(0, 4240), (2, 4242)]);
        remove_pid_files(&dir).unwrap();
        assert_eq!(read_pid_files(&dir).unwrap(), vec![]);
        assert!(!dir.join("executor-7.pid").exists());
        assert!(dir.join("executor-x.pid").exists());
        assert!(read_pid_files(&dir.join("missing")).unwrap().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
