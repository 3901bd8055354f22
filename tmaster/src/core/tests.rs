//! Unit tests of the decision core, driven without sockets, a state manager or a clock: the
//! time is passed in.

use super::*;
use bytes::BytesMut;
use heron_proto::api::{Topology, TopologyState};
use heron_proto::system::{Instance, InstanceInfo, StMgr};
use heron_proto::tmanager::StMgrRegisterResponse;
use heron_proto::{HeronCodec, Packet};

const STATE_TIMEOUT: Duration = Duration::from_secs(60);
const WATCH: Duration = Duration::from_secs(1);
const PACKING_PLAN: &[u8] = b"packing plan v1";

fn location() -> TManagerLocation {
    TManagerLocation {
        topology_name: "wc".into(),
        topology_id: "wc-1".into(),
        host: "127.0.0.1".into(),
        controller_port: 1,
        server_port: 2,
        stats_port: Some(3),
    }
}

fn topology() -> Topology {
    Topology {
        id: "wc-1".into(),
        name: "wc".into(),
        state: TopologyState::Running as i32,
        ..Topology::default()
    }
}

fn request(container: i32, port: i32) -> StMgrRegisterRequest {
    let stmgr_id = format!("stmgr-{container}");
    StMgrRegisterRequest {
        stmgr: StMgr {
            id: stmgr_id.clone(),
            host_name: "127.0.0.1".into(),
            data_port: port,
            local_endpoint: "/unused".into(),
            ..StMgr::default()
        },
        instances: vec![Instance {
            instance_id: format!("container_{container}_word_{container}"),
            stmgr_id,
            info: InstanceInfo {
                task_id: container,
                component_index: container - 1,
                component_name: "word".into(),
                params: vec![],
                remote_debugger_port: None,
            },
        }],
    }
}

fn peer(conn: ConnId) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 40_000 + conn as u16))
}

/// A core expecting stmgr-1 and stmgr-2 (one instance each), started at `t0`, with
/// connections 1 and 2 open.
fn core(t0: Instant) -> (Core, MetricsStore) {
    let registry = Registry::new(
        topology(),
        ["stmgr-1".to_string(), "stmgr-2".to_string()],
        2,
        None,
        STATE_TIMEOUT,
    );
    let metrics = MetricsStore::new();
    let mut core = Core::new(
        location(),
        PACKING_PLAN.to_vec(),
        registry,
        metrics.clone(),
        WATCH,
        t0,
    );
    core.on_connected(1, peer(1));
    core.on_connected(2, peer(2));
    (core, metrics)
}

fn actions(core: &mut Core) -> Vec<Action> {
    std::iter::from_fn(|| core.next_action()).collect()
}

fn packet(bytes: &Bytes) -> Packet {
    let mut buf = BytesMut::from(&bytes[..]);
    let p = HeronCodec::new(0).decode_packet(&mut buf).unwrap().unwrap();
    assert!(buf.is_empty(), "one frame per send");
    p
}

fn reqid(n: u8) -> ReqId {
    ReqId([n; heron_proto::codec::REQID_LEN])
}

fn register(core: &mut Core, conn: ConnId, container: i32, now: Instant) -> Vec<Action> {
    let req = Request::Register(request(container, 100 * container));
    core.on_request(conn, reqid(conn as u8), req, now);
    actions(core)
}

fn heartbeat(core: &mut Core, conn: ConnId, now: Instant) -> StatusCode {
    let req = Request::Heartbeat(StMgrHeartbeatRequest {
        heartbeat_time: 0,
        ..Default::default()
    });
    core.on_request(conn, reqid(9), req, now);
    match actions(core).as_slice() {
        [Action::Send(c, bytes)] if *c == conn => {
            let p = packet(bytes);
            assert_eq!(p.reqid, reqid(9));
            let r: StMgrHeartbeatResponse = p.decode().unwrap();
            StatusCode::try_from(r.status.status).unwrap()
        }
        other => panic!("expected one heartbeat response, got {other:?}"),
    }
}

