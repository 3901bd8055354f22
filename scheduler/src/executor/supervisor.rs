//! The supervisor's decisions as a synchronous state machine: which processes to start now,
//! when to restart one that exited, and nothing after shutdown. Time is passed in, so the
//! backoff schedule is unit-tested without processes or sleeping.

use std::time::{Duration, Instant};

/// Restart backoff: the first restart waits `initial`, each further one twice the previous,
/// up to `max`; a process that ran for `reset_after` starts again from `initial`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackoffPolicy {
    /// First restart delay.
    pub initial: Duration,
    /// Largest restart delay.
    pub max: Duration,
    /// Uptime after which the delay goes back to `initial`.
    pub reset_after: Duration,
}

impl Default for BackoffPolicy {
    fn default() -> BackoffPolicy {
        BackoffPolicy {
            initial: Duration::from_millis(200),
            max: Duration::from_secs(10),
            // A crash loop dies while starting (bad arguments, a port in use, a peer that
            // refuses it): well within 2 s. A process that ran longer was stopped by something
            // else: killed from outside (a chaos run, an operator), or an instance whose stream
            // manager or checkpoint manager died. It restarts after the first delay each time;
            // with a longer reset the delays of a stream manager killed every few seconds, and
            // of its instances with it, grew to 6.4 s while the whole topology waited for them.
            reset_after: Duration::from_secs(2),
        }
    }
}

/// Where one supervised process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessState {
    /// Not running; to be started at `start_at`.
    Waiting {
        /// When to start it.
        start_at: Instant,
    },
    /// Running since `since`.
    Running {
        /// When it was started.
        since: Instant,
    },
    /// Not running and not to be started again (shutdown).
    Stopped,
}

#[derive(Clone, Debug)]
struct Slot {
    state: ProcessState,
    next_delay: Duration,
    restarts: u32,
}

/// Decisions for a fixed set of processes, identified by index.
#[derive(Clone, Debug)]
pub struct Supervisor {
    slots: Vec<Slot>,
    policy: BackoffPolicy,
    shutting_down: bool,
}

impl Supervisor {
    /// `count` processes, all due to start at `now`.
    pub fn new(count: usize, policy: BackoffPolicy, now: Instant) -> Supervisor {
        let slot = Slot {
            state: ProcessState::Waiting { start_at: now },
            next_delay: policy.initial,
            restarts: 0,
        };
        Supervisor {
            slots: vec![slot; count],
            policy,
            shutting_down: false,
        }
    }

    /// Processes to start now (none after [`Supervisor::shutdown`]).
    pub fn due(&self, now: Instant) -> Vec<usize> {
        if self.shutting_down {
            return Vec::new();
        }
        self.slots
            .iter()
            .enumerate()
            .filter(
                |(_, s)| matches!(s.state, ProcessState::Waiting { start_at } if start_at <= now),
            )
            .map(|(i, _)| i)
            .collect()
    }

    /// Process `idx` was started at `now`.
    pub fn started(&mut self, idx: usize, now: Instant) {
        self.slots[idx].state = ProcessState::Running { since: now };
    }

    /// Process `idx` exited (or failed to start) at `now`. Returns the delay before it is
    /// started again, or `None` when shutting down.
    pub fn exited(&mut self, idx: usize, now: Instant) -> Option<Duration> {
        let policy = self.policy;
        let slot = &mut self.slots[idx];
        if self.shutting_down {
            slot.state = ProcessState::Stopped;
            return None;
        }
        if let ProcessState::Running { since } = slot.state {
            if now.saturating_duration_since(since) >= policy.reset_after {
                slot.next_delay = policy.initial;
            }
        }
        let delay = slot.next_delay;
        slot.next_delay = (delay * 2).min(policy.max);
        slot.restarts += 1;
        slot.state = ProcessState::Waiting {
            start_at: now + delay,
        };
        Some(delay)
    }

    /// Stop restarting. Returns the processes still running, which the caller stops.
    pub fn shutdown(&mut self) -> Vec<usize> {
        self.shutting_down = true;
        let mut running = Vec::new();
        for (i, slot) in self.slots.iter_mut().enumerate() {
            match slot.state {
                ProcessState::Running { .. } => running.push(i),
                _ => slot.state = ProcessState::Stopped,
            }
        }
        running
    }

