//! The seed inputs of every target: real messages and files, so the fuzzer starts past the
//! framing and the first checks. `HERONRS_WRITE_FUZZ_SEEDS=1 cargo test -p heron-fuzz --test
//! replay` writes them to `fuzz/corpus/<target>/`.

use bytes::Bytes;
use heron_api::window::WINDOW_STATE_KEY;
use heron_api::{Bolt, OutputCollector, State, Stateful};
use heron_proto::api::StreamId;
use heron_proto::ckptmgr::{
    CleanStatefulCheckpointRequest, GetInstanceStateRequest, InitiateStatefulCheckpoint,
    InstanceStateCheckpoint, InstanceStateStored, RegisterStMgrRequest, ResetTopologyState,
    RestoreTopologyStateResponse, SaveInstanceStateRequest,
};
use heron_proto::codec::{frame, ReqId};
use heron_proto::stmgr::{
    NewInstanceAssignmentMessage, RegisterInstanceRequest, StartBackPressureMessage,
    StrMgrHelloRequest, TupleStreamMessage,
};
use heron_proto::system::{
    AckTuple, HeronControlTupleSet, HeronDataTupleSet, HeronDataTupleSet2, HeronTupleSet,
    HeronTupleSet2, RootId,
};
use heron_proto::tmanager::{PublishMetrics, StMgrHeartbeatRequest, StMgrRegisterRequest};
use heron_proto::{Message, Name};
use heron_stmgr::bench_api::instance;
use heron_testkit::plan::tuple;

use crate::daemons::plan;
use crate::inputs::{feed, window_configs, windowed};

fn f<M: Message + Name>(conn: u8, m: &M) -> Vec<u8> {
    frame(&ReqId([conn; heron_proto::codec::REQID_LEN]), m).to_vec()
}

fn stream(component: &str) -> StreamId {
    StreamId {
        id: "default".into(),
        component_name: component.into(),
    }
}

fn control() -> HeronControlTupleSet {
    let ack = AckTuple {
        roots: vec![RootId { taskid: 1, key: 7 }],
        ackedtuple: 7,
    };
    HeronControlTupleSet {
        acks: vec![ack.clone()],
        fails: vec![],
        emits: vec![ack],
    }
}

/// A tuple set an instance sends: words from the spout, with acks.
fn from_instance() -> HeronTupleSet {
    let mut t = heron_proto::system::HeronDataTuple::decode(&tuple(&[b"\x04cow"], &[])[..])
        .expect("a tuple");
    t.roots = vec![RootId { taskid: 1, key: 7 }];
    t.key = 7;
    HeronTupleSet {
        data: Some(HeronDataTupleSet {
            stream: stream("spout"),
            tuples: vec![t.clone(), t],
        }),
        control: Some(control()),
        src_task_id: 1,
    }
}

/// A tuple set a stream manager forwards: already-encoded tuples.
fn set2() -> HeronTupleSet2 {
    HeronTupleSet2 {
        data: Some(HeronDataTupleSet2 {
            stream: stream("spout"),
            tuples: vec![
                Bytes::from(tuple(&[b"\x04cow"], &[])),
                Bytes::from(tuple(&[b"\x04moon", b"\x02\x01\0\0\0\0\0\0\0"], &[3])),
            ],
        }),
        control: Some(control()),
        src_task_id: 1,
    }
}

fn stmgr_packets() -> Vec<Vec<u8>> {
    let set = set2().encode_to_vec();
    let stream_message = TupleStreamMessage {
        task_id: 3,
        set: set.into(),
        src_task_id: 1,
        num_tuples: 2,
        restore_txid: None,
    };
    let register = RegisterInstanceRequest {
        instance: instance("stmgr-1", "bolt", 3),
        topology_name: "wc".into(),
        topology_id: "wc-1".into(),
    };
    let hello = StrMgrHelloRequest {
        topology_name: "wc".into(),
        topology_id: "wc-1".into(),
        stmgr: "stmgr-2".into(),
    };
    let pressure = StartBackPressureMessage {
        topology_name: "wc".into(),
        topology_id: "wc-1".into(),
        stmgr: "stmgr-2".into(),
        message_id: "m".into(),
    };
    vec![
        f(0, &from_instance()),
        [f(0, &from_instance()), f(1, &from_instance())].concat(),
        f(2, &stream_message),
        [f(2, &stream_message), f(2, &pressure)].concat(),
        f(3, &register),
        f(4, &hello),
        f(
            2,
            &InitiateStatefulCheckpoint {
                checkpoint_id: "1-1".into(),
            },
        ),
    ]
}

fn tmaster_packets() -> Vec<Vec<u8>> {
    let register = StMgrRegisterRequest {
        stmgr: plan("ATLEAST_ONCE").stmgrs[0].clone(),
        instances: vec![instance("stmgr-1", "spout", 1)],
    };
    let stored = InstanceStateStored {
        checkpoint_id: "1-1".into(),
        instance: instance("stmgr-1", "spout", 1),
    };
    let restored = RestoreTopologyStateResponse {
        status: heron_proto::status(heron_proto::system::StatusCode::Ok, None),
        checkpoint_id: "1-1".into(),
        restore_txid: 1,
    };
    let reset = ResetTopologyState {
        dead_stmgr: Some("stmgr-2".into()),
        dead_taskid: None,
        reason: "gone".into(),
    };
    let heartbeat = StMgrHeartbeatRequest {
        heartbeat_time: 1,
        ..Default::default()
    };
    vec![
        [vec![0], f(0, &register), f(0, &heartbeat)].concat(),
        [vec![1], f(0, &register), f(0, &PublishMetrics::default())].concat(),
        [
            vec![1],
            f(0, &register),
            f(0, &stored),
            f(0, &restored),
            f(0, &reset),
        ]
        .concat(),
    ]
}

