use super::*;
use crate::codec::HeronCodec;
use crate::stmgr::TupleStreamMessage;
use crate::system::{AckTuple, HeronControlTupleSet, HeronTupleSet, HeronTupleSet2, RootId};
use crate::tuple::split_set2;
use crate::Message;

fn ack(roots: &[(i32, i64)], acked: i64) -> AckTuple {
    AckTuple {
        roots: roots
            .iter()
            .map(|&(taskid, key)| RootId { taskid, key })
            .collect(),
        ackedtuple: acked,
    }
}

#[test]
fn control_sets_are_read_per_kind_with_their_roots() {
    let set = HeronControlTupleSet {
        acks: vec![ack(&[(1, 10), (-2, 20)], 5), ack(&[], -1)],
        fails: vec![ack(&[(3, 30)], 0)],
        emits: vec![ack(&[(1, 10)], i64::MIN)],
    }
    .encode_to_vec();
    let mut entries = Vec::new();
    read_acks(&set, &mut entries).unwrap();
    let seen: Vec<_> = entries
        .iter()
        .map(|e| {
            let mut roots = Vec::new();
            e.for_each_root(&set, |t, k| roots.push((t, k)));
            (e.kind, e.acked, roots)
        })
        .collect();
    // wire order: prost writes acks, fails, emits
    assert_eq!(
        seen,
        vec![
            (ControlKind::Ack, 5, vec![(1, 10), (-2, 20)]),
            (ControlKind::Ack, -1, vec![]),
            (ControlKind::Fail, 0, vec![(3, 30)]),
            (ControlKind::Emit, i64::MIN, vec![(1, 10)]),
        ]
    );
    let mut entries = Vec::new();
    assert!(read_acks(&[0x0a, 2, 0x11, 1], &mut entries).is_err());
    assert_eq!(
        read_acks(&[0x0a, 0], &mut entries),
        Err(TupleError::Missing("AckTuple.ackedtuple"))
    );
    // a root of the wrong wire type, a list of the wrong wire type
    assert!(matches!(
        read_acks(&[0x0a, 2, 0x08, 0x01], &mut entries),
        Err(TupleError::WireType { .. })
    ));
    assert!(read_acks(&[0x08, 1], &mut entries).is_err());
    // unknown fields are skipped
    let mut entries = Vec::new();
    read_acks(
        &[0x20, 1, 0x0a, 9, 0x11, 1, 0, 0, 0, 0, 0, 0, 0],
        &mut entries,
    )
    .unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].acked, 1);
}

#[test]
fn built_sets_decode_with_prost() {
    let mut c = ControlTuples::default();
    c.push(ControlKind::Emit, &[(4, -9)], 77);
    c.push(ControlKind::Ack, &[(4, -9)], 78);
    c.push(ControlKind::Fail, &[(-3, 1)], 0);
    assert_eq!(c.count(), 3);
    let mut out = BytesMut::new();
    c.take_stream_message(4, 6, &mut out);
    assert!(c.is_empty());
    assert_eq!(c.len(), 0);
    let msg = TupleStreamMessage::decode(&out[..]).unwrap();
    assert_eq!((msg.task_id, msg.src_task_id, msg.num_tuples), (4, 6, 3));
    let set = HeronTupleSet2::decode(msg.set.clone()).unwrap();
    assert!(set.data.is_none());
    let control = set.control.unwrap();
    assert_eq!(control.emits, vec![ack(&[(4, -9)], 77)]);
    assert_eq!(control.acks, vec![ack(&[(4, -9)], 78)]);
    assert_eq!(control.fails, vec![ack(&[(-3, 1)], 0)]);
    let parts = split_set2(&msg.set).unwrap();
    assert!(parts.data.is_none() && parts.control.is_some());
    assert_eq!(parts.src_task, 6);
}

