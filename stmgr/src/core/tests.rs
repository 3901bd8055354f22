use super::*;
use crate::config::FLUSH_INTERVAL;
use crate::testutil::*;
use heron_proto::api::{self, StreamId};
use heron_proto::stmgr::{StartBackPressureMessage, TupleStreamMessage};
use heron_proto::system::Instance;
use heron_proto::system::{
    AckTuple, HeronControlTupleSet, HeronDataTuple, HeronDataTupleSet, HeronTupleSet,
    HeronTupleSet2,
};
use heron_proto::HeronCodec;
use std::time::Duration;

const SPOUT: ConnId = 1;
const BOLT: ConnId = 2;
const PEER_IN: ConnId = 20;
/// The stream manager's own link to stmgr-2.
const PEER_OUT: ConnId = 10;

fn cfg() -> CoreConfig {
    CoreConfig {
        topology_name: TOPOLOGY.into(),
        topology_id: TOPOLOGY_ID.into(),
        stmgr_id: "stmgr-1".into(),
        instance_ids: vec!["container_1_spout_1".into(), "container_1_bolt_3".into()],
        max_packet_size: 1 << 20,
        batch_bytes: 1 << 15,
    }
}

/// spout task 1 and bolt task 3 here, bolt task 4 on stmgr-2.
fn plan_with(g: api::Grouping) -> PhysicalPlan {
    Plan::new()
        .spout("spout", vec![output("spout", "default", &["word"])])
        .bolt("bolt", vec![input("spout", "default", g)], vec![])
        .stmgr("stmgr-1", 6001)
        .stmgr("stmgr-2", 6002)
        .instance("stmgr-1", "spout", 1)
        .instance("stmgr-1", "bolt", 3)
        .instance("stmgr-2", "bolt", 4)
        .build()
}

#[derive(Debug)]
enum Out {
    Frame(ConnId, Packet),
    Close(ConnId),
    Connect(String, u16, u64),
    Register(Vec<Instance>),
    Pause(ConnId, bool),
    /// A message for the tmaster.
    Tmaster(Packet),
    /// A message for the checkpoint manager.
    Ckptmgr(Packet),
}

/// The one whole packet `bytes` holds.
fn one_packet(bytes: &[u8]) -> Packet {
    let mut buf = BytesMut::from(bytes);
    let p = HeronCodec::new(0)
        .decode_packet(&mut buf)
        .unwrap()
        .expect("a packet");
    assert!(buf.is_empty(), "one whole frame");
    p
}

struct H {
    core: Core,
    now: Instant,
    /// The attempt number of the last connect to stmgr-2 that `running` saw.
    attempt: u64,
}

impl H {
    fn new() -> H {
        let now = Instant::now();
        H {
            core: Core::new(cfg(), now),
            now,
            attempt: 0,
        }
    }

    fn send<M: Message + Name>(&mut self, conn: ConnId, msg: &M) -> ReqId {
        let reqid = ReqId::random();
        self.core
            .on_packet(conn, &Packet::from_message(reqid, msg), self.now);
        reqid
    }

    fn register(&mut self, conn: ConnId, component: &str, task: i32) -> ReqId {
        self.core
            .on_connected(conn, Incoming::Instance, format!("test-{conn}"));
        self.send(
            conn,
            &RegisterInstanceRequest {
                instance: instance("stmgr-1", component, task),
                topology_name: TOPOLOGY.into(),
                topology_id: TOPOLOGY_ID.into(),
            },
        )
    }

    fn hello(&mut self, conn: ConnId, stmgr: &str) {
        self.core
            .on_connected(conn, Incoming::Stmgr, format!("test-{conn}"));
        self.send(
            conn,
            &StrMgrHelloRequest {
                topology_name: TOPOLOGY.into(),
                topology_id: TOPOLOGY_ID.into(),
                stmgr: stmgr.into(),
            },
        );
    }