fn ckptmgr_packets() -> Vec<Vec<u8>> {
    let pplan = plan("EFFECTIVELY_ONCE");
    let register = RegisterStMgrRequest {
        topology_name: "wc".into(),
        topology_id: "wc-1".into(),
        stmgr_id: "stmgr-1".into(),
        physical_plan: pplan,
    };
    let checkpoint = InstanceStateCheckpoint {
        checkpoint_id: "1-1".into(),
        state: Some(Bytes::from_static(b"HRST\x01\0\0\0\0")),
        state_location: None,
    };
    let save = SaveInstanceStateRequest {
        instance: instance("stmgr-1", "spout", 1),
        checkpoint,
    };
    let get = GetInstanceStateRequest {
        instance: instance("stmgr-1", "spout", 1),
        checkpoint_id: "1-1".into(),
    };
    let clean = CleanStatefulCheckpointRequest {
        oldest_checkpoint_preserved: Some("1-1".into()),
        clean_all_checkpoints: Some(false),
    };
    vec![[f(0, &register), f(0, &save), f(0, &get), f(0, &clean)].concat()]
}

fn instance_packets() -> Vec<Vec<u8>> {
    vec![
        f(0, &set2()),
        f(
            0,
            &NewInstanceAssignmentMessage {
                pplan: plan("ATLEAST_ONCE"),
            },
        ),
    ]
}

/// A windowed bolt's checkpointed state after a few tuples, for each kind of windows.
fn window_states() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for config in window_configs() {
        let (mut bolt, mut emitter) = windowed(config, None).expect("a clean start");
        feed(&mut bolt, &mut emitter, &[(1, 5), (2, 9), (3, 30), (4, 31)]);
        bolt.on_watermark(20, &mut OutputCollector::new(&mut emitter));
        let mut s = State::new();
        bolt.pre_save("1-1", &mut s);
        out.push(s.get_bytes(WINDOW_STATE_KEY).unwrap_or_default().to_vec());
        s.put("own", "state");
        out.push(s.encode());
    }
    out
}

fn multilang_messages() -> Vec<Vec<u8>> {
    let json = [
        r#"{"pid": 1234}"#,
        r#"{"command": "emit", "tuple": ["cow", 1], "anchors": ["7"], "stream": "default"}"#,
        r#"{"command": "ack", "id": "7"}"#,
        r#"{"command": "fail", "id": "8"}"#,
        r#"{"command": "sync"}"#,
        r#"{"command": "log", "msg": "hi", "level": 2}"#,
        r#"{"command": "error", "msg": "boom"}"#,
        r#"{"command": "metrics", "name": "m", "params": 3}"#,
        r#"{"command": "emit", "tuple": [{"a": [1.5, null, true]}], "need_task_ids": true, "task": 3}"#,
    ];
    let mut out: Vec<Vec<u8>> = json
        .iter()
        .map(|m| [b"\x40".as_slice(), m.as_bytes(), b"\nend\n"].concat())
        .collect();
    let all: String = json.iter().map(|m| format!("{m}\nend\n")).collect();
    out.push([b"\x06".as_slice(), all.as_bytes()].concat());
    // msgpack {"command": "sync"}, then {"command": "ack", "id": 7}
    out.push(b"\x41\x81\xa7command\xa4sync\x82\xa7command\xa3ack\xa2id\x07".to_vec());
    out
}

fn flux_files() -> Vec<Vec<u8>> {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../flux/tests/fixtures");
    ["all_groupings.yaml", "pystorm_wc/topology.yaml"]
        .iter()
        .filter_map(|p| std::fs::read(fixtures.join(p)).ok())
        .collect()
}

fn tracker_requests() -> Vec<Vec<u8>> {
    let pplan = plan("ATLEAST_ONCE").encode_to_vec();
    let q = "?cluster=local&environ=default&topology=wc";
    [
        "/topologies/physicalplan",
        "/topologies/logicalplan",
        "/topologies/packingplan",
        "/topologies/executionstate",
        "/topologies/checkpoints",
        "/topologies/metrics",
    ]
    .iter()
    .map(|p| {
        [
            format!("{p}{q}&component=bolt&metricname=__emit-count\n").as_bytes(),
            &pplan,
        ]
        .concat()
    })
    .collect()
}

/// Every target's seeds.
pub fn seeds() -> Vec<(&'static str, Vec<Vec<u8>>)> {
    let packets = [stmgr_packets(), tmaster_packets(), instance_packets()].concat();
    let sets = vec![set2().encode_to_vec(), from_instance().encode_to_vec()];
    let stmgr: Vec<Vec<u8>> = stmgr_packets()
        .into_iter()
        .flat_map(|p| (0..3u8).map(move |mode| [vec![mode], p.clone()].concat()))
        .collect();
    vec![
        ("packet", packets),
        ("tuple_sets", sets),
        ("stmgr", stmgr),
        ("tmaster", tmaster_packets()),
        ("instance", instance_packets()),
        ("ckptmgr", ckptmgr_packets()),
        ("multilang", multilang_messages()),
        ("flux", flux_files()),
        ("state", window_states()),
        ("tracker", tracker_requests()),
        ("handshake", crate::handshake::seeds()),
        ("element", crate::inputs::element_seeds()),
    ]
}
