//! Heron's per-stream tuple counts of one instance, counted on the gateway threads (never on
//! the executor's hot path) through the `metrics` facade:
//!
//! * `__emit-count/<stream>`: data tuples in the `HeronTupleSet`s the writer thread sends,
//!   read from the frames' headers (stream id and tuple count; the tuples are not decoded);
//! * `__execute-count/<stream>`: data tuples in the `HeronTupleSet2`s the reader thread hands
//!   to the executor.
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

/// The type name of the instance → stmgr tuple sets.
const TUPLE_SET: &[u8] = b"heron.proto.system.HeronTupleSet";

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
        let Some(m) = &self.metrics else { return };
        if let Some(c) = self.handles.get(stream) {
            c.increment(n);
            return;
        }
        let name = format!("{}{stream}", self.prefix);
        let c = metrics::with_local_recorder(&**m, || metrics::counter!(name));
        c.increment(n);
        self.handles.insert(stream.to_string(), c);
    }

    /// Counts the data tuple sets in `frames` (framed Heron packets, as the writer sends them).
    pub fn add_frames(&mut self, frames: &[u8]) {
        if self.metrics.is_none() {
            return;
        }
        for_each_data_set(frames, |stream, n| self.add(stream, n));
    }
}

fn read_u32(b: &[u8], at: usize) -> Option<usize> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?) as usize)
}

fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Walks the protobuf fields of `b`, calling `f(field number, wire type, payload)` for
/// length-delimited fields; returns `None` on malformed input.
fn fields(b: &[u8], mut f: impl FnMut(u64, &[u8])) -> Option<()> {
    let mut at = 0;
    while at < b.len() {
        let tag = varint(b, &mut at)?;
        match tag & 7 {
            0 => {
                varint(b, &mut at)?;
            }
            1 => at += 8,
            5 => at += 4,
            2 => {
                let len = varint(b, &mut at)? as usize;
                let payload = b.get(at..at.checked_add(len)?)?;
                f(tag >> 3, payload);
                at += len;
            }
            _ => return None,
        }
    }
    (at == b.len()).then_some(())
}

/// Calls `f(stream id, tuples)` for each `HeronTupleSet` with data in `frames`.
pub fn for_each_data_set(frames: &[u8], mut f: impl FnMut(&str, u64)) {
    let mut at = 0;
    while let Some(size) = read_u32(frames, at) {
        let Some(packet) = frames.get(at + 4..at + 4 + size) else {
            return;
        };
        at += 4 + size;
        let Some(name_len) = read_u32(packet, 0) else {
            return;
        };
        if packet.get(4..4 + name_len) != Some(TUPLE_SET) {
            continue;
        }
        // name, 32-byte REQID, payload length, payload
        let Some(payload) = packet.get(4 + name_len + 32 + 4..) else {
            return;
        };
        let _ = fields(payload, |field, data| {
            if field != 1 {
                return;
            }
            // HeronDataTupleSet { StreamId stream = 1; repeated HeronDataTuple tuples = 2 }
            let (mut stream, mut n) = (None, 0u64);
            let _ = fields(data, |field, v| match field {
                1 => {
                    let _ = fields(v, |field, id| {
                        if field == 1 {
                            stream = std::str::from_utf8(id).ok().map(str::to_string);
                        }
                    });
                }
                2 => n += 1,
                _ => {}
            });
            if let Some(s) = stream {
                f(&s, n);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use heron_proto::api::StreamId;
    use heron_proto::codec::{encode_message, ReqId};
    use heron_proto::system::{HeronDataTuple, HeronDataTupleSet, HeronTupleSet};

    fn set(stream: &str, n: usize) -> HeronTupleSet {
        HeronTupleSet {
            data: Some(HeronDataTupleSet {
                stream: StreamId {
                    id: stream.into(),
                    component_name: "c".into(),
                },
                tuples: (0..n)
                    .map(|k| HeronDataTuple {
                        key: k as i64,
                        ..Default::default()
                    })
                    .collect(),
            }),
            control: None,
            src_task_id: 1,
        }
    }

    #[test]
    fn counts_data_sets_in_frames() {
        let mut buf = BytesMut::new();
        encode_message(&mut buf, &ReqId::ZERO, &set("default", 3));
        encode_message(&mut buf, &ReqId::ZERO, &set("marks", 2));
        encode_message(&mut buf, &ReqId::ZERO, &set("default", 1));
        let mut seen = BTreeMap::new();
        for_each_data_set(&buf, |s, n| *seen.entry(s.to_string()).or_insert(0) += n);
        assert_eq!(seen["default"], 4);
        assert_eq!(seen["marks"], 2);
        // truncated input counts what is complete and stops
        for_each_data_set(&buf[..buf.len() - 3], |_, _| {});
    }

    #[test]
    fn counters_go_to_the_current_metrics() {
        let _guard = enter();
        let m = current().expect("entered");
        let mut emit = StreamCounter::new(current(), "emit");
        let mut exec = StreamCounter::new(current(), "execute");
        let mut buf = BytesMut::new();
        encode_message(&mut buf, &ReqId::ZERO, &set("default", 5));
        emit.add_frames(&buf);
        emit.add_frames(&buf);
        exec.add("default", 7);
        assert_eq!(
            m.lines(),
            "__emit-count/default 10\n__execute-count/default 7\n"
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
