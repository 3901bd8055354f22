//! The counters file (docs/internals.md): `<metrics_dir>/<instance id>` with one
//! `key value` line per counter, replaced atomically about once a second.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use heron_api::{Emitter, EmitterCounters, StreamTally};

/// Writes `counters` to `<dir>/<instance_id>` atomically (a temporary file renamed over it),
/// creating `dir` if needed. Lines: `emitted N`, `executed N`, `acked N`, `failed N`.
pub fn write_counters(dir: &Path, instance_id: &str, counters: &EmitterCounters) -> io::Result<()> {
    write_counters_with(dir, instance_id, counters, "")
}

/// [`write_counters`], then `extra` (more `key value` lines, e.g. per-stream counts).
fn write_counters_with(
    dir: &Path,
    instance_id: &str,
    counters: &EmitterCounters,
    extra: &str,
) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{instance_id}.tmp"));
    let text = format!(
        "emitted {}\nexecuted {}\nacked {}\nfailed {}\n{extra}",
        counters.emitted, counters.executed, counters.acked, counters.failed
    );
    fs::write(&tmp, text)?;
    fs::rename(&tmp, dir.join(instance_id))
}

/// Reads a counters file written by [`write_counters`] (unknown lines are ignored, missing
/// counters are 0).
pub fn read_counters(path: &Path) -> io::Result<EmitterCounters> {
    let text = fs::read_to_string(path)?;
    let mut c = EmitterCounters::default();
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        let (Some(key), Some(value)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Ok(n) = value.parse::<u64>() else {
            continue;
        };
        match key {
            "emitted" => c.emitted = n,
            "executed" => c.executed = n,
            "acked" => c.acked = n,
            "failed" => c.failed = n,
            _ => {}
        }
    }
    Ok(c)
}

/// Appends the per-stream lines of `tallies`: `__ack-count/<stream> N`,
/// `__fail-count/<stream> N`, and for each latency (ns, Heron's unit) its cumulative sum and
/// count as `sum:<metric>/<stream> NS` and `count:<metric>/<stream> N`, from which the stream
/// manager publishes the interval's average. Spouts: `__complete-latency`; bolts:
/// `__execute-latency` and `__process-latency`.
pub fn tally_lines<'a>(
    out: &mut String,
    tallies: impl Iterator<Item = (&'a str, &'a StreamTally)>,
    spout: bool,
) {
    use std::fmt::Write;
    for (s, t) in tallies {
        let _ = writeln!(out, "__ack-count/{s} {}", t.acked);
        let _ = writeln!(out, "__fail-count/{s} {}", t.failed);
        let mut latency = |name: &str, sum: u64, n: u64| {
            let _ = writeln!(out, "sum:{name}/{s} {sum}\ncount:{name}/{s} {n}");
        };
        if spout {
            latency("__complete-latency", t.latency_ns, t.latency_count);
        } else {
            latency("__execute-latency", t.execute_ns, t.execute_count);
            latency("__process-latency", t.latency_ns, t.latency_count);
        }
    }
}

/// Writes the counters file when it is due.
pub(crate) struct MetricsWriter {
    dir: Option<PathBuf>,
    instance_id: String,
    interval: Duration,
    next: Instant,
    warned: bool,
    /// The gateway's per-stream counts (see `stream_metrics`), appended to the file.
    streams: Option<std::sync::Arc<crate::stream_metrics::StreamMetrics>>,
    /// Complete latencies (emit to ack) of this spout's tuples, in microseconds.
    complete_latency: Option<hdrhistogram::Histogram<u64>>,
    /// Whether the task is a spout (per-stream lines of output streams) or a bolt (of input
    /// streams).
    spout: bool,
    /// `EFFECTIVELY_ONCE`: states saved and restores done (`checkpoints-saved`, `restores`).
    stateful: Option<(u64, u64)>,
    /// A spout's topology state as it last applied it (`active 1` or `active 0`).
    active: Option<bool>,
    /// The process's CPU time, memory and restarts.
    process: crate::process_stats::ProcessStats,
}

impl MetricsWriter {
    pub fn new(dir: Option<PathBuf>, instance_id: &str, interval: Duration, spout: bool) -> Self {
        MetricsWriter {
            instance_id: instance_id.to_owned(),
            interval,
            next: Instant::now(),
            warned: false,
            streams: crate::stream_metrics::current(),
            complete_latency: None,
            spout,
            stateful: None,
            active: None,
            process: crate::process_stats::ProcessStats::new(
                dir.as_ref().map(|d| d.join(instance_id)).as_deref(),
            ),
            dir,
        }
    }

    /// Sets whether the spout is active (calls `next_tuple`), written as `active 1|0`.
    pub fn set_active(&mut self, active: bool) {
        self.active = Some(active);
    }

    /// Sets the stateful counters written with the others.
    pub fn set_stateful(&mut self, saved: u64, restores: u64) {
        self.stateful = Some((saved, restores));
    }

