//! The stream-manager mesh as a state machine: this stream manager's client links to every
//! other stream manager of the plan, with their reconnect schedule, and the incoming links
//! that said hello. It decides; the core carries out what it returns (connections to open
//! and to close) and keeps the routes in step.

use crate::config::RECONNECT_INTERVAL;
use crate::ids::ConnId;
use heron_proto::system::StMgr;
use std::collections::HashMap;
use std::time::Instant;
use tracing::{info, warn};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PeerState {
    Connecting { attempt: u64 },
    Connected { conn: ConnId },
    Waiting { retry_at: Instant },
}

#[derive(Debug)]
struct Peer {
    host: String,
    port: u16,
    state: PeerState,
    /// Connection attempts that failed in a row (reset when one succeeds).
    failures: u32,
}

/// The longest wait between two connection attempts to an unreachable stream manager.
pub(crate) const MAX_RECONNECT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(4);

/// The wait after `failures` failed attempts in a row: [`RECONNECT_INTERVAL`], doubled with
/// each further failure up to [`MAX_RECONNECT_INTERVAL`].
pub(crate) fn backoff(failures: u32) -> std::time::Duration {
    doubling(RECONNECT_INTERVAL, MAX_RECONNECT_INTERVAL, failures)
}

/// The wait after `failures` failures in a row: `first`, doubled with each further failure up
/// to `max`.
pub(crate) fn doubling(
    first: std::time::Duration,
    max: std::time::Duration,
    failures: u32,
) -> std::time::Duration {
    let doublings = failures.saturating_sub(1).min(16);
    first.saturating_mul(1 << doublings).min(max)
}

/// A client connection to open to another stream manager; its outcome is reported with
/// `attempt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Connect {
    pub stmgr_id: String,
    pub host: String,
    pub port: u16,
    pub attempt: u64,
}

/// What a new plan changes in the mesh.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct MeshUpdate {
    /// Connections to close: links to stream managers that moved or left the plan, and
    /// incoming links from ones not in it.
    pub close: Vec<ConnId>,
    /// Client connections to open.
    pub connect: Vec<Connect>,
}

/// The links between this stream manager and the others.
#[derive(Debug)]
pub(crate) struct Mesh {
    self_id: String,
    /// Outgoing connections to the other stream managers of the plan.
    peers: HashMap<String, Peer>,
    /// Incoming connections that said hello, by stream manager id.
    hellos: HashMap<String, ConnId>,
    next_attempt: u64,
}

impl Mesh {
    /// The mesh of stream manager `self_id`, with no plan yet.
    pub fn new(self_id: &str) -> Mesh {
        Mesh {
            self_id: self_id.to_string(),
            peers: HashMap::new(),
            hellos: HashMap::new(),
            next_attempt: 0,
        }
    }

    /// A new plan: connects to new or moved stream managers, drops the ones that left.
    pub fn update(&mut self, stmgrs: &[StMgr], now: Instant) -> MeshUpdate {
        let mut wanted = HashMap::new();
        for s in stmgrs.iter().filter(|s| s.id != self.self_id) {
            match u16::try_from(s.data_port) {
                Ok(port) => {
                    wanted.insert(s.id.clone(), (s.host_name.clone(), port));
                }
                Err(_) => warn!(
                    "stream manager {} has an invalid data port {}",
                    s.id, s.data_port
                ),
            }
        }
        let mut update = MeshUpdate::default();
        self.peers.retain(|id, p| {
            let keep = matches!(wanted.get(id), Some((h, port)) if *h == p.host && *port == p.port);
            if let (false, PeerState::Connected { conn }) = (keep, p.state) {
                info!("stream manager {id} moved or left the plan; closing the connection to it");
                update.close.push(conn);
            }
            keep
        });
        for (id, &conn) in &self.hellos {
            if !stmgrs.iter().any(|s| &s.id == id) {
                warn!(
                    conn,
                    "closing a connection from a stream manager that is not in the plan"
                );
                update.close.push(conn);
            }
        }
        let mut new: Vec<(String, String, u16)> = wanted
            .into_iter()
            .filter(|(id, _)| !self.peers.contains_key(id))
            .map(|(id, (host, port))| (id, host, port))
            .collect();
        new.sort();
        for (id, host, port) in new {
            let state = PeerState::Waiting { retry_at: now };
            self.peers.insert(
                id.clone(),
                Peer {
                    host,
                    port,
                    state,
                    failures: 0,
                },
            );
            update.connect.push(self.connect(&id));
        }
        update
    }

