//! Per-destination-task batching of tuples into `HeronTupleSet2` messages.
//!
//! Each destination slot has one batch buffer, reused for the life of the plan. A batch holds
//! tuples of one source task and one stream; it closes when another source or stream comes,
//! when it reaches the batch size, or when the cache is flushed (the core flushes when it has
//! no more input pending, and at the latest [`FLUSH_INTERVAL`] after a batch opened). A closed
//! batch is handed to a `deliver` callback, which frames it for its destination.
//!
//! A batch is built directly in its wire form by `heron_proto::tuple::Set2Builder`, so
//! closing it writes a few header bytes and copies nothing.

use crate::config::FLUSH_INTERVAL;
use heron_proto::tuple::{Set2Builder, TupleKey, SET2_FRAMING};
use std::time::Instant;

/// One destination's batch.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    set: Set2Builder,
    src_task: i32,
    stream: u32,
    open: bool,
    /// On the cache's list of slots to flush.
    listed: bool,
}

impl Batch {
    fn open(&mut self, src_task: i32, stream: u32, stream_field: &[u8]) {
        self.set.open(stream_field);
        self.src_task = src_task;
        self.stream = stream;
        self.open = true;
    }

    /// The task whose tuples the batch holds.
    pub fn src_task(&self) -> i32 {
        self.src_task
    }

    /// The number of tuples in the batch.
    pub fn tuples(&self) -> u32 {
        self.set.tuples()
    }

    /// Finishes the batch as an encoded `HeronTupleSet2` (for a local instance).
    /// Call once, after the batch closed.
    pub fn tuple_set(&mut self) -> &[u8] {
        self.set.tuple_set(self.src_task)
    }

    /// Finishes the batch as an encoded `TupleStreamMessage` to `dest_task` (for the stream
    /// manager that owns it), in restore `restore_txid` if given. Call once, after the batch
    /// closed, instead of [`Self::tuple_set`].
    pub fn stream_message(&mut self, dest_task: i32, restore_txid: Option<i64>) -> &[u8] {
        self.set
            .stream_message(dest_task, self.src_task, restore_txid)
    }
}

/// The batches of every destination slot.
#[derive(Debug)]
pub(crate) struct TupleCache {
    batches: Vec<Batch>,
    /// Slots whose batch opened since the last flush.
    listed: Vec<u32>,
    /// When the first batch opened since the last flush.
    first_open: Option<Instant>,
    batch_bytes: usize,
    /// Largest body a batch may reach so that its packet stays under the maximum size.
    max_body: usize,
}

impl TupleCache {
    /// A cache with no slots. Batches close at `batch_bytes` and their packets stay within
    /// `max_packet` bytes (with `overhead` bytes kept for framing).
    pub fn new(batch_bytes: usize, max_packet: usize, overhead: usize) -> TupleCache {
        let max_body = max_packet.saturating_sub(overhead + SET2_FRAMING).max(1);
        TupleCache {
            batches: Vec::new(),
            listed: Vec::new(),
            first_open: None,
            batch_bytes: batch_bytes.min(max_body).max(1),
            max_body,
        }
    }

    /// Sets the number of slots (after a new plan). Call on a flushed cache.
    pub fn resize(&mut self, slots: usize) {
        debug_assert!(self.listed.is_empty(), "resize of an unflushed cache");
        self.batches.resize_with(slots, Batch::default);
        self.batches.truncate(slots);
    }

