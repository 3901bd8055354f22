//! `reduce_by_key_and_window` over tumbling windows in processing time, aggregated as tuples
//! arrive (Heron's reduce is incremental too): one running value per key, no window of held
//! tuples to decode again when it closes. Under acking the tuples are held only to anchor the
//! window's results and to be acked when it closes.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use heron_api::window::Length;
use heron_api::{AsyncWaker, Bolt, OutputCollector, OutputFieldsDeclarer, TopologyContext, Tuple};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::graph::KeyHasher;
use crate::ops::{element_into_or_fail, Out, Outlet};
use crate::window_ops::{KeyValue, KeyedWindow, WindowInfo};

/// A key's running value and, under acking, its tuples.
struct Acc<V> {
    value: Option<V>,
    tuples: Vec<Tuple>,
}

/// Tumbling windows of `length`, reduced per key as tuples arrive. The key function `FK`
/// (lending the key when the element holds it), the value function `FV` and the reduce `FR`
/// are type parameters, so their calls per tuple are inlined.
pub(crate) struct TumblingReduceBolt<T, K: Clone, V, FK, FV, FR> {
    pub key: FK,
    pub value: FV,
    pub reduce: FR,
    pub length: Length,
    pub outlets: Vec<Outlet>,
    pub out: Option<Out<KeyValue<KeyedWindow<K>, V>>>,
    pub state: Option<State<K, V>>,
    /// The last input element, decoded over by the next (no allocation per tuple).
    pub slot: Option<T>,
    /// The last window result, overwritten by the next (its key's buffer reused).
    pub result: Option<KeyValue<KeyedWindow<K>, V>>,
}

pub(crate) struct State<K, V> {
    accs: HashMap<K, Acc<V>, BuildHasherDefault<KeyHasher>>,
    count: usize,
    acking: bool,
    /// Time windows: the current window's start (epoch ms) and the clock.
    start_ms: Option<i64>,
    clock: (Instant, i64),
    waker: Option<AsyncWaker>,
    timer_set: bool,
}

impl<T, K, V, FK, FV, FR> TumblingReduceBolt<T, K, V, FK, FV, FR>
where
    T: DeserializeOwned + 'static,
    K: std::hash::Hash + Eq + Clone + Serialize + Send + 'static,
    V: Serialize + Send + 'static,
{
    fn size_ms(&self) -> Option<i64> {
        match self.length {
            Length::Duration(d) => Some(i64::try_from(d.as_millis()).unwrap_or(i64::MAX).max(1)),
            Length::Count(_) => None,
        }
    }

    fn now_ms(state: &State<K, V>, now: Instant) -> i64 {
        let (at, ms) = state.clock;
        ms.saturating_add(i64::try_from(now.saturating_duration_since(at).as_millis()).unwrap_or(0))
    }

    /// Emits every key's value for the window that just closed, anchored to its tuples,
    /// then acks them. A key with a value stays in the map, empty, for the next window (no
    /// key copied or map entry made again per window); a key idle for a whole window is
    /// forgotten.
    fn close(&mut self, c: &mut OutputCollector, end_ms: Option<i64>) {
        let size = self.size_ms();
        let Some(state) = self.state.as_mut() else {
            return;
        };
        let window = WindowInfo {
            start_ms: end_ms.zip(size).map(|(e, s)| e - s),
            end_ms,
            count: state.count,
        };
        let out = self.out.as_mut().expect("prepared");
        let result = &mut self.result;
        state.accs.retain(|key, acc| {
            let Some(value) = acc.value.take() else {
                return false;
            };
            let kv = match result {
                Some(kv) => {
                    kv.key.key.clone_from(key);
                    kv.key.window = window.clone();
                    kv.value = value;
                    kv
                }
                None => result.insert(KeyValue {
                    key: KeyedWindow {
                        key: key.clone(),
                        window: window.clone(),
                    },
                    value,
                }),
            };
            let anchors: Vec<&Tuple> = acc.tuples.iter().collect();
            out.emit(c, &anchors, kv);
            for t in &acc.tuples {
                c.ack(t);
            }
            acc.tuples.clear();
            true
        });
        state.count = 0;
    }
}

