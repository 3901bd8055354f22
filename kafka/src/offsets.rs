//! Which offsets of one partition may be committed (a synchronous state machine, no I/O).
//!
//! Storm's `OffsetManager` rules: only the contiguous acknowledged prefix is committed; an
//! offset that was never emitted (deleted by compaction, a transaction marker) does not hold
//! the commit back, because the spout emits each partition in offset order, so a hole below an
//! acknowledged offset with nothing emitted in it can never be filled.

use std::collections::BTreeSet;

/// The emitted, acknowledged and committed offsets of one partition.
///
/// "Committed" is Kafka's meaning: the offset to resume from, one past the last record
/// processed.
///
/// ```
/// use heron_kafka::PartitionOffsets;
///
/// let mut p = PartitionOffsets::new(10);
/// for o in 10..14 {
///     p.emitted(o);
/// }
/// p.acked(11);
/// assert_eq!(p.commit_point(), None); // 10 is still in flight
/// p.acked(10);
/// assert_eq!(p.commit_point(), Some(12));
/// p.committed(12);
/// assert_eq!(p.uncommitted(), 2); // 12 and 13
/// ```
#[derive(Clone, Debug, Default)]
pub struct PartitionOffsets {
    committed: i64,
    /// Emitted and not yet acknowledged (in flight, or failed and waiting for a retry).
    in_flight: BTreeSet<i64>,
    /// Acknowledged, at or above `committed`.
    acked: BTreeSet<i64>,
}

impl PartitionOffsets {
    /// A partition whose records before `committed` are done.
    pub fn new(committed: i64) -> PartitionOffsets {
        PartitionOffsets {
            committed,
            ..PartitionOffsets::default()
        }
    }

    /// The offset the partition resumes from: everything before it is done.
    pub fn committed_offset(&self) -> i64 {
        self.committed
    }

    /// The record at `offset` was emitted (again, for a retry).
    pub fn emitted(&mut self, offset: i64) {
        if offset >= self.committed && !self.acked.contains(&offset) {
            self.in_flight.insert(offset);
        }
    }

    /// The record at `offset` was acknowledged (or given up on, which counts the same).
    pub fn acked(&mut self, offset: i64) {
        if self.in_flight.remove(&offset) {
            self.acked.insert(offset);
        }
    }

    /// `true` when the record at `offset` needs no emit now: it is before the committed
    /// offset, acknowledged, or in flight (a failed one is retried through
    /// [`retry`](crate::RetrySchedule), not here).
    pub fn is_done_or_in_flight(&self, offset: i64) -> bool {
        offset < self.committed || self.acked.contains(&offset) || self.in_flight.contains(&offset)
    }

    /// Offsets emitted and not yet committed (in flight or acknowledged above a hole).
    pub fn uncommitted(&self) -> usize {
        self.in_flight.len() + self.acked.len()
    }

    /// The offset to commit now, if it moved: one past the contiguous acknowledged prefix,
    /// skipping holes that were never emitted.
    pub fn commit_point(&self) -> Option<i64> {
        let mut next = self.committed;
        let lowest_in_flight = self.in_flight.first().copied();
        for &a in &self.acked {
            if a == next {
                next += 1;
            } else if a > next && lowest_in_flight.is_none_or(|f| f > a) {
                // nothing emitted in [next, a): never-emitted offsets (a hole), skip them
                next = a + 1;
            } else {
                break;
            }
        }
        (next > self.committed).then_some(next)
    }

    /// `offset` was committed: forget what lies below it.
    pub fn committed(&mut self, offset: i64) {
        if offset <= self.committed {
            return;
        }
        self.committed = offset;
        self.acked = self.acked.split_off(&offset);
        self.in_flight = self.in_flight.split_off(&offset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_only_the_contiguous_acked_prefix() {
        let mut p = PartitionOffsets::new(0);
        (0..5).for_each(|o| p.emitted(o));
        p.acked(1);
        p.acked(2);
        p.acked(4);
        assert_eq!(p.commit_point(), None);
        p.acked(0);
        assert_eq!(p.commit_point(), Some(3));
        p.committed(3);
        assert_eq!(p.uncommitted(), 2);
        assert!(p.is_done_or_in_flight(2));
        assert!(p.is_done_or_in_flight(3));
        assert!(!p.is_done_or_in_flight(5));
        p.acked(3);
        assert_eq!(p.commit_point(), Some(5));
        p.committed(5);
        assert_eq!(p.uncommitted(), 0);
    }

    #[test]
    fn skips_holes_that_were_never_emitted() {
        // offsets 2..5 do not exist (compacted away, or transaction markers)
        let mut p = PartitionOffsets::new(0);
        for o in [0, 1, 5, 6] {
            p.emitted(o);
        }
        p.acked(0);
        p.acked(1);
        p.acked(5);
        assert_eq!(p.commit_point(), Some(6));
        // the first records polled after a seek may lie after a hole too
        let mut q = PartitionOffsets::new(100);
        q.emitted(103);
        q.acked(103);
        assert_eq!(q.commit_point(), Some(104));
    }

    #[test]
    fn an_unacked_offset_below_an_acked_one_holds_the_commit() {
        let mut p = PartitionOffsets::new(0);
        for o in [0, 3, 4] {
            p.emitted(o);
        }
        p.acked(3);
        p.acked(4);
        // 0 is in flight: the hole 1..3 may not be skipped past it
        assert_eq!(p.commit_point(), None);
        p.acked(0);
        assert_eq!(p.commit_point(), Some(5));
    }

    #[test]
    fn late_and_repeated_acks_change_nothing() {
        let mut p = PartitionOffsets::new(0);
        p.emitted(0);
        p.acked(0);
        p.acked(0);
        p.committed(1);
        // an ack of an offset below the commit (a duplicate delivery) is ignored
        p.acked(0);
        p.emitted(0);
        assert_eq!(p.uncommitted(), 0);
        assert_eq!(p.commit_point(), None);
        // acks for offsets never emitted are ignored
        p.acked(7);
        assert_eq!(p.commit_point(), None);
    }

    #[test]
    fn matches_a_reference_over_random_ack_orders() {
        use std::collections::HashSet;
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..200 {
            let n = 1 + rnd(40) as i64;
            // some offsets do not exist
            let exists: Vec<i64> = (0..n).filter(|_| rnd(5) != 0).collect();
            let mut p = PartitionOffsets::new(0);
            exists.iter().for_each(|&o| p.emitted(o));
            let mut order = exists.clone();
            for i in (1..order.len()).rev() {
                order.swap(i, rnd(i as u64 + 1) as usize);
            }
            let mut acked = HashSet::new();
            for &o in &order {
                p.acked(o);
                acked.insert(o);
                // reference: resume after the last existing offset whose predecessors
                // (existing ones) are all acked
                let mut expect = 0;
                for &e in &exists {
                    if acked.contains(&e) {
                        expect = e + 1;
                    } else {
                        break;
                    }
                }
                let got = p.commit_point().unwrap_or(p.committed_offset());
                assert_eq!(got, expect, "exists {exists:?} acked {acked:?}");
                if rnd(3) == 0 {
                    p.committed(got);
                }
            }
        }
    }
}
