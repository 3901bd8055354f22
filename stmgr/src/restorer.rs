//! The stream manager's side of a topology restore in effectively-once mode
//! (`shared/reference/heron.md` §5, Restore), as a plain state machine.
//!
//! The tmaster sends `RestoreTopologyStateRequest(checkpoint, txid)`. The stream manager
//! drops all data in flight and its links to the other stream managers, fetches each local
//! task's state for the checkpoint from its checkpoint manager, hands it to the instance, and
//! answers `RestoreTopologyStateResponse` once every instance restored it and every link to
//! the other stream managers is back up, or at the first failure. The tmaster then either
//! tries an older checkpoint (a new request) or sends `StartStmgrStatefulProcessing`, which
//! the stream manager passes to its instances. From the request to the start, the topology
//! does not run: [`Restorer::in_progress`] is true and data is dropped.
//!
//! Every request other than a repeat of the one being worked on restarts the restore: the
//! tmaster's connection is ordered and it counts txids up, so a request with another txid is
//! the newest one (a smaller txid means a restarted tmaster whose clock went back: txids
//! count up from its start time).
//! Responses carry no txid; a checkpoint manager's or instance's answer for another
//! checkpoint than the current one, or to a step the current restore is not waiting for, is
//! stale and ignored.

use bytes::Bytes;

#[cfg(test)]
mod tests;

/// What the stream manager must do for a restore, in order.
#[derive(Debug, PartialEq)]
pub(crate) enum RestoreAction {
    /// Clear the tuple cache, the checkpoint gateway and the outboxes (counting the dropped
    /// tuples in `__dropped_during_restore`) and close the links to the other stream
    /// managers. Then report the mesh with [`Restorer::on_mesh_up`] whenever its state is
    /// known (at once, `true`, if there are no other stream managers).
    DropInFlight,
    /// Send `GetInstanceStateRequest` for this task and checkpoint to the checkpoint manager.
    GetState {
        /// The local task.
        task_id: i32,
        /// The checkpoint being restored.
        checkpoint_id: String,
    },
    /// Send `RestoreInstanceStateRequest` to the task's instance (no state bytes if `None`).
    RestoreInstance {
        /// The local task.
        task_id: i32,
        /// The checkpoint being restored.
        checkpoint_id: String,
        /// The state the checkpoint manager returned for the task.
        state: Option<Bytes>,
    },
    /// Send `RestoreTopologyStateResponse` to the tmaster.
    Respond {
        /// OK, or NOTOK (the tmaster then tries an older checkpoint).
        ok: bool,
        /// The checkpoint of the request answered.
        checkpoint_id: String,
        /// The txid of the request answered.
        txid: i64,
        /// Why it failed.
        message: Option<String>,
    },
    /// Send `StartInstanceStatefulProcessing` to every local instance.
    StartInstances {
        /// The checkpoint restored.
        checkpoint_id: String,
    },
}

/// Where a local task is in a restore.
#[derive(Debug)]
enum Step {
    /// Waiting for the checkpoint manager's state.
    Fetching,
    /// The state was sent to the instance; waiting for its answer.
    Restoring(Option<Bytes>),
    /// The instance restored the state (kept in case the instance reconnects).
    Restored(Option<Bytes>),
}

/// Where the whole restore is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Fetching and restoring; not answered yet.
    Working,
    /// Answered NOTOK; waiting for the tmaster's next request.
    Failed,
    /// Answered OK; waiting for the tmaster's start.
    Ready,
}

/// One restore request being carried out.
#[derive(Debug)]
struct Restore {
    checkpoint_id: String,
    txid: i64,
    phase: Phase,
    /// Every local task (sorted by id) and its step.
    tasks: Vec<(i32, Step)>,
    /// Every link to the other stream managers is up (as last reported since the request).
    mesh_up: bool,
}

impl Restore {
    fn task(&mut self, task_id: i32) -> Option<&mut Step> {
        let i = self.tasks.binary_search_by_key(&task_id, |t| t.0).ok()?;
        Some(&mut self.tasks[i].1)
    }

    fn respond(&mut self, ok: bool, message: Option<String>, out: &mut Vec<RestoreAction>) {
        self.phase = if ok { Phase::Ready } else { Phase::Failed };
        out.push(RestoreAction::Respond {
            ok,
            checkpoint_id: self.checkpoint_id.clone(),
            txid: self.txid,
            message,
        });
    }

