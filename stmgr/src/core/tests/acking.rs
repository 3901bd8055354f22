//! The core in ATLEAST_ONCE: key assignment, XOR tracking of local spouts, control routing.

use super::*;
use heron_flow::refill::REFILL_WAIT;
use heron_proto::system::RootId;

const ROOT: i64 = 0x1234_5678;

/// spout 1 and bolt 3 here; spout 2 and bolt 4 on stmgr-2; ATLEAST_ONCE, timeout 3 s.
fn acking_plan(g: api::Grouping) -> PhysicalPlan {
    let p = Plan::new()
        .spout("spout", vec![output("spout", "default", &["word"])])
        .bolt(
            "bolt",
            vec![input("spout", "default", g)],
            vec![output("bolt", "default", &["word"])],
        )
        .stmgr("stmgr-1", 6001)
        .stmgr("stmgr-2", 6002)
        .instance("stmgr-1", "spout", 1)
        .instance("stmgr-2", "spout", 2)
        .instance("stmgr-1", "bolt", 3)
        .instance("stmgr-2", "bolt", 4)
        .build();
    with_config(
        p,
        &[
            ("topology.reliability.mode", "ATLEAST_ONCE"),
            ("topology.message.timeout.secs", "3"),
        ],
    )
}

/// Registered, plan applied, the link to stmgr-2 up, plan handed out, actions cleared.
fn running(g: api::Grouping) -> H {
    let mut h = H::with_peer(acking_plan(g));
    h.round(true);
    h
}

fn anchored(component: &str, src: i32, words: &[&str], roots: &[(i32, i64)]) -> HeronTupleSet {
    let mut set = tuple_set(words);
    set.src_task_id = src;
    let data = set.data.as_mut().unwrap();
    data.stream.component_name = component.into();
    for t in &mut data.tuples {
        t.roots = roots
            .iter()
            .map(|&(taskid, key)| RootId { taskid, key })
            .collect();
    }
    set
}

fn control(acks: &[(&[(i32, i64)], i64)], fails: &[(&[(i32, i64)], i64)]) -> HeronTupleSet {
    let ack = |(roots, k): &(&[(i32, i64)], i64)| AckTuple {
        roots: roots
            .iter()
            .map(|&(taskid, key)| RootId { taskid, key })
            .collect(),
        ackedtuple: *k,
    };
    HeronTupleSet {
        data: None,
        control: Some(HeronControlTupleSet {
            acks: acks.iter().map(ack).collect(),
            fails: fails.iter().map(ack).collect(),
            emits: vec![],
        }),
        src_task_id: 3,
    }
}

/// The keys of the data tuples sent to `conn` (local sets or stream messages).
fn keys_to(out: &[Out], conn: ConnId) -> Vec<i64> {
    let mut keys = Vec::new();
    for p in frames_to(out, conn) {
        let set: HeronTupleSet2 = if p.type_name() == TUPLE_STREAM_MESSAGE {
            let m: TupleStreamMessage = p.decode().unwrap();
            HeronTupleSet2::decode(m.set).unwrap()
        } else {
            p.decode().unwrap()
        };
        for t in set.data.map(|d| d.tuples).unwrap_or_default() {
            keys.push(HeronDataTuple::decode(t).unwrap().key);
        }
    }
    keys
}

/// The control sets sent to `conn` as `HeronTupleSet2`s.
fn controls_to(out: &[Out], conn: ConnId) -> Vec<HeronControlTupleSet> {
    frames_to(out, conn)
        .into_iter()
        .filter(|p| p.type_name() == HERON_TUPLE_SET2)
        .filter_map(|p| p.decode::<HeronTupleSet2>().unwrap().control)
        .collect()
}

