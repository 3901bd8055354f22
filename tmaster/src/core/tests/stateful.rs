//! The core carrying out the checkpoint controller's decisions: restore round at the first
//! plan, checkpoints on the timer, a consistent checkpoint written, announced and cleaned,
//! and a restore when a stream manager goes.

use super::*;
use crate::stateful::{StatefulConfig, StatefulController};
use heron_proto::ckptmgr::{
    CleanStatefulCheckpointRequest, InstanceStateStored, RestoreTopologyStateRequest,
    RestoreTopologyStateResponse, StartStatefulCheckpoint, StartStmgrStatefulProcessing,
    StatefulConsistentCheckpointSaved,
};

const INTERVAL: Duration = Duration::from_secs(2);

/// The frames sent to `conn`.
fn sent_to(actions: &[Action], conn: ConnId) -> Vec<Packet> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Send(c, b) if *c == conn => Some(packet(b)),
            _ => None,
        })
        .collect()
}

fn named<M: Name>(packets: &[Packet]) -> Vec<&Packet> {
    packets
        .iter()
        .filter(|p| p.type_name() == M::full_name())
        .collect()
}

/// Both stream managers registered and restored to the clean state; processing started.
fn processing(t0: Instant) -> Core {
    let (mut core, _) = core(t0);
    let cfg = StatefulConfig {
        interval: INTERVAL,
        start_clean: false,
        keep: 5,
    };
    core.set_stateful(StatefulController::new(cfg, None, "pp".into(), 100, t0));
    register(&mut core, 1, 1, t0);
    let out = register(&mut core, 2, 2, t0);
    for conn in [1, 2] {
        let sent = sent_to(&out, conn);
        let restores = named::<RestoreTopologyStateRequest>(&sent);
        assert_eq!(restores.len(), 1, "the first plan restores: {sent:?}");
        let r: RestoreTopologyStateRequest = restores[0].decode().unwrap();
        assert_eq!(r.checkpoint_id, "", "no checkpoint yet: the clean state");
    }
    for conn in [1, 2] {
        let resp = RestoreTopologyStateResponse {
            status: heron_proto::status(StatusCode::Ok, None),
            checkpoint_id: String::new(),
            restore_txid: 1,
        };
        core.on_request(
            conn,
            ReqId::ZERO,
            Request::Stateful(StatefulReport::Restored(resp)),
            t0,
        );
    }
    let out = actions(&mut core);
    for conn in [1, 2] {
        assert_eq!(
            named::<StartStmgrStatefulProcessing>(&sent_to(&out, conn)).len(),
            1
        );
    }
    core
}

fn stored(core: &mut Core, conn: ConnId, id: &str, task: i32, now: Instant) {
    let m = InstanceStateStored {
        checkpoint_id: id.into(),
        instance: request(task, 0).instances[0].clone(),
    };
    core.on_request(
        conn,
        ReqId::ZERO,
        Request::Stateful(StatefulReport::Stored(m)),
        now,
    );
}

#[test]
fn a_checkpoint_stored_by_every_task_is_written_announced_and_cleaned() {
    let t0 = Instant::now();
    let mut core = processing(t0);
    assert!(core.next_deadline().unwrap() <= t0 + INTERVAL);
    core.on_stateful_timer(t0 + INTERVAL, 1_000);
    let out = actions(&mut core);
    let starts = named::<StartStatefulCheckpoint>(&sent_to(&out, 1)).len();
    assert_eq!(starts, 1);
    let start: StartStatefulCheckpoint = named::<StartStatefulCheckpoint>(&sent_to(&out, 2))[0]
        .decode()
        .unwrap();
    let id = start.checkpoint_id;
    stored(&mut core, 1, &id, 1, t0 + INTERVAL);
    assert!(actions(&mut core).is_empty(), "one task of two stored");
    stored(&mut core, 2, &id, 2, t0 + INTERVAL);
    let out = actions(&mut core);
    let written: Vec<_> = out
        .iter()
        .filter_map(|a| match a {
            Action::WriteCheckpoints(l) => Some(l.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(written.len(), 1);
    assert_eq!(written[0].consistent_checkpoints[0].checkpoint_id, id);
    assert_eq!(written[0].consistent_checkpoints[0].packing_plan_id, "pp");
    for conn in [1, 2] {
        let saved = sent_to(&out, conn);
        let saved: StatefulConsistentCheckpointSaved =
            named::<StatefulConsistentCheckpointSaved>(&saved)[0]
                .decode()
                .unwrap();
        assert_eq!(saved.consistent_checkpoint.checkpoint_id, id);
    }
    let clean: Vec<_> = out
        .iter()
        .filter_map(|a| match a {
            Action::ToCkptmgr(b) => Some(packet(b)),
            _ => None,
        })
        .collect();
    let clean: CleanStatefulCheckpointRequest = clean[0].decode().unwrap();
    assert_eq!(clean.clean_all_checkpoints, Some(false));
    // the tracker's counters
    let restores =
        core.metrics
            .values(TMASTER_COMPONENT, &[], &[RESTORES_METRIC.to_string()], None);
    assert_eq!(
        restores[RESTORES_METRIC]["tmaster"], 1.0,
        "the tmaster publishes its restore count"
    );
}

#[test]
fn a_stream_manager_that_goes_and_comes_back_gets_the_topology_restored() {
    let t0 = Instant::now();
    let mut core = processing(t0);
    core.on_closed(2, t0);
    assert!(
        actions(&mut core)
            .iter()
            .all(|a| !matches!(a, Action::Send(..))),
        "no restore while a stream manager is absent"
    );
    core.on_connected(3, peer(3));
    let out = register(&mut core, 3, 2, t0);
    for conn in [1, 3] {
        let restores = named::<RestoreTopologyStateRequest>(&sent_to(&out, conn)).len();
        assert_eq!(restores, 1, "restore sent to stream manager on conn {conn}");
    }
}
