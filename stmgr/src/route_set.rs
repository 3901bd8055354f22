//! The stream manager's data path for one data set from a local instance: every tuple is
//! checked and its fields read in one walk, routed by the plan's groupings to destination
//! slots, and copied into each slot's batch; in ATLEAST_ONCE every copy of an anchored tuple
//! gets its own key, and the keys go to the tuple's roots through [`Acking`].

use crate::acking::Acking;
use crate::outbox::Outbox;
use crate::routing::Router;
use crate::tuple_cache::{Batch, TupleCache};
use heron_proto::tuple::{scan_tuple_into, DataSetRef, TupleError, TupleKey, TupleScan};
use std::time::Instant;

/// The key a tuple carries at `at` (its [`TupleScan::key_offset`]).
fn tuple_key_at(tuple: &[u8], at: usize) -> i64 {
    tuple
        .get(at..at + 8)
        .map_or(0, |b| i64::from_le_bytes(b.try_into().expect("8 bytes")))
}

/// What routing a data set did, for the core's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Routed {
    /// Tuples read.
    pub tuples: u64,
    /// Tuples no grouping chose a task for.
    pub unrouted: u64,
    /// Tuples too large for a packet.
    pub too_large: u64,
}

/// What a data set is routed with: the plan's routing table, the batches, the connections'
/// buffers, a scratch list of slots, the time; and, in ATLEAST_ONCE, the acking state.
pub(crate) struct RouteInto<'a> {
    pub router: &'a mut Router,
    pub cache: &'a mut TupleCache,
    pub out: &'a mut Outbox,
    pub scratch: &'a mut Vec<u32>,
    pub now: Instant,
    pub acking: Option<&'a mut Acking>,
}

impl RouteInto<'_> {
    /// Routes every tuple of `set` (stream `stream`, encoded stream field `field`) from
    /// `src_task`. With `acking`, each copy of an anchored tuple gets a key, and the keys are
    /// XORed into the tuple's trees; else copies go unkeyed. In a keyed set
    /// ([`DataSetRef::keyed`]) the first copy keeps the sender's key. What was routed is added
    /// to `r`, also when a malformed tuple stops the walk.
    pub fn route_set(
        &mut self,
        src_task: i32,
        stream: u32,
        field: &[u8],
        set: &DataSetRef<'_>,
        r: &mut Routed,
    ) -> Result<(), TupleError> {
        let RouteInto {
            router,
            cache,
            out,
            scratch,
            now,
            acking,
        } = self;
        let now = *now;
        let mut deliver = |slot: u32, b: &mut Batch| out.deliver(slot, b);
        let from_spout = acking.as_ref().is_some_and(|a| a.tracks(src_task));
        // one scan for the whole set, overwritten per tuple (not a fresh one copied out)
        let mut scan = TupleScan::default();
        set.for_each_tuple(|tuple| {
            scan_tuple_into(tuple, &mut scan)?;
            let scan = &scan;
            r.tuples += 1;
            scratch.clear();
            router.route(stream, tuple, scan, scratch);
            if scratch.is_empty() {
                r.unrouted += 1;
            }
            let ack = match acking.as_deref_mut() {
                Some(ack) if scan.roots > 0 => ack,
                _ => {
                    for &slot in scratch.iter() {
                        if !cache.push(slot, src_task, stream, field, tuple, now, &mut deliver) {
                            r.too_large += 1;
                        }
                    }
                    return Ok(());
                }
            };
            let offset = scan.key_offset;
            // a keyed set's tuple has a key whose emit its sender sent: its first copy keeps
            // it, and only what the copies' keys add to it (all of it cancelled when there is
            // no copy) is emitted here
            let given = match (set.keyed, offset) {
                (true, Some(at)) => tuple_key_at(tuple, at),
                _ => 0,
            };
            let mut xor = 0i64;
            for (i, &slot) in scratch.iter().enumerate() {
                let key = match i {
                    0 if given != 0 => given,
                    _ => ack.next_key(xor),
                };
                xor ^= key;
                let key = Some(TupleKey { offset, key });
                if !cache.push_keyed(slot, src_task, stream, field, tuple, key, now, &mut deliver) {
                    r.too_large += 1;
                }
            }
            if given != 0 {
                let extra = xor ^ given;
                scan.for_each_root(tuple, |task, root| ack.emitted(task, root, extra, now));
                return Ok(());
            }
            scan.for_each_root(tuple, |task, root| {
                ack.rooted(from_spout, src_task, task, root, xor, now)
            });
            Ok(())
        })
    }

    /// Copies every tuple of `set` into the batch of `slot` without reading or routing it
    /// (as one block when the set's tuples are contiguous and fit a packet):
    /// for a set whose sender named its one destination ([`DataSetRef::dest_task`]) and
    /// whose tuples need no acking keys. The tuples reach their task as the sender wrote
    /// them (an instance drops one it cannot decode, as from another stream manager).
    pub fn forward_set(
        &mut self,
        src_task: i32,
        stream: u32,
        field: &[u8],
        slot: u32,
        set: &DataSetRef<'_>,
        r: &mut Routed,
    ) -> Result<(), TupleError> {
        let RouteInto {
            cache, out, now, ..
        } = self;
        let mut deliver = |slot: u32, b: &mut Batch| out.deliver(slot, b);
        if let Some((block, n)) = set.tuple_block()? {
            if cache.push_block(slot, src_task, stream, field, block, n, *now, &mut deliver) {
                r.tuples += u64::from(n);
                return Ok(());
            }
        }
        set.for_each_tuple(|tuple| {
            r.tuples += 1;
            if !cache.push(slot, src_task, stream, field, tuple, *now, &mut deliver) {
                r.too_large += 1;
            }
            Ok(())
        })
    }
}
