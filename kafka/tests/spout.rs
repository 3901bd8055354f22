//! The KafkaSpout driven in-process against a real broker: random acks and fails, a
//! restart from the committed offsets, at-most-once commits, and refusals.

mod support;

use heron_api::{
    Config, Emitter, Fields, MessageId, ReliabilityMode, Spout, SpoutOutputCollector, StreamDecl,
    TopologyContext,
};
use heron_kafka::{Backoff, KafkaSpout, KafkaSpoutConfig, ProcessingGuarantee};
use std::time::{Duration, Instant};
use support::*;

fn emitter(mode: ReliabilityMode) -> Emitter {
    let streams = [StreamDecl {
        id: "default".into(),
        fields: Fields::new(["topic", "partition", "offset", "key", "value"]),
        direct: false,
    }];
    Emitter::new("kafka-spout", 1, mode, &streams)
}

fn context(mode: ReliabilityMode, task: i32, tasks: &[i32]) -> TopologyContext {
    let mut c = Config::new();
    c.set_reliability_mode(mode);
    TopologyContext::builder("t", "kafka-spout", task)
        .component_tasks("kafka-spout", tasks.to_vec())
        .config(c)
        .build()
}

/// A spout task `task` of `tasks`, opened in a topology of `mode`, and its emitter.
fn open_task_of(
    conf: KafkaSpoutConfig,
    mode: ReliabilityMode,
    task: i32,
    tasks: &[i32],
) -> (KafkaSpout, Emitter) {
    let mut spout = KafkaSpout::new(conf);
    spout.open(&context(mode, task, tasks));
    (spout, emitter(mode))
}

/// The only task of the spout, opened in a topology of `mode`, and its emitter.
fn open_task(conf: KafkaSpoutConfig, mode: ReliabilityMode) -> (KafkaSpout, Emitter) {
    open_task_of(conf, mode, 1, &[1])
}

/// Fills `topic` (created with `partitions`) with `n` records `0..n` round robin.
fn fill(brokers: &str, topic: &str, partitions: i32, n: u64) {
    heron_kafka::create_topic(brokers, topic, partitions).unwrap();
    let p = producer(brokers);
    for i in 0..n {
        send(&p, topic, (i % partitions as u64) as i32, &i.to_string());
    }
    flush(&p);
}

/// Drives `spout` until `done()`: each round it polls, then fails every in-flight tuple for
/// which `fail` says so and acks the rest.
fn drive(
    spout: &mut KafkaSpout,
    em: &mut Emitter,
    mut fail: impl FnMut(&MessageId) -> bool,
    mut done: impl FnMut() -> bool,
    limit: Duration,
) {
    let t = Instant::now();
    while !done() {
        assert!(
            t.elapsed() < limit,
            "the spout did not finish within {limit:?}"
        );
        let before = em.counters().emitted;
        for _ in 0..20 {
            spout.next_tuple(&mut SpoutOutputCollector::new(em));
        }
        drop(em.take_frames());
        // everything in flight comes back, as a fail or an ack
        for id in em.expire(Instant::now() + Duration::from_secs(3600), Duration::ZERO) {
            if fail(&id) {
                spout.fail(id);
            } else {
                spout.ack(id);
            }
        }
        idle_unless(em.counters().emitted != before);
    }
}

#[test]
fn at_least_once_retries_failed_records_and_commits_everything() {
    let Some(brokers) = broker() else { return };
    let topic = unique("retries");
    let group = unique("g");
    const N: u64 = 3_000;
    fill(&brokers, &topic, 2, N);
    let conf = KafkaSpoutConfig::builder(&brokers, [topic.clone()])
        .group_id(&group)
        .commit_period(Duration::from_millis(50))
        .retry(Backoff {
            initial: Duration::ZERO,
            period: Duration::from_millis(1),
            max_retries: u32::MAX,
            max_delay: Duration::from_millis(20),
        })
        .build()
        .unwrap();
    let (mut spout, mut em) = open_task(conf, ReliabilityMode::AtLeastOnce);
    // a third of the emits fail, pseudo-randomly, some records several times
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut fails = 0u64;
    drive(
        &mut spout,
        &mut em,
        |_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let f = seed.is_multiple_of(3);
            fails += u64::from(f);
            f
        },
        || all_committed(&brokers, &group, &topic, N as i64).is_some(),
        Duration::from_secs(120),
    );
    let emits = em.counters().emitted;
    assert!(fails > N / 5, "{fails} fails");
    // a record is emitted again only after it failed: each one was acked exactly once
    assert_eq!(emits - fails, N, "{emits} emits, {fails} of them failed");
    eprintln!("{N} records: {emits} emits, {fails} failed and retried, all committed");
}

