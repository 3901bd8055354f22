use super::*;
use crate::stmgr::StrMgrHelloRequest;
use crate::system::{HeronTupleSet2, Status, StatusCode};

fn hello() -> StrMgrHelloRequest {
    StrMgrHelloRequest {
        topology_name: "t".into(),
        topology_id: "t-1".into(),
        stmgr: "stmgr-1".into(),
    }
}

#[test]
fn byte_vector_of_a_hello() {
    let mut buf = BytesMut::new();
    encode_message(&mut buf, &ReqId([7; 32]), &hello());
    let name = b"heron.proto.stmgr.StrMgrHelloRequest";
    // payload: field 1 "t", field 2 "t-1", field 3 "stmgr-1"
    let payload: &[u8] = &[
        0x0a, 1, b't', 0x12, 3, b't', b'-', b'1', 0x1a, 7, b's', b't', b'm', b'g', b'r', b'-', b'1',
    ];
    let mut want = Vec::new();
    want.extend_from_slice(&((4 + name.len() + 32 + 4 + payload.len()) as u32).to_be_bytes());
    want.extend_from_slice(&(name.len() as i32).to_be_bytes());
    want.extend_from_slice(name);
    want.extend_from_slice(&[7; 32]);
    want.extend_from_slice(&(payload.len() as i32).to_be_bytes());
    want.extend_from_slice(payload);
    assert_eq!(&buf[..], &want[..]);

    let p = HeronCodec::new(0).decode(&mut buf).unwrap().unwrap();
    assert!(buf.is_empty());
    assert_eq!(p.type_name(), "heron.proto.stmgr.StrMgrHelloRequest");
    assert_eq!(p.reqid, ReqId([7; 32]));
    assert_eq!(p.decode::<StrMgrHelloRequest>().unwrap(), hello());
}

#[test]
fn required_fields_with_default_values_are_written() {
    // NOTOK=2 is not the proto2 default (OK=1), but OK itself must be written too.
    let s = Status {
        status: StatusCode::Ok as i32,
        message: None,
    };
    assert_eq!(s.encode_to_vec(), vec![0x08, 0x01]);
    let t = HeronTupleSet2 {
        data: None,
        control: None,
        src_task_id: 0,
    };
    assert_eq!(t.encode_to_vec(), vec![0x18, 0x00]);
}

#[test]
fn round_trip_many_packets_split_anywhere() {
    let mut wire = BytesMut::new();
    for i in 0..50 {
        let mut h = hello();
        h.stmgr = format!("stmgr-{i}");
        encode_message(&mut wire, &ReqId::random(), &h);
    }
    let wire = wire.freeze();
    for chunk in [1usize, 3, 7, 64, 1000] {
        let mut codec = HeronCodec::default();
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for piece in wire.chunks(chunk) {
            buf.extend_from_slice(piece);
            while let Some(p) = codec.decode(&mut buf).unwrap() {
                got.push(p.decode::<StrMgrHelloRequest>().unwrap().stmgr);
            }
        }
        assert_eq!(got.len(), 50);
        assert_eq!(got[49], "stmgr-49");
        assert!(codec.decode_eof(&mut buf).unwrap().is_none());
    }
}

#[test]
fn truncated_packet_is_an_error_at_eof() {
    let mut wire = BytesMut::new();
    encode_message(&mut wire, &ReqId::ZERO, &hello());
    let cut = wire.len() - 3;
    let mut buf = BytesMut::from(&wire[..cut]);
    let mut codec = HeronCodec::default();
    assert!(codec.decode(&mut buf).unwrap().is_none());
    match codec.decode_eof(&mut buf) {
        Err(CodecError::Truncated(n)) => assert_eq!(n, cut),
        other => panic!("expected Truncated, got {other:?}"),
    }
}

#[test]
fn oversized_packet_is_refused_from_its_header() {
    let mut buf = BytesMut::new();
    buf.put_u32(11 * 1024 * 1024);
    let mut codec = HeronCodec::default();
    match codec.decode(&mut buf) {
        Err(CodecError::TooLarge { size, max }) => {
            assert_eq!(size, 11 * 1024 * 1024);
            assert_eq!(max, 10 * 1024 * 1024);
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    // 0 means unlimited: the same header just waits for more bytes.
    let mut buf = BytesMut::new();
    buf.put_u32(11 * 1024 * 1024);
    assert!(HeronCodec::new(0).decode(&mut buf).unwrap().is_none());
}

#[test]
fn garbage_is_malformed() {
    for garbage in [
        &b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"[..],
        &[0, 0, 0, 10, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0][..],
        &[0, 0, 0, 100, 0xff, 0xff, 0xff, 0xff][..],
    ] {
        let mut buf = BytesMut::from(garbage);
        let r = HeronCodec::default().decode(&mut buf);
        assert!(
            matches!(
                r,
                Err(CodecError::Malformed(_)) | Err(CodecError::TooLarge { .. })
            ),
            "{garbage:?} gave {r:?}"
        );
    }
    // payload length that disagrees with the data size
    let mut buf = BytesMut::new();
    encode_raw(&mut buf, "a.B", &ReqId::ZERO, b"xyz");
    let n = buf.len();
    buf[n - 4 - 1] = 9; // last byte of the payload length
    assert!(matches!(
        HeronCodec::default().decode(&mut buf),
        Err(CodecError::Malformed(_))
    ));
}

#[test]
fn unknown_type_is_decoded_but_refused_as_the_wrong_message() {
    let mut buf = BytesMut::new();
    encode_raw(
        &mut buf,
        "heron.proto.nope.Nothing",
        &ReqId::ZERO,
        b"\x08\x01",
    );
    let p = HeronCodec::default().decode(&mut buf).unwrap().unwrap();
    assert_eq!(p.type_name(), "heron.proto.nope.Nothing");
    assert!(matches!(
        p.decode::<StrMgrHelloRequest>(),
        Err(CodecError::UnexpectedType { .. })
    ));
}

#[test]
fn type_names_are_heron_names() {
    assert_eq!(
        crate::tmanager::TManagerLocation::full_name(),
        "heron.proto.tmanager.TManagerLocation"
    );
    assert_eq!(
        crate::system::HeronTupleSet2::full_name(),
        "heron.proto.system.HeronTupleSet2"
    );
    assert_eq!(
        crate::api::Topology::full_name(),
        "heron.proto.api.Topology"
    );
}

proptest::proptest! {
    #[test]
    fn any_payload_round_trips(name in "[a-z]{1,10}(\\.[A-Za-z]{1,10}){1,3}", payload in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
        let mut buf = BytesMut::new();
        let id = ReqId::random();
        encode_raw(&mut buf, &name, &id, &payload);
        let p = HeronCodec::default().decode(&mut buf).unwrap().unwrap();
        proptest::prop_assert_eq!(p.type_name(), name.as_str());
        proptest::prop_assert_eq!(p.reqid, id);
        proptest::prop_assert_eq!(&p.payload[..], &payload[..]);
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
        let mut buf = BytesMut::from(&bytes[..]);
        let mut codec = HeronCodec::new(4096);
        while let Ok(Some(_)) = codec.decode(&mut buf) {}
    }
}
