//! When a spout held back by `topology.max.spout.pending` starts calling `next_tuple` again,
//! and so when it is worth telling it that its trees completed.
//!
//! Heron calls `next_tuple` as soon as one tuple of the window is acked. Under load that
//! turns the window into a stream of tiny rounds: an ack set frees a few slots, the spout
//! emits a few tuples and flushes, and every hop downstream wakes up for those few (measured
//! on word count with Heron's default window of 100: a quarter of all CPU time was thread
//! wake-ups). This is TCP's silly window syndrome, and the cure is the same: once a spout
//! has filled its window it waits until a worthwhile part of it is free again
//! ([`Refill::new`]: the whole window if it is small, at least [`REFILL_QUANTUM`] tuples or a
//! quarter of a large one), or at most [`REFILL_WAIT`] after a slot freed, so a window whose
//! tuples are acked slowly or never (message timeouts off) does not stall the spout. A spout
//! that has not filled its window (a rate-limited source) emits as soon as it likes.
//!
//! The instance's spout loop follows this rule, and a stream manager follows the same one
//! when it hands a spout its completed trees: acks that would not let a held spout emit are
//! kept until they would, so the spout wakes once per refill instead of once per ack set.
//!
//! Measured (`docs/cost-log-2026-12-05.md`, "Spouts that pace their rounds"): with Heron's default window
//! of 100, word count ATLEAST_ONCE went from 2.54 to 2.95 M words/s (medians of 3
//! interleaved pairs, ratio 1.158), with a lower complete latency.
//!
//! ```
//! use heron_flow::refill::{Refill, REFILL_WAIT};
//! use std::time::Instant;
//!
//! let t0 = Instant::now();
//! let mut window = Refill::new(100);
//! window.after_round(100); // the spout filled its window of 100
//! assert!(!window.may_emit(40, t0)); // 60 acked: not worth a round yet
//! assert!(window.may_emit(40, t0 + REFILL_WAIT)); // unless they waited long enough
//! ```

use std::time::{Duration, Instant};

/// The longest a spout waits for its refill once a slot is free.
pub const REFILL_WAIT: Duration = Duration::from_millis(1);

/// The free slots a held spout waits for, in a window larger than this: enough tuples that
/// every hop's wake-up carries a batch worth it.
pub const REFILL_QUANTUM: usize = 100;

/// The refill rule of one spout task: a small state machine, time passed in.
///
/// ```text
/// filling --(window full)--> held --(free >= min_free, or REFILL_WAIT after a slot freed)--> filling
/// ```
#[derive(Debug, Clone)]
pub struct Refill {
    max_pending: usize,
    min_free: usize,
    held: bool,
    waiting_since: Option<Instant>,
}

/// The free slots a spout that filled its window of `max_pending` tuples (`usize::MAX`: no
/// limit) waits for before it calls `next_tuple` again: `min(max_pending, REFILL_QUANTUM)`, or
/// a quarter of the window if that is more (or 1 ms after a slot freed, whichever comes
/// first). The bench's acked relay floor applies the same rule.
///
/// ```
/// assert_eq!(heron_flow::refill::refill_slots(100), 100); // Heron's default window: all of it
/// assert_eq!(heron_flow::refill::refill_slots(1000), 250);
/// assert_eq!(heron_flow::refill::refill_slots(usize::MAX), 1);
/// ```
pub fn refill_slots(max_pending: usize) -> usize {
    if max_pending == usize::MAX {
        1
    } else {
        (max_pending / 4)
            .max(max_pending.min(REFILL_QUANTUM))
            .max(1)
    }
}

impl Refill {
    /// The rule for a window of `max_pending` tuples (`usize::MAX`: no limit): a held spout
    /// waits for [`refill_slots`] free slots.
    pub fn new(max_pending: usize) -> Refill {
        Refill {
            max_pending,
            min_free: refill_slots(max_pending),
            held: false,
            waiting_since: None,
        }
    }

    /// The window: the most tuples in flight (`usize::MAX`: no limit).
    pub fn window(&self) -> usize {
        self.max_pending
    }

    /// Notes the tuples in flight after a round of `next_tuple` calls: a round that filled
    /// the window holds the spout.
    pub fn after_round(&mut self, in_flight: usize) {
        if in_flight >= self.max_pending {
            self.held = true;
            self.waiting_since = None;
        }
    }

    /// Whether the spout may start a round of `next_tuple` calls with `in_flight` tuples
    /// pending at `now`.
    pub fn may_emit(&mut self, in_flight: usize, now: Instant) -> bool {
        if in_flight >= self.max_pending {
            self.after_round(in_flight);
            return false;
        }
        if !self.held || self.max_pending - in_flight >= self.min_free {
            self.release();
            return true;
        }
        match self.waiting_since {
            None => {
                self.waiting_since = Some(now);
                false
            }
            Some(since) if now >= since + REFILL_WAIT => {
                self.release();
                true
            }
            Some(_) => false,
        }
    }

    /// When a waiting spout may emit anyway.
    pub fn deadline(&self) -> Option<Instant> {
        self.waiting_since.map(|t| t + REFILL_WAIT)
    }

    fn release(&mut self) {
        self.held = false;
        self.waiting_since = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spout_that_filled_a_small_window_waits_for_all_of_it_or_the_refill_wait() {
        let t0 = Instant::now();
        let mut r = Refill::new(100);
        assert!(r.may_emit(0, t0), "nothing in flight");
        assert!(
            r.may_emit(99, t0),
            "not held yet: the window was never full"
        );
        r.after_round(100);
        assert!(!r.may_emit(100, t0), "at the limit");
        assert_eq!(r.deadline(), None, "at the limit nothing is due");
        assert!(!r.may_emit(99, t0), "one slot free: wait");
        assert_eq!(r.deadline(), Some(t0 + REFILL_WAIT));
        assert!(
            !r.may_emit(30, t0 + REFILL_WAIT / 2),
            "most of it free: still wait"
        );
        assert!(r.may_emit(90, t0 + REFILL_WAIT), "waited long enough");
        assert_eq!(r.deadline(), None);
        assert!(
            r.may_emit(95, t0 + REFILL_WAIT),
            "released until it fills again"
        );
        r.after_round(100);
        assert!(!r.may_emit(1, t0 + REFILL_WAIT * 2));
        assert!(
            r.may_emit(0, t0 + REFILL_WAIT * 2),
            "the whole window acked"
        );
        assert_eq!(r.deadline(), None);
    }

    #[test]
    fn a_large_window_refills_by_a_quarter_or_the_quantum() {
        let t0 = Instant::now();
        let mut r = Refill::new(1000);
        r.after_round(1000);
        assert!(!r.may_emit(751, t0), "249 free: wait");
        assert!(r.may_emit(750, t0), "a quarter free");
        let mut r = Refill::new(200);
        r.after_round(200);
        assert!(!r.may_emit(101, t0), "99 free: wait");
        assert!(r.may_emit(100, t0), "the quantum free");
    }

    #[test]
    fn small_or_unlimited_windows_refill_slot_by_slot() {
        let t0 = Instant::now();
        let mut one = Refill::new(1);
        assert!(one.may_emit(0, t0));
        assert!(!one.may_emit(1, t0));
        assert!(one.may_emit(0, t0));
        let mut unlimited = Refill::new(usize::MAX);
        assert!(unlimited.may_emit(1_000_000, t0));
    }
}
