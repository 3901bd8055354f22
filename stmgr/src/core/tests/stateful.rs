//! EFFECTIVELY_ONCE in the core: the restore round, checkpoint markers in order with the
//! data, states to the checkpoint manager, and resets when an instance goes.

use super::*;
use heron_proto::ckptmgr::{
    DownstreamStatefulCheckpoint, GetInstanceStateRequest, GetInstanceStateResponse,
    InitiateStatefulCheckpoint, InstanceStateCheckpoint, InstanceStateStored, RegisterStMgrRequest,
    ResetTopologyState, RestoreInstanceStateRequest, RestoreInstanceStateResponse,
    RestoreTopologyStateRequest, RestoreTopologyStateResponse, SaveInstanceStateRequest,
    SaveInstanceStateResponse, StartInstanceStatefulProcessing, StartStatefulCheckpoint,
    StartStmgrStatefulProcessing, StoreInstanceStateCheckpoint,
};

fn eo_plan() -> PhysicalPlan {
    with_config(
        plan_with(api::Grouping::All),
        &[("topology.reliability.mode", "EFFECTIVELY_ONCE")],
    )
}

fn tmaster<M: Message + Name>(h: &mut H, msg: &M) {
    let p = Packet::from_message(ReqId::ZERO, msg);
    h.core.on_tmaster_message(&p, h.now);
}

fn ckptmgr<M: Message + Name>(h: &mut H, msg: &M) {
    let p = Packet::from_message(ReqId::random(), msg);
    h.core.on_ckptmgr_message(&p, h.now);
}

fn to_tmaster(out: &[Out]) -> Vec<&Packet> {
    out.iter()
        .filter_map(|o| match o {
            Out::Tmaster(p) => Some(p),
            _ => None,
        })
        .collect()
}

fn to_ckptmgr(out: &[Out]) -> Vec<&Packet> {
    out.iter()
        .filter_map(|o| match o {
            Out::Ckptmgr(p) => Some(p),
            _ => None,
        })
        .collect()
}

fn names(packets: &[&Packet]) -> Vec<String> {
    packets.iter().map(|p| p.type_name().to_string()).collect()
}

fn name<M: Name>() -> String {
    M::full_name()
}

/// Registered, EO plan applied, the mesh up, the checkpoint manager connected.
fn registered() -> H {
    registered_with(eo_plan())
}

/// An EO plan in which bolt 3 consumes spout tasks 1 (here) and 2 (on stmgr-2), with `config`.
fn aligned_plan(config: &[(&str, &str)]) -> PhysicalPlan {
    let mut config = config.to_vec();
    config.push(("topology.reliability.mode", "EFFECTIVELY_ONCE"));
    two_spouts_one_bolt(api::Grouping::All, &config)
}

/// [`registered`] with `plan`.
fn registered_with(plan: PhysicalPlan) -> H {
    let mut h = H::with_peer(plan);
    h.core.on_ckptmgr_up(h.now);
    let out = h.round(true);
    let reg = to_ckptmgr(&out);
    assert_eq!(names(&reg), vec![name::<RegisterStMgrRequest>()]);
    h
}

/// The tmaster's restore `txid` to the clean state, carried out and answered OK; not started.
fn restore(h: &mut H, txid: i64) {
    tmaster(
        h,
        &RestoreTopologyStateRequest {
            checkpoint_id: String::new(),
            restore_txid: txid,
        },
    );
    let out = h.round(true);
    let gets = to_ckptmgr(&out);
    assert_eq!(gets.len(), 2, "one state per local task");
    for g in gets {
        let req: GetInstanceStateRequest = g.decode().unwrap();
        ckptmgr(
            h,
            &GetInstanceStateResponse {
                status: status(StatusCode::Ok, None),
                instance: req.instance,
                checkpoint_id: String::new(),
                checkpoint: None,
            },
        );
    }
    let out = h.round(true);
    for conn in [SPOUT, BOLT] {
        let f = frames_to(&out, conn);
        assert_eq!(names(&f), vec![name::<RestoreInstanceStateRequest>()]);
        h.send(
            conn,
            &RestoreInstanceStateResponse {
                status: status(StatusCode::Ok, None),
                checkpoint_id: String::new(),
            },
        );
    }
    let out = h.round(true);
    let resp = to_tmaster(&out);
    assert_eq!(names(&resp), vec![name::<RestoreTopologyStateResponse>()]);
    let r: RestoreTopologyStateResponse = resp[0].decode().unwrap();
    assert_eq!(
        (r.status.status, r.restore_txid),
        (StatusCode::Ok as i32, txid)
    );
}