impl<T, K, V, FK, FV, FR> Bolt for TumblingReduceBolt<T, K, V, FK, FV, FR>
where
    T: DeserializeOwned + Send + 'static,
    K: std::hash::Hash + Eq + Clone + Serialize + Send + 'static,
    V: Serialize + Send + 'static,
    FK: for<'a> Fn(&'a T) -> Cow<'a, K> + Send + 'static,
    FV: Fn(&T) -> V + Send + 'static,
    FR: Fn(V, V) -> V + Send + 'static,
{
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        Out::<KeyValue<KeyedWindow<K>, V>>::declare(&self.outlets, d);
    }

    fn prepare(&mut self, ctx: &TopologyContext) {
        self.out = Some(Out::new(&self.outlets, ctx));
        let epoch_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        self.state = Some(State {
            accs: HashMap::default(),
            count: 0,
            acking: ctx.config().reliability_mode().is_acking(),
            start_ms: None,
            clock: (Instant::now(), epoch_ms),
            waker: ctx.async_waker().cloned(),
            timer_set: false,
        });
    }

    fn execute(&mut self, input: &Tuple, c: &mut OutputCollector) {
        if !element_into_or_fail(input, c, &mut self.slot) {
            return;
        }
        // a time window that ended before this tuple closes first
        if let Some(size) = self.size_ms() {
            let state = self.state.as_mut().expect("prepared");
            let now = Self::now_ms(state, Instant::now());
            let start = now.div_euclid(size) * size;
            match state.start_ms {
                Some(s) if s != start => {
                    self.close(c, Some(s + size));
                    self.state.as_mut().expect("prepared").start_ms = Some(start);
                }
                Some(_) => {}
                None => state.start_ms = Some(start),
            }
        }
        let e = self.slot.as_ref().expect("decoded");
        let (k, v) = ((self.key)(e), (self.value)(e));
        let state = self.state.as_mut().expect("prepared");
        let reduce = &self.reduce;
        match state.accs.get_mut(k.as_ref()) {
            Some(acc) => {
                acc.value = Some(match acc.value.take() {
                    Some(old) => reduce(old, v),
                    None => v,
                });
                if state.acking {
                    acc.tuples.push(input.clone());
                }
            }
            None => {
                let tuples = if state.acking {
                    vec![input.clone()]
                } else {
                    Vec::new()
                };
                state.accs.insert(
                    k.into_owned(),
                    Acc {
                        value: Some(v),
                        tuples,
                    },
                );
            }
        }
        state.count += 1;
        if !state.acking {
            c.ack(input);
        }
        match self.length {
            Length::Count(n) if state.count as u64 >= n.max(1) => self.close(c, None),
            Length::Duration(_) if !state.timer_set => {
                if let Some(w) = &state.waker {
                    w.wake();
                    state.timer_set = true;
                }
            }
            _ => {}
        }
    }

    fn has_async_output(&self) -> bool {
        matches!(self.length, Length::Duration(_))
    }

    fn poll_async(&mut self, c: &mut OutputCollector, now: Instant) -> Option<Instant> {
        let size = self.size_ms()?;
        let state = self.state.as_mut()?;
        let now_ms = Self::now_ms(state, now);
        let start = state.start_ms?;
        if now_ms >= start + size {
            self.close(c, Some(start + size));
            let state = self.state.as_mut()?;
            state.start_ms = None;
            state.timer_set = false;
            return None;
        }
        let wait = u64::try_from(start + size - now_ms).unwrap_or(0);
        Some(now + Duration::from_millis(wait))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heron_api::{Emitter, Fields, ReliabilityMode, StreamDecl, TupleSource, Value};
    use std::sync::Arc;

    /// A sum-per-key bolt over elements `T` (as `reduce_by_key_and_window` makes them, the
    /// functions boxed here).
    type Counter<T> = TumblingReduceBolt<
        T,
        String,
        i64,
        KeyFn<T>,
        Box<dyn Fn(&T) -> i64 + Send>,
        fn(i64, i64) -> i64,
    >;

    /// A key function, boxed.
    type KeyFn<T> = Box<dyn for<'a> Fn(&'a T) -> Cow<'a, String> + Send>;

    /// A count-per-key bolt over elements `T`, its key taken by `key`.
    fn bolt<T>(key: KeyFn<T>, value: Box<dyn Fn(&T) -> i64 + Send>, length: Length) -> Counter<T> {
        TumblingReduceBolt {
            key,
            value,
            reduce: |a, b| a + b,
            length,
            outlets: vec![Outlet {
                stream: "default".into(),
                key: None,
            }],
            out: None,
            state: None,
            slot: None,
            result: None,
        }
    }

    /// A word counter: words are their own keys, each counts 1, windows of `n` words.
    fn word_counter(n: u64) -> Counter<String> {
        bolt(
            Box::new(|w: &String| Cow::Borrowed(w)),
            Box::new(|_: &String| 1),
            Length::count(n),
        )
    }

    /// Prepares `b` in `mode`; its emitter and the source of its input tuples.
    fn prepare<T: DeserializeOwned + Send + 'static>(
        b: &mut Counter<T>,
        mode: ReliabilityMode,
    ) -> (Emitter, Arc<TupleSource>) {
        let streams = [StreamDecl {
            id: "default".into(),
            fields: Fields::new(["element"]),
            direct: false,
        }];
        let em = Emitter::new("count", 1, mode, &streams);
        let mut conf = heron_api::Config::new();
        conf.set_reliability_mode(mode);
        let ctx = TopologyContext::builder("t", "count", 1)
            .config(conf)
            .build();
        b.prepare(&ctx);
        let src = Arc::new(TupleSource::new(
            "split",
            "to-count-0",
            Fields::new(["element"]),
        ));
        (em, src)
    }

    #[test]
    fn count_windows_close_every_n_tuples_with_one_result_per_key_then_ack() {
        let mut b = word_counter(5);
        let (mut em, src) = prepare(&mut b, ReliabilityMode::AtLeastOnce);
        for (i, w) in ["a", "b", "a", "a", "c", "b"].iter().enumerate() {
            let key = i as i64 + 10;
            let t = Tuple::from_runtime(src.clone(), 2, vec![Value::from(*w)], key, &[(3, key)]);
            b.execute(&t, &mut OutputCollector::new(&mut em));
        }
        let c = em.counters();
        assert_eq!(c.emitted, 3, "a, b and c of the first five");
        assert_eq!(c.acked, 5, "the first window's tuples");
        assert_eq!(
            b.state.as_ref().unwrap().count,
            1,
            "the sixth waits in the next window"
        );
    }

    #[test]
    fn pairs_are_reduced_by_their_own_keys_lent_not_copied() {
        type Pair = crate::KeyValue<String, i64>;
        let mut b = bolt(
            Box::new(|kv: &Pair| Cow::Borrowed(&kv.key)),
            Box::new(|kv: &Pair| kv.value),
            Length::count(4),
        );
        let (mut em, src) = prepare(&mut b, ReliabilityMode::AtMostOnce);
        for (w, n) in [("a", 2), ("b", 5), ("a", 3)] {
            let kv = crate::KeyValue::new(w.to_string(), n);
            let v = crate::element::to_value(&kv).unwrap();
            let t = Tuple::from_runtime(src.clone(), 2, vec![v], 0, &[]);
            b.execute(&t, &mut OutputCollector::new(&mut em));
        }
        let accs = &b.state.as_ref().unwrap().accs;
        assert_eq!(accs.len(), 2);
        assert_eq!(accs["a"].value, Some(5));
        assert_eq!(accs["b"].value, Some(5));
        assert_eq!(em.counters().emitted, 0, "the window of 4 is still open");
    }

    #[test]
    fn keys_stay_for_the_next_window_until_idle_for_one_and_results_are_per_window() {
        let mut b = word_counter(3);
        let (mut em, src) = prepare(&mut b, ReliabilityMode::AtMostOnce);
        // windows: [a a b] [a c c] [c c c]
        for w in ["a", "a", "b", "a", "c", "c", "c", "c", "c"] {
            let t = Tuple::from_runtime(src.clone(), 2, vec![Value::from(w)], 0, &[]);
            b.execute(&t, &mut OutputCollector::new(&mut em));
        }
        let accs = &b.state.as_ref().unwrap().accs;
        let mut kept: Vec<&str> = accs.keys().map(String::as_str).collect();
        kept.sort_unstable();
        assert_eq!(kept, ["c"], "b idle in window 2, a in window 3: forgotten");
        assert!(accs
            .values()
            .all(|a| a.value.is_none() && a.tuples.is_empty()));
        let mut got: Vec<(String, i64)> = em
            .take_output()
            .iter()
            .filter_map(|s| s.data.as_ref())
            .flat_map(|d| d.tuples.iter())
            .map(|t| {
                let v = Value::decode(&t.values[0]).unwrap();
                let kv: KeyValue<KeyedWindow<String>, i64> = crate::element::from_value(v).unwrap();
                (kv.key.key, kv.value)
            })
            .collect();
        got.sort();
        let want = [("a", 1), ("a", 2), ("b", 1), ("c", 2), ("c", 3)];
        assert_eq!(
            got,
            want.map(|(k, n)| (k.to_string(), n)),
            "one result per key and window"
        );
    }
}
