//! ShellSpout against real pystorm spouts in real subprocesses.

mod common;

use std::time::Instant;

use common::*;
use heron_api::{
    Config, Emitter, Fields, GroupingKind, OutputFieldsDeclarer, ReliabilityMode, Spout,
    SpoutOutputCollector, TopologyContext, Value,
};
use heron_multilang::ShellSpout;

struct SpoutHarness {
    spout: ShellSpout,
    emitter: Emitter,
    seen: Seen,
}

impl SpoutHarness {
    fn new(py: &str, script_name: &str, sentences: u32) -> SpoutHarness {
        let mut spout = ShellSpout::new(script(py, script_name))
            .working_dir(scripts_dir())
            .output_fields(Fields::new(["sentence"]))
            .named_stream("acks", Fields::new(["kind", "id", "type"]));
        let mut conf = Config::new();
        conf.set_reliability_mode(ReliabilityMode::AtLeastOnce);
        conf.set("test.sentences", sentences);
        // the default stream is read by a sink (tasks 10, 11) with SHUFFLE grouping
        let ctx = TopologyContext::builder("multilang-test", "spout", 1)
            .component_tasks("spout", [1])
            .component_tasks("sink", [10, 11])
            .stream("spout", "default", Fields::new(["sentence"]))
            .stream("spout", "acks", Fields::new(["kind", "id", "type"]))
            .subscription("sink", "spout", "default", GroupingKind::Shuffle)
            .config(conf)
            .build();
        let mut d = OutputFieldsDeclarer::new();
        spout.declare_output_fields(&mut d);
        let emitter = Emitter::new("spout", 1, ReliabilityMode::AtLeastOnce, d.streams());
        spout.open(&ctx);
        SpoutHarness {
            spout,
            emitter,
            seen: Seen::default(),
        }
    }

    /// Calls next_tuple until `cond` holds.
    fn next_until(&mut self, what: &str, cond: impl Fn(&Seen) -> bool) {
        let end = Instant::now() + LONG;
        while !cond(&self.seen) {
            assert!(
                Instant::now() < end,
                "timed out waiting for {what}: {:#?}",
                self.seen
            );
            self.spout
                .next_tuple(&mut SpoutOutputCollector::new(&mut self.emitter));
            self.seen.take(&mut self.emitter);
        }
    }

    /// Acks (or fails) the tree of emitted tuple `i` the way the instance does.
    fn complete(&mut self, i: usize, ack: bool) {
        let root = self.seen.on("default")[i].roots[0].1;
        if ack {
            let (msg, _) = self.emitter.spout_acked(root).expect("in flight");
            self.spout.ack(msg);
        } else {
            let msg = self.emitter.spout_failed(root).expect("in flight");
            self.spout.fail(msg);
        }
    }

    fn acks(&self) -> Vec<Vec<Value>> {
        self.seen
            .on("acks")
            .iter()
            .map(|o| o.values.clone())
            .collect()
    }
}

fn row(kind: &str, id: &str, ty: &str) -> Vec<Value> {
    vec![Value::from(kind), Value::from(id), Value::from(ty)]
}

#[test]
fn integer_message_ids_come_back_as_integers() {
    let Some(py) = python() else { return };
    let mut h = SpoutHarness::new(&py, "sentence_spout.py", 3);
    h.next_until("3 sentences", |s| s.on("default").len() == 3);
    assert_eq!(
        h.emitter.in_flight(),
        3,
        "emitted with message ids: tracked"
    );
    assert_eq!(
        h.seen.on("default")[0].values,
        vec![Value::from("over the moon")]
    );
    h.complete(0, true);
    h.complete(2, false);
    h.next_until("the spout's ack and fail reports", |s| {
        s.on("acks").len() == 2
    });
    assert_eq!(
        h.acks(),
        vec![row("ack", "1", "int"), row("fail", "3", "int")]
    );
    assert!(h.seen.errors.is_empty(), "{:?}", h.seen.errors);
}

#[test]
fn string_message_ids_come_back_as_strings() {
    let Some(py) = python() else { return };
    let mut h = SpoutHarness::new(&py, "string_id_spout.py", 2);
    h.next_until("2 sentences", |s| s.on("default").len() == 2);
    h.complete(1, true);
    h.next_until("the ack report", |s| s.on("acks").len() == 1);
    assert_eq!(h.acks(), vec![row("ack", "'s-2'", "str")]);
}

#[test]
fn a_killed_spout_is_restarted_and_old_ids_are_not_sent_to_the_new_one() {
    let Some(py) = python() else { return };
    let mut h = SpoutHarness::new(&py, "sentence_spout.py", 2);
    h.next_until("2 sentences", |s| s.on("default").len() == 2);
    let pid = h.spout.subprocess_pid().expect("running");
    kill9(pid);
    h.next_until("the death report", |s| !s.errors.is_empty());
    assert_eq!(h.spout.restarts(), 1);
    h.next_until("the new subprocess's sentences", |s| {
        s.on("default").len() == 4
    });
    assert_ne!(h.spout.subprocess_pid(), Some(pid));
    // an ack of the old incarnation's tuple is not forwarded; the new one's is
    h.complete(0, true);
    h.complete(2, true);
    h.next_until("one ack report", |s| !s.on("acks").is_empty());
    h.spout
        .next_tuple(&mut SpoutOutputCollector::new(&mut h.emitter));
    h.seen.take(&mut h.emitter);
    assert_eq!(
        h.acks(),
        vec![row("ack", "1", "int")],
        "only the new incarnation's id 1"
    );
}

#[test]
fn need_task_ids_on_a_shuffled_stream_pins_the_spout_tuple_to_the_answer() {
    let Some(py) = python() else { return };
    let mut h = SpoutHarness::new(&py, "task_ids_spout.py", 0);
    h.next_until("4 sentences and their answers", |s| {
        s.on("default").len() == 4 && s.on("acks").len() == 4
    });
    assert!(h.seen.errors.is_empty(), "{:?}", h.seen.errors);
    assert_eq!(h.spout.restarts(), 0);
    assert_eq!(h.emitter.in_flight(), 4, "tracked as usual");
    let dests: Vec<Vec<i32>> = h
        .seen
        .on("default")
        .iter()
        .map(|o| o.dests.clone())
        .collect();
    // the round robin over [10, 11] starts at index task id (1) % 2
    assert_eq!(dests, vec![vec![11], vec![10], vec![11], vec![10]]);
    for (answer, d) in h.acks().iter().zip(&dests) {
        assert_eq!(
            answer[1],
            Value::Str(format!("[{}]", d[0])),
            "the answer is the pin"
        );
    }
    assert!(h.seen.on("acks").iter().all(|o| o.dests.is_empty()));
}
