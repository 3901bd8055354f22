//! The instance's part of an `EFFECTIVELY_ONCE` topology (`shared/reference/heron.md` §5):
//! checkpoint markers in, state out; restores; the start and "saved" notices.
//!
//! The stream manager sends `InitiateStatefulCheckpoint` in order with the data, once every
//! upstream of this task passed the checkpoint: what came before it is in the state saved,
//! what comes after is not. The task flushes its output (so its own tuples precede its
//! marker downstream), asks the component for its state ([`Stateful::pre_save`]) and sends
//! `StoreInstanceStateCheckpoint`. On `RestoreInstanceStateRequest` the component gets the
//! checkpoint's state ([`Stateful::init_state`]), output not yet sent is dropped, and the task
//! waits for `StartInstanceStatefulProcessing` before it emits or executes again. A
//! two-phase component ([`heron_api::TwoPhaseStateful`]) stops after each checkpoint until
//! the stream manager says the checkpoint is globally consistent.

use bytes::Bytes;
use heron_api::{Emitter, State, Stateful};
use heron_proto::ckptmgr::{
    InitiateStatefulCheckpoint, InstanceStateCheckpoint, RestoreInstanceStateRequest,
    RestoreInstanceStateResponse, StartInstanceStatefulProcessing,
    StatefulConsistentCheckpointSaved, StoreInstanceStateCheckpoint,
};
use heron_proto::codec::{Packet, ReqId};
use heron_proto::system::StatusCode;

use crate::executor::Shared;
use crate::InstanceError;
use heron_proto::codec::frame;

/// A stateful-processing message from the stream manager.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StatefulMsg {
    /// `InitiateStatefulCheckpoint`: save the state now, after the tuples before it.
    Checkpoint(String),
    /// `RestoreInstanceStateRequest`: roll back to this checkpoint's state.
    Restore {
        /// The checkpoint ("" for a clean start).
        checkpoint_id: String,
        /// The state the task stored for it (absent or empty: a clean start).
        state: Bytes,
    },
    /// `StartInstanceStatefulProcessing`: the topology was restored everywhere; go on.
    Start(String),
    /// `StatefulConsistentCheckpointSaved`: this checkpoint is globally consistent.
    Saved(String),
}

/// Decodes `packet` if it is a stateful-processing message (`None` otherwise).
pub(crate) fn decode(packet: &Packet) -> Option<Result<StatefulMsg, InstanceError>> {
    let msg = if packet.is::<InitiateStatefulCheckpoint>() {
        packet
            .decode::<InitiateStatefulCheckpoint>()
            .map(|m| StatefulMsg::Checkpoint(m.checkpoint_id))
    } else if packet.is::<RestoreInstanceStateRequest>() {
        packet
            .decode::<RestoreInstanceStateRequest>()
            .map(|m| StatefulMsg::Restore {
                checkpoint_id: m.state.checkpoint_id,
                state: m.state.state.unwrap_or_default(),
            })
    } else if packet.is::<StartInstanceStatefulProcessing>() {
        packet
            .decode::<StartInstanceStatefulProcessing>()
            .map(|m| StatefulMsg::Start(m.checkpoint_id))
    } else if packet.is::<StatefulConsistentCheckpointSaved>() {
        packet
            .decode::<StatefulConsistentCheckpointSaved>()
            .map(|m| StatefulMsg::Saved(m.consistent_checkpoint.checkpoint_id))
    } else {
        return None;
    };
    Some(msg.map_err(InstanceError::from))
}

/// What a task must do after a stateful message was handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum After {
    /// Nothing special.
    Continue,
    /// The task was rolled back: drop input still queued from before the restore.
    RolledBack,
    /// A two-phase component may process the input it held back.
    Resume,
}

/// The stateful side of one task.
#[derive(Debug, Default)]
pub(crate) struct StatefulTask {
    /// The state last handed to or taken from the component.
    state: State,
    /// Processing allowed: a restore finished and the start notice came.
    started: bool,
    /// A two-phase component waits for this checkpoint to be globally consistent.
    waiting_for: Option<String>,
    /// Checkpoints saved, restores done (for logs).
    saved: u64,
    restores: u64,
}

impl StatefulTask {
    /// A task that waits for its first restore and start notice.
    pub fn new() -> StatefulTask {
        StatefulTask::default()
    }

