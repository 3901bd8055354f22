//! The figures of the tracker page's tables (pure): Storm UI's per-window columns for one
//! task, from the metrics its stream manager published, and their roll-up per component.
//!
//! Storm's **capacity** is the fraction of the window a task spent executing, with the
//! window cut to the task's uptime. Ours is measured: the time in `execute` the stream
//! manager publishes (`__execute-time-ns/<stream>`) over the window; without it, Storm's
//! estimate `executed × execute latency / window`. A bolt near 1 is the bottleneck; a spout
//! has none.

use serde::Serialize;
use std::collections::BTreeMap;

/// Metric name → value, for one task over one window (the tmaster's answer).
pub type TaskMetrics = BTreeMap<String, f64>;

/// One row's figures over one window.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Figures {
    /// Tuples emitted.
    pub emitted: f64,
    /// Tuple copies sent to other tasks (emitted × the consumers of each stream).
    pub transferred: f64,
    /// Tuples executed (bolts).
    pub executed: f64,
    /// Tuples acked (a spout's trees; a bolt's inputs).
    pub acked: f64,
    /// Tuples failed.
    pub failed: f64,
    /// Mean complete latency of a spout's trees, ms.
    pub complete_latency_ms: Option<f64>,
    /// Mean time in `execute`, ms (bolts).
    pub execute_latency_ms: Option<f64>,
    /// Mean time from arrival to ack, ms (bolts).
    pub process_latency_ms: Option<f64>,
    /// Fraction of the window spent executing (bolts).
    pub capacity: Option<f64>,
    /// Time the task's stream-manager connection was over the high watermark (it caused back
    /// pressure), ms.
    pub backpressure_ms: f64,
    /// CPU time of the task's process, ms.
    pub cpu_ms: f64,
}

fn sum(m: &TaskMetrics, prefix: &str) -> f64 {
    m.iter()
        .filter(|(k, _)| k.starts_with(prefix))
        .map(|(_, v)| *v)
        .sum()
}

/// The mean of the `latency` metrics (ns, one per stream) weighted by the `weight` metric of
/// the same stream (all weights 1 when none is known), in ms.
fn latency_ms(m: &TaskMetrics, latency: &str, weight: &str) -> Option<f64> {
    let (mut total, mut weights, mut plain, mut n) = (0.0, 0.0, 0.0, 0.0);
    for (k, v) in m.iter().filter(|(k, _)| k.starts_with(latency)) {
        let stream = &k[latency.len()..];
        let w = m.get(&format!("{weight}{stream}")).copied().unwrap_or(0.0);
        total += v * w;
        weights += w;
        plain += v;
        n += 1.0;
    }
    if n == 0.0 {
        return None;
    }
    let ns = if weights > 0.0 {
        total / weights
    } else {
        plain / n
    };
    Some(ns / 1e6)
}

