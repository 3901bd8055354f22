//! Session windows: per key, a session is `[first, last + gap)` over its items' timestamps,
//! and merges with every open session of its key it overlaps or touches. A session closes
//! when the watermark reaches its end; an item is late when its own `[ts, ts + gap)` has
//! closed and it touches no open session. Neither Storm nor Heron has these.

use std::collections::{BTreeMap, BTreeSet};

use super::aligned::{Inserted, Span};
use super::snapshot::{expect_eq, Reader, SnapshotError, Writer};

/// One open session of a key.
#[derive(Debug)]
struct Session<T> {
    end: i64,
    /// Items by (timestamp, arrival).
    items: BTreeMap<(i64, u64), T>,
}

/// Gap-based session windows per key `K`.
///
/// ```
/// use heron_api::window::{Inserted, SessionWindows, Span};
///
/// let mut s = SessionWindows::new(3);
/// s.insert("k", 10, 'a');
/// s.insert("k", 20, 'b');        // its own session: [20, 23)
/// s.insert("k", 15, 'c');        // [15, 18): its own session too
/// s.insert("k", 12, 'd');        // [12, 15) touches [10, 13) and [15, 18): one session
/// let (key, span, items) = s.next_due(100).unwrap();
/// assert_eq!((key, span), ("k", Span { start: 10, end: 18 }));
/// assert_eq!(items, vec!['a', 'd', 'c']);
/// assert_eq!(s.next_due(100).unwrap().1, Span { start: 20, end: 23 });
/// assert_eq!(s.insert("k", 1, 'e'), Inserted::Late('e'));
/// ```
#[derive(Debug)]
pub struct SessionWindows<K, T> {
    gap: i64,
    /// Open sessions by key, then start.
    open: BTreeMap<K, BTreeMap<i64, Session<T>>>,
    /// Open sessions by (end, key, start): which close first.
    by_end: BTreeSet<(i64, K, i64)>,
    watermark: i64,
    seq: u64,
}

impl<K: Ord + Clone, T> SessionWindows<K, T> {
    /// Sessions that close `gap` ms after their last item (`gap > 0`).
    ///
    /// # Panics
    /// When `gap <= 0` (the window configuration refuses that first).
    pub fn new(gap: i64) -> SessionWindows<K, T> {
        assert!(gap > 0, "a session gap must be positive");
        SessionWindows {
            gap,
            open: BTreeMap::new(),
            by_end: BTreeSet::new(),
            watermark: i64::MIN,
            seq: 0,
        }
    }

    /// Adds `item` of `key` at `ts` ms to its session (merging sessions it joins), unless it
    /// is late.
    pub fn insert(&mut self, key: K, ts: i64, item: T) -> Inserted<T> {
        let mut start = ts;
        let mut end = ts.saturating_add(self.gap);
        let sessions = self.open.entry(key.clone()).or_default();
        // every open session [s, e) with s <= end and e >= start touches [start, end)
        let touching: Vec<i64> = sessions
            .range(..=end)
            .filter(|(_, sess)| sess.end >= start)
            .map(|(s, _)| *s)
            .collect();
        if touching.is_empty() && end <= self.watermark {
            if sessions.is_empty() {
                self.open.remove(&key);
            }
            return Inserted::Late(item);
        }
        self.seq += 1;
        let mut items = BTreeMap::new();
        items.insert((ts, self.seq), item);
        for s in touching {
            let sess = sessions.remove(&s).expect("listed above");
            self.by_end.remove(&(sess.end, key.clone(), s));
            start = start.min(s);
            end = end.max(sess.end);
            items.extend(sess.items);
        }
        sessions.insert(start, Session { end, items });
        self.by_end.insert((end, key, start));
        Inserted::Held
    }

    /// The next session to close at `watermark` (the earliest-ending, then by key), taken
    /// out with its items in timestamp order.
    pub fn next_due(&mut self, watermark: i64) -> Option<(K, Span, Vec<T>)> {
        self.watermark = self.watermark.max(watermark);
        let &(end, _, start) = self.by_end.first()?;
        if end > self.watermark {
            return None;
        }
        let (_, key, _) = self.by_end.pop_first().expect("first exists");
        let sessions = self.open.get_mut(&key).expect("indexed sessions exist");
        let sess = sessions.remove(&start).expect("indexed sessions exist");
        if sessions.is_empty() {
            self.open.remove(&key);
        }
        Some((key, Span { start, end }, sess.items.into_values().collect()))
    }

    /// When the next session closes (`None`: none is open).
    pub fn next_end(&self) -> Option<i64> {
        self.by_end.first().map(|(end, _, _)| *end)
    }

    /// Everything still held, e.g. to fail it when the task stops.
    pub fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        self.by_end.clear();
        std::mem::take(&mut self.open)
            .into_values()
            .flat_map(|m| m.into_values())
            .flat_map(|s| s.items.into_values())
    }

    /// Writes the whole machine (gap, watermark, every open session with its items) for a
    /// checkpoint; keys and items through the given writers.
    pub(crate) fn save(
        &self,
        w: &mut Writer,
        mut key: impl FnMut(&mut Writer, &K),
        mut item: impl FnMut(&mut Writer, &T),
    ) {
        w.i64(self.gap);
        w.i64(self.watermark);
        w.u64(self.seq);
        w.len(self.by_end.len());
        for (k, sessions) in &self.open {
            for (&start, sess) in sessions {
                key(w, k);
                w.i64(start);
                w.i64(sess.end);
                w.len(sess.items.len());
                for (&(ts, seq), t) in &sess.items {
                    w.i64(ts);
                    w.u64(seq);
                    item(w, t);
                }
            }
        }
    }

    /// Reads what [`save`](Self::save) wrote, for sessions with `gap` ms (refused when the
    /// checkpoint's differs).
    pub(crate) fn load(
        gap: i64,
        r: &mut Reader<'_>,
        mut key: impl FnMut(&mut Reader<'_>) -> Result<K, SnapshotError>,
        mut item: impl FnMut(&mut Reader<'_>) -> Result<T, SnapshotError>,
    ) -> Result<SessionWindows<K, T>, SnapshotError> {
        expect_eq("session gap (ms)", gap, r.i64("gap")?)?;
        let mut s = SessionWindows::new(gap);
        s.watermark = r.i64("watermark")?;
        s.seq = r.arrivals("seq")?;
        for _ in 0..r.len("sessions", 20)? {
            let k = key(r)?;
            let (start, end) = (r.i64("session start")?, r.i64("session end")?);
            let mut items = BTreeMap::new();
            for _ in 0..r.len("session items", 16)? {
                let at = (r.i64("timestamp")?, r.u64("arrival")?);
                items.insert(at, item(r)?);
            }
            let sessions = s.open.entry(k.clone()).or_default();
            if sessions.insert(start, Session { end, items }).is_some() {
                return Err(SnapshotError::Inconsistent(
                    "two sessions of a key start together",
                ));
            }
            s.by_end.insert((end, k, start));
        }
        Ok(s)
    }

    /// How many sessions are open.
    pub fn open_sessions(&self) -> usize {
        self.by_end.len()
    }
}
