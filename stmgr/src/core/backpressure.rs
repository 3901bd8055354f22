//! Back pressure in the core: write backlogs sampled by the shell go into the
//! [`crate::backpressure::BackPressure`] state machine; its changes become
//! Start/StopBackPressure messages to the other stream managers and read pauses of the local
//! spout connections.
//!
//! Heron's back pressure stops every spout of the topology. With our topology config key
//! [`SELECTIVE_KEY`] set to `true`, a stream manager names the components it is slow for (the
//! component of a slow instance, or every component of a slow peer stream manager) in the
//! notice's `message_id` (`heron-rs-selective:<c1>,<c2>`), and only the spouts upstream of a
//! slow component stop. A notice without that form (from Heron) stops every spout.

use super::*;
use crate::backpressure::{Change, ALL, DEFAULT_HIGH_WATERMARK, DEFAULT_LOW_WATERMARK};
use heron_proto::stmgr::{StartBackPressureMessage, StopBackPressureMessage};
use std::collections::HashSet;
use std::time::Duration;

/// How often slow connections are sampled again while nothing else happens.
pub(crate) const BACKLOG_POLL: Duration = Duration::from_millis(10);

const HIGH_KEY: &str = "heron.streammgr.network.backpressure.highwatermark.mb";
const LOW_KEY: &str = "heron.streammgr.network.backpressure.lowwatermark.mb";
/// Our topology config key for selective back pressure (`true` / `false`, default false).
pub(crate) const SELECTIVE_KEY: &str = "heron-rs.backpressure.selective";
/// How a selective notice's `message_id` starts.
const SELECTIVE_PREFIX: &str = "heron-rs-selective:";

fn config_value<'a>(pplan: &'a PhysicalPlan, key: &str) -> Option<&'a str> {
    pplan
        .topology
        .topology_config
        .as_ref()?
        .kvs
        .iter()
        .rev()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_deref())
        .map(str::trim)
}

/// The watermarks in bytes: the plan's topology config may override Heron's defaults (in MB,
/// fractions allowed).
pub(crate) fn watermarks(pplan: &PhysicalPlan) -> (usize, usize) {
    let mb = |key: &str| {
        config_value(pplan, key)
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|v| *v > 0.0)
            .map(|v| (v * 1024.0 * 1024.0) as usize)
    };
    (
        mb(HIGH_KEY).unwrap_or(DEFAULT_HIGH_WATERMARK),
        mb(LOW_KEY).unwrap_or(DEFAULT_LOW_WATERMARK),
    )
}

/// What back pressure needs to know of the plan, and which spout connections it paused.
#[derive(Debug, Default)]
pub(crate) struct BpPlan {
    selective: bool,
    /// task -> component, every task.
    components: HashMap<i32, String>,
    /// spout task -> its component.
    spouts: HashMap<i32, String>,
    /// stream manager -> the components it runs.
    stmgr_components: HashMap<String, Vec<String>>,
    /// component -> the spouts it is reachable from (a spout reaches itself).
    upstream: HashMap<String, Vec<String>>,
    /// Spout connections whose reads are paused.
    paused: HashSet<ConnId>,
}

impl BpPlan {
    fn new(pplan: &PhysicalPlan) -> BpPlan {
        let topology = &pplan.topology;
        let selective =
            config_value(pplan, SELECTIVE_KEY).is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let spout_names: Vec<&str> = topology
            .spouts
            .iter()
            .map(|s| s.comp.name.as_str())
            .collect();
        let mut plan = BpPlan {
            selective,
            ..BpPlan::default()
        };
        for i in &pplan.instances {
            let c = &i.info.component_name;
            plan.components.insert(i.info.task_id, c.clone());
            if spout_names.contains(&c.as_str()) {
                plan.spouts.insert(i.info.task_id, c.clone());
            }
            let on = plan.stmgr_components.entry(i.stmgr_id.clone()).or_default();
            if !on.contains(c) {
                on.push(c.clone());
            }
        }
        // downstream edges, then everything each spout reaches
        let mut down: HashMap<&str, Vec<&str>> = HashMap::new();
        for b in &topology.bolts {
            for input in &b.inputs {
                down.entry(input.stream.component_name.as_str())
                    .or_default()
                    .push(b.comp.name.as_str());
            }
        }
        for &spout in &spout_names {
            let mut seen = vec![spout];
            let mut todo = vec![spout];
            while let Some(c) = todo.pop() {
                for &d in down.get(c).map_or(&[][..], Vec::as_slice) {
                    if !seen.contains(&d) {
                        seen.push(d);
                        todo.push(d);
                    }
                }
            }
            for c in seen {
                plan.upstream
                    .entry(c.to_string())
                    .or_default()
                    .push(spout.to_string());
            }
        }
        plan
    }

