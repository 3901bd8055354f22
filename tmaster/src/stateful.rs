//! The tmaster's side of effectively-once processing: checkpoint and restore bookkeeping, as
//! a synchronous state machine with the time passed in.
//!
//! [`StatefulController`] does no I/O and reads no clock. The shell feeds it events (a
//! physical plan was distributed, the stream managers came or went, time passed, a stream
//! manager reported `InstanceStateStored`, `ResetTopologyState` or
//! `RestoreTopologyStateResponse`) and carries out the [`StatefulAction`]s it appends to
//! `out`, in order. [`StatefulController::next_deadline`] says when it next wants
//! [`StatefulController::on_timer`].
//!
//! The life of a topology:
//!
//! 1. The first physical plan starts a **restore** to the newest consistent checkpoint (or
//!    to the clean state `""`): `RestoreTopologyStateRequest(checkpoint, txid)` to every stream
//!    manager. Every restore round has a new `txid`; a response for another txid or checkpoint
//!    is stale and ignored. Txids count up from a base
//!    ([`StatefulController::with_txid_base`]: the tmaster's start time in microseconds), so
//!    a restarted tmaster never repeats one (stream managers drop tuples tagged with another
//!    restore's txid). A `NOTOK` retries with the next older consistent checkpoint, and
//!    after the oldest with the clean state. When every stream manager answered OK for the
//!    current round, processing starts (`StartStmgrStatefulProcessing`).
//! 2. While processing, a **checkpoint** starts every interval (`StartStatefulCheckpoint`)
//!    when every stream manager is registered. When every task of the plan stored its state
//!    for one checkpoint (`InstanceStateStored`), the checkpoint is globally consistent: it is
//!    prepended to the stored list (`statefulcheckpoints/<topology>`, newest first, at most
//!    `keep` entries), announced to the stream managers and the checkpoint manager is asked to
//!    clean what is older than the oldest entry kept.
//! 3. A `ResetTopologyState` (an instance, stream manager or checkpoint manager died) starts
//!    a new restore to the newest consistent checkpoint; it waits until every stream manager is
//!    registered.
//!
//! Checkpoint ids are `<start_count>-<unix_secs>-<seq>`, every number zero-padded to 20
//! digits, so that ids compare as strings in the order they were made, within one tmaster and
//! across its restarts (`start_count` grows with every start).

use heron_proto::api::Topology;
use heron_proto::ckptmgr::{StatefulConsistentCheckpoint, StatefulConsistentCheckpoints};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};
use tracing::{debug, info, warn};

/// The config key that picks the reliability mode.
pub const RELIABILITY_MODE: &str = "topology.reliability.mode";
/// The config key of the checkpoint interval, in whole seconds.
pub const CHECKPOINT_INTERVAL: &str = "topology.stateful.checkpoint.interval.seconds";
/// The config key that makes a stateful topology start from the clean state.
pub const START_CLEAN: &str = "topology.stateful.start.clean";
/// The checkpoint interval when the topology does not set one (Heron's tmaster default).
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(300);
/// How many consistent checkpoints the tmaster keeps in `statefulcheckpoints/<topology>`.
pub const DEFAULT_KEEP: usize = 5;
/// At most this many started checkpoints wait for their stores at once; starting one more
/// forgets the oldest. A checkpoint that has not completed when the next one starts rarely
/// completes later (a newer marker resets the stream managers' alignment), so a few suffice.
pub const MAX_IN_PROGRESS: usize = 4;

/// The stateful settings of an `EFFECTIVELY_ONCE` topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatefulConfig {
    /// Time between checkpoint starts (`topology.stateful.checkpoint.interval.seconds`).
    pub interval: Duration,
    /// Start from the clean state instead of the newest consistent checkpoint
    /// (`topology.stateful.start.clean`).
    pub start_clean: bool,
    /// How many consistent checkpoints to keep (at least one is kept).
    pub keep: usize,
}

