//! The instance running a spout against a fake stream manager over real TCP.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use heron_api::{
    values, Config, Fields, MessageId, OutputFieldsDeclarer, ReliabilityMode, Spout,
    SpoutOutputCollector, TopologyBuilder, TopologyContext, Value,
};
use heron_instance::InstanceError;
use heron_proto::api::TopologyState;
use heron_proto::stmgr::NewInstanceAssignmentMessage;
use heron_proto::system::{
    AckTuple, HeronControlTupleSet, HeronTupleSet, HeronTupleSet2, RootId, StatusCode,
};

/// Emits `[n]` with message id `n` for n in 0..limit and records every callback.
struct Numbers {
    next: i64,
    limit: i64,
    log: Log,
}

impl Numbers {
    fn note(&self, s: String) {
        self.log.lock().unwrap().push(s);
    }
}

impl Spout for Numbers {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["n"]));
    }
    fn open(&mut self, ctx: &TopologyContext) {
        self.note(format!("open {}", ctx.task_id()));
    }
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector) {
        if self.next < self.limit {
            c.emit_with_id(values![self.next], self.next);
            self.next += 1;
        }
    }
    fn ack(&mut self, id: MessageId) {
        self.note(format!("ack {id}"));
    }
    fn fail(&mut self, id: MessageId) {
        self.note(format!("fail {id}"));
    }
    fn activate(&mut self) {
        self.note("activate".into());
    }
    fn deactivate(&mut self) {
        self.note("deactivate".into());
    }
    fn close(&mut self) {
        self.note("close".into());
    }
}

fn topology(limit: i64, conf: Config, log: &Log) -> heron_api::HeronTopology {
    let log = log.clone();
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "numbers",
        move || Numbers {
            next: 0,
            limit,
            log: log.clone(),
        },
        1,
    );
    b.build("test", conf).unwrap()
}

/// `(value, root key)` of every data tuple.
fn emitted(sets: &[HeronTupleSet]) -> Vec<(i64, Option<i64>)> {
    let mut out = Vec::new();
    for s in sets {
        assert_eq!(s.src_task_id, 1);
        if let Some(d) = &s.data {
            assert_eq!(d.stream.id, "default");
            assert_eq!(d.stream.component_name, "numbers");
            for t in &d.tuples {
                assert_eq!(t.key, 0);
                assert!(t.roots.len() <= 1);
                if let Some(r) = t.roots.first() {
                    assert_eq!(r.taskid, 1);
                    assert_ne!(r.key, 0);
                }
                let v = Value::decode(&t.values[0]).unwrap().as_i64().unwrap();
                out.push((v, t.roots.first().map(|r| r.key)));
            }
        }
    }
    out
}

fn control(acks: &[i64], fails: &[i64], task: i32) -> HeronTupleSet2 {
    let ack = |k: &i64| AckTuple {
        roots: vec![RootId {
            taskid: task,
            key: *k,
        }],
        ackedtuple: 0,
    };
    HeronTupleSet2 {
        data: None,
        control: Some(HeronControlTupleSet {
            acks: acks.iter().map(ack).collect(),
            fails: fails.iter().map(ack).collect(),
            emits: vec![],
        }),
        src_task_id: 0,
    }
}

#[test]
fn atmost_once_spout_deployed_paused_then_activated() {
    let log = Log::default();
    let (listener, port) = listen();
    let t = topology(10, Config::new(), &log);
    let paused = pplan(&t, &[(1, "numbers", 0)], TopologyState::Paused);
    let running = pplan(&t, &[(1, "numbers", 0)], TopologyState::Running);
    let done = spawn_instance(t, instance_config(port, "numbers", 1, None), fast_options());
    let mut sm = FakeStmgr::accept(&listener);
    sm.register(StatusCode::Ok, Some(paused.clone()));

    wait_for(TIMEOUT, "deactivate", || log_contains(&log, "deactivate"));
    assert_eq!(log.lock().unwrap()[0], "open 1", "open before deactivate");
    assert!(
        sm.try_read(Duration::from_millis(200)).is_none(),
        "paused: no next_tuple"
    );

    sm.send(&NewInstanceAssignmentMessage { pplan: running });
    let sets = sm.collect(TIMEOUT, |s| data_count(s) >= 10);
    let got = emitted(&sets);
    assert_eq!(
        got,
        (0..10).map(|v| (v, None)).collect::<Vec<_>>(),
        "no roots in ATMOST_ONCE"
    );
    assert!(log_contains(&log, "activate"));
    // Every message id is acked by the instance itself, right after the emit.
    wait_for(TIMEOUT, "acks 0 to 9", || {
        (0..10).all(|i| log_contains(&log, &format!("ack {i}")))
    });
    assert!(
        sets.iter().all(|s| s.control.is_none()),
        "spouts send no control tuples"
    );

    sm.send(&NewInstanceAssignmentMessage { pplan: paused });
    wait_for(TIMEOUT, "a second deactivate", || {
        log.lock()
            .unwrap()
            .iter()
            .filter(|e| *e == "deactivate")
            .count()
            == 2
    });

    drop(sm);
    let result = done.recv_timeout(TIMEOUT).unwrap();
    assert!(
        matches!(result, Err(InstanceError::Disconnected)),
        "{result:?}"
    );
    assert_eq!(log.lock().unwrap().last().unwrap(), "close");
}

