//! Checkpoint barrier alignment per local destination task: the "checkpoint gateway" of
//! effectively-once mode (`shared/reference/heron.md` §5, Checkpoint step 5), as a plain state
//! machine.
//!
//! Every upstream task of a destination sends one marker per checkpoint, in order with its
//! tuples (a `DownstreamStatefulCheckpoint` from another stream manager, or the stored state
//! of a local upstream). For destination `D` and checkpoint `X`:
//!
//! * before the first `X` marker for `D`, and from upstreams whose `X` marker has not come yet,
//!   tuple sets pass at once;
//! * after its `X` marker, an upstream's sets are *buffered* (they belong after the
//!   checkpoint);
//! * once every upstream's `X` marker came, `D` gets `InitiateStatefulCheckpoint(X)`
//!   ([`Release::Checkpoint`]), then the buffered sets in arrival order, and passes everything
//!   again.
//!
//! Checkpoint ids compare as strings (greater = newer), like Heron's. A newer id resets an
//! alignment in progress: the buffered sets are released and the newer one starts. Markers of
//! an id not newer than the one `D` last completed (or abandoned), or older than the one it is
//! aligning, are ignored, as is a second marker from the same upstream. The buffer is bounded
//! in bytes (`heron.streammgr.stateful.buffer.size.mb`): a set that would exceed it
//! force-drains the destination and abandons the checkpoint for it (that checkpoint can never
//! become globally consistent; the next one can).
//!
//! Both [`Gateway::admit`] and [`Gateway::on_marker`] concern the one destination they are
//! given and push what that destination must now get, in order, onto `out`: everything in
//! `out` goes to `dest`.

use bytes::Bytes;
use std::collections::{HashMap, VecDeque};

#[cfg(test)]
mod tests;

/// What alignment hands to a destination task, in order.
#[derive(Debug, PartialEq)]
pub(crate) enum Release {
    /// Send `InitiateStatefulCheckpoint(id)` to the task.
    Checkpoint(String),
    /// Deliver this `HeronTupleSet2` (from upstream task `src_task`, `tuples` tuples).
    Set {
        /// The upstream task that emitted the set.
        src_task: i32,
        /// The encoded set, unchanged.
        set: Bytes,
        /// How many tuples it holds.
        tuples: u64,
    },
}

impl Release {
    fn set(src_task: i32, set: Bytes, tuples: u64) -> Release {
        Release::Set {
            src_task,
            set,
            tuples,
        }
    }
}

/// Counts of what the gateway did, for metrics and tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GatewayStats {
    /// Alignments that completed (a [`Release::Checkpoint`] was pushed).
    pub completed: u64,
    /// Alignments reset by a marker with a newer id.
    pub superseded: u64,
    /// Alignments abandoned because the buffer would have overflowed.
    pub forced_drains: u64,
    /// Markers ignored: stale, duplicate, or for a destination or source not in the plan.
    pub ignored_markers: u64,
    /// Sets for a destination or from a source not in the plan (passed through unaligned).
    pub unknown_sets: u64,
    /// Tuples dropped from the buffers by a new plan ([`Gateway::set_upstreams`]).
    pub dropped_by_plan: u64,
}

/// A set held back until its destination's checkpoint.
#[derive(Debug)]
struct Held {
    src_task: i32,
    set: Bytes,
    tuples: u64,
}

/// The alignment state of one local destination task.
#[derive(Debug, Default)]
struct Dest {
    /// The upstream tasks, sorted and deduplicated.
    upstreams: Vec<i32>,
    /// Per upstream (same index): its marker for `current` arrived. Only meaningful while
    /// `current` is set.
    arrived: Vec<bool>,
    /// Upstreams whose marker for `current` has not arrived.
    pending: usize,
    /// The checkpoint being aligned, if any.
    current: Option<String>,
    /// The newest checkpoint completed or abandoned: markers up to it are stale.
    done: Option<String>,
    /// Sets from upstreams whose `current` marker arrived, in arrival order.
    held: VecDeque<Held>,
    /// The bytes of `held`.
    held_bytes: usize,
}