    fn connect(&mut self, id: &str) -> Connect {
        self.next_attempt += 1;
        let p = self.peers.get_mut(id).expect("a known peer");
        p.state = PeerState::Connecting {
            attempt: self.next_attempt,
        };
        Connect {
            stmgr_id: id.to_string(),
            host: p.host.clone(),
            port: p.port,
            attempt: self.next_attempt,
        }
    }

    /// The client connection `attempt` to `stmgr_id` said hello successfully; `false` if the
    /// attempt is outdated (the connection must then be closed).
    pub fn client_up(&mut self, stmgr_id: &str, attempt: u64, conn: ConnId) -> bool {
        match self.peers.get_mut(stmgr_id) {
            Some(p) if p.state == (PeerState::Connecting { attempt }) => {
                if p.failures > 0 {
                    info!(
                        "reached stream manager {stmgr_id} at {}:{} after {} failed attempts",
                        p.host, p.port, p.failures
                    );
                }
                p.state = PeerState::Connected { conn };
                p.failures = 0;
                true
            }
            _ => false,
        }
    }

    /// The client connection `attempt` to `stmgr_id` failed: retry after a [`backoff`] that
    /// grows with the failures in a row, logged (with the address) at the first failure and
    /// then whenever their count doubles.
    pub fn client_failed(&mut self, stmgr_id: &str, attempt: u64, now: Instant) {
        if let Some(p) = self.peers.get_mut(stmgr_id) {
            if p.state == (PeerState::Connecting { attempt }) {
                p.failures += 1;
                let wait = backoff(p.failures);
                if p.failures.is_power_of_two() {
                    warn!(
                        "cannot reach stream manager {stmgr_id} at {}:{} ({} failed attempts \
                         in a row); retrying in {wait:?}",
                        p.host, p.port, p.failures
                    );
                }
                p.state = PeerState::Waiting {
                    retry_at: now + wait,
                };
            }
        }
    }

    /// The client link `conn` to `stmgr_id` closed: retry after the interval. `true` if it
    /// was the current link.
    pub fn client_closed(&mut self, stmgr_id: &str, conn: ConnId, now: Instant) -> bool {
        match self.peers.get_mut(stmgr_id) {
            Some(p) if p.state == (PeerState::Connected { conn }) => {
                p.state = PeerState::Waiting {
                    retry_at: now + RECONNECT_INTERVAL,
                };
                true
            }
            _ => false,
        }
    }

    /// `stmgr_id` said an accepted hello on `conn`; returns its previous incoming link, which
    /// must be closed.
    pub fn hello(&mut self, stmgr_id: &str, conn: ConnId) -> Option<ConnId> {
        self.hellos.insert(stmgr_id.to_string(), conn)
    }

    /// The incoming link `conn` of `stmgr_id` closed; `true` if it was the current one.
    pub fn hello_closed(&mut self, stmgr_id: &str, conn: ConnId) -> bool {
        if self.hellos.get(stmgr_id) == Some(&conn) {
            self.hellos.remove(stmgr_id);
            return true;
        }
        false
    }

    /// Time passed: the connections to retry now.
    pub fn due(&mut self, now: Instant) -> Vec<Connect> {
        let mut ids: Vec<String> = self
            .peers
            .iter()
            .filter(|(_, p)| matches!(p.state, PeerState::Waiting { retry_at } if retry_at <= now))
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        ids.iter().map(|id| self.connect(id)).collect()
    }

    /// The next retry time, if a link waits for one.
    pub fn deadline(&self) -> Option<Instant> {
        self.peers
            .values()
            .filter_map(|p| match p.state {
                PeerState::Waiting { retry_at } => Some(retry_at),
                _ => None,
            })
            .min()
    }

    /// `true` when every client link of the plan is up.
    pub fn all_up(&self) -> bool {
        self.peers
            .values()
            .all(|p| matches!(p.state, PeerState::Connected { .. }))
    }

    /// The client link to `stmgr_id`, if it is up.
    pub fn link(&self, stmgr_id: &str) -> Option<ConnId> {
        match self.peers.get(stmgr_id)?.state {
            PeerState::Connected { conn } => Some(conn),
            _ => None,
        }
    }

