//! Effectively once in the core: the [`StatefulController`]'s decisions carried out as
//! [`Action`]s (messages to every stream manager, the `statefulcheckpoints` node, cleaning
//! requests to the checkpoint manager), and the stream managers' reports fed to it.

use super::{frame, Action, Core};
use crate::stateful::{StatefulAction, StatefulController};
use heron_proto::ckptmgr::{
    CleanStatefulCheckpointRequest, InstanceStateStored, ResetTopologyState,
    RestoreTopologyStateRequest, RestoreTopologyStateResponse, StartStatefulCheckpoint,
    StartStmgrStatefulProcessing, StatefulConsistentCheckpointSaved,
};
use heron_proto::system::StatusCode;
use heron_proto::tmanager::{MetricDatum, PublishMetrics};
use heron_proto::ReqId;
use std::time::Instant;
use tracing::{info, warn};

/// The component name of the tmaster's own metrics (heron-tracker's `checkpoints.rs` asks
/// for these three names).
pub(crate) const TMASTER_COMPONENT: &str = "__tmaster__";
/// Restores started since the tmaster started.
pub(crate) const RESTORES_METRIC: &str = "__stateful_restores";
/// Globally consistent checkpoints kept.
pub(crate) const CONSISTENT_METRIC: &str = "__stateful_consistent_checkpoints";

/// A stateful-processing message from a stream manager.
#[derive(Debug)]
pub(crate) enum StatefulReport {
    /// `InstanceStateStored`.
    Stored(InstanceStateStored),
    /// `RestoreTopologyStateResponse`.
    Restored(RestoreTopologyStateResponse),
    /// `ResetTopologyState`.
    Reset(ResetTopologyState),
}

impl Core {
    /// Runs the topology `EFFECTIVELY_ONCE` with `controller`.
    pub(crate) fn set_stateful(&mut self, controller: StatefulController) {
        self.stateful = Some(controller);
    }

    /// A report from the stream manager `stmgr`.
    pub(super) fn on_stateful_report(&mut self, stmgr: &str, report: StatefulReport, now: Instant) {
        let mut out = Vec::new();
        let Some(c) = self.stateful.as_mut() else {
            warn!(
                stmgr,
                ?report,
                "ignoring a stateful message: the topology is not EFFECTIVELY_ONCE"
            );
            return;
        };
        match report {
            StatefulReport::Stored(m) => {
                c.on_instance_stored(&m.checkpoint_id, m.instance.info.task_id, &mut out)
            }
            StatefulReport::Restored(m) => {
                let ok = m.status.status == StatusCode::Ok as i32;
                if !ok {
                    warn!(stmgr, checkpoint = %m.checkpoint_id, txid = m.restore_txid, "restore failed: {:?}", m.status.message);
                }
                c.on_restore_response(stmgr, ok, &m.checkpoint_id, m.restore_txid, &mut out)
            }
            StatefulReport::Reset(m) => {
                info!(stmgr, reason = %m.reason, "stream manager asks for a restore");
                c.on_reset(&m.reason, now, &mut out)
            }
        }
        self.carry_out_stateful(out);
    }

    /// A plan went out: the controller learns the stream managers and tasks.
    pub(super) fn stateful_published(&mut self, now: Instant) {
        let Some(pplan) = self.registry.pplan() else {
            return;
        };
        let stmgrs = pplan.stmgrs.iter().map(|s| s.id.clone()).collect();
        let tasks = pplan.instances.iter().map(|i| i.info.task_id).collect();
        let mut out = Vec::new();
        if let Some(c) = self.stateful.as_mut() {
            c.on_plan(stmgrs, tasks, now, &mut out);
        }
        self.carry_out_stateful(out);
    }

    /// Registrations changed: checkpoints and restores wait for every stream manager.
    pub(super) fn stateful_presence(&mut self, now: Instant) {
        let all = self.registry.absent().is_empty();
        let mut out = Vec::new();
        if let Some(c) = self.stateful.as_mut() {
            c.on_stmgrs_present(all, now, &mut out);
        }
        self.carry_out_stateful(out);
    }

