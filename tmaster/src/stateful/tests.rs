//! Unit tests of the checkpoint and restore bookkeeping, driven with the time passed in.

use super::*;
use heron_proto::api::config::KeyValue;
use heron_proto::api::Config;

const INTERVAL: Duration = Duration::from_secs(10);
const PP: &str = "pp-1";
const S1: &str = "stmgr-1";
const S2: &str = "stmgr-2";
const TASKS: [i32; 3] = [1, 2, 3];

fn cfg() -> StatefulConfig {
    StatefulConfig {
        interval: INTERVAL,
        start_clean: false,
        keep: 5,
    }
}

fn ckpt(id: &str) -> StatefulConsistentCheckpoint {
    StatefulConsistentCheckpoint {
        checkpoint_id: id.into(),
        packing_plan_id: PP.into(),
    }
}

fn hist(ids: &[&str]) -> StatefulConsistentCheckpoints {
    StatefulConsistentCheckpoints {
        consistent_checkpoints: ids.iter().map(|id| ckpt(id)).collect(),
    }
}

/// An id as a tmaster with start count 3 made it.
fn old(seq: u64) -> String {
    format!("{:020}-{:020}-{:020}", 3, 1000 + seq, seq)
}

fn ids(c: &StatefulController) -> Vec<&str> {
    c.history()
        .consistent_checkpoints
        .iter()
        .map(|c| c.checkpoint_id.as_str())
        .collect()
}

fn stmgrs() -> Vec<String> {
    vec![S1.into(), S2.into()]
}

fn restore(id: &str, txid: i64) -> StatefulAction {
    StatefulAction::Restore {
        checkpoint_id: id.into(),
        txid,
    }
}

fn processing(id: &str) -> StatefulAction {
    StatefulAction::StartProcessing {
        checkpoint_id: id.into(),
    }
}

/// A test topology: the controller, its start time and a scratch action list.
struct T {
    c: StatefulController,
    t0: Instant,
    out: Vec<StatefulAction>,
}

impl T {
    fn new(cfg: StatefulConfig, history: Option<StatefulConsistentCheckpoints>, start: u64) -> T {
        let t0 = Instant::now();
        T {
            c: StatefulController::new(cfg, history, PP.into(), start, t0),
            t0,
            out: Vec::new(),
        }
    }

    /// After the first plan and a successful restore to the newest checkpoint.
    fn running(history: Option<StatefulConsistentCheckpoints>) -> T {
        let mut t = T::new(cfg(), history, 7);
        let first = t.plan();
        let [StatefulAction::Restore {
            checkpoint_id,
            txid,
        }] = &first[..]
        else {
            panic!("{first:?}")
        };
        let done = t.restored(checkpoint_id, *txid);
        assert_eq!(done, vec![processing(checkpoint_id)]);
        t
    }

    fn take(&mut self) -> Vec<StatefulAction> {
        std::mem::take(&mut self.out)
    }

    fn plan(&mut self) -> Vec<StatefulAction> {
        self.c
            .on_plan(stmgrs(), TASKS.to_vec(), self.t0, &mut self.out);
        self.take()
    }

    fn present(&mut self, all: bool) -> Vec<StatefulAction> {
        self.c.on_stmgrs_present(all, self.t0, &mut self.out);
        self.take()
    }

    fn reset(&mut self) -> Vec<StatefulAction> {
        self.c.on_reset("instance died", self.t0, &mut self.out);
        self.take()
    }

    fn respond(&mut self, stmgr: &str, ok: bool, id: &str, txid: i64) -> Vec<StatefulAction> {
        self.c
            .on_restore_response(stmgr, ok, id, txid, &mut self.out);
        self.take()
    }

    /// Both stream managers answer OK.
    fn restored(&mut self, id: &str, txid: i64) -> Vec<StatefulAction> {
        assert_eq!(self.respond(S1, true, id, txid), vec![]);
        self.respond(S2, true, id, txid)
    }