    /// Answers OK if every task restored and the mesh is up.
    fn check_done(&mut self, out: &mut Vec<RestoreAction>) {
        if self.phase == Phase::Working
            && self.mesh_up
            && self.tasks.iter().all(|t| matches!(t.1, Step::Restored(_)))
        {
            self.respond(true, None, out);
        }
    }
}

fn restore_instance(task_id: i32, checkpoint_id: &str, state: Option<Bytes>) -> RestoreAction {
    RestoreAction::RestoreInstance {
        task_id,
        checkpoint_id: checkpoint_id.to_owned(),
        state,
    }
}

/// The restore state of one stream manager.
#[derive(Debug)]
pub(crate) struct Restorer {
    /// The local tasks, sorted and deduplicated.
    local_tasks: Vec<i32>,
    /// The restore since the last request, until the start.
    restore: Option<Restore>,
}

impl Restorer {
    /// A restorer for these local tasks, not restoring.
    pub fn new(local_tasks: Vec<i32>) -> Restorer {
        let mut r = Restorer {
            local_tasks: Vec::new(),
            restore: None,
        };
        r.set_local_tasks(local_tasks);
        r
    }

    /// The local tasks of a new plan. They take effect at the next restore request (in
    /// effectively-once mode a new plan always comes with one).
    pub fn set_local_tasks(&mut self, mut local_tasks: Vec<i32>) {
        local_tasks.sort_unstable();
        local_tasks.dedup();
        self.local_tasks = local_tasks;
    }

    /// True from a restore request until the matching start: data is dropped meanwhile.
    pub fn in_progress(&self) -> bool {
        self.restore.is_some()
    }

    /// The checkpoint and txid of the restore in progress.
    #[cfg(test)]
    pub fn current(&self) -> Option<(&str, i64)> {
        self.restore
            .as_ref()
            .map(|r| (r.checkpoint_id.as_str(), r.txid))
    }

    /// `RestoreTopologyStateRequest(checkpoint_id, txid)`: pushes [`RestoreAction::DropInFlight`]
    /// and a [`RestoreAction::GetState`] per local task, and forgets any earlier restore (its
    /// answers become stale). A repeat of the request being worked on (not yet answered) is
    /// ignored.
    pub fn on_restore_request(
        &mut self,
        checkpoint_id: &str,
        txid: i64,
        out: &mut Vec<RestoreAction>,
    ) {
        if let Some(r) = &self.restore {
            if r.phase == Phase::Working && r.txid == txid && r.checkpoint_id == checkpoint_id {
                return;
            }
        }
        let restore = Restore {
            checkpoint_id: checkpoint_id.to_owned(),
            txid,
            phase: Phase::Working,
            tasks: self
                .local_tasks
                .iter()
                .map(|&t| (t, Step::Fetching))
                .collect(),
            mesh_up: false,
        };
        out.push(RestoreAction::DropInFlight);
        out.extend(restore.tasks.iter().map(|t| RestoreAction::GetState {
            task_id: t.0,
            checkpoint_id: restore.checkpoint_id.clone(),
        }));
        self.restore = Some(restore);
    }

    /// `GetInstanceStateResponse` for `task_id`: the state (`Ok`, `None` if the checkpoint
    /// holds no state bytes for the task), or the checkpoint manager's error. Pushes the
    /// task's [`RestoreAction::RestoreInstance`], or on an error answers NOTOK with it.
    pub fn on_ckptmgr_state(
        &mut self,
        task_id: i32,
        checkpoint_id: &str,
        result: Result<Option<Bytes>, String>,
        out: &mut Vec<RestoreAction>,
    ) {
        let Some(r) = self.restoring(Some(checkpoint_id), &[Phase::Working]) else {
            return;
        };
        let Some(step @ Step::Fetching) = r.task(task_id) else {
            return;
        };
        match result {
            Ok(state) => {
                *step = Step::Restoring(state.clone());
                out.push(restore_instance(task_id, checkpoint_id, state));
            }
            Err(message) => r.respond(false, Some(message), out),
        }
    }

