//! Waiting for a submitted topology to run (its physical plan appears in `pplans/<name>`),
//! and saying which step failed, with the relevant log tail, when it does not.

use heron_proto::system::PhysicalPlan;
use heron_scheduler::process::group_alive;
use heron_scheduler::{layout, Submitted};
use heron_statemgr::{StateManager, StateManagerExt};
use std::path::Path;
use std::time::{Duration, Instant};

/// How long `heron submit` and [`crate::LocalTopology`] wait for the physical plan.
pub const DEFAULT_PPLAN_TIMEOUT: Duration = Duration::from_secs(30);

/// Lines of a log quoted in a failure.
const TAIL_LINES: usize = 8;

/// Stream manager logs quoted when the stream managers did not register.
const MAX_STMGR_TAILS: usize = 3;

/// Why a submitted topology did not start.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct StartupFailure(pub String);

/// Polls `pplans/<name>` every 100 ms until it holds this submission's physical plan.
/// Fails early when an executor's process group is gone, and after `timeout` with what the
/// state says about the step that did not happen.
pub fn wait_for_physical_plan(
    sub: &Submitted,
    timeout: Duration,
) -> Result<PhysicalPlan, StartupFailure> {
    let state = sub
        .state_manager
        .open()
        .map_err(|e| StartupFailure(format!("cannot open {}: {e}", sub.state_manager)))?;
    let state = &*state;
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(Some(plan)) = state.get_physical_plan(&sub.name) {
            if plan.topology.id == sub.id {
                return Ok(plan);
            }
        }
        if let Some(dead) = sub.executors.iter().find(|e| !group_alive(e.pid)) {
            let name = format!("executor-{}", dead.shard);
            return Err(StartupFailure(format!(
                "{name} (pid {}) exited while the topology was starting{}",
                dead.pid,
                log_tail(&sub.working_dir, &name)
            )));
        }
        if Instant::now() >= deadline {
            return Err(StartupFailure(diagnose(sub, state, timeout)));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn diagnose(sub: &Submitted, state: &dyn StateManager, timeout: Duration) -> String {
    let secs = timeout.as_secs();
    match state.get_tmanager_location(&sub.name) {
        Ok(Some(tm)) if tm.topology_id == sub.id => {
            let mut msg = format!(
                "no physical plan after {secs}s: the tmaster is up (server port {}) but not \
                 every stream manager registered with it; see {}/stmgr-*.log and tmaster.log",
                tm.server_port,
                layout::log_dir(&sub.working_dir).display(),
            );
            for e in sub
                .executors
                .iter()
                .filter(|e| e.shard > 0)
                .take(MAX_STMGR_TAILS)
            {
                msg.push_str(&log_tail(&sub.working_dir, &format!("stmgr-{}", e.shard)));
            }
            msg.push_str(&log_tail(&sub.working_dir, "tmaster"));
            msg
        }
        Ok(_) => format!(
            "no physical plan after {secs}s: the tmaster never registered its location \
             (tmanagers/{}){}",
            sub.name,
            log_tail(&sub.working_dir, "tmaster")
        ),
        Err(e) => format!("no physical plan after {secs}s; reading the state failed: {e}"),
    }
}

/// "\n--- last lines of <path> ---\n..." or a note that the log is missing or empty.
pub fn log_tail(working_dir: &Path, name: &str) -> String {
    let path = layout::log_file(working_dir, name);
    let text = match std::fs::read(&path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(_) => return format!("\n({} does not exist)", path.display()),
    };
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return format!("\n({} is empty)", path.display());
    }
    let tail = &lines[lines.len().saturating_sub(TAIL_LINES)..];
    format!(
        "\n--- last lines of {} ---\n{}",
        path.display(),
        tail.join("\n")
    )
}