    /// Ends the round and returns what the core asked for.
    fn round(&mut self, idle: bool) -> Vec<Out> {
        self.core.end_round(self.now, idle);
        let mut out = Vec::new();
        for a in self.core.drain_actions() {
            match a {
                Action::Send(conn, bytes) => {
                    let mut buf = BytesMut::from(&bytes[..]);
                    while let Some(p) = HeronCodec::new(0).decode_packet(&mut buf).unwrap() {
                        out.push(Out::Frame(conn, p));
                    }
                    assert!(buf.is_empty(), "whole frames only");
                }
                Action::Close(conn) => out.push(Out::Close(conn)),
                Action::ConnectStmgr {
                    stmgr_id,
                    port,
                    attempt,
                    ..
                } => out.push(Out::Connect(stmgr_id, port, attempt)),
                Action::RegisterWithTmaster(v) => out.push(Out::Register(v)),
                Action::PauseReads(c, p) => out.push(Out::Pause(c, p)),
                Action::ToTmaster(b) => out.push(Out::Tmaster(one_packet(&b))),
                Action::ToCkptmgr(b) => out.push(Out::Ckptmgr(one_packet(&b))),
            }
        }
        out
    }

    /// Both instances registered, the plan applied, actions cleared.
    fn running(g: api::Grouping) -> H {
        H::running_with(plan_with(g))
    }

    /// [`H::running`] with `plan`.
    fn running_with(plan: PhysicalPlan) -> H {
        let mut h = H::new();
        h.register(SPOUT, "spout", 1);
        h.register(BOLT, "bolt", 3);
        h.core.on_pplan(plan, h.now);
        for o in h.round(true) {
            if let Out::Connect(_, _, a) = o {
                h.attempt = a;
            }
        }
        assert!(h.attempt > 0, "the plan starts a connect to stmgr-2");
        h
    }

    /// [`H::running_with`] `plan`, the link to stmgr-2 up on [`PEER_OUT`] and its hello
    /// taken on [`PEER_IN`] (the round that answers it not ended yet).
    fn with_peer(plan: PhysicalPlan) -> H {
        let mut h = H::running_with(plan);
        h.core
            .on_stmgr_client_up("stmgr-2", h.attempt, PEER_OUT, "peer".into(), h.now);
        h.hello(PEER_IN, "stmgr-2");
        h
    }

    /// [`H::running`], with the link to stmgr-2 up on connection 10 and the plan handed out.
    fn meshed(g: api::Grouping) -> H {
        let mut h = H::running(g);
        h.core
            .on_stmgr_client_up("stmgr-2", h.attempt, PEER_OUT, "peer".into(), h.now);
        h.round(true);
        h
    }
}

fn frames_to(out: &[Out], conn: ConnId) -> Vec<&Packet> {
    out.iter()
        .filter_map(|o| match o {
            Out::Frame(c, p) if *c == conn => Some(p),
            _ => None,
        })
        .collect()
}

fn closed(out: &[Out]) -> Vec<ConnId> {
    out.iter()
        .filter_map(|o| match o {
            Out::Close(c) => Some(*c),
            _ => None,
        })
        .collect()
}

fn data_tuple(word: &str) -> HeronDataTuple {
    HeronDataTuple {
        key: 0,
        roots: vec![],
        values: vec![str_value(word).into()],
        dest_task_ids: vec![],
    }
}

fn tuple_set(words: &[&str]) -> HeronTupleSet {
    HeronTupleSet {
        data: Some(HeronDataTupleSet {
            stream: StreamId {
                id: "default".into(),
                component_name: "spout".into(),
            },
            tuples: words.iter().map(|w| data_tuple(w)).collect(),
        }),
        control: None,
        src_task_id: 1,
    }
}

#[test]
fn dispatch_names_are_the_proto_type_names() {
    use heron_proto::stmgr::StopBackPressureMessage;
    assert_eq!(HERON_TUPLE_SET, HeronTupleSet::full_name());
    assert_eq!(HERON_TUPLE_SET2, HeronTupleSet2::full_name());
    assert_eq!(
        REGISTER_INSTANCE_REQUEST,
        RegisterInstanceRequest::full_name()
    );
    assert_eq!(HELLO_REQUEST, StrMgrHelloRequest::full_name());
    assert_eq!(TUPLE_STREAM_MESSAGE, TupleStreamMessage::full_name());
    assert_eq!(START_BACK_PRESSURE, StartBackPressureMessage::full_name());
    assert_eq!(STOP_BACK_PRESSURE, StopBackPressureMessage::full_name());
}

