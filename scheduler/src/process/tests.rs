use super::*;
use heron_testkit::{wait_for, ProcessGuard, Wait};
use std::process::Stdio;

fn session(script: &str) -> (Child, ProcessGuard) {
    let child = spawn_session_leader(
        Command::new("sh")
            .args(["-c", script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
    .expect("spawn sh");
    let pid = child.id() as i32;
    (child, ProcessGuard::groups([pid]))
}

#[test]
fn session_leader_owns_its_group_and_stop_removes_it() {
    let (child, _guard) = session("sleep 30");
    let pid = child.id() as i32;
    wait_for(Duration::from_secs(2), "the leader in its group", || {
        group_members(pid).contains(&pid)
    });
    assert!(group_alive(pid));
    let survivors = stop_groups(&[pid], Duration::from_secs(5));
    assert!(survivors.is_empty(), "survivors {survivors:?}");
    assert!(!group_alive(pid));
    assert!(group_members(pid).is_empty());
    // The leader was our child: stop_groups reaped it (an orphaned `sleep`, if sh forked
    // one, is reaped by init in its own time).
    assert!(proc_stat(pid).is_none(), "leader reaped");
}

#[test]
fn stop_reaches_children_after_the_leader_was_sigkilled() {
    let (child, _guard) = session("sleep 30 & sleep 30 & wait");
    let pid = child.id() as i32;
    wait_for(Duration::from_secs(2), "the leader and two sleeps", || {
        group_members(pid).len() == 3
    });
    signal_process(pid, libc::SIGKILL).unwrap();
    reap_if_child(pid);
    wait_for(
        Duration::from_secs(2),
        "the leader to leave its group",
        || !group_members(pid).contains(&pid),
    );
    let orphans = group_members(pid);
    assert_eq!(orphans.len(), 2, "the two sleeps outlive their leader");
    assert!(group_alive(pid));
    assert!(stop_groups(&[pid], Duration::from_secs(5)).is_empty());
    for o in orphans {
        wait_for(
            Duration::from_secs(2),
            &format!("orphan {o} to die"),
            || proc_stat(o).is_none_or(|s| s.state == 'Z'),
        );
    }
}

#[test]
fn stop_escalates_to_sigkill_when_sigterm_is_ignored() {
    let (child, _guard) = session("trap '' TERM; sleep 30 & wait");
    let pid = child.id() as i32;
    wait_for(Duration::from_secs(2), "the leader and its sleep", || {
        group_members(pid).len() == 2
    });
    let start = Instant::now();
    let survivors = stop_groups(&[pid], Duration::from_millis(300));
    assert!(survivors.is_empty(), "survivors {survivors:?}");
    assert!(
        start.elapsed() >= Duration::from_millis(300),
        "waited the grace period"
    );
    assert!(!group_alive(pid));
}

#[test]
fn child_dies_when_the_spawning_thread_exits() {
    let mut child = std::thread::spawn(|| {
        spawn_dying_with_parent(Command::new("sleep").arg("30").stdin(Stdio::null()))
            .expect("spawn sleep")
    })
    .join()
    .unwrap();
    let pid = child.id() as i32;
    let exited = Wait::new("the child to die with its thread")
        .timeout(Duration::from_secs(5))
        .try_until(|| matches!(child.try_wait(), Ok(Some(_))));
    if exited.is_err() {
        let _ = signal_process(pid, libc::SIGKILL);
        let _ = child.wait();
        panic!("child survived its spawning thread");
    }
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    assert_eq!(describe_exit(status), "signal 9 (SIGKILL)");
}

#[test]
fn refuses_to_signal_init_or_everyone() {
    assert!(signal_group(1, 0).is_err());
    assert!(signal_group(0, 0).is_err());
    assert!(signal_process(1, 0).is_err());
    assert!(signal_process(-5, 0).is_err());
}

#[test]
fn describes_exit_codes() {
    let status = Command::new("sh").args(["-c", "exit 3"]).status().unwrap();
    assert_eq!(describe_exit(status), "exit code 3");
}

#[test]
fn cmdline_of_self_is_readable() {
    let me = std::process::id() as i32;
    assert!(!cmdline(me).is_empty());
    assert!(proc_stat(me).is_some());
}
