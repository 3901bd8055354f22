use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::{
    values, BasicBolt, BasicBoltAdapter, BasicOutputCollector, Bolt, FailedException, Fields,
    OutputCollector, SpoutOutputCollector,
};
use heron_proto::system::{HeronDataTupleSet, RootId};

fn decl(id: &str, fields: &[&str], direct: bool) -> StreamDecl {
    StreamDecl {
        id: id.into(),
        fields: Fields::new(fields.iter().copied()),
        direct,
    }
}

fn emitter(mode: ReliabilityMode) -> Emitter {
    Emitter::new(
        "comp",
        5,
        mode,
        &[
            decl("default", &["w", "n"], false),
            decl("other", &["x"], false),
            decl("direct", &["x"], true),
        ],
    )
}

fn input(roots: Vec<(i32, i64)>, key: i64) -> Tuple {
    let source = Arc::new(crate::TupleSource::new("up", "default", Fields::new(["x"])));
    Tuple::from_runtime(source, 1, values!["in"], key, &roots)
}

fn data(set: &HeronTupleSet) -> &HeronDataTupleSet {
    set.data.as_ref().expect("a data set")
}

#[test]
fn atmost_once_spout_emit_is_acked_immediately_without_roots() {
    let mut e = emitter(ReliabilityMode::AtMostOnce);
    let mut c = SpoutOutputCollector::new(&mut e);
    c.emit_with_id(values!["a", 1], "m1");
    c.emit(values!["b", 2]);
    assert_eq!(c.pending_count(), 0);
    assert_eq!(e.in_flight(), 0);
    assert_eq!(e.take_immediate_acks(), vec![Value::from("m1")]);
    assert!(e.take_immediate_acks().is_empty());
    let out = e.take_output();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].src_task_id, 5);
    assert!(out[0].control.is_none());
    let d = data(&out[0]);
    assert_eq!(d.stream.id, "default");
    assert_eq!(d.stream.component_name, "comp");
    assert_eq!(d.tuples.len(), 2);
    for t in &d.tuples {
        assert_eq!(t.key, 0);
        assert!(t.roots.is_empty());
        assert!(t.dest_task_ids.is_empty());
    }
    let mut expected = Vec::new();
    Value::from("a").encode(&mut expected);
    assert_eq!(&d.tuples[0].values[0][..], &expected[..]);
    assert_eq!(Value::decode(&d.tuples[0].values[1]), Ok(Value::Int(1)));
    assert_eq!(e.counters().emitted, 2);
    assert_eq!(e.counters().acked, 1);
    assert!(!e.has_output());
    assert_eq!(e.pending_bytes(), 0);
}

#[test]
fn atleast_once_spout_emit_tracks_a_root() {
    let mut e = emitter(ReliabilityMode::AtLeastOnce);
    SpoutOutputCollector::new(&mut e).emit_with_id(values!["a", 1], 11);
    SpoutOutputCollector::new(&mut e).emit_with_id(values!["b", 2], 12);
    SpoutOutputCollector::new(&mut e).emit(values!["c", 3]);
    assert_eq!(e.in_flight(), 2);
    assert!(e.take_immediate_acks().is_empty());
    let out = e.take_output();
    let tuples = &data(&out[0]).tuples;
    assert_eq!(tuples.len(), 3);
    let r1 = &tuples[0].roots;
    let r2 = &tuples[1].roots;
    assert_eq!(r1.len(), 1);
    assert_eq!(r1[0].taskid, 5);
    assert_ne!(r1[0].key, 0);
    assert_ne!(r1[0].key, r2[0].key);
    assert!(tuples[2].roots.is_empty(), "no message id: untracked");
    assert_eq!(tuples[0].key, 0, "the stmgr assigns tuple keys");

    let (msg, _latency) = e.spout_acked(r1[0].key).expect("in flight");
    assert_eq!(msg, Value::Int(11));
    assert!(e.spout_acked(r1[0].key).is_none(), "acked once");
    assert_eq!(e.spout_failed(r2[0].key), Some(Value::Int(12)));
    assert_eq!(e.in_flight(), 0);
    let c = e.counters();
    assert_eq!((c.emitted, c.acked, c.failed), (3, 1, 1));
}