/// A task's figures from its metrics `m` over a window of `window_secs` (`None`: all time),
/// given how many tasks receive each tuple of each of its streams (`fanout`, stream → copies;
/// streams not listed count once) and the seconds its process has been up.
///
/// ```
/// use heron_tracker::figures::{task_figures, TaskMetrics};
/// let m: TaskMetrics = [("__execute-count/default".to_string(), 30_000.0),
///     ("__execute-latency/default".to_string(), 1_500_000.0),
///     ("__execute-time-ns/default".to_string(), 54.9e9)].into();
/// let f = task_figures(&m, Some(60.0), None, &Default::default(), false);
/// assert_eq!(f.capacity, Some(0.9)); // 54.9 s executing in 60 s (+ the current second)
/// ```
pub fn task_figures(
    m: &TaskMetrics,
    window_secs: Option<f64>,
    uptime_secs: Option<f64>,
    fanout: &BTreeMap<String, f64>,
    spout: bool,
) -> Figures {
    let emitted = sum(m, "__emit-count/");
    let transferred = m
        .iter()
        .filter_map(|(k, v)| {
            let stream = k.strip_prefix("__emit-count/")?;
            Some(v * fanout.get(stream).copied().unwrap_or(1.0))
        })
        .sum();
    let executed = sum(m, "__execute-count/");
    let execute_latency_ms = if spout {
        None
    } else {
        latency_ms(m, "__execute-latency/", "__execute-count/")
    };
    let seconds = match (window_secs, uptime_secs) {
        (Some(w), Some(u)) => w.min(u),
        (Some(w), None) => w,
        (None, u) => u.unwrap_or(0.0),
    };
    let busy_ms = if m.keys().any(|k| k.starts_with("__execute-time-ns/")) {
        Some(sum(m, "__execute-time-ns/") / 1e6)
    } else {
        execute_latency_ms.map(|ms| executed * ms)
    };
    // The window's buckets include the current second, and the uptime gauge is up to one
    // publication old: one more second in the denominator.
    let capacity = match busy_ms {
        _ if spout => None,
        Some(ms) if seconds > 0.0 => Some(ms / ((seconds + 1.0) * 1000.0)),
        _ => Some(0.0),
    };
    Figures {
        emitted,
        transferred,
        executed,
        acked: sum(m, "__ack-count/"),
        failed: sum(m, "__fail-count/"),
        complete_latency_ms: if spout {
            latency_ms(m, "__complete-latency/", "__ack-count/")
        } else {
            None
        },
        execute_latency_ms,
        process_latency_ms: if spout {
            None
        } else {
            latency_ms(m, "__process-latency/", "__ack-count/")
        },
        capacity,
        backpressure_ms: 0.0,
        cpu_ms: m.get("__cpu-time-ms").copied().unwrap_or(0.0),
    }
}

