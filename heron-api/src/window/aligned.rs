//! Tumbling and sliding windows by duration, aligned to the epoch: `[start, start + size)`
//! with `start` a multiple of the slide. A window closes when the watermark reaches its end;
//! an item is late when every window it belongs to has closed. A synchronous state machine:
//! the watermark is passed in (event time from the data, or the clock in processing time).

use std::collections::BTreeMap;

use super::snapshot::{expect_eq, Reader, SnapshotError, Writer};

/// One window: `[start, end)` in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    /// The first millisecond in the window.
    pub start: i64,
    /// The first millisecond after it.
    pub end: i64,
}

/// What became of an inserted item.
#[derive(Debug, PartialEq, Eq)]
pub enum Inserted<T> {
    /// Held until every window it belongs to has closed.
    Held,
    /// Every window it belongs to had closed already: given back.
    Late(T),
}

/// An item held in windows, with the end of the last fired window it was in.
#[derive(Debug)]
struct Held<T> {
    item: T,
    fired_in: Option<i64>,
}

/// Aligned tumbling (`slide == size`) or sliding (`slide < size`) windows over items with a
/// timestamp.
///
/// ```
/// use heron_api::window::{AlignedWindows, Inserted, Span};
///
/// let mut w = AlignedWindows::new(10, 5); // 10 ms windows every 5 ms
/// assert_eq!(w.insert(3, "a"), Inserted::Held);
/// assert_eq!(w.insert(7, "b"), Inserted::Held);
/// // the watermark reached 10: [-5, 5) and [0, 10) close
/// let first = w.next_due(10).unwrap();
/// assert_eq!(first, Span { start: -5, end: 5 });
/// assert_eq!(w.fire(first).items, vec![&"a"]);
/// let second = w.next_due(10).unwrap();
/// let fired = w.fire(second);
/// assert_eq!((fired.span.start, fired.items, fired.new), (0, vec![&"a", &"b"], vec![&"b"]));
/// assert_eq!(w.next_due(10), None);       // [5, 15) waits for watermark 15
/// assert_eq!(w.insert(2, "c"), Inserted::Late("c")); // [-5, 5) and [0, 10) are closed
/// ```
#[derive(Debug)]
pub struct AlignedWindows<T> {
    size: i64,
    slide: i64,
    /// Items by (timestamp, arrival), so equal timestamps keep their order.
    items: BTreeMap<(i64, u64), Held<T>>,
    seq: u64,
    /// Windows ending at or before this have fired (or were empty).
    closed_until: i64,
    /// The last window fired.
    last_fired: Option<Span>,
    /// Items evicted since the last window fired (its successor's expired items).
    evicted: Vec<T>,
}

/// A fired window's contents, in timestamp order.
#[derive(Debug)]
pub struct Fired<'a, T> {
    /// The window.
    pub span: Span,
    /// Every item in it.
    pub items: Vec<&'a T>,
    /// Those that were not in the previous fired window.
    pub new: Vec<&'a T>,
}

fn floor_to(x: i64, step: i64) -> i64 {
    // saturating: a timestamp near i64::MIN has no whole slide below it
    x.div_euclid(step).saturating_mul(step)
}

impl<T> AlignedWindows<T> {
    /// Windows of `size` ms starting every `slide` ms (`0 < slide <= size`).
    ///
    /// # Panics
    /// When `slide` is not in `1..=size` (the window configuration refuses that first).
    pub fn new(size: i64, slide: i64) -> AlignedWindows<T> {
        assert!(0 < slide && slide <= size, "0 < slide <= size");
        AlignedWindows {
            size,
            slide,
            items: BTreeMap::new(),
            seq: 0,
            closed_until: i64::MIN,
            last_fired: None,
            evicted: Vec::new(),
        }
    }

    /// The end of the last window holding `ts`.
    fn last_end(&self, ts: i64) -> i64 {
        floor_to(ts, self.slide).saturating_add(self.size)
    }

    /// The start of the first window holding `ts`.
    fn first_start(&self, ts: i64) -> i64 {
        floor_to(ts.saturating_sub(self.size), self.slide).saturating_add(self.slide)
    }

    /// Holds `item` (timestamp `ts` ms), unless it is late.
    pub fn insert(&mut self, ts: i64, item: T) -> Inserted<T> {
        if self.last_end(ts) <= self.closed_until {
            return Inserted::Late(item);
        }
        self.seq += 1;
        self.items.insert(
            (ts, self.seq),
            Held {
                item,
                fired_in: None,
            },
        );
        Inserted::Held
    }

    /// The next window to fire at `watermark`: the earliest-ending non-empty window that
    /// ends at or before it. Call [`fire`](Self::fire) with it, then ask again; when none is
    /// left, every window ending at or before the watermark counts as closed (an item for
    /// those only is late from then on).
    pub fn next_due(&mut self, watermark: i64) -> Option<Span> {
        self.evict();
        let candidate = self.first_open_start();
        let due = self.items.keys().next().and_then(|&(ts, _)| {
            let start = candidate.max(self.first_start(ts));
            let end = start.saturating_add(self.size);
            (end <= watermark).then_some(Span { start, end })
        });
        if due.is_none() {
            self.closed_until = self.closed_until.max(watermark);
        }
        due
    }

