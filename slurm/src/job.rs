//! The batch job of a topology, as text and arguments (no I/O): `sbatch`'s options and the
//! script whose job steps are the containers.
//!
//! The script runs one step per container (`srun --overlap -N1 -n1 --relative=R`, named
//! `container-N`, its output appended to `log-files/executor-N.log`), container N on node
//! `N mod nodes` of the allocation, so container 0 (the tmaster's) is on the first node and
//! the others spread over all of them. A step that ends with a failure (a crash, or `scancel`
//! of the step, which is how `heron restart` restarts a container) is run again after a
//! second; a step that ends cleanly (its executor was stopped, or its container left the
//! packing plan) is not. The whole job ends with `scancel` of the job (`heron kill`).

use heron_scheduler::shell::quote;
use std::fmt::Write as _;
use std::path::Path;

/// The file in the working directory that holds the job id (Heron's name).
pub const JOB_ID_FILE: &str = "slurm-job.pid";
/// The batch script, in the working directory.
pub const SCRIPT_FILE: &str = "slurm-job.sh";
/// The executor command of container 0, NUL-separated (what an update re-launches from).
pub const COMMAND_FILE: &str = "slurm-job.command";

/// The step name of container `shard`.
pub fn step_name(shard: i32) -> String {
    format!("container-{shard}")
}

/// The container a step name stands for.
///
/// ```
/// assert_eq!(heron_slurm::job::shard_of("container-2"), Some(2));
/// assert_eq!(heron_slurm::job::shard_of("batch"), None);
/// ```
pub fn shard_of(step_name: &str) -> Option<i32> {
    step_name.strip_prefix("container-")?.parse().ok()
}

/// What a topology's job is made of.
#[derive(Clone, Debug)]
pub struct JobSpec<'a> {
    /// The topology's name (the job's name).
    pub name: &'a str,
    /// The working directory (the job's and every step's).
    pub working_dir: &'a Path,
    /// Each container and its executor's command (binary first).
    pub containers: Vec<(i32, Vec<String>)>,
    /// Nodes to spread the containers over (at most one per container).
    pub nodes: usize,
    /// `--partition`, if configured.
    pub partition: Option<&'a str>,
    /// `--time`, if configured.
    pub time: Option<&'a str>,
    /// Run the processes with `RUST_LOG=debug` unless it is set.
    pub verbose: bool,
}

impl JobSpec<'_> {
    /// Nodes actually asked for: at least 1, at most one per container.
    pub fn node_count(&self) -> usize {
        self.nodes.clamp(1, self.containers.len().max(1))
    }

    /// `sbatch`'s arguments (the script path last).
    ///
    /// ```
    /// use heron_slurm::job::JobSpec;
    /// let spec = JobSpec {
    ///     name: "WordCount",
    ///     working_dir: "/w".as_ref(),
    ///     containers: vec![(0, vec!["/bin/t".into()]), (1, vec!["/bin/t".into()])],
    ///     nodes: 8,
    ///     partition: Some("batch"),
    ///     time: None,
    ///     verbose: false,
    /// };
    /// let args = spec.sbatch_args();
    /// assert!(args.contains(&"--nodes=2".to_string()));
    /// assert!(args.contains(&"--ntasks=2".to_string()));
    /// assert!(args.contains(&"--partition=batch".to_string()));
    /// assert_eq!(args.last().unwrap(), "/w/slurm-job.sh");
    /// ```
    pub fn sbatch_args(&self) -> Vec<String> {
        let mut args = vec![
            "--parsable".to_string(),
            format!("--job-name={}", self.name),
            format!("--nodes={}", self.node_count()),
            format!("--ntasks={}", self.containers.len().max(1)),
            // the containers' processes share the nodes' CPUs as the local scheduler's do
            "--overcommit".to_string(),
            format!("--chdir={}", self.working_dir.display()),
            format!(
                "--output={}",
                self.working_dir
                    .join("log-files/slurm-job-%j.log")
                    .display()
            ),
        ];
        if let Some(p) = self.partition {
            args.push(format!("--partition={p}"));
        }
        if let Some(t) = self.time {
            args.push(format!("--time={t}"));
        }
        args.push(self.working_dir.join(SCRIPT_FILE).display().to_string());
        args
    }

    /// The batch script.
    pub fn script(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "#!/bin/sh");
        let _ = writeln!(
            s,
            "# heron-rs: the Slurm job of topology {}, written by heron submit.",
            self.name
        );
        s.push_str(
            "# One job step per container, run again when it fails (heron restart cancels a\n\
             # step); heron kill cancels the job.\n",
        );
        let _ = writeln!(
            s,
            "cd {} || exit 1",
            quote(&self.working_dir.display().to_string())
        );
        let _ = writeln!(s, "echo \"$SLURM_JOB_ID\" > {JOB_ID_FILE}");
        if self.verbose {
            s.push_str("export RUST_LOG=\"${RUST_LOG:-debug}\"\n");
        }
        s.push_str(
            "nodes=\"${SLURM_NNODES:-1}\"\n\
             container() {\n\
             \x20 shard=\"$1\"; shift\n\
             \x20 while :; do\n\
             \x20   srun --overlap --nodes=1 --ntasks=1 --relative=$((shard % nodes)) \\\n\
             \x20     --job-name=\"container-$shard\" --output=\"log-files/executor-$shard.log\" \\\n\
             \x20     --open-mode=append \"$@\" && break\n\
             \x20   echo \"container $shard: its step ended with status $?; running it again\"\n\
             \x20   sleep 1\n\
             \x20 done\n\
             }\n",
        );
        for (shard, command) in &self.containers {
            let _ = write!(s, "container {shard}");
            for arg in command {
                let _ = write!(s, " {}", quote(arg));
            }
            s.push_str(" &\n");
        }
        s.push_str("wait\n");
        s
    }
}

