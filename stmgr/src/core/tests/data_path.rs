//! The core's data path: batching, flushing, remote and pinned tuples, forwarding, large
//! rounds.

use super::*;

#[test]
fn local_tuples_are_batched_and_sent_unchanged_when_the_core_is_idle() {
    let mut h = H::running(api::Grouping::All);
    h.send(SPOUT, &tuple_set(&["a", "b"]));
    h.send(SPOUT, &tuple_set(&["c"]));
    assert!(
        frames_to(&h.round(false), BOLT).is_empty(),
        "busy and young: wait"
    );
    let out = h.round(true);
    let f = frames_to(&out, BOLT);
    assert_eq!(f.len(), 1, "three tuples, one batch");
    assert_eq!(f[0].type_name(), HERON_TUPLE_SET2);
    let set: HeronTupleSet2 = f[0].decode().unwrap();
    assert_eq!(set.src_task_id, 1);
    let data = set.data.unwrap();
    assert_eq!(data.stream.component_name, "spout");
    let want: Vec<Vec<u8>> = ["a", "b", "c"]
        .iter()
        .map(|w| data_tuple(w).encode_to_vec())
        .collect();
    let got: Vec<Vec<u8>> = data.tuples.iter().map(|t| t.to_vec()).collect();
    assert_eq!(got, want);
    // task 4's stream manager is not connected: its copies are lost and counted
    assert_eq!(h.core.delivered().to_instances, 3);
    assert_eq!(h.core.delivered().lost, 3);
    assert_eq!(h.core.counters().tuples_from_instances, 3);
    // bytes: the spout's packet in, the batch out to the local instance
    let bytes = h.core.counters().bytes;
    assert!(bytes.from_instances > 0, "{bytes:?}");
    assert!(bytes.to_instances > 0, "{bytes:?}");
}

#[test]
fn open_batches_wait_at_most_the_flush_interval_while_input_keeps_coming() {
    let mut h = H::running(api::Grouping::All);
    let t0 = h.now;
    h.send(SPOUT, &tuple_set(&["a"]));
    assert_eq!(h.core.next_deadline(), Some(t0 + FLUSH_INTERVAL));
    h.now = t0 + FLUSH_INTERVAL / 2;
    assert!(frames_to(&h.round(false), BOLT).is_empty());
    h.now = t0 + FLUSH_INTERVAL;
    assert_eq!(frames_to(&h.round(false), BOLT).len(), 1);
}

#[test]
fn remote_tuples_go_as_tuple_stream_messages_once_the_peer_is_up() {
    let mut h = H::running(api::Grouping::All);
    h.core
        .on_stmgr_client_up("stmgr-2", h.attempt, 10, "peer".into(), h.now);
    h.round(true); // the plan goes out now that the mesh is up
    h.send(SPOUT, &tuple_set(&["x", "y"]));
    let out = h.round(true);
    let f = frames_to(&out, 10);
    assert_eq!(f.len(), 1);
    let msg: TupleStreamMessage = f[0].decode().unwrap();
    assert_eq!((msg.task_id, msg.src_task_id, msg.num_tuples), (4, 1, 2));
    let set = HeronTupleSet2::decode(msg.set).unwrap();
    assert_eq!(set.data.unwrap().tuples.len(), 2);
    assert_eq!(frames_to(&out, BOLT).len(), 1, "the local copy too");
    assert_eq!(h.core.delivered().to_stmgrs, 2);
}

#[test]
fn a_tuple_pinned_on_a_shuffle_stream_reaches_exactly_the_pinned_task() {
    let mut h = H::meshed(api::Grouping::Shuffle);
    let pinned = |task: i32| {
        let mut set = tuple_set(&["a", "b", "c", "d", "e", "f"]);
        for t in &mut set.data.as_mut().unwrap().tuples {
            t.dest_task_ids = vec![task];
        }
        set
    };
    let to_peer = |out: &[Out]| -> Vec<(i32, i32)> {
        frames_to(out, 10)
            .iter()
            .map(|f| {
                let m: TupleStreamMessage = f.decode().unwrap();
                (m.task_id, m.num_tuples)
            })
            .collect()
    };
    let to_bolt = |out: &[Out]| -> Vec<HeronDataTuple> {
        frames_to(out, BOLT)
            .iter()
            .flat_map(|f| {
                let set: HeronTupleSet2 = f.decode().unwrap();
                set.data.unwrap().tuples
            })
            .map(|t| HeronDataTuple::decode(t).unwrap())
            .collect()
    };
    // pinned to the remote task 4: none reach the local task 3
    h.send(SPOUT, &pinned(4));
    let out = h.round(true);
    assert!(to_bolt(&out).is_empty(), "no round robin for pinned tuples");
    assert_eq!(to_peer(&out), vec![(4, 6)]);
    // pinned to the local task 3: all six there, unchanged (dest ids included)
    h.send(SPOUT, &pinned(3));
    let out = h.round(true);
    assert!(to_peer(&out).is_empty());
    let got = to_bolt(&out);
    assert_eq!(got.len(), 6);
    assert!(got.iter().all(|t| t.dest_task_ids == vec![3]), "{got:?}");
    // tuples without dests are still round-robined over both tasks
    h.send(SPOUT, &tuple_set(&["x", "y"]));
    let out = h.round(true);
    assert_eq!(to_bolt(&out).len(), 1);
    assert_eq!(to_peer(&out), vec![(4, 1)]);
}

