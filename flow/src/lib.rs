//! Flow control shared by the stream manager and the instance: how fast a queue drains, so
//! that a bound in bytes can become a bound in time.
//!
//! A byte of one stream stands for more work than a byte of another: in a word count a
//! sentence fans out into eight words, so a megabyte of sentences in front of a split is
//! several times the latency of a megabyte of words in front of a count. At saturation every
//! queue between the spouts and the slowest stage is full, so each queue should hold a few
//! milliseconds of its reader's work, whatever the bytes. [`DrainRate`] learns the reader's
//! rate; the stream manager turns it into back-pressure watermarks and the instance into the
//! byte budget of its gateway → executor queue.
//!
//! ```
//! use heron_flow::DrainRate;
//! use std::time::{Duration, Instant};
//!
//! let mut rate = DrainRate::default();
//! let t0 = Instant::now();
//! // the reader took 20 KB in each millisecond while something was waiting
//! for ms in 0..=40u64 {
//!     rate.sample(t0 + Duration::from_millis(ms), ms * 20_000, 1);
//! }
//! let bytes_per_sec = rate.bytes_per_sec().unwrap();
//! assert!((bytes_per_sec - 20e6).abs() < 1.0);
//! // 2 ms of that reader's work, between 32 KiB and 256 KiB
//! assert_eq!(rate.bytes_in(Duration::from_millis(2), 32 << 10, 256 << 10), 40_000);
//! ```

use std::time::{Duration, Instant};

pub mod local_socket;
pub mod refill;

/// Send buffer size asked for on both ends of a data connection (instance ↔ stream manager,
/// stream manager ↔ stream manager); the kernel doubles it for its bookkeeping. Fixed, so the
/// kernel's autotuning (up to 32 MB per loopback socket) does not hide a backlog from back
/// pressure; what the send queue holds is counted by the stream manager's back pressure.
pub const SEND_BUFFER: usize = 128 * 1024;

/// Receive buffer size asked for on both ends of a data connection: smaller than the send
/// buffer, because what a receive queue holds is invisible to the sender's back pressure,
/// while its sender's send queue is counted. 64 KiB instead of 128 KiB cut the flat-out p50 by
/// a sixth at the same throughput (`docs/cost-log.md`, "Back pressure counts the kernel's send
/// queue"). Not smaller: the kernel doubles it, and a window below one loopback segment
/// (64 KiB) stalls the sender on its persist timer (16 KiB collapsed a word count to 1 % of
/// its throughput).
pub const RECV_BUFFER: usize = 64 * 1024;

/// The span over which one rate sample is taken.
pub const WINDOW: Duration = Duration::from_millis(20);
/// How much a new sample moves a backlogged queue's rate (an exponential average).
const ALPHA: f64 = 0.25;

/// The drain rate of one queue: bytes taken per second while something was waiting.
///
/// The rate is learned from the windows in which every sample saw a backlog (what the reader
/// takes when it is the bottleneck). A window with no backlog shows only the offered load,
/// which can raise the estimate but not lower it.
#[derive(Debug, Clone, Default)]
pub struct DrainRate {
    /// Start of the current window: when, and the bytes taken by then.
    window: Option<(Instant, u64)>,
    /// Whether every sample of the current window had a backlog.
    busy: bool,
    /// Bytes per second; `None` until a window completes.
    rate: Option<f64>,
}

impl DrainRate {
    /// A queue whose rate is already known: `bytes_per_sec`, moved by later samples as any.
    ///
    /// ```
    /// use heron_flow::DrainRate;
    /// use std::time::Duration;
    /// let rate = DrainRate::with_rate(10e6);
    /// assert_eq!(rate.bytes_in(Duration::from_millis(5), 0, usize::MAX), 50_000);
    /// ```
    pub fn with_rate(bytes_per_sec: f64) -> DrainRate {
        DrainRate {
            rate: Some(bytes_per_sec),
            ..DrainRate::default()
        }
    }

    /// At `now` the reader has taken `taken` bytes in all and `backlog` bytes are waiting.
    pub fn sample(&mut self, now: Instant, taken: u64, backlog: usize) {
        let Some((t0, w0)) = self.window else {
            self.window = Some((now, taken));
            self.busy = backlog > 0;
            return;
        };
        self.busy &= backlog > 0;
        let dt = now.saturating_duration_since(t0);
        if dt < WINDOW {
            return;
        }
        let r = taken.saturating_sub(w0) as f64 / dt.as_secs_f64();
        self.rate = Some(match self.rate {
            None => r,
            Some(old) if self.busy => old + (r - old) * ALPHA,
            Some(old) => old.max(r),
        });
        self.window = Some((now, taken));
        self.busy = backlog > 0;
    }

