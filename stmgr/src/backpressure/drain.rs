//! Watermarks in time: a connection's back-pressure thresholds from how fast it drains.
//!
//! Byte watermarks treat every byte alike, but a byte of one stream stands for more work than a
//! byte of another. In a word count a sentence fans out into eight words, so the connection
//! to a split drains a third as many bytes per second as the one to a count: the same
//! megabyte of backlog is 45 ms of sentences and 15 ms of words, and at saturation every
//! backlog sits at its watermark. Measured flat out (`docs/cost-log.md`), byte watermarks of 1 MB
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
use std::time::Duration;

/// The smallest high watermark a rate may give: a few batches.
pub(crate) const MIN_HIGH: usize = 64 << 10;
/// The low watermark as a share of a rate's high one.
pub(crate) const LOW_FRACTION: f64 = 0.8;

/// The (high, low) watermarks of a connection draining at `rate`, for `drain_time` under the
/// byte watermarks `(high, low)`: the byte ones while the rate is unknown or the drain time is
/// zero.
pub(crate) fn watermarks(
    rate: &DrainRate,
    drain_time: Duration,
    high: usize,
    low: usize,
) -> (usize, usize) {
    let timed = rate.bytes_in(drain_time, MIN_HIGH, high);
    if timed >= high {
        (high, low)
    } else {
        (timed, (timed as f64 * LOW_FRACTION) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);
    const MB: usize = 1 << 20;

    #[test]
    fn a_backlogged_connection_gets_watermarks_of_its_drain_time() {
        let unknown = DrainRate::default();
        assert_eq!(watermarks(&unknown, 5 * MS, MB, 512 << 10), (MB, 512 << 10));
        let d = DrainRate::with_rate(22e6); // 22 KB per ms
        let (high, low) = watermarks(&d, 5 * MS, MB, 512 << 10);
        assert!((109_000..=111_000).contains(&high), "{high}");
        assert_eq!(low, (high as f64 * LOW_FRACTION) as usize);
        // a drain time of zero turns it off
        assert_eq!(watermarks(&d, Duration::ZERO, 1000, 500), (1000, 500));
    }

    #[test]
    fn the_byte_watermarks_bound_it_and_a_few_batches_are_the_least() {
        let fast = DrainRate::with_rate(1e9); // 1 GB/s
        assert_eq!(watermarks(&fast, 5 * MS, MB, 1000), (MB, 1000));
        let slow = DrainRate::with_rate(100e3); // 100 KB/s
        let (high, low) = watermarks(&slow, 5 * MS, MB, 512 << 10);
        assert_eq!(high, MIN_HIGH);
        assert!(low < high);
    }
}
