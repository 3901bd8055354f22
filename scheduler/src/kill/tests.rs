use super::*;
use crate::process::{group_alive, group_members, signal_process, spawn_session_leader};
use crate::submit;
use crate::test_support::{FakeWorld, TWO_CHILDREN};
use heron_statemgr::StateManager;
use heron_testkit::{wait_for, ProcessGuard};
use std::process::{Command, Stdio};

#[test]
fn kill_reaches_the_children_of_an_executor_that_was_sigkilled() {
    let world = FakeWorld::new("K", TWO_CHILDREN);
    let sub = submit(&world.request()).unwrap();
    let victim = sub.executors[1].pid;
    wait_for(Duration::from_secs(5), "5 processes in the group", || {
        group_members(victim).len() == 5
    });
    signal_process(victim, libc::SIGKILL).unwrap();
    reap_if_child(victim);
    wait_for(Duration::from_secs(2), "4 processes in the group", || {
        group_members(victim).len() == 4
    });
    assert!(group_alive(victim), "the executor's children outlive it");
    kill(&world.kill_request("K")).unwrap();
    for e in &sub.executors {
        assert!(!group_alive(e.pid), "group {} is gone", e.pid);
    }
}

#[test]
fn kill_escalates_when_an_executor_ignores_sigterm() {
    let world = FakeWorld::new("Stubborn", &format!("trap '' TERM\n{TWO_CHILDREN}"));
    let sub = submit(&world.request()).unwrap();
    for e in &sub.executors {
        wait_for(Duration::from_secs(5), "5 processes in the group", || {
            group_members(e.pid).len() == 5
        });
    }
    let mut req = world.kill_request("Stubborn");
    req.grace = Duration::from_millis(300);
    kill(&req).unwrap();
    for e in &sub.executors {
        assert!(!group_alive(e.pid));
    }
}

#[test]
fn killing_an_unknown_topology_names_it() {
    let world = FakeWorld::new("K", TWO_CHILDREN);
    let err = kill(&world.kill_request("NoSuchTopology")).unwrap_err();
    assert!(matches!(err, SchedulerError::NotFound { .. }));
    assert_eq!(
        err.to_string(),
        "no topology named NoSuchTopology in cluster local"
    );
}

#[test]
fn a_stale_pid_file_naming_a_foreign_group_is_left_alone() {
    let world = FakeWorld::new("Stale", TWO_CHILDREN);
    let state = heron_statemgr::LocalFsStateManager::new(&world.state_root);
    state.set(StateDir::Topologies, "Stale", b"").unwrap();
    let foreign = spawn_session_leader(
        Command::new("sleep")
            .arg("30")
            .stdin(Stdio::null())
            .stdout(Stdio::null()),
    )
    .unwrap();
    let pgid = foreign.id() as i32;
    let mut _guard = ProcessGuard::groups([pgid]);
    _guard.child(foreign);
    let wd = world.working_dir("Stale");
    std::fs::create_dir_all(&wd).unwrap();
    layout::write_pid_file(&wd, 0, pgid).unwrap();
    let report = kill(&world.kill_request("Stale")).unwrap();
    assert_eq!(report.executors.len(), 1);
    assert!(
        group_alive(pgid),
        "a foreign process group is not signalled"
    );
    assert!(state.get(StateDir::Topologies, "Stale").unwrap().is_none());
    assert!(layout::read_pid_files(&wd).unwrap().is_empty());
}
