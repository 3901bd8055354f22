//! Bad input on the server port is refused per connection; the tmaster keeps serving.

mod common;

use bytes::{BufMut, BytesMut};
use common::*;
use heron_proto::codec::encode_raw;
use heron_proto::stmgr::NewPhysicalPlanMessage;
use heron_proto::system::StatusCode;
use heron_proto::tmanager::StMgrRegisterRequest;
use heron_proto::{Name, ReqId};
use heron_statemgr::{StateDir, StateManager, StateManagerExt};

#[test]
fn bad_input_is_refused_and_good_stmgrs_still_get_their_plan() {
    let f = Fixture::new(2);
    let tmaster = f.start();
    let port = f.config.server_port;

    // Text where a packet should be: its "size" is far over the maximum.
    let mut c = Client::connect(port);
    c.send_raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    c.expect_closed();

    // Garbage with a plausible size but an impossible type-name length.
    let mut c = Client::connect(port);
    c.send_raw(&[0, 0, 0, 60, 0x7f, 0xff, 0xff, 0xff]);
    c.send_raw(&[0xab; 60]);
    c.expect_closed();

    // An oversized packet: 17 MiB announced (the limit is 16 MiB); refused on the header.
    let mut c = Client::connect(port);
    let mut b = BytesMut::new();
    b.put_u32(17 * 1024 * 1024);
    b.put_i32(10);
    b.put_slice(b"heron.x.Yz");
    c.send_raw(&b);
    c.expect_closed();

    // A truncated packet: the stream ends half way through.
    let mut c = Client::connect(port);
    let mut b = BytesMut::new();
    encode_raw(
        &mut b,
        &StMgrRegisterRequest::full_name(),
        &ReqId::random(),
        &[0; 40],
    );
    c.send_raw(&b[..b.len() - 25]);
    c.shutdown_write();
    c.expect_closed();

    // A known type whose payload does not decode.
    let mut c = Client::connect(port);
    let mut b = BytesMut::new();
    encode_raw(
        &mut b,
        &StMgrRegisterRequest::full_name(),
        &ReqId::random(),
        &[0xff, 0xff, 0xff],
    );
    c.send_raw(&b);
    c.expect_closed();

    // An unknown message type closes the connection.
    let mut c = Client::connect(port);
    let mut b = BytesMut::new();
    encode_raw(
        &mut b,
        "heron.proto.system.NoSuchMessage",
        &ReqId::random(),
        b"\x08\x01",
    );
    c.send_raw(&b);
    c.expect_closed();

    // A heartbeat before registering is refused; the connection stays usable.
    let mut c = Client::connect(port);
    assert_eq!(c.heartbeat(), StatusCode::Notok);

    // A register from a stmgr the packing plan does not have.
    let mut req = f.register_request(1, 9000);
    req.stmgr.id = "stmgr-7".into();
    let r = c.register(&req);
    assert_eq!(status_of(&r), StatusCode::InvalidStmgr);
    assert!(r.pplan.is_none());

    // The good stream managers still register and get their plan.
    let mut s1 = Client::connect(port);
    let mut s2 = Client::connect(port);
    assert_eq!(
        status_of(&s1.register(&f.register_request(1, 9001))),
        StatusCode::Ok
    );
    assert_eq!(
        status_of(&s2.register(&f.register_request(2, 9002))),
        StatusCode::Ok
    );
    let p1 = s1.recv_as::<NewPhysicalPlanMessage>().new_pplan;
    let p2 = s2.recv_as::<NewPhysicalPlanMessage>().new_pplan;
    assert_eq!(p1, p2);
    assert_eq!(p1.instances.len(), 4);
    assert_eq!(f.state.get_physical_plan(NAME).unwrap(), Some(p1));
    assert!(!tmaster.is_finished());

    f.state.delete(StateDir::TManagers, NAME).unwrap();
    assert!(join(tmaster).is_err());
}
