//! Data sets kept per destination task: tuples grouped by the task each goes to, so that
//! every set names its one task (`HeronDataTupleSet` field
//! [`DEST_TASK_FIELD`](heron_proto::tuple::DEST_TASK_FIELD)) and the stream manager forwards
//! it without reading each tuple's destination and routing it.
//!
//! The emitter knows the task of a tuple on a direct stream, and of a tuple on a stream whose
//! one consumer groups it by fields or shuffles it ([`Route`]). In `ATLEAST_ONCE` it keys the
//! anchored tuples it addresses itself and marks the sets keyed
//! ([`KEYED_FIELD`](heron_proto::tuple::KEYED_FIELD)). It keeps one
//! stream's tuples here at a time and closes every set when the stream changes, or when an
//! emit of the stream is not addressed (a pinned one), so tuples keep their emit order across
//! streams and within a stream each task's tuples keep theirs.

use bytes::BytesMut;
use heron_proto::grouping::{combine, Modulus};
use heron_proto::tuple::put_data_set_frame_to;

use super::{DATA_SET_MAX_BYTES, DATA_SET_MAX_TUPLES};
use crate::{Fields, Value};

/// The task a stream's one consumer gets each tuple at, chosen in the emitter so that the
/// stream managers forward its sets whole.
pub(super) enum Route {
    /// FIELDS: the stream managers' hash.
    Fields(FieldsRoute),
    /// SHUFFLE or NONE: a round robin of the emitter's own.
    Shuffle(ShuffleRoute),
}

impl Route {
    /// The slot and the task of a tuple with `values`: the slot is the task's index among
    /// the consumer's tasks, so that [`DestSets::buffer_at`] finds its set without a search.
    #[inline]
    pub fn slot(&mut self, values: &[Value]) -> (usize, i32) {
        match self {
            Route::Fields(r) => r.slot(values),
            Route::Shuffle(r) => r.slot(),
        }
    }
}

/// SHUFFLE (and NONE) chosen by the emitter: a round robin over the consumer's tasks from a
/// given start, one tuple each, as a stream manager's shuffle grouping chooses them for the
/// tuples it routes one by one (each emitting task keeps its own round).
pub(super) struct ShuffleRoute {
    /// The consumer's tasks, ascending.
    tasks: Vec<i32>,
    /// The index of the next tuple's task.
    next: usize,
}

impl ShuffleRoute {
    /// A round robin over `tasks` starting at the index `start % tasks.len()`; `None` when
    /// there are no tasks.
    pub fn new(tasks: &[i32], start: u64) -> Option<ShuffleRoute> {
        let mut tasks = tasks.to_vec();
        tasks.sort_unstable();
        tasks.dedup();
        let n = u64::try_from(tasks.len()).ok().filter(|&n| n > 0)?;
        let next = usize::try_from(start % n).ok()?;
        Some(ShuffleRoute { tasks, next })
    }

    /// The next tuple's slot (index in the tasks) and task.
    #[inline]
    pub fn slot(&mut self) -> (usize, i32) {
        let slot = self.next;
        let task = self.tasks[slot];
        self.next += 1;
        if self.next == self.tasks.len() {
            self.next = 0;
        }
        (slot, task)
    }
}

/// The task a stream's one FIELDS consumer gets each tuple at, computed as the stream
/// managers do ([`heron_proto::grouping`]): so that the emitter can address the tuple's set.
pub(super) struct FieldsRoute {
    /// Schema indices of the grouping fields, ascending.
    indices: Vec<usize>,
    /// The consumer's tasks, ascending.
    tasks: Vec<i32>,
    modulus: Modulus,
}

impl FieldsRoute {
    /// The route of a stream declaring `declared` to a consumer with `tasks` grouping it by
    /// `by`; `None` when a grouping field is not declared (the plan is refused elsewhere) or
    /// there are no tasks.
    pub fn new(declared: &Fields, by: &Fields, tasks: &[i32]) -> Option<FieldsRoute> {
        let mut indices = by
            .iter()
            .map(|f| declared.iter().position(|d| d == f))
            .collect::<Option<Vec<usize>>>()?;
        indices.sort_unstable();
        indices.dedup();
        let mut tasks = tasks.to_vec();
        tasks.sort_unstable();
        (!tasks.is_empty()).then(|| FieldsRoute {
            indices,
            modulus: Modulus::new(tasks.len()),
            tasks,
        })
    }

