//! The local mesh socket (`heron_flow::local_socket::mesh_name`): a stream manager dials a
//! peer of its own host on the peer's local mesh socket rather than its TCP port, takes a
//! peer's hello on its own, and tuples cross it as they cross TCP. The peer stream manager,
//! the tmaster and the bolt instance are played by the test.

mod common;

use common::*;
use heron_proto::api;
use heron_proto::status;
use heron_proto::stmgr::{NewInstanceAssignmentMessage, StrMgrHelloRequest, StrMgrHelloResponse};
use heron_proto::system::{HeronTupleSet2, StatusCode};
use heron_testkit::plan::PlanBuilder;
use heron_testkit::wait_for;
use std::net::TcpListener;
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::{Duration, Instant};

/// stmgr-1, run here with bolt task 2, whose plan puts spout task 1 on stmgr-2 at
/// 127.0.0.1:`peer_port` (played by the test); the bolt registered. Returns what must live as
/// long as the test, stmgr-1's data port, and the bolt's connection.
fn start_beside_peer(peer_port: u16) -> (tempfile::TempDir, FakeTmaster, u16, Peer) {
    let root = tempfile::tempdir().unwrap();
    let (data, local) = (free_port(), free_port());
    let bolt = instance("stmgr-1", "bolt", 2);
    let plan = PlanBuilder::new(topology("spout", "bolt", api::Grouping::Shuffle))
        .stmgr("stmgr-1", data)
        .stmgr("stmgr-2", peer_port)
        .with_instance(instance("stmgr-2", "spout", 1))
        .with_instance(bolt.clone())
        .build();
    let tmaster = FakeTmaster::start(plan);
    write_location(root.path(), tmaster.port);
    start_stmgr(stmgr_config(root.path(), "stmgr-1", data, local, &[&bolt]));
    let (bolt_peer, _) = register(local, &bolt);
    tmaster.next_registration();
    (root, tmaster, data, bolt_peer)
}

/// Accepts one connection on `listener` within [`STEP`].
fn accept_within(listener: &UnixListener) -> UnixStream {
    listener.set_nonblocking(true).unwrap();
    let stream = wait_for(STEP, "stmgr-1's connection on the mesh socket", || {
        listener.accept().ok().map(|(s, _)| s)
    });
    stream.set_nonblocking(false).unwrap();
    stream
}

#[test]
fn a_peer_on_the_same_host_is_dialed_and_taken_on_the_local_mesh_socket() {
    init_logs();
    with_timeout(Duration::from_secs(60), || {
        // stmgr-2, played here, on 127.0.0.1 as stmgr-1: its TCP port and its mesh socket
        let peer_tcp = TcpListener::bind("127.0.0.1:0").unwrap();
        let peer_port = peer_tcp.local_addr().unwrap().port();
        let peer_mesh = UnixListener::bind_addr(
            &heron_flow::local_socket::mesh_address("127.0.0.1", peer_port).unwrap(),
        )
        .unwrap();
        let (_root, _tmaster, data, mut bolt_peer) = start_beside_peer(peer_port);

        // stmgr-1 dials stmgr-2 on the mesh socket, not on TCP
        let mut inbound = Peer::over(Conn::Local(accept_within(&peer_mesh)));
        let p = inbound.recv();
        let hello: StrMgrHelloRequest = p.decode().unwrap();
        assert_eq!(hello.stmgr, "stmgr-1");
        inbound.reply(
            &p,
            &StrMgrHelloResponse {
                status: status(StatusCode::Ok, None),
            },
        );
        peer_tcp.set_nonblocking(true).unwrap();
        assert!(
            peer_tcp.accept().is_err(),
            "stmgr-1 also connected over TCP"
        );

        // stmgr-2 says hello on stmgr-1's mesh socket, bound from the start
        let addr = heron_flow::local_socket::mesh_address("127.0.0.1", data).unwrap();
        let mut outbound = Peer::over(Conn::Local(UnixStream::connect_addr(&addr).unwrap()));
        let hello = say_hello(&mut outbound, TOPOLOGY, "stmgr-2");
        assert_eq!(hello.status.status, StatusCode::Ok as i32);
        // the mesh is up: the instance gets the plan
        let _: NewInstanceAssignmentMessage = bolt_peer.recv_msg();

        // the spout's tuples cross the mesh socket to the bolt, all of them
        let words: Vec<String> = (0..100).map(|i| format!("w{i}")).collect();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        for _ in 0..3 {
            outbound.send(&from_spout(None, &words));
        }
        let mut got = 0;
        let deadline = Instant::now() + STEP;
        while got < 300 {
            assert!(Instant::now() < deadline, "{got} of 300 tuples delivered");
            if let Read1::Packet(p) = bolt_peer.read(Duration::from_millis(100)) {
                if let Ok(set) = p.decode::<HeronTupleSet2>() {
                    got += set.data.map_or(0, |d| d.tuples.len());
                }
            }
        }
        assert_eq!(got, 300);

        // a stranger's hello on the mesh socket is refused as on TCP
        let mut stranger = Peer::over(Conn::Local(UnixStream::connect_addr(&addr).unwrap()));
        let refused = say_hello(&mut stranger, "another", "stmgr-2");
        assert_ne!(refused.status.status, StatusCode::Ok as i32);
    });
}

#[test]
fn a_peer_without_a_mesh_socket_is_dialed_on_tcp() {
    init_logs();
    with_timeout(Duration::from_secs(60), || {
        // stmgr-2 of another runtime: a TCP port, no mesh socket
        let peer_tcp = TcpListener::bind("127.0.0.1:0").unwrap();
        let peer_port = peer_tcp.local_addr().unwrap().port();
        let _stmgr = start_beside_peer(peer_port);
        let mut inbound = Peer::new(peer_tcp.accept().unwrap().0);
        let hello: StrMgrHelloRequest = inbound.recv().decode().unwrap();
        assert_eq!(hello.stmgr, "stmgr-1");
    });
}