    /// A registered stream manager went away: its instances' state and tuples are lost.
    pub(super) fn stateful_lost(&mut self, stmgr: &str, now: Instant) {
        let mut out = Vec::new();
        if let Some(c) = self.stateful.as_mut() {
            c.on_reset(
                &format!("stream manager {stmgr} disconnected"),
                now,
                &mut out,
            );
        }
        self.carry_out_stateful(out);
    }

    /// Time passed (`unix_secs` is the wall clock, for checkpoint ids).
    pub(crate) fn on_stateful_timer(&mut self, now: Instant, unix_secs: u64) {
        let mut out = Vec::new();
        if let Some(c) = self.stateful.as_mut() {
            c.on_timer(now, unix_secs, &mut out);
        }
        self.carry_out_stateful(out);
    }

    /// Publishes the checkpoint counters as the tmaster's own metrics (component
    /// [`TMASTER_COMPONENT`]), for the tracker.
    fn publish_stateful_metrics(&mut self) {
        let Some(c) = self.stateful.as_ref() else {
            return;
        };
        let consistent = c
            .history()
            .consistent_checkpoints
            .iter()
            .filter(|k| !k.checkpoint_id.is_empty())
            .count();
        let datum = |name: &str, value: String| MetricDatum {
            component_name: TMASTER_COMPONENT.to_string(),
            instance_id: "tmaster".to_string(),
            name: name.to_string(),
            value,
            timestamp: crate::metrics::now_secs(),
        };
        let metrics = vec![
            datum(RESTORES_METRIC, c.restores().to_string()),
            datum(CONSISTENT_METRIC, consistent.to_string()),
        ];
        self.metrics.publish(PublishMetrics {
            metrics,
            exceptions: Vec::new(),
        });
    }

    fn carry_out_stateful(&mut self, out: Vec<StatefulAction>) {
        if out.iter().any(|a| {
            matches!(
                a,
                StatefulAction::Restore { .. } | StatefulAction::WriteCheckpoints(_)
            )
        }) {
            self.publish_stateful_metrics();
        }
        for action in out {
            match action {
                StatefulAction::StartCheckpoint { checkpoint_id } => {
                    tracing::debug!(checkpoint = %checkpoint_id, "starting a checkpoint");
                    self.broadcast(frame(
                        &ReqId::ZERO,
                        &StartStatefulCheckpoint { checkpoint_id },
                    ));
                }
                StatefulAction::Restore {
                    checkpoint_id,
                    txid,
                } => {
                    info!(checkpoint = %checkpoint_id, txid, "restoring the topology");
                    let m = RestoreTopologyStateRequest {
                        checkpoint_id,
                        restore_txid: txid,
                    };
                    self.broadcast(frame(&ReqId::ZERO, &m));
                }
                StatefulAction::StartProcessing { checkpoint_id } => {
                    info!(checkpoint = %checkpoint_id, "restore complete; processing starts");
                    let m = StartStmgrStatefulProcessing { checkpoint_id };
                    self.broadcast(frame(&ReqId::ZERO, &m));
                }
                StatefulAction::Saved(consistent_checkpoint) => {
                    info!(checkpoint = %consistent_checkpoint.checkpoint_id, "checkpoint globally consistent");
                    let m = StatefulConsistentCheckpointSaved {
                        consistent_checkpoint,
                    };
                    self.broadcast(frame(&ReqId::ZERO, &m));
                }
                StatefulAction::WriteCheckpoints(list) => {
                    self.actions.push_back(Action::WriteCheckpoints(list));
                }
                StatefulAction::Clean { oldest_preserved } => {
                    let m = CleanStatefulCheckpointRequest {
                        oldest_checkpoint_preserved: Some(oldest_preserved),
                        clean_all_checkpoints: Some(false),
                    };
                    self.actions
                        .push_back(Action::ToCkptmgr(frame(&ReqId::random(), &m)));
                }
            }
        }
    }

    /// Queues `bytes` for every registered stream manager.
    fn broadcast(&mut self, bytes: bytes::Bytes) {
        for conn in self.registry.registered_conns() {
            self.push(conn, bytes.clone());
        }
    }
}
