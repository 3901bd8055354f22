//! Watermarks in time: a connection's back-pressure thresholds from how fast it drains.
//!
//! Byte watermarks treat every byte alike, but a byte of one stream stands for more work than a
//! byte of another. In a word count a sentence fans out into eight words, so the connection
//! to a split drains a third as many bytes per second as the one to a count: the same
//! megabyte of backlog is 45 ms of sentences and 15 ms of words, and at saturation every
//! backlog sits at its watermark. Measured flat out (`docs/cost.md`), byte watermarks of 1 MB
//! held 80 ms (p50) of words between the spouts and the counts.
//!
//! So each connection's thresholds follow its drain rate: the high watermark is what it writes
//! in the *drain time* (`heron-rs.backpressure.drain.ms`), at least [`MIN_HIGH`] and at most
//! the byte watermark, and the low one is [`LOW_FRACTION`] of it: a narrow band, so a
//! throttled spout resumes while the backlog still covers the time its next tuples need to
//! arrive. The rate is learned from the bytes written while a backlog was waiting (what the
//! reader takes when it is the bottleneck); a window with no backlog shows only the offered
//! load, which can raise the estimate but not lower it.
//!
//! ```text
//! rate 22 MB/s, drain time 5 ms  →  high 110 KB, low 88 KB
//! rate 200 MB/s                  →  high = the byte watermark (1 MB), low its low one
//! ```

use heron_flow::DrainRate;
use std::time::{Duration, Instant};

/// The smallest high watermark a rate may give: a few batches.
pub(crate) const MIN_HIGH: usize = 64 << 10;
/// The low watermark as a share of a rate's high one.
pub(crate) const LOW_FRACTION: f64 = 0.8;

/// The drain rate of one connection.
#[derive(Debug, Clone, Default)]
pub(crate) struct Drain(DrainRate);

impl Drain {
    /// At `now` the connection has written `written` bytes in all and has `backlog` bytes
    /// waiting.
    pub fn sample(&mut self, now: Instant, written: u64, backlog: usize) {
        self.0.sample(now, written, backlog);
    }

    /// Bytes per second, once known.
    #[cfg(test)]
    pub fn rate(&self) -> Option<f64> {
        self.0.bytes_per_sec()
    }

    /// The (high, low) watermarks for `drain_time` under the byte watermarks `(high, low)`:
    /// the byte ones while the rate is unknown or the drain time is zero.
    pub fn watermarks(&self, drain_time: Duration, high: usize, low: usize) -> (usize, usize) {
        let timed = self.0.bytes_in(drain_time, MIN_HIGH, high);
        if timed >= high {
            (high, low)
        } else {
            (timed, (timed as f64 * LOW_FRACTION) as usize)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);
    const MB: u64 = 1 << 20;

    /// Samples every millisecond for `ms` milliseconds, writing `per_ms` bytes each, with
    /// `backlog` waiting at every sample.
    fn feed(
        d: &mut Drain,
        t: &mut Instant,
        written: &mut u64,
        ms: u32,
        per_ms: u64,
        backlog: usize,
    ) {
        for _ in 0..ms {
            *t += MS;
            *written += per_ms;
            d.sample(*t, *written, backlog);
        }
    }

    #[test]
    fn a_backlogged_connection_gets_watermarks_of_its_drain_time() {
        let (mut t, mut w) = (Instant::now(), 0u64);
        let mut d = Drain::default();
        d.sample(t, w, 1);
        assert_eq!(d.rate(), None);
        assert_eq!(
            d.watermarks(5 * MS, MB as usize, 512 << 10),
            (1 << 20, 512 << 10)
        );
        // 22 KB per ms = 22 MB/s
        feed(&mut d, &mut t, &mut w, 200, 22_000, 100_000);
        let rate = d.rate().expect("windows completed");
        assert!((rate - 22e6).abs() < 1e3, "{rate}");
        let (high, low) = d.watermarks(5 * MS, MB as usize, 512 << 10);
        assert!((109_000..=111_000).contains(&high), "{high}");
        assert_eq!(low, (high as f64 * LOW_FRACTION) as usize);
        // a drain time of zero turns it off
        assert_eq!(d.watermarks(Duration::ZERO, 1000, 500), (1000, 500));
    }

    #[test]
    fn the_byte_watermarks_bound_it_and_a_few_batches_are_the_least() {
        let (mut t, mut w) = (Instant::now(), 0u64);
        let mut fast = Drain::default();
        feed(&mut fast, &mut t, &mut w, 100, 1_000_000, 1); // 1 GB/s
        assert_eq!(
            fast.watermarks(5 * MS, MB as usize, 1000),
            (MB as usize, 1000)
        );
        let mut slow = Drain::default();
        feed(&mut slow, &mut t, &mut w, 100, 100, 1); // 100 KB/s
        let (high, low) = slow.watermarks(5 * MS, MB as usize, 512 << 10);
        assert_eq!(high, MIN_HIGH);
        assert!(low < high);
    }
}
