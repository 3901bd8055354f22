//! The windowed operations: reduce and count by key and window, and joins within a window,
//! as [`WindowedBolt`]s over keyed input streams.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;

use heron_api::window::{Window, WindowCollector, WindowedBolt};
use heron_api::{OutputFieldsDeclarer, TopologyContext, Tuple};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::ops::{element, Out, Outlet};

/// The window an aggregate covers (Heron's `Window`): its bounds when measured in time, and
/// how many elements it held.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct WindowInfo {
    /// The first millisecond in the window (time windows).
    pub start_ms: Option<i64>,
    /// The first millisecond after it (time windows).
    pub end_ms: Option<i64>,
    /// How many elements the window held (all keys).
    pub count: usize,
}

/// A key within a window (Heron's `KeyedWindow`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KeyedWindow<K> {
    /// The key.
    pub key: K,
    /// The window.
    pub window: WindowInfo,
}

/// A key and a value (Heron's `KeyValue`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KeyValue<K, V> {
    /// The key.
    pub key: K,
    /// The value.
    pub value: V,
}

impl<K, V> KeyValue<K, V> {
    /// A pair.
    ///
    /// ```
    /// let kv = heron_streamlet::KeyValue::new("k", 1);
    /// assert_eq!((kv.key, kv.value), ("k", 1));
    /// ```
    pub fn new(key: K, value: V) -> KeyValue<K, V> {
        KeyValue { key, value }
    }
}

/// Which elements a join keeps (Heron's `JoinType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinType {
    /// Keys on both sides: every pair.
    Inner,
    /// Every left element; the right one when its key has one, else `None`.
    OuterLeft,
    /// Every right element; the left one when its key has one, else `None`.
    OuterRight,
    /// Every element of both sides, paired where the key matches.
    Outer,
}

fn info(w: &Window<'_>) -> WindowInfo {
    WindowInfo {
        start_ms: w.start_ms(),
        end_ms: w.end_ms(),
        count: w.tuples().len(),
    }
}

/// `reduce_by_key_and_window` (and `count_by_key_and_window`).
pub(crate) struct ReduceBolt<T, K, V> {
    pub key: Arc<dyn Fn(&T) -> K + Send + Sync>,
    pub value: Arc<dyn Fn(&T) -> V + Send + Sync>,
    pub reduce: Arc<dyn Fn(V, V) -> V + Send + Sync>,
    pub outlets: Vec<Outlet>,
    pub out: Option<Out<KeyValue<KeyedWindow<K>, V>>>,
}

impl<T, K, V> WindowedBolt for ReduceBolt<T, K, V>
where
    T: DeserializeOwned + 'static,
    K: Hash + Eq + Clone + Serialize + Send + 'static,
    V: Serialize + Send + 'static,
{
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        Out::<KeyValue<KeyedWindow<K>, V>>::declare(&self.outlets, d);
    }

    fn prepare(&mut self, ctx: &TopologyContext) {
        self.out = Some(Out::new(&self.outlets, ctx));
    }

    fn execute(&mut self, w: &Window<'_>, c: &mut WindowCollector<'_, '_>) {
        let mut by_key: HashMap<K, (Option<V>, Vec<&Tuple>)> = HashMap::new();
        for &t in w.tuples() {
            let e: T = match element(t) {
                Ok(e) => e,
                Err(e) => {
                    c.report_error(&e);
                    continue;
                }
            };
            let (k, v) = ((self.key)(&e), (self.value)(&e));
            let (acc, tuples) = by_key.entry(k).or_insert_with(|| (None, Vec::new()));
            *acc = Some(match acc.take() {
                Some(a) => (self.reduce)(a, v),
                None => v,
            });
            tuples.push(t);
        }
        let window = info(w);
        let out = self.out.as_mut().expect("prepared");
        for (key, (value, tuples)) in by_key {
            let Some(value) = value else { continue };
            let kv = KeyValue {
                key: KeyedWindow {
                    key,
                    window: window.clone(),
                },
                value,
            };
            out.emit(c, &tuples, &kv);
        }
    }
}

/// A join's function: the left and right elements of one key (`None` on an outer side).
pub(crate) type JoinFn<L, R, T> = Arc<dyn Fn(Option<&L>, Option<&R>) -> T + Send + Sync>;