    fn timer(&mut self, after: Duration, unix_secs: u64) -> Vec<StatefulAction> {
        self.c.on_timer(self.t0 + after, unix_secs, &mut self.out);
        self.take()
    }

    /// Starts a checkpoint at `t0 + after`; its id.
    fn checkpoint(&mut self, after: Duration, unix_secs: u64) -> String {
        match &self.timer(after, unix_secs)[..] {
            [StatefulAction::StartCheckpoint { checkpoint_id }] => checkpoint_id.clone(),
            other => panic!("expected one checkpoint start, got {other:?}"),
        }
    }

    fn stored(&mut self, id: &str, task: i32) -> Vec<StatefulAction> {
        self.c.on_instance_stored(id, task, &mut self.out);
        self.take()
    }

    /// Every task stores `id`; what the last store produced.
    fn store_all(&mut self, id: &str) -> Vec<StatefulAction> {
        for task in &TASKS[..TASKS.len() - 1] {
            assert_eq!(self.stored(id, *task), vec![], "task {task}");
        }
        self.stored(id, TASKS[TASKS.len() - 1])
    }
}

/// The actions of a checkpoint becoming consistent with `history` as the new list.
fn consistent(id: &str, history: &[&str]) -> Vec<StatefulAction> {
    vec![
        StatefulAction::WriteCheckpoints(hist(history)),
        StatefulAction::Saved(ckpt(id)),
        StatefulAction::Clean {
            oldest_preserved: history.last().unwrap().to_string(),
        },
    ]
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

// ---- first plan and restore ----

#[test]
fn the_first_plan_restores_the_newest_consistent_checkpoint() {
    let mut t = T::new(cfg(), Some(hist(&["b", "a", ""])), 7);
    assert!(!t.c.restoring());
    assert_eq!(t.c.last_consistent(), Some("b"));
    assert_eq!(t.plan(), vec![restore("b", 1)]);
    assert!(t.c.restoring());
    assert_eq!(t.c.restores(), 1);
    assert_eq!(t.c.restore_txid(), 1);
    assert_eq!(t.c.next_deadline(), None);
}

#[test]
fn without_a_stored_history_the_first_plan_restores_the_clean_state() {
    for history in [None, Some(hist(&[]))] {
        let mut t = T::new(cfg(), history, 7);
        assert_eq!(ids(&t.c), vec![""]);
        assert_eq!(t.c.history().consistent_checkpoints[0].packing_plan_id, PP);
        assert_eq!(t.c.last_consistent(), None);
        assert_eq!(t.plan(), vec![restore("", 1)]);
        assert_eq!(t.restored("", 1), vec![processing("")]);
    }
}

#[test]
fn start_clean_restores_the_clean_state_and_sets_the_history_aside() {
    let cfg = StatefulConfig {
        start_clean: true,
        ..cfg()
    };
    let mut t = T::new(cfg, Some(hist(&["b", "a"])), 7);
    assert_eq!(ids(&t.c), vec![""]);
    assert_eq!(t.plan(), vec![restore("", 1)]);
    assert_eq!(t.restored("", 1), vec![processing("")]);
    // A reset before any new checkpoint does not go back to the state before the clean start.
    assert_eq!(t.reset(), vec![restore("", 2)]);
    assert_eq!(t.restored("", 2), vec![processing("")]);
}

#[test]
fn a_full_restore_round_starts_processing() {
    let mut t = T::new(cfg(), Some(hist(&["b", "a"])), 7);
    assert_eq!(t.plan(), vec![restore("b", 1)]);
    assert_eq!(t.respond(S1, true, "b", 1), vec![]);
    assert_eq!(
        t.respond(S1, true, "b", 1),
        vec![],
        "a repeated answer is not a second stmgr"
    );
    assert!(t.c.restoring());
    assert_eq!(t.respond(S2, true, "b", 1), vec![processing("b")]);
    assert!(!t.c.restoring());
    assert_eq!(t.c.next_deadline(), Some(t.t0 + INTERVAL));
    // A late repeat after the restore finished changes nothing.
    assert_eq!(t.respond(S2, true, "b", 1), vec![]);
    assert_eq!(t.respond(S2, false, "b", 1), vec![]);
    assert!(!t.c.restoring());
}

#[test]
fn presence_reported_before_the_first_plan_holds_the_restore() {
    let mut t = T::new(cfg(), None, 7);
    assert_eq!(t.present(false), vec![]);
    assert_eq!(t.plan(), vec![]);
    assert!(t.c.restoring());
    assert_eq!(t.present(true), vec![restore("", 1)]);
    assert_eq!(t.present(true), vec![], "sent once");
}

#[test]
fn resets_before_the_first_plan_are_ignored() {
    let mut t = T::new(cfg(), None, 7);
    assert_eq!(t.reset(), vec![]);
    assert!(!t.c.restoring());
    assert_eq!(t.c.restores(), 0);
    assert_eq!(t.plan(), vec![restore("", 1)]);
    assert_eq!(t.c.restores(), 1);
}

// ---- checkpoint ids and the timer ----

#[test]
fn checkpoint_ids_increase_as_strings_across_a_restart() {
    let mut t = T::running(None);
    let mut made = vec![
        t.checkpoint(INTERVAL, 99),
        t.checkpoint(INTERVAL * 2, 100),
        t.checkpoint(INTERVAL * 3, 100), // same second
        t.checkpoint(INTERVAL * 4, 98),  // the wall clock went back
    ];
    assert_eq!(
        made[0],
        "00000000000000000007-00000000000000000099-00000000000000000001"
    );
    // A later tmaster (bigger start count, which has more digits) and an earlier wall clock.
    let mut later = T::new(cfg(), None, 10);
    later.plan();
    later.restored("", 1);
    made.push(later.checkpoint(INTERVAL, 5));
    made.push(later.checkpoint(INTERVAL * 2, 1_000_000_000_000));
    for pair in made.windows(2) {
        assert!(pair[0] < pair[1], "{pair:?}");
    }
}

#[test]
fn a_start_count_not_past_the_history_is_bumped() {
    let old = "00000000000000000050-00000000000000000001-00000000000000000009";
    let mut t = T::running(Some(hist(&[old])));
    let id = t.checkpoint(INTERVAL, 2);
    assert!(id.starts_with("00000000000000000051-"), "{id}");
    assert!(id.as_str() > old);
    t.store_all(&id);
    assert_eq!(ids(&t.c), vec![id.as_str(), old]);
}

#[test]
fn the_timer_starts_a_checkpoint_every_interval() {
    let mut t = T::running(None);
    assert_eq!(t.c.next_deadline(), Some(t.t0 + INTERVAL));
    assert_eq!(t.timer(INTERVAL - Duration::from_millis(1), 1), vec![]);
    t.checkpoint(INTERVAL, 1);
    assert_eq!(t.c.next_deadline(), Some(t.t0 + INTERVAL * 2));
    assert_eq!(t.timer(INTERVAL * 2 - Duration::from_millis(1), 1), vec![]);
    // A late tick starts one checkpoint and counts the interval from it.
    t.checkpoint(INTERVAL * 3 + secs(1), 2);
    assert_eq!(t.timer(INTERVAL * 3 + secs(2), 2), vec![]);
    assert_eq!(t.c.next_deadline(), Some(t.t0 + INTERVAL * 4 + secs(1)));
    assert_eq!(t.c.checkpoints_in_progress().count(), 2);
}

#[test]
fn no_checkpoint_before_the_plan_while_restoring_or_with_stmgrs_absent() {
    let mut t = T::new(cfg(), None, 7);
    assert_eq!(t.c.next_deadline(), None);
    assert_eq!(t.timer(INTERVAL * 5, 1), vec![], "no plan yet");
    t.plan();
    assert_eq!(t.c.next_deadline(), None);
    assert_eq!(t.timer(INTERVAL * 6, 1), vec![], "restoring");
    assert_eq!(t.restored("", 1), vec![processing("")]);
    assert_eq!(t.present(false), vec![]);
    assert_eq!(t.c.next_deadline(), None);
    assert_eq!(t.timer(INTERVAL * 7, 1), vec![], "a stmgr is absent");
    assert_eq!(t.present(true), vec![]);
    // Overdue: the deadline is in the past, and the next tick starts one.
    assert_eq!(t.c.next_deadline(), Some(t.t0 + INTERVAL));
    t.checkpoint(INTERVAL * 7, 1);
    // A reset: restoring again, no checkpoint until processing resumes.
    assert_eq!(t.reset(), vec![restore("", 2)]);
    assert_eq!(t.c.next_deadline(), None);
    assert_eq!(t.timer(INTERVAL * 9, 1), vec![]);
    assert_eq!(t.restored("", 2), vec![processing("")]);
    assert_eq!(t.c.next_deadline(), Some(t.t0 + INTERVAL * 8));
    t.checkpoint(INTERVAL * 9, 1);
}

// ---- consistent checkpoints ----

#[test]
fn all_tasks_stored_makes_a_checkpoint_globally_consistent() {
    let (b, a) = (old(2), old(1));
    let mut t = T::running(Some(hist(&[&b, &a, ""])));
    let c = t.checkpoint(INTERVAL, 1);
    assert_eq!(t.stored(&c, 1), vec![]);
    assert_eq!(t.stored(&c, 2), vec![]);
    assert_eq!(t.c.last_consistent(), Some(b.as_str()));
    assert_eq!(t.stored(&c, 3), consistent(&c, &[&c, &b, &a, ""]));
    assert_eq!(t.c.last_consistent(), Some(c.as_str()));
    assert_eq!(t.c.checkpoints_in_progress().count(), 0);
    // A repeated store after it completed is ignored.
    assert_eq!(t.stored(&c, 3), vec![]);
}

#[test]
fn a_checkpoint_never_becomes_consistent_unless_newer_than_the_newest() {
    // A stored id of another form that compares newer than every id made here.
    let mut t = T::running(Some(hist(&["zz", ""])));
    let c = t.checkpoint(INTERVAL, 1);
    assert_eq!(t.store_all(&c), vec![]);
    assert_eq!(ids(&t.c), vec!["zz", ""]);
    assert_eq!(t.c.checkpoints_in_progress().count(), 0);
}

#[test]
fn the_history_keeps_five_and_clean_names_the_oldest_kept() {
    let mut t = T::running(None);
    let mut made = Vec::new();
    for i in 1..=7u32 {
        let c = t.checkpoint(INTERVAL * i, u64::from(i));
        let out = t.store_all(&c);
        made.insert(0, c);
        let mut want: Vec<&str> = made.iter().map(String::as_str).chain([""]).collect();
        want.truncate(5);
        assert_eq!(out, consistent(&made[0], &want), "checkpoint {i}");
        assert_eq!(ids(&t.c), want);
    }
    assert_eq!(ids(&t.c).len(), 5);
    assert_eq!(ids(&t.c)[4], made[4], "the 5th newest is the oldest kept");
}

#[test]
fn rounds_count_from_the_txid_base() {
    // a tmaster passes its start time in µs: a restarted one's first round is past every
    // round of the one before, whose own base was earlier
    let mut t = T::new(cfg(), None, 7);
    t.c = StatefulController::new(cfg(), None, PP.into(), 7, t.t0).with_txid_base(5_000);
    assert_eq!(t.c.restore_txid(), 5_000, "no round yet");
    let first = t.plan();
    assert_eq!(
        first,
        vec![StatefulAction::Restore {
            checkpoint_id: String::new(),
            txid: 5_001
        }]
    );
    assert_eq!(t.restored("", 5_001), vec![processing("")]);
    assert_eq!(
        t.reset(),
        vec![StatefulAction::Restore {
            checkpoint_id: String::new(),
            txid: 5_002
        }]
    );
    assert_eq!(t.c.restore_txid(), 5_002);
}

#[test]
fn keep_is_configurable_and_at_least_one() {
    for (keep, want) in [(2, 2), (0, 1)] {
        let (b, a) = (old(2), old(1));
        let mut t = T::new(StatefulConfig { keep, ..cfg() }, Some(hist(&[&b, &a])), 7);
        t.plan();
        t.restored(&b, 1);
        let c = t.checkpoint(INTERVAL, 1);
        let out = t.store_all(&c);
        assert_eq!(t.c.history().consistent_checkpoints.len(), want);
        let oldest = if want == 2 { b.as_str() } else { c.as_str() };
        assert_eq!(
            out.last(),
            Some(&StatefulAction::Clean {
                oldest_preserved: oldest.into()
            })
        );
    }
}

#[test]
fn partial_stores_do_not_make_a_checkpoint_consistent() {
    let mut t = T::running(None);
    let c = t.checkpoint(INTERVAL, 1);
    assert_eq!(t.stored(&c, 1), vec![]);
    assert_eq!(t.stored(&c, 2), vec![]);
    assert_eq!(t.stored(&c, 2), vec![], "a repeated store");
    assert_eq!(t.stored(&c, 99), vec![], "a task outside the plan");
    assert_eq!(t.stored("other", 3), vec![], "a checkpoint never started");
    assert_eq!(t.c.last_consistent(), None);
    assert_eq!(ids(&t.c), vec![""]);
    assert_eq!(t.stored(&c, 3), consistent(&c, &[&c, ""]));
}

#[test]
fn an_older_checkpoint_may_still_complete_after_a_newer_started() {
    let mut t = T::running(None);
    let a = t.checkpoint(INTERVAL, 1);
    assert_eq!(t.stored(&a, 1), vec![]);
    let b = t.checkpoint(INTERVAL * 2, 2);
    assert_eq!(t.stored(&b, 1), vec![]);
    assert_eq!(t.stored(&a, 2), vec![]);
    assert_eq!(t.stored(&a, 3), consistent(&a, &[&a, ""]));
    assert_eq!(
        t.c.checkpoints_in_progress().collect::<Vec<_>>(),
        vec![b.as_str()]
    );
    assert_eq!(t.stored(&b, 2), vec![]);
    assert_eq!(t.stored(&b, 3), consistent(&b, &[&b, &a, ""]));
}

#[test]
fn a_newer_checkpoint_completing_drops_the_older_ones_in_progress() {
    let mut t = T::running(None);
    let a = t.checkpoint(INTERVAL, 1);
    assert_eq!(t.stored(&a, 1), vec![]);
    assert_eq!(t.stored(&a, 2), vec![]);
    let b = t.checkpoint(INTERVAL * 2, 2);
    let c = t.checkpoint(INTERVAL * 3, 3);
    assert_eq!(t.store_all(&b), consistent(&b, &[&b, ""]));
    assert_eq!(
        t.c.checkpoints_in_progress().collect::<Vec<_>>(),
        vec![c.as_str()]
    );
    assert_eq!(
        t.stored(&a, 3),
        vec![],
        "older than the newest consistent one"
    );
    assert_eq!(ids(&t.c), vec![b.as_str(), ""]);
    assert_eq!(t.store_all(&c), consistent(&c, &[&c, &b, ""]));
}

#[test]
fn at_most_a_few_checkpoints_wait_for_their_stores() {
    let mut t = T::running(None);
    let made: Vec<String> = (1..=MAX_IN_PROGRESS as u32 + 1)
        .map(|i| t.checkpoint(INTERVAL * i, u64::from(i)))
        .collect();
    let waiting: Vec<&str> = t.c.checkpoints_in_progress().collect();
    assert_eq!(
        waiting,
        made[1..].iter().map(String::as_str).collect::<Vec<_>>()
    );
    assert_eq!(t.store_all(&made[0]), vec![], "the oldest was forgotten");
    assert_eq!(t.store_all(&made[1]), consistent(&made[1], &[&made[1], ""]));
}

#[test]
fn stores_during_a_restore_are_ignored_and_the_checkpoint_abandoned() {
    let mut t = T::running(None);
    let a = t.checkpoint(INTERVAL, 1);
    assert_eq!(t.stored(&a, 1), vec![]);
    assert_eq!(t.reset(), vec![restore("", 2)]);
    assert_eq!(t.c.checkpoints_in_progress().count(), 0);
    assert_eq!(t.store_all(&a), vec![]);
    assert_eq!(t.restored("", 2), vec![processing("")]);
    assert_eq!(t.store_all(&a), vec![], "abandoned by the restore");
    assert_eq!(ids(&t.c), vec![""]);
}

#[test]
fn a_plan_change_abandons_checkpoints_in_progress_and_an_identical_plan_does_not() {
    let mut t = T::running(None);
    let a = t.checkpoint(INTERVAL, 1);
    assert_eq!(t.stored(&a, 1), vec![]);
    assert_eq!(t.plan(), vec![], "same stmgrs and tasks");
    assert_eq!(t.stored(&a, 2), vec![]);
    assert_eq!(t.stored(&a, 3), consistent(&a, &[&a, ""]));

    let b = t.checkpoint(INTERVAL * 2, 2);
    assert_eq!(t.stored(&b, 1), vec![]);
    t.c.on_plan(stmgrs(), vec![1, 2, 3, 4], t.t0, &mut t.out);
    assert_eq!(t.take(), vec![], "a plan change starts no restore");
    assert!(!t.c.restoring());
    assert_eq!(t.store_all(&b), vec![]);
    assert_eq!(t.stored(&b, 4), vec![]);
    // Checkpoints go on against the new task set.
    let c = t.checkpoint(INTERVAL * 3, 3);
    t.store_all(&c);
    assert_eq!(t.stored(&c, 4), consistent(&c, &[&c, &a, ""]));
}

// ---- resets and restore responses ----

#[test]
fn a_stale_restore_response_is_ignored() {
    let mut t = T::new(cfg(), Some(hist(&["b", "a"])), 7);
    assert_eq!(t.plan(), vec![restore("b", 1)]);
    assert_eq!(t.respond(S1, true, "b", 1), vec![]);
    assert_eq!(t.reset(), vec![restore("b", 2)]);
    assert_eq!(t.c.restores(), 2);
    // Old txid, same checkpoint: neither completes nor fails the round.
    assert_eq!(t.respond(S2, true, "b", 1), vec![]);
    assert_eq!(t.respond(S2, false, "b", 1), vec![]);
    // Current txid, other checkpoint.
    assert_eq!(t.respond(S1, true, "a", 2), vec![]);
    assert_eq!(t.respond(S1, false, "a", 2), vec![]);
    assert_eq!(t.respond(S2, true, "b", 3), vec![], "a txid not sent yet");
    // A stmgr outside the plan.
    assert_eq!(t.respond("stmgr-9", false, "b", 2), vec![]);
    assert_eq!(t.respond("stmgr-9", true, "b", 2), vec![]);
    assert!(t.c.restoring());
    // S1's OK for txid 1 does not count for txid 2.
    assert_eq!(t.respond(S2, true, "b", 2), vec![]);
    assert_eq!(t.respond(S1, true, "b", 2), vec![processing("b")]);
    assert_eq!(t.c.restore_txid(), 2);
}

#[test]
fn notok_falls_back_to_the_next_older_checkpoint_and_finally_the_clean_state() {
    let mut t = T::new(cfg(), Some(hist(&["c", "b", "a"])), 7);
    assert_eq!(t.plan(), vec![restore("c", 1)]);
    assert_eq!(t.respond(S1, false, "c", 1), vec![restore("b", 2)]);
    // S2's late NOTOK for the abandoned round is stale.
    assert_eq!(t.respond(S2, false, "c", 1), vec![]);
    assert_eq!(t.respond(S1, true, "b", 2), vec![]);
    assert_eq!(t.respond(S2, false, "b", 2), vec![restore("a", 3)]);
    // S1's OK for "b" does not carry over to "a".
    assert_eq!(t.respond(S2, true, "a", 3), vec![]);
    assert_eq!(t.respond(S1, false, "a", 3), vec![restore("", 4)]);
    assert_eq!(
        t.respond(S1, false, "", 4),
        vec![restore("", 5)],
        "the clean state again"
    );
    assert_eq!(t.restored("", 5), vec![processing("")]);
    assert_eq!(t.c.restores(), 1, "retries are one restore");
    // The history is unchanged; a later reset tries the newest again.
    assert_eq!(ids(&t.c), vec!["c", "b", "a"]);
    assert_eq!(t.reset(), vec![restore("c", 6)]);
}

#[test]
fn notok_on_the_last_checkpoint_before_the_clean_entry_goes_clean() {
    let mut t = T::new(cfg(), Some(hist(&["b", ""])), 7);
    assert_eq!(t.plan(), vec![restore("b", 1)]);
    assert_eq!(t.respond(S2, false, "b", 1), vec![restore("", 2)]);
    assert_eq!(t.respond(S2, false, "", 2), vec![restore("", 3)]);
    assert_eq!(t.restored("", 3), vec![processing("")]);
}

#[test]
fn a_reset_during_a_restore_starts_over_from_the_newest() {
    let mut t = T::new(cfg(), Some(hist(&["b", "a"])), 7);
    assert_eq!(t.plan(), vec![restore("b", 1)]);
    assert_eq!(t.respond(S1, false, "b", 1), vec![restore("a", 2)]);
    assert_eq!(t.reset(), vec![restore("b", 3)]);
    assert_eq!(t.c.restores(), 2);
    assert_eq!(t.respond(S1, true, "a", 2), vec![]);
    assert_eq!(t.restored("b", 3), vec![processing("b")]);
}

#[test]
fn a_reset_while_stmgrs_are_absent_waits_for_them() {
    let mut t = T::running(Some(hist(&["b"])));
    assert_eq!(t.present(false), vec![]);
    assert_eq!(t.reset(), vec![]);
    assert!(t.c.restoring());
    assert_eq!(t.c.restores(), 2);
    assert_eq!(t.reset(), vec![], "joins the waiting restore");
    assert_eq!(t.c.restores(), 2);
    assert_eq!(t.present(false), vec![]);
    assert_eq!(t.present(true), vec![restore("b", 2)]);
    assert_eq!(t.restored("b", 2), vec![processing("b")]);
}

#[test]
fn a_stmgr_lost_during_a_restore_round_restarts_the_round_when_it_is_back() {
    let mut t = T::new(cfg(), Some(hist(&["b", "a"])), 7);
    assert_eq!(t.plan(), vec![restore("b", 1)]);
    assert_eq!(t.respond(S1, false, "b", 1), vec![restore("a", 2)]);
    assert_eq!(t.respond(S1, true, "a", 2), vec![]);
    assert_eq!(t.present(false), vec![]);
    // The abandoned round's answers are stale, OK or not.
    assert_eq!(t.respond(S2, true, "a", 2), vec![]);
    assert_eq!(t.respond(S2, false, "a", 2), vec![]);
    assert!(t.c.restoring());
    // Same target, new round; S1 must answer again.
    assert_eq!(t.present(true), vec![restore("a", 3)]);
    assert_eq!(t.respond(S2, true, "a", 3), vec![]);
    assert_eq!(t.respond(S1, true, "a", 3), vec![processing("a")]);
    assert_eq!(t.c.restores(), 1);
}

#[test]
fn a_plan_change_during_a_restore_sends_it_again() {
    let mut t = T::new(cfg(), Some(hist(&["b"])), 7);
    assert_eq!(t.plan(), vec![restore("b", 1)]);
    assert_eq!(t.respond(S1, true, "b", 1), vec![]);
    assert_eq!(t.plan(), vec![], "identical: the round goes on");
    let three = vec![S1.to_string(), S2.to_string(), "stmgr-3".to_string()];
    t.c.on_plan(three, TASKS.to_vec(), t.t0, &mut t.out);
    assert_eq!(t.take(), vec![restore("b", 2)]);
    assert_eq!(t.restored("b", 2), vec![]);
    assert_eq!(t.respond("stmgr-3", true, "b", 2), vec![processing("b")]);
}

#[test]
fn responses_without_a_restore_are_ignored() {
    let mut t = T::new(cfg(), None, 7);
    assert_eq!(t.respond(S1, false, "", 1), vec![]);
    assert_eq!(t.respond(S1, true, "", 0), vec![]);
    assert!(!t.c.restoring());
}

// ---- topology config ----

fn topology(kvs: &[(&str, &str)]) -> Topology {
    Topology {
        name: "T".into(),
        topology_config: Some(Config {
            kvs: kvs
                .iter()
                .map(|(k, v)| KeyValue {
                    key: k.to_string(),
                    value: Some(v.to_string()),
                    serialized_value: None,
                    r#type: Some(1),
                })
                .collect(),
        }),
        ..Topology::default()
    }
}

#[test]
fn only_effectively_once_topologies_are_stateful() {
    assert_eq!(stateful_config(&Topology::default()), Ok(None));
    for mode in ["ATMOST_ONCE", "ATLEAST_ONCE", ""] {
        let t = topology(&[(RELIABILITY_MODE, mode), (CHECKPOINT_INTERVAL, "bad")]);
        assert_eq!(stateful_config(&t), Ok(None), "{mode}");
    }
}

#[test]
fn stateful_config_defaults_and_values() {
    let t = topology(&[(RELIABILITY_MODE, "EFFECTIVELY_ONCE")]);
    assert_eq!(
        stateful_config(&t),
        Ok(Some(StatefulConfig {
            interval: Duration::from_secs(300),
            start_clean: false,
            keep: 5,
        }))
    );
    let t = topology(&[
        (RELIABILITY_MODE, "effectively_once"),
        (CHECKPOINT_INTERVAL, "5"),
        (CHECKPOINT_INTERVAL, " 30 "),
        (START_CLEAN, "True"),
    ]);
    assert_eq!(
        stateful_config(&t),
        Ok(Some(StatefulConfig {
            interval: Duration::from_secs(30),
            start_clean: true,
            keep: 5,
        }))
    );
    let t = topology(&[
        (RELIABILITY_MODE, "EFFECTIVELY_ONCE"),
        (START_CLEAN, "false"),
    ]);
    assert!(!stateful_config(&t).unwrap().unwrap().start_clean);
}

#[test]
fn invalid_stateful_config_names_the_key_and_the_value() {
    for bad in ["0", "-5", "1.5", "soon"] {
        let t = topology(&[
            (RELIABILITY_MODE, "EFFECTIVELY_ONCE"),
            (CHECKPOINT_INTERVAL, bad),
        ]);
        let e = stateful_config(&t).unwrap_err();
        assert!(e.contains(CHECKPOINT_INTERVAL), "{e}");
        assert!(e.contains(&format!("{bad:?}")), "{e}");
    }
    let t = topology(&[(RELIABILITY_MODE, "EFFECTIVELY_ONCE"), (START_CLEAN, "yes")]);
    let e = stateful_config(&t).unwrap_err();
    assert!(e.contains(START_CLEAN) && e.contains("\"yes\""), "{e}");
}