    /// The slot (index in the tasks) and the task of a tuple with `values`.
    #[inline]
    pub fn slot(&mut self, values: &[Value]) -> (usize, i32) {
        // One string field, a word count's shape: hashed here, without the loop and the
        // dispatch on each value's type that cost the split's emits a tenth (criterion
        // `bolt_fields_addressed_reused`: 30.4 to 27.5 ns). Any other: out of line.
        let h = match *self.indices.as_slice() {
            [i] => match &values[i] {
                Value::Str(s) => combine(0, crate::value::str_grouping_hash(s)),
                _ => self.hash(values),
            },
            _ => self.hash(values),
        };
        let slot = self.modulus.rem(h);
        (slot, self.tasks[slot])
    }

    /// The fields hash of `values`, for any grouping fields.
    #[inline(never)]
    fn hash(&self, values: &[Value]) -> u64 {
        self.indices
            .iter()
            .fold(0, |h, &i| combine(h, values[i].grouping_hash()))
    }
}

/// One destination's open set.
#[derive(Default)]
struct DestSet {
    task: i32,
    /// The encoded tuples.
    tuples: BytesMut,
    count: usize,
}

impl DestSet {
    /// Whether the set holds as many tuples or bytes as a set may.
    #[inline]
    fn full(&self) -> bool {
        self.count >= DATA_SET_MAX_TUPLES || self.tuples.len() >= DATA_SET_MAX_BYTES
    }

    fn close(&mut self, frames: &mut BytesMut, stream_field: &[u8], keyed: bool, src_task: i32) {
        if self.count > 0 {
            let (task, tuples) = (self.task, &self.tuples);
            put_data_set_frame_to(frames, stream_field, task, keyed, tuples, src_task);
            self.tuples.clear();
            self.count = 0;
        }
    }
}

/// The open sets of one stream, one per destination task (their buffers kept for the next).
#[derive(Default)]
pub(super) struct DestSets {
    /// The sets' anchored tuples carry the keys the emitter gave them (`ATLEAST_ONCE`).
    keyed: bool,
    sets: Vec<DestSet>,
    /// The set the last tuple went to: consecutive emits often go to one task.
    last: usize,
    /// Bytes held over every set.
    bytes: usize,
}

impl DestSets {
    /// No open set yet; `keyed`: the emitter keys the sets' anchored tuples.
    pub fn new(keyed: bool) -> DestSets {
        DestSets {
            keyed,
            ..DestSets::default()
        }
    }

    /// The buffer for the next tuple to `task`, after closing that task's set into `frames`
    /// if it is full. Call [`DestSets::pushed`] after writing the tuple.
    #[inline]
    pub fn buffer(
        &mut self,
        task: i32,
        frames: &mut BytesMut,
        stream_field: &[u8],
        src_task: i32,
    ) -> &mut BytesMut {
        if self.sets.get(self.last).is_none_or(|s| s.task != task) {
            self.last = match self.sets.iter().position(|s| s.task == task) {
                Some(i) => i,
                None => {
                    self.sets.push(DestSet {
                        task,
                        ..DestSet::default()
                    });
                    self.sets.len() - 1
                }
            };
        }
        let set = &mut self.sets[self.last];
        if set.full() {
            self.bytes -= set.tuples.len();
            set.close(frames, stream_field, self.keyed, src_task);
        }
        self.bytes -= set.tuples.len();
        &mut set.tuples
    }

    /// [`DestSets::buffer`] for a routed stream, whose tasks have fixed slots
    /// ([`Route::slot`]): the set of `task` is the one at `slot`, found without a search or
    /// a branch that depends on the task. A set that held another task's tuples (of another
    /// run) is closed first.
    #[inline]
    pub fn buffer_at(
        &mut self,
        slot: usize,
        task: i32,
        frames: &mut BytesMut,
        stream_field: &[u8],
        src_task: i32,
    ) -> &mut BytesMut {
        if slot >= self.sets.len() {
            self.sets.resize_with(slot + 1, DestSet::default);
        }
        self.last = slot;
        let set = &mut self.sets[slot];
        if set.task != task || set.full() {
            self.bytes -= set.tuples.len();
            set.close(frames, stream_field, self.keyed, src_task);
            set.task = task;
        }
        self.bytes -= set.tuples.len();
        &mut set.tuples
    }