/// The stateful settings of `topology`: `Some` when its `topology.reliability.mode` is
/// `EFFECTIVELY_ONCE`, `None` for any other mode. The interval defaults to
/// [`DEFAULT_INTERVAL`] and must be a positive whole number of seconds; start-clean defaults
/// to false and must be `true` or `false`. An invalid value is an error naming the key and
/// the value. When a key appears more than once, the last entry wins.
pub fn stateful_config(topology: &Topology) -> Result<Option<StatefulConfig>, String> {
    let kvs = topology
        .topology_config
        .as_ref()
        .map_or(&[][..], |c| &c.kvs[..]);
    let get = |key: &str| {
        kvs.iter()
            .rev()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.as_deref())
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    if !get(RELIABILITY_MODE).is_some_and(|m| m.eq_ignore_ascii_case("EFFECTIVELY_ONCE")) {
        return Ok(None);
    }
    let interval = match get(CHECKPOINT_INTERVAL) {
        None => DEFAULT_INTERVAL,
        Some(v) => match v.parse::<u64>() {
            Ok(secs) if secs > 0 => Duration::from_secs(secs),
            _ => {
                return Err(format!(
                    "{CHECKPOINT_INTERVAL} must be a positive whole number of seconds, not {v:?}"
                ))
            }
        },
    };
    let start_clean = match get(START_CLEAN) {
        None => false,
        Some(v) if v.eq_ignore_ascii_case("true") => true,
        Some(v) if v.eq_ignore_ascii_case("false") => false,
        Some(v) => return Err(format!("{START_CLEAN} must be true or false, not {v:?}")),
    };
    Ok(Some(StatefulConfig {
        interval,
        start_clean,
        keep: DEFAULT_KEEP,
    }))
}

/// What the shell must do, in the order appended.
#[derive(Debug, Clone, PartialEq)]
pub enum StatefulAction {
    /// Send `StartStatefulCheckpoint { checkpoint_id }` to every stream manager.
    StartCheckpoint {
        /// The new checkpoint's id.
        checkpoint_id: String,
    },
    /// Send `RestoreTopologyStateRequest { checkpoint_id, restore_txid: txid }` to every
    /// stream manager. `checkpoint_id` `""` is the clean state.
    Restore {
        /// The checkpoint to restore (`""`: the clean state).
        checkpoint_id: String,
        /// The restore round; responses carry it back.
        txid: i64,
    },
    /// Send `StartStmgrStatefulProcessing { checkpoint_id }` to every stream manager: the
    /// restore is complete.
    StartProcessing {
        /// The checkpoint restored (`""`: the clean state).
        checkpoint_id: String,
    },
    /// Send `StatefulConsistentCheckpointSaved` with this checkpoint to every stream manager.
    /// Follows the [`StatefulAction::WriteCheckpoints`] that records it; Heron announces a
    /// checkpoint only once the write succeeded.
    Saved(StatefulConsistentCheckpoint),
    /// Write `statefulcheckpoints/<topology>` (create or set): newest first, at most `keep`
    /// entries.
    WriteCheckpoints(StatefulConsistentCheckpoints),
    /// Send `CleanStatefulCheckpointRequest { oldest_checkpoint_preserved }` to the checkpoint
    /// manager: checkpoints older than this one may go. Follows the write and the
    /// announcement.
    Clean {
        /// The oldest checkpoint still kept (`""` when the clean state is still in the list,
        /// which cleans nothing).
        oldest_preserved: String,
    },
}

/// Where the topology is.
#[derive(Debug)]
enum Phase {
    /// No physical plan yet.
    NoPlan,
    /// A restore is waiting for the stream managers or running.
    Restoring(Restore),
    /// Processing; checkpoints are taken.
    Running,
}

/// One restore, over as many rounds (txids) as it takes.
#[derive(Debug)]
struct Restore {
    /// The index of the target in the history; `None` for the clean state past its end.
    position: Option<usize>,
    /// The target's id (`""`: the clean state).
    checkpoint_id: String,
    /// The txid of the round sent; `None` while waiting for every stream manager.
    txid: Option<i64>,
    /// The stream managers that answered OK in this round.
    ok: BTreeSet<String>,
}

/// The tmaster's checkpoint and restore bookkeeping for an `EFFECTIVELY_ONCE` topology; see
/// the [module docs](self).
#[derive(Debug)]
pub struct StatefulController {
    cfg: StatefulConfig,
    history: StatefulConsistentCheckpoints,
    packing_plan_id: String,
    start_count: u64,
    /// Checkpoints started by this controller.
    seq: u64,
    /// The largest unix time used in an id (ids never go back when the wall clock does).
    last_secs: u64,
    stmgrs: BTreeSet<String>,
    tasks: BTreeSet<i32>,
    /// Whether every stream manager is registered; `None` until first told.
    present: Option<bool>,
    phase: Phase,
    /// When the last checkpoint started (at first: when the controller was made).
    last_start: Instant,
    /// Checkpoints started and not yet consistent: id → the tasks that stored it.
    in_progress: BTreeMap<String, BTreeSet<i32>>,
    /// The txid of the latest restore round.
    txid: i64,
    restores: u64,
}