    /// Bytes per second, once a window has completed.
    pub fn bytes_per_sec(&self) -> Option<f64> {
        self.rate
    }

    /// What the reader takes in `time`, within `[least, most]`; `most` while the rate is
    /// unknown or `time` is zero.
    pub fn bytes_in(&self, time: Duration, least: usize, most: usize) -> usize {
        match self.rate.filter(|_| !time.is_zero()) {
            None => most,
            Some(rate) => ((rate * time.as_secs_f64()) as usize).clamp(least.min(most), most),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// Samples every millisecond for `ms` milliseconds, taking `per_ms` bytes each, with
    /// `backlog` waiting at every sample.
    fn feed(
        d: &mut DrainRate,
        t: &mut Instant,
        taken: &mut u64,
        ms: u32,
        per_ms: u64,
        backlog: usize,
    ) {
        for _ in 0..ms {
            *t += MS;
            *taken += per_ms;
            d.sample(*t, *taken, backlog);
        }
    }

    #[test]
    fn a_backlogged_queue_learns_its_rate_and_bounds_follow_it() {
        let (mut t, mut w) = (Instant::now(), 0u64);
        let mut d = DrainRate::default();
        d.sample(t, w, 1);
        assert_eq!(d.bytes_per_sec(), None);
        assert_eq!(d.bytes_in(5 * MS, 64 << 10, 1 << 20), 1 << 20);
        feed(&mut d, &mut t, &mut w, 200, 22_000, 100_000); // 22 MB/s
        let rate = d.bytes_per_sec().expect("windows completed");
        assert!((rate - 22e6).abs() < 1e3, "{rate}");
        let five = d.bytes_in(5 * MS, 64 << 10, 1 << 20);
        assert!((109_000..=111_000).contains(&five), "{five}");
        assert_eq!(d.bytes_in(MS, 64 << 10, 1 << 20), 64 << 10, "the least");
        assert_eq!(d.bytes_in(100 * MS, 64 << 10, 1 << 20), 1 << 20, "the most");
        assert_eq!(
            d.bytes_in(Duration::ZERO, 1, 1000),
            1000,
            "zero turns it off"
        );
    }

    #[test]
    fn idle_windows_raise_the_rate_but_never_lower_it() {
        let (mut t, mut w) = (Instant::now(), 0u64);
        let mut d = DrainRate::default();
        feed(&mut d, &mut t, &mut w, 100, 50_000, 1); // 50 MB/s, backlogged
        let fifty = d.bytes_per_sec().unwrap();
        feed(&mut d, &mut t, &mut w, 100, 1_000, 0); // 1 MB/s offered, no backlog
        assert_eq!(
            d.bytes_per_sec(),
            Some(fifty),
            "a light load says nothing of capacity"
        );
        feed(&mut d, &mut t, &mut w, 21, 80_000, 0); // 80 MB/s offered
        assert!(d.bytes_per_sec().unwrap() > 79e6, "{:?}", d.bytes_per_sec());
        // backlogged again at 10 MB/s: the estimate follows down, a quarter per window
        let before = d.bytes_per_sec().unwrap();
        feed(&mut d, &mut t, &mut w, 41, 10_000, 1);
        let after = d.bytes_per_sec().unwrap();
        assert!(after < before && after > 10e6, "{before} -> {after}");
        feed(&mut d, &mut t, &mut w, 600, 10_000, 1);
        assert!((d.bytes_per_sec().unwrap() - 10e6).abs() < 0.1e6);
    }

    #[test]
    fn a_window_with_one_empty_sample_is_not_busy() {
        let (mut t, mut w) = (Instant::now(), 0u64);
        let mut d = DrainRate::default();
        feed(&mut d, &mut t, &mut w, 21, 50_000, 1);
        let fifty = d.bytes_per_sec().unwrap();
        feed(&mut d, &mut t, &mut w, 10, 1_000, 1);
        feed(&mut d, &mut t, &mut w, 1, 1_000, 0);
        feed(&mut d, &mut t, &mut w, 10, 1_000, 1);
        assert_eq!(d.bytes_per_sec(), Some(fifty));
    }
}