    /// Counts the tuple just written into the buffer [`DestSets::buffer`] or
    /// [`DestSets::buffer_at`] returned.
    #[inline]
    pub fn pushed(&mut self) {
        let set = &mut self.sets[self.last];
        set.count += 1;
        self.bytes += set.tuples.len();
    }

    /// Closes every open set into `frames`, in the order the tasks first got a tuple.
    pub fn close_all(&mut self, frames: &mut BytesMut, stream_field: &[u8], src_task: i32) {
        for set in &mut self.sets {
            set.close(frames, stream_field, self.keyed, src_task);
        }
        self.bytes = 0;
    }

    /// Bytes of tuples held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heron_proto::tuple::{put_data_tuple, split_data_set, split_tuple_set, stream_field};
    use heron_proto::HeronCodec;

    fn push(sets: &mut DestSets, frames: &mut BytesMut, task: i32, value: &[u8]) {
        let field = stream_field("s", "c");
        let buf = sets.buffer(task, frames, &field, 1);
        put_data_tuple(buf, &[], &[value], &[task]);
        sets.pushed();
    }

    /// (dest task, values) of every set in `frames`.
    fn sets_in(frames: &mut BytesMut) -> Vec<(Option<i32>, Vec<Vec<u8>>)> {
        let codec = HeronCodec::new(0);
        let mut out = Vec::new();
        while let Some(p) = codec.decode_packet(frames).unwrap() {
            let data = split_tuple_set(&p.payload).unwrap().data.unwrap();
            let set = split_data_set(data).unwrap();
            let mut vals = Vec::new();
            set.for_each_tuple(|t| {
                vals.extend(heron_proto::tuple::values(t).map(<[u8]>::to_vec));
                Ok(())
            })
            .unwrap();
            out.push((set.dest_task, vals));
        }
        out
    }

    #[test]
    fn tuples_are_grouped_by_task_in_emit_order_and_bytes_are_counted() {
        let (mut sets, mut frames) = (DestSets::default(), BytesMut::new());
        for (task, v) in [
            (5, b"a"),
            (7, b"b"),
            (5, b"c"),
            (5, b"d"),
            (9, b"e"),
            (7, b"f"),
        ] {
            push(&mut sets, &mut frames, task, v);
        }
        assert!(frames.is_empty(), "nothing closed yet");
        assert!(sets.bytes() > 6 * 3, "{}", sets.bytes());
        sets.close_all(&mut frames, &stream_field("s", "c"), 1);
        assert_eq!(sets.bytes(), 0);
        let v = |s: &[&[u8]]| s.iter().map(|b| b.to_vec()).collect::<Vec<_>>();
        assert_eq!(
            sets_in(&mut frames),
            vec![
                (Some(5), v(&[b"a", b"c", b"d"])),
                (Some(7), v(&[b"b", b"f"])),
                (Some(9), v(&[b"e"])),
            ]
        );
        // closed sets are empty: closing again writes nothing, the next tuples start afresh
        sets.close_all(&mut frames, &stream_field("s", "c"), 1);
        assert!(frames.is_empty());
        push(&mut sets, &mut frames, 7, b"g");
        sets.close_all(&mut frames, &stream_field("s", "c"), 1);
        assert_eq!(sets_in(&mut frames), vec![(Some(7), v(&[b"g"]))]);
    }

    #[test]
    fn a_shuffle_route_takes_every_task_in_turn_from_its_start() {
        let mut r = ShuffleRoute::new(&[9, 4, 12, 4], 7).unwrap();
        let got: Vec<(usize, i32)> = (0..7).map(|_| r.slot()).collect();
        // tasks ascending and once each; 7 % 3 = 1: from the second; a task's slot is its index
        assert_eq!(
            got,
            [(1, 9), (2, 12), (0, 4), (1, 9), (2, 12), (0, 4), (1, 9)]
        );
        assert!(ShuffleRoute::new(&[], 3).is_none());
        let mut one = ShuffleRoute::new(&[5], u64::MAX).unwrap();
        assert_eq!((one.slot(), one.slot()), ((0, 5), (0, 5)));
    }

