//! Tuples and markers between stream managers carry the txid of the restore they follow
//! ([`crate::restore_epoch`]): sent tagged, another restore's dropped, the current one's held
//! until this stream manager's start.

use super::*;
use heron_proto::stmgr::TupleStreamMessage;

/// A set from stmgr-2 for bolt task 3, of `n` tuples, tagged `txid`.
fn from_peer(txid: Option<i64>, body: Bytes, n: i32) -> TupleStreamMessage {
    TupleStreamMessage {
        task_id: 3,
        set: body,
        src_task_id: 4,
        num_tuples: n,
        restore_txid: txid,
    }
}

/// The payloads of the tuple sets in `frames`.
fn sets<'a>(frames: &[&'a Packet]) -> Vec<&'a [u8]> {
    frames
        .iter()
        .filter(|p| p.type_name() == HERON_TUPLE_SET2)
        .map(|p| &p.payload[..])
        .collect()
}

#[test]
fn what_a_peer_sends_after_its_start_waits_for_ours() {
    let mut h = registered();
    restore(&mut h, 5);
    // stmgr-2 read its start first, and sent its spouts' first tuples
    h.send(
        PEER_IN,
        &from_peer(Some(5), Bytes::from_static(b"new-1"), 2),
    );
    // a slow peer's tuples from before this restore, read now
    h.send(PEER_IN, &from_peer(Some(4), Bytes::from_static(b"old"), 3));
    h.send(
        PEER_IN,
        &from_peer(Some(5), Bytes::from_static(b"new-2"), 1),
    );
    let out = h.round(true);
    assert!(frames_to(&out, BOLT).is_empty(), "held until our start");
    assert_eq!(h.core.stateful_counters().dropped_during_restore, 3);
    let out = start(&mut h);
    let to_bolt = frames_to(&out, BOLT);
    assert_eq!(
        to_bolt[0].type_name(),
        name::<StartInstanceStatefulProcessing>(),
        "the instance drops input before its start"
    );
    assert_eq!(sets(&to_bolt), vec![&b"new-1"[..], b"new-2"], "in order");
    assert_eq!(h.core.delivered().to_instances, 3);
    assert_eq!(h.core.stateful_counters().dropped_during_restore, 3);
}

#[test]
fn an_earlier_restores_tuples_read_after_the_start_are_dropped() {
    let mut h = running(); // txid 1
    h.send(PEER_IN, &from_peer(Some(0), Bytes::from_static(b"old"), 2));
    h.send(PEER_IN, &from_peer(Some(1), Bytes::from_static(b"now"), 1));
    // a sender that does not tag: as before tags, delivered once started
    h.send(
        PEER_IN,
        &from_peer(None, Bytes::from_static(b"untagged"), 1),
    );
    let out = h.round(true);
    assert_eq!(sets(&frames_to(&out, BOLT)), vec![&b"now"[..], b"untagged"]);
    assert_eq!(h.core.stateful_counters().dropped_during_restore, 2);
}

#[test]
fn a_new_restore_drops_what_was_held_for_the_one_before() {
    let mut h = registered();
    restore(&mut h, 1);
    h.send(PEER_IN, &from_peer(Some(1), Bytes::from_static(b"held"), 2));
    h.round(true);
    restore(&mut h, 2);
    assert_eq!(h.core.stateful_counters().dropped_during_restore, 2);
    h.send(PEER_IN, &from_peer(Some(1), Bytes::from_static(b"late"), 1));
    let out = start(&mut h);
    let to_bolt = frames_to(&out, BOLT);
    assert_eq!(
        names(&to_bolt),
        vec![name::<StartInstanceStatefulProcessing>()]
    );
    assert_eq!(h.core.stateful_counters().dropped_during_restore, 3);
}