    /// `true` after [`Supervisor::shutdown`].
    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down
    }

    /// The earliest pending start, if any.
    pub fn next_start(&self) -> Option<Instant> {
        if self.shutting_down {
            return None;
        }
        self.slots
            .iter()
            .filter_map(|s| match s.state {
                ProcessState::Waiting { start_at } => Some(start_at),
                _ => None,
            })
            .min()
    }

    /// Where process `idx` is.
    pub fn state(&self, idx: usize) -> ProcessState {
        self.slots[idx].state
    }

    /// How many times process `idx` exited and was scheduled again.
    pub fn restarts(&self, idx: usize) -> u32 {
        self.slots[idx].restarts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn policy() -> BackoffPolicy {
        BackoffPolicy::default()
    }

    #[test]
    fn everything_starts_at_once() {
        let t0 = Instant::now();
        let s = Supervisor::new(3, policy(), t0);
        assert_eq!(s.due(t0), vec![0, 1, 2]);
        assert_eq!(s.next_start(), Some(t0));
    }

    #[test]
    fn backoff_doubles_to_the_cap() {
        let t0 = Instant::now();
        let mut s = Supervisor::new(1, policy(), t0);
        let mut now = t0;
        let mut delays = Vec::new();
        for _ in 0..9 {
            assert_eq!(s.due(now), vec![0]);
            s.started(0, now);
            assert!(s.due(now).is_empty(), "a running process is not due");
            now += 50 * MS; // crashes quickly
            let d = s.exited(0, now).unwrap();
            assert!(s.due(now + d - MS).is_empty(), "not due before its delay");
            delays.push(d.as_millis());
            now += d;
        }
        assert_eq!(
            delays,
            [200, 400, 800, 1600, 3200, 6400, 10_000, 10_000, 10_000]
        );
        assert_eq!(s.restarts(0), 9);
    }

    #[test]
    fn two_seconds_of_uptime_reset_the_backoff() {
        let t0 = Instant::now();
        let mut s = Supervisor::new(1, policy(), t0);
        let mut now = t0;
        for _ in 0..4 {
            s.started(0, now);
            now += 10 * MS;
            now += s.exited(0, now).unwrap();
        }
        s.started(0, now);
        now += 1999 * MS;
        assert_eq!(
            s.exited(0, now),
            Some(3200 * MS),
            "1.999 s is not long enough"
        );
        now += 3200 * MS;
        s.started(0, now);
        now += Duration::from_secs(2);
        assert_eq!(s.exited(0, now), Some(200 * MS), "reset after 2 s");
        now += 200 * MS;
        s.started(0, now);
        assert_eq!(s.exited(0, now + MS), Some(400 * MS));
    }

    #[test]
    fn processes_back_off_independently() {
        let t0 = Instant::now();
        let mut s = Supervisor::new(2, policy(), t0);
        s.started(0, t0);
        s.started(1, t0);
        let t1 = t0 + MS;
        assert_eq!(s.exited(0, t1), Some(200 * MS));
        assert_eq!(
            s.exited(0, t1),
            Some(400 * MS),
            "exit without start still backs off"
        );
        assert_eq!(s.state(1), ProcessState::Running { since: t0 });
        assert_eq!(s.next_start(), Some(t1 + 400 * MS));
        assert_eq!(s.due(t1 + 400 * MS), vec![0]);
    }

    #[test]
    fn no_restarts_after_shutdown() {
        let t0 = Instant::now();
        let mut s = Supervisor::new(3, policy(), t0);
        s.started(0, t0);
        s.started(1, t0);
        assert_eq!(s.exited(1, t0 + MS), Some(200 * MS));
        // 0 running, 1 waiting to restart, 2 never started
        assert_eq!(s.shutdown(), vec![0]);
        assert!(s.is_shutting_down());
        assert_eq!(s.exited(0, t0 + 2 * MS), None);
        assert_eq!(s.state(0), ProcessState::Stopped);
        assert_eq!(s.state(1), ProcessState::Stopped);
        assert_eq!(s.state(2), ProcessState::Stopped);
        assert!(s.due(t0 + Duration::from_secs(3600)).is_empty());
        assert_eq!(s.next_start(), None);
    }
}