#[test]
fn expire_fails_old_tuples_oldest_first() {
    let mut e = emitter(ReliabilityMode::AtLeastOnce);
    for i in 0..3 {
        SpoutOutputCollector::new(&mut e).emit_with_id(values!["a", i], i);
    }
    let keys: Vec<i64> = data(&e.take_output()[0])
        .tuples
        .iter()
        .map(|t| t.roots[0].key)
        .collect();
    assert!(e.spout_acked(keys[1]).is_some());
    let timeout = Duration::from_secs(30);
    assert!(
        e.expire(Instant::now(), timeout).is_empty(),
        "nothing is old yet"
    );
    let later = Instant::now() + timeout;
    assert_eq!(e.expire(later, timeout), vec![Value::Int(0), Value::Int(2)]);
    assert_eq!(e.in_flight(), 0);
    assert_eq!(e.counters().failed, 2);
    assert!(e.spout_acked(keys[0]).is_none(), "expired entries are gone");
}

#[test]
fn in_flight_order_is_compacted() {
    let mut e = emitter(ReliabilityMode::AtLeastOnce);
    for i in 0..5000 {
        SpoutOutputCollector::new(&mut e).emit_with_id(values!["a", i], i);
        let out = e.take_output();
        let key = data(&out[0]).tuples[0].roots[0].key;
        e.spout_acked(key).unwrap();
    }
    assert!(
        e.in_flight.order.len() <= 1025,
        "{}",
        e.in_flight.order.len()
    );
}

#[test]
fn one_set_per_run_of_same_stream_tuples_then_control() {
    let mut e = emitter(ReliabilityMode::AtLeastOnce);
    let t = input(vec![(1, 77)], 99);
    let mut c = OutputCollector::new(&mut e);
    c.emit_anchored(&[&t], values!["a", 1]);
    c.emit_anchored(&[&t], values!["b", 2]);
    c.emit_stream("other", &[&t], values!["x"]);
    c.ack(&t);
    c.emit(values!["c", 3]);
    let out = e.take_output();
    let streams: Vec<Option<(&str, usize)>> = out
        .iter()
        .map(|s| {
            s.data
                .as_ref()
                .map(|d| (d.stream.id.as_str(), d.tuples.len()))
        })
        .collect();
    assert_eq!(
        streams,
        vec![
            Some(("default", 2)),
            Some(("other", 1)),
            Some(("default", 1)),
            None
        ]
    );
    let control = out[3].control.as_ref().unwrap();
    assert_eq!(control.acks.len(), 1);
    assert_eq!(control.acks[0].ackedtuple, 99);
    assert_eq!(control.acks[0].roots, vec![RootId { taskid: 1, key: 77 }]);
    assert!(out.iter().all(|s| s.src_task_id == 5));
    let d0 = data(&out[0]);
    assert_eq!(d0.tuples[0].roots, vec![RootId { taskid: 1, key: 77 }]);
    assert!(data(&out[2]).tuples[0].roots.is_empty(), "unanchored");
}

#[test]
fn anchored_emit_carries_the_union_of_roots() {
    let mut e = emitter(ReliabilityMode::AtLeastOnce);
    let a = input(vec![(1, 10), (2, 20)], 1);
    let b = input(vec![(2, 20), (3, 30)], 2);
    OutputCollector::new(&mut e).emit_anchored(&[&a, &b], values!["a", 1]);
    let out = e.take_output();
    let roots: Vec<(i32, i64)> = data(&out[0]).tuples[0]
        .roots
        .iter()
        .map(|r| (r.taskid, r.key))
        .collect();
    assert_eq!(roots, vec![(1, 10), (2, 20), (3, 30)]);
}

