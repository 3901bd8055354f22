use super::*;
use RestoreAction::*;

fn get(task_id: i32, ckpt: &str) -> RestoreAction {
    GetState {
        task_id,
        checkpoint_id: ckpt.to_string(),
    }
}

fn restore(task_id: i32, ckpt: &str, state: &'static [u8]) -> RestoreAction {
    RestoreInstance {
        task_id,
        checkpoint_id: ckpt.to_string(),
        state: Some(Bytes::from_static(state)),
    }
}

fn ok(ckpt: &str, txid: i64) -> RestoreAction {
    Respond {
        ok: true,
        checkpoint_id: ckpt.to_string(),
        txid,
        message: None,
    }
}

fn not_ok(ckpt: &str, txid: i64, message: &str) -> RestoreAction {
    Respond {
        ok: false,
        checkpoint_id: ckpt.to_string(),
        txid,
        message: Some(message.to_string()),
    }
}

fn start(ckpt: &str) -> RestoreAction {
    StartInstances {
        checkpoint_id: ckpt.to_string(),
    }
}

/// Runs one call of the restorer and returns what it pushed.
fn run(
    r: &mut Restorer,
    f: impl FnOnce(&mut Restorer, &mut Vec<RestoreAction>),
) -> Vec<RestoreAction> {
    let mut out = Vec::new();
    f(r, &mut out);
    out
}

fn request(r: &mut Restorer, ckpt: &str, txid: i64) -> Vec<RestoreAction> {
    run(r, |r, out| r.on_restore_request(ckpt, txid, out))
}

fn state(r: &mut Restorer, task: i32, ckpt: &str, s: &'static [u8]) -> Vec<RestoreAction> {
    run(r, |r, out| {
        r.on_ckptmgr_state(task, ckpt, Ok(Some(Bytes::from_static(s))), out)
    })
}

fn restored(r: &mut Restorer, task: i32, ckpt: &str, ok: bool) -> Vec<RestoreAction> {
    run(r, |r, out| r.on_instance_restored(task, ckpt, ok, out))
}

fn mesh(r: &mut Restorer, up: bool) -> Vec<RestoreAction> {
    run(r, |r, out| r.on_mesh_up(up, out))
}

fn started(r: &mut Restorer, ckpt: &str) -> Vec<RestoreAction> {
    run(r, |r, out| r.on_start_processing(ckpt, out))
}

/// A restorer for tasks 1 and 2 that has fetched and restored both for ("c1", 7); the mesh
/// is not reported yet.
fn restored_both() -> Restorer {
    let mut r = Restorer::new(vec![2, 1]);
    request(&mut r, "c1", 7);
    state(&mut r, 1, "c1", b"s1");
    state(&mut r, 2, "c1", b"s2");
    assert!(restored(&mut r, 1, "c1", true).is_empty());
    assert!(restored(&mut r, 2, "c1", true).is_empty());
    r
}

#[test]
fn happy_path_fetches_restores_answers_once_and_starts() {
    let mut r = Restorer::new(vec![2, 1, 2]);
    assert!(!r.in_progress());
    assert_eq!(
        request(&mut r, "c1", 7),
        vec![DropInFlight, get(1, "c1"), get(2, "c1")]
    );
    assert!(r.in_progress());
    assert_eq!(r.current(), Some(("c1", 7)));
    assert!(mesh(&mut r, true).is_empty(), "tasks still pending");
    assert_eq!(state(&mut r, 2, "c1", b"s2"), vec![restore(2, "c1", b"s2")]);
    assert_eq!(
        run(&mut r, |r, out| r.on_ckptmgr_state(1, "c1", Ok(None), out)),
        vec![RestoreInstance {
            task_id: 1,
            checkpoint_id: "c1".to_string(),
            state: None
        }]
    );
    assert!(restored(&mut r, 2, "c1", true).is_empty());
    assert_eq!(restored(&mut r, 1, "c1", true), vec![ok("c1", 7)]);
    assert!(r.in_progress(), "waiting for the start");
    // Once: repeated answers and mesh reports answer nothing more.
    assert!(restored(&mut r, 1, "c1", true).is_empty());
    assert!(mesh(&mut r, true).is_empty());
    assert_eq!(started(&mut r, "c1"), vec![start("c1")]);
    assert!(!r.in_progress());
    assert_eq!(r.current(), None);
    assert!(started(&mut r, "c1").is_empty(), "only once");
}