#[test]
fn a_guarantee_that_does_not_fit_the_topology_is_refused() {
    let Some(brokers) = broker() else { return };
    let conf = KafkaSpoutConfig::builder(&brokers, ["whatever"])
        .guarantee(ProcessingGuarantee::AtLeastOnce)
        .build()
        .unwrap();
    let (mut spout, mut em) = open_task(conf, ReliabilityMode::AtMostOnce);
    spout.next_tuple(&mut SpoutOutputCollector::new(&mut em));
    let errors = em.take_errors();
    assert!(
        errors.iter().any(|e| e.to_string().contains("ATMOST_ONCE")),
        "{errors:?}"
    );
    assert!(spout.assigned().is_empty());
}

#[test]
fn a_missing_topic_is_reported_and_nothing_is_emitted() {
    let Some(brokers) = broker() else { return };
    let conf = KafkaSpoutConfig::builder(&brokers, [unique("no-such-topic")])
        .build()
        .unwrap();
    let (mut spout, mut em) = open_task(conf, ReliabilityMode::AtLeastOnce);
    spout.next_tuple(&mut SpoutOutputCollector::new(&mut em));
    let errors = em.take_errors();
    assert!(
        errors
            .iter()
            .any(|e| e.to_string().contains("does not exist")),
        "{errors:?}"
    );
    assert_eq!(em.counters().emitted, 0);
}

/// What the tests rely on from the broker: a consumer can start at any offset of a topic
/// written one record per batch (tansu 0.6.0 returns nothing for a fetch that starts inside a
/// larger batch; see `support::producer`).
#[test]
fn a_consumer_starts_at_any_offset() {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
    let Some(brokers) = broker() else { return };
    let topic = unique("offsets");
    fill(&brokers, &topic, 1, 100);
    for start in [0i64, 1, 37, 99] {
        let c: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &brokers)
            .set("group.id", unique("g"))
            .set("auto.offset.reset", "error")
            .create()
            .unwrap();
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&topic, 0, Offset::Offset(start))
            .unwrap();
        c.assign(&tpl).unwrap();
        let mut got = Vec::new();
        let t = Instant::now();
        while got.last() != Some(&99) {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "from {start}: got {got:?}"
            );
            if let Some(m) = c.poll(Duration::from_millis(100)) {
                got.push(m.expect("no fetch error").offset());
            }
        }
        assert_eq!(got, (start..100).collect::<Vec<_>>());
    }
}