/// `join`: elements of two streamlets with equal keys within a window.
pub(crate) struct JoinBolt<L, R, K, T> {
    pub left_key: Arc<dyn Fn(&L) -> K + Send + Sync>,
    pub right_key: Arc<dyn Fn(&R) -> K + Send + Sync>,
    pub join: JoinFn<L, R, T>,
    pub kind: JoinType,
    pub outlets: Vec<Outlet>,
    pub out: Option<Out<KeyValue<KeyedWindow<K>, T>>>,
}

/// One key's elements on each side, with their tuples.
type Sides<'t, L, R> = (Vec<(L, &'t Tuple)>, Vec<(R, &'t Tuple)>);

impl<L, R, K, T> WindowedBolt for JoinBolt<L, R, K, T>
where
    L: DeserializeOwned + 'static,
    R: DeserializeOwned + 'static,
    K: Hash + Eq + Clone + Serialize + Send + 'static,
    T: Serialize + Send + 'static,
{
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        Out::<KeyValue<KeyedWindow<K>, T>>::declare(&self.outlets, d);
    }

    fn prepare(&mut self, ctx: &TopologyContext) {
        self.out = Some(Out::new(&self.outlets, ctx));
    }

    fn execute(&mut self, w: &Window<'_>, c: &mut WindowCollector<'_, '_>) {
        let mut keys: HashMap<K, Sides<'_, L, R>> = HashMap::new();
        for &t in w.tuples() {
            // the inputs are the keyed streams `to-<join>-0` (left) and `to-<join>-1`
            let decoded = if t.source_stream().ends_with("-0") {
                element::<L>(t).map(|l| {
                    let k = (self.left_key)(&l);
                    keys.entry(k).or_default().0.push((l, t));
                })
            } else {
                element::<R>(t).map(|r| {
                    let k = (self.right_key)(&r);
                    keys.entry(k).or_default().1.push((r, t));
                })
            };
            if let Err(e) = decoded {
                c.report_error(&e);
            }
        }
        let window = info(w);
        let out = self.out.as_mut().expect("prepared");
        for (key, (lefts, rights)) in keys {
            let kw = KeyedWindow {
                key,
                window: window.clone(),
            };
            for (l, r) in pairs(self.kind, lefts.len(), rights.len()) {
                let (l, r) = (l.map(|i| &lefts[i]), r.map(|i| &rights[i]));
                let anchors: Vec<&Tuple> =
                    l.map(|x| x.1).into_iter().chain(r.map(|x| x.1)).collect();
                let kv = KeyValue {
                    key: kw.clone(),
                    value: (self.join)(l.map(|x| &x.0), r.map(|x| &x.0)),
                };
                out.emit(c, &anchors, &kv);
            }
        }
    }
}

/// Which (left, right) element indices of one key a join of `kind` pairs, given how many
/// each side has.
pub(crate) fn pairs(
    kind: JoinType,
    lefts: usize,
    rights: usize,
) -> Vec<(Option<usize>, Option<usize>)> {
    let (keep_left, keep_right) = match kind {
        JoinType::Inner => (false, false),
        JoinType::OuterLeft => (true, false),
        JoinType::OuterRight => (false, true),
        JoinType::Outer => (true, true),
    };
    match (lefts, rights) {
        (0, 0) => Vec::new(),
        (0, r) if keep_right => (0..r).map(|j| (None, Some(j))).collect(),
        (l, 0) if keep_left => (0..l).map(|i| (Some(i), None)).collect(),
        (0, _) | (_, 0) => Vec::new(),
        (l, r) => (0..l)
            .flat_map(|i| (0..r).map(move |j| (Some(i), Some(j))))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_kinds_pair_what_they_should() {
        let all = |l, r| pairs(JoinType::Outer, l, r);
        assert_eq!(
            pairs(JoinType::Inner, 2, 1),
            vec![(Some(0), Some(0)), (Some(1), Some(0))]
        );
        assert!(pairs(JoinType::Inner, 2, 0).is_empty());
        assert!(pairs(JoinType::Inner, 0, 3).is_empty());
        assert_eq!(
            pairs(JoinType::OuterLeft, 2, 0),
            vec![(Some(0), None), (Some(1), None)]
        );
        assert!(pairs(JoinType::OuterLeft, 0, 2).is_empty());
        assert_eq!(pairs(JoinType::OuterRight, 0, 1), vec![(None, Some(0))]);
        assert!(pairs(JoinType::OuterRight, 1, 0).is_empty());
        assert_eq!(all(1, 0), vec![(Some(0), None)]);
        assert_eq!(all(0, 1), vec![(None, Some(0))]);
        assert_eq!(all(2, 2).len(), 4);
        assert!(all(0, 0).is_empty());
    }
}