impl Dest {
    fn new(mut upstreams: Vec<i32>) -> Dest {
        upstreams.sort_unstable();
        upstreams.dedup();
        Dest {
            arrived: vec![false; upstreams.len()],
            upstreams,
            ..Dest::default()
        }
    }

    /// Starts aligning `id`, with the upstream at `slot` arrived.
    fn begin(&mut self, id: &str, slot: usize) {
        self.arrived.fill(false);
        self.arrived[slot] = true;
        self.pending = self.upstreams.len() - 1;
        self.current = Some(id.to_owned());
    }

    /// Releases the held sets in order.
    fn release_held(&mut self, out: &mut Vec<Release>) {
        self.held_bytes = 0;
        out.extend(
            self.held
                .drain(..)
                .map(|h| Release::set(h.src_task, h.set, h.tuples)),
        );
    }

    /// All markers arrived: the checkpoint, then the held sets.
    fn complete(&mut self, out: &mut Vec<Release>) {
        if let Some(id) = self.current.take() {
            self.done = Some(id.clone());
            out.push(Release::Checkpoint(id));
        }
        self.release_held(out);
    }

    /// Drops the held sets; returns their tuple count.
    fn drop_held(&mut self) -> u64 {
        self.held_bytes = 0;
        self.held.drain(..).map(|h| h.tuples).sum()
    }
}

/// Barrier alignment for every local destination task.
#[derive(Debug)]
pub(crate) struct Gateway {
    limit: usize,
    dests: HashMap<i32, Dest>,
    /// Destinations with an alignment in progress (`current` set).
    aligning: usize,
    stats: GatewayStats,
}

impl Gateway {
    /// A gateway without a plan; each destination may buffer up to `buffer_limit_bytes`
    /// (`heron.streammgr.stateful.buffer.size.mb`).
    pub fn new(buffer_limit_bytes: usize) -> Gateway {
        Gateway {
            limit: buffer_limit_bytes,
            dests: HashMap::new(),
            aligning: 0,
            stats: GatewayStats::default(),
        }
    }

    /// The plan: each local destination task and the upstream tasks it receives from (every
    /// task of every component whose streams it consumes).
    ///
    /// Resets all alignment. Sets buffered for the old plan are dropped (counted in
    /// [`GatewayStats::dropped_by_plan`]; in effectively-once mode a new plan comes with a
    /// restore, which drops all data in flight anyway). A checkpoint being aligned counts as
    /// abandoned for a destination that stays in the plan, so its late markers do not start
    /// an alignment that could never complete.
    pub fn set_upstreams(&mut self, upstreams: HashMap<i32, Vec<i32>>) {
        let mut old = std::mem::take(&mut self.dests);
        for d in old.values_mut() {
            self.stats.dropped_by_plan += d.drop_held();
        }
        self.dests = upstreams
            .into_iter()
            .map(|(dest, ups)| {
                let mut d = Dest::new(ups);
                if let Some(prev) = old.get_mut(&dest) {
                    d.done = prev.current.take().or(prev.done.take());
                }
                (dest, d)
            })
            .collect();
        self.aligning = 0;
    }

    /// True while some destination is aligning (O(1)). While it is false every set passes, so
    /// callers may skip [`Self::admit`] and deliver directly.
    pub fn busy(&self) -> bool {
        self.aligning > 0
    }

    /// The checkpoint `dest` is aligning, if any.
    #[cfg(test)]
    pub fn aligning(&self, dest: i32) -> Option<&str> {
        self.dests.get(&dest)?.current.as_deref()
    }

    /// The bytes buffered for `dest`.
    #[cfg(test)]
    pub fn buffered_bytes(&self, dest: i32) -> usize {
        self.dests.get(&dest).map_or(0, |d| d.held_bytes)
    }

