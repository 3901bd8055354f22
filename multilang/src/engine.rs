//! The protocol's clocks as synchronous state machines with time passed in: the heartbeat /
//! hang decision and the restart backoff.

use std::time::{Duration, Instant};

/// Storm's `topology.subprocess.timeout.secs` default (its `supervisor.worker.timeout.secs`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a heartbeat goes to an idle bolt subprocess (Storm: every second).
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(1);

/// What the liveness clock asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// Nothing to do before [`Heartbeat::deadline`].
    Fine,
    /// Send a heartbeat now (then call [`Heartbeat::sent`]).
    SendHeartbeat,
    /// Nothing arrived for longer than the timeout while an answer was expected.
    Hung(Duration),
}

/// Storm's heartbeat rule: a heartbeat goes out every `interval` when none is outstanding;
/// `sync` answers it; any message counts as alive; the subprocess is hung when nothing has
/// arrived for `timeout` while a heartbeat (or another answer) is outstanding. Stricter than
/// Storm: work handed to the subprocess ([`busy`](Self::busy), e.g. tuples not yet acked)
/// is outstanding too, so a subprocess that hangs on a tuple is declared hung `timeout` after
/// its last message, not after the next heartbeat plus `timeout`.
#[derive(Debug, Clone)]
pub struct Heartbeat {
    interval: Duration,
    timeout: Duration,
    last_heard: Instant,
    /// When the outstanding heartbeat (or command) was sent.
    waiting_since: Option<Instant>,
    /// Since when work has been outstanding (see [`busy`](Self::busy)).
    busy_since: Option<Instant>,
    next_send: Instant,
}

impl Heartbeat {
    /// A clock that starts at `now` (the subprocess just started).
    pub fn new(now: Instant, interval: Duration, timeout: Duration) -> Heartbeat {
        Heartbeat {
            interval,
            timeout,
            last_heard: now,
            waiting_since: None,
            busy_since: None,
            next_send: now + interval,
        }
    }

    /// Work that expects an answer was handed over (the first of it sets the time).
    pub fn busy(&mut self, now: Instant) {
        self.busy_since.get_or_insert(now);
    }

    /// Every piece of work was answered.
    pub fn idle(&mut self) {
        self.busy_since = None;
    }

    /// Since when an answer has been expected: the older of the heartbeat and the work.
    fn outstanding(&self) -> Option<Instant> {
        match (self.waiting_since, self.busy_since) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// A message arrived.
    pub fn heard(&mut self, now: Instant) {
        self.last_heard = now;
    }

    /// A `sync` arrived: the outstanding heartbeat is answered.
    pub fn synced(&mut self, now: Instant) {
        self.last_heard = now;
        if self.waiting_since.take().is_some() {
            self.next_send = now + self.interval;
        }
    }

    /// A heartbeat (or another message that expects an answer) was sent.
    pub fn sent(&mut self, now: Instant) {
        self.waiting_since.get_or_insert(now);
    }

    /// The decision at `now`.
    pub fn check(&self, now: Instant) -> Liveness {
        if let Some(since) = self.outstanding() {
            let quiet = now.saturating_duration_since(self.last_heard.max(since));
            if quiet > self.timeout {
                return Liveness::Hung(now.saturating_duration_since(self.last_heard));
            }
        }
        if self.waiting_since.is_none() && now >= self.next_send {
            Liveness::SendHeartbeat
        } else {
            Liveness::Fine
        }
    }

    /// When [`check`](Self::check) may next say something other than `Fine`.
    pub fn deadline(&self) -> Instant {
        let hung = self
            .outstanding()
            .map(|since| self.last_heard.max(since) + self.timeout + Duration::from_millis(1));
        let send = self.waiting_since.is_none().then_some(self.next_send);
        match (hung, send) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(self.next_send),
        }
    }
}

