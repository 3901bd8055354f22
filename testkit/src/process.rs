//! A guard that kills the processes a test started, also when the test panics.
//!
//! ```
//! use heron_testkit::process::ProcessGuard;
//! use std::process::Command;
//!
//! let child = Command::new("sleep").arg("30").spawn().unwrap();
//! let pid = child.id() as i32;
//! let mut guard = ProcessGuard::new();
//! guard.child(child);
//! drop(guard); // SIGKILL, then waited for
//! assert!(!heron_testkit::process::alive(pid));
//! ```

use std::process::Child;

/// Kills what it holds when dropped: process groups, single processes and children (which it
/// also waits for). Groups and pids that are our children are reaped if they already exited.
#[derive(Debug, Default)]
pub struct ProcessGuard {
    groups: Vec<i32>,
    pids: Vec<i32>,
    children: Vec<Child>,
}

impl ProcessGuard {
    /// An empty guard.
    pub fn new() -> ProcessGuard {
        ProcessGuard::default()
    }

    /// A guard over the process groups `pgids`.
    pub fn groups(pgids: impl IntoIterator<Item = i32>) -> ProcessGuard {
        let mut guard = ProcessGuard::new();
        guard.groups.extend(pgids);
        guard
    }

    /// Also kills the process group `pgid` (a session leader's pid).
    pub fn group(&mut self, pgid: i32) -> &mut ProcessGuard {
        self.groups.push(pgid);
        self
    }

    /// Also kills the single process `pid`.
    pub fn pid(&mut self, pid: i32) -> &mut ProcessGuard {
        self.pids.push(pid);
        self
    }

    /// Also kills and waits for `child`.
    pub fn child(&mut self, child: Child) -> &mut ProcessGuard {
        self.children.push(child);
        self
    }

    /// The children held, to wait on or inspect.
    pub fn children(&mut self) -> &mut [Child] {
        &mut self.children
    }
}

impl Drop for ProcessGuard {
    fn drop(&mut self) {
        for &g in &self.groups {
            kill_group(g);
            reap(g);
        }
        for &p in &self.pids {
            kill_pid(p);
            reap(p);
        }
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// SIGKILL to the process group `pgid`; `false` if there is no such group. Refuses (returns
/// `false` for) 0 and 1, which would reach this process's group or every process.
pub fn kill_group(pgid: i32) -> bool {
    // SAFETY: kill(2) with a negative pid signals one process group; no memory is involved.
    pgid > 1 && unsafe { libc::kill(-pgid, libc::SIGKILL) } == 0
}

/// SIGKILL to the process `pid`; `false` if there is no such process. Refuses `pid` <= 1.
pub fn kill_pid(pid: i32) -> bool {
    // SAFETY: kill(2) with a positive pid signals one process; no memory is involved.
    pid > 1 && unsafe { libc::kill(pid, libc::SIGKILL) } == 0
}

/// Collects `pid`'s exit status if it is an exited child of this process (no waiting).
pub fn reap(pid: i32) {
    if pid <= 1 {
        return;
    }
    let mut status = 0;
    // SAFETY: waitpid with WNOHANG on one pid; `status` is a valid out pointer.
    unsafe {
        libc::waitpid(pid, &mut status, libc::WNOHANG);
    }
}

/// The kernel id of the calling thread (`/proc/<id>` describes that thread).
pub fn thread_id() -> i32 {
    // SAFETY: gettid(2) has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// The state letter of `pid` (a process or a [`thread_id`]) in `/proc/<pid>/stat` (`R`, `S`,
/// `Z`, ...), `None` if it is gone.
pub fn state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) S ...": comm may hold spaces and parentheses; the state follows the last ')'.
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

/// The parent of `pid` (the field after the state in `/proc/<pid>/stat`), `None` if it is gone.
pub fn parent(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// `true` while `pid` exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    state(pid).is_some_and(|s| s != 'Z')
}

/// Pids of live processes (not zombies) other than this one whose command line or environment
/// contains `needle`.
pub fn processes_mentioning(needle: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    let hit = |b: &[u8]| {
        b.windows(needle.len().max(1))
            .any(|w| w == needle.as_bytes())
    };
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if pid == me {
            continue;
        }
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let env = std::fs::read(e.path().join("environ")).unwrap_or_default();
        if (hit(&cmd) || hit(&env)) && alive(pid) {
            found.push(pid);
        }
    }
    found
}

/// `true` when the process's command line has `flag` directly followed by `value`.
fn has_arg_pair(pid: i32, flag: &[u8], value: &[u8]) -> bool {
    let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let args: Vec<&[u8]> = cmd.split(|b| *b == 0).collect();
    args.windows(2).any(|w| w[0] == flag && w[1] == value)
}

/// Pids, sorted, of the topology processes under the private HOME `home` that run
/// `heron-role <role>` (`tmaster`, `stmgr`, `instance`, ...).
///
/// A child forked by one of them and not yet exec'd (an instance starting a multi-lang
/// subprocess, say) has its parent's command line for a moment; no role runs another process
/// of its own role, so a match whose parent matched too is such a child and is left out.
pub fn role_pids(home: &std::path::Path, role: &str) -> Vec<i32> {
    let mut pids: Vec<i32> = processes_mentioning(&home.to_string_lossy())
        .into_iter()
        .filter(|&pid| has_arg_pair(pid, b"heron-role", role.as_bytes()))
        .collect();
    pids.sort_unstable();
    let matched = pids.clone();
    pids.retain(|&pid| parent(pid).is_none_or(|p| matched.binary_search(&p).is_err()));
    pids
}

/// Pids, sorted, of the instance processes of `component` (`--component-name <component>`)
/// under the private HOME `home`.
pub fn component_pids(home: &std::path::Path, component: &str) -> Vec<i32> {
    role_pids(home, "instance")
        .into_iter()
        .filter(|&pid| has_arg_pair(pid, b"--component-name", component.as_bytes()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    #[test]
    fn refuses_init_and_everyone() {
        assert!(!kill_group(0));
        assert!(!kill_group(1));
        assert!(!kill_pid(1));
        assert!(!kill_pid(-3));
    }

    #[test]
    fn this_process_is_alive_and_in_proc() {
        let me = std::process::id() as i32;
        assert!(alive(me));
        assert_eq!(parent(me), Some(std::os::unix::process::parent_id() as i32));
        assert!(processes_mentioning("\u{0}no such needle\u{0}").is_empty());
    }

    #[test]
    fn dropping_the_guard_kills_a_group() {
        let child = Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let mut guard = ProcessGuard::groups([pid]);
        guard.child(child);
        assert!(alive(pid));
        drop(guard);
        assert!(!alive(pid), "killed and reaped");
    }
}