/// Bolt 4's ack of `key` for root (1, ROOT), as stmgr-2 sends it: a control-only stream
/// message for spout task 1.
fn ack_from_peer(h: &mut H, key: i64) {
    let mut buf = heron_proto::tuple::ControlTuples::default();
    buf.push(heron_proto::tuple::ControlKind::Ack, &[(1, ROOT)], key);
    let mut payload = BytesMut::new();
    buf.take_stream_message(1, 4, &mut payload);
    h.core.on_packet(
        PEER_IN,
        &Packet::new(TUPLE_STREAM_MESSAGE, ReqId::ZERO, payload.freeze()),
        h.now,
    );
}

/// The spout was told that tree (1, ROOT) completed, and nothing else.
fn assert_only_root_acked(out: &[Out]) {
    let (acked, failed) = acked_roots(&controls_to(out, SPOUT));
    let root = RootId {
        taskid: 1,
        key: ROOT,
    };
    assert_eq!((acked, failed), (vec![root], vec![]));
}

fn acked_roots(sets: &[HeronControlTupleSet]) -> (Vec<RootId>, Vec<RootId>) {
    let mut acked = Vec::new();
    let mut failed = Vec::new();
    for s in sets {
        for a in &s.acks {
            assert_eq!(a.ackedtuple, 0);
            acked.extend(a.roots.iter().cloned());
        }
        for f in &s.fails {
            failed.extend(f.roots.iter().cloned());
        }
    }
    (acked, failed)
}

#[test]
fn the_reliability_mode_comes_from_the_topology_config() {
    assert_eq!(acking_timeout(&plan_with(api::Grouping::All)), None);
    let p = acking_plan(api::Grouping::All);
    assert_eq!(acking_timeout(&p), Some(Duration::from_secs(3)));
    let legacy = with_config(
        plan_with(api::Grouping::All),
        &[("topology.acking", "true")],
    );
    assert_eq!(acking_timeout(&legacy), Some(Duration::from_secs(30)));
}

#[test]
fn each_copy_gets_its_own_key_and_acks_of_every_copy_complete_the_tree() {
    let mut h = running(api::Grouping::All);
    h.send(SPOUT, &anchored("spout", 1, &["a"], &[(1, ROOT)]));
    let out = h.round(true);
    let (local, remote) = (keys_to(&out, BOLT), keys_to(&out, PEER_OUT));
    assert_eq!(
        (local.len(), remote.len()),
        (1, 1),
        "one copy per bolt task"
    );
    assert!(local[0] != 0 && remote[0] != 0 && local[0] != remote[0]);
    assert_eq!(h.core.pending_trees(), 1);

    // the local bolt acks its copy: not complete yet
    h.send(BOLT, &control(&[(&[(1, ROOT)], local[0])], &[]));
    assert!(controls_to(&h.round(true), SPOUT).is_empty());
    // the remote bolt's ack comes from stmgr-2 as a control-only stream message
    ack_from_peer(&mut h, remote[0]);
    let out = h.round(true);
    assert_only_root_acked(&out);
    assert!(frames_to(&out, BOLT).is_empty(), "control is not forwarded");
    assert_eq!(h.core.pending_trees(), 0);
    assert_eq!(h.core.ack_counters().completed, 1);
}

#[test]
fn bolt_emits_are_anchored_before_the_ack_of_their_input() {
    let mut h = running(api::Grouping::Shuffle);
    // the spout tuple goes to one bolt task; the bolt here re-emits anchored and acks
    h.send(SPOUT, &anchored("spout", 1, &["a"], &[(1, ROOT)]));
    let out = h.round(true);
    let mut keys = keys_to(&out, BOLT);
    keys.extend(keys_to(&out, PEER_OUT));
    assert_eq!(keys.len(), 1);
    let k1 = keys[0];
    // bolt 3 emits two anchored tuples (to nobody: bolt's stream has no consumer here, so
    // use its own stream re-routed as the spout's) and acks k1 in the same message
    let mut msg = anchored("spout", 3, &["b", "c"], &[(1, ROOT)]);
    msg.control = control(&[(&[(1, ROOT)], k1)], &[]).control;
    h.send(BOLT, &msg);
    let out = h.round(true);
    assert!(
        controls_to(&out, SPOUT).is_empty(),
        "the children are outstanding"
    );
    let mut children = keys_to(&out, BOLT);
    children.extend(keys_to(&out, PEER_OUT));
    assert_eq!(children.len(), 2);
    // acking the children, one per message, completes the tree at the last one
    h.send(BOLT, &control(&[(&[(1, ROOT)], children[0])], &[]));
    assert!(controls_to(&h.round(true), SPOUT).is_empty());
    h.send(BOLT, &control(&[(&[(1, ROOT)], children[1])], &[]));
    assert_only_root_acked(&h.round(true));
}

