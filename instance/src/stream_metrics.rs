//! Heron's per-stream tuple counts of one instance, updated once per flush or socket read
//! through the `metrics` facade (the emitter's own count is one add per emit):
//!
//! * `__emit-count/<stream>`: tuples the component emitted, as the emitter counts them per
//!   stream (`Emitter::stream_emits`), taken when the executor sends the emitter's output;
//! * `__execute-count/<stream>`: data tuples in the `HeronTupleSet2`s the executor reads from
//!   the stream manager (`inbox.rs`).
//!
//! [`StreamMetrics`] is a small `metrics::Recorder` (counters only, each an atomic) used as a
//! local recorder by those threads, so several instances in one process stay apart. Each
//! thread keeps its `Counter` handles per stream, so a batch costs one atomic add. The
//! executor thread's counters-file writer appends [`StreamMetrics::lines`] to the file, which
//! the container's stream manager publishes to the tmaster.
//!
//! Errors the user code reports (`report_error`) are kept here too, folded by message with a
//! count and first/last times ([`report_exception`]), and written next to the counters file
//! as `<instance id>.exceptions` ([`StreamMetrics::exception_lines`]): one line per error,
//! `count first_unix_s last_unix_s message` with `\\` and newlines escaped.

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The counters of one instance.
#[derive(Debug, Default)]
pub struct StreamMetrics {
    counters: Mutex<BTreeMap<String, Arc<AtomicU64>>>,
    /// message → (count, first, last) in unix seconds.
    exceptions: Mutex<BTreeMap<String, (u64, u64, u64)>>,
}

/// Most distinct error messages kept per instance (Heron's tmaster keeps 256 in all).
const MAX_EXCEPTIONS: usize = 64;

impl Recorder for StreamMetrics {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let mut counters = self.counters.lock().unwrap_or_else(|e| e.into_inner());
        let c = counters.entry(key.name().to_string()).or_default().clone();
        Counter::from_arc(c)
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

impl StreamMetrics {
    /// `name value` lines of every counter, sorted.
    pub fn lines(&self) -> String {
        let counters = self.counters.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::new();
        for (name, v) in counters.iter() {
            let _ = writeln!(out, "{name} {}", v.load(Ordering::Relaxed));
        }
        out
    }

    /// Records one reported error at `now` (unix s).
    pub fn exception(&self, message: &str, now: u64) {
        let mut ex = self.exceptions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = ex.get_mut(message) {
            e.0 += 1;
            e.2 = now;
        } else if ex.len() < MAX_EXCEPTIONS {
            ex.insert(message.to_string(), (1, now, now));
        }
    }

    /// The `.exceptions` file's lines (empty when nothing was reported).
    pub fn exception_lines(&self) -> String {
        let ex = self.exceptions.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::new();
        for (msg, (count, first, last)) in ex.iter() {
            let escaped = msg.replace('\\', "\\\\").replace('\n', "\\n");
            let _ = writeln!(out, "{count} {first} {last} {escaped}");
        }
        out
    }
}

/// Records an error reported by user code in the current thread's [`StreamMetrics`].
pub fn report_exception(message: &str) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    if let Some(m) = current() {
        m.exception(message, now);
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<StreamMetrics>>> = const { RefCell::new(None) };
}

/// Makes a fresh [`StreamMetrics`] the current thread's until the guard drops (the instance's
/// main thread, which starts the gateway and runs the executor).
pub fn enter() -> CurrentGuard {
    CURRENT.with(|c| *c.borrow_mut() = Some(Arc::default()));
    CurrentGuard(())
}

/// Resets the current thread's [`StreamMetrics`] on drop.
pub struct CurrentGuard(());

impl Drop for CurrentGuard {
    fn drop(&mut self) {
        CURRENT.with(|c| *c.borrow_mut() = None);
    }
}

/// The current thread's [`StreamMetrics`], if [`enter`] was called.
pub fn current() -> Option<Arc<StreamMetrics>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// One gateway thread's counters of one kind (`emit` or `execute`), by stream.
pub struct StreamCounter {
    metrics: Option<Arc<StreamMetrics>>,
    prefix: &'static str,
    handles: HashMap<String, Counter>,
}

impl StreamCounter {
    /// Counters named `__<kind>-count/<stream>` in `metrics` (none: counts nothing).
    pub fn new(metrics: Option<Arc<StreamMetrics>>, kind: &'static str) -> StreamCounter {
        let prefix = match kind {
            "emit" => "__emit-count/",
            _ => "__execute-count/",
        };
        StreamCounter {
            metrics,
            prefix,
            handles: HashMap::new(),
        }
    }

    /// Adds `n` tuples on `stream`.
    pub fn add(&mut self, stream: &str, n: u64) {
        if let Some(c) = self.counter(stream) {
            c.increment(n);
        }
    }

    /// Raises each stream's counter to its running total (`totals` as the emitter counts
    /// them: cumulative, so a total already reported changes nothing).
    pub fn totals<'s>(&mut self, totals: impl Iterator<Item = (&'s str, u64)>) {
        for (stream, n) in totals {
            if let Some(c) = self.counter(stream) {
                c.absolute(n);
            }
        }
    }

    /// The counter of `stream`, registered on first use (`None`: counting nothing).
    fn counter(&mut self, stream: &str) -> Option<&Counter> {
        let m = self.metrics.as_ref()?;
        if !self.handles.contains_key(stream) {
            let name = format!("{}{stream}", self.prefix);
            let c = metrics::with_local_recorder(&**m, || metrics::counter!(name));
            self.handles.insert(stream.to_string(), c);
        }
        self.handles.get(stream)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_go_to_the_current_metrics() {
        let _guard = enter();
        let m = current().expect("entered");
        let mut emit = StreamCounter::new(current(), "emit");
        let mut exec = StreamCounter::new(current(), "execute");
        emit.totals([("default", 5)].into_iter());
        emit.totals([("default", 10), ("other", 1)].into_iter());
        // a running total already reported (or lower) leaves the counter as it is
        emit.totals([("default", 10)].into_iter());
        exec.add("default", 7);
        exec.add("default", 1);
        assert_eq!(
            m.lines(),
            "__emit-count/default 10\n__emit-count/other 1\n__execute-count/default 8\n"
        );
        report_exception("boom\nat line 2");
        report_exception("boom\nat line 2");
        let lines = m.exception_lines();
        assert!(lines.starts_with("2 "), "{lines}");
        assert!(lines.ends_with(" boom\\nat line 2\n"), "{lines}");
        drop(_guard);
        assert!(current().is_none());
        report_exception("nowhere to go");
    }
}
