//! Bench files: what a spout or final-bolt task records (counts and a latency histogram) and
//! writes about once a second to `bench/<topology id>/<task id>` in its working directory,
//! and how the driver reads them back.
//!
//! Format, one `key value` per line:
//!
//! ```text
//! component count
//! at-ns 1234567890          # CLOCK_MONOTONIC when the snapshot was taken
//! received 100              # tuples executed (final bolt)
//! emitted 0                 # tuples emitted (spout)
//! acked 0                   # acks (spout)
//! failed 0                  # fails (spout)
//! latency e2e               # e2e (final bolt, from the spout's timestamp) or complete (spout)
//! hist 1023 7               # histogram bucket (highest equivalent value, ns) and its count
//! ```
//!
//! Everything is cumulative since the task started, so the driver subtracts a snapshot taken
//! at the end of the warm-up from the last one.

use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;

/// Nanoseconds on CLOCK_MONOTONIC: comparable between processes of one host (unlike
/// `std::time::Instant`, whose values cannot leave the process).
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Puts the calling thread in `SCHED_IDLE`: it runs only on a CPU nothing else wants. The
/// bench-file writers of all tasks format their histograms at about the same moment each
/// second (a few ms of CPU each); at normal priority that burst delayed the data path and
/// showed as tail latency the topology itself does not have.
fn idle_priority() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param for SCHED_IDLE.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
    if rc != 0 {
        eprintln!(
            "bench: cannot lower the bench-file writer's priority: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// Largest latency recorded (larger values are clamped): one hour, in ns.
const MAX_LATENCY_NS: u64 = 3_600_000_000_000;
const SIGFIG: u8 = 3;
const WRITE_EVERY_NS: u64 = 1_000_000_000;

/// An empty latency histogram (ns, 3 significant figures).
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, SIGFIG).expect("valid histogram bounds")
}

/// The directory of one topology's bench files, relative to the working directory.
pub fn dir_for(topology_id: &str) -> PathBuf {
    Path::new("bench").join(topology_id)
}

/// Which latency a task records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LatencyKind {
    /// Final bolt: now − the spout's timestamp in the tuple.
    EndToEnd,
    /// Spout: ack time − emit time (the timestamp is the message id).
    Complete,
}

impl LatencyKind {
    fn name(self) -> &'static str {
        match self {
            LatencyKind::EndToEnd => "e2e",
            LatencyKind::Complete => "complete",
        }
    }
}

/// A task's counts and latency histogram, written to its bench file.
///
/// The file is formatted and written on a thread of its own: a whole histogram as text takes
/// about a millisecond, and on the task's executor thread that stalled the task once a second
/// (the final bolt's stall showed in the measured tail latency).
pub struct Recorder {
    pub received: u64,
    /// When the first tuple arrived ([`now_ns`]; 0: none yet): what `submit → first tuple`
    /// is measured to.
    first_ns: u64,
    pub emitted: u64,
    pub acked: u64,
    pub failed: u64,
    hist: Histogram<u64>,
    next_write_ns: u64,
    writer: Option<(mpsc::SyncSender<Report>, thread::JoinHandle<()>)>,
}

/// A task's counts and histogram as of `at_ns`, for the writer thread.
struct Report {
    at_ns: u64,
    first_ns: u64,
    received: u64,
    emitted: u64,
    acked: u64,
    failed: u64,
    hist: Histogram<u64>,
}

/// Formats reports into one task's bench file.
struct BenchFile {
    path: PathBuf,
    tmp: PathBuf,
    component: String,
    kind: LatencyKind,
    text: String,
}

impl BenchFile {
    /// Writes the file (atomically: a temp file renamed over it).
    fn write(&mut self, r: &Report) {
        use std::fmt::Write as _;
        let t = &mut self.text;
        t.clear();
        let _ = write!(
            t,
            "component {}\nat-ns {}\nreceived {}\nemitted {}\nacked {}\nfailed {}\nlatency {}\n",
            self.component,
            r.at_ns,
            r.received,
            r.emitted,
            r.acked,
            r.failed,
            self.kind.name()
        );
        if r.first_ns > 0 {
            let _ = writeln!(t, "first-ns {}", r.first_ns);
        }
        for v in r.hist.iter_recorded() {
            let _ = writeln!(t, "hist {} {}", v.value_iterated_to(), v.count_at_value());
        }
        let result = std::fs::File::create(&self.tmp)
            .and_then(|mut f| f.write_all(t.as_bytes()))
            .and_then(|_| std::fs::rename(&self.tmp, &self.path));
        if let Err(e) = result {
            eprintln!("bench: cannot write {}: {e}", self.path.display());
        }
    }
}

impl Recorder {
    /// The recorder of the task `ctx` describes, in its topology's bench directory, with a
    /// first (empty) file written at `now_ns`.
    pub fn for_task(ctx: &heron::TopologyContext, kind: LatencyKind, now_ns: u64) -> Recorder {
        let dir = dir_for(ctx.topology_id());
        let mut rec = Recorder::new(&dir, ctx.component_id(), ctx.task_id(), kind);
        rec.write(now_ns);
        rec
    }

