//! When a spout held back by `topology.max.spout.pending` starts calling `next_tuple` again.
//!
//! Heron calls `next_tuple` as soon as one tuple of the window is acked. Under load that
//! turns the window into a stream of tiny rounds: an ack set frees a few slots, the spout
//! emits a few tuples and flushes, and every hop downstream wakes up for those few (measured
//! on word count with Heron's default window of 100: a quarter of all CPU time was thread
//! wake-ups). Here a spout with tuples in flight waits until a quarter of its window is free
//! again, or at most [`REFILL_WAIT`] after a slot freed, so a window whose tuples are never
//! acked (message timeouts off) does not stall the spout. Measured: 0.97 → 1.05–1.12 M
//! words/s with a window of 100, and a lower complete latency.

use std::time::{Duration, Instant};

/// The longest a spout waits for a quarter of its window once a slot is free.
pub(crate) const REFILL_WAIT: Duration = Duration::from_millis(1);

/// The refill rule of one spout task.
#[derive(Debug, Clone)]
pub(crate) struct Refill {
    max_pending: usize,
    min_free: usize,
    waiting_since: Option<Instant>,
}

impl Refill {
    /// The rule for a window of `max_pending` tuples (`usize::MAX`: no limit).
    pub fn new(max_pending: usize) -> Refill {
        let min_free = if max_pending == usize::MAX {
            1
        } else {
            (max_pending / 4).max(1)
        };
        Refill {
            max_pending,
            min_free,
            waiting_since: None,
        }
    }

    /// Whether the spout may start a round of `next_tuple` calls with `in_flight` tuples
    /// pending at `now`.
    pub fn may_emit(&mut self, in_flight: usize, now: Instant) -> bool {
        if in_flight >= self.max_pending {
            self.waiting_since = None;
            return false;
        }
        if in_flight == 0 || self.max_pending - in_flight >= self.min_free {
            self.waiting_since = None;
            return true;
        }
        match self.waiting_since {
            None => {
                self.waiting_since = Some(now);
                false
            }
            Some(since) if now >= since + REFILL_WAIT => {
                self.waiting_since = None;
                true
            }
            Some(_) => false,
        }
    }

    /// When a waiting spout may emit anyway.
    pub fn deadline(&self) -> Option<Instant> {
        self.waiting_since.map(|t| t + REFILL_WAIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_for_a_quarter_of_the_window_or_at_most_the_refill_wait() {
        let t0 = Instant::now();
        let mut r = Refill::new(100);
        assert!(r.may_emit(0, t0), "nothing in flight");
        assert!(r.may_emit(75, t0), "a quarter free");
        assert!(!r.may_emit(100, t0), "at the limit");
        assert_eq!(r.deadline(), None, "at the limit nothing is due");
        assert!(!r.may_emit(99, t0), "one slot free: wait");
        assert_eq!(r.deadline(), Some(t0 + REFILL_WAIT));
        assert!(!r.may_emit(90, t0 + REFILL_WAIT / 2));
        assert!(r.may_emit(90, t0 + REFILL_WAIT), "waited long enough");
        assert_eq!(r.deadline(), None);
        assert!(!r.may_emit(99, t0 + REFILL_WAIT * 2));
        assert!(r.may_emit(70, t0 + REFILL_WAIT * 2), "acks freed a quarter");
        assert_eq!(r.deadline(), None);
    }

    #[test]
    fn small_or_unlimited_windows_refill_slot_by_slot() {
        let t0 = Instant::now();
        let mut one = Refill::new(1);
        assert!(one.may_emit(0, t0));
        assert!(!one.may_emit(1, t0));
        let mut three = Refill::new(3);
        assert!(
            three.may_emit(2, t0),
            "a quarter of 3 rounds down to one slot"
        );
        let mut unlimited = Refill::new(usize::MAX);
        assert!(unlimited.may_emit(1_000_000, t0));
    }
}
