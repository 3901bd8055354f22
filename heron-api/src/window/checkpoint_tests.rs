//! Windows in checkpoints (EFFECTIVELY_ONCE): a bolt restored from a checkpoint taken at any
//! point goes on exactly as the bolt that took it (same windows, new and expired tuples, late
//! tuples); a checkpoint of other windows is refused; the bolt's own state travels beside.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use super::*;
use crate::tuple::TupleSource;
use crate::{
    values, Bolt, Emitter, Fields, OutputCollector, OutputFieldsDeclarer, ReliabilityMode, State,
    Stateful, StreamDecl, TopologyContext, Tuple,
};

/// A window seen: start, values of field 0 of every, new and expired tuple.
type Seen = (Option<i64>, Vec<i64>, Vec<i64>, Vec<i64>);

/// Records each window; keeps a running total as its own state.
#[derive(Clone, Default)]
struct Record {
    seen: Arc<Mutex<Vec<Seen>>>,
    total: Arc<AtomicI64>,
}

impl WindowedBolt for Record {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["n"]));
    }
    fn execute(&mut self, w: &Window<'_>, _c: &mut WindowCollector<'_, '_>) {
        let f = |ts: &[&Tuple]| ts.iter().filter_map(|t| t.get_i64(0)).collect::<Vec<_>>();
        let expired = w.expired_tuples().iter().filter_map(|t| t.get_i64(0));
        self.total
            .fetch_add(w.tuples().len() as i64, Ordering::Relaxed);
        self.seen.lock().unwrap().push((
            w.start_ms(),
            f(w.tuples()),
            f(w.new_tuples()),
            expired.collect(),
        ));
    }
    fn stateful(&mut self) -> Option<&mut dyn Stateful> {
        Some(self)
    }
}

impl Stateful for Record {
    fn init_state(&mut self, state: &State) {
        self.total
            .store(state.get_i64("total").unwrap_or(0), Ordering::Relaxed);
    }
    fn pre_save(&mut self, _id: &str, state: &mut State) {
        state.put("total", self.total.load(Ordering::Relaxed));
    }
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    /// A tuple: its number, event time, key.
    Tuple(i64, i64, i64),
    Watermark(i64),
}

struct Task {
    bolt: WindowedBoltAdapter<Record>,
    seen: Arc<Mutex<Vec<Seen>>>,
    total: Arc<AtomicI64>,
    emitter: Emitter,
    source: Arc<TupleSource>,
}

impl Task {
    /// A task of `config`; `state` restored before `prepare` (as Heron's initState comes first).
    fn new(config: &WindowConfig, state: Option<&State>) -> Result<Task, String> {
        let record = Record::default();
        let (seen, total) = (record.seen.clone(), record.total.clone());
        let mut bolt = WindowedBoltAdapter::new(record, config.clone());
        if let Some(s) = state {
            bolt.try_init_state(s)?;
        }
        let mut d = OutputFieldsDeclarer::new();
        bolt.declare_output_fields(&mut d);
        let streams: Vec<StreamDecl> = d.into_streams();
        let emitter = Emitter::new("win", 3, ReliabilityMode::EffectivelyOnce, &streams);
        bolt.prepare(&TopologyContext::builder("t", "win", 3).build());
        let fields = Fields::new(["n", "ts", "k"]);
        let source = Arc::new(TupleSource::new("src", "default", fields));
        Ok(Task {
            bolt,
            seen,
            total,
            emitter,
            source,
        })
    }

    fn feed(&mut self, evs: &[Ev]) {
        for ev in evs {
            let mut c = OutputCollector::new(&mut self.emitter);
            match *ev {
                Ev::Tuple(n, ts, k) => {
                    let t = Tuple::from_runtime(self.source.clone(), 1, values![n, ts, k], 0, &[]);
                    self.bolt.execute(&t, &mut c);
                }
                Ev::Watermark(w) => self.bolt.on_watermark(w, &mut c),
            }
        }
    }

    /// The state a checkpoint stores, through its encoding.
    fn save(&mut self) -> State {
        let mut s = State::new();
        self.bolt.pre_save("1-1", &mut s);
        State::decode(&s.encode()).expect("the state decodes")
    }