#[test]
fn atleast_once_spout_respects_max_pending_and_gets_acks_and_fails() {
    let log = Log::default();
    let (listener, port) = listen();
    let mut conf = Config::new();
    conf.set_reliability_mode(ReliabilityMode::AtLeastOnce)
        .set_max_spout_pending(5);
    let t = topology(100, conf, &log);
    let plan = pplan(&t, &[(1, "numbers", 0)], TopologyState::Running);
    let done = spawn_instance(t, instance_config(port, "numbers", 1, None), fast_options());
    let mut sm = FakeStmgr::accept(&listener);
    sm.register(StatusCode::Ok, Some(plan));

    let mut sets = sm.collect(TIMEOUT, |s| data_count(s) >= 5);
    assert!(
        sm.try_read(Duration::from_millis(200)).is_none(),
        "max.spout.pending = 5"
    );
    let first: HashMap<i64, i64> = emitted(&sets)
        .into_iter()
        .map(|(v, k)| (v, k.expect("tracked tuples carry a root")))
        .collect();
    assert_eq!(first.len(), 5);

    // Ack 0 and 1, fail 2; an unknown key and another task's root are ignored.
    sm.send(&control(&[first[&0], first[&1], 12345], &[first[&2]], 1));
    sm.send(&control(&[first[&3]], &[], 7));
    wait_for(TIMEOUT, "ack 0, ack 1 and fail 2", || {
        log_contains(&log, "ack 0") && log_contains(&log, "ack 1") && log_contains(&log, "fail 2")
    });
    assert!(
        !log_contains(&log, "ack 3"),
        "a root of another task is not ours"
    );
    // Three slots freed: exactly three more tuples.
    sets = sm.collect(TIMEOUT, |s| data_count(s) >= 3);
    assert!(sm.try_read(Duration::from_millis(200)).is_none());
    let more: Vec<i64> = emitted(&sets).into_iter().map(|(v, _)| v).collect();
    assert_eq!(more, vec![5, 6, 7]);
    assert!(!log.lock().unwrap().iter().any(|e| e.starts_with("ack 5")));

    drop(sm);
    assert!(done.recv_timeout(TIMEOUT).unwrap().is_err());
}

#[test]
fn atleast_once_spout_fails_timed_out_tuples() {
    let log = Log::default();
    let (listener, port) = listen();
    let mut conf = Config::new();
    conf.set_reliability_mode(ReliabilityMode::AtLeastOnce)
        .set_max_spout_pending(2)
        .set_message_timeout_secs(1);
    let t = topology(4, conf, &log);
    let plan = pplan(&t, &[(1, "numbers", 0)], TopologyState::Running);
    let done = spawn_instance(t, instance_config(port, "numbers", 1, None), fast_options());
    let mut sm = FakeStmgr::accept(&listener);
    sm.register(StatusCode::Ok, Some(plan));

    let sets = sm.collect(TIMEOUT, |s| data_count(s) >= 2);
    assert_eq!(data_count(&sets), 2);
    assert!(!log_contains(&log, "fail 0"));
    // Nobody acks: after about a second both fail and the next two go out.
    let sets = sm.collect(TIMEOUT, |s| data_count(s) >= 2);
    let values: Vec<i64> = emitted(&sets).into_iter().map(|(v, _)| v).collect();
    assert_eq!(values, vec![2, 3]);
    assert!(log_contains(&log, "fail 0") && log_contains(&log, "fail 1"));

    drop(sm);
    assert!(done.recv_timeout(TIMEOUT).unwrap().is_err());
}

/// Emits `[n]` for every n its clock has made available (one per µs since `open`), up to
/// `limit`: a source a little slower than the spout loop, like a rate-capped one.
struct Trickle {
    start: Option<std::time::Instant>,
    next: i64,
    limit: i64,
}

impl Spout for Trickle {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["n"]));
    }
    fn open(&mut self, _ctx: &TopologyContext) {}
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector) {
        let start = *self.start.get_or_insert_with(std::time::Instant::now);
        let available = start.elapsed().as_micros() as i64;
        if self.next < self.limit.min(available + 1) {
            c.emit(values![self.next]);
            self.next += 1;
        }
    }
}

#[test]
fn a_spout_whose_source_runs_dry_sends_its_tuples_in_few_packets() {
    const LIMIT: i64 = 30_000;
    let (listener, port) = listen();
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "numbers",
        || Trickle {
            start: None,
            next: 0,
            limit: LIMIT,
        },
        1,
    );
    let t = b.build("test", Config::new()).unwrap();
    let plan = pplan(&t, &[(1, "numbers", 0)], TopologyState::Running);
    let done = spawn_instance(t, instance_config(port, "numbers", 1, None), fast_options());
    let mut sm = FakeStmgr::accept(&listener);
    sm.register(StatusCode::Ok, Some(plan));

    let sets = sm.collect(TIMEOUT, |s| data_count(s) >= LIMIT as usize);
    let values: Vec<i64> = emitted(&sets).into_iter().map(|(v, _)| v).collect();
    assert_eq!(
        values,
        (0..LIMIT).collect::<Vec<_>>(),
        "every tuple, in order"
    );
    // 30 ms of tuples. A round that runs dry holds its output for up to 200 µs: at most about
    // 150 packets (24–47 measured in a debug build). Flushing every round sent 500–2 000.
    let packets = sets.iter().filter(|s| s.data.is_some()).count();
    assert!(
        packets <= 250,
        "{packets} packets for {LIMIT} tuples: small dry rounds were not held"
    );

    drop(sm);
    assert!(done.recv_timeout(TIMEOUT).unwrap().is_err());
}
