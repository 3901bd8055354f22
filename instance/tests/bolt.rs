//! The instance running a bolt against a fake stream manager over real TCP.

mod common;

use std::io::Write;
use std::time::Duration;

use common::*;
use heron_api::{
    values, Bolt, Config, Fields, OutputCollector, OutputFieldsDeclarer, ReliabilityMode, Spout,
    SpoutOutputCollector, TopologyBuilder, Tuple, Value,
};
use heron_instance::InstanceError;
use heron_proto::api::{StreamId, TopologyState};
use heron_proto::system::{HeronDataTuple, HeronDataTupleSet2, HeronTupleSet2, RootId, StatusCode};
use heron_proto::Message;

struct Src;
impl Spout for Src {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["word", "n"]));
    }
    fn next_tuple(&mut self, _: &mut SpoutOutputCollector) {}
}

/// Emits `[WORD, 2n]` anchored to the input and acks it; fails inputs whose word is "bad";
/// on a tick emits `["tick", -1]` unanchored.
struct Upper;
impl Bolt for Upper {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["word", "n2"]));
    }
    fn execute(&mut self, t: &Tuple, c: &mut OutputCollector) {
        if t.is_tick_tuple() {
            c.emit(values!["tick", -1]);
            return;
        }
        let word = t.get_str_by_field("word").unwrap();
        if word == "bad" {
            c.fail(t);
            return;
        }
        let n = t.get_i64_by_field("n").unwrap();
        c.emit_anchored(&[t], values![word.to_uppercase(), n * 2]);
        c.ack(t);
    }
}

fn topology(tick_ms: Option<u64>) -> heron_api::HeronTopology {
    let mut b = TopologyBuilder::new();
    b.set_spout("src", || Src, 1);
    let mut d = b.set_bolt("upper", || Upper, 1);
    d.shuffle_grouping("src");
    if let Some(ms) = tick_ms {
        d.set_tick_tuple_freq_ms(ms);
    }
    let mut conf = Config::new();
    conf.set_reliability_mode(ReliabilityMode::AtLeastOnce);
    b.build("test", conf).unwrap()
}

fn input_set(tuples: &[(&str, i64, i64)]) -> HeronTupleSet2 {
    HeronTupleSet2 {
        data: Some(HeronDataTupleSet2 {
            stream: StreamId {
                id: "default".into(),
                component_name: "src".into(),
            },
            tuples: tuples
                .iter()
                .map(|&(w, n, key)| {
                    let mut vals = Vec::new();
                    for v in [Value::from(w), Value::Int(n)] {
                        let mut b = Vec::new();
                        v.encode(&mut b);
                        vals.push(b.into());
                    }
                    HeronDataTuple {
                        key,
                        roots: vec![RootId {
                            taskid: 1,
                            key: key * 100,
                        }],
                        values: vals,
                        dest_task_ids: vec![],
                    }
                    .encode_to_vec()
                    .into()
                })
                .collect(),
        }),
        control: None,
        src_task_id: 1,
    }
}

