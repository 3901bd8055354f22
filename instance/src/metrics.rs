//! The counters file (docs/internals.md): `<metrics_dir>/<instance id>` with one
//! `key value` line per counter, replaced atomically about once a second.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use heron_api::EmitterCounters;

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

/// Writes the counters file when it is due.
pub(crate) struct MetricsWriter {
    dir: Option<PathBuf>,
    instance_id: String,
    interval: Duration,
    next: Instant,
    warned: bool,
    /// The gateway's per-stream counts (see `stream_metrics`), appended to the file.
    streams: Option<std::sync::Arc<crate::stream_metrics::StreamMetrics>>,
}

impl MetricsWriter {
    pub fn new(dir: Option<PathBuf>, instance_id: &str, interval: Duration) -> Self {
        MetricsWriter {
            dir,
            instance_id: instance_id.to_owned(),
            interval,
            next: Instant::now(),
            warned: false,
            streams: crate::stream_metrics::current(),
        }
    }

    /// When the next write is due.
    pub fn next_due(&self) -> Instant {
        self.next
    }

    /// Writes if due.
    pub fn maybe_write(&mut self, now: Instant, counters: &EmitterCounters) {
        if now >= self.next {
            self.write_now(counters);
            self.next = now + self.interval;
        }
    }

    /// Writes now (a failure is logged once).
    pub fn write_now(&mut self, counters: &EmitterCounters) {
        let Some(dir) = &self.dir else { return };
        let extra = self.streams.as_ref().map(|s| s.lines()).unwrap_or_default();
        let exceptions = self
            .streams
            .as_ref()
            .map(|s| s.exception_lines())
            .unwrap_or_default();
        let written =
            write_counters_with(dir, &self.instance_id, counters, &extra).and_then(|()| {
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
        let mut w = MetricsWriter::new(Some(dir.clone()), "x", Duration::from_secs(3600));
        let now = Instant::now();
        w.maybe_write(now, &c);
        assert!(dir.join("x").exists());
        fs::remove_file(dir.join("x")).unwrap();
        w.maybe_write(now, &c);
        assert!(!dir.join("x").exists(), "not due again yet");
        fs::remove_dir_all(&dir).unwrap();
    }
}
