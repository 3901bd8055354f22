//! The local launcher the examples use: a binary submits ITSELF to the local scheduler (real
//! separate processes), reads the instances' counters, and kills the topology when done.

use crate::startup::{wait_for_physical_plan, StartupFailure, DEFAULT_PPLAN_TIMEOUT};
use heron_scheduler::{kill, layout, KillRequest, SchedulerError, SubmitRequest, Submitted};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why launching or killing a local topology failed.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// This program's own binary could not be found.
    #[error("cannot find this program's binary: {0}")]
    CurrentExe(std::io::Error),
    /// Submitting or killing failed.
    #[error(transparent)]
    Scheduler(#[from] SchedulerError),
    /// The topology was launched but did not start; it was killed again.
    #[error("topology {name} did not start: {failure}")]
    NotStarted {
        /// Topology name.
        name: String,
        /// What did not happen, with the relevant log tail.
        failure: StartupFailure,
    },
}

/// Sums of the instances' counters (`metrics/<instance id>` files, `docs/internals.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Tuples emitted.
    pub emitted: u64,
    /// Tuples executed by bolts.
    pub executed: u64,
    /// Tuples acked.
    pub acked: u64,
    /// Tuples failed.
    pub failed: u64,
    /// Median complete latency (emit to ack) in µs, of the slowest spout task; 0 if none.
    pub complete_latency_p50_us: u64,
    /// 99th percentile complete latency in µs, of the slowest spout task; 0 if none.
    pub complete_latency_p99_us: u64,
    /// `EFFECTIVELY_ONCE`: the most restores any task went through (the first, at start-up,
    /// included); 0 otherwise.
    pub restores: u64,
}

impl Counters {
    /// Sums every counter file in `dir` (missing directory: all zero).
    pub fn read_dir(dir: &Path) -> Counters {
        let mut sum = Counters::default();
        let Ok(entries) = std::fs::read_dir(dir) else {
            return sum;
        };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue; // a counter file being written
            }
            if let Ok(text) = std::fs::read_to_string(entry.path()) {
                sum.add_file(&text);
            }
        }
        sum
    }

    /// Adds one counter file's `key value` lines; unknown keys and bad lines are skipped.
    pub fn add_file(&mut self, text: &str) {
        for line in text.lines() {
            let mut parts = line.split_whitespace();
            let (Some(key), Some(value)) = (parts.next(), parts.next()) else {
                continue;
            };
            let Ok(value) = value.parse::<u64>() else {
                continue;
            };
            match key {
                "complete-latency-p50-us" => {
                    self.complete_latency_p50_us = self.complete_latency_p50_us.max(value);
                    continue;
                }
                "complete-latency-p99-us" => {
                    self.complete_latency_p99_us = self.complete_latency_p99_us.max(value);
                    continue;
                }
                "restores" => {
                    self.restores = self.restores.max(value);
                    continue;
                }
                _ => {}
            }
            let slot = match key {
                "emitted" => &mut self.emitted,
                "executed" => &mut self.executed,
                "acked" => &mut self.acked,
                "failed" => &mut self.failed,
                _ => continue,
            };
            *slot = slot.saturating_add(value);
        }
    }
}

/// A topology running on this machine through the local scheduler. Dropping it kills it.
#[derive(Debug)]
pub struct LocalTopology {
    submitted: Submitted,
    home: PathBuf,
    killed: bool,
}

impl LocalTopology {
    /// Submits this program (`std::env::current_exe()`) with `args` as the topology's user
    /// arguments, with the defaults of [`SubmitRequest::new`], and waits for its physical
    /// plan. Its `main` must start with [`crate::run_role_if_requested`].
    pub fn submit_self(args: &[String]) -> Result<LocalTopology, LaunchError> {
        let exe = std::env::current_exe().map_err(LaunchError::CurrentExe)?;
        LocalTopology::submit(
            &SubmitRequest::new(exe, args.to_vec()),
            DEFAULT_PPLAN_TIMEOUT,
        )
    }

    /// Submits any topology binary and waits up to `timeout` for its physical plan. If it
    /// does not start, it is killed and the error says which step failed.
    pub fn submit(req: &SubmitRequest, timeout: Duration) -> Result<LocalTopology, LaunchError> {
        let submitted = heron_scheduler::submit(req)?;
        let topology = LocalTopology {
            submitted,
            home: req.home.clone(),
            killed: false,
        };
        match wait_for_physical_plan(&topology.submitted, timeout) {
            Ok(_) => Ok(topology),
            Err(failure) => Err(LaunchError::NotStarted {
                name: topology.submitted.name.clone(),
                failure,
            }), // dropping `topology` kills it
        }
    }

    /// Topology name.
    pub fn name(&self) -> &str {
        &self.submitted.name
    }

    /// Topology id.
    pub fn id(&self) -> &str {
        &self.submitted.id
    }

    /// Working directory of the topology's processes.
    pub fn working_dir(&self) -> &Path {
        &self.submitted.working_dir
    }

    /// Directory of the processes' logs.
    pub fn log_dir(&self) -> PathBuf {
        self.submitted.log_dir()
    }

    /// What the scheduler reported at submit time.
    pub fn submitted(&self) -> &Submitted {
        &self.submitted
    }

    /// The instances' counters, summed.
    pub fn counters(&self) -> Counters {
        Counters::read_dir(&layout::metrics_dir(&self.submitted.working_dir))
    }

    /// Kills the topology: every process stops and its state is deleted.
    pub fn kill(mut self) -> Result<(), LaunchError> {
        self.kill_now()
    }

    fn kill_now(&mut self) -> Result<(), LaunchError> {
        if self.killed {
            return Ok(());
        }
        self.killed = true;
        let s = &self.submitted;
        let req = KillRequest {
            cluster: s.cluster.clone(),
            role: s.role.clone(),
            state_manager: s.state_manager.clone(),
            home: self.home.clone(),
            ..KillRequest::new(&s.name)
        };
        kill(&req)?;
        Ok(())
    }
}

impl Drop for LocalTopology {
    fn drop(&mut self) {
        if let Err(e) = self.kill_now() {
            eprintln!("killing topology {}: {e}", self.submitted.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_sum_files_and_skip_junk() {
        let dir = std::env::temp_dir().join(format!("heron-counters-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("container_1_s_1"),
            "emitted 10\nexecuted 0\nacked 4\nfailed 1\ncomplete-latency-p50-us 900\ncomplete-latency-p99-us 3000\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("container_2_b_2"),
            "emitted 5\nexecuted 7\nweird\nacked x\ncomplete-latency-p50-us 1200\ncomplete-latency-p99-us 2500\n",
        )
        .unwrap();
        std::fs::write(dir.join(".container_2_b_2.tmp"), "emitted 1000\n").unwrap();
        let c = Counters::read_dir(&dir);
        assert_eq!(
            c,
            Counters {
                emitted: 15,
                executed: 7,
                acked: 4,
                failed: 1,
                // latencies are the slowest task's, not sums
                complete_latency_p50_us: 1200,
                complete_latency_p99_us: 3000,
                restores: 0,
            }
        );
        assert_eq!(
            Counters::read_dir(&dir.join("missing")),
            Counters::default()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