#[test]
fn atmost_once_bolt_sends_no_roots_and_no_acks() {
    let mut e = emitter(ReliabilityMode::AtMostOnce);
    let t = input(vec![(1, 10)], 4);
    let mut c = OutputCollector::new(&mut e);
    c.emit_anchored(&[&t], values!["a", 1]);
    c.ack(&t);
    c.fail(&t);
    assert!(!e.has_acks(), "no acks to send in ATMOST_ONCE");
    let out = e.take_output();
    assert_eq!(out.len(), 1);
    assert!(data(&out[0]).tuples[0].roots.is_empty());
    assert_eq!(e.counters().acked, 1);
    assert_eq!(e.counters().failed, 1);
}

#[test]
fn fail_and_rootless_ack_in_atleast_once() {
    let mut e = emitter(ReliabilityMode::AtLeastOnce);
    let rootless = input(vec![], 0);
    let t = input(vec![(1, 10)], 4);
    let mut c = OutputCollector::new(&mut e);
    c.ack(&rootless);
    assert!(
        !e.has_output(),
        "nothing to tell the stmgr about an untracked tuple"
    );
    OutputCollector::new(&mut e).fail(&t);
    let out = e.take_output();
    assert_eq!(out.len(), 1);
    let control = out[0].control.as_ref().unwrap();
    assert!(control.acks.is_empty());
    assert_eq!(control.fails.len(), 1);
    assert_eq!(control.fails[0].ackedtuple, 4);
}

#[test]
fn control_sets_are_bounded_and_keep_order() {
    let mut e = emitter(ReliabilityMode::AtLeastOnce);
    let t = input(vec![(1, 10)], 4);
    OutputCollector::new(&mut e).emit_anchored(&[&t], values!["a", 1]);
    assert!(!e.has_acks());
    for i in 0..CONTROL_SET_MAX_TUPLES {
        // a root each: acks of one root would merge into one entry
        OutputCollector::new(&mut e).ack(&input(vec![(1, 100 + i as i64)], 4));
    }
    OutputCollector::new(&mut e).emit_anchored(&[&t], values!["b", 2]);
    assert!(e.has_acks(), "a full control set is framed, still waiting");
    OutputCollector::new(&mut e).ack(&t);
    let out = e.take_output();
    assert!(!e.has_acks(), "taken");
    let kinds: Vec<&str> = out
        .iter()
        .map(|s| if s.data.is_some() { "data" } else { "control" })
        .collect();
    assert_eq!(kinds, ["data", "control", "data", "control"]);
    assert_eq!(
        out[1].control.as_ref().unwrap().acks.len(),
        CONTROL_SET_MAX_TUPLES
    );
}

#[test]
fn data_sets_are_bounded() {
    let mut e = emitter(ReliabilityMode::AtMostOnce);
    for i in 0..DATA_SET_MAX_TUPLES + 1 {
        OutputCollector::new(&mut e).emit(values!["w", i]);
    }
    let big = "x".repeat(DATA_SET_MAX_BYTES);
    OutputCollector::new(&mut e).emit(values![big, 0]);
    OutputCollector::new(&mut e).emit(values!["y", 0]);
    let out = e.take_output();
    let sizes: Vec<usize> = out.iter().map(|s| data(s).tuples.len()).collect();
    assert_eq!(sizes, [DATA_SET_MAX_TUPLES, 2, 1]);
}

#[test]
fn emit_direct_sets_the_destination() {
    let mut e = emitter(ReliabilityMode::AtMostOnce);
    SpoutOutputCollector::new(&mut e).emit_direct(9, "direct", values!["x"], None);
    let out = e.take_output();
    assert_eq!(data(&out[0]).tuples[0].dest_task_ids, vec![9]);
}

#[test]
#[should_panic(expected = "stream \"nope\", which it does not declare")]
fn undeclared_stream_panics() {
    let mut e = emitter(ReliabilityMode::AtMostOnce);
    OutputCollector::new(&mut e).emit_stream("nope", &[], values!["x"]);
}

#[test]
#[should_panic(expected = "emitted 1 values on stream \"default\", which declares 2 fields [w, n]")]
fn wrong_value_count_panics() {
    let mut e = emitter(ReliabilityMode::AtMostOnce);
    OutputCollector::new(&mut e).emit(values!["x"]);
}