impl StatefulController {
    /// A controller for a topology running packing plan `packing_plan_id` (recorded in every
    /// new consistent checkpoint). `history` is the stored `statefulcheckpoints/<topology>`;
    /// `None` (no node yet) or an empty list means one entry, the clean state `""`. With
    /// `start_clean` the stored history is set aside: the topology starts from the clean
    /// state, and no later restore goes back to a checkpoint taken before this start.
    ///
    /// `start_count` must grow with every tmaster start (e.g. its start time in unix
    /// seconds); it leads every checkpoint id. Should it not exceed the start count of an id
    /// in `history` (a clock set back), one past the largest is used instead, so new ids still
    /// compare as newer. A stored id that does not have this form and compares as newer than
    /// any id made here (an id is only made consistent if it is newer, as the checkpoint
    /// manager cleans by comparing ids) is logged: no new checkpoint can become consistent
    /// while it is the newest. The first checkpoint is due `cfg.interval` after `now`.
    pub fn new(
        cfg: StatefulConfig,
        history: Option<StatefulConsistentCheckpoints>,
        packing_plan_id: String,
        start_count: u64,
        now: Instant,
    ) -> StatefulController {
        let history = history.unwrap_or_default();
        let previous = history
            .consistent_checkpoints
            .iter()
            .filter_map(|c| c.checkpoint_id.split('-').next()?.parse::<u64>().ok())
            .max();
        let start_count = match previous {
            Some(p) if p >= start_count => p.saturating_add(1),
            _ => start_count,
        };
        let first_id = format!("{start_count:020}-");
        if let Some(c) = history.consistent_checkpoints.first() {
            if !cfg.start_clean && c.checkpoint_id >= first_id {
                warn!(
                    newest = %c.checkpoint_id,
                    start_count,
                    "the newest stored checkpoint id compares newer than the ids this tmaster \
                     makes; new checkpoints cannot become consistent"
                );
            }
        }
        let history = if history.consistent_checkpoints.is_empty() || cfg.start_clean {
            StatefulConsistentCheckpoints {
                consistent_checkpoints: vec![StatefulConsistentCheckpoint {
                    checkpoint_id: String::new(),
                    packing_plan_id: packing_plan_id.clone(),
                }],
            }
        } else {
            history
        };
        StatefulController {
            cfg,
            history,
            packing_plan_id,
            start_count,
            seq: 0,
            last_secs: 0,
            stmgrs: BTreeSet::new(),
            tasks: BTreeSet::new(),
            present: None,
            phase: Phase::NoPlan,
            last_start: now,
            in_progress: BTreeMap::new(),
            txid: 0,
            restores: 0,
        }
    }

    /// A physical plan was distributed: `stmgrs` are its stream manager ids and `tasks` every
    /// task id in it.
    ///
    /// The first call starts a restore to the newest consistent checkpoint (the clean state
    /// `""` when there is none, or with `start_clean`). A plan is only built once every stream
    /// manager registered, so unless [`StatefulController::on_stmgrs_present`] said otherwise
    /// before, they are taken to be present and the restore is sent at once.
    ///
    /// Later calls replace the expectations. When the stream managers or tasks differ from
    /// the previous plan's, checkpoints in progress are abandoned and a restore round in
    /// flight is sent again (new txid) to the new set; an identical plan (activate,
    /// deactivate, a stream manager's new address) changes nothing.
    pub fn on_plan(
        &mut self,
        stmgrs: Vec<String>,
        tasks: Vec<i32>,
        _now: Instant,
        out: &mut Vec<StatefulAction>,
    ) {
        let stmgrs: BTreeSet<String> = stmgrs.into_iter().collect();
        let tasks: BTreeSet<i32> = tasks.into_iter().collect();
        let changed = stmgrs != self.stmgrs || tasks != self.tasks;
        self.stmgrs = stmgrs;
        self.tasks = tasks;
        match &mut self.phase {
            Phase::NoPlan => {
                self.present.get_or_insert(true);
                info!(
                    stmgrs = self.stmgrs.len(),
                    tasks = self.tasks.len(),
                    start_clean = self.cfg.start_clean,
                    "first physical plan; restoring the topology state"
                );
                self.begin_restore(true, out);
            }
            _ if !changed => {}
            Phase::Running => {
                if !self.in_progress.is_empty() {
                    info!(
                        abandoned = ?self.in_progress.keys().collect::<Vec<_>>(),
                        "the physical plan changed; abandoning checkpoints in progress"
                    );
                }
                self.in_progress.clear();
            }
            Phase::Restoring(r) => {
                if r.txid.take().is_some() {
                    info!(checkpoint = %r.checkpoint_id, "the physical plan changed during a restore; sending it again");
                    r.ok.clear();
                }
                self.send_restore(out);
            }
        }
    }