fn register_status(a: &Action, conn: ConnId) -> StatusCode {
    match a {
        Action::Send(c, bytes) if *c == conn => {
            let r: StMgrRegisterResponse = packet(bytes).decode().unwrap();
            StatusCode::try_from(r.status.status).unwrap()
        }
        other => panic!("expected a register response to {conn}, got {other:?}"),
    }
}

/// Both stmgrs register at `t0`: the plan is written, then pushed to both.
fn with_plan(t0: Instant) -> (Core, MetricsStore) {
    let (mut core, metrics) = core(t0);
    register(&mut core, 1, 1, t0);
    register(&mut core, 2, 2, t0);
    (core, metrics)
}

#[test]
fn the_last_registration_writes_the_plan_then_pushes_it_to_everyone() {
    let t0 = Instant::now();
    let (mut core, metrics) = core(t0);
    let first = register(&mut core, 1, 1, t0);
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(register_status(&first[0], 1), StatusCode::Ok);
    assert_eq!(
        metrics.registration(),
        (vec!["stmgr-1".into()], vec!["stmgr-2".into()])
    );

    let second = register(&mut core, 2, 2, t0);
    assert_eq!(second.len(), 4, "{second:?}");
    assert_eq!(register_status(&second[0], 2), StatusCode::Ok);
    let Action::WritePplan(plan) = &second[1] else {
        panic!("expected the plan to be written before it is pushed: {second:?}");
    };
    assert_eq!(plan.stmgrs.len(), 2);
    assert_eq!(plan.instances.len(), 2);
    for (action, conn) in second[2..].iter().zip([1, 2]) {
        let Action::Send(c, bytes) = action else {
            panic!("expected a push, got {action:?}");
        };
        assert_eq!(*c, conn);
        let p = packet(bytes);
        assert_eq!(p.reqid, ReqId::ZERO);
        let m: NewPhysicalPlanMessage = p.decode().unwrap();
        assert_eq!(&m.new_pplan, plan);
    }
    assert_eq!(
        metrics.registration(),
        (vec!["stmgr-1".into(), "stmgr-2".into()], vec![])
    );
}

#[test]
fn heartbeats_keep_a_registration_until_the_state_timeout() {
    let t0 = Instant::now();
    let (mut core, _) = core(t0);
    register(&mut core, 1, 1, t0);
    core.on_connected(3, peer(3));
    assert_eq!(
        heartbeat(&mut core, 1, t0 + Duration::from_secs(50)),
        StatusCode::Ok
    );
    assert_eq!(
        heartbeat(&mut core, 3, t0),
        StatusCode::Notok,
        "not registered"
    );

    // 59 s after the last heartbeat: a second registration of stmgr-1 is a duplicate.
    let dup = register(&mut core, 3, 1, t0 + Duration::from_secs(109));
    assert_eq!(dup.len(), 1, "{dup:?}");
    assert_eq!(register_status(&dup[0], 3), StatusCode::DuplicateStrmgr);
    assert_eq!(
        heartbeat(&mut core, 1, t0 + Duration::from_secs(109)),
        StatusCode::Ok
    );

    // The state timeout after the last heartbeat: the new connection takes over, the stale
    // one is closed.
    let later = t0 + Duration::from_secs(109) + STATE_TIMEOUT;
    let replaced = register(&mut core, 3, 1, later);
    assert_eq!(register_status(&replaced[0], 3), StatusCode::Ok);
    assert!(matches!(replaced[1..], [Action::Close(1)]), "{replaced:?}");
    assert_eq!(heartbeat(&mut core, 3, later), StatusCode::Ok);
    // The stale connection is forgotten: its messages are dropped, its close changes nothing.
    core.on_request(1, reqid(1), Request::Heartbeat(Default::default()), later);
    assert!(actions(&mut core).is_empty());
    core.on_closed(1, Instant::now());
    assert_eq!(heartbeat(&mut core, 3, later), StatusCode::Ok);
}