    /// What the gateway did so far.
    pub fn stats(&self) -> GatewayStats {
        self.stats
    }

    /// A tuple set for local task `dest` from upstream task `src`. Pushes it onto `out` at
    /// once (as [`Release::Set`]) if it may pass, else buffers it. If buffering it would
    /// exceed the limit, pushes everything buffered for `dest` in order, then this set, and
    /// abandons `dest`'s checkpoint. Everything pushed is for `dest`.
    ///
    /// A set for a destination or from a source not in the plan passes.
    pub fn admit(&mut self, dest: i32, src: i32, set: Bytes, tuples: u64, out: &mut Vec<Release>) {
        let Some(d) = self.dests.get_mut(&dest) else {
            self.stats.unknown_sets += 1;
            out.push(Release::set(src, set, tuples));
            return;
        };
        if d.current.is_none() {
            out.push(Release::set(src, set, tuples));
            return;
        }
        let Ok(slot) = d.upstreams.binary_search(&src) else {
            self.stats.unknown_sets += 1;
            out.push(Release::set(src, set, tuples));
            return;
        };
        if !d.arrived[slot] {
            out.push(Release::set(src, set, tuples));
            return;
        }
        if d.held_bytes.saturating_add(set.len()) > self.limit {
            d.release_held(out);
            out.push(Release::set(src, set, tuples));
            d.done = d.current.take();
            self.aligning -= 1;
            self.stats.forced_drains += 1;
            return;
        }
        d.held_bytes += set.len();
        d.held.push_back(Held {
            src_task: src,
            set,
            tuples,
        });
    }

    /// Checkpoint marker `id` for local task `dest` from upstream task `src` (a
    /// `DownstreamStatefulCheckpoint`, or a local upstream's stored state). Pushes onto `out`
    /// what `dest` must now get, in order: nothing while markers are pending; when this was
    /// the last one, [`Release::Checkpoint`] then the buffered sets; when `id` is newer than
    /// the alignment in progress, that alignment's buffered sets (and `id` starts aligning
    /// with `src` arrived). Everything pushed is for `dest`.
    ///
    /// Stale and duplicate markers, and markers for a destination or from a source not in the
    /// plan, are ignored (counted in [`GatewayStats::ignored_markers`]).
    pub fn on_marker(&mut self, dest: i32, src: i32, id: &str, out: &mut Vec<Release>) {
        let Some(d) = self.dests.get_mut(&dest) else {
            self.stats.ignored_markers += 1;
            return;
        };
        let Ok(slot) = d.upstreams.binary_search(&src) else {
            self.stats.ignored_markers += 1;
            return;
        };
        if d.done.as_deref().is_some_and(|done| id <= done) {
            self.stats.ignored_markers += 1;
            return;
        }
        match d.current.as_deref() {
            Some(current) if id < current => {
                self.stats.ignored_markers += 1;
                return;
            }
            Some(current) if id == current => {
                if d.arrived[slot] {
                    self.stats.ignored_markers += 1;
                    return;
                }
                d.arrived[slot] = true;
                d.pending -= 1;
            }
            Some(_) => {
                d.release_held(out);
                d.begin(id, slot);
                self.stats.superseded += 1;
            }
            None => {
                d.begin(id, slot);
                self.aligning += 1;
            }
        }
        if d.pending == 0 {
            d.complete(out);
            self.aligning -= 1;
            self.stats.completed += 1;
        }
    }

    /// Restore: drops every buffered set and all alignment (including which checkpoints were
    /// seen: ids after a restore start afresh). Returns the number of tuples dropped.
    pub fn clear(&mut self) -> u64 {
        let mut dropped = 0;
        for d in self.dests.values_mut() {
            dropped += d.drop_held();
            d.current = None;
            d.done = None;
        }
        self.aligning = 0;
        dropped
    }
}
