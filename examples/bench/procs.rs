//! Per-role resource use of a running topology, from /proc: peak RSS (`VmHWM`), CPU time
//! (`utime + stime`) and context switches (summed over threads) of every process of its
//! executors' sessions (each executor is a session leader, and everything it starts stays in
//! its session).

use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One process of the topology.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcStat {
    pub pid: i32,
    /// The parent's pid.
    pub ppid: i32,
    /// `executor`, `tmaster`, `stmgr`, `instance` (the argument after `heron-role`), or
    /// `python` for a shell component's subprocess (a `*.py` script or `streamparse_run`).
    pub role: String,
    /// An instance's `--component-name`.
    pub component: Option<String>,
    pub peak_rss_kb: u64,
    pub cpu_s: f64,
    /// Context switches of all its threads so far: the thread gave up the CPU (it slept or
    /// waited), and the thread was preempted.
    pub switches: Switches,
}

/// Context switches, voluntary and involuntary.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Switches {
    pub voluntary: u64,
    pub involuntary: u64,
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
            ppid: fields.get(1).and_then(|s| s.parse().ok()).unwrap_or(0),
            component: component_of(&std::fs::read(e.path().join("cmdline")).unwrap_or_default()),
            role,
            peak_rss_kb: vm_hwm_kb(&status).unwrap_or(0),
            cpu_s,
            switches: thread_switches(&e.path()),
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
    let python = args
        .iter()
        .any(|a| a.ends_with(b".py") || a.ends_with(b"streamparse_run"));
    args.windows(2)
        .find(|w| w[0] == b"heron-role")
        .map(|w| String::from_utf8_lossy(w[1]).into_owned())
        .or_else(|| python.then(|| "python".to_string()))
}

fn component_of(cmdline: &[u8]) -> Option<String> {
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    args.windows(2)
        .find(|w| w[0] == b"--component-name")
        .map(|w| String::from_utf8_lossy(w[1]).into_owned())
}

/// The shell components' CPU after `base`: `{"python_cpu_s": their subprocesses',
/// "host_cpu_s": the instances hosting them, "host_per_python": the ratio}` (null without
/// shell components).
pub fn shell_json(procs: &[ProcStat], base: &[ProcStat]) -> Value {
    let steady = |p: &ProcStat| {
        let before = base
            .iter()
            .find(|b| b.pid == p.pid)
            .map_or(0.0, |b| b.cpu_s);
        (p.cpu_s - before).max(0.0)
    };
    let pythons: Vec<&ProcStat> = procs.iter().filter(|p| p.role == "python").collect();
    if pythons.is_empty() {
        return Value::Null;
    }
    let ratio = |host: f64, python: f64| {
        if python > 0.0 {
            round(host / python, 3)
        } else {
            0.0
        }
    };
    let hosts: Vec<&ProcStat> = procs
        .iter()
        .filter(|i| i.role == "instance" && pythons.iter().any(|p| p.ppid == i.pid))
        .collect();
    let python: f64 = pythons.iter().map(|p| steady(p)).sum();
    let host: f64 = hosts.iter().map(|h| steady(h)).sum();
    let mut per = BTreeMap::new();
    for h in &hosts {
        let name = h.component.clone().unwrap_or_default();
        let e = per.entry(name).or_insert((0.0, 0.0));
        e.0 += steady(h);
        e.1 += pythons
            .iter()
            .filter(|p| p.ppid == h.pid)
            .map(|p| steady(p))
            .sum::<f64>();
    }
    let per: serde_json::Map<String, Value> = per
        .into_iter()
        .map(|(c, (h, p))| {
            let v = json!({"host_cpu_s": round(h, 2), "python_cpu_s": round(p, 2), "host_per_python": ratio(h, p)});
            (c, v)
        })
        .collect();
    json!({
        "python_processes": pythons.len(),
        "python_cpu_s": round(python, 2),
        "host_cpu_s": round(host, 2),
        "host_per_python": ratio(host, python),
        "components": per,
    })
}

