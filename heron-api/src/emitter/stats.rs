//! Per-stream ack/fail counts and latencies of one task, kept by its [`Emitter`] on the
//! executor thread (plain integers, no atomics, no allocation after a stream's first use).
//!
//! Heron's names (docs/internals.md): a spout counts `__ack-count`, `__fail-count` and
//! `__complete-latency` on the stream its root tuple was emitted on; a bolt counts
//! `__ack-count`, `__fail-count`, `__execute-latency` and `__process-latency` on the stream of
//! its input tuple. Latencies are in nanoseconds, as Heron's Java instance reports them.
//!
//! A bolt's latencies are timed per batch, not per tuple: the runtime reads the clock when a
//! batch (one tuple set) starts and when it ends ([`Emitter::begin_batch`],
//! [`Emitter::end_batch`]). The batch's time spread evenly over its tuples is their execute
//! latency. Each tuple's execute start is estimated from the batch start and the previous
//! batch's time per tuple ([`Emitter::stamp`]), and so is the time of an ack; the difference
//! is the process latency (Heron: from the start of `execute` to the `ack`).

use std::time::Instant;

use super::Emitter;
use crate::Tuple;

/// Cumulative per-stream counts of one task. Latency fields are sums in nanoseconds with the
/// number of values summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamTally {
    /// Acks: a bolt's `ack` calls for inputs of this stream, or acked spout trees rooted on it.
    pub acked: u64,
    /// Fails: a bolt's `fail` calls, or failed / expired spout trees.
    pub failed: u64,
    /// Spout: sum of complete latencies (emit to ack); bolt: sum of process latencies.
    pub latency_ns: u64,
    /// How many latencies `latency_ns` sums.
    pub latency_count: u64,
    /// Bolt: sum of execute latencies.
    pub execute_ns: u64,
    /// How many tuples `execute_ns` covers.
    pub execute_count: u64,
}

/// The bolt side's batch clock and input-stream tallies.
#[derive(Debug)]
pub(super) struct BoltClock {
    epoch: Instant,
    /// Start of the current batch, ns since `epoch`.
    start_ns: u64,
    /// Tuples of the current batch stamped so far.
    pos: u64,
    /// Estimated execute time per tuple (from the previous batches), ns.
    per_tuple_ns: u64,
    /// Input streams seen, with their tallies.
    inputs: Vec<(String, StreamTally)>,
    last_input: usize,
}

impl BoltClock {
    pub(super) fn new() -> BoltClock {
        BoltClock {
            epoch: Instant::now(),
            start_ns: 0,
            pos: 0,
            per_tuple_ns: 0,
            inputs: Vec::new(),
            last_input: 0,
        }
    }

    fn ns(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX)
    }

    /// The estimated time now: the end of the tuple being executed.
    fn now_est(&self) -> u64 {
        self.start_ns + self.pos * self.per_tuple_ns
    }

    fn input(&mut self, stream: &str) -> &mut StreamTally {
        let i = match self.inputs.get(self.last_input) {
            Some((s, _)) if super::same_name(s, stream) => self.last_input,
            _ => match self.inputs.iter().position(|(s, _)| s == stream) {
                Some(i) => i,
                None => {
                    self.inputs
                        .push((stream.to_owned(), StreamTally::default()));
                    self.inputs.len() - 1
                }
            },
        };
        self.last_input = i;
        &mut self.inputs[i].1
    }

    /// An ack or fail of `tuple` at the estimated current time.
    pub(super) fn acked(&mut self, tuple: &Tuple, acked: bool) {
        let started = tuple.started_ns();
        let now = self.now_est();
        let t = self.input(tuple.source_stream());
        if acked {
            t.acked += 1;
            if started > 0 {
                t.latency_ns += now.saturating_sub(started);
                t.latency_count += 1;
            }
        } else {
            t.failed += 1;
        }
    }
}

