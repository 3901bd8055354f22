use super::*;
use crate::system::{HeronDataTuple, RootId};
use crate::tuple::prost_tuple;
use crate::Message;

#[test]
fn data_tuple_encoding_matches_prost() {
    let roots = [(1, -5), (-3, i64::MAX)];
    let big = vec![0u8; 300];
    let values: [&[u8]; 3] = [b"\x04word", b"\x02\x01", &big];
    let dests = [7, -2, 100_000];
    let mut buf = BytesMut::new();
    let n = put_data_tuple(&mut buf, &roots, &values, &dests);
    assert_eq!(n, buf.len());
    let expected = prost_tuple(0, &roots, &values, &dests);
    // Field 2 of the set: key byte, length, then the tuple.
    let mut f = fields(&buf);
    let (field, inner) = f.next().unwrap().unwrap();
    assert_eq!(field, 2);
    let Field::Len(inner) = inner else {
        panic!("{inner:?}")
    };
    assert!(f.next().is_none());
    assert_eq!(HeronDataTuple::decode(inner).unwrap(), expected);
    // prost writes the same bytes (dest_task_ids unpacked, as proto2 does).
    assert_eq!(inner, &expected.encode_to_vec()[..]);

    let (mut vs, mut rs) = (Vec::new(), Vec::new());
    let key = walk_data_tuple(
        inner,
        |t, k| rs.push((t, k)),
        |v| {
            vs.push(v);
            Ok(())
        },
    );
    assert_eq!(key, Ok(0));
    assert_eq!(vs, values);
    assert_eq!(rs, roots);
}

#[test]
fn the_walk_reads_prost_output_and_rejects_garbage() {
    let t = prost_tuple(42, &[(3, 9)], &[&[2, 1, 0, 0, 0, 0, 0, 0, 0]], &[]);
    let walk = |b: &[u8]| walk_data_tuple(b, |_, _| {}, |_| Ok(()));
    assert_eq!(walk(&t.encode_to_vec()), Ok(42));
    assert_eq!(walk(&[0x1a, 5, 4]), Err(TupleError::Truncated));
    assert_eq!(walk(&[0x09, 1]), Err(TupleError::Truncated));
    assert!(matches!(
        walk(&[0x08, 1]),
        Err(TupleError::WireType { field: 1, .. })
    ));
    assert_eq!(walk(&[0x00]), Err(TupleError::BadKey(0)));
    // a value the caller refuses
    assert_eq!(
        walk_data_tuple(&[0x1a, 1, 9], |_, _| {}, |_| Err(TupleError::Value("bad"))),
        Err(TupleError::Value("bad"))
    );
    // Unknown fields are skipped.
    assert_eq!(walk(&[0x28, 5, 0x09, 1, 0, 0, 0, 0, 0, 0, 0]), Ok(1));
}

#[test]
fn packed_dest_task_ids_are_read_too() {
    // field 4, wire type 2: [7, 300]
    let t = [0x22u8, 3, 7, 0xac, 0x02];
    check_tuple(&t).unwrap();
    let mut dest = Vec::new();
    for_each_dest_task(&t, |d| dest.push(d));
    assert_eq!(dest, vec![7, 300]);
    let t = prost_tuple(0, &[], &[b"\x04b"], &[5, -2]).encode_to_vec();
    let mut dest = Vec::new();
    for_each_dest_task(&t, |d| dest.push(d));
    assert_eq!(dest, vec![5, -2]);
}

#[test]
fn malformed_tuples_are_refused() {
    // key with wire type 0 instead of fixed64
    assert!(matches!(
        check_tuple(&[0x08, 0x01]),
        Err(TupleError::WireType { field: 1, .. })
    ));
    // value that runs past the end
    assert_eq!(check_tuple(&[0x1a, 5, 1, 2]), Err(TupleError::Truncated));
    // field number 0
    assert!(matches!(
        check_tuple(&[0x00, 0x01]),
        Err(TupleError::BadKey(0))
    ));
    // group wire type
    assert!(matches!(check_tuple(&[0x0b]), Err(TupleError::BadKey(_))));
    // root with a bad key type
    assert!(check_tuple(&[0x12, 2, 0x11, 0x01]).is_err());
    // unknown fields are skipped
    check_tuple(&[0x28, 0x01, 0x1a, 0]).unwrap();
}

