//! The gateway → executor queue's byte budget, in time: what the executor takes in
//! [`RunOptions::in_queue_time`](crate::RunOptions::in_queue_time).
//!
//! At saturation the in-queue of the slowest bolt is full, and what it holds is queueing
//! latency. The same bytes are different amounts of work: a word count's split turns each
//! sentence into eight words, so its executor takes sentences at about a third of the bytes
//! per second a count takes words, and the 256 KiB that are 3–4 ms of a count's input were
//! 8–9 ms of a split's (`docs/cost.md`). So the gateway learns how fast its executor empties
//! the queue while something waits in it ([`heron_flow::DrainRate`]), and the queue is full
//! once it holds that many milliseconds of work, at least [`MIN_BYTES`] and at most the byte
//! budget ([`RunOptions::in_queue_bytes`](crate::RunOptions::in_queue_bytes)).
//!
//! ```text
//! split taking 30 MB/s, 2 ms  →  60 KB
//! count taking 75 MB/s        →  150 KB
//! rate unknown, or time zero  →  the byte budget (256 KiB)
//! ```

use heron_flow::DrainRate;
use std::time::{Duration, Instant};

/// The smallest budget a rate may give: a socket read or two.
pub(crate) const MIN_BYTES: usize = 32 << 10;

/// The in-queue's budget, from the rate at which the executor takes what the gateway sends.
#[derive(Debug)]
pub(crate) struct InQueueBudget {
    rate: DrainRate,
    /// Bytes sent into the queue so far.
    sent: u64,
    time: Duration,
    most: usize,
    /// The budget last handed out.
    current: usize,
}

impl InQueueBudget {
    /// A queue whose budget is what its reader takes in `time`, at most `most` bytes.
    pub fn new(time: Duration, most: usize) -> InQueueBudget {
        InQueueBudget {
            rate: DrainRate::default(),
            sent: 0,
            time,
            most,
            current: most,
        }
    }

    /// Before `bytes` more are sent at `now`, with `queued` of what was sent still in the
    /// queue: the new budget, when it changed.
    pub fn before_send(&mut self, now: Instant, queued: usize, bytes: usize) -> Option<usize> {
        let taken = self.sent.saturating_sub(queued as u64);
        self.sent += bytes as u64;
        self.rate.sample(now, taken, queued);
        let budget = self.rate.bytes_in(self.time, MIN_BYTES, self.most);
        (budget != self.current).then(|| {
            self.current = budget;
            budget
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);
    const MOST: usize = 256 << 10;

    /// Sends `per_ms` bytes every millisecond for `ms` ms to a reader that takes `takes`
    /// bytes per ms; returns the last budget handed out.
    fn run(
        b: &mut InQueueBudget,
        t: &mut Instant,
        queued: &mut usize,
        ms: u32,
        per_ms: usize,
        takes: usize,
    ) -> Option<usize> {
        let mut last = None;
        for _ in 0..ms {
            *t += MS;
            *queued = queued.saturating_sub(takes);
            if let Some(n) = b.before_send(*t, *queued, per_ms) {
                last = Some(n);
            }
            *queued += per_ms;
        }
        last
    }

    #[test]
    fn a_slow_reader_gets_its_milliseconds_and_a_fast_one_the_byte_budget() {
        let mut t = Instant::now();
        // a split: offered 40 KB per ms, takes 30 KB per ms (30 MB/s), so a backlog grows
        let (mut slow, mut q) = (InQueueBudget::new(2 * MS, MOST), 0);
        let budget = run(&mut slow, &mut t, &mut q, 200, 40_000, 30_000).expect("changed");
        assert!((59_000..=61_000).contains(&budget), "{budget}");
        // a reader of 500 MB/s: 2 ms is over the byte budget, which stays
        let (mut fast, mut q) = (InQueueBudget::new(2 * MS, MOST), 0);
        assert_eq!(run(&mut fast, &mut t, &mut q, 200, 600_000, 500_000), None);
        // a very slow reader gets the least
        let (mut crawl, mut q) = (InQueueBudget::new(2 * MS, MOST), 0);
        let least = run(&mut crawl, &mut t, &mut q, 200, 2_000, 1_000);
        assert_eq!(least, Some(MIN_BYTES));
    }

    #[test]
    fn time_zero_keeps_the_byte_budget() {
        let mut t = Instant::now();
        let (mut b, mut q) = (InQueueBudget::new(Duration::ZERO, MOST), 0);
        assert_eq!(run(&mut b, &mut t, &mut q, 200, 40_000, 30_000), None);
    }
}
