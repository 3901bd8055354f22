//! Back pressure decisions (`shared/reference/heron.md` §2.5) as a plain state machine.
//!
//! The stream manager watches the write backlog of every connection it sends tuples on (to
//! its local instances and to the other stream managers). A backlog at or over the high
//! watermark makes the connection *slow* until it drains below the low watermark. While any
//! connection is slow this stream manager *announces* back pressure (Start/StopBackPressure to
//! every other stream manager); while it has a slow connection or any other stream manager
//! announces, it *throttles*: it stops reading from its local spouts. Heron's back pressure is
//! topology-wide: every spout everywhere stops.
//!
//! Each slow connection and each announcement carries the *components* it is slow for; the
//! wildcard [`ALL`] means the whole topology (Heron's behaviour, and what a notice from a
//! Heron stream manager means). In our selective mode the stream manager names the slow
//! components, and only the spouts upstream of them stop ([`plan`]).

use crate::ids::ConnId;
use std::collections::HashMap;
use std::time::{Duration, Instant};

pub(crate) mod drain;
pub(crate) mod plan;

use heron_flow::DrainRate;

/// Our defaults for `heron.streammgr.network.backpressure.highwatermark.mb` / `lowwatermark.mb`
/// (the plan's topology config overrides them). Heron's are 100 / 50 MB, sized for a JVM
/// daemon with a gigabyte of heap. A backlog costs memory and, at saturation, latency: every
/// queue between the spouts and the slowest bolt is full then. 1 MB / 512 KB is about 10 ms
/// of word-count traffic on one connection; measured flat out (`docs/cost-log.md`), 2 / 1 MB
/// together with larger queues elsewhere held about a second of words.
pub(crate) const DEFAULT_HIGH_WATERMARK: usize = 1 << 20;
/// See [`DEFAULT_HIGH_WATERMARK`].
pub(crate) const DEFAULT_LOW_WATERMARK: usize = 512 << 10;
/// Our default for `heron-rs.backpressure.drain.ms`: a connection's high watermark is what it
/// writes in this long, if that is below the byte one ([`drain`]).
pub(crate) const DEFAULT_DRAIN_TIME: Duration = Duration::from_millis(5);

/// The shortest wait between samples of a slow connection: the stream manager's timer
/// resolution (tokio's is a millisecond).
pub(crate) const MIN_BACKLOG_POLL: Duration = Duration::from_millis(1);
/// The longest wait between samples of a slow connection.
pub(crate) const MAX_BACKLOG_POLL: Duration = Duration::from_millis(10);

/// The component set that stands for the whole topology.
pub(crate) const ALL: &str = "*";

/// A change the stream manager must carry out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// Send StartBackPressure naming these slow components (non-empty), or StopBackPressure
    /// (empty), to every other stream manager.
    Announce(Vec<String>),
    /// The components now slow somewhere (sorted, deduplicated; empty: nothing is slow).
    Throttle(Vec<String>),
}

/// The back-pressure state of one stream manager.
#[derive(Debug, Clone)]
pub(crate) struct BackPressure {
    high: usize,
    low: usize,
    /// Watermarks in time ([`drain`]); zero: the byte watermarks alone.
    drain_time: Duration,
    /// The drain rate of every sampled connection.
    drains: HashMap<ConnId, DrainRate>,
    /// Connections over the high watermark, not yet drained below the low one, with the
    /// components each is slow for.
    slow: Vec<(ConnId, Vec<String>)>,
    /// Stream managers announcing back pressure, with the components they name.
    remote: Vec<(String, Vec<String>)>,
    /// What was last announced.
    announced: Vec<String>,
    /// What was last throttled for.
    throttled: Vec<String>,
}

impl Default for BackPressure {
    fn default() -> Self {
        BackPressure::new(DEFAULT_HIGH_WATERMARK, DEFAULT_LOW_WATERMARK)
    }
}

impl BackPressure {
    /// Watermarks in bytes (`low` is capped at `high`), and our default drain time.
    pub fn new(high: usize, low: usize) -> BackPressure {
        BackPressure {
            high: high.max(1),
            low: low.min(high),
            drain_time: DEFAULT_DRAIN_TIME,
            drains: HashMap::new(),
            slow: Vec::new(),
            remote: Vec::new(),
            announced: Vec::new(),
            throttled: Vec::new(),
        }
    }