#[test]
fn bolt_executes_batches_emits_anchored_and_acks() {
    let metrics = tempfile::tempdir().unwrap();
    let (listener, port) = listen();
    let t = topology(None);
    let plan = pplan(
        &t,
        &[(1, "src", 0), (3, "upper", 0)],
        TopologyState::Running,
    );
    let done = spawn_instance(
        t,
        instance_config(port, "upper", 3, Some(metrics.path().to_owned())),
        fast_options(),
    );
    let mut sm = FakeStmgr::accept(&listener);
    let req = sm.register(StatusCode::Ok, Some(plan));
    assert_eq!(req.instance.instance_id, "container_1_upper_3");
    assert_eq!(req.instance.stmgr_id, "stmgr-1");
    assert_eq!(req.instance.info.task_id, 3);
    assert_eq!(req.instance.info.component_name, "upper");
    assert_eq!(req.topology_name, "test");
    assert_eq!(req.topology_id, "test-id");

    sm.send(&input_set(&[("a", 1, 11), ("b", 2, 12), ("bad", 0, 13)]));
    sm.send(&input_set(&[("c", 3, 14), ("d", 4, 15)]));
    let sets = sm.collect(TIMEOUT, |s| {
        data_count(s) >= 4
            && s.iter()
                .filter_map(|x| x.control.as_ref())
                .map(|c| c.acks.len() + c.fails.len())
                .sum::<usize>()
                >= 5
    });
    assert!(sets.iter().all(|s| s.src_task_id == 3));
    assert!(
        sets.iter().all(|s| s.data.is_some() != s.control.is_some()),
        "each set is data or control"
    );

    let mut words = Vec::new();
    let mut acked = Vec::new();
    let mut failed = Vec::new();
    let mut first_control_after_data = None;
    for (i, s) in sets.iter().enumerate() {
        if let Some(d) = &s.data {
            assert_eq!(d.stream.id, "default");
            assert_eq!(d.stream.component_name, "upper");
            for t in &d.tuples {
                assert_eq!(t.key, 0, "instances send key 0");
                let w = Value::decode(&t.values[0]).unwrap();
                let n = Value::decode(&t.values[1]).unwrap().as_i64().unwrap();
                assert_eq!(t.roots.len(), 1, "anchored: carries the input's root");
                assert_eq!(t.roots[0].taskid, 1);
                words.push((w.as_str().unwrap().to_owned(), n, t.roots[0].key));
            }
        }
        if let Some(c) = &s.control {
            first_control_after_data.get_or_insert(i);
            acked.extend(c.acks.iter().map(|a| (a.ackedtuple, a.roots[0].key)));
            failed.extend(c.fails.iter().map(|a| a.ackedtuple));
        }
    }
    assert!(
        first_control_after_data.unwrap() >= 1,
        "data goes before control"
    );
    assert_eq!(
        words,
        vec![
            ("A".to_owned(), 2, 1100),
            ("B".to_owned(), 4, 1200),
            ("C".to_owned(), 6, 1400),
            ("D".to_owned(), 8, 1500)
        ]
    );
    assert_eq!(acked, vec![(11, 1100), (12, 1200), (14, 1400), (15, 1500)]);
    assert_eq!(failed, vec![13]);

    // Counters reach the metrics file.
    let file = metrics.path().join("container_1_upper_3");
    wait_for(TIMEOUT, "5 executed in the counter file", || {
        heron_instance::read_counters(&file).is_ok_and(|c| c.executed == 5)
    });
    let c = heron_instance::read_counters(&file).unwrap();
    assert_eq!((c.emitted, c.acked, c.failed), (4, 4, 1));
    // ... with per-input-stream acks, fails and latency sums and counts (ns).
    let text = std::fs::read_to_string(&file).unwrap();
    let line = |key: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("{key} in {text}"))
    };
    assert_eq!(line("__ack-count/default"), 4);
    assert_eq!(line("__fail-count/default"), 1);
    assert_eq!(line("count:__execute-latency/default"), 5);
    assert!(line("sum:__execute-latency/default") > 0);
    assert_eq!(line("count:__process-latency/default"), 4);

    // The stream manager goes away: the instance stops with Disconnected.
    drop(sm);
    let result = done.recv_timeout(TIMEOUT).expect("the instance stops");
    assert!(
        matches!(result, Err(InstanceError::Disconnected)),
        "{result:?}"
    );
}

#[test]
fn plan_arriving_after_registration_and_tick_tuples() {
    let (listener, port) = listen();
    let t = topology(Some(30));
    let plan = pplan(
        &t,
        &[(1, "src", 0), (3, "upper", 0)],
        TopologyState::Running,
    );
    let done = spawn_instance(t, instance_config(port, "upper", 3, None), fast_options());
    let mut sm = FakeStmgr::accept(&listener);
    sm.register(StatusCode::Ok, None);
    // No plan yet: nothing is executed, so no ticks either.
    assert!(sm.try_read(Duration::from_millis(150)).is_none());
    sm.send(&heron_proto::stmgr::NewInstanceAssignmentMessage { pplan: plan });
    let sets = sm.collect(TIMEOUT, |s| data_count(s) >= 2);
    assert!(data_count(&sets) >= 2, "ticks every 30 ms");
    let t = &sets[0].data.as_ref().unwrap().tuples[0];
    assert_eq!(Value::decode(&t.values[0]), Ok(Value::from("tick")));
    assert!(t.roots.is_empty(), "unanchored");
    drop(sm);
    assert!(done.recv_timeout(TIMEOUT).unwrap().is_err());
}