#[test]
fn tuple_stream_messages_are_forwarded_to_the_instance_unparsed() {
    let mut h = H::running(api::Grouping::Shuffle);
    h.hello(PEER_IN, "stmgr-2");
    let out = h.round(true);
    let resp: StrMgrHelloResponse = frames_to(&out, PEER_IN)[0].decode().unwrap();
    assert!(heron_proto::is_ok(&resp.status));
    let opaque = bytes::Bytes::from_static(b"not parsed by the stmgr");
    for task in [3, 4, 99] {
        h.send(
            PEER_IN,
            &TupleStreamMessage {
                task_id: task,
                set: opaque.clone(),
                src_task_id: 8,
                num_tuples: 5,
                restore_txid: None,
            },
        );
    }
    let out = h.round(true);
    let f = frames_to(&out, BOLT);
    assert_eq!(f.len(), 1, "only task 3 is local");
    assert_eq!(f[0].type_name(), HERON_TUPLE_SET2);
    assert_eq!(f[0].payload, opaque);
    assert_eq!(h.core.delivered().lost, 10);
    assert!(closed(&out).is_empty());
}

#[test]
fn large_input_closes_batches_on_size() {
    let mut h = H::running(api::Grouping::All);
    let word = "w".repeat(1000);
    let words: Vec<&str> = (0..100).map(|_| word.as_str()).collect();
    h.send(SPOUT, &tuple_set(&words));
    let sets: Vec<HeronTupleSet2> = frames_to(&h.round(false), BOLT)
        .iter()
        .map(|p| p.decode().unwrap())
        .collect();
    // 100 KB of tuples in 32 KB batches: three closed while busy, the rest waits
    assert_eq!(sets.len(), 3);
    assert!(sets
        .iter()
        .all(|s| s.data.as_ref().unwrap().tuples.len() < 40));
    h.now += Duration::from_millis(1);
    assert_eq!(frames_to(&h.round(false), BOLT).len(), 1);
}

#[test]
fn a_large_round_goes_out_in_chunks_of_whole_frames_in_order() {
    let mut h = H::running(api::Grouping::All);
    let words: Vec<String> = (0..3000).map(|i| format!("{i:0>400}")).collect();
    for chunk in words.chunks(100) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        h.send(SPOUT, &tuple_set(&refs));
    }
    h.core.end_round(h.now, true);
    let sends: Vec<Bytes> = h
        .core
        .drain_actions()
        .filter_map(|a| match a {
            Action::Send(conn, bytes) if conn == BOLT => Some(bytes),
            _ => None,
        })
        .collect();
    // 1.2 MB for one connection: several chunks, none much over the chunk size
    assert!(sends.len() >= 4, "{} sends", sends.len());
    assert!(sends.iter().all(|b| b.len() < OUT_CHUNK + 64 * 1024));
    let mut received = Vec::new();
    for bytes in sends {
        let mut buf = BytesMut::from(&bytes[..]);
        while let Some(p) = HeronCodec::new(0).decode_packet(&mut buf).unwrap() {
            let set: HeronTupleSet2 = p.decode().unwrap();
            for t in set.data.unwrap().tuples {
                received.push(t);
            }
        }
        assert!(buf.is_empty(), "each chunk holds whole frames");
    }
    assert_eq!(received.len(), words.len(), "nothing lost");
    for (t, w) in received.iter().zip(&words) {
        let d = HeronDataTuple::decode(&t[..]).unwrap();
        assert_eq!(d.values[0][..], str_value(w)[..], "in order");
    }
    assert!(h.core.counters().bytes.to_instances > 1_200_000);
}

/// A set from the spout whose tuples all name `dest`, addressed to `to` (the set's task field).
fn addressed_set(to: i32, dest: i32, words: &[&str]) -> Packet {
    let mut tuples = BytesMut::new();
    for w in words {
        let v = data_tuple(w).values[0].clone();
        heron_proto::tuple::put_data_tuple(&mut tuples, &[], &[&v[..]], &[dest]);
    }
    let mut frames = BytesMut::new();
    let stream = heron_proto::tuple::stream_field("default", "spout");
    heron_proto::tuple::put_data_set_frame_to(&mut frames, &stream, to, false, &tuples, 1);
    one_packet(&frames)
}