#[test]
fn one_scan_finds_what_the_separate_walks_find() {
    for roots in [0usize, 1, 4, 5, 9] {
        let t = HeronDataTuple {
            key: 0x1122_3344_5566_7788,
            roots: (0..roots)
                .map(|i| RootId {
                    taskid: i as i32 - 2,
                    key: (i as i64 + 1) * -1_000_003,
                })
                .collect(),
            values: vec![bytes::Bytes::from_static(b"word")],
            dest_task_ids: vec![7, -1],
        }
        .encode_to_vec();
        let scan = scan_tuple(&t).unwrap();
        assert_eq!(scan.key_offset, tuple_key_offset(&t));
        assert_eq!(scan.roots, roots);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        scan.for_each_root(&t, |task, key| a.push((task, key)));
        for_each_root(&t, |task, key| b.push((task, key)));
        assert_eq!(a, b, "{roots} roots");
        let vals: Vec<&[u8]> = values(&t).collect();
        assert_eq!(vals, vec![&b"word"[..]]);
    }
    let many: Vec<Vec<u8>> = (0..INLINE_VALUES as u8 + 3).map(|i| vec![i]).collect();
    let refs: Vec<&[u8]> = many.iter().map(Vec::as_slice).collect();
    let t = prost_tuple(0, &[], &refs, &[]).encode_to_vec();
    let mut seen = Vec::new();
    scan_tuple(&t).unwrap().for_each_value(&t, |v| seen.push(v));
    assert_eq!(seen, refs);
    assert_eq!(tuple_key_offset(&[0x1a, 0]), None);
}

#[test]
fn the_scan_tells_whether_a_tuple_has_dest_tasks() {
    let none = prost_tuple(0, &[(1, 2)], &[b"\x04a"], &[]).encode_to_vec();
    assert!(!scan_tuple(&none).unwrap().has_dest_tasks());
    // what the emitter writes: one unpacked entry per task
    let mut buf = bytes::BytesMut::new();
    let v: &[u8] = b"\x04a";
    put_data_tuple(&mut buf, &[], &[v], &[7]);
    let unpacked = &buf[2..];
    assert!(scan_tuple(unpacked).unwrap().has_dest_tasks());
    // prost's packed encoding
    let packed = prost_tuple(0, &[], &[b"\x04b"], &[5, -2]).encode_to_vec();
    assert!(scan_tuple(&packed).unwrap().has_dest_tasks());
    // an empty packed list has no task
    assert!(!scan_tuple(&[0x22, 0]).unwrap().has_dest_tasks());
    assert!(scan_tuple(&[0x22, 1, 3]).unwrap().has_dest_tasks());
}

#[test]
fn the_scan_keeps_dest_tasks_as_a_second_walk_reads_them() {
    let v: &[u8] = b"\x04a";
    // unpacked (as the emitter writes), packed (as prost), mixed, and more than kept inline
    let many: Vec<i32> = (0..INLINE_DEST_TASKS as i32 + 3)
        .map(|t| t * 3 - 4)
        .collect();
    let mut tuples = vec![
        prost_tuple(0, &[(1, 2)], &[v], &[5, -2, 300]).encode_to_vec(),
        prost_tuple(0, &[], &[v], &many).encode_to_vec(),
    ];
    for dests in [&[7][..], &[1, 2, 3, 4], &many] {
        let mut buf = bytes::BytesMut::new();
        put_data_tuple(&mut buf, &[(3, 9)], &[v], dests);
        tuples.push(buf[2..].to_vec());
    }
    let mut mixed = tuples[2].clone();
    mixed.extend_from_slice(&[0x22, 2, 8, 9]);
    tuples.push(mixed);
    let mut scan = TupleScan::default();
    for t in &tuples {
        let mut walked = Vec::new();
        for_each_dest_task(t, |d| walked.push(d));
        assert!(!walked.is_empty());
        scan_tuple_into(t, &mut scan).unwrap();
        let mut kept = Vec::new();
        scan.for_each_dest_task(t, |d| kept.push(d));
        assert_eq!(kept, walked, "{t:?}");
    }
    assert_eq!(
        {
            let mut w = Vec::new();
            for_each_dest_task(&tuples[5], |d| w.push(d));
            w
        },
        [7, 8, 9]
    );
}