    /// `RestoreInstanceStateResponse` from `task_id`'s instance. Answers OK when it was the
    /// last task and the mesh is up, NOTOK if the instance failed.
    pub fn on_instance_restored(
        &mut self,
        task_id: i32,
        checkpoint_id: &str,
        ok: bool,
        out: &mut Vec<RestoreAction>,
    ) {
        let phases = [Phase::Working, Phase::Ready];
        let Some(r) = self.restoring(Some(checkpoint_id), &phases) else {
            return;
        };
        let Some(step) = r.task(task_id) else {
            return;
        };
        let Step::Restoring(state) = step else {
            return; // not waiting for this instance (a stale or repeated answer)
        };
        if ok {
            *step = Step::Restored(state.take());
            r.check_done(out);
        } else if r.phase == Phase::Working {
            let message = format!("task {task_id} failed to restore checkpoint {checkpoint_id}");
            r.respond(false, Some(message), out);
        }
        // A failure after the OK answer (a reconnected instance restoring again) cannot be
        // taken back here; the core reports an instance's death to the tmaster, which resets.
    }

    /// `task_id`'s instance (re)registered during a restore (also after the OK answer, before
    /// the start): it lost what it restored, so its [`RestoreAction::RestoreInstance`] is sent
    /// again, with the state already fetched, and the restore waits for its answer again.
    /// Nothing while its state is still being fetched (it goes out when it arrives).
    pub fn on_instance_connected(&mut self, task_id: i32, out: &mut Vec<RestoreAction>) {
        let Some(r) = self.restoring(None, &[Phase::Working, Phase::Ready]) else {
            return;
        };
        let checkpoint_id = r.checkpoint_id.clone();
        let Some(step) = r.task(task_id) else {
            return;
        };
        let (Step::Restoring(state) | Step::Restored(state)) = step else {
            return;
        };
        let state = state.take();
        *step = Step::Restoring(state.clone());
        out.push(RestoreAction::RestoreInstance {
            task_id,
            checkpoint_id,
            state,
        });
    }

    /// `task_id`'s instance disconnected during a restore: until it is back and restored
    /// again, the restore cannot be answered OK.
    pub fn on_instance_disconnected(&mut self, task_id: i32) {
        let Some(r) = self.restoring(None, &[Phase::Working, Phase::Ready]) else {
            return;
        };
        if let Some(step) = r.task(task_id) {
            if let Step::Restored(state) = step {
                *step = Step::Restoring(state.take());
            }
        }
    }

    /// The checkpoint manager (re)connected: asks again for every state not received yet.
    pub fn on_ckptmgr_connected(&mut self, out: &mut Vec<RestoreAction>) {
        let Some(r) = self.restoring(None, &[Phase::Working]) else {
            return;
        };
        out.extend(
            r.tasks
                .iter()
                .filter(|t| matches!(t.1, Step::Fetching))
                .map(|t| RestoreAction::GetState {
                    task_id: t.0,
                    checkpoint_id: r.checkpoint_id.clone(),
                }),
        );
    }

    /// Whether every link to the other stream managers is up (report after each change, and
    /// after carrying out [`RestoreAction::DropInFlight`]). The OK answer waits for it.
    pub fn on_mesh_up(&mut self, all_up: bool, out: &mut Vec<RestoreAction>) {
        let Some(r) = self.restoring(None, &[Phase::Working]) else {
            return;
        };
        r.mesh_up = all_up;
        r.check_done(out);
    }

    /// `StartStmgrStatefulProcessing(checkpoint_id)`: after the OK answer for that checkpoint,
    /// pushes [`RestoreAction::StartInstances`] and ends the restore. Ignored otherwise.
    pub fn on_start_processing(&mut self, checkpoint_id: &str, out: &mut Vec<RestoreAction>) {
        let Some(r) = self
            .restore
            .take_if(|r| r.phase == Phase::Ready && r.checkpoint_id == checkpoint_id)
        else {
            return;
        };
        out.push(RestoreAction::StartInstances {
            checkpoint_id: r.checkpoint_id,
        });
    }

    /// The restore in progress if it is in one of `phases` (and for `checkpoint_id`, if given).
    fn restoring(&mut self, checkpoint_id: Option<&str>, phases: &[Phase]) -> Option<&mut Restore> {
        self.restore.as_mut().filter(|r| {
            phases.contains(&r.phase) && checkpoint_id.is_none_or(|id| id == r.checkpoint_id)
        })
    }
}