/// The tasks of the plan `upper` (task 3) starts with.
const UPPER_TASKS: &[(i32, &str, i32)] = &[(1, "src", 0), (3, "upper", 0)];

/// A running plan of `tasks` for `topology(None)`.
fn running_plan(tasks: &[(i32, &str, i32)]) -> heron_proto::system::PhysicalPlan {
    pplan(&topology(None), tasks, TopologyState::Running)
}

/// An `upper` instance (task 3) registered with a fake stream manager that gave it the plan
/// of [`UPPER_TASKS`]; the stream manager and what the instance's run returns.
fn registered_upper() -> (
    FakeStmgr,
    std::sync::mpsc::Receiver<Result<(), InstanceError>>,
) {
    let (listener, port) = listen();
    let done = spawn_instance(
        topology(None),
        instance_config(port, "upper", 3, None),
        fast_options(),
    );
    let mut sm = FakeStmgr::accept(&listener);
    sm.register(StatusCode::Ok, Some(running_plan(UPPER_TASKS)));
    (sm, done)
}

#[test]
fn malformed_packet_closes_the_connection() {
    let (mut sm, done) = registered_upper();
    // A header whose type-name length does not fit the packet.
    sm.stream
        .write_all(&[0, 0, 0, 50, 0x7f, 0, 0, 0, 1, 2, 3, 4])
        .unwrap();
    assert!(
        sm.wait_closed(TIMEOUT),
        "the instance closes the connection"
    );
    let result = done.recv_timeout(TIMEOUT).unwrap();
    assert!(
        matches!(result, Err(InstanceError::Disconnected)),
        "{result:?}"
    );
}

#[test]
fn plan_moving_the_task_is_fatal() {
    let (mut sm, done) = registered_upper();
    let moved = running_plan(&[(1, "src", 0), (4, "upper", 0)]);
    sm.send(&heron_proto::stmgr::NewInstanceAssignmentMessage { pplan: moved });
    let result = done.recv_timeout(TIMEOUT).unwrap();
    assert!(
        matches!(
            result,
            Err(InstanceError::AssignmentChanged { task_id: 3, .. })
        ),
        "{result:?}"
    );
}

#[test]
fn a_plan_with_other_tasks_restarts_the_instance() {
    // `heron update --component-parallelism src:2`: our task stays, but the component must
    // open again with the new plan (its task list), so the instance exits to be restarted
    let (mut sm, done) = registered_upper();
    // the same plan again (a stream manager reconnecting) changes nothing
    sm.send(&heron_proto::stmgr::NewInstanceAssignmentMessage {
        pplan: running_plan(UPPER_TASKS),
    });
    assert!(
        done.recv_timeout(Duration::from_millis(300)).is_err(),
        "still running"
    );
    let grown = running_plan(&[(1, "src", 0), (2, "src", 0), (3, "upper", 0)]);
    sm.send(&heron_proto::stmgr::NewInstanceAssignmentMessage { pplan: grown });
    let result = done.recv_timeout(TIMEOUT).unwrap();
    assert!(
        matches!(result, Err(InstanceError::PlanChanged)),
        "{result:?}"
    );
}