    #[test]
    fn a_fields_route_picks_the_task_the_stream_managers_hash_picks() {
        let declared = Fields::new(["word", "n", "ts"]);
        let tasks = [12, 4, 9];
        let sorted = [4, 9, 12];
        // by the formula, over the encoded values in schema order (the payload hashed with
        // the tag as seed), tasks ascending
        let enc = |v: &Value| {
            let mut b = Vec::new();
            v.encode(&mut b);
            xxhash_rust::xxh3::xxh3_64_with_seed(&b[1..], u64::from(b[0]))
        };
        // two fields (given out of schema order); one string field (the inline path); one
        // int field (a single field of another type)
        for (by, indices) in [
            (&["ts", "word"][..], &[0, 2][..]),
            (&["word"][..], &[0][..]),
            (&["n"][..], &[1][..]),
        ] {
            let mut r =
                FieldsRoute::new(&declared, &Fields::new(by.iter().copied()), &tasks).unwrap();
            for (w, n, ts) in [("a", 1, 5), ("hello", 2, 5), ("a", 3, 6), ("", 0, 0)] {
                let values = [Value::from(w), Value::from(n), Value::from(ts)];
                let h = indices.iter().fold(0u64, |h, &i| {
                    h.wrapping_mul(31).wrapping_add(enc(&values[i]))
                });
                let slot = (h % 3) as usize;
                assert_eq!(
                    r.slot(&values),
                    (slot, sorted[slot]),
                    "{by:?}: {w} {n} {ts}"
                );
            }
        }
        let words: Vec<String> = (0..200).map(|i| format!("w{}", i * 7919 % 1000)).collect();
        let mut r = FieldsRoute::new(&declared, &Fields::new(["word"]), &tasks).unwrap();
        for w in &words {
            let values = [Value::from(w.as_str()), Value::from(0), Value::from(0)];
            let slot = (enc(&values[0]) % 3) as usize;
            assert_eq!(r.slot(&values), (slot, sorted[slot]), "{w}");
        }
        assert!(FieldsRoute::new(&declared, &Fields::new(["nope"]), &tasks).is_none());
        assert!(FieldsRoute::new(&declared, &Fields::new(["word"]), &[]).is_none());
    }

    fn push_at(sets: &mut DestSets, frames: &mut BytesMut, slot: usize, task: i32, value: &[u8]) {
        let field = stream_field("s", "c");
        let buf = sets.buffer_at(slot, task, frames, &field, 1);
        put_data_tuple(buf, &[], &[value], &[task]);
        sets.pushed();
    }

    #[test]
    fn slots_hold_their_tasks_sets_and_a_slot_taken_over_closes_first() {
        let (mut sets, mut frames) = (DestSets::default(), BytesMut::new());
        let field = stream_field("s", "c");
        // a routed run: slots 2 and 0 first, the sets grow to fit
        for (slot, task, v) in [(2, 12, b"a"), (0, 4, b"b"), (2, 12, b"c")] {
            push_at(&mut sets, &mut frames, slot, task, v);
        }
        assert!(frames.is_empty());
        let held = sets.bytes();
        // a direct run's search finds a slot's set by its task
        push(&mut sets, &mut frames, 4, b"d");
        assert!(frames.is_empty() && sets.bytes() > held);
        // another task at a slot that holds tuples: that set is closed before the tuple
        push_at(&mut sets, &mut frames, 0, 9, b"e");
        let v = |s: &[&[u8]]| s.iter().map(|b| b.to_vec()).collect::<Vec<_>>();
        assert_eq!(sets_in(&mut frames), vec![(Some(4), v(&[b"b", b"d"]))]);
        sets.close_all(&mut frames, &field, 1);
        assert_eq!(sets.bytes(), 0);
        // closed in slot order
        assert_eq!(
            sets_in(&mut frames),
            vec![(Some(9), v(&[b"e"])), (Some(12), v(&[b"a", b"c"]))]
        );
        // after the run's close, a slot takes another task with nothing to close
        push_at(&mut sets, &mut frames, 2, 5, b"f");
        assert!(frames.is_empty());
        sets.close_all(&mut frames, &field, 1);
        assert_eq!(sets_in(&mut frames), vec![(Some(5), v(&[b"f"]))]);
    }

    #[test]
    fn a_full_set_closes_before_the_next_tuple() {
        let (mut sets, mut frames) = (DestSets::default(), BytesMut::new());
        for _ in 0..DATA_SET_MAX_TUPLES + 1 {
            push(&mut sets, &mut frames, 3, b"x");
        }
        let closed = sets_in(&mut frames);
        assert_eq!(closed.len(), 1);
        assert_eq!(closed[0].1.len(), DATA_SET_MAX_TUPLES);
        sets.close_all(&mut frames, &stream_field("s", "c"), 1);
        assert_eq!(sets_in(&mut frames)[0].1.len(), 1);
    }
}
