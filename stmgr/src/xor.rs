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
//! Entries live in a [`RotatingMap`] of `nbuckets` generations: an entry belongs to the
//! generation it was created in, and a rotation silently drops the oldest generation, so trees
//! that never complete (lost tuples) are forgotten after about the message timeout. The stream
//! manager never fails on rotation: the spout instance times its tuples out itself and calls
//! `fail`.

use heron_proto::keys::KeyBuildHasher;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Heron's `heron.streammgr.xormgr.rotatingmap.nbuckets`.
pub const DEFAULT_NBUCKETS: usize = 3;

type KeyMap<V> = HashMap<i64, V, KeyBuildHasher>;

/// root key → XOR value, each entry stamped with the generation it was created in: Heron's
/// rotating map of `nbuckets` buckets, kept as one map so that a lookup is one probe (a
/// bucket per generation cost a probe per bucket for every new root, three at Heron's
/// default).
///
/// A rotation only advances the generation and moves the live count of the generation that
/// ages out to the expired ones: the same few steps whatever the map holds (a pass over the
/// entries took 70 µs per 10 000 trees, in the stream manager's loop). An entry of a
/// generation that aged out is stale: every lookup treats it as absent and drops it. Stale
/// entries nothing looks up again are dropped in one pass when they outnumber the live ones
/// and [`SWEEP_MIN`], which an insert checks, so the pass costs a bounded amount per expired
/// tree.
///
/// ```text
/// generation   0        1        2        3
/// live         g >= 0   g >= 0   g >= 0   g >= 1   (nbuckets = 3: generation 0 aged out)
/// ```
#[derive(Debug, Clone)]
pub(crate) struct RotatingMap {
    entries: KeyMap<(i64, u64)>,
    /// The current generation: entries of generations `generation + 1 - nbuckets` and later
    /// are live, older ones stale.
    generation: u64,
    /// The oldest live generation: `generation + 1 - nbuckets`, or 0.
    oldest: u64,
    nbuckets: u64,
    /// Live entries per generation, at index `generation & mask`.
    live: Vec<usize>,
    mask: u64,
    /// Live entries in all.
    live_total: usize,
}

/// Stale entries left in a [`RotatingMap`] before a pass drops them, whatever the live count.
pub(crate) const SWEEP_MIN: usize = 1024;

impl RotatingMap {
    /// A map of `nbuckets` (at least 1) generations, all empty.
    pub fn new(nbuckets: usize) -> RotatingMap {
        let nbuckets = nbuckets.max(1);
        let ring = nbuckets.next_power_of_two();
        RotatingMap {
            entries: KeyMap::default(),
            generation: 0,
            oldest: 0,
            nbuckets: nbuckets as u64,
            live: vec![0; ring],
            mask: ring as u64 - 1,
            live_total: 0,
        }
    }

    /// Counts a live entry of generation `g` gone (its tree completed or failed).
    #[inline(always)]
    fn gone(&mut self, g: u64) {
        self.live[(g & self.mask) as usize] -= 1;
        self.live_total -= 1;
    }

    /// Counts an entry created in the current generation.
    #[inline(always)]
    fn created(&mut self) {
        self.live[(self.generation & self.mask) as usize] += 1;
        self.live_total += 1;
    }

    /// Whether an entry of generation `g` is live.
    #[inline]
    fn is_live(&self, g: u64) -> bool {
        g >= self.oldest
    }

    /// XORs `value` into the entry of `key`, creating it in the current generation when
    /// absent. `true` when an existing entry became zero (removed: the tree is complete;
    /// possible when a tuple's ack overtook the emit that created it).
    #[inline]
    pub fn anchor(&mut self, key: i64, value: i64) -> bool {
        let generation = self.generation;
        match self.entries.entry(key) {
            std::collections::hash_map::Entry::Occupied(mut e) => {
                let (v, g) = e.get_mut();
                if *g >= self.oldest {
                    *v ^= value;
                    if *v != 0 {
                        return false;
                    }
                    let g = *g;
                    e.remove();
                    self.gone(g);
                    return true;
                }
                // stale: as if absent
                if value != 0 {
                    *e.get_mut() = (value, generation);
                    self.created();
                } else {
                    e.remove();
                }
                false
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                if value != 0 {
                    e.insert((value, generation));
                    self.created();
                    if self.entries.len() - self.live_total > SWEEP_MIN.max(self.live_total) {
                        self.sweep();
                    }
                }
                false
            }
        }
    }

    /// XORs `value` into the entry of `key` if there is one; `true` when that made it zero
    /// (the entry is then removed: the tree is complete).
    #[inline]
    pub fn ack(&mut self, key: i64, value: i64) -> bool {
        let Some((v, g)) = self.entries.get_mut(&key) else {
            return false;
        };
        if *g < self.oldest {
            self.entries.remove(&key);
            return false;
        }
        *v ^= value;
        if *v != 0 {
            return false;
        }
        let g = *g;
        self.entries.remove(&key);
        self.gone(g);
        true
    }

    /// Removes the entry of `key`; `true` if there was one.
    pub fn remove(&mut self, key: i64) -> bool {
        match self.entries.remove(&key) {
            Some((_, g)) if self.is_live(g) => {
                self.gone(g);
                true
            }
            _ => false,
        }
    }

    /// Ages the oldest generation out and opens a new one; returns how many live entries it
    /// had (they are stale from now on).
    pub fn rotate(&mut self) -> usize {
        self.generation += 1;
        self.oldest = (self.generation + 1).saturating_sub(self.nbuckets);
        let Some(aged) = self.generation.checked_sub(self.nbuckets) else {
            return 0;
        };
        let expired = std::mem::take(&mut self.live[(aged & self.mask) as usize]);
        self.live_total -= expired;
        expired
    }

    /// Drops every stale entry.
    #[cold]
    #[inline(never)]
    fn sweep(&mut self) {
        let oldest = self.oldest;
        self.entries.retain(|_, (_, g)| *g >= oldest);
    }

    /// The number of live entries.
    pub fn len(&self) -> usize {
        self.live_total
    }

    /// The number of entries held, stale ones included.
    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.entries.len()
    }

    /// The value of `key`, if tracked.
    #[cfg(test)]
    pub fn get(&self, key: i64) -> Option<i64> {
        self.entries
            .get(&key)
            .filter(|&&(_, g)| self.is_live(g))
            .map(|&(v, _)| v)
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

    /// The trees of spout task `task`, if it is tracked here: for a caller that applies a
    /// control tuple with one lookup of the task.
    pub(crate) fn trees_mut(&mut self, task: i32) -> Option<&mut RotatingMap> {
        self.tasks.get_mut(&task)
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

    /// Trees of spout task `task` tracked (0 for a task not tracked here).
    pub fn pending(&self, task: i32) -> usize {
        self.tasks.get(&task).map_or(0, RotatingMap::len)
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