/// A command as stored in [`COMMAND_FILE`]: NUL-separated arguments.
pub fn encode_command(args: &[String]) -> Vec<u8> {
    args.join("\0").into_bytes()
}

/// [`encode_command`] read back; `None` when it is not such a command.
pub fn decode_command(bytes: &[u8]) -> Option<Vec<String>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let args: Vec<String> = text.split('\0').map(str::to_string).collect();
    (!args.is_empty() && !args[0].is_empty()).then_some(args)
}

/// `command` (an executor's) for another container: its `--shard` value replaced.
pub fn for_shard(command: &[String], shard: i32) -> Vec<String> {
    let mut args = command.to_vec();
    if let Some(i) = args.iter().position(|a| a == "--shard") {
        if let Some(v) = args.get_mut(i + 1) {
            *v = shard.to_string();
        }
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(dir: &Path) -> JobSpec<'_> {
        JobSpec {
            name: "WordCount",
            working_dir: dir,
            containers: (0..3)
                .map(|i| {
                    (
                        i,
                        vec![
                            "/opt/my topology".to_string(),
                            "heron-role".into(),
                            "executor".into(),
                            "--shard".into(),
                            i.to_string(),
                            "--".into(),
                            "it's".into(),
                        ],
                    )
                })
                .collect(),
            nodes: 2,
            partition: None,
            time: Some("1:00:00"),
            verbose: true,
        }
    }

    #[test]
    fn the_script_runs_each_container_as_a_step_and_the_shell_reads_the_arguments_back() {
        let dir = tempfile::tempdir().unwrap();
        let s = spec(dir.path());
        let script = s.script();
        assert_eq!(s.node_count(), 2);
        assert!(s.sbatch_args().contains(&"--time=1:00:00".to_string()));
        for i in 0..3 {
            assert!(script.contains(&format!("container {i} '/opt/my topology'")));
        }
        assert!(script.contains("--relative=$((shard % nodes))"));
        assert!(script.contains("RUST_LOG"));
        // the shell parses each command back into the same arguments: run it with srun
        // replaced by a function that prints them
        let fake = script
            .replace("srun --overlap", "print_args --overlap")
            .replace(
                "container() {",
                "print_args() { for a in \"$@\"; do printf '%s\\n' \"$a\"; done >> args-$shard.txt; }\ncontainer() {",
            );
        std::fs::create_dir_all(dir.path().join("log-files")).unwrap();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&fake)
            .env("SLURM_JOB_ID", "42")
            .env("SLURM_NNODES", "2")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join(JOB_ID_FILE)).unwrap(),
            "42\n"
        );
        let args = std::fs::read_to_string(dir.path().join("args-2.txt")).unwrap();
        let args: Vec<&str> = args.lines().collect();
        assert_eq!(
            args,
            [
                "--overlap",
                "--nodes=1",
                "--ntasks=1",
                "--relative=0",
                "--job-name=container-2",
                "--output=log-files/executor-2.log",
                "--open-mode=append",
                "/opt/my topology",
                "heron-role",
                "executor",
                "--shard",
                "2",
                "--",
                "it's"
            ]
        );
        let args1 = std::fs::read_to_string(dir.path().join("args-1.txt")).unwrap();
        assert!(args1.contains("--relative=1\n"), "{args1}");
    }

    #[test]
    fn commands_round_trip_and_change_shard() {
        let cmd: Vec<String> = ["/b", "heron-role", "executor", "--shard", "0", "--", "x y"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(decode_command(&encode_command(&cmd)).unwrap(), cmd);
        assert_eq!(for_shard(&cmd, 3)[4], "3");
        assert_eq!(decode_command(b""), None);
    }
}
