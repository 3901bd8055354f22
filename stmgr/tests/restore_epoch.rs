//! Effectively once across a restore, over real TCP: tuples that another stream manager sent
//! after its start, read before this stream manager's own start notice, are delivered after
//! it; tuples of an earlier restore are dropped. The tmaster, the checkpoint manager, the peer
//! stream manager and the bolt instance are played by the test, so that the peer's tuples are
//! surely read before the start.

mod common;

use common::*;
use heron_proto::api;
use heron_proto::ckptmgr::{
    GetInstanceStateRequest, GetInstanceStateResponse, RegisterStMgrRequest, RegisterStMgrResponse,
    RestoreInstanceStateRequest, RestoreInstanceStateResponse, RestoreTopologyStateRequest,
    RestoreTopologyStateResponse, StartInstanceStatefulProcessing, StartStmgrStatefulProcessing,
};
use heron_proto::prost::Message as _;
use heron_proto::status;
use heron_proto::stmgr::{NewInstanceAssignmentMessage, StrMgrHelloRequest, StrMgrHelloResponse};
use heron_proto::system::{HeronDataTuple, HeronTupleSet2, StatusCode};
use heron_proto::tmanager::PublishMetrics;
use heron_testkit::plan::PlanBuilder;
use std::net::TcpListener;
use std::time::{Duration, Instant};

/// The restore the test's tmaster runs.
const TXID: i64 = 42_000_001;

/// Waits until the stream manager's published metrics count `n` tuple sets read from other
/// stream managers.
fn wait_for_sets_read(tmaster: &FakeTmaster, n: u64) {
    let deadline = Instant::now() + STEP;
    let mut read = 0;
    while read < n {
        assert!(Instant::now() < deadline, "{read} of {n} sets read");
        let m: PublishMetrics = tmaster.next_message();
        read += m
            .metrics
            .iter()
            .filter(|d| d.name == "__tuple_sets_from_stmgrs")
            .map(|d| d.value.parse::<u64>().unwrap())
            .sum::<u64>();
    }
}

/// The word of a tuple from [`from_spout`].
fn tuple_word(tuple: &[u8]) -> String {
    let t = HeronDataTuple::decode(tuple).unwrap();
    let value = &t.values[0];
    assert_eq!(value[0], 4, "a string value");
    String::from_utf8(value[1..].to_vec()).unwrap()
}

#[test]
fn a_peers_tuples_read_before_the_start_are_delivered_after_it_and_old_ones_dropped() {
    init_logs();
    with_timeout(Duration::from_secs(60), || {
        let root = tempfile::tempdir().unwrap();
        let (data, local) = (free_port(), free_port());
        let peer_listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let ckptmgr_listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let peer_port = peer_listener.local_addr().unwrap().port();
        let bolt = instance("stmgr-1", "bolt", 2);
        let plan = PlanBuilder::new(topology("spout", "bolt", api::Grouping::Shuffle))
            .topology(|t| t.config("topology.reliability.mode", "EFFECTIVELY_ONCE"))
            .stmgr("stmgr-1", data)
            .stmgr("stmgr-2", peer_port)
            .with_instance(instance("stmgr-2", "spout", 1))
            .with_instance(bolt.clone())
            .build();
        let tmaster = FakeTmaster::start(plan);
        write_location(root.path(), tmaster.port);
        let mut config = stmgr_config(root.path(), "stmgr-1", data, local, &[&bolt]);
        config.ckptmgr_port = Some(ckptmgr_listener.local_addr().unwrap().port());
        start_stmgr(config);

        let (mut bolt_peer, _) = register(local, &bolt);
        tmaster.next_registration();
        // the mesh: stmgr-1's link to stmgr-2, and stmgr-2's to stmgr-1
        let mut inbound = Peer::new(peer_listener.accept().unwrap().0);
        let p = inbound.recv();
        let hello: StrMgrHelloRequest = p.decode().unwrap();
        assert_eq!(hello.stmgr, "stmgr-1");
        inbound.reply(
            &p,
            &StrMgrHelloResponse {
                status: status(StatusCode::Ok, None),
            },
        );
        let mut outbound = Peer::connect(data);
        let hello = say_hello(&mut outbound, TOPOLOGY, "stmgr-2");
        assert_eq!(hello.status.status, StatusCode::Ok as i32);
        // the mesh is up: the instance gets the plan
        let _: NewInstanceAssignmentMessage = bolt_peer.recv_msg();
        // the checkpoint manager
        let mut ckptmgr = Peer::new(ckptmgr_listener.accept().unwrap().0);
        let p = ckptmgr.recv();
        assert!(p.is::<RegisterStMgrRequest>());
        ckptmgr.reply(
            &p,
            &RegisterStMgrResponse {
                status: status(StatusCode::Ok, None),
            },
        );

        // the restore: the bolt's state from the checkpoint manager, to the instance
        tmaster.send_all(&RestoreTopologyStateRequest {
            checkpoint_id: String::new(),
            restore_txid: TXID,
        });
        let p = ckptmgr.recv();
        let get: GetInstanceStateRequest = p.decode().unwrap();
        ckptmgr.reply(
            &p,
            &GetInstanceStateResponse {
                status: status(StatusCode::Ok, None),
                instance: get.instance,
                checkpoint_id: String::new(),
                checkpoint: None,
            },
        );
        let _: RestoreInstanceStateRequest = bolt_peer.recv_msg();
        bolt_peer.send(&RestoreInstanceStateResponse {
            status: status(StatusCode::Ok, None),
            checkpoint_id: String::new(),
        });
        let done: RestoreTopologyStateResponse = tmaster.next_message();
        assert_eq!(
            (done.status.status, done.restore_txid),
            (StatusCode::Ok as i32, TXID)
        );

        // stmgr-2 read its start first: its spout's first tuples come before our start,
        // with a set a slow stmgr-2 sent before the restore
        outbound.send(&from_spout(Some(TXID), &["new-1", "new-2"]));
        outbound.send(&from_spout(Some(TXID - 1), &["old"]));
        outbound.send(&from_spout(Some(TXID), &["new-3"]));
        wait_for_sets_read(&tmaster, 3);
        assert!(
            matches!(bolt_peer.read(Duration::from_millis(200)), Read1::Nothing),
            "nothing reaches the instance before its start"
        );

        tmaster.send_all(&StartStmgrStatefulProcessing {
            checkpoint_id: String::new(),
        });
        let _: StartInstanceStatefulProcessing = bolt_peer.recv_msg();
        let mut words = Vec::new();
        while words.len() < 3 {
            let set: HeronTupleSet2 = bolt_peer.recv_msg();
            for t in set.data.unwrap().tuples {
                words.push(tuple_word(&t));
            }
        }
        assert_eq!(words, ["new-1", "new-2", "new-3"]);
        // after the start too, the earlier restore's tuples are dropped
        outbound.send(&from_spout(Some(TXID - 1), &["old-2"]));
        outbound.send(&from_spout(Some(TXID), &["new-4"]));
        let set: HeronTupleSet2 = bolt_peer.recv_msg();
        let got: Vec<String> = set
            .data
            .unwrap()
            .tuples
            .iter()
            .map(|t| tuple_word(t))
            .collect();
        assert_eq!(got, ["new-4"]);
    });
}