#[test]
fn registration_is_answered_and_the_tmaster_is_told_once_all_are_in() {
    let mut h = H::new();
    let reqid = h.register(SPOUT, "spout", 1);
    let out = h.round(true);
    let f = frames_to(&out, SPOUT);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].reqid, reqid, "the response echoes the request id");
    let resp: RegisterInstanceResponse = f[0].decode().unwrap();
    assert!(heron_proto::is_ok(&resp.status));
    assert!(resp.pplan.is_none());
    assert!(
        !out.iter().any(|o| matches!(o, Out::Register(_))),
        "one of two"
    );

    h.register(BOLT, "bolt", 3);
    let out = h.round(true);
    let regs: Vec<&Vec<Instance>> = out
        .iter()
        .filter_map(|o| match o {
            Out::Register(v) => Some(v),
            _ => None,
        })
        .collect();
    assert_eq!(regs.len(), 1);
    let ids: Vec<&str> = regs[0].iter().map(|i| i.instance_id.as_str()).collect();
    assert_eq!(ids, vec!["container_1_spout_1", "container_1_bolt_3"]);

    // The bolt reconnects: its old connection closes, the tmaster is not told again.
    h.register(7, "bolt", 3);
    let out = h.round(true);
    assert_eq!(closed(&out), vec![BOLT]);
    assert_eq!(frames_to(&out, 7).len(), 1);
    assert!(!out.iter().any(|o| matches!(o, Out::Register(_))));
}

#[test]
fn a_bad_registration_gets_notok_then_close() {
    let mut h = H::new();
    for (conn, name, id) in [
        (5, "other", "container_1_spout_1"),
        (6, TOPOLOGY, "container_9_x_9"),
    ] {
        h.core.on_connected(conn, Incoming::Instance, "t".into());
        let mut inst = instance("stmgr-1", "spout", 1);
        inst.instance_id = id.into();
        h.send(
            conn,
            &RegisterInstanceRequest {
                instance: inst,
                topology_name: name.into(),
                topology_id: TOPOLOGY_ID.into(),
            },
        );
        let out = h.round(true);
        match &out[..] {
            [Out::Frame(c, p), Out::Close(d)] if *c == conn && *d == conn => {
                let resp: RegisterInstanceResponse = p.decode().unwrap();
                assert_eq!(resp.status.status, StatusCode::Notok as i32);
                assert!(resp.status.message.is_some());
            }
            other => panic!("expected NOTOK then close, got {other:?}"),
        }
    }
}

#[test]
fn the_plan_is_held_until_the_mesh_is_up_then_goes_to_every_instance() {
    let mut h = H::new();
    h.register(SPOUT, "spout", 1);
    h.round(true);
    let plan = plan_with(api::Grouping::Shuffle);
    h.core.on_pplan(plan.clone(), h.now);
    let out = h.round(true);
    let attempt = out
        .iter()
        .find_map(|o| match o {
            Out::Connect(id, 6002, a) if id == "stmgr-2" => Some(*a),
            _ => None,
        })
        .expect("the plan starts a connect to stmgr-2");
    assert!(
        frames_to(&out, SPOUT).is_empty(),
        "no spout may start while its tuples would be dropped"
    );
    // an instance that registers meanwhile gets no plan yet
    h.register(BOLT, "bolt", 3);
    let out = h.round(true);
    let resp: RegisterInstanceResponse = frames_to(&out, BOLT)[0].decode().unwrap();
    assert_eq!(resp.pplan, None);

    h.core
        .on_stmgr_client_up("stmgr-2", attempt, 10, "peer".into(), h.now);
    let out = h.round(true);
    for conn in [SPOUT, BOLT] {
        let f = frames_to(&out, conn);
        assert_eq!(f.len(), 1);
        let msg: NewInstanceAssignmentMessage = f[0].decode().unwrap();
        assert_eq!(msg.pplan, plan);
    }

    // an instance that registers later gets the plan in its response
    h.register(BOLT + 100, "bolt", 3);
    let out = h.round(true);
    let resp: RegisterInstanceResponse = frames_to(&out, BOLT + 100)[0].decode().unwrap();
    assert_eq!(resp.pplan, Some(plan.clone()));

    // the same plan again changes nothing
    h.core.on_pplan(plan, h.now);
    assert!(h.round(true).is_empty());
}