    fn windows(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn total(&self) -> i64 {
        self.total.load(Ordering::Relaxed)
    }
}

/// Tuples of 3 keys whose times wander back by up to 15 ms, a watermark every 4 tuples, and
/// gaps that close sessions; some tuples are late.
fn events() -> Vec<Ev> {
    let mut evs = Vec::new();
    let mut t = 1_000;
    for n in 0..120i64 {
        t += if n % 30 == 29 { 40 } else { 3 };
        let ts = t - (n * 7) % 16 - if n % 23 == 0 { 100 } else { 0 };
        evs.push(Ev::Tuple(n, ts, n % 3));
        if n % 4 == 3 {
            evs.push(Ev::Watermark(t - 15));
        }
    }
    evs.push(Ev::Watermark(i64::MAX));
    evs
}

/// For a checkpoint after every event: the restored task's windows from there on equal the
/// original's, and so does the bolt's own total.
fn restored_runs_match(config: WindowConfig) {
    let evs = events();
    let mut whole = Task::new(&config, None).unwrap();
    whole.feed(&evs);
    let all = whole.windows();
    assert!(all.len() > 5, "a meaningful run: {} windows", all.len());
    for cut in 0..=evs.len() {
        let mut before = Task::new(&config, None).unwrap();
        before.feed(&evs[..cut]);
        let fired = before.windows().len();
        let state = before.save();
        let mut after = Task::new(&config, Some(&state)).unwrap();
        after.feed(&evs[cut..]);
        assert_eq!(after.windows(), all[fired..], "restored after event {cut}");
        assert_eq!(after.total(), whole.total(), "cut {cut}");
        assert_eq!(after.bolt.late_dropped(), whole.bolt.late_dropped());
    }
}

#[test]
fn sliding_event_time_windows_go_on_from_any_checkpoint() {
    let c = WindowConfig::sliding(
        Length::duration(std::time::Duration::from_millis(20)),
        Length::duration(std::time::Duration::from_millis(10)),
    );
    restored_runs_match(c.with_timestamp_field("ts"));
}

#[test]
fn tumbling_windows_with_a_late_stream_go_on_from_any_checkpoint() {
    let c = WindowConfig::tumbling(Length::duration(std::time::Duration::from_millis(25)));
    restored_runs_match(
        c.with_timestamp_field("ts")
            .with_late_tuple_stream("late", ["n", "ts", "k"]),
    );
}

#[test]
fn session_windows_go_on_from_any_checkpoint() {
    let c = WindowConfig::session(std::time::Duration::from_millis(12), Fields::new(["k"]));
    restored_runs_match(c.with_timestamp_field("ts"));
}

#[test]
fn count_windows_go_on_from_any_checkpoint() {
    restored_runs_match(WindowConfig::sliding(Length::count(7), Length::count(3)));
}

#[test]
fn a_checkpoint_of_other_windows_is_refused_with_the_reason() {
    let ms = |n| Length::duration(std::time::Duration::from_millis(n));
    let tumbling = WindowConfig::tumbling(ms(25)).with_timestamp_field("ts");
    let mut t = Task::new(&tumbling, None).unwrap();
    t.feed(&events()[..40]);
    let state = t.save();
    let other = WindowConfig::tumbling(ms(30)).with_timestamp_field("ts");
    let e = Task::new(&other, Some(&state)).err().unwrap();
    assert!(
        e.contains("size (ms) 30") && e.contains("size (ms) 25"),
        "{e}"
    );
    assert!(e.contains("topology.stateful.start.clean"), "{e}");
    let session = WindowConfig::session(std::time::Duration::from_millis(9), Fields::new(["k"]));
    let e = Task::new(&session, Some(&state)).err().unwrap();
    assert!(e.contains("windows by time"), "{e}");
    let count = WindowConfig::tumbling(Length::count(5));
    assert!(Task::new(&count, Some(&state)).is_err());
    // damaged bytes are refused, never half restored
    let bytes = state.get_bytes(WINDOW_STATE_KEY).unwrap().to_vec();
    for cut in [0, 3, 5, 6, bytes.len() / 2, bytes.len() - 1] {
        let mut s = state.clone();
        s.put(WINDOW_STATE_KEY, bytes[..cut].to_vec());
        assert!(Task::new(&tumbling, Some(&s)).is_err(), "cut at {cut}");
    }
    let mut s = state.clone();
    s.put(WINDOW_STATE_KEY, "text");
    assert!(Task::new(&tumbling, Some(&s)).is_err());
}

#[test]
fn the_bolts_own_state_sits_beside_the_windows() {
    let c = WindowConfig::tumbling(Length::count(2));
    let mut t = Task::new(&c, None).unwrap();
    t.feed(&events()[..10]);
    let state = t.save();
    assert_eq!(state.get_i64("total"), Some(t.total()));
    assert!(t.total() > 0);
    let restored = Task::new(&c, Some(&state)).unwrap();
    assert_eq!(restored.total(), t.total());
    // a clean start empties windows and state alike
    let mut busy = Task::new(&c, None).unwrap();
    busy.feed(&events()[..9]);
    busy.bolt.try_init_state(&State::new()).unwrap();
    assert_eq!(busy.total(), 0);
    busy.feed(&[Ev::Tuple(500, 0, 0), Ev::Tuple(501, 0, 0)]);
    assert_eq!(
        busy.windows().last().unwrap().1,
        vec![500, 501],
        "nothing held from before"
    );
}

#[test]
fn extreme_timestamps_are_held_or_late_never_a_panic() {
    let ms = |n| Length::duration(std::time::Duration::from_millis(n));
    for config in [
        WindowConfig::sliding(ms(20), ms(3)).with_timestamp_field("ts"),
        WindowConfig::session(std::time::Duration::from_millis(7), Fields::new(["k"]))
            .with_timestamp_field("ts"),
    ] {
        let mut t = Task::new(&config, None).unwrap();
        t.feed(&[
            Ev::Tuple(1, i64::MIN, 0),
            Ev::Tuple(2, i64::MIN + 1, 0),
            Ev::Tuple(3, i64::MAX, 0),
            Ev::Tuple(4, i64::MAX - 1, 1),
            Ev::Watermark(0),
            Ev::Watermark(i64::MAX),
        ]);
        let state = t.save();
        Task::new(&config, Some(&state))
            .unwrap()
            .feed(&[Ev::Watermark(i64::MAX)]);
    }
}