/// Root layouts: as encoders write them, or what only the field-by-field read takes (or
/// refuses).
fn root_bytes(kind: u8, task: i32, k: i64, noise: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    match kind % 5 {
        0 | 1 => {
            put_roots(&mut b, 2, &[(task, k)]);
            b.drain(..2); // the outer key and length
        }
        // the fields the other way round
        2 => {
            b.push(key(2, FIXED64));
            b.extend_from_slice(&k.to_le_bytes());
            b.push(key(1, VARINT));
            put_varint(&mut b, int32(task));
        }
        // the key cut short
        3 => {
            b.push(key(1, VARINT));
            put_varint(&mut b, int32(task));
            b.push(key(2, FIXED64));
            b.extend_from_slice(&k.to_le_bytes()[..5]);
        }
        // as written, then something more
        _ => {
            put_roots(&mut b, 2, &[(task, k)]);
            b.drain(..2);
            b.extend_from_slice(noise);
        }
    }
    b
}

proptest::proptest! {
    /// The fast read of a root agrees with the field-by-field one, and takes every root as
    /// encoders write it.
    #[test]
    fn a_root_as_written_reads_as_field_by_field(
        kind in 0u8..5,
        task in proptest::num::i32::ANY,
        k in proptest::num::i64::ANY,
        noise in proptest::collection::vec(proptest::num::u8::ANY, 0..12),
    ) {
        let root = root_bytes(kind, task, k, &noise);
        let general = decode_root_fields(&root);
        match root_as_written(&root) {
            Some(r) => {
                proptest::prop_assert_eq!(general, Ok(r));
                proptest::prop_assert_eq!(decode_root(&root), Ok(r));
            }
            None => {
                proptest::prop_assert!(kind % 5 >= 2, "a root as written, not read fast");
                proptest::prop_assert_eq!(decode_root(&root), general);
            }
        }
        if kind % 5 < 2 {
            proptest::prop_assert_eq!(decode_root(&root), Ok((task, k)));
        }
    }
}

#[test]
fn the_walk_reads_fields_in_any_order_as_prost_does() {
    // each field as prost writes it alone, then laid out in orders other than the encoders'
    let key = |k: i64| prost_tuple(k, &[], &[], &[]).encode_to_vec();
    let root = |t: i32, k: i64| {
        let mut b = prost_tuple(0, &[(t, k)], &[], &[]).encode_to_vec();
        b.drain(..9); // the key field every prost tuple starts with
        b
    };
    let value = |v: &[u8]| {
        let mut b = prost_tuple(0, &[], &[v], &[]).encode_to_vec();
        b.drain(..9);
        b
    };
    let dest = |d: i32| {
        let mut b = prost_tuple(0, &[], &[], &[d]).encode_to_vec();
        b.drain(..9);
        b
    };
    let layouts: Vec<Vec<Vec<u8>>> = vec![
        // the encoders' order
        vec![key(5), root(1, 2), value(b"\x04a"), value(b"\x04b")],
        // values first, then the key and a root
        vec![value(b"\x04a"), key(5), root(1, 2), value(b"\x04b")],
        // a second key after the values: the last one counts
        vec![key(5), value(b"\x04a"), key(6)],
        // a root after the values, a dest task among them, an unknown field
        vec![
            key(5),
            value(b"\x04a"),
            dest(3),
            root(1, 2),
            vec![0x28, 1],
            value(b"\x04b"),
        ],
        // no key at all
        vec![root(4, 4), value(b"\x04a")],
    ];
    for layout in layouts {
        let t = layout.concat();
        let expected = HeronDataTuple::decode(&t[..]).unwrap();
        let (mut vs, mut rs) = (Vec::new(), Vec::new());
        let k = walk_data_tuple(
            &t,
            |task, k| {
                rs.push(RootId {
                    taskid: task,
                    key: k,
                })
            },
            |v| {
                vs.push(v.to_vec());
                Ok(())
            },
        );
        assert_eq!(k, Ok(expected.key), "{t:?}");
        assert_eq!(rs, expected.roots, "{t:?}");
        let values: Vec<Vec<u8>> = expected.values.iter().map(|v| v.to_vec()).collect();
        assert_eq!(vs, values, "{t:?}");
    }
}