#[test]
fn a_held_plan_goes_out_anyway_after_the_mesh_wait() {
    let mut h = H::running(api::Grouping::All);
    let t0 = h.now;
    assert_eq!(h.core.next_deadline(), Some(t0 + MESH_WAIT));
    h.core.on_timer(t0 + MESH_WAIT / 2);
    assert!(frames_to(&h.round(true), SPOUT).is_empty());
    h.core.on_timer(t0 + MESH_WAIT);
    let out = h.round(true);
    assert_eq!(frames_to(&out, SPOUT).len(), 1);
    assert_eq!(frames_to(&out, BOLT).len(), 1);
}

#[test]
fn plans_of_another_topology_or_without_this_stmgr_are_ignored() {
    let mut h = H::new();
    h.register(SPOUT, "spout", 1);
    h.round(true);
    let mut other = plan_with(api::Grouping::Shuffle);
    other.topology.id = "wc-2".into();
    h.core.on_pplan(other, h.now);
    let mut absent = plan_with(api::Grouping::Shuffle);
    absent.stmgrs.retain(|s| s.id != "stmgr-1");
    h.core.on_pplan(absent, h.now);
    assert!(h.round(true).is_empty());
}

#[test]
fn hellos_are_checked_and_a_second_hello_replaces_the_first() {
    let mut h = H::new();
    // before the plan a hello waits for its answer (the peer may not send data yet) ...
    h.hello(30, "stmgr-3");
    h.hello(PEER_IN, "stmgr-2");
    let out = h.round(true);
    assert!(frames_to(&out, 30).is_empty() && frames_to(&out, PEER_IN).is_empty());
    // ... and is answered when the plan comes: stmgr-3 is not in the topology
    h.core.on_pplan(plan_with(api::Grouping::Shuffle), h.now);
    let out = h.round(true);
    assert_eq!(closed(&out), vec![30]);
    let refused: StrMgrHelloResponse = frames_to(&out, 30)[0].decode().unwrap();
    assert_eq!(refused.status.status, StatusCode::Notok as i32);
    let accepted: StrMgrHelloResponse = frames_to(&out, PEER_IN)[0].decode().unwrap();
    assert!(heron_proto::is_ok(&accepted.status));

    h.hello(21, "stmgr-2");
    let out = h.round(true);
    assert_eq!(closed(&out), vec![PEER_IN], "the older connection goes");
    let resp: StrMgrHelloResponse = frames_to(&out, 21)[0].decode().unwrap();
    assert!(heron_proto::is_ok(&resp.status));

    for (conn, who) in [(22, "stmgr-9"), (23, "stmgr-1")] {
        h.hello(conn, who);
        let out = h.round(true);
        let resp: StrMgrHelloResponse = frames_to(&out, conn)[0].decode().unwrap();
        assert_eq!(resp.status.status, StatusCode::Notok as i32, "{who}");
        assert_eq!(closed(&out), vec![conn]);
    }
}