/// The spout (task 1) stored an empty state for checkpoint `id`.
fn spout_stored(h: &mut H, id: &str) {
    h.send(
        SPOUT,
        &StoreInstanceStateCheckpoint {
            state: InstanceStateCheckpoint {
                checkpoint_id: id.into(),
                state: None,
                state_location: None,
            },
        },
    );
}

/// The tmaster's start after [`restore`]; what the round sent.
fn start(h: &mut H) -> Vec<Out> {
    tmaster(
        h,
        &StartStmgrStatefulProcessing {
            checkpoint_id: String::new(),
        },
    );
    h.round(true)
}

/// [`registered`], then the tmaster's first restore (to the clean state, txid 1) and start.
fn running() -> H {
    let mut h = registered();
    restore(&mut h, 1);
    let out = start(&mut h);
    for conn in [SPOUT, BOLT] {
        assert_eq!(
            names(&frames_to(&out, conn)),
            vec![name::<StartInstanceStatefulProcessing>()]
        );
    }
    h
}

#[test]
fn a_checkpoint_manager_connected_before_the_plan_is_registered_with_when_it_comes() {
    let mut h = H::new();
    h.register(SPOUT, "spout", 1);
    h.register(BOLT, "bolt", 3);
    h.core.on_ckptmgr_up(h.now);
    assert!(to_ckptmgr(&h.round(true)).is_empty(), "no plan yet");
    h.core.on_pplan(eo_plan(), h.now);
    let out = h.round(true);
    assert_eq!(
        names(&to_ckptmgr(&out)),
        vec![name::<RegisterStMgrRequest>()]
    );
}

#[test]
fn data_before_the_first_start_is_dropped() {
    let mut h = registered();
    h.send(SPOUT, &tuple_set(&["early"]));
    let out = h.round(true);
    assert!(frames_to(&out, BOLT).is_empty() && frames_to(&out, PEER_OUT).is_empty());
    assert_eq!(h.core.stateful_counters().dropped_during_restore, 1);
}

#[test]
fn a_checkpoint_goes_to_spouts_then_downstream_after_the_spouts_tuples() {
    let mut h = running();
    tmaster(
        &mut h,
        &StartStatefulCheckpoint {
            checkpoint_id: "c1".into(),
        },
    );
    let out = h.round(true);
    assert_eq!(
        names(&frames_to(&out, SPOUT)),
        vec![name::<InitiateStatefulCheckpoint>()]
    );
    assert!(
        frames_to(&out, BOLT).is_empty(),
        "bolts wait for their upstreams"
    );
    // the spout emits, then stores its state: the marker follows its tuples everywhere
    h.send(SPOUT, &tuple_set(&["a", "b"]));
    h.send(
        SPOUT,
        &StoreInstanceStateCheckpoint {
            state: InstanceStateCheckpoint {
                checkpoint_id: "c1".into(),
                state: Some(Bytes::from_static(b"spout-state")),
                state_location: None,
            },
        },
    );
    let out = h.round(true);
    assert_eq!(
        names(&frames_to(&out, BOLT)),
        vec![
            HERON_TUPLE_SET2.to_string(),
            name::<InitiateStatefulCheckpoint>()
        ]
    );
    let remote = frames_to(&out, PEER_OUT);
    assert_eq!(
        names(&remote),
        vec![
            TUPLE_STREAM_MESSAGE.to_string(),
            name::<DownstreamStatefulCheckpoint>()
        ]
    );
    let m: DownstreamStatefulCheckpoint = remote[1].decode().unwrap();
    assert_eq!((m.origin_task_id, m.destination_task_id), (1, 4));
    let saves = to_ckptmgr(&out);
    let save: SaveInstanceStateRequest = saves[0].decode().unwrap();
    assert_eq!(save.instance.info.task_id, 1);
    assert_eq!(save.checkpoint.state.as_deref(), Some(&b"spout-state"[..]));
    // stored: the tmaster hears of it
    ckptmgr(
        &mut h,
        &SaveInstanceStateResponse {
            status: status(StatusCode::Ok, None),
            instance: save.instance.clone(),
            checkpoint_id: "c1".into(),
        },
    );
    let out = h.round(true);
    let stored: InstanceStateStored = to_tmaster(&out)[0].decode().unwrap();
    assert_eq!(
        (stored.checkpoint_id.as_str(), stored.instance.info.task_id),
        ("c1", 1)
    );
}