/// The mean of a batch's time per tuple, folded into the running estimate (half weight).
fn blend(old: u64, new: u64) -> u64 {
    if old == 0 {
        new
    } else {
        old / 2 + new / 2
    }
}

impl Emitter {
    /// A batch of input tuples starts executing at `now` (read once per batch).
    pub fn begin_batch(&mut self, now: Instant) {
        let c = &mut self.bolt;
        c.start_ns = c.ns(now).max(1);
        c.pos = 0;
    }

    /// Stamps `tuple` with its estimated execute start, just before it is executed.
    pub fn stamp(&mut self, tuple: &mut Tuple) {
        let c = &mut self.bolt;
        tuple.set_started_ns(c.now_est());
        c.pos += 1;
    }

    /// Leaves `d` (time the runtime spent blocked inside the batch) out of its time.
    pub fn exclude_from_batch(&mut self, d: std::time::Duration) {
        let c = &mut self.bolt;
        c.start_ns = c
            .start_ns
            .saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }

    /// The batch begun with [`begin_batch`](Self::begin_batch) ended at `now`, after
    /// executing `tuples` tuples of `stream`: they share its time as execute latency.
    pub fn end_batch(&mut self, now: Instant, stream: &str, tuples: u64) {
        if tuples == 0 {
            return;
        }
        let c = &mut self.bolt;
        let elapsed = c.ns(now).saturating_sub(c.start_ns);
        c.per_tuple_ns = blend(c.per_tuple_ns, elapsed / tuples).max(1);
        let t = c.input(stream);
        t.execute_ns += elapsed;
        t.execute_count += tuples;
    }

    /// Per input stream (bolts): acks, fails, process and execute latencies.
    pub fn input_tallies(&self) -> impl Iterator<Item = (&str, &StreamTally)> {
        self.bolt.inputs.iter().map(|(s, t)| (s.as_str(), t))
    }

    /// Per output stream (spouts): acked and failed trees and complete latencies.
    pub fn output_tallies(&self) -> impl Iterator<Item = (&str, &StreamTally)> {
        self.streams.iter().map(|s| (s.decl.id.as_str(), &s.tally))
    }

    /// Per output stream, the tuples emitted on it so far (Heron's `__emit-count/<stream>`):
    /// counted as they are emitted, so that the runtime never walks what it sends to count
    /// it. Streams not emitted on yet are left out.
    ///
    /// ```
    /// use heron_api::{values, Emitter, Fields, ReliabilityMode, SpoutOutputCollector, StreamDecl};
    /// let decl = |id: &str| StreamDecl {
    ///     id: id.into(),
    ///     fields: Fields::new(["w"]),
    ///     direct: false,
    /// };
    /// let streams = [decl("default"), decl("other")];
    /// let mut e = Emitter::new("words", 3, ReliabilityMode::AtMostOnce, &streams);
    /// SpoutOutputCollector::new(&mut e).emit(values!["a"]);
    /// SpoutOutputCollector::new(&mut e).emit(values!["b"]);
    /// assert_eq!(e.stream_emits().collect::<Vec<_>>(), [("default", 2)]);
    /// assert_eq!(e.counters().emitted, 2);
    /// ```
    pub fn stream_emits(&self) -> impl Iterator<Item = (&str, u64)> {
        self.streams
            .iter()
            .filter(|s| s.emitted > 0)
            .map(|s| (s.decl.id.as_str(), s.emitted))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{values, Fields, ReliabilityMode, SpoutOutputCollector, StreamDecl, TupleSource};
    use std::sync::Arc;
    use std::time::Duration;

    fn decl(id: &str) -> StreamDecl {
        StreamDecl {
            id: id.into(),
            fields: Fields::new(["x"]),
            direct: false,
        }
    }

    fn tally<'a>(mut it: impl Iterator<Item = (&'a str, &'a StreamTally)>, s: &str) -> StreamTally {
        it.find(|(n, _)| *n == s)
            .map(|(_, t)| *t)
            .unwrap_or_default()
    }