#[test]
fn a_set_addressed_to_one_task_is_forwarded_whole_and_a_wrong_address_is_routed_per_tuple() {
    let to_bolt = |out: &[Out]| -> Vec<HeronDataTuple> {
        frames_to(out, BOLT)
            .iter()
            .flat_map(|f| f.decode::<HeronTupleSet2>().unwrap().data.unwrap().tuples)
            .map(|t| HeronDataTuple::decode(t).unwrap())
            .collect()
    };
    let to_peer = |out: &[Out]| -> Vec<(i32, i32)> {
        frames_to(out, 10)
            .iter()
            .map(|f| {
                let m: TupleStreamMessage = f.decode().unwrap();
                (m.task_id, m.num_tuples)
            })
            .collect()
    };
    let mut h = H::meshed(api::Grouping::Direct);
    // to the local task 3 and to the remote task 4: whole, in order, unchanged
    h.core
        .on_packet(SPOUT, &addressed_set(3, 3, &["a", "b", "c"]), h.now);
    h.core
        .on_packet(SPOUT, &addressed_set(4, 4, &["d", "e"]), h.now);
    let out = h.round(true);
    let got = to_bolt(&out);
    let words: Vec<_> = got.iter().map(|t| t.values[0].clone()).collect();
    let want: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|w| data_tuple(w).values[0].clone())
        .collect();
    assert_eq!(words, want);
    assert!(got.iter().all(|t| t.dest_task_ids == vec![3]));
    assert_eq!(to_peer(&out), vec![(4, 2)]);
    assert_eq!(h.core.counters().tuples_from_instances, 5);
    // an address that is no task of the consumer: each tuple goes where it says
    h.core
        .on_packet(SPOUT, &addressed_set(99, 3, &["f", "g"]), h.now);
    let out = h.round(true);
    assert_eq!(to_bolt(&out).len(), 2);
    assert!(to_peer(&out).is_empty());

    // FIELDS: the emitter computed the task, so the set goes there whole (the stream
    // manager does not hash it again); an address that is no task of the consumer is
    // ignored and each tuple hashed (no grouping fields here: all to the first task, 3)
    let mut h = H::meshed(api::Grouping::Fields);
    h.core
        .on_packet(SPOUT, &addressed_set(4, 4, &["x", "y"]), h.now);
    let out = h.round(true);
    assert!(to_bolt(&out).is_empty());
    assert_eq!(to_peer(&out), vec![(4, 2)]);
    h.core
        .on_packet(SPOUT, &addressed_set(99, 4, &["x", "y"]), h.now);
    let out = h.round(true);
    assert_eq!(to_bolt(&out).len(), 2);
    assert!(to_peer(&out).is_empty());

    // SHUFFLE: the emitter kept the round robin, so a set addressed to either task goes
    // there whole (here tuples that name no task, as a shuffled emit does); an address that
    // is no task of the consumer is ignored and the stream manager's own round robin
    // spreads the tuples over both tasks
    let mut h = H::meshed(api::Grouping::Shuffle);
    let plain_set = |to: i32, words: &[&str]| {
        let mut tuples = BytesMut::new();
        for w in words {
            let v = data_tuple(w).values[0].clone();
            heron_proto::tuple::put_data_tuple(&mut tuples, &[], &[&v[..]], &[]);
        }
        let mut frames = BytesMut::new();
        let stream = heron_proto::tuple::stream_field("default", "spout");
        heron_proto::tuple::put_data_set_frame_to(&mut frames, &stream, to, false, &tuples, 1);
        one_packet(&frames)
    };
    h.core
        .on_packet(SPOUT, &plain_set(4, &["p", "q", "r"]), h.now);
    h.core.on_packet(SPOUT, &plain_set(3, &["s"]), h.now);
    let out = h.round(true);
    assert_eq!(to_bolt(&out).len(), 1);
    assert_eq!(to_peer(&out), vec![(4, 3)]);
    h.core
        .on_packet(SPOUT, &plain_set(99, &["t", "u", "v", "w"]), h.now);
    let out = h.round(true);
    assert_eq!(to_bolt(&out).len(), 2);
    assert_eq!(to_peer(&out), vec![(4, 2)]);

    // a consumer that reads the stream otherwise ignores the address: ALL sends every
    // tuple to both tasks
    let mut h = H::meshed(api::Grouping::All);
    h.core
        .on_packet(SPOUT, &addressed_set(4, 4, &["x", "y"]), h.now);
    let out = h.round(true);
    assert_eq!(to_bolt(&out).len(), 2);
    assert_eq!(to_peer(&out), vec![(4, 2)]);
}
