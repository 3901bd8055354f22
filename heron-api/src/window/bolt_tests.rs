//! The adapter: windows reach the bolt, emits are anchored, tuples are acked when they leave
//! their last window, late and timeless tuples are handled (an [`Emitter`] in ATLEAST_ONCE
//! counts what happened).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;
use crate::tuple::TupleSource;
use crate::{
    values, Bolt, Emitter, Fields, OutputCollector, OutputFieldsDeclarer, ReliabilityMode,
    StreamDecl, TopologyContext, Tuple,
};

/// A window seen: its start and the values of field 0.
type Seen = (Option<i64>, Vec<i64>);

/// Records each window it sees and emits its size.
#[derive(Clone, Default)]
struct Record(Arc<Mutex<Vec<Seen>>>);

impl WindowedBolt for Record {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["n"]));
    }
    fn execute(&mut self, w: &Window<'_>, c: &mut WindowCollector<'_, '_>) {
        let vals = w.tuples().iter().filter_map(|t| t.get_i64(0)).collect();
        self.0.lock().unwrap().push((w.start_ms(), vals));
        c.emit(values![w.tuples().len() as i64]);
    }
}

struct Harness {
    bolt: WindowedBoltAdapter<Record>,
    seen: Record,
    emitter: Emitter,
    source: Arc<TupleSource>,
    next_key: i64,
}

impl Harness {
    fn new(config: WindowConfig) -> Harness {
        let seen = Record::default();
        let mut bolt = WindowedBoltAdapter::new(seen.clone(), config);
        let mut d = OutputFieldsDeclarer::new();
        bolt.declare_output_fields(&mut d);
        let streams: Vec<StreamDecl> = d.into_streams();
        let emitter = Emitter::new("win", 3, ReliabilityMode::AtLeastOnce, &streams);
        let ctx = TopologyContext::builder("t", "win", 3).build();
        bolt.prepare(&ctx);
        Harness {
            bolt,
            seen,
            emitter,
            source: Arc::new(TupleSource::new("src", "default", Fields::new(["n", "ts"]))),
            next_key: 1,
        }
    }

    fn tuple(&mut self, n: i64, ts: Option<i64>) -> Tuple {
        self.next_key += 1;
        let values = match ts {
            Some(ts) => values![n, ts],
            None => values![n, "no time"],
        };
        Tuple::from_runtime(
            self.source.clone(),
            1,
            values,
            self.next_key,
            &[(7, self.next_key)],
        )
    }

    fn execute(&mut self, n: i64, ts: Option<i64>) {
        let t = self.tuple(n, ts);
        self.bolt
            .execute(&t, &mut OutputCollector::new(&mut self.emitter));
    }

    fn watermark(&mut self, w: i64) {
        self.bolt
            .on_watermark(w, &mut OutputCollector::new(&mut self.emitter));
    }

    fn poll(&mut self, at: Instant) -> Option<Instant> {
        self.bolt
            .poll_async(&mut OutputCollector::new(&mut self.emitter), at)
    }

    fn windows(&self) -> Vec<Seen> {
        self.seen.0.lock().unwrap().clone()
    }
}

#[test]
fn count_windows_fire_every_slide_and_ack_what_leaves() {
    let mut h = Harness::new(WindowConfig::sliding(Length::count(4), Length::count(2)));
    assert!(!h.bolt.has_async_output(), "count slides need no timer");
    for n in 0..10 {
        h.execute(n, None);
    }
    let sizes: Vec<Vec<i64>> = h.windows().into_iter().map(|w| w.1).collect();
    assert_eq!(
        sizes,
        vec![
            vec![0, 1],
            vec![0, 1, 2, 3],
            vec![2, 3, 4, 5],
            vec![4, 5, 6, 7],
            vec![6, 7, 8, 9]
        ]
    );
    let c = h.emitter.counters();
    assert_eq!(c.emitted, 5, "one emit per window");
    assert_eq!(c.acked, 6, "0..=5 left the window; 6..=9 are still in it");
    assert_eq!(c.failed, 0);
}

#[test]
fn processing_time_windows_fire_on_the_clock() {
    let mut h = Harness::new(WindowConfig::tumbling(Length::duration(
        Duration::from_secs(1),
    )));
    assert!(h.bolt.has_async_output());
    let t0 = Instant::now();
    assert_eq!(h.poll(t0), None, "nothing held, no timer");
    for n in 0..3 {
        h.execute(n, None);
    }
    let due = h
        .poll(Instant::now())
        .expect("a timer for the window's end");
    assert!(due <= t0 + Duration::from_millis(1_100), "{:?}", due - t0);
    assert!(h.windows().is_empty(), "not before the window ends");
    h.poll(t0 + Duration::from_secs(3));
    let w = h.windows();
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].1, vec![0, 1, 2]);
    assert_eq!(
        h.emitter.counters().acked,
        3,
        "acked once their only window fired"
    );
}

#[test]
fn event_time_late_tuples_go_to_the_late_stream_and_timeless_ones_fail() {
    let config = WindowConfig::tumbling(Length::duration(Duration::from_millis(100)))
        .with_timestamp_field("ts")
        .with_late_tuple_stream("late", ["n", "ts"]);
    let mut h = Harness::new(config);
    assert!(
        !h.bolt.has_async_output(),
        "event time fires on watermarks only"
    );
    h.execute(1, Some(10));
    h.execute(2, Some(150));
    h.watermark(100);
    assert_eq!(h.windows(), vec![(Some(0), vec![1])]);
    h.execute(3, Some(50)); // [0, 100) has closed
    h.execute(4, None);
    h.watermark(i64::MAX);
    assert_eq!(h.windows(), vec![(Some(0), vec![1]), (Some(100), vec![2])]);
    let c = h.emitter.counters();
    assert_eq!(c.failed, 1, "the tuple without a timestamp");
    assert_eq!(c.acked, 3, "two left their windows, the late one was acked");
    assert_eq!(c.emitted, 3, "two windows and one late tuple");
    assert_eq!(h.bolt.late_dropped(), 0);
    assert!(h
        .emitter
        .take_errors()
        .iter()
        .any(|e| e.contains("no integer field \"ts\"")));
}

#[test]
fn without_a_late_stream_late_tuples_are_dropped_and_counted() {
    let config = WindowConfig::tumbling(Length::duration(Duration::from_millis(100)))
        .with_timestamp_field("ts");
    let mut h = Harness::new(config);
    h.execute(1, Some(10));
    h.watermark(500);
    h.execute(2, Some(20));
    assert_eq!(h.bolt.late_dropped(), 1);
    assert_eq!(h.emitter.counters().acked, 2);
}