/// A component's figures from its tasks': counts and times add up, latencies are the mean
/// weighted by the count they measure, capacity is the busiest task's (Storm's).
pub fn component_figures<'a>(tasks: impl IntoIterator<Item = &'a Figures>) -> Figures {
    let mut out = Figures::default();
    let (mut complete, mut execute, mut process) = ((0.0, 0.0), (0.0, 0.0), (0.0, 0.0));
    let weigh = |acc: &mut (f64, f64), v: Option<f64>, w: f64| {
        if let Some(v) = v {
            let w = if w > 0.0 { w } else { 1e-9 };
            acc.0 += v * w;
            acc.1 += w;
        }
    };
    for t in tasks {
        out.emitted += t.emitted;
        out.transferred += t.transferred;
        out.executed += t.executed;
        out.acked += t.acked;
        out.failed += t.failed;
        out.backpressure_ms += t.backpressure_ms;
        out.cpu_ms += t.cpu_ms;
        weigh(&mut complete, t.complete_latency_ms, t.acked);
        weigh(&mut execute, t.execute_latency_ms, t.executed);
        weigh(&mut process, t.process_latency_ms, t.acked);
        out.capacity = match (out.capacity, t.capacity) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
    let mean = |(s, w): (f64, f64)| (w > 0.0).then(|| s / w);
    out.complete_latency_ms = mean(complete);
    out.execute_latency_ms = mean(execute);
    out.process_latency_ms = mean(process);
    out
}

/// Which components cause back pressure over a window of `window_ms`, from each one's time
/// in it: those over 10 % of the window and at least half the worst one's. A saturated
/// topology has short bursts of back pressure at many components; the one that holds it most
/// of the time is the bottleneck.
///
/// ```
/// use heron_tracker::figures::causes;
/// let times = [("split", 2_000.0), ("count", 50_000.0), ("sentence", 0.0)];
/// assert_eq!(causes(times.iter().map(|(c, t)| (*c, *t)), 60_000.0), ["count"]);
/// ```
pub fn causes<'a>(times: impl IntoIterator<Item = (&'a str, f64)>, window_ms: f64) -> Vec<&'a str> {
    let times: Vec<(&str, f64)> = times.into_iter().collect();
    let worst = times.iter().map(|(_, t)| *t).fold(0.0, f64::max);
    let mut out: Vec<&str> = times
        .into_iter()
        .filter(|(_, t)| *t > 0.1 * window_ms && *t >= 0.5 * worst)
        .map(|(c, _)| c)
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pairs: &[(&str, f64)]) -> TaskMetrics {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn a_bolt_s_figures_over_a_window() {
        let t = m(&[
            ("__emit-count/default", 100.0),
            ("__execute-count/a", 300.0),
            ("__execute-count/b", 100.0),
            ("__execute-latency/a", 1e6),
            ("__execute-latency/b", 5e6),
            ("__ack-count/a", 300.0),
            ("__process-latency/a", 2e6),
            ("__cpu-time-ms", 250.0),
        ]);
        let fanout = [("default".to_string(), 3.0)].into();
        let f = task_figures(&t, Some(9.0), Some(100.0), &fanout, false);
        assert_eq!(f.emitted, 100.0);
        assert_eq!(f.transferred, 300.0);
        assert_eq!(f.executed, 400.0);
        assert_eq!(
            f.execute_latency_ms,
            Some(2.0),
            "weighted: (300×1 + 100×5)/400"
        );
        assert_eq!(f.process_latency_ms, Some(2.0));
        assert_eq!(f.complete_latency_ms, None);
        assert_eq!(f.capacity, Some(0.08), "estimated: 400 × 2 ms / (9 + 1) s");
        assert_eq!(f.cpu_ms, 250.0);
        // a task up for 5 s of a 10-s window
        let young = task_figures(&t, Some(10.0), Some(4.0), &fanout, false);
        assert_eq!(young.capacity, Some(0.16));
        // measured time in execute wins over the estimate
        let mut measured = t.clone();
        measured.insert("__execute-time-ns/a".into(), 6e9);
        measured.insert("__execute-time-ns/b".into(), 3e9);
        let f = task_figures(&measured, Some(9.0), None, &fanout, false);
        assert_eq!(f.capacity, Some(0.9));
    }

    #[test]
    fn a_spout_has_complete_latency_and_no_capacity() {
        let t = m(&[
            ("__emit-count/default", 10.0),
            ("__ack-count/default", 8.0),
            ("__complete-latency/default", 3e6),
        ]);
        let f = task_figures(&t, None, Some(20.0), &BTreeMap::new(), true);
        assert_eq!(f.complete_latency_ms, Some(3.0));
        assert_eq!((f.capacity, f.execute_latency_ms), (None, None));
        let idle = task_figures(&m(&[]), Some(60.0), None, &BTreeMap::new(), false);
        assert_eq!(idle.capacity, Some(0.0), "an idle bolt");
    }

    #[test]
    fn components_add_counts_weigh_latencies_and_take_the_busiest_capacity() {
        let a = Figures {
            executed: 300.0,
            execute_latency_ms: Some(1.0),
            capacity: Some(0.2),
            backpressure_ms: 10.0,
            ..Figures::default()
        };
        let b = Figures {
            executed: 100.0,
            execute_latency_ms: Some(5.0),
            capacity: Some(0.9),
            backpressure_ms: 5.0,
            ..Figures::default()
        };
        let c = component_figures([&a, &b]);
        assert_eq!(c.executed, 400.0);
        assert_eq!(c.execute_latency_ms, Some(2.0));
        assert_eq!(c.capacity, Some(0.9));
        assert_eq!(c.backpressure_ms, 15.0);
        assert_eq!(c.complete_latency_ms, None);
    }

    #[test]
    fn back_pressure_goes_to_the_component_that_holds_it() {
        let window = 60_000.0;
        assert!(causes([("a", 0.0), ("b", 0.0)], window).is_empty());
        assert_eq!(
            causes([("a", 5_000.0), ("b", 40_000.0)], window),
            ["b"],
            "short bursts elsewhere"
        );
        assert_eq!(
            causes([("a", 30_000.0), ("b", 40_000.0)], window),
            ["a", "b"]
        );
        assert!(causes([("a", 3_000.0)], window).is_empty(), "under 10 %");
    }
}