#[test]
fn the_mesh_not_up_delays_the_answer() {
    let mut r = restored_both();
    assert!(mesh(&mut r, false).is_empty());
    assert_eq!(mesh(&mut r, true), vec![ok("c1", 7)]);

    // A link going down again before the answer delays it again.
    let mut r = Restorer::new(vec![1]);
    request(&mut r, "c1", 7);
    assert!(mesh(&mut r, true).is_empty());
    assert!(mesh(&mut r, false).is_empty());
    state(&mut r, 1, "c1", b"s1");
    assert!(restored(&mut r, 1, "c1", true).is_empty(), "mesh is down");
    assert_eq!(mesh(&mut r, true), vec![ok("c1", 7)]);
}

#[test]
fn a_new_request_waits_for_the_mesh_again() {
    let mut r = Restorer::new(vec![]);
    request(&mut r, "c1", 1);
    assert_eq!(mesh(&mut r, true), vec![ok("c1", 1)]);
    // DropInFlight closes the links: the next restore waits for a new report.
    assert_eq!(request(&mut r, "c0", 2), vec![DropInFlight]);
    assert!(started(&mut r, "c1").is_empty(), "the c1 restore is gone");
    assert_eq!(mesh(&mut r, true), vec![ok("c0", 2)]);
}

#[test]
fn a_container_without_local_tasks_answers_once_the_mesh_is_up() {
    let mut r = Restorer::new(vec![]);
    assert_eq!(request(&mut r, "c1", 3), vec![DropInFlight]);
    assert!(r.in_progress());
    assert_eq!(mesh(&mut r, true), vec![ok("c1", 3)]);
    assert!(mesh(&mut r, true).is_empty());
    assert_eq!(started(&mut r, "c1"), vec![start("c1")]);
    assert!(!r.in_progress());
}

#[test]
fn stale_responses_for_another_checkpoint_or_an_older_request_are_ignored() {
    let mut r = Restorer::new(vec![1, 2]);
    request(&mut r, "c2", 1);
    state(&mut r, 1, "c2", b"old");
    // The tmaster moves on to an older checkpoint.
    assert_eq!(
        request(&mut r, "c1", 2),
        vec![DropInFlight, get(1, "c1"), get(2, "c1")]
    );
    assert!(
        state(&mut r, 2, "c2", b"old").is_empty(),
        "other checkpoint"
    );
    assert!(
        restored(&mut r, 1, "c2", true).is_empty(),
        "other checkpoint"
    );
    let err = run(&mut r, |r, out| {
        r.on_ckptmgr_state(2, "c2", Err("gone".into()), out)
    });
    assert!(
        err.is_empty(),
        "an error for another checkpoint fails nothing"
    );
    assert!(
        restored(&mut r, 1, "c1", true).is_empty(),
        "not sent its state yet"
    );
    assert!(
        restored(&mut r, 9, "c1", true).is_empty(),
        "not a local task"
    );
    assert!(state(&mut r, 9, "c1", b"x").is_empty(), "not a local task");
    mesh(&mut r, true);
    assert_eq!(state(&mut r, 1, "c1", b"s1"), vec![restore(1, "c1", b"s1")]);
    assert!(
        state(&mut r, 1, "c1", b"again").is_empty(),
        "already fetched"
    );
    assert_eq!(state(&mut r, 2, "c1", b"s2"), vec![restore(2, "c1", b"s2")]);
    assert!(restored(&mut r, 1, "c1", true).is_empty());
    assert_eq!(restored(&mut r, 2, "c1", true), vec![ok("c1", 2)]);
}