    /// Whether the spout `component` must stop while the `slow` components are slow.
    fn stops(&self, component: &str, slow: &[String]) -> bool {
        if slow.is_empty() {
            return false;
        }
        if !self.selective || slow.iter().any(|c| c == ALL) {
            return true;
        }
        slow.iter().any(|c| {
            self.upstream
                .get(c)
                .is_some_and(|spouts| spouts.iter().any(|s| s == component))
        })
    }
}

impl Core {
    /// The shell's sample of the bytes queued for writing on `conn`.
    pub fn on_backlog(&mut self, conn: ConnId, bytes: usize) {
        let plan = &self.bpp;
        let role = match self.conns.get(&conn).map(|c| &c.role) {
            Some(r @ (Role::Instance { .. } | Role::StmgrClient { .. })) => r,
            _ => return,
        };
        let changed = self.bp.backlog(conn, bytes, || {
            let named = match role {
                Role::Instance { task_id, .. } if plan.selective => {
                    plan.components.get(task_id).map(|c| vec![c.clone()])
                }
                Role::StmgrClient { stmgr_id } if plan.selective => {
                    plan.stmgr_components.get(stmgr_id).cloned()
                }
                _ => None,
            };
            named
                .filter(|c| !c.is_empty())
                .unwrap_or_else(|| vec![ALL.to_string()])
        });
        if changed {
            self.apply_back_pressure();
        }
    }

    /// A Start/StopBackPressureMessage from another stream manager.
    pub(super) fn on_back_pressure_notice(
        &mut self,
        from: &str,
        start: bool,
        packet: &Packet,
    ) -> Result<(), String> {
        let components = if start {
            let m = packet
                .decode::<StartBackPressureMessage>()
                .map_err(|e| e.to_string())?;
            match m.message_id.strip_prefix(SELECTIVE_PREFIX) {
                Some(list) if !list.is_empty() => list.split(',').map(str::to_string).collect(),
                _ => vec![ALL.to_string()],
            }
        } else {
            packet
                .decode::<StopBackPressureMessage>()
                .map_err(|e| e.to_string())?;
            Vec::new()
        };
        info!(
            "stream manager {from} {} back pressure {components:?}",
            if start { "starts" } else { "stops" }
        );
        self.bp.remote(from, components);
        self.apply_back_pressure();
        Ok(())
    }

    /// Carries out what changed: notices to the other stream managers, spout read pauses.
    pub(super) fn apply_back_pressure(&mut self) {
        let mut changes = Vec::new();
        self.bp.changes(&mut changes);
        for change in changes {
            match change {
                Change::Announce(components) => {
                    info!(
                        "{} back pressure {components:?} (a write backlog crossed a watermark)",
                        if components.is_empty() {
                            "stopping"
                        } else {
                            "starting"
                        }
                    );
                    let peers: Vec<ConnId> = self.peer_conns().collect();
                    for conn in peers {
                        self.send_back_pressure_notice(conn, &components);
                    }
                }
                Change::Throttle(slow) => {
                    debug!(?slow, "back pressure: slow components");
                    let spouts: Vec<ConnId> = self.spout_conns().collect();
                    for conn in spouts {
                        self.pause_spout_if_needed(conn);
                    }
                }
            }
        }
    }

    /// Pauses or resumes a spout connection as the slow components require.
    fn pause_spout_if_needed(&mut self, conn: ConnId) {
        let Some(Role::Instance { task_id, .. }) = self.conns.get(&conn).map(|c| &c.role) else {
            return;
        };
        let Some(component) = self.bpp.spouts.get(task_id) else {
            return;
        };
        let stop = self.bpp.stops(component, self.bp.throttled());
        if stop != self.bpp.paused.contains(&conn) {
            if stop {
                self.bpp.paused.insert(conn);
            } else {
                self.bpp.paused.remove(&conn);
            }
            self.actions.push(Action::PauseReads(conn, stop));
        }
    }