    /// Records one acked tuple's complete latency (no allocation after the first call).
    pub fn record_complete_latency(&mut self, latency: Duration) {
        let h = self.complete_latency.get_or_insert_with(|| {
            hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000, 3)
                .expect("valid histogram bounds")
        });
        h.saturating_record(
            u64::try_from(latency.as_micros())
                .unwrap_or(u64::MAX)
                .max(1),
        );
    }

    /// `complete-latency-*` lines for the counters file: count, p50, p99, max (µs).
    fn latency_lines(&self) -> String {
        match &self.complete_latency {
            Some(h) if !h.is_empty() => format!(
                "complete-latency-count {}\ncomplete-latency-p50-us {}\ncomplete-latency-p99-us {}\ncomplete-latency-max-us {}\n",
                h.len(),
                h.value_at_quantile(0.5),
                h.value_at_quantile(0.99),
                h.max()
            ),
            _ => String::new(),
        }
    }

    /// When the next write is due.
    pub fn next_due(&self) -> Instant {
        self.next
    }

    /// Writes if due.
    pub fn maybe_write(&mut self, now: Instant, emitter: &Emitter) {
        if now >= self.next {
            self.write_now(emitter);
            self.next = now + self.interval;
        }
    }

    /// Writes now (a failure is logged once).
    pub fn write_now(&mut self, emitter: &Emitter) {
        let Some(dir) = &self.dir else { return };
        let counters = emitter.counters();
        let mut extra = self.streams.as_ref().map(|s| s.lines()).unwrap_or_default();
        if self.spout {
            tally_lines(&mut extra, emitter.output_tallies(), true);
        } else {
            tally_lines(&mut extra, emitter.input_tallies(), false);
        }
        extra.push_str(&self.latency_lines());
        self.process.lines(&mut extra);
        if let Some(active) = self.active {
            extra.push_str(if active { "active 1\n" } else { "active 0\n" });
        }
        if let Some((saved, restores)) = self.stateful {
            extra.push_str(&format!("checkpoints-saved {saved}\nrestores {restores}\n"));
        }
        let exceptions = self
            .streams
            .as_ref()
            .map(|s| s.exception_lines())
            .unwrap_or_default();
        let written =
            write_counters_with(dir, &self.instance_id, &counters, &extra).and_then(|()| {
                if exceptions.is_empty() {
                    return Ok(());
                }
                let tmp = dir.join(format!(".{}.exceptions.tmp", self.instance_id));
                fs::write(&tmp, exceptions)?;
                fs::rename(&tmp, dir.join(format!("{}.exceptions", self.instance_id)))
            });
        if let Err(e) = written {
            if !self.warned {
                tracing::warn!(dir = %dir.display(), error = %e, "cannot write the counters file");
                self.warned = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heron_api::{Fields, ReliabilityMode, StreamDecl};

    fn emitter() -> Emitter {
        let decl = StreamDecl {
            id: "marks".into(),
            fields: Fields::new(["x"]),
            direct: false,
        };
        Emitter::new("c", 1, ReliabilityMode::AtMostOnce, &[decl])
    }

    #[test]
    fn per_stream_tally_lines() {
        let t = StreamTally {
            acked: 3,
            failed: 1,
            latency_ns: 900,
            latency_count: 3,
            execute_ns: 50,
            execute_count: 5,
        };
        let mut spout = String::new();
        tally_lines(&mut spout, [("marks", &t)].into_iter(), true);
        assert_eq!(
            spout,
            "__ack-count/marks 3\n__fail-count/marks 1\n\
             sum:__complete-latency/marks 900\ncount:__complete-latency/marks 3\n"
        );
        let mut bolt = String::new();
        tally_lines(&mut bolt, [("words", &t)].into_iter(), false);
        assert_eq!(
            bolt,
            "__ack-count/words 3\n__fail-count/words 1\n\
             sum:__execute-latency/words 50\ncount:__execute-latency/words 5\n\
             sum:__process-latency/words 900\ncount:__process-latency/words 3\n"
        );
    }

    #[test]
    fn write_then_read() {
        let dir =
            std::env::temp_dir().join(format!("heron-instance-metrics-{}", std::process::id()));
        let c = EmitterCounters {
            emitted: 5,
            executed: 4,
            acked: 3,
            failed: 2,
        };
        write_counters(&dir, "container_1_split_3", &c).unwrap();
        let text = fs::read_to_string(dir.join("container_1_split_3")).unwrap();
        assert_eq!(text, "emitted 5\nexecuted 4\nacked 3\nfailed 2\n");
        assert_eq!(read_counters(&dir.join("container_1_split_3")).unwrap(), c);
        assert!(
            !dir.join(".container_1_split_3.tmp").exists(),
            "renamed into place"
        );
        let mut w = MetricsWriter::new(Some(dir.clone()), "x", Duration::from_secs(3600), false);
        let now = Instant::now();
        let e = emitter();
        w.maybe_write(now, &e);
        assert!(dir.join("x").exists());
        fs::remove_file(dir.join("x")).unwrap();
        w.maybe_write(now, &e);
        assert!(!dir.join("x").exists(), "not due again yet");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn complete_latency_percentiles_are_written() {
        let dir =
            std::env::temp_dir().join(format!("heron-instance-latency-{}", std::process::id()));
        let mut w = MetricsWriter::new(Some(dir.clone()), "s", Duration::from_secs(3600), true);
        w.write_now(&emitter());
        let text = fs::read_to_string(dir.join("s")).unwrap();
        assert!(
            !text.contains("complete-latency-p50"),
            "no line before any ack"
        );
        for ms in 1..=100u64 {
            w.record_complete_latency(Duration::from_millis(ms));
        }
        w.write_now(&emitter());
        let text = fs::read_to_string(dir.join("s")).unwrap();
        let value = |key: &str| -> u64 {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
                .unwrap_or_else(|| panic!("{key} missing in {text}"))
        };
        assert_eq!(value("complete-latency-count "), 100);
        let p50 = value("complete-latency-p50-us ");
        let p99 = value("complete-latency-p99-us ");
        assert!((49_000..=51_000).contains(&p50), "p50 {p50}");
        assert!((98_000..=100_100).contains(&p99), "p99 {p99}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