#[test]
fn a_newer_request_mid_restore_restarts_everything() {
    let mut r = Restorer::new(vec![1, 2]);
    request(&mut r, "c1", 1);
    mesh(&mut r, true);
    state(&mut r, 1, "c1", b"s1");
    assert!(restored(&mut r, 1, "c1", true).is_empty());
    // Same checkpoint, newer txid (say an instance died): every step again.
    assert_eq!(
        request(&mut r, "c1", 2),
        vec![DropInFlight, get(1, "c1"), get(2, "c1")]
    );
    assert_eq!(r.current(), Some(("c1", 2)));
    state(&mut r, 2, "c1", b"s2");
    assert!(restored(&mut r, 2, "c1", true).is_empty());
    assert!(mesh(&mut r, true).is_empty(), "task 1 must restore again");
    assert!(
        restored(&mut r, 1, "c1", true).is_empty(),
        "the old answer: 1 is fetching"
    );
    assert_eq!(state(&mut r, 1, "c1", b"s1"), vec![restore(1, "c1", b"s1")]);
    assert_eq!(restored(&mut r, 1, "c1", true), vec![ok("c1", 2)]);
}

#[test]
fn a_repeat_of_the_request_being_worked_on_is_ignored() {
    let mut r = Restorer::new(vec![1]);
    request(&mut r, "c1", 4);
    state(&mut r, 1, "c1", b"s1");
    assert!(request(&mut r, "c1", 4).is_empty());
    mesh(&mut r, true);
    assert_eq!(restored(&mut r, 1, "c1", true), vec![ok("c1", 4)]);
}

#[test]
fn any_request_after_the_answer_restarts() {
    // A restarted tmaster counts txids from 0 again and does not know our answer.
    let mut r = restored_both();
    assert_eq!(mesh(&mut r, true), vec![ok("c1", 7)]);
    assert_eq!(
        request(&mut r, "c1", 1),
        vec![DropInFlight, get(1, "c1"), get(2, "c1")]
    );
    assert!(started(&mut r, "c1").is_empty(), "not answered yet");
    assert!(r.in_progress());

    // Also after a NOTOK answer, and the same request again.
    let mut r = Restorer::new(vec![1]);
    request(&mut r, "c1", 1);
    let out = run(&mut r, |r, out| {
        r.on_ckptmgr_state(1, "c1", Err("no such checkpoint".into()), out)
    });
    assert_eq!(out, vec![not_ok("c1", 1, "no such checkpoint")]);
    assert_eq!(request(&mut r, "c1", 1), vec![DropInFlight, get(1, "c1")]);
}

#[test]
fn a_ckptmgr_error_answers_not_ok_and_the_restore_waits_for_the_next_request() {
    let mut r = Restorer::new(vec![1, 2, 3]);
    request(&mut r, "c3", 5);
    mesh(&mut r, true);
    state(&mut r, 1, "c3", b"s1");
    let out = run(&mut r, |r, out| {
        r.on_ckptmgr_state(2, "c3", Err("state file missing".into()), out)
    });
    assert_eq!(out, vec![not_ok("c3", 5, "state file missing")]);
    assert!(r.in_progress(), "still not running: data is dropped");
    // The failed restore answers nothing more.
    assert!(state(&mut r, 3, "c3", b"s3").is_empty());
    assert!(restored(&mut r, 1, "c3", true).is_empty());
    assert!(run(&mut r, |r, out| r.on_ckptmgr_connected(out)).is_empty());
    assert!(run(&mut r, |r, out| r.on_instance_connected(1, out)).is_empty());
    assert!(mesh(&mut r, true).is_empty());
    assert!(started(&mut r, "c3").is_empty());
    // The tmaster tries an older checkpoint.
    assert_eq!(
        request(&mut r, "c2", 6),
        vec![DropInFlight, get(1, "c2"), get(2, "c2"), get(3, "c2")]
    );
}

#[test]
fn an_instance_restore_failure_answers_not_ok() {
    let mut r = Restorer::new(vec![1, 2]);
    request(&mut r, "c1", 9);
    mesh(&mut r, true);
    state(&mut r, 1, "c1", b"s1");
    state(&mut r, 2, "c1", b"s2");
    assert!(restored(&mut r, 1, "c1", true).is_empty());
    assert_eq!(
        restored(&mut r, 2, "c1", false),
        vec![not_ok("c1", 9, "task 2 failed to restore checkpoint c1")]
    );
    assert!(
        restored(&mut r, 2, "c1", true).is_empty(),
        "already answered"
    );
    assert!(started(&mut r, "c1").is_empty());
    assert!(r.in_progress());
}

