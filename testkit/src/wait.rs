//! Waiting on a condition instead of sleeping for a fixed time.
//!
//! A test that needs something to happen (a process to start, a file to appear, a node to go)
//! polls a condition with a short interval until it holds or a timeout passes. On timeout it
//! fails with what it waited for, so a failing run says more than "assertion failed".
//!
//! The condition returns either `bool` (done or not) or `Option<T>` (the value, once there):
//!
//! ```
//! use heron_testkit::wait::{wait_for, Wait};
//! use std::time::Duration;
//!
//! let mut polls = 0;
//! wait_for(Duration::from_secs(5), "the third poll", || {
//!     polls += 1;
//!     polls == 3
//! });
//!
//! let mut n = 0;
//! let seven = Wait::new("a number above six")
//!     .timeout(Duration::from_secs(5))
//!     .every(Duration::from_millis(1))
//!     .until(|| {
//!         n += 1;
//!         (n > 6).then_some(n)
//!     });
//! assert_eq!(seven, 7);
//! ```

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often a condition is polled unless [`Wait::every`] says otherwise.
pub const POLL: Duration = Duration::from_millis(20);

/// What a condition can return: `bool`, or `Option<T>` for a value that is there once the
/// condition holds.
pub trait Outcome {
    /// What the wait returns once the condition holds.
    type Value;
    /// `Some` once the condition holds.
    fn ready(self) -> Option<Self::Value>;
}

impl Outcome for bool {
    type Value = ();
    fn ready(self) -> Option<()> {
        self.then_some(())
    }
}

impl<T> Outcome for Option<T> {
    type Value = T;
    fn ready(self) -> Option<T> {
        self
    }
}

/// A wait that ran out of time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("timed out after {waited:?} waiting for {what}")]
pub struct TimedOut {
    /// What was waited for.
    pub what: String,
    /// The timeout that passed.
    pub waited: Duration,
}

/// A wait under construction: what it waits for, how long and how often it polls.
#[derive(Debug, Clone)]
#[must_use = "a Wait does nothing until `until` or `try_until`"]
pub struct Wait {
    what: String,
    timeout: Duration,
    every: Duration,
}

impl Wait {
    /// A wait for `what` (used in the failure message), 10 s, polled every [`POLL`].
    pub fn new(what: impl Into<String>) -> Wait {
        Wait {
            what: what.into(),
            timeout: Duration::from_secs(10),
            every: POLL,
        }
    }

    /// Fails after `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Wait {
        self.timeout = timeout;
        self
    }

    /// Polls every `interval` (for conditions that are costly to check).
    pub fn every(mut self, interval: Duration) -> Wait {
        self.every = interval;
        self
    }

    /// Polls `cond` until it holds; [`TimedOut`] if it still does not after the timeout
    /// (it is checked one last time at the deadline).
    pub fn try_until<O: Outcome>(&self, mut cond: impl FnMut() -> O) -> Result<O::Value, TimedOut> {
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(v) = cond().ready() {
                return Ok(v);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(TimedOut {
                    what: self.what.clone(),
                    waited: self.timeout,
                });
            }
            std::thread::sleep(self.every.min(deadline - now));
        }
    }

    /// Polls `cond` until it holds and returns its value; panics with what it waited for
    /// after the timeout.
    #[track_caller]
    pub fn until<O: Outcome>(&self, cond: impl FnMut() -> O) -> O::Value {
        match self.try_until(cond) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }
}

/// Polls `cond` every [`POLL`] until it holds and returns its value; panics with
/// "timed out after `timeout` waiting for `what`" otherwise. Shorthand for
/// `Wait::new(what).timeout(timeout).until(cond)`.
#[track_caller]
pub fn wait_for<O: Outcome>(timeout: Duration, what: &str, cond: impl FnMut() -> O) -> O::Value {
    Wait::new(what).timeout(timeout).until(cond)
}