#[test]
#[should_panic(expected = "emit_direct on stream \"other\", which is not declared direct")]
fn emit_direct_on_plain_stream_panics() {
    let mut e = emitter(ReliabilityMode::AtMostOnce);
    OutputCollector::new(&mut e).emit_direct(1, "other", &[], values!["x"]);
}

#[test]
#[should_panic(expected = "emitted on direct stream \"direct\" without emit_direct")]
fn plain_emit_on_direct_stream_panics() {
    let mut e = emitter(ReliabilityMode::AtMostOnce);
    OutputCollector::new(&mut e).emit_stream("direct", &[], values!["x"]);
}

#[derive(Clone)]
struct ByLen {
    tasks: Vec<i32>,
    stream: String,
}

impl CustomStreamGrouping for ByLen {
    fn prepare(&mut self, _ctx: &TopologyContext, stream: &str, target_tasks: &[i32]) {
        self.tasks = target_tasks.to_vec();
        self.stream = stream.to_owned();
    }
    fn choose_tasks(&mut self, values: &[Value]) -> Vec<i32> {
        assert_eq!(self.stream, "default", "prepared before use");
        let n = values[0].as_str().unwrap().len();
        vec![self.tasks[n % self.tasks.len()]]
    }
}

struct Src;
impl crate::Spout for Src {
    fn declare_output_fields(&self, d: &mut crate::OutputFieldsDeclarer) {
        d.declare(Fields::new(["w"]));
    }
    fn next_tuple(&mut self, _: &mut SpoutOutputCollector) {}
}
struct Sink;
impl Bolt for Sink {
    fn execute(&mut self, _: &Tuple, _: &mut OutputCollector) {}
}

#[test]
fn custom_grouping_chooses_destinations() {
    let mut b = crate::TopologyBuilder::new();
    b.set_spout("src", || Src, 1);
    let g = ByLen {
        tasks: vec![],
        stream: String::new(),
    };
    b.set_bolt("sink", || Sink, 2)
        .custom_grouping("src", "default", g);
    b.set_bolt("other", || Sink, 1).shuffle_grouping("src");
    let topology = b.build("t", crate::Config::new()).unwrap();
    let ctx = TopologyContext::builder("t", "src", 1)
        .component_tasks("sink", [3, 2])
        .component_tasks("other", [4])
        .build();
    let mut e = Emitter::for_task(&topology, &ctx);
    let mut c = SpoutOutputCollector::new(&mut e);
    c.emit(values!["ab"]);
    c.emit(values!["abc"]);
    let out = e.take_output();
    let dests: Vec<Vec<i32>> = data(&out[0])
        .tuples
        .iter()
        .map(|t| t.dest_task_ids.clone())
        .collect();
    assert_eq!(dests, vec![vec![2], vec![3]]);
    // a pinned emit keeps the custom grouping's choice after the pins
    let mut c = SpoutOutputCollector::new(&mut e);
    c.emit_pinned("default", values!["ab"], None, &[4]);
    let out = e.take_output();
    assert_eq!(data(&out[0]).tuples[0].dest_task_ids, vec![4, 2]);
}

struct Upper {
    fail_on: &'static str,
}
impl BasicBolt for Upper {
    fn execute(&mut self, t: &Tuple, c: &mut BasicOutputCollector) -> Result<(), FailedException> {
        let w = t.get_str(0).unwrap();
        if w == self.fail_on {
            return Err(FailedException::reported("bad word"));
        }
        c.emit(values![w.to_uppercase(), 1]);
        Ok(())
    }
}