    /// Whether every stream manager of the plan is registered now. Checkpoints and restores
    /// only start while they are. A stream manager lost during a restore round abandons the
    /// round (its responses are ignored from then on); the restore is sent again, with a new
    /// txid, once they are all back, as is a restore requested while some were absent.
    pub fn on_stmgrs_present(
        &mut self,
        all_present: bool,
        _now: Instant,
        out: &mut Vec<StatefulAction>,
    ) {
        self.present = Some(all_present);
        if let Phase::Restoring(r) = &mut self.phase {
            if !all_present {
                if r.txid.take().is_some() {
                    info!(checkpoint = %r.checkpoint_id, "a stream manager left during the restore; it starts again when all are back");
                    r.ok.clear();
                }
            } else {
                self.send_restore(out);
            }
        }
    }

    /// Time passed: starts a checkpoint if the interval elapsed since the last start (or
    /// since the controller was made), the topology is processing (no restore waiting or
    /// running) and every stream manager is present. `unix_secs` is the wall-clock time for
    /// the id; should it go back, the largest used so far is used instead.
    pub fn on_timer(&mut self, now: Instant, unix_secs: u64, out: &mut Vec<StatefulAction>) {
        match self.next_deadline() {
            Some(at) if now >= at => {}
            _ => return,
        }
        self.last_start = now;
        self.seq += 1;
        self.last_secs = self.last_secs.max(unix_secs);
        let id = format!(
            "{:020}-{:020}-{:020}",
            self.start_count, self.last_secs, self.seq
        );
        while self.in_progress.len() >= MAX_IN_PROGRESS {
            if let Some((old, stored)) = self.in_progress.pop_first() {
                debug!(checkpoint = %old, stored = stored.len(), tasks = self.tasks.len(), "forgetting a checkpoint that did not complete");
            }
        }
        self.in_progress.insert(id.clone(), BTreeSet::new());
        debug!(checkpoint = %id, "starting a checkpoint");
        out.push(StatefulAction::StartCheckpoint { checkpoint_id: id });
    }

    /// `InstanceStateStored { checkpoint_id, instance.task_id: task_id }` from a stream
    /// manager. When every task of the plan stored one checkpoint in progress, that
    /// checkpoint is globally consistent: [`StatefulAction::WriteCheckpoints`] (it prepended
    /// to the history, trimmed to `keep`), [`StatefulAction::Saved`] and
    /// [`StatefulAction::Clean`] with the oldest entry kept.
    ///
    /// Ignored: stores while no checkpoint is being taken (before the first plan, during a
    /// restore), for ids not in progress (never started here, abandoned, forgotten, or older
    /// than the newest consistent checkpoint) and for tasks outside the plan.
    ///
    /// Older checkpoints still in progress when a newer one starts keep collecting stores
    /// (up to [`MAX_IN_PROGRESS`] of them): an older one may still complete as long as it is
    /// newer than the newest consistent checkpoint. When one completes, every older one still
    /// in progress is dropped.
    pub fn on_instance_stored(
        &mut self,
        checkpoint_id: &str,
        task_id: i32,
        out: &mut Vec<StatefulAction>,
    ) {
        if !matches!(self.phase, Phase::Running) {
            debug!(
                checkpoint = checkpoint_id,
                task_id, "ignoring a stored state: not processing"
            );
            return;
        }
        if !self.tasks.contains(&task_id) {
            warn!(
                checkpoint = checkpoint_id,
                task_id, "ignoring a stored state of a task outside the plan"
            );
            return;
        }
        let Some(stored) = self.in_progress.get_mut(checkpoint_id) else {
            debug!(
                checkpoint = checkpoint_id,
                task_id, "ignoring a stored state of a checkpoint not in progress"
            );
            return;
        };
        stored.insert(task_id);
        if stored.len() < self.tasks.len() {
            return;
        }
        // Every id in progress was made after every consistent one, but check: a stale id
        // must never become the newest.
        let newest = self.history.consistent_checkpoints.first();
        if newest.is_some_and(|c| c.checkpoint_id.as_str() >= checkpoint_id) {
            self.in_progress.remove(checkpoint_id);
            return;
        }
        self.in_progress = self.in_progress.split_off(checkpoint_id);
        self.in_progress.remove(checkpoint_id);
        let checkpoint = StatefulConsistentCheckpoint {
            checkpoint_id: checkpoint_id.to_string(),
            packing_plan_id: self.packing_plan_id.clone(),
        };
        let list = &mut self.history.consistent_checkpoints;
        list.insert(0, checkpoint.clone());
        list.truncate(self.cfg.keep.max(1));
        let oldest = list
            .last()
            .map(|c| c.checkpoint_id.clone())
            .unwrap_or_default();
        info!(checkpoint = checkpoint_id, oldest_kept = %oldest, "globally consistent checkpoint");
        out.push(StatefulAction::WriteCheckpoints(self.history.clone()));
        out.push(StatefulAction::Saved(checkpoint));
        out.push(StatefulAction::Clean {
            oldest_preserved: oldest,
        });
    }