#[test]
fn a_remote_marker_aligns_the_local_bolt() {
    let mut h = running();
    // a plan with an upstream on stmgr-2: bolt 3 consumes spout tasks 1 (here) and 2 (there)
    h.core.on_pplan(aligned_plan(&[]), h.now);
    h.round(true);
    // spout 1's marker arrives first: bolt 3 now holds spout 1's later tuples
    spout_stored(&mut h, "c1");
    h.send(SPOUT, &tuple_set(&["after"]));
    let out = h.round(true);
    assert!(
        frames_to(&out, BOLT).is_empty(),
        "held until spout 2's marker"
    );
    h.send(
        PEER_IN,
        &DownstreamStatefulCheckpoint {
            origin_task_id: 2,
            destination_task_id: 3,
            checkpoint_id: "c1".into(),
            restore_txid: None,
        },
    );
    let out = h.round(true);
    assert_eq!(
        names(&frames_to(&out, BOLT)),
        vec![
            name::<InitiateStatefulCheckpoint>(),
            HERON_TUPLE_SET2.to_string()
        ]
    );
    assert_eq!(h.core.stateful_counters().alignments, 1);
}

#[test]
fn an_instance_that_goes_asks_the_tmaster_for_a_restore() {
    let mut h = running();
    h.core.on_closed(BOLT, h.now);
    let out = h.round(true);
    let reset: ResetTopologyState = to_tmaster(&out)[0].decode().unwrap();
    assert_eq!(reset.dead_taskid, Some(3));
}

#[test]
fn a_restore_drops_what_is_in_flight_and_a_ckptmgr_error_answers_notok() {
    let mut h = running();
    tmaster(
        &mut h,
        &RestoreTopologyStateRequest {
            checkpoint_id: "c9".into(),
            restore_txid: 2,
        },
    );
    h.send(SPOUT, &tuple_set(&["stale"]));
    let out = h.round(true);
    assert!(frames_to(&out, BOLT).is_empty(), "no data during a restore");
    let gets = to_ckptmgr(&out);
    let req: GetInstanceStateRequest = gets[0].decode().unwrap();
    ckptmgr(
        &mut h,
        &GetInstanceStateResponse {
            status: status(StatusCode::Notok, Some("corrupt".to_string())),
            instance: req.instance,
            checkpoint_id: "c9".into(),
            checkpoint: None,
        },
    );
    let out = h.round(true);
    let r: RestoreTopologyStateResponse = to_tmaster(&out)[0].decode().unwrap();
    assert_eq!(
        (r.status.status, r.checkpoint_id.as_str(), r.restore_txid),
        (StatusCode::Notok as i32, "c9", 2)
    );
}

#[test]
fn stateful_messages_in_a_topology_that_is_not_effectively_once_close_the_connection() {
    let mut h = H::running(api::Grouping::Shuffle);
    spout_stored(&mut h, "c1");
    assert!(closed(&h.round(true)).contains(&SPOUT));
}

mod epochs;
