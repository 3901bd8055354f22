//! The tmaster side: registration waits for every instance, new plans from the tmaster reach
//! the instances, and the stream manager re-registers when the tmaster drops it or moves.

mod common;

use common::*;
use heron_proto::api::TopologyState;
use heron_proto::stmgr::NewInstanceAssignmentMessage;
use std::time::Duration;

#[test]
fn the_stream_manager_follows_a_restarted_or_moved_tmaster() {
    init_logs();
    with_timeout(Duration::from_secs(60), || {
        let root = tempfile::tempdir().unwrap();
        let (data, local) = (free_port(), free_port());
        let (spout, bolt, plan) = relay_plan(data);
        let a = FakeTmaster::start(plan.clone());
        write_location(root.path(), a.port);
        start_stmgr(stmgr_config(
            root.path(),
            "stmgr-1",
            data,
            local,
            &[&spout, &bolt],
        ));

        // Nothing reaches the tmaster until both instances registered.
        let (mut s, resp) = register(local, &spout);
        assert!(resp.pplan.is_none());
        // (the stmgr answered the spout, so it has decided; watch the tmaster for a while)
        assert!(
            a.events.recv_timeout(Duration::from_millis(300)).is_err(),
            "registered before all instances were in"
        );
        let (_b, _) = register(local, &bolt);
        let r = a.next_registration();
        assert_eq!(r.instances, vec![spout.clone(), bolt.clone()]);
        assert_eq!(s.recv_msg::<NewInstanceAssignmentMessage>().pplan, plan);

        // A new plan from the tmaster goes to the instances.
        let mut paused = plan.clone();
        paused.topology.state = TopologyState::Paused as i32;
        a.push_plan(paused.clone());
        assert_eq!(s.recv_msg::<NewInstanceAssignmentMessage>().pplan, paused);

        // The tmaster drops the connection: the stream manager comes back and registers again.
        a.kick();
        let again = a.next_registration();
        assert_eq!(again.stmgr.id, "stmgr-1");

        // The tmaster moves: the new location is noticed and used.
        let b = FakeTmaster::start(plan.clone());
        write_location(root.path(), b.port);
        let moved = b.next_registration();
        assert_eq!(moved.instances.len(), 2);
        match a.events.recv_timeout(STEP) {
            Ok(TmEvent::Disconnected) => {}
            other => panic!("the old tmaster's connection should close, got {other:?}"),
        }
        // B's plan (running again) reaches the instance.
        assert_eq!(s.recv_msg::<NewInstanceAssignmentMessage>().pplan, plan);
    });
}