    /// `ResetTopologyState` from a stream manager (an instance, a stream manager or a
    /// checkpoint manager died): abandons checkpoints in progress and starts a restore to the
    /// newest consistent checkpoint, sent with a new txid at once if every stream manager is
    /// present, else when they all are. A restore running is started over the same way; one
    /// still waiting for the stream managers is retargeted to the newest checkpoint (and not
    /// counted again). Before the first plan there is nothing to reset: the first plan
    /// restores anyway.
    pub fn on_reset(&mut self, reason: &str, _now: Instant, out: &mut Vec<StatefulAction>) {
        match &self.phase {
            Phase::NoPlan => {
                debug!(reason, "ignoring a reset before the first physical plan");
            }
            Phase::Restoring(Restore { txid: None, .. }) => {
                info!(
                    reason,
                    "reset while a restore waits for the stream managers"
                );
                self.begin_restore(false, out);
            }
            Phase::Restoring(_) | Phase::Running => {
                info!(reason, "topology state reset; restoring");
                self.begin_restore(true, out);
            }
        }
    }

    /// `RestoreTopologyStateResponse { status: ok, checkpoint_id, restore_txid: txid }` from
    /// `stmgr_id`. A response that is not for the round in flight (other txid or checkpoint,
    /// no restore, a round abandoned) or from a stream manager outside the plan is stale and
    /// ignored. `NOTOK` starts a new round (txid + 1) with the next older consistent
    /// checkpoint, after the oldest with the clean state `""`, and with the clean state again
    /// if that failed. When every stream manager of the plan answered OK:
    /// [`StatefulAction::StartProcessing`].
    pub fn on_restore_response(
        &mut self,
        stmgr_id: &str,
        ok: bool,
        checkpoint_id: &str,
        txid: i64,
        out: &mut Vec<StatefulAction>,
    ) {
        let Phase::Restoring(r) = &mut self.phase else {
            debug!(
                stmgr = stmgr_id,
                checkpoint = checkpoint_id,
                txid,
                "ignoring a restore response: no restore running"
            );
            return;
        };
        if r.txid != Some(txid) || r.checkpoint_id != checkpoint_id {
            debug!(
                stmgr = stmgr_id, checkpoint = checkpoint_id, txid,
                current_checkpoint = %r.checkpoint_id, current_txid = ?r.txid,
                "ignoring a stale restore response"
            );
            return;
        }
        if !self.stmgrs.contains(stmgr_id) {
            warn!(
                stmgr = stmgr_id,
                "ignoring a restore response from a stream manager outside the plan"
            );
            return;
        }
        if !ok {
            let (position, next) = match r.position {
                Some(i) if !r.checkpoint_id.is_empty() => {
                    let list = &self.history.consistent_checkpoints;
                    match list.get(i + 1) {
                        Some(c) => (Some(i + 1), c.checkpoint_id.clone()),
                        None => (None, String::new()),
                    }
                }
                _ => (None, String::new()),
            };
            warn!(stmgr = stmgr_id, failed = checkpoint_id, next = %next, "a stream manager could not restore; trying an older checkpoint");
            r.position = position;
            r.checkpoint_id = next;
            r.txid = None;
            r.ok.clear();
            self.send_restore(out);
            return;
        }
        r.ok.insert(stmgr_id.to_string());
        if self.stmgrs.iter().all(|s| r.ok.contains(s)) {
            let checkpoint_id = std::mem::take(&mut r.checkpoint_id);
            info!(checkpoint = %checkpoint_id, txid, "topology state restored; processing starts");
            self.phase = Phase::Running;
            out.push(StatefulAction::StartProcessing { checkpoint_id });
        }
    }

