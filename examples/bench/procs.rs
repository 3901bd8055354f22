//! Per-role resource use of a running topology, from /proc: peak RSS (`VmHWM`) and CPU time
//! (`utime + stime`) of every process of its executors' sessions (each executor is a session
//! leader, and everything it starts stays in its session).

use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One process of the topology.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcStat {
    pub pid: i32,
    /// `executor`, `tmaster`, `stmgr`, `instance` (the argument after `heron-role`).
    pub role: String,
    pub peak_rss_kb: u64,
    pub cpu_s: f64,
}

/// The processes in any of these sessions that run a `heron-role`.
pub fn topology_processes(sessions: &[i32]) -> Vec<ProcStat> {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let Some(fields) = stat_fields(&stat) else {
            continue;
        };
        // after "pid (comm) ": state ppid pgrp session ... utime(11) stime(12)
        let session = fields.get(3).and_then(|s| s.parse::<i32>().ok());
        if !session.is_some_and(|s| sessions.contains(&s)) || fields[0] == "Z" {
            continue;
        }
        let Some(role) = role_of(&std::fs::read(e.path().join("cmdline")).unwrap_or_default())
        else {
            continue;
        };
        let tick = |i: usize| {
            fields
                .get(i)
                .and_then(|s| s.parse::<u64>().ok())
                .unwrap_or(0)
        };
        let cpu_s = (tick(11) + tick(12)) as f64 / ticks;
        let status = std::fs::read_to_string(e.path().join("status")).unwrap_or_default();
        out.push(ProcStat {
            pid,
            role,
            peak_rss_kb: vm_hwm_kb(&status).unwrap_or(0),
            cpu_s,
        });
    }
    out.sort_by_key(|p| p.pid);
    out
}

/// Pids of the processes still alive (not zombies) in these sessions.
pub fn alive_in(sessions: &[i32]) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        if let Some(f) = stat_fields(&stat) {
            let in_session = f.get(3).and_then(|s| s.parse::<i32>().ok());
            if in_session.is_some_and(|s| sessions.contains(&s)) && f[0] != "Z" {
                out.push(pid);
            }
        }
    }
    out
}

/// The fields of /proc/<pid>/stat after the command name (which may hold spaces).
fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    (f.len() > 12).then_some(f)
}

fn role_of(cmdline: &[u8]) -> Option<String> {
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    args.windows(2)
        .find(|w| w[0] == b"heron-role")
        .map(|w| String::from_utf8_lossy(w[1]).into_owned())
}

fn vm_hwm_kb(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// `{"<role>": {"processes": n, "peak_rss_mb": max, "cpu_s": sum, "cpu_s_steady": sum},
/// ...}`: `cpu_s` is the whole run's, `cpu_s_steady` only what was spent after `base` was
/// sampled (the end of the warm-up).
pub fn roles_json(procs: &[ProcStat], base: &[ProcStat]) -> Value {
    #[derive(Default)]
    struct Role {
        n: usize,
        kb: u64,
        cpu: f64,
        steady: f64,
    }
    let mut roles: BTreeMap<&str, Role> = BTreeMap::new();
    for p in procs {
        let before = base
            .iter()
            .find(|b| b.pid == p.pid)
            .map_or(0.0, |b| b.cpu_s);
        let r = roles.entry(p.role.as_str()).or_default();
        r.n += 1;
        r.kb = r.kb.max(p.peak_rss_kb);
        r.cpu += p.cpu_s;
        r.steady += (p.cpu_s - before).max(0.0);
    }
    let mut out = serde_json::Map::new();
    for (role, r) in roles {
        out.insert(
            role.to_string(),
            json!({
                "processes": r.n,
                "peak_rss_mb": round(r.kb as f64 / 1024.0, 1),
                "cpu_s": round(r.cpu, 2),
                "cpu_s_steady": round(r.steady, 2),
            }),
        );
    }
    Value::Object(out)
}

/// `x` rounded to `digits` decimals.
pub fn round(x: f64, digits: i32) -> f64 {
    let m = 10f64.powi(digits);
    (x * m).round() / m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_status_and_cmdline() {
        let stat = "123 (my (odd) name) S 1 123 123 0 -1 4194560 0 0 0 0 250 50 0 0";
        let f = stat_fields(stat).unwrap();
        assert_eq!((f[0], f[3], f[11], f[12]), ("S", "123", "250", "50"));
        assert_eq!(vm_hwm_kb("Name:\tx\nVmHWM:\t   2048 kB\n"), Some(2048));
        assert_eq!(
            role_of(b"/bin/bench\0heron-role\0stmgr\0--x\0"),
            Some("stmgr".to_string())
        );
        assert_eq!(role_of(b"/bin/bench\0--json\0"), None);
        // this process is in its own session; it has a VmHWM
        let me = std::fs::read_to_string("/proc/self/status").unwrap();
        assert!(vm_hwm_kb(&me).unwrap() > 0);
    }
}