/// After a round of `next_tuple` calls: when it made no progress, waits a millisecond before
/// the next, as an instance's executor idles (`next_tuple` never blocks; the broker's records
/// arrive in the consumer's background thread).
fn idle_unless(progress: bool) {
    if !progress {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Calls `next_tuple` until `until` tuples are in flight and returns their message ids.
fn poll_ids(spout: &mut KafkaSpout, em: &mut Emitter, until: usize) -> Vec<MessageId> {
    let t = Instant::now();
    let mut ids = Vec::new();
    while ids.len() < until {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "only {} emitted",
            ids.len()
        );
        let before = ids.len();
        spout.next_tuple(&mut SpoutOutputCollector::new(em));
        drop(em.take_frames());
        ids.extend(em.expire(Instant::now() + Duration::from_secs(3600), Duration::ZERO));
        idle_unless(ids.len() != before);
    }
    ids
}

#[test]
fn a_new_task_resumes_from_the_committed_offset_and_max_uncommitted_holds_it_back() {
    let Some(brokers) = broker() else { return };
    let topic = unique("resume");
    let group = unique("g");
    fill(&brokers, &topic, 1, 100);
    let conf = KafkaSpoutConfig::builder(&brokers, [topic.clone()])
        .group_id(&group)
        .max_uncommitted_offsets(10)
        .commit_period(Duration::from_millis(10))
        .build()
        .unwrap();
    let (mut a, mut em) = open_task(conf.clone(), ReliabilityMode::AtLeastOnce);
    let ids = poll_ids(&mut a, &mut em, 10);
    assert_eq!(ids.len(), 10);
    // nothing acked: the partition is held at 10 uncommitted offsets. A check that nothing
    // happens: 100 idle rounds (about 100 ms) with 90 more records on the broker
    for _ in 0..100 {
        a.next_tuple(&mut SpoutOutputCollector::new(&mut em));
        idle_unless(false);
    }
    assert_eq!(
        em.counters().emitted,
        10,
        "max_uncommitted_offsets holds the partition"
    );
    // ack offsets 0..5 only, then close (a sync commit of the acked prefix)
    for id in ids.into_iter().take(5) {
        a.ack(id);
    }
    a.close();
    assert_eq!(
        heron_kafka::group_progress(&brokers, &group, &topic).unwrap()[0].committed,
        Some(5)
    );
    // a new task of the same group starts at offset 5: 5..9 were never acked, so again
    let (mut b, mut em) = open_task(conf, ReliabilityMode::AtLeastOnce);
    let ids = poll_ids(&mut b, &mut em, 10);
    let offsets: Vec<i64> = ids
        .iter()
        .map(|id| match id {
            MessageId::Int(v) => v & ((1 << 48) - 1),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(offsets, (5..15).collect::<Vec<_>>());
}

#[test]
fn at_most_once_commits_before_it_emits() {
    let Some(brokers) = broker() else { return };
    let topic = unique("atmost");
    let group = unique("g");
    fill(&brokers, &topic, 2, 200);
    let conf = KafkaSpoutConfig::builder(&brokers, [topic.clone()])
        .group_id(&group)
        .build()
        .unwrap();
    let (mut spout, mut em) = open_task(conf, ReliabilityMode::AtMostOnce);
    let t = Instant::now();
    while em.counters().emitted < 200 {
        assert!(t.elapsed() < Duration::from_secs(30));
        spout.next_tuple(&mut SpoutOutputCollector::new(&mut em));
        drop(em.take_frames());
        // whatever was emitted is committed already
        let committed: i64 = heron_kafka::group_progress(&brokers, &group, &topic)
            .unwrap()
            .iter()
            .map(|p| p.committed.unwrap_or(0))
            .sum();
        assert!(committed >= em.counters().emitted as i64);
    }
}

#[test]
fn two_tasks_split_the_partitions() {
    let Some(brokers) = broker() else { return };
    let topic = unique("split");
    fill(&brokers, &topic, 5, 50);
    let conf = KafkaSpoutConfig::builder(&brokers, [topic.clone()])
        .build()
        .unwrap();
    let mut parts = Vec::new();
    for task in [7, 9] {
        let (mut s, mut em) =
            open_task_of(conf.clone(), ReliabilityMode::AtLeastOnce, task, &[9, 7]);
        s.next_tuple(&mut SpoutOutputCollector::new(&mut em));
        parts.push(
            s.assigned()
                .iter()
                .map(|tp| tp.partition)
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(parts, [vec![0, 2, 4], vec![1, 3]]);
}

#[test]
fn a_topic_pattern_reads_every_matching_topic() {
    let Some(brokers) = broker() else { return };
    let prefix = unique("logs");
    for t in ["a", "b"] {
        fill(&brokers, &format!("{prefix}-{t}"), 2, 4);
    }
    fill(&brokers, &format!("x{prefix}-c"), 1, 1); // does not match: the whole name counts
    let conf = KafkaSpoutConfig::builder_pattern(&brokers, format!("{prefix}-[a-z]"))
        .build()
        .unwrap();
    let (mut s, mut em) = open_task(conf, ReliabilityMode::AtLeastOnce);
    s.next_tuple(&mut SpoutOutputCollector::new(&mut em));
    let got: Vec<String> = s.assigned().iter().map(ToString::to_string).collect();
    let want: Vec<String> = ["a-0", "a-1", "b-0", "b-1"]
        .iter()
        .map(|p| format!("{prefix}-{p}"))
        .collect();
    assert_eq!(got, want);
}