#[test]
fn refused_registration_is_fatal() {
    let (listener, port) = listen();
    let done = spawn_instance(
        topology(None),
        instance_config(port, "upper", 3, None),
        fast_options(),
    );
    let mut sm = FakeStmgr::accept(&listener);
    sm.register(StatusCode::Notok, None);
    let result = done.recv_timeout(TIMEOUT).unwrap();
    match result {
        Err(InstanceError::RegisterRefused { message, .. }) => assert!(message.contains("NOTOK")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn gives_up_connecting_after_the_timeout() {
    let (listener, port) = listen();
    drop(listener);
    let mut options = fast_options();
    options.connect_timeout = Duration::from_millis(300);
    let done = spawn_instance(
        topology(None),
        instance_config(port, "upper", 3, None),
        options,
    );
    let result = done.recv_timeout(TIMEOUT).unwrap();
    assert!(
        matches!(result, Err(InstanceError::Connect { .. })),
        "{result:?}"
    );
}

#[test]
fn unknown_component_is_refused_before_connecting() {
    let result = heron_instance::run_with_options(
        instance_config(1, "nope", 3, None),
        &topology(None),
        fast_options(),
    );
    assert!(matches!(result, Err(InstanceError::UnknownComponent(c)) if c == "nope"));
}

/// Holds each input and hands it to a helper thread, which hands it back and wakes the
/// executor; `poll_async` (no deadline of its own) emits and acks it.
struct AsyncEcho {
    waker: Option<heron_api::AsyncWaker>,
    to_helper: Option<std::sync::mpsc::Sender<Tuple>>,
    back: std::sync::Arc<std::sync::Mutex<Vec<Tuple>>>,
}
impl Bolt for AsyncEcho {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["word", "n2"]));
    }
    fn prepare(&mut self, ctx: &heron_api::TopologyContext) {
        let waker = ctx
            .async_waker()
            .expect("the instance gives bolts a waker")
            .clone();
        self.waker = Some(waker.clone());
        let (tx, rx) = std::sync::mpsc::channel::<Tuple>();
        let back = self.back.clone();
        std::thread::spawn(move || {
            while let Ok(t) = rx.recv() {
                back.lock().unwrap().push(t);
                waker.wake();
            }
        });
        self.to_helper = Some(tx);
    }
    fn execute(&mut self, t: &Tuple, _c: &mut OutputCollector) {
        self.to_helper.as_ref().unwrap().send(t.clone()).unwrap();
    }
    fn has_async_output(&self) -> bool {
        true
    }
    fn poll_async(
        &mut self,
        c: &mut OutputCollector,
        _now: std::time::Instant,
    ) -> Option<std::time::Instant> {
        for t in self.back.lock().unwrap().drain(..) {
            c.emit_anchored(&[&t], values![t.get_str(0).unwrap().to_uppercase(), 0]);
            c.ack(&t);
        }
        None
    }
}

#[test]
fn async_bolt_output_is_flushed_when_its_waker_fires() {
    let (listener, port) = listen();
    let mut b = TopologyBuilder::new();
    b.set_spout("src", || Src, 1);
    b.set_bolt(
        "upper",
        || AsyncEcho {
            waker: None,
            to_helper: None,
            back: Default::default(),
        },
        1,
    )
    .shuffle_grouping("src");
    let mut conf = Config::new();
    conf.set_reliability_mode(ReliabilityMode::AtLeastOnce);
    let t = b.build("test", conf).unwrap();
    let plan = pplan(
        &t,
        &[(1, "src", 0), (3, "upper", 0)],
        TopologyState::Running,
    );
    let mut options = fast_options();
    // no timer would flush it soon: only the wake can
    options.metrics_interval = Duration::from_secs(3600);
    let _done = spawn_instance(t, instance_config(port, "upper", 3, None), options);
    let mut sm = FakeStmgr::accept(&listener);
    sm.register(StatusCode::Ok, Some(plan));
    sm.send(&input_set(&[("a", 1, 11), ("b", 2, 12)]));
    let sets = sm.collect(TIMEOUT, |s| {
        data_count(s) >= 2
            && s.iter()
                .filter_map(|x| x.control.as_ref())
                .map(|c| c.acks.len())
                .sum::<usize>()
                >= 2
    });
    let roots: Vec<i64> = sets
        .iter()
        .filter_map(|s| s.data.as_ref())
        .flat_map(|d| d.tuples.iter().map(|t| t.roots[0].key))
        .collect();
    assert_eq!(roots, vec![1100, 1200], "anchored to the held inputs");
}