    /// Start naming `components` or, with none, Stop.
    fn send_back_pressure_notice(&mut self, conn: ConnId, components: &[String]) {
        let (topology_name, topology_id, stmgr) = (
            self.cfg.topology_name.clone(),
            self.cfg.topology_id.clone(),
            self.cfg.stmgr_id.clone(),
        );
        let start = !components.is_empty();
        let message_id = if self.bpp.selective && start {
            format!("{SELECTIVE_PREFIX}{}", components.join(","))
        } else {
            format!("{:016x}", rand::random::<u64>())
        };
        if start {
            let m = StartBackPressureMessage {
                topology_name,
                topology_id,
                stmgr,
                message_id,
            };
            self.send_message(conn, &ReqId::ZERO, &m);
        } else {
            let m = StopBackPressureMessage {
                topology_name,
                topology_id,
                stmgr,
                message_id,
            };
            self.send_message(conn, &ReqId::ZERO, &m);
        }
    }

    /// A new outgoing link or spout connection joins the current back-pressure state.
    pub(super) fn back_pressure_joined(&mut self, conn: ConnId) {
        match self.conns.get(&conn).map(|c| &c.role) {
            Some(Role::StmgrClient { .. }) if !self.bp.announced().is_empty() => {
                let announced = self.bp.announced().to_vec();
                self.send_back_pressure_notice(conn, &announced);
            }
            Some(Role::Instance { .. }) => self.pause_spout_if_needed(conn),
            _ => {}
        }
    }

    /// A connection closed.
    pub(super) fn back_pressure_closed(&mut self, conn: ConnId) {
        self.bp.forget_conn(conn);
        self.bpp.paused.remove(&conn);
    }

    fn peer_conns(&self) -> impl Iterator<Item = ConnId> + '_ {
        self.peers.values().filter_map(|p| match p.state {
            PeerState::Connected { conn } => Some(conn),
            _ => None,
        })
    }

    fn spout_conns(&self) -> impl Iterator<Item = ConnId> + '_ {
        self.conns.iter().filter_map(|(&id, c)| match &c.role {
            Role::Instance { task_id, .. } if self.bpp.spouts.contains_key(task_id) => Some(id),
            _ => None,
        })
    }

    /// The spouts, topology graph, mode and watermarks of a new plan.
    pub(super) fn update_back_pressure(&mut self, pplan: &PhysicalPlan) {
        let paused = std::mem::take(&mut self.bpp.paused);
        self.bpp = BpPlan::new(pplan);
        self.bpp.paused = paused;
        let (high, low) = watermarks(pplan);
        self.bp.set_watermarks(high, low);
        // spouts that registered before the plan are known only now
        let spouts: Vec<ConnId> = self.spout_conns().collect();
        for conn in spouts {
            self.pause_spout_if_needed(conn);
        }
    }

    /// When the shell must sample backlogs again at the latest.
    pub(super) fn back_pressure_deadline(&self) -> Option<Instant> {
        self.bp.polling().then(|| self.now + BACKLOG_POLL)
    }

    /// The local instances whose connection is over the high watermark now: the ones causing
    /// back pressure (Heron's `__time_spent_back_pressure_by_compid/<instance id>`).
    pub fn slow_instances(&self) -> Vec<&str> {
        self.bp
            .slow_conns()
            .filter_map(|conn| match self.conns.get(&conn).map(|c| &c.role) {
                Some(Role::Instance { instance_id, .. }) => Some(instance_id.as_str()),
                _ => None,
            })
            .collect()
    }

    /// `true` while this stream manager announces back pressure (it has a slow connection).
    pub fn initiating_back_pressure(&self) -> bool {
        !self.bp.announced().is_empty()
    }

    /// `true` while local spouts are not read (sampled for the back pressure metric): some
    /// local spout connection is paused.
    pub fn spouts_throttled(&self) -> bool {
        !self.bpp.paused.is_empty()
    }
}
