//! Process plumbing: detached session leaders, children that die with their parent, and
//! process groups (signal, wait until gone, escalate to SIGKILL).
//!
//! Everything here is Linux-specific (`prctl`, `/proc`).

use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// How often group liveness is polled while waiting for it to go.
const POLL: Duration = Duration::from_millis(50);

/// Spawns `cmd` as the leader of a new session (`setsid`), so its process group (id = its
/// pid) holds it and every descendant that does not leave on purpose.
pub fn spawn_session_leader(cmd: &mut Command) -> io::Result<Child> {
    // SAFETY: the closure runs between fork and exec and only calls `setsid`, which is
    // async-signal-safe, and builds an io::Error from errno without allocating.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn()
}

/// Spawns `cmd` with `PR_SET_PDEATHSIG = SIGKILL`: the kernel kills it when the spawning
/// thread exits. Spawn from the thread that lives as long as the process (the main thread).
pub fn spawn_dying_with_parent(cmd: &mut Command) -> io::Result<Child> {
    // SAFETY: getpid is async-signal-safe; called before the fork.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs between fork and exec and only calls `prctl` and `getppid`,
    // which are async-signal-safe; errors are built from errno without allocating.
    unsafe {
        cmd.pre_exec(move || {
            let sig = libc::SIGKILL as libc::c_ulong;
            if libc::prctl(libc::PR_SET_PDEATHSIG, sig, 0, 0, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died before the prctl took effect.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    cmd.spawn()
}

/// Sends `signal` to every process of group `pgid`. `Ok(false)` when the group is gone.
pub fn signal_group(pgid: i32, signal: i32) -> io::Result<bool> {
    if pgid <= 1 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to signal process group {pgid}"),
        ));
    }
    // SAFETY: kill(2) with a negative pid signals a process group; no memory is involved.
    if unsafe { libc::kill(-pgid, signal) } == 0 {
        return Ok(true);
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::ESRCH) {
        Ok(false)
    } else {
        Err(err)
    }
}

/// Sends `signal` to one process. `Ok(false)` when it is gone.
pub fn signal_process(pid: i32, signal: i32) -> io::Result<bool> {
    if pid <= 1 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to signal pid {pid}"),
        ));
    }
    // SAFETY: kill(2) on one pid; no memory is involved.
    if unsafe { libc::kill(pid, signal) } == 0 {
        return Ok(true);
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::ESRCH) {
        Ok(false)
    } else {
        Err(err)
    }
}

/// Reaps `pid` if it is an exited child of this process (no-op otherwise), so a zombie we
/// spawned does not keep its group alive.
pub fn reap_if_child(pid: i32) {
    let mut status = 0;
    // SAFETY: waitpid with WNOHANG on one pid; `status` is a valid out pointer.
    unsafe {
        libc::waitpid(pid, &mut status, libc::WNOHANG);
    }
}

/// One line of `/proc/<pid>/stat` reduced to what we use.
struct ProcStat {
    state: char,
    pgrp: i32,
}

fn proc_stat(pid: i32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) S ppid pgrp ...": comm may hold spaces and parentheses; split at the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(ProcStat { state, pgrp })
}

/// The live (not zombie) processes of group `pgid`, from `/proc`.
pub fn group_members(pgid: i32) -> Vec<i32> {
    let mut members = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return members;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        if let Some(stat) = proc_stat(pid) {
            if stat.pgrp == pgid && !matches!(stat.state, 'Z' | 'X' | 'x') {
                members.push(pid);
            }
        }
    }
    members.sort_unstable();
    members
}

/// `true` while group `pgid` has a live (not zombie) process.
pub fn group_alive(pgid: i32) -> bool {
    match signal_group(pgid, 0) {
        Ok(false) => false,
        // Exists (or we may not signal it): only live members count, zombies are gone.
        Ok(true) | Err(_) => !group_members(pgid).is_empty(),
    }
}

/// The command line of a process (empty when it is gone or a zombie).
pub fn cmdline(pid: i32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| {
            bytes
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until every group in `pgids` is gone, reaping leaders that are our children.
/// Returns the groups still alive at the deadline.
pub fn wait_groups_gone(pgids: &[i32], timeout: Duration) -> Vec<i32> {
    let deadline = Instant::now() + timeout;
    loop {
        let alive: Vec<i32> = pgids.iter().copied().filter(|g| group_alive(*g)).collect();
        // A leader that is our child stays a zombie until reaped; reap after the check so
        // that one found dead is also gone when this returns.
        for &g in pgids {
            reap_if_child(g);
        }
        if alive.is_empty() || Instant::now() >= deadline {
            return alive;
        }
        std::thread::sleep(POLL);
    }
}

/// Stops process groups: SIGTERM, wait up to `grace` for them to go, SIGKILL what is left,
/// wait up to 2 s more. Returns the pids still alive after that (normally none).
pub fn stop_groups(pgids: &[i32], grace: Duration) -> Vec<i32> {
    for &g in pgids {
        if let Err(e) = signal_group(g, libc::SIGTERM) {
            tracing::warn!("SIGTERM to process group {g}: {e}");
        }
    }
    let alive = wait_groups_gone(pgids, grace);
    if alive.is_empty() {
        return Vec::new();
    }
    for &g in &alive {
        tracing::info!("process group {g} still alive after {grace:?}; sending SIGKILL");
        if let Err(e) = signal_group(g, libc::SIGKILL) {
            tracing::warn!("SIGKILL to process group {g}: {e}");
        }
    }
    wait_groups_gone(&alive, Duration::from_secs(2))
        .into_iter()
        .flat_map(group_members)
        .collect()
}

/// "exit code 3", "signal 9 (SIGKILL)": how a process ended, for logs.
pub fn describe_exit(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit code {code}");
    }
    match status.signal() {
        Some(sig) => format!("signal {sig} ({})", signal_name(sig)),
        None => format!("{status}"),
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => "other",
    }
}

#[cfg(test)]
mod tests;

/// Installs `handler` for SIGINT and SIGTERM (with `SA_RESTART`). The handler must be
/// async-signal-safe.
pub fn on_termination_signals(handler: extern "C" fn(libc::c_int)) {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction with a handler and an empty mask is valid; the caller
        // promises the handler is async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            action.sa_flags = libc::SA_RESTART;
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}