#[test]
fn markers_wait_for_the_start_too_and_old_ones_are_dropped() {
    // bolt 3 consumes spout tasks 1 (here) and 2 (on stmgr-2)
    let mut h = registered_with(aligned_plan(&[]));
    restore(&mut h, 3);
    let marker = |txid, id: &str| DownstreamStatefulCheckpoint {
        origin_task_id: 2,
        destination_task_id: 3,
        checkpoint_id: id.into(),
        restore_txid: Some(txid),
    };
    // stmgr-2 started, checkpointed and sent spout 2's marker and tuples after it
    h.send(PEER_IN, &marker(3, "c1"));
    let after = |txid| TupleStreamMessage {
        src_task_id: 2,
        ..from_peer(Some(txid), Bytes::from_static(b"after"), 1)
    };
    h.send(PEER_IN, &after(3));
    // a newer marker from before the restore: it would replace c1's alignment
    h.send(PEER_IN, &marker(2, "c2"));
    let out = h.round(true);
    assert!(frames_to(&out, BOLT).is_empty());
    let out = start(&mut h);
    assert_eq!(
        names(&frames_to(&out, BOLT)),
        vec![name::<StartInstanceStatefulProcessing>()],
        "spout 2's tuples after its marker wait for spout 1's"
    );
    spout_stored(&mut h, "c1");
    let out = h.round(true);
    let to_bolt = frames_to(&out, BOLT);
    assert_eq!(
        names(&to_bolt),
        vec![
            name::<InitiateStatefulCheckpoint>(),
            HERON_TUPLE_SET2.to_string()
        ]
    );
    let m: InitiateStatefulCheckpoint = to_bolt[0].decode().unwrap();
    assert_eq!(m.checkpoint_id, "c1");
    assert_eq!(h.core.stateful_counters().alignments, 1);
}

#[test]
fn what_is_sent_to_other_stream_managers_carries_the_restore_txid() {
    let mut h = registered();
    restore(&mut h, 9);
    start(&mut h);
    h.send(SPOUT, &tuple_set(&["a"]));
    spout_stored(&mut h, "c1");
    let out = h.round(true);
    let remote = frames_to(&out, PEER_OUT);
    let m: TupleStreamMessage = remote[0].decode().unwrap();
    assert_eq!((m.task_id, m.num_tuples, m.restore_txid), (4, 1, Some(9)));
    let marker: DownstreamStatefulCheckpoint = remote[1].decode().unwrap();
    assert_eq!(marker.restore_txid, Some(9));
}

#[test]
fn overflowing_the_hold_drops_it_and_asks_for_another_restore() {
    let mut h = registered_with(aligned_plan(&[(
        "heron.streammgr.stateful.buffer.size.mb",
        "1",
    )]));
    restore(&mut h, 1);
    let big = || from_peer(Some(1), Bytes::from(vec![7u8; 600 << 10]), 10);
    h.send(PEER_IN, &big());
    let out = h.round(true);
    assert!(to_tmaster(&out).is_empty(), "600 KB of 1 MB held");
    h.send(PEER_IN, &big());
    let out = h.round(true);
    let reset = to_tmaster(&out);
    assert_eq!(names(&reset), vec![name::<ResetTopologyState>()]);
    assert_eq!(h.core.stateful_counters().dropped_during_restore, 20);
    // the rest of this restore's input has a gap: it is dropped until the next restore
    let out = start(&mut h);
    assert_eq!(
        names(&frames_to(&out, BOLT)),
        vec![name::<StartInstanceStatefulProcessing>()]
    );
    h.send(PEER_IN, &from_peer(Some(1), Bytes::from_static(b"x"), 1));
    assert!(frames_to(&h.round(true), BOLT).is_empty());
    restore(&mut h, 2);
    start(&mut h);
    h.send(PEER_IN, &from_peer(Some(2), Bytes::from_static(b"y"), 1));
    assert_eq!(sets(&frames_to(&h.round(true), BOLT)), vec![&b"y"[..]]);
}