#[test]
fn the_state_check_is_due_every_interval_and_a_late_one_does_not_catch_up() {
    let t0 = Instant::now();
    let (mut core, _) = core(t0);
    assert_eq!(core.next_deadline(), Some(t0 + WATCH));
    core.on_timer(t0 + WATCH / 2);
    assert!(actions(&mut core).is_empty());

    core.on_timer(t0 + WATCH);
    assert!(matches!(actions(&mut core)[..], [Action::ReadLocation]));
    assert_eq!(core.next_deadline(), Some(t0 + 2 * WATCH), "no drift");

    // A check 3.5 intervals late: one check, the next a whole interval later.
    let late = t0 + 5 * WATCH + WATCH / 2;
    core.on_timer(late);
    assert!(matches!(actions(&mut core)[..], [Action::ReadLocation]));
    assert_eq!(core.next_deadline(), Some(late + WATCH));
}

#[test]
fn the_state_check_reads_the_location_then_the_packing_plan() {
    let t0 = Instant::now();
    let (mut core, _) = core(t0);
    core.on_location_read(Ok(Some(location())));
    assert!(matches!(actions(&mut core)[..], [Action::ReadPackingPlan]));
    core.on_packing_plan_read(Ok(Some(PACKING_PLAN.to_vec())));
    assert!(actions(&mut core).is_empty());

    // A read error (not an expired session) is logged and the check goes on.
    let timeout = || StateError::Timeout {
        op: "get",
        path: "/x".into(),
        after: Duration::from_secs(1),
    };
    core.on_location_read(Err(timeout()));
    assert!(matches!(actions(&mut core)[..], [Action::ReadPackingPlan]));
    core.on_packing_plan_read(Err(timeout()));
    assert!(actions(&mut core).is_empty());
}

#[test]
fn the_state_check_exits_when_the_location_or_the_packing_plan_is_not_ours() {
    let t0 = Instant::now();
    let exit = |core: &mut Core| match actions(core).pop() {
        Some(Action::Exit(e)) => e,
        other => panic!("expected an exit, got {other:?}"),
    };
    let (mut core, _) = core(t0);
    core.on_location_read(Ok(None));
    assert!(matches!(exit(&mut core), TmasterError::LocationLost(n) if n == "wc"));
    let mut other = location();
    other.server_port = 99;
    core.on_location_read(Ok(Some(other)));
    assert!(matches!(exit(&mut core), TmasterError::LocationTaken(_)));
    core.on_location_read(Err(StateError::SessionExpired {
        op: "get",
        path: "/tmanagers/wc".into(),
    }));
    assert!(matches!(exit(&mut core), TmasterError::SessionLost(_)));

    core.on_packing_plan_read(Ok(Some(b"packing plan v2".to_vec())));
    let a = actions(&mut core);
    assert!(
        matches!(
            &a[..],
            [
                Action::DeletePplan,
                Action::Exit(TmasterError::PackingPlanChanged(_))
            ]
        ),
        "{a:?}"
    );
}

