//! The driver: submits the bench binary as a real multi-process topology, waits out the
//! warm-up, takes the tasks' bench files as a baseline, runs to the end, takes them again,
//! samples the processes' resource use, kills the topology and works out the figures.

use crate::args::{Options, Reliability, Topology};
use crate::procs::{self, ProcStat};
use crate::record::{new_histogram, now_ns, Snapshot};
use crate::topology::{final_component, SPOUT};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Latency percentiles (µs) of a merged histogram.
#[derive(Clone, Copy, Debug, Default)]
pub struct Latency {
    pub samples: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl Latency {
    pub fn from_buckets(buckets: &BTreeMap<u64, u64>) -> Latency {
        let mut h = new_histogram();
        for (&v, &n) in buckets {
            if n > 0 {
                h.saturating_record_n(v, n);
            }
        }
        if h.is_empty() {
            return Latency::default();
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        Latency {
            samples: h.len(),
            p50_us: us(h.value_at_quantile(0.5)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
        }
    }
}

/// What one run of our topology measured.
#[derive(Clone, Debug)]
pub struct Measured {
    pub topology_name: String,
    /// Seconds between the baseline and the last snapshot (averaged over the tasks).
    pub measured_s: f64,
    /// Tuples executed by the final bolt per second (steady state).
    pub tuples_per_sec: f64,
    pub emitted_per_sec: f64,
    pub acked_per_sec: f64,
    /// Failed tuples (whole run).
    pub failed: u64,
    /// Failed tuples after the warm-up.
    pub failed_steady: u64,
    /// Complete latency (spouts; only with acking).
    pub complete: Latency,
    /// End-to-end latency (final bolts).
    pub end_to_end: Latency,
    /// Whole-run totals from the instances' counters files.
    pub totals: heron::Counters,
    /// The topology's processes just before the kill.
    pub processes: Vec<ProcStat>,
    /// The same at the end of the warm-up.
    pub processes_base: Vec<ProcStat>,
    /// Processes of the topology still alive after the kill (should be none).
    pub processes_left: usize,
    /// Tasks whose bench file was missing at the baseline or the end.
    pub tasks_missing: usize,
    /// Seconds from the submit call to the first tuple any final-bolt task received.
    pub first_tuple_s: Option<f64>,
    /// Seconds the submit call took (it returns once the physical plan is up).
    pub submit_s: f64,
}

impl Measured {
    /// The latency the bench reports: complete latency when acking, else end to end.
    pub fn latency(&self, r: Reliability) -> Latency {
        match r {
            Reliability::AtLeast => self.complete,
            Reliability::AtMost | Reliability::Effectively => self.end_to_end,
        }
    }
}

/// Runs our topology as the options say. `args` are the user arguments every process gets.
pub fn run(opts: &Options, args: &[String], stop: &AtomicBool) -> Result<Measured, String> {
    let submit_ns = now_ns();
    let topology = heron::LocalTopology::submit_self(args).map_err(|e| format!("submit: {e}"))?;
    let submit_s = now_ns().saturating_sub(submit_ns) as f64 / 1e9;
    let id = topology.id().to_string();
    let wd = topology.working_dir().to_path_buf();
    let sessions: Vec<i32> = topology
        .submitted()
        .executors
        .iter()
        .map(|e| e.pid)
        .collect();
    remove_stale_bench_dirs(&wd, &id);
    if !opts.json {
        println!(
            "running {} ({} containers, parallelism {}, {}); warm-up {:?}, then measuring until {:?}",
            topology.name(),
            opts.containers,
            opts.parallelism,
            opts.reliability.name(),
            opts.warmup,
            opts.duration
        );
    }
    let start = Instant::now();
    // a status line a second (not with --json): the last second's figures, from the same
    // bench files the result comes from
    let mut prev = Snapshot::read_all(&wd, &id);
    let mut prev_t = Instant::now();
    let mut progress = |until: Duration| {
        while start.elapsed() < until && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(50));
            if !opts.json && prev_t.elapsed() >= Duration::from_secs(1) {
                let now = Snapshot::read_all(&wd, &id);
                let m = compare(opts.topology, &prev, &now);
                println!(
                    "[{:>3.0}s] spouts emitted {:>10.0}/s  final bolt received {:>10.0}/s  acked {:>10.0}/s  failed {}",
                    start.elapsed().as_secs_f64(),
                    m.emitted_per_sec,
                    m.tuples_per_sec,
                    m.acked_per_sec,
                    m.failed
                );
                (prev, prev_t) = (now, Instant::now());
            }
        }
    };
    progress(opts.warmup);
    let base = Snapshot::read_all(&wd, &id);
    let processes_base = procs::topology_processes(&sessions);
    progress(opts.duration);
    let last = Snapshot::read_all(&wd, &id);
    let totals = topology.counters();
    // resource use just before the kill
    let processes = procs::topology_processes(&sessions);
    let name = topology.name().to_string();
    topology.kill().map_err(|e| format!("kill {name}: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut left = procs::alive_in(&sessions);
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        left = procs::alive_in(&sessions);
    }
    let _ = std::fs::remove_dir_all(wd.join("bench"));
    if stop.load(Ordering::SeqCst) {
        return Err("interrupted".to_string());
    }
    let mut m = compare(opts.topology, &base, &last);
    m.topology_name = name;
    m.totals = totals;
    m.processes = processes;
    m.processes_base = processes_base;
    m.processes_left = left.len();
    m.submit_s = submit_s;
    m.first_tuple_s = first_tuple_after(opts.topology, &last, submit_ns);
    Ok(m)
}

/// Seconds from `submit_ns` to the earliest first tuple of the final bolt's tasks.
fn first_tuple_after(
    topology: Topology,
    snapshots: &BTreeMap<i32, Snapshot>,
    submit_ns: u64,
) -> Option<f64> {
    snapshots
        .values()
        .filter(|s| s.component == final_component(topology) && s.first_ns > 0)
        .map(|s| s.first_ns.saturating_sub(submit_ns) as f64 / 1e9)
        .reduce(f64::min)
}

/// Bench files of earlier topologies with the same working directory are not ours.
fn remove_stale_bench_dirs(wd: &std::path::Path, id: &str) {
    for e in std::fs::read_dir(wd.join("bench"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if e.file_name().to_string_lossy() != id {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Steady-state figures from the baseline and the last snapshots of every task.
fn compare(
    topology: Topology,
    base: &BTreeMap<i32, Snapshot>,
    last: &BTreeMap<i32, Snapshot>,
) -> Measured {
    let final_bolt = final_component(topology);
    let mut m = Measured {
        topology_name: String::new(),
        measured_s: 0.0,
        tuples_per_sec: 0.0,
        emitted_per_sec: 0.0,
        acked_per_sec: 0.0,
        failed: 0,
        failed_steady: 0,
        complete: Latency::default(),
        end_to_end: Latency::default(),
        totals: heron::Counters::default(),
        processes: Vec::new(),
        processes_base: Vec::new(),
        processes_left: 0,
        tasks_missing: 0,
        first_tuple_s: None,
        submit_s: 0.0,
    };
    let mut complete = BTreeMap::new();
    let mut e2e = BTreeMap::new();
    let mut spans = Vec::new();
    for (task, end) in last {
        let is_spout = end.component == SPOUT;
        if is_spout {
            m.failed += end.failed;
        }
        let Some(b) = base.get(task) else {
            m.tasks_missing += 1;
            continue;
        };
        let secs = end.at_ns.saturating_sub(b.at_ns) as f64 / 1e9;
        let per_sec = |now: u64, then: u64| {
            if secs > 0.0 {
                now.saturating_sub(then) as f64 / secs
            } else {
                0.0
            }
        };
        if secs > 0.0 {
            spans.push(secs);
        }
        let into = if is_spout {
            m.emitted_per_sec += per_sec(end.emitted, b.emitted);
            m.acked_per_sec += per_sec(end.acked, b.acked);
            m.failed_steady += end.failed.saturating_sub(b.failed);
            &mut complete
        } else if end.component == final_bolt {
            m.tuples_per_sec += per_sec(end.received, b.received);
            &mut e2e
        } else {
            continue;
        };
        for (&v, &n) in &end.hist {
            let before = b.hist.get(&v).copied().unwrap_or(0);
            *into.entry(v).or_insert(0) += n.saturating_sub(before);
        }
    }
    m.tasks_missing += base.keys().filter(|t| !last.contains_key(t)).count();
    m.measured_s = if spans.is_empty() {
        0.0
    } else {
        spans.iter().sum::<f64>() / spans.len() as f64
    };
    m.complete = Latency::from_buckets(&complete);
    m.end_to_end = Latency::from_buckets(&e2e);
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(
        component: &str,
        at_s: u64,
        received: u64,
        emitted: u64,
        hist: &[(u64, u64)],
    ) -> Snapshot {
        Snapshot {
            component: component.to_string(),
            at_ns: at_s * 1_000_000_000,
            received,
            emitted,
            hist: hist.iter().copied().collect(),
            ..Snapshot::default()
        }
    }

    #[test]
    fn rates_and_latency_are_steady_state_only() {
        let base = BTreeMap::from([
            (1, snap(SPOUT, 3, 0, 300, &[])),
            (3, snap("null", 3, 300, 0, &[(1000, 300)])),
        ]);
        let last = BTreeMap::from([
            (1, snap(SPOUT, 13, 0, 1300, &[])),
            (
                3,
                snap("null", 13, 1300, 0, &[(1000, 300), (2_000_000, 1000)]),
            ),
        ]);
        let m = compare(Topology::ConstNull, &base, &last);
        assert_eq!(m.tuples_per_sec, 100.0);
        assert_eq!(m.emitted_per_sec, 100.0);
        assert_eq!(m.measured_s, 10.0);
        // the warm-up's fast samples are gone
        assert_eq!(m.end_to_end.samples, 1000);
        assert!(
            (m.end_to_end.p50_us - 2000.0).abs() < 2.0,
            "{:?}",
            m.end_to_end
        );
        assert_eq!(m.tasks_missing, 0);
    }

    #[test]
    fn first_tuple_is_the_earliest_final_bolt_task_after_submit() {
        let first = |component: &str, ns: u64| Snapshot {
            first_ns: ns,
            ..snap(component, 1, 1, 0, &[])
        };
        let all = BTreeMap::from([
            (1, first(SPOUT, 1_100_000_000)),
            (3, first("null", 1_900_000_000)),
            (4, first("null", 1_700_000_000)),
            (5, first("null", 0)), // none yet
        ]);
        let s = first_tuple_after(Topology::ConstNull, &all, 1_000_000_000).unwrap();
        assert!((s - 0.7).abs() < 1e-9, "{s}");
        assert_eq!(
            first_tuple_after(Topology::ConstNull, &BTreeMap::new(), 0),
            None
        );
    }
}
