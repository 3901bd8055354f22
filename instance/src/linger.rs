//! When a bolt's output goes out: at the end of every input batch (the default, as Heron's
//! instance does), or held for up to a linger time (Flink's buffer timeout, Kafka's
//! `linger.ms`) while it is small and carries no acks, so that the bursts a bolt emits now and
//! then (a window's results at each close) travel in fewer writes and wake their consumers
//! less often.
//!
//! Set per component or per topology with [`OUTPUT_LINGER_MS`] (0 or unset: no linger).
//! Acks and fails never wait: a batch that holds any goes at once, and so does output of
//! [`FLUSH_BYTES`](crate::executor::FLUSH_BYTES) or more.
//!
//! [`OUTPUT_LINGER_MS`]: heron_api::config::OUTPUT_LINGER_MS

use std::time::{Duration, Instant};

/// The flush decision at the end of an input batch, and the deadline of held output.
#[derive(Debug)]
pub(crate) struct Linger {
    max: Duration,
    /// When held output must go out; `None` when nothing is held.
    due: Option<Instant>,
}

/// What a bolt's waiting output is like when its input batch ends.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Waiting {
    /// Any output at all.
    pub output: bool,
    /// Output that must not wait: acks or fails, or a full batch of bytes.
    pub urgent: bool,
}

impl Linger {
    /// No linger: every batch's output goes at its end.
    pub fn off() -> Linger {
        Linger::new(Duration::ZERO)
    }

    /// Output held for up to `max`.
    pub fn new(max: Duration) -> Linger {
        Linger { max, due: None }
    }

    /// Whether the output waiting at the end of an input batch goes out now.
    pub fn at_batch_end(&mut self, now: Instant, waiting: Waiting) -> bool {
        if !waiting.output {
            self.due = None;
            return false;
        }
        if self.max.is_zero() || waiting.urgent {
            self.due = None;
            return true;
        }
        let due = *self.due.get_or_insert(now + self.max);
        if now >= due {
            self.due = None;
            return true;
        }
        false
    }

    /// Whether held output is due at `now` (it is then no longer held).
    pub fn is_due(&mut self, now: Instant) -> bool {
        match self.due {
            Some(d) if now >= d => {
                self.due = None;
                true
            }
            _ => false,
        }
    }

    /// When held output must go out.
    pub fn due(&self) -> Option<Instant> {
        self.due
    }

    /// Everything waiting went out some other way.
    pub fn flushed(&mut self) {
        self.due = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Waiting = Waiting {
        output: true,
        urgent: false,
    };
    const URGENT: Waiting = Waiting {
        output: true,
        urgent: true,
    };
    const NONE: Waiting = Waiting {
        output: false,
        urgent: false,
    };

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn off_flushes_every_batch_with_output() {
        let t = Instant::now();
        let mut l = Linger::off();
        assert!(l.at_batch_end(t, SMALL));
        assert!(!l.at_batch_end(t, NONE));
        assert_eq!(l.due(), None);
    }

    #[test]
    fn small_output_waits_until_the_first_batch_plus_linger() {
        let t = Instant::now();
        let mut l = Linger::new(ms(5));
        assert!(!l.at_batch_end(t, SMALL));
        assert_eq!(l.due(), Some(t + ms(5)));
        // a later batch does not push the deadline out
        assert!(!l.at_batch_end(t + ms(3), SMALL));
        assert_eq!(l.due(), Some(t + ms(5)));
        assert!(!l.is_due(t + ms(4)));
        assert!(l.is_due(t + ms(5)));
        assert_eq!(l.due(), None);
        // the next held output starts a new deadline
        assert!(!l.at_batch_end(t + ms(6), SMALL));
        assert_eq!(l.due(), Some(t + ms(11)));
        assert!(l.at_batch_end(t + ms(11), SMALL));
    }

    #[test]
    fn acks_and_full_batches_go_at_once_with_what_was_held() {
        let t = Instant::now();
        let mut l = Linger::new(ms(5));
        assert!(!l.at_batch_end(t, SMALL));
        assert!(l.at_batch_end(t + ms(1), URGENT));
        assert_eq!(l.due(), None);
        assert!(!l.is_due(t + ms(10)));
    }

    #[test]
    fn output_sent_elsewhere_clears_the_deadline() {
        let t = Instant::now();
        let mut l = Linger::new(ms(5));
        assert!(!l.at_batch_end(t, SMALL));
        l.flushed();
        assert!(!l.is_due(t + ms(6)));
        // a batch that ends with nothing waiting forgets a stale deadline too
        assert!(!l.at_batch_end(t, SMALL));
        assert!(!l.at_batch_end(t + ms(1), NONE));
        assert_eq!(l.due(), None);
    }
}