#[test]
fn watch_events_exit_on_a_lost_location_session_or_new_packing_plan() {
    let t0 = Instant::now();
    let (mut core, _) = core(t0);
    let ours = location().encode_to_vec();
    core.on_state(StateDir::TManagers, NodeEvent::Changed(Some(ours)));
    core.on_state(
        StateDir::PackingPlans,
        NodeEvent::Changed(Some(PACKING_PLAN.to_vec())),
    );
    assert!(actions(&mut core).is_empty(), "nothing changed");

    core.on_state(
        StateDir::TManagers,
        NodeEvent::Changed(Some(b"junk".to_vec())),
    );
    assert!(matches!(
        actions(&mut core)[..],
        [Action::Exit(TmasterError::LocationTaken(_))]
    ));
    core.on_state(StateDir::TManagers, NodeEvent::Changed(None));
    assert!(matches!(
        actions(&mut core)[..],
        [Action::Exit(TmasterError::LocationLost(_))]
    ));
    core.on_state(StateDir::PPlans, NodeEvent::SessionLost);
    assert!(matches!(
        actions(&mut core)[..],
        [Action::Exit(TmasterError::SessionLost(_))]
    ));
    core.on_state(StateDir::PackingPlans, NodeEvent::Changed(None));
    assert!(matches!(
        actions(&mut core)[..],
        [
            Action::DeletePplan,
            Action::Exit(TmasterError::PackingPlanChanged(_))
        ]
    ));
}

#[test]
fn a_stuck_connection_makes_its_stmgr_absent() {
    let t0 = Instant::now();
    let (mut core, metrics) = with_plan(t0);
    actions(&mut core);
    core.on_stuck(2);
    assert!(actions(&mut core).is_empty());
    assert_eq!(
        metrics.registration(),
        (vec!["stmgr-1".into()], vec!["stmgr-2".into()])
    );
    // Its Closed event comes later and changes nothing.
    core.on_closed(2, Instant::now());
    assert_eq!(
        metrics.registration(),
        (vec!["stmgr-1".into()], vec!["stmgr-2".into()])
    );
    assert_eq!(heartbeat(&mut core, 1, t0), StatusCode::Ok);
}

#[test]
fn controller_requests_write_push_and_then_answer() {
    let t0 = Instant::now();
    let id = vec![("topologyid".to_string(), "wc-1".to_string())];
    let (mut bare, _) = core(t0);
    bare.on_control("/deactivate", &id);
    let a = actions(&mut bare);
    assert!(
        matches!(&a[..], [Action::Reply(Answer { status: 500, .. })]),
        "{a:?}"
    );

    let (mut core, _) = with_plan(t0);
    actions(&mut core);
    core.on_control("/deactivate", &id);
    let a = actions(&mut core);
    assert_eq!(a.len(), 4, "{a:?}");
    let Action::WritePplan(plan) = &a[0] else {
        panic!("{a:?}");
    };
    assert_eq!(plan.topology.state, TopologyState::Paused as i32);
    assert!(matches!(&a[1..3], [Action::Send(1, _), Action::Send(2, _)]));
    match &a[3] {
        Action::Reply(answer) => assert_eq!(
            answer,
            &Answer {
                status: 200,
                body: "/deactivate: done\n".into()
            }
        ),
        other => panic!("{other:?}"),
    }

    core.on_control("/deactivate", &id);
    let a = actions(&mut core);
    assert!(
        matches!(&a[..], [Action::Reply(Answer { status: 400, .. })]),
        "{a:?}"
    );
    core.on_control("/activate", &[]);
    let a = actions(&mut core);
    assert!(
        matches!(&a[..], [Action::Reply(Answer { status: 400, .. })]),
        "{a:?}"
    );
}

#[test]
fn metrics_from_open_connections_reach_the_store() {
    let t0 = Instant::now();
    let (mut core, metrics) = core(t0);
    let msg = || PublishMetrics {
        metrics: vec![heron_proto::tmanager::MetricDatum {
            component_name: "word".into(),
            instance_id: "i1".into(),
            name: "__emit-count/default".into(),
            value: "5".into(),
            timestamp: 0,
        }],
        exceptions: vec![],
    };
    core.on_request(1, ReqId::ZERO, Request::Metrics(msg()), t0);
    core.on_closed(1, Instant::now());
    core.on_request(1, ReqId::ZERO, Request::Metrics(msg()), t0);
    assert!(actions(&mut core).is_empty(), "one-way");
    assert_eq!(
        metrics.values("word", &[], &[], None)["__emit-count/default"]["i1"],
        5.0
    );
}

mod stateful;