#[test]
fn acks_and_emits_for_a_remote_spout_go_to_its_stream_manager() {
    let mut h = running(api::Grouping::Shuffle);
    // bolt 3 got a tuple of spout 2 (on stmgr-2): its anchored emit and its ack and fail go
    // there, as control-only stream messages addressed to task 2; the emit and the ack held
    // for root (2, ROOT) go as one ack carrying both
    let mut msg = anchored("spout", 3, &["b"], &[(2, ROOT), (1, 5)]);
    msg.control = control(&[(&[(2, ROOT), (9, 1)], 77)], &[(&[(2, ROOT + 1)], 78)]).control;
    h.send(BOLT, &msg);
    let out = h.round(true);
    let mut copies = keys_to(&out, BOLT);
    copies.extend(keys_to(&out, PEER_OUT));
    assert_eq!(copies.len(), 1, "one copy of \"b\"");
    let streams: Vec<TupleStreamMessage> = frames_to(&out, PEER_OUT)
        .into_iter()
        .map(|p| p.decode().unwrap())
        .collect();
    let control: Vec<HeronControlTupleSet> = streams
        .iter()
        .filter_map(|m| HeronTupleSet2::decode(m.set.clone()).unwrap().control)
        .collect();
    assert_eq!(control.len(), 1);
    assert_eq!(streams.iter().filter(|m| m.task_id == 2).count(), 1);
    let c = &control[0];
    assert!(c.emits.is_empty(), "the emit rides in the ack");
    assert_eq!(
        c.acks,
        vec![AckTuple {
            roots: vec![RootId {
                taskid: 2,
                key: ROOT
            }],
            ackedtuple: copies[0] ^ 77
        }]
    );
    assert_eq!(
        c.fails[0].roots,
        vec![RootId {
            taskid: 2,
            key: ROOT + 1
        }]
    );
    // root (9, 1) names no spout task
    assert_eq!(h.core.ack_counters().control_unknown, 1);
}

#[test]
fn a_fail_reports_the_tree_failed_once() {
    let mut h = running(api::Grouping::Shuffle);
    h.send(SPOUT, &anchored("spout", 1, &["a"], &[(1, ROOT)]));
    h.round(true);
    h.send(BOLT, &control(&[], &[(&[(1, ROOT)], 0)]));
    h.send(BOLT, &control(&[], &[(&[(1, ROOT)], 0)]));
    let (acked, failed) = acked_roots(&controls_to(&h.round(true), SPOUT));
    assert!(acked.is_empty());
    assert_eq!(
        failed,
        vec![RootId {
            taskid: 1,
            key: ROOT
        }]
    );
    assert_eq!(h.core.ack_counters().failed, 1);
}

#[test]
fn untracked_trees_expire_with_rotation_and_late_acks_are_ignored() {
    let mut h = running(api::Grouping::Shuffle);
    h.send(SPOUT, &anchored("spout", 1, &["a"], &[(1, ROOT)]));
    let out = h.round(true);
    let mut keys = keys_to(&out, BOLT);
    keys.extend(keys_to(&out, PEER_OUT));
    // timeout 3 s, 3 buckets: gone within 3 s + 3 rotations of 1 s
    h.now += Duration::from_secs(6);
    h.core.on_timer(h.now);
    h.round(true);
    assert_eq!(h.core.pending_trees(), 0);
    h.send(BOLT, &control(&[(&[(1, ROOT)], keys[0])], &[]));
    assert!(controls_to(&h.round(true), SPOUT).is_empty());
}

