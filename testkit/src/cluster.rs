//! A local cluster for the multi-process tests: a private HOME (so a private state root and
//! working directories), the `heron` CLI pointed at it, and cleanup of every process that
//! mentions that HOME when the cluster is dropped.
//!
//! ```no_run
//! use heron_testkit::cluster::LocalCluster;
//! use std::path::Path;
//!
//! let mut cluster = LocalCluster::new("target/debug/heron");
//! let out = cluster.submit("WordCount", Path::new("target/debug/examples/word_count"), &[]);
//! assert!(out.status.success());
//! // dropping `cluster` kills the topology and anything else started under its HOME
//! ```

use crate::process::{kill_group, kill_pid, processes_mentioning};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// One test's cluster: its own HOME and the `heron` binary to drive it with.
#[derive(Debug)]
pub struct LocalCluster {
    home: tempfile::TempDir,
    heron: PathBuf,
    /// Topologies submitted through [`LocalCluster::submit`]; killed on drop.
    topologies: Vec<String>,
    /// Extra environment for every `heron` command (and so for the topology's processes).
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
}

impl LocalCluster {
    /// A cluster with a fresh temporary HOME, driven by the `heron` CLI at `heron`.
    ///
    /// # Panics
    /// If no temporary directory can be made.
    pub fn new(heron: impl Into<PathBuf>) -> LocalCluster {
        LocalCluster {
            home: tempfile::Builder::new()
                .prefix("heron-test-home")
                .tempdir()
                .expect("temp HOME"),
            heron: heron.into(),
            topologies: Vec::new(),
            env: Vec::new(),
        }
    }

    /// Sets `key` to `value` in the environment of every later `heron` command (the
    /// topology's processes inherit it from `heron submit`), e.g. a `PATH` with a virtualenv.
    pub fn set_env(
        &mut self,
        key: impl Into<std::ffi::OsString>,
        value: impl Into<std::ffi::OsString>,
    ) {
        self.env.push((key.into(), value.into()));
    }

    /// The `heron` CLI binary.
    pub fn heron_binary(&self) -> &Path {
        &self.heron
    }

    /// The environment every `heron` command of this cluster gets: `HOME`, `USER` and what
    /// [`LocalCluster::set_env`] added (for a program that runs the CLI itself, such as the
    /// tracker's controls).
    pub fn heron_env(&self) -> Vec<(String, String)> {
        let mut env = vec![
            ("HOME".to_string(), self.home().display().to_string()),
            ("USER".to_string(), "tester".to_string()),
        ];
        env.extend(self.env.iter().map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        }));
        env
    }

    /// The private HOME.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// The local state root under HOME.
    pub fn state_root(&self) -> PathBuf {
        self.home().join(".herondata/repository/state/local")
    }

    /// The topology's working directory in cluster `local`.
    pub fn working_dir(&self, name: &str) -> Option<PathBuf> {
        self.working_dir_in("local", name)
    }

    /// The topology's working directory (`~/.herondata/topologies/<cluster>/<role>/<name>`).
    pub fn working_dir_in(&self, cluster: &str, name: &str) -> Option<PathBuf> {
        let base = self.home().join(".herondata/topologies").join(cluster);
        std::fs::read_dir(&base)
            .ok()?
            .flatten()
            .map(|role| role.path().join(name))
            .find(|p| p.is_dir())
    }

    /// The `heron` CLI with this cluster's HOME (and `USER=tester`).
    pub fn heron(&self) -> Command {
        let mut c = Command::new(&self.heron);
        c.env("HOME", self.home()).env("USER", "tester");
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }

    /// Submits `binary` with `args` through `heron submit local`; the topology is killed when
    /// the cluster is dropped. On failure prints both streams and the topology's logs.
    ///
    /// # Panics
    /// If the CLI cannot be run.
    pub fn submit(&mut self, name: &str, binary: &Path, args: &[&str]) -> Output {
        self.topologies.push(name.to_string());
        let out = self
            .heron()
            .arg("submit")
            .arg("local")
            .arg(binary)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run heron submit");
        if !out.status.success() {
            eprintln!(
                "heron submit failed:\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            self.dump_logs(name);
        }
        out
    }

    /// `heron kill local <name>`.
    ///
    /// # Panics
    /// If the CLI cannot be run.
    pub fn kill(&self, name: &str) -> Output {
        self.heron_in("kill", "local", &[], &[name])
    }

    /// `heron <verb> [extra flags] <cluster> <args...>`; not recorded for the kill on drop
    /// (its processes are still cleaned up by HOME).
    ///
    /// # Panics
    /// If the CLI cannot be run.
    pub fn heron_in(&self, verb: &str, cluster: &str, extra: &[String], args: &[&str]) -> Output {
        self.heron()
            .arg(verb)
            .args(extra)
            .arg(cluster)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("run heron {verb}: {e}"))
    }

    /// Prints the last 30 lines of every log of the topology in cluster `local`.
    pub fn dump_logs(&self, name: &str) {
        self.dump_logs_in("local", name);
    }

    /// Prints the last 30 lines of every log of the topology in `cluster`.
    pub fn dump_logs_in(&self, cluster: &str, name: &str) {
        let Some(dir) = self.working_dir_in(cluster, name) else {
            return;
        };
        for e in std::fs::read_dir(dir.join("log-files"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(30)..];
            eprintln!("---- {} ----\n{}", e.path().display(), tail.join("\n"));
        }
    }

    /// Process groups of the topology's executors, from their `executor-*.pid` files.
    pub fn executor_groups(&self, name: &str) -> Vec<i32> {
        let Some(dir) = self.working_dir(name) else {
            return Vec::new();
        };
        crate::files(&dir, "executor-", ".pid")
            .into_iter()
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .filter_map(|s| s.trim().parse().ok())
            .collect()
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        for name in std::mem::take(&mut self.topologies) {
            let groups = self.executor_groups(&name);
            let _ = self.heron_in("kill", "local", &[], &[&name]);
            for g in groups {
                kill_group(g);
            }
        }
        // Anything still running with this HOME in its command line or environment is ours.
        for pid in processes_mentioning(&self.home().to_string_lossy()) {
            kill_pid(pid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_under_the_private_home() {
        let c = LocalCluster::new("/nonexistent/heron");
        assert!(c.state_root().starts_with(c.home()));
        assert_eq!(c.working_dir("none"), None);
        assert!(c.executor_groups("none").is_empty());
    }

    #[test]
    fn finds_working_dirs_and_executor_pid_files() {
        let c = LocalCluster::new("/nonexistent/heron");
        let wd = c.home().join(".herondata/topologies/local/tester/T");
        std::fs::create_dir_all(&wd).unwrap();
        std::fs::write(wd.join("executor-0.pid"), "4242\n").unwrap();
        std::fs::write(wd.join("other.pid"), "1\n").unwrap();
        assert_eq!(c.working_dir("T"), Some(wd));
        assert_eq!(c.executor_groups("T"), vec![4242]);
    }
}
