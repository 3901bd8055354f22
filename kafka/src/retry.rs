//! When a failed record is emitted again (a synchronous state machine; time is passed in).
//!
//! Storm's `KafkaSpoutRetryExponentialBackoff`: the first retry after `initial`, the n-th
//! (n ≥ 2) after `period · 2^(n-1)`, never more than `max_delay`; after `max_retries` failures
//! the record is given up on (acknowledged, so its offset is committed and skipped).

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// The backoff between retries of one record.
///
/// ```
/// use heron_kafka::Backoff;
/// use std::time::Duration;
///
/// let b = Backoff::default();
/// assert_eq!(b.delay(1), Duration::ZERO);
/// assert_eq!(b.delay(2), Duration::from_millis(4));
/// assert_eq!(b.delay(40), Duration::from_secs(10));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// Delay before the first retry (Storm: 0 s).
    pub initial: Duration,
    /// Base of the doubling delay of later retries (Storm: 2 ms).
    pub period: Duration,
    /// Failures after which a record is given up on (Storm: `Integer.MAX_VALUE`).
    pub max_retries: u32,
    /// The longest delay (Storm: 10 s).
    pub max_delay: Duration,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff {
            initial: Duration::ZERO,
            period: Duration::from_millis(2),
            max_retries: u32::MAX,
            max_delay: Duration::from_secs(10),
        }
    }
}

impl Backoff {
    /// The delay before retry number `n` (1 = the first).
    pub fn delay(&self, n: u32) -> Duration {
        let d = if n <= 1 {
            self.initial
        } else {
            let factor = 1u32.checked_shl(n - 1).unwrap_or(u32::MAX);
            self.period.saturating_mul(factor)
        };
        d.min(self.max_delay)
    }
}

/// What [`RetrySchedule::failed`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// Emit it again at this time.
    At(Instant),
    /// Too many failures: acknowledge it and move on.
    GiveUp,
}

/// A record's key in the schedule: the spout's partition slot and the offset.
pub type RecordKey = (usize, i64);

/// Failed records of one spout task and when each may be emitted again.
///
/// ```
/// use heron_kafka::{Backoff, Retry, RetrySchedule};
/// use std::time::{Duration, Instant};
///
/// let t0 = Instant::now();
/// let mut r = RetrySchedule::new(Backoff { initial: Duration::from_millis(5), ..Backoff::default() });
/// assert_eq!(r.failed((0, 7), t0), Retry::At(t0 + Duration::from_millis(5)));
/// assert_eq!(r.first_due(0, t0), None);
/// assert_eq!(r.first_due(0, t0 + Duration::from_millis(5)), Some(7));
/// assert!(r.take_if_due((0, 7), t0 + Duration::from_millis(5)));
/// assert!(!r.is_waiting((0, 7)));
/// ```
#[derive(Debug)]
pub struct RetrySchedule {
    backoff: Backoff,
    /// Failures so far, for every record failed at least once and not yet acknowledged.
    failures: HashMap<RecordKey, u32>,
    /// Records waiting for their retry, and when it is due.
    waiting: BTreeMap<RecordKey, Instant>,
}

impl RetrySchedule {
    /// An empty schedule.
    pub fn new(backoff: Backoff) -> RetrySchedule {
        RetrySchedule {
            backoff,
            failures: HashMap::new(),
            waiting: BTreeMap::new(),
        }
    }

    /// The record failed at `now`.
    pub fn failed(&mut self, key: RecordKey, now: Instant) -> Retry {
        let n = self.failures.entry(key).or_insert(0);
        *n = n.saturating_add(1);
        if *n > self.backoff.max_retries {
            self.acked(key);
            return Retry::GiveUp;
        }
        let at = now + self.backoff.delay(*n);
        self.waiting.insert(key, at);
        Retry::At(at)
    }

    /// The record was acknowledged (or given up on): forget it.
    pub fn acked(&mut self, key: RecordKey) {
        self.failures.remove(&key);
        self.waiting.remove(&key);
    }

    /// `true` when the record failed and waits for its retry.
    pub fn is_waiting(&self, key: RecordKey) -> bool {
        self.waiting.contains_key(&key)
    }

    /// When the record is due, it leaves the waiting set (it is about to be emitted again)
    /// and this returns `true`.
    pub fn take_if_due(&mut self, key: RecordKey, now: Instant) -> bool {
        match self.waiting.get(&key) {
            Some(&at) if at <= now => {
                self.waiting.remove(&key);
                true
            }
            _ => false,
        }
    }

    /// The lowest offset of `slot` whose retry is due at `now`.
    pub fn first_due(&self, slot: usize, now: Instant) -> Option<i64> {
        self.waiting
            .range((slot, i64::MIN)..=(slot, i64::MAX))
            .find(|(_, &at)| at <= now)
            .map(|(&(_, offset), _)| offset)
    }

    /// Records waiting for a retry.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Forgets every record of `slot` below `offset` (committed past them).
    pub fn forget_below(&mut self, slot: usize, offset: i64) {
        self.waiting.retain(|&(s, o), _| s != slot || o >= offset);
        self.failures.retain(|&(s, o), _| s != slot || o >= offset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_follow_storms_formula() {
        let b = Backoff {
            initial: Duration::from_millis(1),
            period: Duration::from_millis(3),
            max_retries: 10,
            max_delay: Duration::from_millis(100),
        };
        let got: Vec<u64> = (1..=7).map(|n| b.delay(n).as_millis() as u64).collect();
        assert_eq!(got, [1, 6, 12, 24, 48, 96, 100]);
        assert_eq!(b.delay(200), Duration::from_millis(100));
    }

    #[test]
    fn gives_up_after_max_retries_and_forgets() {
        let b = Backoff {
            max_retries: 2,
            ..Backoff::default()
        };
        let mut r = RetrySchedule::new(b);
        let t = Instant::now();
        assert!(matches!(r.failed((1, 5), t), Retry::At(_)));
        assert!(r.take_if_due((1, 5), t));
        assert!(matches!(r.failed((1, 5), t), Retry::At(_)));
        assert_eq!(r.failed((1, 5), t), Retry::GiveUp);
        assert_eq!(r.waiting(), 0);
        // a new failure of the same offset starts over (it was acknowledged)
        assert!(matches!(r.failed((1, 5), t), Retry::At(_)));
    }

    #[test]
    fn first_due_is_per_slot_and_lowest_offset() {
        let mut r = RetrySchedule::new(Backoff {
            initial: Duration::from_millis(10),
            ..Backoff::default()
        });
        let t = Instant::now();
        r.failed((0, 9), t);
        r.failed((1, 3), t);
        r.failed((0, 4), t + Duration::from_millis(50));
        assert_eq!(r.first_due(0, t + Duration::from_millis(10)), Some(9));
        assert_eq!(r.first_due(0, t + Duration::from_millis(60)), Some(4));
        assert_eq!(r.first_due(1, t + Duration::from_millis(10)), Some(3));
        assert_eq!(r.first_due(2, t + Duration::from_secs(1)), None);
        r.forget_below(0, 5);
        assert_eq!(r.first_due(0, t + Duration::from_secs(1)), Some(9));
        assert!(!r.take_if_due((1, 3), t));
        r.acked((1, 3));
        assert_eq!(r.first_due(1, t + Duration::from_secs(1)), None);
    }
}