/// Waits until `f()` grows by more than `by` from its value now; returns the new value.
#[track_caller]
pub fn wait_growth(timeout: Duration, what: &str, by: u64, mut f: impl FnMut() -> u64) -> u64 {
    let start = f();
    wait_for(timeout, what, || {
        let now = f();
        (now > start + by).then_some(now)
    })
}

/// Runs `f` on a new thread and returns its handle once that thread sleeps (parked or
/// blocked, state `S` in `/proc`) or has finished: for tests of wake-ups, instead of sleeping
/// "long enough" for the other thread to block.
///
/// # Panics
/// If the thread neither sleeps nor finishes within `timeout`.
///
/// ```
/// use std::sync::mpsc;
/// use std::time::Duration;
///
/// let (tx, rx) = mpsc::channel::<u32>();
/// let receiver = heron_testkit::wait::spawn_asleep(Duration::from_secs(5), move || rx.recv());
/// tx.send(7).unwrap(); // the receiver is blocked in `recv` by now
/// assert_eq!(receiver.join().unwrap(), Ok(7));
/// ```
#[track_caller]
pub fn spawn_asleep<R: Send + 'static>(
    timeout: Duration,
    f: impl FnOnce() -> R + Send + 'static,
) -> JoinHandle<R> {
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let handle = std::thread::spawn(move || {
        let _ = tid_tx.send(crate::process::thread_id());
        f()
    });
    let tid = tid_rx.recv().expect("the thread starts");
    wait_for(timeout, "the thread to sleep", || {
        handle.is_finished() || crate::process::state(tid) == Some('S')
    });
    handle
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::catch_unwind;

    #[test]
    fn returns_as_soon_as_the_condition_holds() {
        let mut calls = 0;
        wait_for(Duration::from_secs(5), "three calls", || {
            calls += 1;
            calls >= 3
        });
        assert_eq!(calls, 3);
    }

    #[test]
    fn returns_the_value_of_an_option_condition() {
        let v = wait_for(Duration::from_secs(1), "a value", || Some("here"));
        assert_eq!(v, "here");
    }

    #[test]
    fn a_timeout_names_what_it_waited_for() {
        let e = Wait::new("the moon")
            .timeout(Duration::from_millis(30))
            .every(Duration::from_millis(5))
            .try_until(|| false)
            .unwrap_err();
        assert_eq!(
            e,
            TimedOut {
                what: "the moon".into(),
                waited: Duration::from_millis(30)
            }
        );
        assert_eq!(e.to_string(), "timed out after 30ms waiting for the moon");
    }

    #[test]
    fn until_panics_with_the_description() {
        let p =
            catch_unwind(|| wait_for(Duration::from_millis(10), "the sun", || false)).unwrap_err();
        let msg = p.downcast_ref::<String>().expect("a formatted panic");
        assert_eq!(msg, "timed out after 10ms waiting for the sun");
    }

    #[test]
    fn the_condition_is_checked_once_more_at_the_deadline() {
        let start = Instant::now();
        let mut calls = 0;
        let r = Wait::new("late")
            .timeout(Duration::from_millis(40))
            .every(Duration::from_secs(60))
            .try_until(|| {
                calls += 1;
                calls == 2
            });
        assert_eq!(r, Ok(()));
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the sleep is capped"
        );
    }

    #[test]
    fn a_thread_blocked_on_a_channel_is_seen_asleep() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let h = spawn_asleep(Duration::from_secs(5), move || rx.recv().is_err());
        assert!(!h.is_finished(), "still blocked");
        drop(tx);
        assert!(h.join().unwrap());
        let quick = spawn_asleep(Duration::from_secs(5), || 3);
        assert_eq!(quick.join().unwrap(), 3);
    }

    #[test]
    fn growth_is_measured_from_the_first_value() {
        let mut v = 10;
        let got = wait_growth(Duration::from_secs(5), "growth", 2, || {
            v += 1;
            v
        });
        assert_eq!(got, 14, "the first read (11) is the base");
    }
}