#[test]
fn unexpected_or_malformed_packets_close_only_their_connection() {
    let mut h = H::running(api::Grouping::All);
    // data before registering
    h.core.on_connected(40, Incoming::Instance, "t".into());
    h.send(40, &tuple_set(&["a"]));
    // an unknown type name
    h.core.on_packet(
        SPOUT,
        &Packet::new("foo.Bar", ReqId::ZERO, bytes::Bytes::new()),
        h.now,
    );
    // a stream message from an instance
    h.register(41, "bolt", 3);
    h.send(41, &TupleStreamMessage::default());
    // a tuple set that does not parse
    h.hello(42, "stmgr-2");
    h.send(42, &tuple_set(&["a"]));
    let out = h.round(true);
    let mut c = closed(&out);
    c.sort_unstable();
    // 41 replaced BOLT (same instance), then was closed itself
    assert_eq!(c, vec![SPOUT, BOLT, 40, 41, 42]);

    let mut h = H::running(api::Grouping::All);
    h.core.on_packet(
        SPOUT,
        &Packet::new(
            HERON_TUPLE_SET,
            ReqId::ZERO,
            bytes::Bytes::from_static(b"\xff\xff"),
        ),
        h.now,
    );
    assert_eq!(closed(&h.round(true)), vec![SPOUT]);
    // the bolt is still served: a peer's batch reaches it
    h.hello(PEER_IN, "stmgr-2");
    h.send(
        PEER_IN,
        &TupleStreamMessage {
            task_id: 3,
            set: bytes::Bytes::from_static(b"x"),
            src_task_id: 4,
            num_tuples: 1,
            restore_txid: None,
        },
    );
    assert_eq!(frames_to(&h.round(true), BOLT).len(), 1);
}

#[test]
fn back_pressure_notices_are_accepted_and_ignored() {
    let mut h = H::running(api::Grouping::All);
    h.hello(PEER_IN, "stmgr-2");
    h.send(PEER_IN, &StartBackPressureMessage::default());
    assert!(closed(&h.round(true)).is_empty());
}

#[test]
fn control_tuples_are_counted_and_ignored() {
    let mut h = H::running(api::Grouping::All);
    let control = HeronTupleSet {
        data: None,
        control: Some(HeronControlTupleSet {
            acks: vec![AckTuple {
                roots: vec![],
                ackedtuple: 5,
            }],
            fails: vec![],
            emits: vec![],
        }),
        src_task_id: 1,
    };
    h.send(SPOUT, &control);
    let out = h.round(true);
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(h.core.counters().control_sets_ignored, 1);
}

#[test]
fn tuples_without_plan_or_consumer_are_dropped_and_counted() {
    let mut h = H::new();
    h.register(SPOUT, "spout", 1);
    h.send(SPOUT, &tuple_set(&["a", "b"]));
    assert_eq!(h.core.counters().tuples_without_plan, 2);
    h.core.on_pplan(plan_with(api::Grouping::All), h.now);
    let mut set = tuple_set(&["a"]);
    set.data.as_mut().unwrap().stream.id = "nobody-listens".into();
    h.send(SPOUT, &set);
    assert_eq!(h.core.counters().tuples_without_consumer, 1);
    assert!(closed(&h.round(true)).is_empty());
}

#[test]
fn failed_or_dropped_peer_connections_are_retried_after_the_interval() {
    let mut h = H::running(api::Grouping::All);
    let first = h.attempt;
    // The plan changes but stmgr-2 does not move: no second connect.
    h.core.on_pplan(plan_with(api::Grouping::Shuffle), h.now);
    let out = h.round(true);
    assert!(
        !out.iter().any(|o| matches!(o, Out::Connect(..))),
        "{out:?}"
    );
    assert!(
        frames_to(&out, BOLT).is_empty(),
        "the new plan waits for the link to stmgr-2"
    );
    let t0 = h.now;
    h.core.on_stmgr_client_failed("stmgr-2", first, t0);
    assert_eq!(h.core.next_deadline(), Some(t0 + RECONNECT_INTERVAL));
    h.core.on_timer(t0 + RECONNECT_INTERVAL / 2);
    assert!(h.round(true).is_empty());
    h.now = t0 + RECONNECT_INTERVAL;
    h.core.on_timer(h.now);
    let second = match &h.round(true)[..] {
        [Out::Connect(id, 6002, a)] if id == "stmgr-2" => *a,
        other => panic!("{other:?}"),
    };
    assert_ne!(first, second);
    // a late success of the old attempt is closed
    h.core
        .on_stmgr_client_up("stmgr-2", first, 11, "old".into(), h.now);
    assert_eq!(closed(&h.round(true)), vec![11]);
    // the current one is used, and when it drops it is retried
    h.core
        .on_stmgr_client_up("stmgr-2", second, 12, "new".into(), h.now);
    h.core.on_closed(12, h.now);
    assert_eq!(closed(&h.round(true)), vec![12]);
    h.now += RECONNECT_INTERVAL;
    h.core.on_timer(h.now);
    assert!(matches!(&h.round(true)[..], [Out::Connect(..)]));
}