#[test]
fn basic_bolt_anchors_acks_and_fails() {
    let mut e = emitter(ReliabilityMode::AtLeastOnce);
    let mut bolt = BasicBoltAdapter::new(Upper { fail_on: "bad" });
    let source = Arc::new(crate::TupleSource::new("up", "default", Fields::new(["w"])));
    let good = Tuple::from_runtime(source.clone(), 1, values!["in"], 41, &[(1, 10)]);
    let bad = Tuple::from_runtime(source, 1, values!["bad"], 42, &[(1, 11)]);
    bolt.execute(&good, &mut OutputCollector::new(&mut e));
    bolt.execute(&bad, &mut OutputCollector::new(&mut e));
    assert_eq!(e.take_errors(), vec!["bad word".to_string()]);
    let out = e.take_output();
    assert_eq!(out.len(), 2);
    let t = &data(&out[0]).tuples[0];
    assert_eq!(Value::decode(&t.values[0]), Ok(Value::from("IN")));
    assert_eq!(
        t.roots,
        vec![RootId { taskid: 1, key: 10 }],
        "anchored to the input"
    );
    let control = out[1].control.as_ref().unwrap();
    assert_eq!(control.acks.len(), 1);
    assert_eq!(control.acks[0].ackedtuple, 41);
    assert_eq!(control.fails.len(), 1);
    assert_eq!(control.fails[0].ackedtuple, 42);
}

#[test]
fn key_rng_never_yields_zero_and_varies() {
    let mut r = KeyRng(0);
    let keys: Vec<i64> = (0..1000).map(|_| r.next_nonzero()).collect();
    assert!(keys.iter().all(|&k| k != 0));
    let unique: std::collections::HashSet<_> = keys.iter().collect();
    assert_eq!(unique.len(), keys.len());
}

#[test]
fn pinned_bolt_emit_carries_the_tasks_and_anchors_as_usual() {
    let mut e = emitter(ReliabilityMode::AtLeastOnce);
    let a = input(vec![(1, 10), (2, 20)], 41);
    let mut c = OutputCollector::new(&mut e);
    c.emit_pinned("default", &[&a], values!["p", 1], &[11, 12]);
    c.emit_stream("default", &[&a], values!["q", 2]);
    c.ack(&a);
    let out = e.take_output();
    assert_eq!(out.len(), 2, "one data set, then the control set");
    let tuples = &data(&out[0]).tuples;
    assert_eq!(tuples[0].dest_task_ids, vec![11, 12]);
    assert!(
        tuples[1].dest_task_ids.is_empty(),
        "the pins stay with their tuple"
    );
    let roots = vec![RootId { taskid: 1, key: 10 }, RootId { taskid: 2, key: 20 }];
    assert_eq!(tuples[0].roots, roots, "anchored like any emit");
    assert_eq!(tuples[1].roots, roots);
    assert_eq!(Value::decode(&tuples[0].values[0]), Ok(Value::from("p")));
    let control = out[1].control.as_ref().unwrap();
    assert_eq!(control.acks.len(), 1);
    assert_eq!(control.acks[0].ackedtuple, 41);
    assert_eq!(e.counters().emitted, 2);
}

#[test]
fn pinned_spout_emit_carries_the_tasks_and_is_tracked_as_usual() {
    let mut e = emitter(ReliabilityMode::AtLeastOnce);
    SpoutOutputCollector::new(&mut e).emit_pinned("other", values!["x"], Some("m".into()), &[3]);
    assert_eq!(e.in_flight(), 1);
    let out = e.take_output();
    let t = &data(&out[0]).tuples[0];
    assert_eq!(t.dest_task_ids, vec![3]);
    assert_eq!(t.roots.len(), 1);
    assert_eq!(t.roots[0].taskid, 5);
    assert_eq!(e.spout_acked(t.roots[0].key).unwrap().0, Value::from("m"));
    // at most once: the message id is acked at once, and no roots
    let mut e = emitter(ReliabilityMode::AtMostOnce);
    SpoutOutputCollector::new(&mut e).emit_pinned("other", values!["x"], Some("n".into()), &[4]);
    let out = e.take_output();
    let t = &data(&out[0]).tuples[0];
    assert_eq!((t.dest_task_ids.clone(), t.roots.len()), (vec![4], 0));
    assert_eq!(e.take_immediate_acks(), vec![Value::from("n")]);
}

#[test]
#[should_panic(expected = "emit_pinned on direct stream \"direct\"")]
fn pinned_emit_on_a_direct_stream_panics() {
    let mut e = emitter(ReliabilityMode::AtMostOnce);
    OutputCollector::new(&mut e).emit_pinned("direct", &[], values!["x"], &[1]);
}

