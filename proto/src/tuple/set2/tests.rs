use super::*;
use crate::api::StreamId;
use crate::system::{
    AckTuple, HeronControlTupleSet, HeronDataTuple, HeronDataTupleSet2, HeronTupleSet2, RootId,
};
use crate::tuple::{prost_tuple, stream_field};
use crate::Message;

fn tuple(key: i64, roots: &[(i32, i64)], values: &[&[u8]]) -> Bytes {
    prost_tuple(key, roots, values, &[]).encode_to_vec().into()
}

fn data(id: &str, component: &str, tuples: Vec<Bytes>) -> HeronDataTupleSet2 {
    HeronDataTupleSet2 {
        stream: StreamId {
            id: id.into(),
            component_name: component.into(),
        },
        tuples,
    }
}

/// Checks `parse_tuple_set2` against prost on `payload`.
fn agrees_with_prost(payload: &[u8]) -> ReceivedSet {
    let expected = HeronTupleSet2::decode(payload).expect("prost reads it");
    let got = parse_tuple_set2(&Bytes::copy_from_slice(payload)).expect("we read it");
    assert_eq!(got.src_task_id, expected.src_task_id);
    match (&got.data, &expected.data) {
        (Some(g), Some(e)) => {
            assert_eq!(g.stream_id(), e.stream.id);
            assert_eq!(g.component(), e.stream.component_name);
            assert_eq!(g.src_task_id(), expected.src_task_id);
            assert_eq!(g.len(), e.tuples.len());
            assert_eq!(g.is_empty(), e.tuples.is_empty());
            let tuples: Vec<&[u8]> = g.tuples().collect();
            let want: Vec<&[u8]> = e.tuples.iter().map(|t| &t[..]).collect();
            assert_eq!(tuples, want);
        }
        (None, None) => {}
        (g, e) => panic!("data: got {g:?}, prost {e:?}"),
    }
    let control = got
        .control
        .as_ref()
        .map(|c| HeronControlTupleSet::decode(&c[..]).unwrap());
    assert_eq!(control, expected.control);
    got
}

fn sample() -> HeronTupleSet2 {
    HeronTupleSet2 {
        data: Some(data(
            "words",
            "split",
            vec![
                tuple(7, &[(1, 9)], &[b"\x04a", b"\x02\x01"]),
                tuple(0, &[], &[b"\x04bb", b"\x02\x02"]),
                tuple(-3, &[(1, 5), (-2, i64::MIN)], &[b"\x00"]),
                Bytes::new(),
            ],
        )),
        control: None,
        src_task_id: -7,
    }
}

#[test]
fn reads_what_prost_writes() {
    let set = agrees_with_prost(&sample().encode_to_vec());
    assert_eq!(set.data.unwrap().len(), 4);
    assert!(set.control.is_none());

    // Control only, and both.
    let control = HeronControlTupleSet {
        acks: vec![AckTuple {
            roots: vec![RootId { taskid: 2, key: 3 }],
            ackedtuple: 4,
        }],
        ..Default::default()
    };
    let only = HeronTupleSet2 {
        data: None,
        control: Some(control.clone()),
        src_task_id: 3,
    };
    assert!(agrees_with_prost(&only.encode_to_vec()).data.is_none());
    let both = HeronTupleSet2 {
        control: Some(control),
        ..sample()
    };
    let set = agrees_with_prost(&both.encode_to_vec());
    assert!(set.data.is_some() && set.control.is_some());

    // Empty sets, an empty data part, a missing stream id.
    agrees_with_prost(&[]);
    let empty = HeronTupleSet2 {
        data: Some(data("", "", vec![])),
        ..sample()
    };
    let set = agrees_with_prost(&empty.encode_to_vec());
    assert!(set.data.unwrap().is_empty());
    agrees_with_prost(&[0x0a, 0x00, 0x18, 0x01]);
}

#[test]
fn the_data_part_is_a_slice_of_the_packet() {
    let payload = Bytes::from(sample().encode_to_vec());
    let set = parse_tuple_set2(&payload).unwrap();
    let d = set.data.unwrap();
    let first = d.tuples().next().unwrap();
    let range = payload.as_ptr_range();
    assert!(range.contains(&first.as_ptr()), "no copy");
}