/// The number after `key` (e.g. `VmHWM:`) in a `/proc/.../status` file.
fn status_number(status: &str, key: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

fn vm_hwm_kb(status: &str) -> Option<u64> {
    status_number(status, "VmHWM:")
}

/// The context switches of every thread of the process at `proc_dir` (`/proc/<pid>`).
fn thread_switches(proc_dir: &std::path::Path) -> Switches {
    let mut total = Switches::default();
    for t in std::fs::read_dir(proc_dir.join("task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        let s = switches(&status);
        total.voluntary += s.voluntary;
        total.involuntary += s.involuntary;
    }
    total
}

/// The `voluntary_ctxt_switches` and `nonvoluntary_ctxt_switches` of a status file.
fn switches(status: &str) -> Switches {
    let field = |key| status_number(status, key).unwrap_or(0);
    Switches {
        voluntary: field("voluntary_ctxt_switches:"),
        involuntary: field("nonvoluntary_ctxt_switches:"),
    }
}

/// `{"<role>": {"processes": n, "peak_rss_mb": max, "cpu_s": sum, "cpu_s_steady": sum,
/// "switches_steady": {"voluntary": n, "involuntary": n}}, ...}`: `cpu_s` is the whole run's,
/// `cpu_s_steady` and `switches_steady` only what happened after `base` was sampled (the end
/// of the warm-up).
pub fn roles_json(procs: &[ProcStat], base: &[ProcStat]) -> Value {
    #[derive(Default)]
    struct Role {
        n: usize,
        kb: u64,
        cpu: f64,
        steady: f64,
        switches: Switches,
    }
    let mut roles: BTreeMap<&str, Role> = BTreeMap::new();
    for p in procs {
        let before = base.iter().find(|b| b.pid == p.pid);
        let r = roles.entry(p.role.as_str()).or_default();
        r.n += 1;
        r.kb = r.kb.max(p.peak_rss_kb);
        r.cpu += p.cpu_s;
        r.steady += (p.cpu_s - before.map_or(0.0, |b| b.cpu_s)).max(0.0);
        let sw = before.map_or(Switches::default(), |b| b.switches);
        r.switches.voluntary += p.switches.voluntary.saturating_sub(sw.voluntary);
        r.switches.involuntary += p.switches.involuntary.saturating_sub(sw.involuntary);
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
                "switches_steady": {
                    "voluntary": r.switches.voluntary,
                    "involuntary": r.switches.involuntary,
                },
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
        assert_eq!(
            switches("voluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n"),
            Switches {
                voluntary: 12,
                involuntary: 3
            }
        );
    }

    #[test]
    fn sums_switches_over_threads_and_subtracts_the_base() {
        // a thread that sleeps makes voluntary switches
        let me = std::path::Path::new("/proc/self");
        let before = thread_switches(me);
        std::thread::spawn(|| {
            for _ in 0..5 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        })
        .join()
        .unwrap();
        // the sleeper has exited; the main thread waited for it at least once
        let after = thread_switches(me);
        assert!(after.voluntary > before.voluntary, "{before:?} {after:?}");

        let at = |cpu_s, voluntary| ProcStat {
            pid: 7,
            ppid: 1,
            role: "stmgr".into(),
            component: None,
            peak_rss_kb: 1024,
            cpu_s,
            switches: Switches {
                voluntary,
                involuntary: 1,
            },
        };
        let roles = roles_json(&[at(3.0, 110)], &[at(1.0, 10)]);
        assert_eq!(roles["stmgr"]["cpu_s_steady"], 2.0);
        assert_eq!(roles["stmgr"]["switches_steady"]["voluntary"], 100);
        assert_eq!(roles["stmgr"]["switches_steady"]["involuntary"], 0);
    }

    #[test]
    fn shell_cpu_pairs_each_python_subprocess_with_its_instance() {
        let p = |pid, ppid, role: &str, cpu_s| ProcStat {
            pid,
            ppid,
            role: role.into(),
            component: (role == "instance").then(|| "split".to_string()),
            peak_rss_kb: 0,
            cpu_s,
            switches: Switches::default(),
        };
        assert_eq!(
            role_of(b"python3\0/x/split.py\0").as_deref(),
            Some("python")
        );
        assert_eq!(
            role_of(b"bin/heron\0heron-role\0instance\0").as_deref(),
            Some("instance")
        );
        assert_eq!(role_of(b"sleep\0"), None);
        let now = [
            p(10, 1, "instance", 3.0),
            p(11, 10, "python", 9.0),
            p(20, 1, "instance", 50.0), // hosts no shell component
        ];
        let base = [p(10, 1, "instance", 1.0), p(11, 10, "python", 1.0)];
        let v = shell_json(&now, &base);
        assert_eq!(v["python_cpu_s"], 8.0);
        assert_eq!(v["host_cpu_s"], 2.0);
        assert_eq!(v["host_per_python"], 0.25);
        assert_eq!(v["components"]["split"]["host_per_python"], 0.25);
        assert_eq!(
            component_of(b"x\0heron-role\0instance\0--component-name\0count\0").as_deref(),
            Some("count")
        );
        assert!(shell_json(&now[2..], &[]).is_null());
    }
}