    /// The first window start that can still fire: after the last fired window, and not a
    /// window that closed (empty) under an earlier watermark.
    fn first_open_start(&self) -> i64 {
        let after_fired = self
            .last_fired
            .map_or(i64::MIN, |s| s.start.saturating_add(self.slide));
        let open = if self.closed_until == i64::MIN {
            i64::MIN
        } else {
            floor_to(self.closed_until.saturating_sub(self.size), self.slide)
                .saturating_add(self.slide)
        };
        after_fired.max(open)
    }

    /// The end of the next window to fire, whatever the watermark (`None`: nothing held).
    pub fn next_end(&self) -> Option<i64> {
        let candidate = self.first_open_start();
        let &(ts, _) = self.items.keys().next()?;
        Some(
            candidate
                .max(self.first_start(ts))
                .saturating_add(self.size),
        )
    }

    /// Moves the items whose last window has fired to the expired list.
    fn evict(&mut self) {
        let Some(last) = self.last_fired else { return };
        let (size, slide) = (self.size, self.slide);
        while let Some(entry) = self.items.first_entry() {
            if floor_to(entry.key().0, slide).saturating_add(size) > last.end {
                break;
            }
            self.evicted.push(entry.remove().item);
        }
    }

    /// Fires `span` (from [`next_due`](Self::next_due)): every item in it, in timestamp
    /// order, and which of them were not in the previous fired window.
    pub fn fire(&mut self, span: Span) -> Fired<'_, T> {
        let prev_end = self.last_fired.replace(span).map(|p| p.end);
        self.closed_until = self.closed_until.max(span.end);
        let mut items = Vec::new();
        let mut new = Vec::new();
        for (_, h) in self.items.range_mut((span.start, 0)..(span.end, 0)) {
            let is_new = h.fired_in.is_none() || h.fired_in != prev_end;
            h.fired_in = Some(span.end);
            let h: &Held<T> = h;
            if is_new {
                new.push(&h.item);
            }
            items.push(&h.item);
        }
        Fired { span, items, new }
    }

    /// The items that left every window since the last call (those of windows fired before
    /// the last [`next_due`](Self::next_due)): the next window's expired items, to be acked.
    pub fn take_expired(&mut self) -> Vec<T> {
        std::mem::take(&mut self.evicted)
    }

    /// Everything still held (oldest first), e.g. to fail it when the task stops.
    pub fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        let evicted = std::mem::take(&mut self.evicted);
        evicted.into_iter().chain(
            std::mem::take(&mut self.items)
                .into_values()
                .map(|h| h.item),
        )
    }

    /// Writes the whole machine (parameters, watermark bookkeeping, held items with the
    /// window each last fired in, evicted items) for a checkpoint.
    pub(crate) fn save(&self, w: &mut Writer, mut item: impl FnMut(&mut Writer, &T)) {
        w.i64(self.size);
        w.i64(self.slide);
        w.u64(self.seq);
        w.i64(self.closed_until);
        w.opt_i64(self.last_fired.map(|s| s.start));
        w.opt_i64(self.last_fired.map(|s| s.end));
        w.len(self.items.len());
        for (&(ts, seq), h) in &self.items {
            w.i64(ts);
            w.u64(seq);
            w.opt_i64(h.fired_in);
            item(w, &h.item);
        }
        w.len(self.evicted.len());
        for t in &self.evicted {
            item(w, t);
        }
    }

    /// Reads what [`save`](Self::save) wrote, for windows of `size` every `slide` ms
    /// (refused when the checkpoint's differ).
    pub(crate) fn load(
        size: i64,
        slide: i64,
        r: &mut Reader<'_>,
        mut item: impl FnMut(&mut Reader<'_>) -> Result<T, SnapshotError>,
    ) -> Result<AlignedWindows<T>, SnapshotError> {
        expect_eq("size (ms)", size, r.i64("size")?)?;
        expect_eq("slide (ms)", slide, r.i64("slide")?)?;
        let mut w = AlignedWindows::new(size, slide);
        w.seq = r.arrivals("seq")?;
        w.closed_until = r.i64("closed until")?;
        let (start, end) = (r.opt_i64("last fired")?, r.opt_i64("last fired")?);
        w.last_fired = start.zip(end).map(|(start, end)| Span { start, end });
        for _ in 0..r.len("held items", 25)? {
            let key = (r.i64("timestamp")?, r.u64("arrival")?);
            let fired_in = r.opt_i64("fired in")?;
            let item = item(r)?;
            w.items.insert(key, Held { item, fired_in });
        }
        for _ in 0..r.len("evicted items", 1)? {
            w.evicted.push(item(r)?);
        }
        Ok(w)
    }

    /// How many items are held (not yet evicted).
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// `true` when no item is held.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}