    /// A recorder writing `<dir>/<task>`; `dir` is [`dir_for`] the topology id in the
    /// working directory.
    pub fn new(dir: &Path, component: &str, task: i32, kind: LatencyKind) -> Recorder {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("bench: cannot create {}: {e}", dir.display());
        }
        let mut file = BenchFile {
            path: dir.join(task.to_string()),
            tmp: dir.join(format!(".{task}.tmp")),
            component: component.to_string(),
            kind,
            text: String::new(),
        };
        let (tx, rx) = mpsc::sync_channel::<Report>(2);
        let writer = thread::Builder::new()
            .name("bench-file".into())
            .spawn(move || {
                idle_priority();
                for report in rx {
                    file.write(&report);
                }
            })
            .map_err(|e| eprintln!("bench: cannot start the bench file writer: {e}"))
            .ok()
            .map(|handle| (tx, handle));
        Recorder {
            received: 0,
            first_ns: 0,
            emitted: 0,
            acked: 0,
            failed: 0,
            hist: new_histogram(),
            next_write_ns: 0,
            writer,
        }
    }

    /// Records one latency sample from a timestamp taken by [`now_ns`] at `from_ns`.
    pub fn record_since(&mut self, from_ns: u64, now_ns: u64) {
        self.hist
            .saturating_record(now_ns.saturating_sub(from_ns).max(1));
    }

    /// Counts `n` received tuples; the first ones are timed (a clock read, once).
    pub fn receive(&mut self, n: u64) {
        if self.received == 0 && n > 0 {
            self.first_ns = now_ns();
        }
        self.received += n;
    }

    /// Writes the file if the last write is a second old.
    pub fn maybe_write(&mut self, now_ns: u64) {
        if now_ns >= self.next_write_ns {
            self.write(now_ns);
        }
    }

    /// Hands the counts and a copy of the histogram as of `now_ns` to the writer thread.
    pub fn write(&mut self, now_ns: u64) {
        self.next_write_ns = now_ns + WRITE_EVERY_NS;
        let report = Report {
            at_ns: now_ns,
            first_ns: self.first_ns,
            received: self.received,
            emitted: self.emitted,
            acked: self.acked,
            failed: self.failed,
            hist: self.hist.clone(),
        };
        if let Some((tx, _)) = &self.writer {
            let _ = tx.send(report);
        }
    }
}

impl Drop for Recorder {
    /// Waits for the writer thread to write what it was given.
    fn drop(&mut self) {
        if let Some((tx, handle)) = self.writer.take() {
            drop(tx);
            let _ = handle.join();
        }
    }
}

/// One bench file as read back by the driver.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub component: String,
    pub at_ns: u64,
    /// When the task received its first tuple (0: not yet).
    pub first_ns: u64,
    pub received: u64,
    pub emitted: u64,
    pub acked: u64,
    pub failed: u64,
    /// `e2e` or `complete`.
    pub latency: String,
    /// Histogram buckets: value (ns) → count.
    pub hist: BTreeMap<u64, u64>,
}

impl Snapshot {
    /// Parses a bench file; `None` if it has no timestamp (not a bench file).
    pub fn parse(text: &str) -> Option<Snapshot> {
        let mut s = Snapshot::default();
        for line in text.lines() {
            let mut parts = line.split_whitespace();
            let (Some(key), Some(value)) = (parts.next(), parts.next()) else {
                continue;
            };
            let num = || value.parse::<u64>().ok();
            match key {
                "component" => s.component = value.to_string(),
                "latency" => s.latency = value.to_string(),
                "at-ns" => s.at_ns = num()?,
                "first-ns" => s.first_ns = num()?,
                "received" => s.received = num()?,
                "emitted" => s.emitted = num()?,
                "acked" => s.acked = num()?,
                "failed" => s.failed = num()?,
                "hist" => {
                    let count = parts.next()?.parse::<u64>().ok()?;
                    *s.hist.entry(num()?).or_default() += count;
                }
                _ => {}
            }
        }
        (s.at_ns > 0).then_some(s)
    }

    /// Every bench file of a topology: task id → snapshot (files being written are skipped).
    pub fn read_all(working_dir: &Path, topology_id: &str) -> BTreeMap<i32, Snapshot> {
        let mut out = BTreeMap::new();
        let dir = working_dir.join(dir_for(topology_id));
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let Ok(task) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(text) = std::fs::read_to_string(entry.path()) else {
                continue;
            };
            if let Some(s) = Snapshot::parse(&text) {
                out.insert(task, s);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_file_reads_back() {
        let dir = std::env::temp_dir().join(format!("bench-record-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut r = Recorder::new(&dir.join(dir_for("t-1")), "count", 4, LatencyKind::EndToEnd);
        let before = now_ns();
        r.receive(2);
        r.receive(1);
        let after = now_ns();
        r.record_since(1_000, 11_000);
        r.record_since(1_000, 11_000);
        r.record_since(0, 5_000_000);
        r.write(42);
        drop(r); // waits for the writer thread
        let all = Snapshot::read_all(&dir, "t-1");
        let s = &all[&4];
        assert_eq!(s.component, "count");
        assert_eq!((s.at_ns, s.received, s.latency.as_str()), (42, 3, "e2e"));
        assert_eq!(s.hist.values().sum::<u64>(), 3);
        assert!(
            (before..=after).contains(&s.first_ns),
            "the first receive is timed, later ones are not: {} not in {before}..={after}",
            s.first_ns
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
