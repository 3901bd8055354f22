//! XOR ack tracking (ATLEAST_ONCE), as a plain synchronous state machine with time passed in
//! (`shared/reference/heron.md` §2.4).
//!
//! Every spout tuple tree is identified by its root `(spout task, root key)`. The spout's
//! stream manager keeps, per local spout task, root key → XOR of every tuple key of the tree
//! that is still outstanding: each emitted (tuple, destination) XORs its fresh key in, each
//! ack XORs the acked tuple's key in again. Every key enters exactly twice once the tree is
//! processed, so the value is zero exactly when every tuple of the tree has been acked (up to
//! a 2^-64 chance of a random cancellation).
//!
//! Entries live in a [`RotatingMap`] of `nbuckets` buckets: inserts go to the newest bucket
//! and a rotation silently drops the oldest, so trees that never complete (lost tuples) are
//! forgotten after about the message timeout. The stream manager never fails on rotation:
//! the spout instance times its tuples out itself and calls `fail`.

use heron_proto::keys::KeyBuildHasher;
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// Heron's `heron.streammgr.xormgr.rotatingmap.nbuckets`.
pub const DEFAULT_NBUCKETS: usize = 3;

type KeyMap<V> = HashMap<i64, V, KeyBuildHasher>;

/// root key → XOR value, in buckets of decreasing age.
#[derive(Debug, Clone)]
pub(crate) struct RotatingMap {
    /// Front: the newest bucket.
    buckets: VecDeque<KeyMap<i64>>,
}

impl RotatingMap {
    /// A map of `nbuckets` (at least 1) empty buckets.
    pub fn new(nbuckets: usize) -> RotatingMap {
        RotatingMap {
            buckets: (0..nbuckets.max(1)).map(|_| KeyMap::default()).collect(),
        }
    }

    fn find(&mut self, key: i64) -> Option<(usize, &mut i64)> {
        self.buckets
            .iter_mut()
            .enumerate()
            .find_map(|(i, b)| b.get_mut(&key).map(|v| (i, v)))
    }

    /// XORs `value` into the entry of `key`, creating it in the newest bucket when absent.
    /// `true` when an existing entry became zero (removed: the tree is complete; possible when
    /// a tuple's ack overtook the emit that created it).
    pub fn anchor(&mut self, key: i64, value: i64) -> bool {
        match self.find(key) {
            Some((bucket, v)) => {
                *v ^= value;
                if *v != 0 {
                    return false;
                }
                self.buckets[bucket].remove(&key);
                true
            }
            None => {
                if value != 0 {
                    self.buckets[0].insert(key, value);
                }
                false
            }
        }
    }

    /// XORs `value` into the entry of `key` if there is one; `true` when that made it zero
    /// (the entry is then removed: the tree is complete).
    pub fn ack(&mut self, key: i64, value: i64) -> bool {
        let Some((bucket, v)) = self.find(key) else {
            return false;
        };
        *v ^= value;
        if *v != 0 {
            return false;
        }
        self.buckets[bucket].remove(&key);
        true
    }

    /// Removes the entry of `key`; `true` if there was one.
    pub fn remove(&mut self, key: i64) -> bool {
        self.buckets.iter_mut().any(|b| b.remove(&key).is_some())
    }

    /// Drops the oldest bucket and opens a new one; returns how many entries were dropped.
    pub fn rotate(&mut self) -> usize {
        let mut oldest = self.buckets.pop_back().unwrap_or_default();
        let dropped = oldest.len();
        oldest.clear(); // keep its allocation for the new bucket
        self.buckets.push_front(oldest);
        dropped
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.buckets.iter().map(HashMap::len).sum()
    }

    /// The value of `key`, if tracked.
    #[cfg(test)]
    pub fn get(&self, key: i64) -> Option<i64> {
        self.buckets.iter().find_map(|b| b.get(&key).copied())
    }
}

/// The XOR trackers of every local spout task, with their rotation schedule.
#[derive(Debug, Clone)]
pub struct XorTracker {
    tasks: HashMap<i32, RotatingMap, KeyBuildHasher>,
    nbuckets: usize,
    interval: Duration,
    next_rotation: Instant,
    /// Entries dropped by rotations so far (trees that never completed here).
    pub expired: u64,
}

impl XorTracker {
    /// Trackers for `spout_tasks`. The first rotation is `timeout` after `now` (Heron's
    /// schedule), then one every `timeout / nbuckets`.
    pub fn new(
        spout_tasks: &[i32],
        timeout: Duration,
        nbuckets: usize,
        now: Instant,
    ) -> XorTracker {
        let nbuckets = nbuckets.max(1);
        let mut t = XorTracker {
            tasks: HashMap::default(),
            nbuckets,
            interval: (timeout / nbuckets as u32).max(Duration::from_millis(10)),
            next_rotation: now + timeout.max(Duration::from_millis(10)),
            expired: 0,
        };
        t.set_tasks(spout_tasks);
        t
    }

    /// Tracks exactly `spout_tasks` from now on, keeping the entries of those already tracked.
    pub fn set_tasks(&mut self, spout_tasks: &[i32]) {
        self.tasks.retain(|t, _| spout_tasks.contains(t));
        for &t in spout_tasks {
            self.tasks
                .entry(t)
                .or_insert_with(|| RotatingMap::new(self.nbuckets));
        }
    }

    /// `true` if `task` is a spout task tracked here.
    pub fn tracks(&self, task: i32) -> bool {
        self.tasks.contains_key(&task)
    }

    /// XORs the key(s) of newly emitted tuples into the tree of root `(task, root)`, creating
    /// the entry if needed. `true` when that completed the tree (see [`RotatingMap::anchor`]).
    pub fn emit(&mut self, task: i32, root: i64, value: i64) -> bool {
        self.tasks
            .get_mut(&task)
            .is_some_and(|m| m.anchor(root, value))
    }

    /// An ack of the tuple with key `value` in the tree `(task, root)`; `true` when the tree
    /// is now complete (the spout must be told).
    pub fn ack(&mut self, task: i32, root: i64, value: i64) -> bool {
        self.tasks
            .get_mut(&task)
            .is_some_and(|m| m.ack(root, value))
    }

    /// A fail in the tree `(task, root)`: forgets it; `true` if it was tracked (the spout
    /// must be told).
    pub fn fail(&mut self, task: i32, root: i64) -> bool {
        self.tasks.get_mut(&task).is_some_and(|m| m.remove(root))
    }

    /// Rotates every map once for each interval that ended by `now`.
    pub fn on_time(&mut self, now: Instant) {
        while now >= self.next_rotation {
            for m in self.tasks.values_mut() {
                self.expired += m.rotate() as u64;
            }
            self.next_rotation += self.interval;
        }
    }

    /// When [`XorTracker::on_time`] must run next.
    pub fn deadline(&self) -> Instant {
        self.next_rotation
    }

    /// Trees tracked, over all tasks.
    pub fn len(&self) -> usize {
        self.tasks.values().map(RotatingMap::len).sum()
    }

    /// `true` when no tree is tracked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests;