#[test]
fn a_closed_set_is_the_heron_tuple_set_prost_writes() {
    let mut set = ControlTuples::default();
    set.push(ControlKind::Ack, &[(1, -5)], 7);
    set.push(ControlKind::Fail, &[(-3, i64::MAX), (200_000, 1)], i64::MIN);
    set.push(ControlKind::Ack, &[], 0);
    assert_eq!(set.count(), 3);
    let mut frames = BytesMut::new();
    set.take_frame(&mut frames, -7);
    assert_eq!(set.count(), 0);
    let packet = HeronCodec::new(0)
        .decode_packet(&mut frames)
        .unwrap()
        .unwrap();
    assert!(frames.is_empty(), "exactly one packet");
    let decoded: HeronTupleSet = packet.decode().unwrap();
    let expected = HeronTupleSet {
        data: None,
        control: Some(HeronControlTupleSet {
            acks: vec![ack(&[(1, -5)], 7), ack(&[], 0)],
            fails: vec![ack(&[(-3, i64::MAX), (200_000, 1)], i64::MIN)],
            emits: vec![],
        }),
        src_task_id: -7,
    };
    assert_eq!(decoded, expected);
    // byte for byte what prost writes when acks and fails are not interleaved
    let mut only_acks = ControlTuples::default();
    only_acks.push(ControlKind::Ack, &[(1, -5)], 7);
    let mut frames = BytesMut::new();
    only_acks.take_frame(&mut frames, 4);
    let packet = HeronCodec::new(0)
        .decode_packet(&mut frames)
        .unwrap()
        .unwrap();
    let prost = HeronTupleSet {
        data: None,
        control: Some(HeronControlTupleSet {
            acks: vec![ack(&[(1, -5)], 7)],
            fails: vec![],
            emits: vec![],
        }),
        src_task_id: 4,
    }
    .encode_to_vec();
    assert_eq!(&packet.payload[..], &prost[..]);
    // an empty set writes nothing
    let mut frames = BytesMut::new();
    ControlTuples::default().take_frame(&mut frames, 1);
    assert!(frames.is_empty());
}

#[test]
fn merged_acks_and_emits_are_one_entry_per_root_with_the_xor_of_their_keys() {
    let mut c = ControlTuples::default();
    c.push_merged(ControlKind::Ack, &[(1, 10)], 0b0001);
    c.push_merged(ControlKind::Emit, &[(1, 10)], 0b1000);
    c.push_merged(ControlKind::Ack, &[(2, 10)], 7); // another task's tree
    c.push_merged(ControlKind::Ack, &[(1, 10)], 0b0100);
    c.push_merged(ControlKind::Emit, &[(1, 10)], 0b1000); // cancels the first emit
    c.push_merged(ControlKind::Ack, &[(1, 10), (1, 11)], 3); // several roots: as it comes
    c.push_merged(ControlKind::Ack, &[(1, 10), (1, 11)], 3);
    c.push_merged(ControlKind::Fail, &[(1, 12)], 1); // fails: as they come
    c.push_merged(ControlKind::Fail, &[(1, 12)], 1);
    assert_eq!(c.count(), 6);
    let set = HeronControlTupleSet::decode(c.as_bytes()).unwrap();
    assert_eq!(
        set.acks,
        vec![
            ack(&[(1, 10)], 0b0101), // the emits cancelled each other in the ack
            ack(&[(2, 10)], 7),
            ack(&[(1, 10), (1, 11)], 3),
            ack(&[(1, 10), (1, 11)], 3),
        ]
    );
    assert!(set.emits.is_empty());
    assert_eq!(set.fails, vec![ack(&[(1, 12)], 1), ack(&[(1, 12)], 1)]);

    // taking the set forgets what was held: the next ack is a new entry
    let mut frames = BytesMut::new();
    c.take_frame(&mut frames, 5);
    assert!(c.is_empty());
    c.push_merged(ControlKind::Ack, &[(1, 10)], 9);
    c.push_merged(ControlKind::Ack, &[(1, 10)], 1);
    let set = HeronControlTupleSet::decode(c.as_bytes()).unwrap();
    assert_eq!(set.acks, vec![ack(&[(1, 10)], 8)]);
}

#[test]
fn a_merged_set_xors_into_a_tree_as_its_acks_one_by_one_do() {
    // what a receiver does: XOR every ackedtuple into each root
    fn apply(control: &[u8]) -> std::collections::HashMap<(i32, i64), i64> {
        let mut trees = std::collections::HashMap::new();
        let mut entries = Vec::new();
        read_acks(control, &mut entries).unwrap();
        for e in &entries {
            e.for_each_root(control, |t, k| *trees.entry((t, k)).or_insert(0) ^= e.acked);
        }
        trees
    }
    let acks: Vec<(i32, i64, i64)> = (0..200)
        .map(|i| {
            (
                i % 3,
                i64::from(i % 7),
                0x9E37_79B9_7F4A_7C15_u64.wrapping_mul(i as u64 + 1) as i64,
            )
        })
        .collect();
    let (mut one_by_one, mut merged) = (ControlTuples::default(), ControlTuples::default());
    for &(task, root, key) in &acks {
        one_by_one.push(ControlKind::Ack, &[(task, root)], key);
        merged.push_merged(ControlKind::Ack, &[(task, root)], key);
    }
    assert_eq!(merged.count(), 21);
    assert_eq!(apply(merged.as_bytes()), apply(one_by_one.as_bytes()));
}

