//! Bad input on either server closes that one connection; the stream manager keeps serving
//! a working spout -> bolt relay throughout.

mod common;

use bytes::BytesMut;
use common::*;
use heron_proto::codec::{encode_message, encode_raw};
use heron_proto::stmgr::{
    RegisterInstanceRequest, RegisterInstanceResponse, StrMgrHelloRequest, StrMgrHelloResponse,
    TupleStreamMessage,
};
use heron_proto::system::StatusCode;
use heron_proto::ReqId;
use std::time::Duration;

fn packet_bytes<M: heron_proto::Message + heron_proto::Name>(msg: &M) -> Vec<u8> {
    let mut buf = BytesMut::new();
    encode_message(&mut buf, &ReqId::random(), msg);
    buf.to_vec()
}

#[test]
fn bad_connections_are_closed_and_good_ones_keep_working() {
    init_logs();
    with_timeout(Duration::from_secs(60), || {
        let r = Relay::start(|_| {});
        let (data, local, spout, bolt) = (r.data, r.local, &r.spout, &r.bolt);
        let mut peers = register_all(&[(local, spout), (local, bolt)]);
        let (mut b, _) = peers.pop().unwrap();
        let (mut s, _) = peers.pop().unwrap();
        assert_relay(&mut s, &mut b, "start");

        let registration = packet_bytes(&RegisterInstanceRequest {
            instance: instance("stmgr-1", "spout", 1),
            topology_name: TOPOLOGY.into(),
            topology_id: TOPOLOGY_ID.into(),
        });
        let mut unknown_type = BytesMut::new();
        encode_raw(
            &mut unknown_type,
            "heron.proto.system.NoSuchMessage",
            &ReqId::ZERO,
            b"",
        );
        let mut oversized = ((MAX_PACKET + 1) as u32).to_be_bytes().to_vec();
        oversized.extend_from_slice(&[0u8; 64]);
        let mut bad_name_length = 60u32.to_be_bytes().to_vec();
        bad_name_length.extend_from_slice(&[0xff; 60]);
        let tuples_before_register = packet_bytes(&words("spout", 1, &["x".to_string()]));

        let cases: Vec<(&str, u16, Vec<u8>, bool)> = vec![
            (
                "garbage",
                local,
                b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
                false,
            ),
            (
                "bad type-name length",
                local,
                bad_name_length.clone(),
                false,
            ),
            (
                "truncated packet",
                local,
                registration[..registration.len() / 2].to_vec(),
                true,
            ),
            ("oversized header", local, oversized.clone(), false),
            ("unknown type name", local, unknown_type.to_vec(), false),
            (
                "tuples before registering",
                local,
                tuples_before_register,
                false,
            ),
            (
                "garbage to the stmgr port",
                data,
                b"\x00\x00\x00\x30garbage garbage".to_vec(),
                true,
            ),
            ("oversized header to the stmgr port", data, oversized, false),
            (
                "tuple stream before hello",
                data,
                packet_bytes(&TupleStreamMessage::default()),
                false,
            ),
            (
                "unknown type name to the stmgr port",
                data,
                unknown_type.to_vec(),
                false,
            ),
        ];
        for (what, port, bytes, then_shut) in cases {
            let mut bad = Peer::connect(port);
            bad.send_raw(&bytes);
            if then_shut {
                bad.stream.shutdown(std::net::Shutdown::Write).unwrap();
            }
            let before = bad.expect_closed();
            assert!(
                before.is_empty(),
                "{what}: no answer expected, got {before:?}"
            );
            assert_relay(&mut s, &mut b, what);
        }

        // Refused registration and hello: NOTOK, then closed.
        let mut stranger = instance("stmgr-1", "spout", 9);
        stranger.instance_id = "container_1_spout_9".into();
        let mut bad = Peer::connect(local);
        bad.send(&RegisterInstanceRequest {
            instance: stranger,
            topology_name: TOPOLOGY.into(),
            topology_id: TOPOLOGY_ID.into(),
        });
        let resp: RegisterInstanceResponse = bad.expect_closed()[0].decode().unwrap();
        assert_eq!(resp.status.status, StatusCode::Notok as i32);
        let mut bad = Peer::connect(data);
        bad.send(&StrMgrHelloRequest {
            topology_name: TOPOLOGY.into(),
            topology_id: "it-2".into(),
            stmgr: "stmgr-2".into(),
        });
        let resp: StrMgrHelloResponse = bad.expect_closed()[0].decode().unwrap();
        assert_eq!(resp.status.status, StatusCode::Notok as i32);
        assert_relay(&mut s, &mut b, "after refusals");

        // A registered instance that misbehaves is closed too; the others go on.
        s.send_raw(&unknown_type);
        s.expect_closed();
        let (mut s2, resp) = register(local, spout);
        assert_eq!(resp.status.status, StatusCode::Ok as i32);
        assert!(resp.pplan.is_some(), "a late registration gets the plan");
        assert_relay(&mut s2, &mut b, "re-registered spout");
    });
}
