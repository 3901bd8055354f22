//! Back pressure in the core: backlogs and notices in, notices and spout pauses out.

use super::{Action, Core};
use crate::backpressure::plan::{drain_time, notice_components, watermarks};
use crate::backpressure::Change;
use crate::conns::Role;
use crate::error::ConnError;
use crate::ids::ConnId;
use heron_proto::stmgr::{StartBackPressureMessage, StopBackPressureMessage};
use heron_proto::system::PhysicalPlan;
use heron_proto::{Packet, ReqId};
use tracing::debug;

/// Back pressure: backlogs and notices in, notices and spout pauses out.
impl Core {
    /// The shell's sample of a connection's writes at the round's time: `written` bytes in
    /// all, `backlog` queued and not written yet (a drain-rate sample, then as
    /// [`Core::on_backlog`]).
    pub fn on_writes(&mut self, conn: ConnId, written: u64, backlog: usize) {
        self.sample_backlog(conn, backlog, Some(written));
    }

    /// The shell's sample of the bytes queued for writing on `conn`.
    pub fn on_backlog(&mut self, conn: ConnId, bytes: usize) {
        self.sample_backlog(conn, bytes, None);
    }

    /// A backlog sample of a watched connection (a local instance's, another stmgr's), with
    /// the bytes it has written in all when the shell counts them.
    fn sample_backlog(&mut self, conn: ConnId, bytes: usize, written: Option<u64>) {
        let plan = &self.bpp;
        let role = match self.conns.role(conn) {
            Some(r @ (Role::Instance { .. } | Role::StmgrClient { .. })) => r,
            _ => return,
        };
        if let Some(written) = written {
            self.bp.drained(conn, self.now, written, bytes);
        }
        let changed = self.bp.backlog(conn, bytes, || match role {
            Role::Instance { task_id, .. } => plan.slow_for_task(*task_id),
            Role::StmgrClient { stmgr_id } => plan.slow_for_stmgr(stmgr_id),
            _ => unreachable!("matched above"),
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
    ) -> Result<(), ConnError> {
        let components = if start {
            notice_components(&packet.decode::<StartBackPressureMessage>()?.message_id)
        } else {
            packet.decode::<StopBackPressureMessage>()?;
            Vec::new()
        };
        debug!(
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
                    // at saturation this toggles tens of times a second: the metrics
                    // (`__time_spent_back_pressure*`) keep the totals
                    debug!(
                        "{} back pressure {components:?} (a write backlog crossed a watermark)",
                        if components.is_empty() {
                            "stopping"
                        } else {
                            "starting"
                        }
                    );
                    let peers: Vec<ConnId> = self.mesh.links().collect();
                    for conn in peers {
                        self.send_back_pressure_notice(conn, &components);
                    }
                }
                Change::Throttle(slow) => {
                    debug!(?slow, "back pressure: slow components");
                    let tasks: Vec<(ConnId, i32)> = self.conns.tasks().collect();
                    for (conn, task) in tasks {
                        self.pause_spout_if_needed(conn, task);
                    }
                }
            }
        }
    }

    /// Pauses or resumes a spout connection as the slow components require.
    pub(super) fn pause_spout_if_needed(&mut self, conn: ConnId, task: i32) {
        if let Some(stop) = self.bpp.pause(conn, task, self.bp.throttled()) {
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
        let message_id = self.bpp.notice_id(components);
        if components.is_empty() {
            let m = StopBackPressureMessage {
                topology_name,
                topology_id,
                stmgr,
                message_id,
            };
            self.send_message(conn, &ReqId::ZERO, &m);
        } else {
            let m = StartBackPressureMessage {
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
        match self.conns.role(conn) {
            Some(Role::StmgrClient { .. }) if !self.bp.announced().is_empty() => {
                let announced = self.bp.announced().to_vec();
                self.send_back_pressure_notice(conn, &announced);
            }
            Some(&Role::Instance { task_id, .. }) => self.pause_spout_if_needed(conn, task_id),
            _ => {}
        }
    }

    /// The spouts, topology graph, mode and watermarks of a new plan.
    pub(super) fn update_back_pressure(&mut self, pplan: &PhysicalPlan) {
        self.bpp.replace(pplan);
        let (high, low) = watermarks(pplan);
        self.bp.set_watermarks(high, low);
        self.bp.set_drain_time(drain_time(pplan));
        // spouts that registered before the plan are known only now
        let tasks: Vec<(ConnId, i32)> = self.conns.tasks().collect();
        for (conn, task) in tasks {
            self.pause_spout_if_needed(conn, task);
        }
    }

    /// The local instances whose connection is over the high watermark now: the ones causing
    /// back pressure (Heron's `__time_spent_back_pressure_by_compid/<instance id>`).
    pub fn slow_instances(&self) -> Vec<&str> {
        self.bp
            .slow_conns()
            .filter_map(|conn| match self.conns.role(conn) {
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
        self.bpp.any_paused()
    }
}