#[test]
fn the_merge_table_hashes_a_held_entry_as_its_random_root_key() {
    use std::hash::BuildHasher;
    let b = crate::keys::KeyBuildHasher::default();
    assert_eq!(b.hash_one((7i32, -5i64)), -5i64 as u64);
}

#[test]
fn one_root_acks_read_as_encoders_write_them_match_the_same_acks_in_any_field_order() {
    for task in [0, 1, 127, 128, 300_000, -1, i32::MAX, i32::MIN] {
        for (root, acked) in [(0i64, 0i64), (-1, 1), (i64::MIN, i64::MAX), (0x1234, -77)] {
            let mut c = ControlTuples::default();
            c.push(ControlKind::Emit, &[(task, root)], acked);
            // the same AckTuple with its fields the other way round: read field by field
            let canonical = ack(&[(task, root)], acked);
            let reversed = {
                let mut b = Vec::new();
                b.push(0x11);
                b.extend_from_slice(&acked.to_le_bytes());
                let mut r = Vec::new();
                RootId {
                    taskid: task,
                    key: root,
                }
                .encode(&mut r)
                .unwrap();
                b.push(0x0a);
                b.push(r.len() as u8);
                b.extend_from_slice(&r);
                let mut set = vec![0x1a, b.len() as u8];
                set.extend_from_slice(&b);
                set
            };
            for bytes in [c.as_bytes().to_vec(), reversed] {
                let mut entries = Vec::new();
                read_acks(&bytes, &mut entries).unwrap();
                assert_eq!(entries.len(), 1);
                let e = &entries[0];
                assert_eq!((e.kind, e.acked), (ControlKind::Emit, acked));
                let mut roots = Vec::new();
                e.for_each_root(&bytes, |t, k| roots.push((t, k)));
                assert_eq!(roots, vec![(task, root)], "{task} {root}");
                let decoded = HeronControlTupleSet::decode(&bytes[..]).unwrap();
                assert_eq!(decoded.emits, vec![canonical.clone()]);
            }
            // cut anywhere, it is an error, never a wrong entry
            let whole = c.as_bytes().to_vec();
            for cut in 1..whole.len() {
                let mut entries = Vec::new();
                assert!(
                    read_acks(&whole[..cut], &mut entries).is_err(),
                    "cut at {cut}"
                );
            }
        }
    }
}

#[test]
fn an_emit_riding_in_an_ack_never_lets_a_receiver_complete_a_tree_early() {
    // A bolt with inputs on roots 10, 11 or both (task 1) emits children anchored to inputs it
    // has not acked yet and acks its inputs, in a random order. A receiver applies the
    // set's emits, then its acks, in wire order. No tree may reach zero while a child is out:
    // the children are acked downstream, later.
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..500 {
        const ROOTS: [&[(i32, i64)]; 3] = [&[(1, 10)], &[(1, 11)], &[(1, 10), (1, 11)]];
        let inputs: Vec<(&[(i32, i64)], i64)> = (0..4)
            .map(|_| (ROOTS[(next() % 3) as usize], next() as i64 | 1))
            .collect();
        let mut trees = std::collections::HashMap::<i64, i64>::new();
        for &(roots, key) in &inputs {
            for &(_, root) in roots {
                *trees.entry(root).or_insert(0) ^= key;
            }
        }
        let mut c = ControlTuples::default();
        let mut acked = [false; 4];
        let mut children = std::collections::HashMap::<i64, i64>::new();
        while acked.iter().any(|a| !a) {
            let i = (next() % 4) as usize;
            if acked[i] {
                continue;
            }
            let (roots, key) = inputs[i];
            if next() % 3 == 0 {
                c.push_merged(ControlKind::Ack, roots, key);
                acked[i] = true;
            } else {
                let child = next() as i64 | 1;
                c.push_merged(ControlKind::Emit, roots, child);
                for &(_, root) in roots {
                    *children.entry(root).or_insert(0) ^= child;
                }
            }
        }
        let mut entries = Vec::new();
        read_acks(c.as_bytes(), &mut entries).unwrap();
        for kind in [ControlKind::Emit, ControlKind::Ack] {
            for e in entries.iter().filter(|e| e.kind == kind) {
                e.for_each_root(c.as_bytes(), |_, root| {
                    let tree = trees.get_mut(&root).unwrap();
                    *tree ^= e.acked;
                    let out = children.get(&root).copied().unwrap_or(0);
                    assert!(
                        *tree != 0 || out == 0,
                        "tree {root} completed with children out"
                    );
                });
            }
        }
        for (root, tree) in trees {
            assert_eq!(tree, children.get(&root).copied().unwrap_or(0));
        }
    }
}
