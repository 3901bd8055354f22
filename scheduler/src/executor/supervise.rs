//! The supervisor's process I/O: spawn the container's processes, poll them, restart them as
//! [`Supervisor`] decides, and stop them all on shutdown.

use super::plan::ProcessSpec;
use super::supervisor::{BackoffPolicy, Supervisor};
use crate::layout;
use crate::process::{describe_exit, signal_process, spawn_dying_with_parent};
use crate::SchedulerError;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often children are polled.
const POLL: Duration = Duration::from_millis(100);

/// How long children get after SIGTERM at shutdown.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Runs `specs` as `<binary> <spec.args>` in `working_dir` (output appended to
/// `log-files/<name>.log`), restarting each when it exits, until `stop` is set; then stops
/// them (SIGTERM, SIGKILL after 2 s) and returns. Must run on the thread that lives as long
/// as the process: children die with it (`PR_SET_PDEATHSIG`).
pub fn supervise(
    binary: &Path,
    working_dir: &Path,
    specs: &[ProcessSpec],
    policy: BackoffPolicy,
    stop: &AtomicBool,
) -> Result<(), SchedulerError> {
    supervise_until(binary, working_dir, specs, policy, stop, &mut || false).map(|_| ())
}

/// [`supervise`], also asking `reload` on every round: when it returns `true` the processes
/// are stopped as at shutdown and this returns `Ok(true)` (the caller starts a new set);
/// `Ok(false)` means `stop` was set.
pub fn supervise_until(
    binary: &Path,
    working_dir: &Path,
    specs: &[ProcessSpec],
    policy: BackoffPolicy,
    stop: &AtomicBool,
    reload: &mut dyn FnMut() -> bool,
) -> Result<bool, SchedulerError> {
    let log_dir = layout::log_dir(working_dir);
    std::fs::create_dir_all(&log_dir).map_err(SchedulerError::io(format!(
        "creating {}",
        log_dir.display()
    )))?;
    let mut sup = Supervisor::new(specs.len(), policy, Instant::now());
    let mut children: Vec<Option<Child>> = specs.iter().map(|_| None).collect();
    let mut reloading = false;
    while !stop.load(Ordering::SeqCst) {
        if reload() {
            reloading = true;
            break;
        }
        let now = Instant::now();
        for (idx, slot) in children.iter_mut().enumerate() {
            let Some(child) = slot else { continue };
            let status = match child.try_wait() {
                Ok(Some(status)) => describe_exit(status),
                Ok(None) => continue,
                Err(e) => format!("unknown status ({e})"),
            };
            let pid = child.id();
            *slot = None;
            if stop.load(Ordering::SeqCst) {
                break;
            }
            if let Some(delay) = sup.exited(idx, now) {
                tracing::warn!(
                    "process {} (pid {pid}) exited with {status}; restarting in {delay:?} \
                     (restart #{})",
                    specs[idx].name,
                    sup.restarts(idx)
                );
            }
        }
        if stop.load(Ordering::SeqCst) {
            break;
        }
        for idx in sup.due(now) {
            let spec = &specs[idx];
            match start(binary, working_dir, spec) {
                Ok(child) => {
                    tracing::info!("started {} (pid {})", spec.name, child.id());
                    sup.started(idx, now);
                    children[idx] = Some(child);
                }
                Err(e) => {
                    if let Some(delay) = sup.exited(idx, now) {
                        tracing::error!(
                            "could not start {}: {e}; retrying in {delay:?}",
                            spec.name
                        );
                    }
                }
            }
        }
        let wait = sup
            .next_start()
            .map(|t| t.saturating_duration_since(Instant::now()))
            .map_or(POLL, |d| d.min(POLL));
        std::thread::sleep(wait.max(Duration::from_millis(5)));
    }
    for idx in sup.shutdown() {
        tracing::debug!("stopping {}", specs[idx].name);
    }
    stop_children(specs, &mut children);
    Ok(reloading)
}

fn start(binary: &Path, working_dir: &Path, spec: &ProcessSpec) -> std::io::Result<Child> {
    let log_path = layout::log_file(working_dir, &spec.name);
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)?;
    let log2 = log.try_clone()?;
    spawn_dying_with_parent(
        Command::new(binary)
            .args(&spec.args)
            .current_dir(working_dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2),
    )
}

/// SIGTERM every child, wait up to [`STOP_GRACE`], SIGKILL the rest and reap them.
fn stop_children(specs: &[ProcessSpec], children: &mut [Option<Child>]) {
    for child in children.iter().flatten() {
        let _ = signal_process(child.id() as i32, libc::SIGTERM);
    }
    let deadline = Instant::now() + STOP_GRACE;
    loop {
        let mut running = 0;
        for slot in children.iter_mut() {
            if let Some(child) = slot {
                match child.try_wait() {
                    Ok(None) => running += 1,
                    _ => *slot = None,
                }
            }
        }
        if running == 0 || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for (idx, slot) in children.iter_mut().enumerate() {
        if let Some(mut child) = slot.take() {
            tracing::warn!(
                "{} (pid {}) ignored SIGTERM for {STOP_GRACE:?}; sending SIGKILL",
                specs[idx].name,
                child.id()
            );
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[cfg(test)]
mod tests;