#[test]
fn an_instance_reconnecting_mid_restore_gets_its_state_again() {
    let mut r = Restorer::new(vec![1, 2]);
    request(&mut r, "c1", 1);
    mesh(&mut r, true);
    let reconnect = |r: &mut Restorer, task| run(r, |r, out| r.on_instance_connected(task, out));
    assert!(
        reconnect(&mut r, 1).is_empty(),
        "its state is not fetched yet"
    );
    assert!(reconnect(&mut r, 9).is_empty(), "not a local task");
    state(&mut r, 1, "c1", b"s1");
    assert_eq!(
        reconnect(&mut r, 1),
        vec![restore(1, "c1", b"s1")],
        "no answer yet"
    );
    assert!(restored(&mut r, 1, "c1", true).is_empty());
    // Restored, then the instance restarts: it must restore again before the answer.
    assert_eq!(reconnect(&mut r, 1), vec![restore(1, "c1", b"s1")]);
    state(&mut r, 2, "c1", b"s2");
    assert!(
        restored(&mut r, 2, "c1", true).is_empty(),
        "1 restores again"
    );
    assert_eq!(restored(&mut r, 1, "c1", true), vec![ok("c1", 1)]);
    // After the answer and before the start, a restarted instance still gets its state.
    assert_eq!(reconnect(&mut r, 2), vec![restore(2, "c1", b"s2")]);
    assert!(restored(&mut r, 2, "c1", true).is_empty(), "answered once");
    assert_eq!(started(&mut r, "c1"), vec![start("c1")]);
    assert!(reconnect(&mut r, 2).is_empty(), "not restoring");
}

#[test]
fn a_disconnected_instance_holds_the_answer_until_it_restored_again() {
    let mut r = Restorer::new(vec![1, 2]);
    request(&mut r, "c1", 1);
    state(&mut r, 1, "c1", b"s1");
    state(&mut r, 2, "c1", b"s2");
    assert!(restored(&mut r, 1, "c1", true).is_empty());
    assert!(restored(&mut r, 2, "c1", true).is_empty());
    r.on_instance_disconnected(1);
    assert!(mesh(&mut r, true).is_empty(), "1 is gone");
    let out = run(&mut r, |r, out| r.on_instance_connected(1, out));
    assert_eq!(out, vec![restore(1, "c1", b"s1")]);
    assert_eq!(restored(&mut r, 1, "c1", true), vec![ok("c1", 1)]);
}

#[test]
fn a_ckptmgr_reconnect_asks_again_for_the_states_not_received() {
    let mut r = Restorer::new(vec![1, 2, 3]);
    let reconnect = |r: &mut Restorer| run(r, |r, out| r.on_ckptmgr_connected(out));
    assert!(reconnect(&mut r).is_empty(), "not restoring");
    request(&mut r, "c1", 1);
    state(&mut r, 2, "c1", b"s2");
    assert_eq!(reconnect(&mut r), vec![get(1, "c1"), get(3, "c1")]);
    state(&mut r, 1, "c1", b"s1");
    state(&mut r, 3, "c1", b"s3");
    assert!(reconnect(&mut r).is_empty(), "all fetched");
}

#[test]
fn a_start_for_another_checkpoint_or_before_the_answer_is_ignored() {
    let mut r = restored_both();
    assert!(
        started(&mut r, "c1").is_empty(),
        "not answered: the mesh is down"
    );
    assert_eq!(mesh(&mut r, true), vec![ok("c1", 7)]);
    assert!(started(&mut r, "c0").is_empty());
    assert!(started(&mut r, "").is_empty());
    assert!(r.in_progress());
    assert_eq!(started(&mut r, "c1"), vec![start("c1")]);
    assert!(!r.in_progress());
    let mut idle = Restorer::new(vec![1]);
    assert!(started(&mut idle, "c1").is_empty(), "not restoring");
}

#[test]
fn new_local_tasks_take_effect_at_the_next_request() {
    let mut r = Restorer::new(vec![1]);
    request(&mut r, "c1", 1);
    r.set_local_tasks(vec![4, 3, 3]);
    state(&mut r, 1, "c1", b"s1");
    mesh(&mut r, true);
    assert_eq!(restored(&mut r, 1, "c1", true), vec![ok("c1", 1)]);
    assert_eq!(
        request(&mut r, "c1", 2),
        vec![DropInFlight, get(3, "c1"), get(4, "c1")]
    );
}