    #[test]
    fn spout_trees_count_on_the_stream_of_their_root() {
        let mut e = Emitter::new(
            "s",
            1,
            ReliabilityMode::AtLeastOnce,
            &[decl("default"), decl("marks")],
        );
        let mut c = SpoutOutputCollector::new(&mut e);
        c.emit_with_id(values![1], 1);
        c.emit_stream("marks", values![2], Some(2.into()));
        c.emit_stream("marks", values![3], Some(3.into()));
        let keys: Vec<i64> = e
            .take_output()
            .iter()
            .flat_map(|s| s.data.as_ref().unwrap().tuples.clone())
            .map(|t| t.roots[0].key)
            .collect();
        let now = Instant::now() + Duration::from_millis(5);
        let (_, latency) = e.spout_acked_at(keys[1], now).unwrap();
        assert!(latency >= Duration::from_millis(5));
        e.spout_failed(keys[2]).unwrap();
        let later = Instant::now() + Duration::from_secs(60);
        assert_eq!(e.expire(later, Duration::from_secs(30)).len(), 1);
        let marks = tally(e.output_tallies(), "marks");
        assert_eq!((marks.acked, marks.failed, marks.latency_count), (1, 1, 1));
        assert!(marks.latency_ns >= 5_000_000, "{marks:?}");
        let default = tally(e.output_tallies(), "default");
        assert_eq!((default.acked, default.failed), (0, 1), "expired");
        assert_eq!(e.input_tallies().count(), 0);
    }

    #[test]
    fn immediate_acks_count_on_their_stream() {
        let mut e = Emitter::new("s", 1, ReliabilityMode::AtMostOnce, &[decl("marks")]);
        SpoutOutputCollector::new(&mut e).emit_stream("marks", values![1], Some(1.into()));
        assert_eq!(tally(e.output_tallies(), "marks").acked, 1);
    }

    #[test]
    fn bolt_latencies_come_from_the_batch_clock() {
        let mut e = Emitter::new("b", 2, ReliabilityMode::AtMostOnce, &[]);
        let source = Arc::new(TupleSource::new("up", "words", Fields::new(["x"])));
        let tuple = || Tuple::from_runtime(source.clone(), 1, values![1], 0, &[]);
        let t0 = Instant::now();
        // batch 1: 4 tuples in 4 ms, the second one acked, the last one failed
        e.begin_batch(t0);
        let mut kept = Vec::new();
        for i in 0..4 {
            let mut t = tuple();
            e.stamp(&mut t);
            match i {
                1 => e.ack(&t),
                3 => e.fail(&t),
                _ => kept.push(t),
            }
        }
        e.end_batch(t0 + Duration::from_millis(4), "words", 4);
        let w = tally(e.input_tallies(), "words");
        assert_eq!((w.execute_ns, w.execute_count), (4_000_000, 4));
        assert_eq!((w.acked, w.failed), (1, 1));
        // batch 2 (10 ms later, 2 tuples): acks of held tuples of batch 1 and one of its own
        let t1 = t0 + Duration::from_millis(14);
        e.begin_batch(t1);
        let mut t = tuple();
        e.stamp(&mut t);
        e.ack(&t); // ~1 ms (the estimated time per tuple)
        e.ack(&kept[0]); // executed at ~0 ms, acked at ~15 ms
        e.end_batch(t1 + Duration::from_millis(2), "words", 2);
        let w = tally(e.input_tallies(), "words");
        assert_eq!((w.acked, w.execute_count), (3, 6));
        assert_eq!(w.execute_ns, 6_000_000);
        // batch 1's ack: per-tuple estimate 0 then (first batch), so 0; batch 2: 1 ms + 15 ms
        assert_eq!(w.latency_count, 3);
        let ms = w.latency_ns as f64 / 1e6;
        assert!((15.9..=16.1).contains(&ms), "process latency sum {ms} ms");
    }
}