#[test]
fn unanchored_tuples_keep_key_zero_and_a_spout_tuple_nobody_consumes_completes_at_once() {
    let mut h = running(api::Grouping::All);
    h.send(SPOUT, &tuple_set(&["a"]));
    let out = h.round(true);
    assert_eq!(keys_to(&out, BOLT), vec![0]);
    assert_eq!(h.core.pending_trees(), 0);
    // a stream without consumers
    let mut set = anchored("spout", 1, &["z"], &[(1, ROOT)]);
    set.data.as_mut().unwrap().stream.id = "nobody".into();
    h.send(SPOUT, &set);
    let (acked, _) = acked_roots(&controls_to(&h.round(true), SPOUT));
    assert!(acked.is_empty(), "an unknown stream is dropped, not acked");
}

#[test]
fn at_most_once_keeps_tuples_unkeyed_and_untracked() {
    let mut h = H::running(api::Grouping::All);
    h.send(SPOUT, &anchored("spout", 1, &["a"], &[(1, ROOT)]));
    let out = h.round(true);
    assert_eq!(keys_to(&out, BOLT), vec![0]);
    assert_eq!(h.core.pending_trees(), 0);
    h.send(BOLT, &control(&[(&[(1, ROOT)], 0)], &[]));
    assert!(controls_to(&h.round(true), SPOUT).is_empty());
    assert_eq!(h.core.counters().control_sets_ignored, 1);
}

/// A bolt's output as our emitter writes it in ATLEAST_ONCE: one set of `words` addressed to
/// task `to` and keyed (word and key each), then a control set with the merged emits of the
/// keys and `acks`, as two packets from task `src`.
fn keyed_output(
    src: i32,
    to: i32,
    words: &[(&str, i64)],
    root: (i32, i64),
    acks: &[((i32, i64), i64)],
) -> Vec<Packet> {
    use heron_proto::tuple::{ControlKind, ControlTuples};
    let mut tuples = BytesMut::new();
    let mut control = ControlTuples::default();
    for &(w, k) in words {
        let v = data_tuple(w).values[0].clone();
        heron_proto::tuple::put_data_tuple_keyed(&mut tuples, k, &[root], &[&v[..]], &[]);
        control.push_merged(ControlKind::Emit, &[root], k);
    }
    for &(r, k) in acks {
        control.push_merged(ControlKind::Ack, &[r], k);
    }
    let mut frames = BytesMut::new();
    let stream = heron_proto::tuple::stream_field("default", "spout");
    heron_proto::tuple::put_data_set_frame_to(&mut frames, &stream, to, true, &tuples, src);
    control.take_frame(&mut frames, src);
    let mut packets = Vec::new();
    let codec = HeronCodec::new(0);
    while let Some(p) = codec.decode_packet(&mut frames).unwrap() {
        packets.push(p);
    }
    packets
}

#[test]
fn a_keyed_set_is_forwarded_with_its_keys_and_its_emits_complete_the_tree() {
    let mut h = running(api::Grouping::Fields);
    // the spout's tuple: keyed here, to bolt 3 (no grouping fields: the first task)
    h.send(SPOUT, &anchored("spout", 1, &["a"], &[(1, ROOT)]));
    let k0 = keys_to(&h.round(true), BOLT)[0];
    // bolt 3 emits two tuples it keyed itself to task 3 and one to task 4, and acks k0
    let (kb, kc, kd) = (0x0b, 0x0c, 0x0d);
    for p in keyed_output(3, 3, &[("b", kb), ("c", kc)], (1, ROOT), &[])
        .iter()
        .chain(&keyed_output(
            3,
            4,
            &[("d", kd)],
            (1, ROOT),
            &[((1, ROOT), k0)],
        ))
    {
        h.core.on_packet(BOLT, p, h.now);
    }
    let out = h.round(true);
    assert_eq!(
        keys_to(&out, BOLT),
        vec![kb, kc],
        "forwarded with their keys"
    );
    assert_eq!(keys_to(&out, PEER_OUT), vec![kd]);
    assert!(controls_to(&out, SPOUT).is_empty(), "b, c and d are out");
    assert_eq!(h.core.pending_trees(), 1);
    // their acks (the remote one from stmgr-2) complete the tree
    h.send(BOLT, &control(&[(&[(1, ROOT)], kb ^ kc)], &[]));
    assert!(controls_to(&h.round(true), SPOUT).is_empty());
    ack_from_peer(&mut h, kd);
    assert_only_root_acked(&h.round(true));
}