    /// Adds `tuple` (an encoded `HeronDataTuple` of `stream` from `src_task`) to the batch of
    /// `slot`, delivering any batch this closes. `false` if the tuple alone is too large for a
    /// packet (it is not added).
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &mut self,
        slot: u32,
        src_task: i32,
        stream: u32,
        stream_field: &[u8],
        tuple: &[u8],
        now: Instant,
        deliver: &mut impl FnMut(u32, &mut Batch),
    ) -> bool {
        self.push_keyed(
            slot,
            src_task,
            stream,
            stream_field,
            tuple,
            None,
            now,
            deliver,
        )
    }

    /// [`TupleCache::push`], giving this copy of the tuple `key`.
    #[allow(clippy::too_many_arguments)]
    pub fn push_keyed(
        &mut self,
        slot: u32,
        src_task: i32,
        stream: u32,
        stream_field: &[u8],
        tuple: &[u8],
        key: Option<TupleKey>,
        now: Instant,
        deliver: &mut impl FnMut(u32, &mut Batch),
    ) -> bool {
        let entry = Set2Builder::entry_len(tuple.len(), key);
        let to = (slot, src_task, stream);
        self.add(to, stream_field, entry, now, deliver, |set| {
            set.push(tuple, key)
        })
    }

    /// Adds `n` tuples of `stream` from `src_task`, already encoded as one block of set
    /// entries ([`heron_proto::tuple::DataSetRef::tuple_block`]), to the batch of `slot` in
    /// one copy, delivering any batch this closes. `false` if the block does not fit one
    /// packet (nothing is added: push its tuples one by one).
    #[allow(clippy::too_many_arguments)]
    pub fn push_block(
        &mut self,
        slot: u32,
        src_task: i32,
        stream: u32,
        stream_field: &[u8],
        block: &[u8],
        n: u32,
        now: Instant,
        deliver: &mut impl FnMut(u32, &mut Batch),
    ) -> bool {
        let to = (slot, src_task, stream);
        self.add(to, stream_field, block.len(), now, deliver, |set| {
            set.push_entries(block, n)
        })
    }

    /// Writes `entry` bytes into the batch of `slot` (`to`: slot, source task, stream) with
    /// `write`, delivering the batch there first when it holds another source or stream or
    /// lacks room, and after when it reached the batch size. `false` if `entry` alone does
    /// not fit a packet (nothing is written).
    #[inline]
    fn add(
        &mut self,
        (slot, src_task, stream): (u32, i32, u32),
        stream_field: &[u8],
        entry: usize,
        now: Instant,
        deliver: &mut impl FnMut(u32, &mut Batch),
        write: impl FnOnce(&mut Set2Builder),
    ) -> bool {
        if stream_field.len() + entry > self.max_body {
            return false;
        }
        let b = &mut self.batches[slot as usize];
        if b.open
            && (b.src_task != src_task
                || b.stream != stream
                || b.set.body_len() + entry > self.max_body)
        {
            b.open = false;
            deliver(slot, b);
        }
        if !b.open {
            b.open(src_task, stream, stream_field);
            if !b.listed {
                b.listed = true;
                self.listed.push(slot);
            }
            self.first_open.get_or_insert(now);
        }
        write(&mut b.set);
        if b.set.body_len() >= self.batch_bytes {
            b.open = false;
            deliver(slot, b);
        }
        true
    }

    /// `true` when the open batches should go out now: the caller is idle, or the oldest
    /// one has waited [`FLUSH_INTERVAL`].
    pub fn due(&self, now: Instant, idle: bool) -> bool {
        self.first_open
            .is_some_and(|t| idle || now >= t + FLUSH_INTERVAL)
    }

    /// When the open batches must go out at the latest.
    pub fn deadline(&self) -> Option<Instant> {
        self.first_open.map(|t| t + FLUSH_INTERVAL)
    }

    /// Closes and delivers every open batch.
    pub fn flush(&mut self, deliver: &mut impl FnMut(u32, &mut Batch)) {
        for slot in self.listed.drain(..) {
            let b = &mut self.batches[slot as usize];
            b.listed = false;
            if b.open {
                b.open = false;
                deliver(slot, b);
            }
        }
        self.first_open = None;
    }

    /// Drops every open batch (a restore: what was routed before it must not arrive);
    /// returns the number of tuples dropped.
    pub fn discard(&mut self) -> u64 {
        let mut dropped = 0;
        for slot in self.listed.drain(..) {
            let b = &mut self.batches[slot as usize];
            b.listed = false;
            if b.open {
                b.open = false;
                dropped += u64::from(b.tuples());
            }
        }
        self.first_open = None;
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heron_proto::api::StreamId;
    use heron_proto::stmgr::TupleStreamMessage;
    use heron_proto::system::{HeronDataTupleSet2, HeronTupleSet2};
    use heron_proto::Message;
    use std::time::Duration;

    fn field(stream: &str) -> Vec<u8> {
        HeronDataTupleSet2 {
            stream: StreamId {
                id: stream.into(),
                component_name: "spout".into(),
            },
            tuples: vec![],
        }
        .encode_to_vec()
    }

    /// Collects delivered batches as (slot, decoded set).
    fn collect(out: &mut Vec<(u32, HeronTupleSet2)>) -> impl FnMut(u32, &mut Batch) + '_ {
        |slot, b| out.push((slot, HeronTupleSet2::decode(b.tuple_set()).unwrap()))
    }

    #[test]
    fn a_batch_encodes_as_heron_tuple_set2_and_as_tuple_stream_message() {
        let f = field("default");
        let mut cache = TupleCache::new(1 << 20, 1 << 20, 0);
        cache.resize(2);
        let now = Instant::now();
        let mut none = |_: u32, _: &mut Batch| panic!("nothing closes");
        for t in [&b"one"[..], b"two", &[7u8; 300][..]] {
            assert!(cache.push(1, -5, 0, &f, t, now, &mut none));
        }
        let mut got = Vec::new();
        cache.flush(&mut |slot, b: &mut Batch| {
            assert_eq!((b.tuples(), b.src_task), (3, -5));
            got.push((
                slot,
                TupleStreamMessage::decode(b.stream_message(42, None)).unwrap(),
            ));
        });
        assert_eq!(got.len(), 1);
        let (slot, msg) = &got[0];
        assert_eq!(
            (*slot, msg.task_id, msg.src_task_id, msg.num_tuples),
            (1, 42, -5, 3)
        );
        let set = HeronTupleSet2::decode(msg.set.clone()).unwrap();
        assert_eq!(set.src_task_id, -5);
        let data = set.data.unwrap();
        assert_eq!(data.stream.id, "default");
        assert_eq!(data.tuples[0], &b"one"[..]);
        assert_eq!(data.tuples[2], vec![7u8; 300]);
        assert!(cache.deadline().is_none());
    }

    #[test]
    fn a_new_source_or_stream_closes_the_open_batch() {
        let (fa, fb) = (field("a"), field("b"));
        let mut cache = TupleCache::new(1 << 20, 1 << 20, 0);
        cache.resize(1);
        let now = Instant::now();
        let mut out = Vec::new();
        let mut d = collect(&mut out);
        cache.push(0, 1, 0, &fa, b"x", now, &mut d);
        cache.push(0, 1, 0, &fa, b"y", now, &mut d);
        cache.push(0, 2, 0, &fa, b"z", now, &mut d); // other source
        cache.push(0, 2, 1, &fb, b"w", now, &mut d); // other stream
        cache.flush(&mut d);
        drop(d);
        let shape: Vec<(i32, String, usize)> = out
            .iter()
            .map(|(_, s)| {
                let data = s.data.as_ref().unwrap();
                (s.src_task_id, data.stream.id.clone(), data.tuples.len())
            })
            .collect();
        assert_eq!(
            shape,
            vec![(1, "a".into(), 2), (2, "a".into(), 1), (2, "b".into(), 1)]
        );
    }

    #[test]
    fn a_block_of_entries_joins_the_batch_as_its_tuples_would() {
        let f = field("s");
        let mut cache = TupleCache::new(1 << 20, 200, 0);
        cache.resize(1);
        let now = Instant::now();
        // two tuples as a set's block: tag, length, tuple each
        let block = [&[0x12, 2][..], b"bc", &[0x12, 1], b"d"].concat();
        let mut out = Vec::new();
        let mut d = collect(&mut out);
        cache.push(0, 1, 0, &f, b"a", now, &mut d);
        assert!(cache.push_block(0, 1, 0, &f, &block, 2, now, &mut d));
        cache.push(0, 1, 0, &f, b"e", now, &mut d);
        assert!(
            cache.push_block(0, 2, 0, &f, &block, 2, now, &mut d),
            "other source"
        );
        // a block larger than a packet is refused, and nothing of it added
        let big = [&[0x12, 0x80, 0x02][..], &[9u8; 256]].concat();
        assert!(!cache.push_block(0, 2, 0, &f, &big, 1, now, &mut d));
        cache.flush(&mut d);
        drop(d);
        let got: Vec<(i32, Vec<Vec<u8>>)> = out
            .iter()
            .map(|(_, s)| {
                let tuples = &s.data.as_ref().unwrap().tuples;
                (s.src_task_id, tuples.iter().map(|b| b.to_vec()).collect())
            })
            .collect();
        let t = |v: &[&[u8]]| v.iter().map(|b| b.to_vec()).collect::<Vec<_>>();
        assert_eq!(
            got,
            vec![(1, t(&[b"a", b"bc", b"d", b"e"])), (2, t(&[b"bc", b"d"]))]
        );
    }

    #[test]
    fn batches_close_on_size_and_stay_under_the_packet_limit() {
        let f = field("s");
        let mut cache = TupleCache::new(100, 1 << 20, 0);
        cache.resize(1);
        let now = Instant::now();
        let mut out = Vec::new();
        let mut d = collect(&mut out);
        for _ in 0..10 {
            cache.push(0, 1, 0, &f, &[1u8; 30], now, &mut d);
        }
        drop(d);
        // 32 bytes per entry: every 4th tuple reaches 100 bytes of body (with the stream field)
        assert!(out.len() >= 2, "closed on size: {}", out.len());
        assert!(out
            .iter()
            .all(|(_, s)| s.data.as_ref().unwrap().tuples.len() <= 4));

        // a packet limit below the batch size wins
        // the builder keeps half its framing allowance in front, half behind
        const TRAILER: usize = SET2_FRAMING / 2;
        let mut small = TupleCache::new(1 << 20, 200 + SET2_FRAMING, 0);
        small.resize(1);
        let mut sizes = Vec::new();
        let mut d = |_: u32, b: &mut Batch| sizes.push(b.tuple_set().len());
        for _ in 0..20 {
            assert!(small.push(0, 1, 0, &f, &[1u8; 30], now, &mut d));
        }
        assert!(
            !small.push(0, 1, 0, &f, &[1u8; 300], now, &mut d),
            "too large for any packet"
        );
        small.flush(&mut d);
        assert!(sizes.len() >= 4);
        assert!(sizes.iter().all(|&n| n <= 200 + TRAILER), "{sizes:?}");
    }

    #[test]
    fn open_batches_are_due_when_idle_or_after_the_flush_interval() {
        let f = field("s");
        let mut cache = TupleCache::new(1 << 20, 1 << 20, 0);
        cache.resize(3);
        let t0 = Instant::now();
        assert!(!cache.due(t0, true), "nothing open");
        let mut out = Vec::new();
        let mut d = collect(&mut out);
        cache.push(0, 1, 0, &f, b"a", t0, &mut d);
        cache.push(2, 1, 0, &f, b"b", t0 + Duration::from_micros(500), &mut d);
        assert!(
            !cache.due(t0 + Duration::from_micros(900), false),
            "busy, young"
        );
        assert!(cache.due(t0 + Duration::from_micros(900), true), "idle");
        assert!(cache.due(t0 + FLUSH_INTERVAL, false), "busy but old enough");
        assert_eq!(cache.deadline(), Some(t0 + FLUSH_INTERVAL));
        cache.flush(&mut d);
        drop(d);
        let slots: Vec<u32> = out.iter().map(|(s, _)| *s).collect();
        assert_eq!(slots, vec![0, 2]);
        assert!(!cache.due(t0 + Duration::from_secs(1), true));
    }

    #[test]
    fn keyed_copies_carry_their_own_key_and_the_rest_of_the_tuple_unchanged() {
        use heron_proto::system::{HeronDataTuple, RootId};
        let f = field("s");
        let t = HeronDataTuple {
            key: 0,
            roots: vec![RootId { taskid: 1, key: 9 }],
            values: vec![bytes::Bytes::from_static(b"v")],
            dest_task_ids: vec![],
        };
        let with_key = t.encode_to_vec();
        let offset = heron_proto::tuple::tuple_key_offset(&with_key);
        assert_eq!(offset, Some(1), "encoders write the key first");
        // a tuple without a key field gets one appended
        let without_key = &with_key[9..];
        assert_eq!(heron_proto::tuple::tuple_key_offset(without_key), None);
        let mut cache = TupleCache::new(1 << 20, 1 << 20, 0);
        cache.resize(2);
        let now = Instant::now();
        let mut out = Vec::new();
        let mut d = collect(&mut out);
        for (slot, tuple, key) in [(0, &with_key[..], -5), (1, without_key, 7)] {
            let k = TupleKey {
                offset: heron_proto::tuple::tuple_key_offset(tuple),
                key,
            };
            assert!(cache.push_keyed(slot, 1, 0, &f, tuple, Some(k), now, &mut d));
        }
        cache.flush(&mut d);
        drop(d);
        for ((_, set), key) in out.iter().zip([-5, 7]) {
            let raw = &set.data.as_ref().unwrap().tuples[0];
            let got = HeronDataTuple::decode(raw.clone()).unwrap();
            assert_eq!(got, HeronDataTuple { key, ..t.clone() });
        }
    }
}