    /// Whether the task may emit (spouts) or execute (bolts) now.
    pub fn may_process(&self) -> bool {
        self.started && self.waiting_for.is_none()
    }

    /// Whether input must be dropped (the task is rolled back and not started yet).
    pub fn drops_input(&self) -> bool {
        !self.started
    }

    /// Handles one message for a component (`None`: it keeps no state).
    pub fn handle(
        &mut self,
        msg: StatefulMsg,
        component: Option<&mut dyn Stateful>,
        emitter: &mut Emitter,
        shared: &mut Shared<'_>,
    ) -> Result<After, InstanceError> {
        match msg {
            StatefulMsg::Checkpoint(id) => {
                if !self.started {
                    tracing::debug!(checkpoint = %id, "ignoring a checkpoint before the start notice");
                    return Ok(After::Continue);
                }
                // the tuples emitted before the marker go before it
                shared.flush(emitter)?;
                let mut two_phase = false;
                if let Some(c) = component {
                    // the component writes its whole state into an empty one
                    self.state.clear();
                    c.pre_save(&id, &mut self.state);
                    two_phase = c.two_phase().is_some();
                }
                let state = self.state.encode();
                let bytes = state.len();
                shared.send_frames(frame(
                    &ReqId::ZERO,
                    &StoreInstanceStateCheckpoint {
                        state: InstanceStateCheckpoint {
                            checkpoint_id: id.clone(),
                            state: Some(Bytes::from(state)),
                            state_location: None,
                        },
                    },
                ))?;
                self.saved += 1;
                shared.metrics.set_stateful(self.saved, self.restores);
                tracing::debug!(checkpoint = %id, bytes, two_phase, "state saved");
                if two_phase {
                    self.waiting_for = Some(id);
                }
                Ok(After::Continue)
            }
            StatefulMsg::Restore {
                checkpoint_id,
                state,
            } => {
                // output of the rolled-back run must not reach anyone
                drop(emitter.take_frames());
                let _ = emitter.take_errors();
                let decoded = State::decode(&state);
                let status = match (&decoded, component) {
                    (Ok(s), Some(c)) => {
                        if let Some(tp) = c.two_phase() {
                            tp.pre_restore(&checkpoint_id);
                        }
                        match c.try_init_state(s) {
                            Ok(()) => heron_proto::status(StatusCode::Ok, None),
                            Err(e) => {
                                tracing::error!(checkpoint = %checkpoint_id, "the component refused the state to restore: {e}");
                                heron_proto::status(
                                    StatusCode::Notok,
                                    Some(format!(
                                        "the component refused the state of checkpoint {checkpoint_id:?}: {e}"
                                    )),
                                )
                            }
                        }
                    }
                    (Ok(_), None) => heron_proto::status(StatusCode::Ok, None),
                    (Err(e), _) => {
                        tracing::error!(checkpoint = %checkpoint_id, "cannot decode the state to restore: {e}");
                        heron_proto::status(
                            StatusCode::Notok,
                            Some(format!(
                                "undecodable state of checkpoint {checkpoint_id:?}: {e}"
                            )),
                        )
                    }
                };
                if let Ok(s) = decoded {
                    self.state = s;
                }
                self.started = false;
                self.waiting_for = None;
                self.restores += 1;
                shared.metrics.set_stateful(self.saved, self.restores);
                tracing::info!(
                    checkpoint = %checkpoint_id,
                    restores = self.restores,
                    "state restored; waiting for the start notice"
                );
                shared.send_frames(frame(
                    &ReqId::ZERO,
                    &RestoreInstanceStateResponse {
                        status,
                        checkpoint_id,
                    },
                ))?;
                Ok(After::RolledBack)
            }
            StatefulMsg::Start(id) => {
                tracing::info!(checkpoint = %id, "stateful processing starts");
                self.started = true;
                Ok(After::Continue)
            }
            StatefulMsg::Saved(id) => {
                let mut resume = false;
                if let Some(tp) = component.and_then(|c| c.two_phase()) {
                    tp.post_save(&id);
                }
                if self
                    .waiting_for
                    .as_deref()
                    .is_some_and(|w| w <= id.as_str())
                {
                    self.waiting_for = None;
                    resume = true;
                }
                Ok(if resume {
                    After::Resume
                } else {
                    After::Continue
                })
            }
        }
    }
}