    /// Changes the watermarks (a new plan); connections are re-judged at their next sample.
    pub fn set_watermarks(&mut self, high: usize, low: usize) {
        self.high = high.max(1);
        self.low = low.min(self.high);
    }

    /// Sets the drain time ([`drain`]; zero: byte watermarks only).
    pub fn set_drain_time(&mut self, drain_time: Duration) {
        self.drain_time = drain_time;
    }

    /// At `now`, `conn` has written `written` bytes in all and has `backlog` waiting: a sample
    /// of its drain rate.
    pub fn drained(&mut self, conn: ConnId, now: Instant, written: u64, backlog: usize) {
        self.drains
            .entry(conn)
            .or_default()
            .sample(now, written, backlog);
    }

    /// The (high, low) watermarks of `conn` now.
    pub fn watermarks(&self, conn: ConnId) -> (usize, usize) {
        match self.drains.get(&conn) {
            Some(d) => drain::watermarks(d, self.drain_time, self.high, self.low),
            None => (self.high, self.low),
        }
    }

    /// The write backlog of `conn` is `bytes`; `components` says what a slow `conn` is slow
    /// for (asked only when it becomes slow). `true` if `conn` became slow or recovered.
    pub fn backlog(
        &mut self,
        conn: ConnId,
        bytes: usize,
        components: impl FnOnce() -> Vec<String>,
    ) -> bool {
        let slow = self.slow.iter().any(|(c, _)| *c == conn);
        let (high, low) = self.watermarks(conn);
        if !slow && bytes >= high {
            self.slow.push((conn, components()));
            true
        } else if slow && bytes < low {
            self.slow.retain(|(c, _)| *c != conn);
            true
        } else {
            false
        }
    }

    /// `stmgr` announced back pressure for `components` (empty: it ended).
    pub fn remote(&mut self, stmgr: &str, components: Vec<String>) {
        self.remote.retain(|(s, _)| s != stmgr);
        if !components.is_empty() {
            self.remote.push((stmgr.to_string(), components));
        }
    }

    /// A watched connection is gone.
    pub fn forget_conn(&mut self, conn: ConnId) {
        self.slow.retain(|(c, _)| *c != conn);
        self.drains.remove(&conn);
    }

    /// The connections slow now.
    pub fn slow_conns(&self) -> impl Iterator<Item = ConnId> + '_ {
        self.slow.iter().map(|(c, _)| *c)
    }

    /// `true` while some connection must be sampled again soon (it is slow).
    pub fn polling(&self) -> bool {
        !self.slow.is_empty()
    }

    /// How long the stream manager may wait, with nothing else to do, before it samples its
    /// slow connections again: the time a backlog takes to drain through the band between
    /// its watermarks, `drain time × (1 − LOW_FRACTION)` (a millisecond at the default 5 ms),
    /// within [`MIN_BACKLOG_POLL`]..=[`MAX_BACKLOG_POLL`]; the least with byte watermarks.
    ///
    /// A slow connection's backlog is mostly in the kernel's send queue, which drains with
    /// no event for the stream manager. Sampled less often than it drains through the band,
    /// it runs dry before the spouts resume, and the CPUs idle: measured flat out with a
    /// 10 ms poll, 13 % idle and 0.88 × the throughput of a 1 ms poll (`docs/cost-log.md`).
    pub fn poll_interval(&self) -> Duration {
        self.drain_time
            .mul_f64(1.0 - drain::LOW_FRACTION)
            .clamp(MIN_BACKLOG_POLL, MAX_BACKLOG_POLL)
    }

    /// The components slow somewhere, as last reported by [`BackPressure::changes`].
    pub fn throttled(&self) -> &[String] {
        &self.throttled
    }

    /// The components this stream manager announces, as last reported.
    pub fn announced(&self) -> &[String] {
        &self.announced
    }

    /// What changed since the last call.
    pub fn changes(&mut self, out: &mut Vec<Change>) {
        let announce = union(self.slow.iter().map(|(_, c)| c));
        if announce != self.announced {
            self.announced = announce.clone();
            out.push(Change::Announce(announce));
        }
        let throttle = union(
            self.slow
                .iter()
                .map(|(_, c)| c)
                .chain(self.remote.iter().map(|(_, c)| c)),
        );
        if throttle != self.throttled {
            self.throttled = throttle.clone();
            out.push(Change::Throttle(throttle));
        }
    }
}