/// Restart delays: 100 ms doubling per consecutive failure, capped at 10 s; a subprocess that
/// ran for a minute resets the count.
#[derive(Debug, Clone, Default)]
pub struct Backoff {
    failures: u32,
}

impl Backoff {
    /// The longest delay.
    pub const MAX: Duration = Duration::from_secs(10);

    /// A subprocess that started at `started` failed at `now`: the delay before the next start.
    pub fn failed(&mut self, started: Option<Instant>, now: Instant) -> Duration {
        if started.is_some_and(|s| now.saturating_duration_since(s) >= Duration::from_secs(60)) {
            self.failures = 0;
        }
        let d = Duration::from_millis(100).saturating_mul(1u32 << self.failures.min(7));
        self.failures = self.failures.saturating_add(1);
        d.min(Self::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn heartbeats_every_interval_and_sync_answers() {
        let t0 = Instant::now();
        let mut h = Heartbeat::new(t0, S, 5 * S);
        assert_eq!(h.check(t0), Liveness::Fine);
        assert_eq!(h.deadline(), t0 + S);
        assert_eq!(h.check(t0 + S), Liveness::SendHeartbeat);
        h.sent(t0 + S);
        assert_eq!(
            h.check(t0 + 2 * S),
            Liveness::Fine,
            "outstanding, not yet timed out"
        );
        h.synced(t0 + 2 * S);
        assert_eq!(h.check(t0 + 2 * S), Liveness::Fine);
        assert_eq!(h.check(t0 + 3 * S), Liveness::SendHeartbeat);
    }

    #[test]
    fn hung_after_timeout_without_any_message() {
        let t0 = Instant::now();
        let mut h = Heartbeat::new(t0, S, 5 * S);
        h.sent(t0 + S);
        assert_eq!(
            h.check(t0 + 6 * S),
            Liveness::Fine,
            "exactly the timeout is not over it"
        );
        // any message keeps it alive
        h.heard(t0 + 5 * S);
        assert_eq!(h.check(t0 + 9 * S), Liveness::Fine);
        assert!(matches!(
            h.check(t0 + 10 * S + Duration::from_millis(1)),
            Liveness::Hung(_)
        ));
        assert!(h.deadline() <= t0 + 10 * S + Duration::from_millis(1));
    }

    #[test]
    fn work_outstanding_counts_from_the_last_message_and_idle_clears_it() {
        let t0 = Instant::now();
        let mut h = Heartbeat::new(t0, 10 * S, 3 * S);
        h.busy(t0);
        h.heard(t0 + S); // an ack of earlier work; more work still pending
        assert_eq!(h.deadline(), t0 + 4 * S + Duration::from_millis(1));
        assert_eq!(h.check(t0 + 4 * S), Liveness::Fine);
        assert!(matches!(
            h.check(t0 + 4 * S + Duration::from_millis(1)),
            Liveness::Hung(_)
        ));
        // once everything is answered, silence is not a hang (until the next heartbeat)
        h.idle();
        assert_eq!(h.check(t0 + 9 * S), Liveness::Fine);
        assert_eq!(h.deadline(), t0 + 10 * S);
    }

    #[test]
    fn idle_subprocess_that_never_was_asked_is_not_hung() {
        let t0 = Instant::now();
        let h = Heartbeat::new(t0, S, 5 * S);
        assert_eq!(h.check(t0 + 100 * S), Liveness::SendHeartbeat);
    }

    #[test]
    fn backoff_doubles_caps_and_resets() {
        let t0 = Instant::now();
        let mut b = Backoff::default();
        let ds: Vec<_> = (0..10).map(|_| b.failed(Some(t0), t0)).collect();
        assert_eq!(ds[0], Duration::from_millis(100));
        assert_eq!(ds[1], Duration::from_millis(200));
        assert_eq!(ds[9], Backoff::MAX);
        assert_eq!(b.failed(Some(t0), t0 + 61 * S), Duration::from_millis(100));
    }
}