    /// Every client link that is up.
    pub fn links(&self) -> impl Iterator<Item = ConnId> + '_ {
        self.peers.values().filter_map(|p| match p.state {
            PeerState::Connected { conn } => Some(conn),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn doubling_starts_at_first_and_stops_at_max() {
        let ms = Duration::from_millis;
        let waits: Vec<Duration> = (1..=10).map(|f| doubling(ms(5), ms(1000), f)).collect();
        assert_eq!(waits[..4], [ms(5), ms(10), ms(20), ms(40)]);
        assert_eq!(waits[8], ms(1000), "5 ms × 2^8 is past the cap");
        assert_eq!(doubling(ms(5), ms(1000), 0), ms(5), "no failure yet");
        assert_eq!(doubling(ms(5), ms(1000), u32::MAX), ms(1000));
    }

    fn stmgr(id: &str, port: i32) -> StMgr {
        StMgr {
            id: id.into(),
            host_name: "127.0.0.1".into(),
            data_port: port,
            local_endpoint: String::new(),
            cwd: None,
            pid: None,
            shell_port: None,
            local_data_port: None,
        }
    }

    #[test]
    fn an_unreachable_peer_is_retried_with_a_growing_wait_reset_by_success() {
        let t0 = Instant::now();
        let mut m = Mesh::new("s1");
        let mut attempt = m.update(&[stmgr("s1", 1), stmgr("s2", 2)], t0).connect[0].attempt;
        let mut now = t0;
        let mut waits = Vec::new();
        for _ in 0..5 {
            m.client_failed("s2", attempt, now);
            let next = m.deadline().unwrap();
            waits.push((next - now).as_secs());
            assert!(
                m.due(next - Duration::from_millis(1)).is_empty(),
                "not before"
            );
            now = next;
            attempt = m.due(now)[0].attempt;
        }
        assert_eq!(waits, [1, 2, 4, 4, 4]);
        assert!(m.client_up("s2", attempt, 7));
        // a later failure starts again from the first wait
        assert!(m.client_closed("s2", 7, now));
        let attempt = m.due(m.deadline().unwrap())[0].attempt;
        m.client_failed("s2", attempt, now);
        assert_eq!(m.deadline(), Some(now + RECONNECT_INTERVAL));
    }

    #[test]
    fn links_connect_retry_and_follow_the_plan() {
        let t0 = Instant::now();
        let mut m = Mesh::new("s1");
        let plan = [stmgr("s1", 1), stmgr("s2", 2), stmgr("s3", 3)];
        let u = m.update(&plan, t0);
        assert!(u.close.is_empty());
        let ids: Vec<(&str, u64)> = u
            .connect
            .iter()
            .map(|c| (&*c.stmgr_id, c.attempt))
            .collect();
        assert_eq!(ids, vec![("s2", 1), ("s3", 2)]);
        assert!(!m.all_up());
        assert!(m.client_up("s2", 1, 10));
        assert!(!m.client_up("s3", 1, 11), "an outdated attempt");
        m.client_failed("s3", 2, t0);
        assert_eq!(m.deadline(), Some(t0 + RECONNECT_INTERVAL));
        assert!(m.due(t0).is_empty());
        let retry = m.due(t0 + RECONNECT_INTERVAL);
        assert_eq!(retry.len(), 1);
        assert_eq!((&*retry[0].stmgr_id, retry[0].attempt), ("s3", 3));
        assert!(m.client_up("s3", 3, 12));
        assert!(m.all_up());
        assert_eq!(m.link("s2"), Some(10));
        let mut links: Vec<ConnId> = m.links().collect();
        links.sort();
        assert_eq!(links, vec![10, 12]);
        // a dropped link waits, then reconnects
        assert!(m.client_closed("s2", 10, t0));
        assert!(!m.client_closed("s2", 10, t0), "already gone");
        assert_eq!(m.link("s2"), None);
        // s3 moves, s2 leaves, an incoming link from s2 is closed too
        assert_eq!(m.hello("s2", 20), None);
        assert_eq!(m.hello("s2", 21), Some(20));
        let u = m.update(&[stmgr("s1", 1), stmgr("s3", 4)], t0);
        assert_eq!(u.close.len(), 2);
        assert!(u.close.contains(&12) && u.close.contains(&21), "{u:?}");
        assert_eq!(u.connect.len(), 1);
        assert_eq!((u.connect[0].port, u.connect[0].attempt), (4, 4));
        assert!(m.hello_closed("s2", 21));
        assert!(!m.hello_closed("s2", 21));
    }
}