/// The sorted union of component sets; [`ALL`] absorbs everything else.
fn union<'a>(sets: impl Iterator<Item = &'a Vec<String>>) -> Vec<String> {
    let mut all: Vec<String> = sets.flatten().cloned().collect();
    if all.iter().any(|c| c == ALL) {
        return vec![ALL.to_string()];
    }
    all.sort_unstable();
    all.dedup();
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changes(bp: &mut BackPressure) -> Vec<Change> {
        let mut out = Vec::new();
        bp.changes(&mut out);
        out
    }

    fn all() -> Vec<String> {
        vec![ALL.to_string()]
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_slow_connection_announces_and_throttles_until_it_drains_below_low() {
        let mut bp = BackPressure::new(100, 50);
        bp.backlog(1, 99, all);
        assert!(changes(&mut bp).is_empty());
        bp.backlog(1, 100, all);
        assert_eq!(
            changes(&mut bp),
            vec![Change::Announce(all()), Change::Throttle(all())]
        );
        assert!(bp.polling());
        bp.backlog(1, 60, || unreachable!("already slow")); // between the watermarks
        assert!(changes(&mut bp).is_empty());
        bp.backlog(1, 49, all);
        assert_eq!(
            changes(&mut bp),
            vec![Change::Announce(vec![]), Change::Throttle(vec![])]
        );
        assert!(!bp.polling());
    }

    #[test]
    fn remote_announcements_throttle_without_announcing() {
        let mut bp = BackPressure::new(100, 50);
        bp.remote("stmgr-2", all());
        bp.remote("stmgr-3", all());
        assert_eq!(changes(&mut bp), vec![Change::Throttle(all())]);
        bp.remote("stmgr-2", vec![]);
        assert!(changes(&mut bp).is_empty(), "stmgr-3 still announces");
        bp.backlog(7, 500, all);
        assert_eq!(changes(&mut bp), vec![Change::Announce(all())]);
        bp.remote("stmgr-3", vec![]);
        bp.forget_conn(7);
        assert_eq!(
            changes(&mut bp),
            vec![Change::Announce(vec![]), Change::Throttle(vec![])]
        );
        assert!(bp.throttled().is_empty() && bp.announced().is_empty());
    }

    #[test]
    fn selective_sets_are_unions_of_what_is_slow_where() {
        let mut bp = BackPressure::default();
        bp.set_watermarks(10, 5);
        bp.backlog(1, 10, || names(&["count"]));
        bp.backlog(2, 10, || names(&["split", "count"]));
        bp.remote("stmgr-2", names(&["sink"]));
        assert_eq!(
            changes(&mut bp),
            vec![
                Change::Announce(names(&["count", "split"])),
                Change::Throttle(names(&["count", "sink", "split"]))
            ]
        );
        bp.backlog(2, 0, Vec::new);
        assert_eq!(
            changes(&mut bp),
            vec![
                Change::Announce(names(&["count"])),
                Change::Throttle(names(&["count", "sink"]))
            ]
        );
        bp.remote("stmgr-3", all());
        assert_eq!(changes(&mut bp), vec![Change::Throttle(all())]);
    }

    #[test]
    fn slow_connections_are_sampled_as_often_as_they_drain_through_the_band() {
        let mut bp = BackPressure::default();
        // the default 5 ms drain time: a 1 ms band (80 % to 100 % of the high watermark)
        assert_eq!(bp.poll_interval(), Duration::from_millis(1));
        bp.set_drain_time(Duration::from_millis(20));
        assert_eq!(bp.poll_interval(), Duration::from_millis(4));
        // never below the timer's resolution, never above the longest wait
        bp.set_drain_time(Duration::from_millis(2));
        assert_eq!(bp.poll_interval(), MIN_BACKLOG_POLL);
        bp.set_drain_time(Duration::from_secs(1));
        assert_eq!(bp.poll_interval(), MAX_BACKLOG_POLL);
        // byte watermarks alone: the rate is unknown, so as often as the timer allows
        bp.set_drain_time(Duration::ZERO);
        assert_eq!(bp.poll_interval(), MIN_BACKLOG_POLL);
    }
}
