//! Storm's windows when a length or a slide is a count (processing time): every `slide`
//! tuples (or every `slide` of time), the window is the last `length` tuples (or those that
//! arrived within `length`). Items leave ("expire") when the length no longer covers them.

use std::collections::VecDeque;
use std::time::Duration;

use super::snapshot::{expect_eq, Reader, SnapshotError, Writer};

/// A window length or slide: a number of tuples or a duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    /// So many tuples.
    Count(u64),
    /// So much time.
    Duration(Duration),
}

impl Length {
    /// `n` tuples.
    pub fn count(n: u64) -> Length {
        Length::Count(n)
    }

    /// `d` of time.
    pub fn duration(d: Duration) -> Length {
        Length::Duration(d)
    }

    pub(crate) fn as_ms(self) -> Option<i64> {
        match self {
            Length::Duration(d) => Some(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
            Length::Count(_) => None,
        }
    }
}

#[derive(Debug)]
struct Item<T> {
    arrived_ms: i64,
    item: T,
    fired: bool,
}

/// Windows by count or arrival time with a count or time slide (Storm's processing-time
/// windows).
///
/// ```
/// use heron_api::window::{CountWindows, Length};
///
/// // the last 3 tuples, every 2 tuples
/// let mut w = CountWindows::new(Length::Count(3), Length::Count(2));
/// assert!(!w.insert(0, 'a'));
/// assert!(w.insert(0, 'b'));               // the slide is reached: fire now
/// let f = w.fire(0);
/// assert_eq!((f.items, f.new, f.expired), (vec![&'a', &'b'], vec![&'a', &'b'], vec![]));
/// w.insert(0, 'c');
/// assert!(w.insert(0, 'd'));
/// let f = w.fire(0);
/// assert_eq!((f.items, f.new, f.expired), (vec![&'b', &'c', &'d'], vec![&'c', &'d'], vec!['a']));
/// ```
#[derive(Debug)]
pub struct CountWindows<T> {
    length: Length,
    slide: Length,
    items: VecDeque<Item<T>>,
    since_fire: u64,
    last_fire_ms: Option<i64>,
    expired: Vec<T>,
}

/// A fired count window: every item in it (oldest first), the new ones since the last
/// window, and the ones that expired since then (owned: they left the window for good).
#[derive(Debug)]
pub struct CountFired<'a, T> {
    /// Every item in the window.
    pub items: Vec<&'a T>,
    /// Those that were not in the previous window.
    pub new: Vec<&'a T>,
    /// Those that left since the previous window.
    pub expired: Vec<T>,
}

impl<T> CountWindows<T> {
    /// Windows of `length` every `slide` (counts at least 1, durations at least 1 ms).
    pub fn new(length: Length, slide: Length) -> CountWindows<T> {
        CountWindows {
            length,
            slide,
            items: VecDeque::new(),
            since_fire: 0,
            last_fire_ms: None,
            expired: Vec::new(),
        }
    }

    /// Adds an item that arrived at `now_ms`; `true` when a count slide is reached, so the
    /// window fires now.
    pub fn insert(&mut self, now_ms: i64, item: T) -> bool {
        self.last_fire_ms.get_or_insert(now_ms);
        self.items.push_back(Item {
            arrived_ms: now_ms,
            item,
            fired: false,
        });
        self.since_fire = self.since_fire.saturating_add(1);
        // a count length bounds what is held even between windows
        if let Length::Count(n) = self.length {
            while self.items.len() as u64 > n.max(1) {
                let old = self.items.pop_front().expect("non-empty");
                self.expired.push(old.item);
            }
        }
        matches!(self.slide, Length::Count(m) if self.since_fire >= m.max(1))
    }

    /// When a time slide fires next (`None`: a count slide, or nothing arrived yet).
    pub fn next_timer(&self) -> Option<i64> {
        let slide = self.slide.as_ms()?;
        Some(self.last_fire_ms?.saturating_add(slide.max(1)))
    }

    /// Fires the window at `now_ms`: evicts what the length no longer covers, then gives
    /// the window. An empty window with nothing expired has nothing in it to show.
    pub fn fire(&mut self, now_ms: i64) -> CountFired<'_, T> {
        self.since_fire = 0;
        self.last_fire_ms = Some(now_ms);
        if let Some(len) = self.length.as_ms() {
            while self
                .items
                .front()
                .is_some_and(|i| i.arrived_ms <= now_ms.saturating_sub(len))
            {
                let old = self.items.pop_front().expect("non-empty");
                self.expired.push(old.item);
            }
        }
        let expired = std::mem::take(&mut self.expired);
        let mut items = Vec::with_capacity(self.items.len());
        let mut new = Vec::new();
        for i in self.items.iter_mut() {
            let was_new = !i.fired;
            i.fired = true;
            let i: &Item<T> = i;
            if was_new {
                new.push(&i.item);
            }
            items.push(&i.item);
        }
        CountFired {
            items,
            new,
            expired,
        }
    }

    /// Everything still held.
    pub fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        std::mem::take(&mut self.expired)
            .into_iter()
            .chain(std::mem::take(&mut self.items).into_iter().map(|i| i.item))
    }

    /// Writes the whole machine (clock of the last fire, tuples since it, held items with
    /// their arrival, expired items) for a checkpoint.
    pub(crate) fn save(&self, w: &mut Writer, mut item: impl FnMut(&mut Writer, &T)) {
        w.str(&format!("{:?}/{:?}", self.length, self.slide));
        w.u64(self.since_fire);
        w.opt_i64(self.last_fire_ms);
        w.len(self.items.len());
        for i in &self.items {
            w.i64(i.arrived_ms);
            w.bool(i.fired);
            item(w, &i.item);
        }
        w.len(self.expired.len());
        for t in &self.expired {
            item(w, t);
        }
    }

    /// Reads what [`save`](Self::save) wrote, for windows of `length` every `slide`
    /// (refused when the checkpoint's differ).
    pub(crate) fn load(
        length: Length,
        slide: Length,
        r: &mut Reader<'_>,
        mut item: impl FnMut(&mut Reader<'_>) -> Result<T, SnapshotError>,
    ) -> Result<CountWindows<T>, SnapshotError> {
        let shape = format!("{length:?}/{slide:?}");
        expect_eq("length/slide", shape.as_str(), r.str("length/slide")?)?;
        let mut w = CountWindows::new(length, slide);
        w.since_fire = r.u64("since fire")?;
        w.last_fire_ms = r.opt_i64("last fire")?;
        for _ in 0..r.len("held items", 10)? {
            let arrived_ms = r.i64("arrival")?;
            let fired = r.bool("fired")?;
            let item = item(r)?;
            w.items.push_back(Item {
                arrived_ms,
                item,
                fired,
            });
        }
        for _ in 0..r.len("expired items", 1)? {
            w.expired.push(item(r)?);
        }
        Ok(w)
    }

    /// How many items are in the window.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// `true` when the window holds nothing.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}