#[test]
fn a_keyed_set_routed_per_tuple_keeps_the_senders_key_on_its_first_copy() {
    // ALL: the address is ignored, and every tuple goes to both bolt tasks
    let mut h = running(api::Grouping::All);
    h.send(SPOUT, &anchored("spout", 1, &["a"], &[(1, ROOT)]));
    let out = h.round(true);
    let (k0, k0_remote) = (keys_to(&out, BOLT)[0], keys_to(&out, PEER_OUT)[0]);
    let kb = 0x0b;
    for p in keyed_output(3, 3, &[("b", kb)], (1, ROOT), &[((1, ROOT), k0)]) {
        h.core.on_packet(BOLT, &p, h.now);
    }
    let out = h.round(true);
    let (local, remote) = (keys_to(&out, BOLT), keys_to(&out, PEER_OUT));
    assert_eq!(local, vec![kb], "the first copy keeps the sender's key");
    assert_eq!(remote.len(), 1);
    assert!(remote[0] != 0 && remote[0] != kb);
    // acking every copy (and the spout tuple's remote copy) completes the tree
    h.send(BOLT, &control(&[(&[(1, ROOT)], kb)], &[]));
    ack_from_peer(&mut h, remote[0] ^ k0_remote);
    assert_only_root_acked(&h.round(true));
    assert_eq!(h.core.pending_trees(), 0);
}

#[test]
fn a_spouts_tree_starts_ahead_of_its_keyed_set_start_its_trees_and_the_set_goes_whole() {
    use heron_proto::tuple::{ControlKind, ControlTuples};
    let mut h = running(api::Grouping::Shuffle);
    // as our emitter writes a spout's output: an emit per tuple, then the set to task 3
    let (ka, kb) = (0x0a, 0x0b);
    let (mut starts, mut tuples, mut frames) =
        (ControlTuples::default(), BytesMut::new(), BytesMut::new());
    for (w, root, k) in [("a", ROOT, ka), ("b", ROOT + 1, kb)] {
        let v = data_tuple(w).values[0].clone();
        heron_proto::tuple::put_data_tuple_keyed(&mut tuples, k, &[(1, root)], &[&v[..]], &[]);
        starts.push(ControlKind::Emit, &[(1, root)], k);
    }
    starts.take_frame(&mut frames, 1);
    let stream = heron_proto::tuple::stream_field("default", "spout");
    heron_proto::tuple::put_data_set_frame_to(&mut frames, &stream, 3, true, &tuples, 1);
    let codec = HeronCodec::new(0);
    while let Some(p) = codec.decode_packet(&mut frames).unwrap() {
        h.core.on_packet(SPOUT, &p, h.now);
    }
    let out = h.round(true);
    assert_eq!(keys_to(&out, BOLT), vec![ka, kb], "forwarded as keyed");
    assert!(keys_to(&out, PEER_OUT).is_empty());
    assert_eq!(h.core.pending_trees(), 2);
    // the bolt acks "a": its tree completes, the other stays
    h.send(BOLT, &control(&[(&[(1, ROOT)], ka)], &[]));
    assert_only_root_acked(&h.round(true));
    assert_eq!(h.core.pending_trees(), 1);
}

