//! The local data socket (`heron_flow::local_socket`): instances that register on it and
//! instances on TCP are one topology to the stream manager, and with a shared secret the local
//! socket asks for the same handshake as TCP.

mod common;

use common::*;
use heron_proto::system::StatusCode;
use std::time::Duration;

/// Registers `(peer, instance)` pairs (all first: the stream manager waits for all of them),
/// then waits until each has the physical plan.
fn register_peers(peers: Vec<(Peer, &heron_proto::system::Instance)>) -> Vec<Peer> {
    let registered: Vec<_> = peers
        .into_iter()
        .map(|(peer, i)| register_on(peer, i))
        .collect();
    registered
        .into_iter()
        .map(|(mut peer, resp)| {
            assert_eq!(resp.status.status, StatusCode::Ok as i32, "{resp:?}");
            if resp.pplan.is_none() {
                peer.recv_msg::<heron_proto::stmgr::NewInstanceAssignmentMessage>();
            }
            peer
        })
        .collect()
}

#[test]
fn an_instance_on_the_local_socket_and_one_on_tcp_exchange_tuples() {
    init_logs();
    with_timeout(Duration::from_secs(60), || {
        // (bound whole: its state root and tmaster live as long as the test)
        let r = Relay::start(|_| {});
        let (local, spout, bolt) = (r.local, &r.spout, &r.bolt);
        let mut peers = register_peers(vec![
            (Peer::connect_local(local), spout),
            (Peer::connect(local), bolt),
        ]);
        let mut b = peers.pop().unwrap();
        let mut s = peers.pop().unwrap();
        assert!(matches!(s.stream, Conn::Local(_)));
        assert!(matches!(b.stream, Conn::Tcp(_)));
        assert_relay(&mut s, &mut b, "local to tcp");
        assert_relay(&mut s, &mut b, "again");
    });
}

#[test]
fn the_local_socket_asks_for_the_secret_as_tcp_does() {
    init_logs();
    with_timeout(Duration::from_secs(60), || {
        let secret = heron_auth::Secret::generate();
        let r = Relay::start(|c| c.auth = Some(secret.clone()));
        let (local, spout) = (r.local, &r.spout);

        // no handshake: the stream manager's challenge comes, the registration is not taken
        // for an answer to it, and the connection is closed
        let mut p = Peer::connect_local(local);
        p.send(&heron_proto::stmgr::RegisterInstanceRequest {
            instance: spout.clone(),
            topology_name: TOPOLOGY.into(),
            topology_id: TOPOLOGY_ID.into(),
        });
        p.stream.set_read_timeout(Some(STEP)).unwrap();
        let mut got = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            match std::io::Read::read(&mut p.stream, &mut chunk) {
                Ok(0) => break,
                Ok(n) => got.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
                Err(e) => panic!("the connection was not closed: {e}"),
            }
        }
        assert!(
            got.len() <= heron_auth::handshake::CHALLENGE_LEN,
            "only the challenge came: {} bytes",
            got.len()
        );

        // the wrong secret: refused
        let mut wrong = Peer::connect_local(local);
        let other = heron_auth::Secret::generate();
        let refused = heron_auth::connect_blocking(&mut wrong.stream, &other);
        assert!(refused.is_err(), "a wrong secret passed");

        // the topology's secret: past the handshake the stream manager speaks Heron on the
        // local socket (a registration for another topology is answered, and refused, at once;
        // this stream manager has no plan to answer a good one with: its tmaster is a fake
        // without the handshake)
        let mut s = Peer::connect_local(local);
        heron_auth::connect_blocking(&mut s.stream, &secret).unwrap();
        let reqid = s.send(&heron_proto::stmgr::RegisterInstanceRequest {
            instance: spout.clone(),
            topology_name: "another".into(),
            topology_id: TOPOLOGY_ID.into(),
        });
        let p = s.recv();
        assert_eq!(p.reqid, reqid);
        let resp: heron_proto::stmgr::RegisterInstanceResponse = p.decode().unwrap();
        assert_ne!(resp.status.status, StatusCode::Ok as i32, "{resp:?}");
        let message = resp.status.message.unwrap_or_default();
        assert!(message.contains("another"), "{message}");
    });
}