#[test]
fn acks_of_tuples_with_one_root_in_common_go_out_as_one_with_the_xor_of_their_keys() {
    let mut e = emitter(ReliabilityMode::AtLeastOnce);
    let words = [
        input(vec![(1, 10)], 0b001),
        input(vec![(1, 10)], 0b010),
        input(vec![(1, 11)], 5),
    ];
    let two_roots = input(vec![(1, 10), (1, 11)], 0b100);
    for t in words.iter().chain([&two_roots]) {
        OutputCollector::new(&mut e).ack(t);
    }
    assert_eq!(e.counters().acked, 4, "every ack counts");
    let out = e.take_output();
    let acks = &out[0].control.as_ref().unwrap().acks;
    let seen: Vec<(Vec<(i32, i64)>, i64)> = acks
        .iter()
        .map(|a| {
            (
                a.roots.iter().map(|r| (r.taskid, r.key)).collect(),
                a.ackedtuple,
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (vec![(1, 10)], 0b011),
            (vec![(1, 11)], 5),
            (vec![(1, 10), (1, 11)], 0b100),
        ]
    );
}

/// (stream, addressed task, values' first bytes) of every data set in the emitter's frames.
fn addressed_sets(e: &mut Emitter) -> Vec<(String, Option<i32>, usize)> {
    let mut frames = BytesMut::from(&e.take_frames()[..]);
    let codec = HeronCodec::new(0);
    let mut out = Vec::new();
    while let Some(p) = codec.decode_packet(&mut frames).unwrap() {
        let parts = heron_proto::tuple::split_tuple_set(&p.payload).unwrap();
        if let Some(d) = parts.data {
            let set = heron_proto::tuple::split_data_set(d).unwrap();
            out.push((set.stream.to_string(), set.dest_task, set.count() as usize));
        }
    }
    out
}

#[test]
fn a_streams_one_shuffle_consumer_gets_sets_addressed_in_turn() {
    let topology_with = |grouping: &str, mode: ReliabilityMode| {
        let mut b = crate::TopologyBuilder::new();
        b.set_spout("src", || Src, 1);
        let mut sink = b.set_bolt("sink", || Sink, 2);
        match grouping {
            "shuffle" => sink.shuffle_grouping("src"),
            "none" => sink.none_grouping("src"),
            _ => sink.local_or_shuffle_grouping("src"),
        };
        let mut conf = crate::Config::new();
        conf.set_reliability_mode(mode);
        let topology = b.build("t", conf.clone()).unwrap();
        let kind = match grouping {
            "shuffle" => crate::GroupingKind::Shuffle,
            "none" => crate::GroupingKind::None,
            _ => crate::GroupingKind::LocalOrShuffle,
        };
        let ctx = TopologyContext::builder("t", "src", 1)
            .component_tasks("sink", [3, 2])
            .subscription("sink", "src", "default", kind)
            .config(conf)
            .build();
        Emitter::for_task(&topology, &ctx)
    };
    let s = |n: &str| n.to_string();
    for grouping in ["shuffle", "none"] {
        let mut e = topology_with(grouping, ReliabilityMode::AtMostOnce);
        for w in ["a", "b", "c", "d", "e"] {
            SpoutOutputCollector::new(&mut e).emit(values![w]);
        }
        // one tuple to each task in turn, from a random start: 3 to one, 2 to the other,
        // each set naming its task
        let mut got = addressed_sets(&mut e);
        got.sort();
        assert!(
            got == vec![(s("default"), Some(2), 3), (s("default"), Some(3), 2)]
                || got == vec![(s("default"), Some(2), 2), (s("default"), Some(3), 3)],
            "{grouping}: {got:?}"
        );
        // the round robin goes on across flushes: 10 more tuples, 5 each
        for _ in 0..10 {
            SpoutOutputCollector::new(&mut e).emit(values!["x"]);
        }
        let got: Vec<_> = addressed_sets(&mut e)
            .into_iter()
            .map(|(_, t, n)| (t, n))
            .collect();
        assert_eq!(got.iter().map(|(_, n)| n).sum::<usize>(), 10);
        assert!(got.iter().all(|(t, n)| t.is_some() && *n == 5), "{got:?}");
    }
    // a spout's tuples with acking: addressed as well, each keyed, its tree started by an
    // emit framed ahead of the data
    let mut e = topology_with("shuffle", ReliabilityMode::AtLeastOnce);
    for i in 0..4 {
        SpoutOutputCollector::new(&mut e).emit_with_id(values!["a"], i);
    }
    SpoutOutputCollector::new(&mut e).emit(values!["b"]); // no id: no tree
    let mut frames = BytesMut::from(&e.take_frames()[..]);
    let codec = HeronCodec::new(0);
    let mut sets = Vec::new();
    while let Some(p) = codec.decode_packet(&mut frames).unwrap() {
        sets.push(p.decode::<HeronTupleSet>().unwrap());
    }
    let starts = sets[0].control.as_ref().expect("the tree starts first");
    assert!(starts.acks.is_empty() && starts.fails.is_empty());
    let mut keyed: Vec<(i64, i64)> = Vec::new();
    for set in &sets[1..] {
        assert!(set.control.is_none());
        for t in &data(set).tuples {
            if let [root] = &t.roots[..] {
                assert_eq!(root.taskid, 1);
                keyed.push((root.key, t.key));
            } else {
                assert!(t.roots.is_empty() && t.key == 0);
            }
        }
    }
    assert_eq!(keyed.len(), 4);
    assert!(keyed.iter().all(|&(_, k)| k != 0));
    let mut started: Vec<(i64, i64)> = starts
        .emits
        .iter()
        .map(|e| (e.roots[0].key, e.ackedtuple))
        .collect();
    keyed.sort();
    started.sort();
    assert_eq!(started, keyed, "one emit per tuple: its root and its key");
    // local-or-shuffle needs the containers: the stream manager chooses
    let mut e = topology_with("local", ReliabilityMode::AtMostOnce);
    SpoutOutputCollector::new(&mut e).emit(values!["a"]);
    assert_eq!(addressed_sets(&mut e), vec![(s("default"), None, 1)]);
}

#[test]
fn direct_tuples_go_in_one_set_per_task_and_runs_keep_their_order() {
    let mut e = emitter(ReliabilityMode::AtMostOnce);
    for task in [7, 8, 7, 7] {
        e.emit_bolt("direct", Some(task), &[], &values!["x"]);
    }
    e.emit_bolt("other", None, &[], &values!["y"]);
    e.emit_bolt("direct", Some(8), &[], &values!["z"]);
    let s = |n: &str| n.to_string();
    assert_eq!(
        addressed_sets(&mut e),
        vec![
            (s("direct"), Some(7), 3),
            (s("direct"), Some(8), 1),
            (s("other"), None, 1),
            (s("direct"), Some(8), 1),
        ]
    );
    // with acking, tuples (unanchored or not) are addressed too
    let mut e = emitter(ReliabilityMode::AtLeastOnce);
    let t = input(vec![(1, 2)], 3);
    e.emit_bolt("direct", Some(7), &[], &values!["x"]);
    e.emit_bolt("direct", Some(8), &[&t], &values!["x"]);
    e.emit_bolt("direct", Some(7), &[], &values!["x"]);
    assert_eq!(
        addressed_sets(&mut e),
        vec![(s("direct"), Some(7), 2), (s("direct"), Some(8), 1)]
    );
    for msg_id in [None, Some(Value::from(1))] {
        e.emit_spout("direct", Some(7), &values!["x"], msg_id.clone());
        e.emit_spout("direct", Some(8), &values!["x"], msg_id);
        assert_eq!(
            addressed_sets(&mut e),
            vec![(s("direct"), Some(7), 1), (s("direct"), Some(8), 1)]
        );
    }
}

#[test]
fn with_acking_a_bolts_addressed_tuples_carry_keys_whose_emits_go_in_its_control_set() {
    let mut e = emitter(ReliabilityMode::AtLeastOnce);
    let (a, b) = (input(vec![(1, 10)], 3), input(vec![(1, 10), (2, 20)], 4));
    e.emit_bolt("direct", Some(7), &[&a], &values!["x"]);
    e.emit_bolt("direct", Some(8), &[&a], &values!["y"]);
    e.emit_bolt("direct", Some(7), &[&b], &values!["z"]);
    e.emit_bolt("direct", Some(7), &[], &values!["u"]);
    e.ack(&a);
    let mut frames = BytesMut::from(&e.take_frames()[..]);
    let codec = HeronCodec::new(0);
    let (mut keys, mut control) = (Vec::new(), Vec::new());
    while let Some(p) = codec.decode_packet(&mut frames).unwrap() {
        if let Some(d) = heron_proto::tuple::split_tuple_set(&p.payload)
            .unwrap()
            .data
        {
            let set = heron_proto::tuple::split_data_set(d).unwrap();
            assert!(set.keyed, "a keyed set");
            let decoded: HeronTupleSet = p.decode().unwrap();
            for t in data(&decoded).tuples.iter() {
                keys.push((set.dest_task.unwrap(), t.key, t.roots.len()));
            }
        } else {
            control.push(p.decode::<HeronTupleSet>().unwrap().control.unwrap());
        }
    }
    // task 7's set, then task 8's; an unanchored tuple keeps key 0
    let k: Vec<i64> = keys.iter().map(|&(_, k, _)| k).collect();
    assert_eq!(
        keys.iter().map(|&(t, _, r)| (t, r)).collect::<Vec<_>>(),
        vec![(7, 1), (7, 2), (7, 0), (8, 1)]
    );
    assert!(k[0] != 0 && k[1] != 0 && k[3] != 0 && k[2] == 0, "{k:?}");
    // one control set after the data: the emits with several roots, and one ack for root
    // (1, 10) carrying the emits anchored to it alone and the ack of `a`
    assert_eq!(control.len(), 1);
    let root = |taskid, key| RootId { taskid, key };
    let emits: Vec<_> = control[0]
        .emits
        .iter()
        .map(|e| (e.roots.clone(), e.ackedtuple))
        .collect();
    assert_eq!(emits, vec![(vec![root(1, 10), root(2, 20)], k[1])]);
    let acks: Vec<_> = control[0]
        .acks
        .iter()
        .map(|e| (e.roots.clone(), e.ackedtuple))
        .collect();
    assert_eq!(acks, vec![(vec![root(1, 10)], k[0] ^ k[3] ^ 3)]);
}

#[test]
fn a_pinned_emit_between_addressed_ones_keeps_its_place() {
    let mut e = emitter(ReliabilityMode::AtMostOnce);
    e.streams[0].route =
        dest_sets::FieldsRoute::new(&Fields::new(["w", "n"]), &Fields::new(["w"]), &[3, 4])
            .map(dest_sets::Route::Fields);
    e.emit_bolt("default", None, &[], &values!["a", 1]);
    e.emit_bolt_pinned("default", &[], &values!["b", 2], &[4]);
    e.emit_bolt("default", None, &[], &values!["a", 3]);
    let got = addressed_sets(&mut e);
    let tasks: Vec<_> = got.iter().map(|(_, t, n)| (t.is_some(), *n)).collect();
    assert_eq!(tasks, vec![(true, 1), (false, 1), (true, 1)], "{got:?}");
    assert_eq!(got[0].1, got[2].1, "one word, one task");
}

#[test]
fn same_name_agrees_with_string_equality_for_every_length_and_differing_byte() {
    for n in 0..24 {
        let a: String = (0..n).map(|i| (b'a' + i as u8) as char).collect();
        assert!(super::same_name(&a, &a.clone()), "{a}");
        for at in 0..n {
            let mut b = a.clone().into_bytes();
            b[at] = b'Z';
            let b = String::from_utf8(b).unwrap();
            assert!(!super::same_name(&a, &b), "{a} {b}");
        }
        assert!(!super::same_name(&a, &format!("{a}x")), "{a}");
    }
}