    /// When [`StatefulController::on_timer`] is next due: the next checkpoint start while
    /// processing with every stream manager present (possibly in the past when one is
    /// overdue), `None` otherwise (before the first plan, during a restore, with a stream
    /// manager absent).
    pub fn next_deadline(&self) -> Option<Instant> {
        (matches!(self.phase, Phase::Running) && self.present == Some(true))
            .then(|| self.last_start + self.cfg.interval)
    }

    /// How many restores were started: the first plan's and one per reset (a reset that
    /// finds a restore still waiting for the stream managers joins it). Retries after a
    /// `NOTOK` and rounds sent again after a stream manager came back are not counted.
    pub fn restores(&self) -> u64 {
        self.restores
    }

    /// The consistent checkpoints, newest first, as last written (or as loaded).
    pub fn history(&self) -> &StatefulConsistentCheckpoints {
        &self.history
    }

    /// Whether a restore is running or waiting for the stream managers.
    pub fn restoring(&self) -> bool {
        matches!(self.phase, Phase::Restoring(_))
    }

    /// The newest consistent checkpoint, `None` when there is only the clean state.
    pub fn last_consistent(&self) -> Option<&str> {
        self.history
            .consistent_checkpoints
            .first()
            .map(|c| c.checkpoint_id.as_str())
            .filter(|id| !id.is_empty())
    }

    /// Counts restore rounds from `base`: the first is `base + 1` (without this, 1).
    ///
    /// Stream managers drop the tuples of another restore than their latest by its txid, so
    /// a restarted tmaster must not repeat one of its predecessor's: a tmaster passes its
    /// start time in microseconds since the Unix epoch, which grows faster than rounds can
    /// be sent.
    ///
    /// ```
    /// # use heron_tmaster::stateful::{StatefulConfig, StatefulController};
    /// # use std::time::{Duration, Instant};
    /// let cfg = StatefulConfig {
    ///     interval: Duration::from_secs(60),
    ///     start_clean: false,
    ///     keep: 5,
    /// };
    /// let c = StatefulController::new(cfg, None, "pp".into(), 1, Instant::now())
    ///     .with_txid_base(1_796_000_000_000_000);
    /// assert_eq!(c.restore_txid(), 1_796_000_000_000_000);
    /// ```
    #[must_use]
    pub fn with_txid_base(mut self, base: i64) -> StatefulController {
        self.txid = base;
        self
    }

    /// The txid of the latest restore round sent (the base before the first).
    pub fn restore_txid(&self) -> i64 {
        self.txid
    }

    /// The checkpoints started and not yet consistent, oldest first.
    pub fn checkpoints_in_progress(&self) -> impl Iterator<Item = &str> {
        self.in_progress.keys().map(String::as_str)
    }

    /// Starts a restore to the newest consistent checkpoint (`counted` in
    /// [`StatefulController::restores`]), abandoning any checkpoint in progress and any
    /// restore round in flight.
    fn begin_restore(&mut self, counted: bool, out: &mut Vec<StatefulAction>) {
        if counted {
            self.restores += 1;
        }
        self.in_progress.clear();
        let (position, checkpoint_id) = match self.history.consistent_checkpoints.first() {
            Some(c) => (Some(0), c.checkpoint_id.clone()),
            None => (None, String::new()),
        };
        self.phase = Phase::Restoring(Restore {
            position,
            checkpoint_id,
            txid: None,
            ok: BTreeSet::new(),
        });
        self.send_restore(out);
    }

    /// Sends the waiting restore round, with a new txid, if every stream manager is present.
    fn send_restore(&mut self, out: &mut Vec<StatefulAction>) {
        let Phase::Restoring(r) = &mut self.phase else {
            return;
        };
        if r.txid.is_some() || self.present != Some(true) {
            return;
        }
        self.txid += 1;
        r.txid = Some(self.txid);
        r.ok.clear();
        info!(checkpoint = %r.checkpoint_id, txid = self.txid, "restoring the topology state");
        out.push(StatefulAction::Restore {
            checkpoint_id: r.checkpoint_id.clone(),
            txid: self.txid,
        });
    }
}

#[cfg(test)]
mod tests;