/// Spout 1's trees `roots` acked whole: each root's copy at bolt 3 by bolt 3, and its copy at
/// bolt 4 by stmgr-2 (`keys` as sent, per root: local then remote).
fn ack_trees(h: &mut H, roots: &[i64], local: &[i64], remote: &[i64]) {
    for (i, &root) in roots.iter().enumerate() {
        h.send(BOLT, &control(&[(&[(1, root)], local[i])], &[]));
        let mut buf = heron_proto::tuple::ControlTuples::default();
        buf.push(
            heron_proto::tuple::ControlKind::Ack,
            &[(1, root)],
            remote[i],
        );
        let mut payload = BytesMut::new();
        buf.take_stream_message(1, 4, &mut payload);
        let packet = Packet::new(TUPLE_STREAM_MESSAGE, ReqId::ZERO, payload.freeze());
        h.core.on_packet(PEER_IN, &packet, h.now);
    }
}

#[test]
fn a_spout_held_by_its_full_window_is_told_once_it_would_emit_again() {
    let plan = with_config(
        acking_plan(api::Grouping::All),
        &[
            ("topology.reliability.mode", "ATLEAST_ONCE"),
            ("topology.max.spout.pending", "2"),
        ],
    );
    let mut h = H::with_peer(plan);
    h.round(true);
    let acked = |out: &[Out]| acked_roots(&controls_to(out, SPOUT)).0.len();

    // a spout whose window is not full is told at the end of the round
    h.send(SPOUT, &anchored("spout", 1, &["e"], &[(1, ROOT + 9)]));
    let out = h.round(true);
    let (local, remote) = (keys_to(&out, BOLT), keys_to(&out, PEER_OUT));
    ack_trees(&mut h, &[ROOT + 9], &local, &remote);
    assert_eq!(acked(&h.round(true)), 1);

    // the spout fills its window of 2
    let roots = [ROOT, ROOT + 1];
    h.send(SPOUT, &anchored("spout", 1, &["a"], &[(1, roots[0])]));
    h.send(SPOUT, &anchored("spout", 1, &["b"], &[(1, roots[1])]));
    let out = h.round(true);
    let (local, remote) = (keys_to(&out, BOLT), keys_to(&out, PEER_OUT));
    assert_eq!((local.len(), remote.len()), (2, 2));
    // one tree completes: a spout with one slot of 2 free would not emit, so it is not told
    ack_trees(&mut h, &roots[..1], &local, &remote);
    assert_eq!(acked(&h.round(true)), 0, "kept for the held spout");
    assert_eq!(
        h.core.ack_counters().completed,
        2,
        "the first tree and this one"
    );
    assert!(h.core.next_deadline().unwrap() <= h.now + REFILL_WAIT);
    // the other completes: both acks go in one set
    ack_trees(&mut h, &roots[1..], &local[1..], &remote[1..]);
    let out = h.round(true);
    assert_eq!(acked(&out), 2);
    assert_eq!(controls_to(&out, SPOUT).len(), 1, "one set for the window");

    // the window fills again and one tree is lost: the other's ack goes after the refill wait
    let roots = [ROOT + 2, ROOT + 3];
    h.send(SPOUT, &anchored("spout", 1, &["c"], &[(1, roots[0])]));
    h.send(SPOUT, &anchored("spout", 1, &["d"], &[(1, roots[1])]));
    let out = h.round(true);
    let (local, remote) = (keys_to(&out, BOLT), keys_to(&out, PEER_OUT));
    ack_trees(&mut h, &roots[..1], &local, &remote);
    assert_eq!(acked(&h.round(true)), 0);
    h.now += REFILL_WAIT / 2;
    assert_eq!(acked(&h.round(true)), 0);
    h.now += REFILL_WAIT / 2;
    assert_eq!(acked(&h.round(true)), 1, "due after the refill wait");
}