#[test]
fn a_moved_peer_is_reconnected_at_its_new_address() {
    let mut h = H::running(api::Grouping::All);
    h.core
        .on_stmgr_client_up("stmgr-2", h.attempt, PEER_OUT, "peer".into(), h.now);
    let mut moved = plan_with(api::Grouping::All);
    moved.stmgrs[1].data_port = 7002;
    h.core.on_pplan(moved, h.now);
    let out = h.round(true);
    assert_eq!(closed(&out), vec![10]);
    assert!(out
        .iter()
        .any(|o| matches!(o, Out::Connect(id, 7002, _) if id == "stmgr-2")));
    // until the new connection is up, task 4's tuples are lost, task 3's still delivered
    h.send(SPOUT, &tuple_set(&["a"]));
    let out = h.round(true);
    assert_eq!(frames_to(&out, BOLT).len(), 1);
    assert!(frames_to(&out, 10).is_empty());
}

#[test]
fn a_reconnected_instance_gets_the_tuples() {
    let mut h = H::running(api::Grouping::All);
    h.register(9, "bolt", 3);
    let out = h.round(true);
    assert_eq!(closed(&out), vec![BOLT]);
    h.send(SPOUT, &tuple_set(&["a"]));
    let out = h.round(true);
    assert_eq!(frames_to(&out, 9).len(), 1);
    assert!(frames_to(&out, BOLT).is_empty());
}

#[test]
fn a_container_without_instances_registers_at_once() {
    let mut c = cfg();
    c.instance_ids.clear();
    let mut core = Core::new(c, Instant::now());
    let actions: Vec<Action> = core.drain_actions().collect();
    assert!(matches!(&actions[..], [Action::RegisterWithTmaster(v)] if v.is_empty()));
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    const NAMES: [&str; 4] = [
        HERON_TUPLE_SET,
        TUPLE_STREAM_MESSAGE,
        REGISTER_INSTANCE_REQUEST,
        HELLO_REQUEST,
    ];

    /// Feeds one packet to a running core on the spout's connection (or, for stmgr
    /// messages, on a connection that said hello) and checks the core still routes.
    fn survive(name: &'static str, payload: Vec<u8>) {
        let mut h = H::running(api::Grouping::Fields);
        h.hello(PEER_IN, "stmgr-2");
        h.round(true);
        let conn = if name == TUPLE_STREAM_MESSAGE {
            PEER_IN
        } else {
            SPOUT
        };
        h.core
            .on_packet(conn, &Packet::new(name, ReqId::ZERO, payload.into()), h.now);
        let out = h.round(true);
        // whatever happened to that connection, the others are untouched
        assert!(closed(&out).iter().all(|&c| c == conn), "{out:?}");
        h.register(50, "spout", 1);
        h.round(true);
        h.send(50, &tuple_set(&["a", "b", "c", "d", "e", "f"]));
        assert!(
            !frames_to(&h.round(true), BOLT).is_empty(),
            "the bolt still gets tuples"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn arbitrary_payloads_never_panic(
            payload in proptest::collection::vec(any::<u8>(), 0..120),
            which in 0..NAMES.len(),
        ) {
            survive(NAMES[which], payload);
        }

        #[test]
        fn corrupted_tuple_sets_never_panic(
            flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
            cut in any::<prop::sample::Index>(),
        ) {
            let mut set = tuple_set(&["alpha", "beta", "gamma"]);
            set.data.as_mut().unwrap().tuples[1].dest_task_ids = vec![3, 4];
            let mut bytes = set.encode_to_vec();
            for (at, b) in flips {
                let i = at.index(bytes.len());
                bytes[i] ^= b;
            }
            let keep = cut.index(bytes.len() + 1);
            bytes.truncate(keep.max(bytes.len() / 2));
            survive(HERON_TUPLE_SET, bytes);
        }
    }
}

mod acking;
mod backpressure;
mod data_path;
mod stateful;