/// Appends a length-delimited field.
fn put_len(out: &mut BytesMut, field: u8, bytes: &[u8]) {
    out.extend_from_slice(&[(field << 3) | 2]);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[test]
fn unknown_fields_order_and_repeats_as_prost() {
    let d = sample().data.unwrap();
    // A data part with unknown fields of every wire type, the stream after the tuples and
    // an unknown field inside the stream id.
    let mut stream = BytesMut::new();
    put_len(&mut stream, 2, b"split");
    stream.extend_from_slice(&[0x28, 0x01]);
    put_len(&mut stream, 1, b"words");
    let mut inner = BytesMut::new();
    inner.extend_from_slice(&[0x48, 0x96, 0x01]); // 9: varint
    for t in &d.tuples[..2] {
        put_len(&mut inner, 2, t);
    }
    inner.extend_from_slice(&[0x51, 1, 2, 3, 4, 5, 6, 7, 8]); // 10: fixed64
    put_len(&mut inner, 1, &stream);
    inner.extend_from_slice(&[0x5d, 1, 2, 3, 4]); // 11: fixed32
    put_len(&mut inner, 12, b"skipped");
    put_len(&mut inner, 2, &d.tuples[2]);
    let mut payload = BytesMut::new();
    payload.extend_from_slice(&[0x18, 0x05]); // src_task_id first
    payload.extend_from_slice(&[0x20, 0x01]); // 4: unknown
    put_len(&mut payload, 1, &inner);
    let set = agrees_with_prost(&payload);
    assert_eq!(set.data.unwrap().len(), 3);

    // A repeated data field merges: tuples add up, the later stream id wins.
    let mut second = BytesMut::new();
    let mut other = BytesMut::new();
    put_len(&mut other, 1, b"other");
    put_len(&mut second, 1, &other);
    put_len(&mut second, 2, &d.tuples[0]);
    put_len(&mut payload, 1, &second);
    payload.extend_from_slice(&[0x18, 0x7f]); // a later src_task_id wins
    let set = agrees_with_prost(&payload);
    let data = set.data.unwrap();
    assert_eq!((data.stream_id(), data.component()), ("other", "split"));
    assert_eq!(data.len(), 4);
    assert_eq!(data.src_task_id(), 127);
}

#[test]
fn rejects_malformed_sets() {
    let good = sample().encode_to_vec();
    let parse = |b: &[u8]| parse_tuple_set2(&Bytes::copy_from_slice(b));
    // Cut anywhere inside, the set is truncated (or, at a field boundary, still fine).
    for cut in 1..good.len() {
        let r = parse(&good[..cut]);
        assert_eq!(
            r.is_ok(),
            HeronTupleSet2::decode(&good[..cut]).is_ok(),
            "cut at {cut}: {r:?}"
        );
    }
    assert_eq!(
        parse(&[0x0a, 0x05, 0x00]).unwrap_err(),
        TupleError::Truncated
    );
    assert_eq!(
        parse(&[0x08, 0x01]).unwrap_err(),
        wrong("HeronTupleSet2", 1, &Field::Varint(1))
    );
    assert_eq!(
        parse(&[0x1a, 0x00]).unwrap_err(),
        wrong("HeronTupleSet2", 3, &Field::Len(&[]))
    );
    assert_eq!(parse(&[0x00]).unwrap_err(), TupleError::BadKey(0));
    assert_eq!(parse(&[0x23]).unwrap_err(), TupleError::BadKey(0x23));
    assert_eq!(
        parse(&[0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])
            .unwrap_err(),
        TupleError::VarintTooLong
    );
    // Inside the data part: a tuple of the wrong wire type, a truncated tuple.
    assert_eq!(
        parse(&[0x0a, 0x02, 0x10, 0x01]).unwrap_err(),
        wrong("HeronDataTupleSet2", 2, &Field::Varint(1))
    );
    assert_eq!(
        parse(&[0x0a, 0x02, 0x12, 0x05]).unwrap_err(),
        TupleError::Truncated
    );
    // Inside the stream id: a non-UTF-8 id, a component of the wrong wire type.
    assert_eq!(
        parse(&[0x0a, 0x05, 0x0a, 0x03, 0x0a, 0x01, 0xff]).unwrap_err(),
        TupleError::Utf8("StreamId.id")
    );
    assert_eq!(
        parse(&[0x0a, 0x04, 0x0a, 0x02, 0x10, 0x01]).unwrap_err(),
        wrong("StreamId", 2, &Field::Varint(1))
    );
    for bad in [
        &[0x0a, 0x05, 0x0a, 0x03, 0x0a, 0x01, 0xff][..],
        &[0x0a, 0x04, 0x0a, 0x02, 0x10, 0x01],
        &[0x0a, 0x02, 0x12, 0x05],
        &[0x08, 0x01],
    ] {
        assert!(HeronTupleSet2::decode(bad).is_err(), "prost too: {bad:?}");
    }
}

#[test]
fn a_built_set_is_what_prost_reads_locally_and_across_stream_managers() {
    use crate::stmgr::TupleStreamMessage;
    let d = sample().data.unwrap();
    let mut b = Set2Builder::default();
    for round in 0..3 {
        b.open(&stream_field("words", "split"));
        b.push(&d.tuples[0], None);
        let offset = crate::tuple::tuple_key_offset(&d.tuples[1]);
        b.push(&d.tuples[1], Some(TupleKey { offset, key: 99 }));
        b.push(
            &d.tuples[3],
            Some(TupleKey {
                offset: None,
                key: -4,
            }),
        );
        assert_eq!(b.tuples(), 3);
        let entries: usize = [
            (&d.tuples[0], None),
            (
                &d.tuples[3],
                Some(TupleKey {
                    offset: None,
                    key: 0,
                }),
            ),
        ]
        .iter()
        .map(|(t, k)| Set2Builder::entry_len(t.len(), *k))
        .sum::<usize>()
            + Set2Builder::entry_len(d.tuples[1].len(), Some(TupleKey { offset, key: 0 }));
        assert_eq!(b.body_len(), stream_field("words", "split").len() + entries);
        let (set, n) = if round == 0 {
            (HeronTupleSet2::decode(b.tuple_set(-7)).unwrap(), 3)
        } else {
            // round 2: with the restore txid, the longest one (a negative varint)
            let txid = (round == 2).then_some(i64::MIN);
            let m = TupleStreamMessage::decode(b.stream_message(12, -7, txid)).unwrap();
            assert_eq!((m.task_id, m.src_task_id, m.num_tuples), (12, -7, 3));
            assert_eq!(m.restore_txid, txid);
            (HeronTupleSet2::decode(&m.set[..]).unwrap(), 3)
        };
        assert_eq!(set.src_task_id, -7);
        let data = set.data.unwrap();
        assert_eq!(data.stream.id, "words");
        assert_eq!(data.tuples.len(), n);
        assert_eq!(data.tuples[0], d.tuples[0]);
        let keys: Vec<i64> = data.tuples[1..]
            .iter()
            .map(|t| HeronDataTuple::decode(&t[..]).unwrap().key)
            .collect();
        assert_eq!(keys, vec![99, -4]);
    }
}

#[test]
fn control_sets_and_their_wrappers_are_what_prost_reads() {
    let control = [0x0a, 0x02, 0x11, 0x00];
    let mut set = BytesMut::new();
    put_control_set2(&mut set, &control, 5);
    let parts = split_set2(&set).unwrap();
    assert_eq!(
        (parts.data, parts.control, parts.src_task),
        (None, Some(&control[..]), 5)
    );
    let mut msg = BytesMut::new();
    put_stream_message(&mut msg, 3, &set, 5, 1);
    let m = crate::stmgr::TupleStreamMessage::decode(&msg[..]).unwrap();
    assert_eq!((m.task_id, m.src_task_id, m.num_tuples), (3, 5, 1));
    assert_eq!(&m.set[..], &set[..]);
    assert!(split_set2(&[0x08, 0x01]).is_err());
    let data = stream_field("s", "c");
    let mut set = BytesMut::new();
    put_data_set2(&mut set, &data, -1);
    let decoded = HeronTupleSet2::decode(&set[..]).unwrap();
    assert_eq!(decoded.src_task_id, -1);
    assert_eq!(decoded.data.unwrap().stream.id, "s");
}
