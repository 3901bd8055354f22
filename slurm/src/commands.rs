//! The Slurm commands the scheduler runs (`sbatch`, `squeue`, `scancel`), each a thin wrapper
//! that returns the command's output or an error quoting what it printed; and the parsing of
//! that output (pure, unit-tested).

use heron_scheduler::SchedulerError;
use std::path::Path;
use std::process::Command;

/// One job step, as `squeue --steps` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// `<job>.<step>`.
    pub id: String,
    /// Its name (`container-N` for a container).
    pub name: String,
    /// The nodes it runs on.
    pub nodes: String,
}

fn failed(reason: String) -> SchedulerError {
    SchedulerError::Cluster {
        scheduler: "slurm",
        reason,
    }
}

/// Runs `program args`; its stdout, or an error with its stderr.
fn run(program: &str, args: &[String], cwd: Option<&Path>) -> Result<String, SchedulerError> {
    let mut cmd = Command::new(program);
    cmd.args(args);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let out = cmd.output().map_err(|e| {
        failed(format!(
            "cannot run {program} ({e}); is Slurm installed here and on the PATH?"
        ))
    })?;
    if !out.status.success() {
        return Err(failed(format!(
            "{program} {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `sbatch --parsable ...`: the new job's id.
pub fn sbatch(args: &[String], cwd: &Path) -> Result<String, SchedulerError> {
    let out = run("sbatch", args, Some(cwd))?;
    parse_job_id(&out).ok_or_else(|| failed(format!("sbatch printed no job id: {out:?}")))
}

/// The job id `sbatch --parsable` printed (`<id>` or `<id>;<cluster>`).
///
/// ```
/// assert_eq!(heron_slurm::commands::parse_job_id("17\n").as_deref(), Some("17"));
/// assert_eq!(heron_slurm::commands::parse_job_id("17;c1\n").as_deref(), Some("17"));
/// assert_eq!(heron_slurm::commands::parse_job_id("oops"), None);
/// ```
pub fn parse_job_id(out: &str) -> Option<String> {
    let id = out.trim().split(';').next()?.trim();
    (!id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())).then(|| id.to_string())
}

/// The job's state (`RUNNING`, `PENDING`, `COMPLETING`, `CANCELLED`, ...), or `None` when
/// Slurm no longer knows the job.
pub fn job_state(job: &str) -> Result<Option<String>, SchedulerError> {
    let args: Vec<String> = ["-h", "-j", job, "-o", "%T"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    match run("squeue", &args, None) {
        Ok(out) => Ok(out
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(str::to_string)),
        // a job slurmctld has forgotten
        Err(SchedulerError::Cluster { reason, .. }) if reason.contains("Invalid job id") => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// `true` for the states of a job that still has (or will have) processes.
pub fn is_live(state: &str) -> bool {
    matches!(
        state,
        "PENDING"
            | "RUNNING"
            | "COMPLETING"
            | "CONFIGURING"
            | "SUSPENDED"
            | "REQUEUED"
            | "RESIZING"
            | "SIGNALING"
            | "STAGE_OUT"
            | "STOPPED"
    )
}

/// The job's steps.
pub fn steps(job: &str) -> Result<Vec<Step>, SchedulerError> {
    let args: Vec<String> = ["-h", "-s", "-j", job, "-o", "%i|%j|%N"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    Ok(parse_steps(&run("squeue", &args, None)?))
}

/// `squeue -h -s -o '%i|%j|%N'` output.
///
/// ```
/// use heron_slurm::commands::parse_steps;
/// let steps = parse_steps("12.0|container-1|n2\n12.batch|batch|n1\n");
/// assert_eq!(steps.len(), 2);
/// assert_eq!((steps[0].id.as_str(), steps[0].name.as_str(), steps[0].nodes.as_str()),
///            ("12.0", "container-1", "n2"));
/// ```
pub fn parse_steps(out: &str) -> Vec<Step> {
    out.lines()
        .filter_map(|line| {
            let mut parts = line.trim().splitn(3, '|');
            let id = parts.next()?.trim();
            let name = parts.next()?.trim();
            let nodes = parts.next().unwrap_or("").trim();
            (!id.is_empty()).then(|| Step {
                id: id.to_string(),
                name: name.to_string(),
                nodes: nodes.to_string(),
            })
        })
        .collect()
}

/// `scancel <id>` (a job, or a step `<job>.<step>`).
pub fn scancel(id: &str) -> Result<(), SchedulerError> {
    run("scancel", &[id.to_string()], None).map(|_| ())
}
