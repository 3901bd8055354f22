//! Helpers for the Kafka tests: the broker, topics, producing input and reading output.

#![allow(dead_code)] // not every test binary uses every helper

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Headers;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The broker every test of this binary uses: `HERONRS_KAFKA` when set (CI starts one),
/// otherwise a private tansu broker started for this test process (built into the tool cache
/// by `scripts/kafka.sh` when missing and `CI=true`). `None` outside CI when the broker is
/// not installed: the test then skips, saying so.
pub fn broker() -> Option<String> {
    static BROKER: OnceLock<Option<String>> = OnceLock::new();
    BROKER
        .get_or_init(|| {
            if let Ok(b) = std::env::var("HERONRS_KAFKA") {
                if !b.is_empty() {
                    return Some(b);
                }
            }
            let ci = std::env::var("CI").is_ok_and(|v| v == "true");
            let script = workspace().join("scripts/kafka.sh");
            let dir = std::env::temp_dir().join(format!("heronrs-kafka-{}", std::process::id()));
            let port = heron_testkit::free_port();
            let out = Command::new(&script)
                .args(["start".as_ref(), dir.as_os_str(), port.to_string().as_ref()])
                .env("KAFKA_OWNER_PID", std::process::id().to_string())
                .env("KAFKA_NO_INSTALL", if ci { "0" } else { "1" })
                .output()
                .expect("run scripts/kafka.sh");
            if out.status.success() {
                return Some(format!("127.0.0.1:{port}"));
            }
            let why = String::from_utf8_lossy(&out.stderr).into_owned();
            assert!(!ci, "CI=true and no Kafka broker could be started: {why}");
            eprintln!(
                "SKIPPED: no Kafka-protocol broker (set HERONRS_KAFKA=host:port, or build one \
                 with `scripts/kafka.sh install`): {why}"
            );
            None
        })
        .clone()
}

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

/// A name no other test uses.
pub fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// `target/<profile>` of this test binary.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test exe");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>")
        .to_path_buf()
}

/// Builds (when stale) and returns this package's example `name`.
pub fn fresh_example(name: &str) -> PathBuf {
    cargo_build(&["--example", name, "-p", "heron-kafka"]);
    profile_dir().join("examples").join(name)
}

/// Builds (when stale) and returns the `heron` CLI.
pub fn heron_cli() -> PathBuf {
    cargo_build(&["--bin", "heron", "-p", "heron-rs"]);
    profile_dir().join("heron")
}

fn cargo_build(what: &[&str]) {
    let profile = profile_dir();
    let target = profile.parent().expect("target dir");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet"])
        .args(what)
        .arg("--target-dir")
        .arg(target)
        .current_dir(workspace());
    if profile.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    assert!(
        cmd.status().expect("run cargo build").success(),
        "cargo build {what:?} failed"
    );
}

/// A producer for test input: one record per record batch. tansu 0.6.0 answers a fetch
/// that starts inside a record batch with nothing (Kafka returns the batch and the client
/// skips the records before the offset), so on it a consumer can resume or seek back only
/// to a batch's first offset; with one record per batch every offset is one.
pub fn producer(brokers: &str) -> ThreadedProducer<DefaultProducerContext> {
    ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("batch.num.messages", "1")
        .set("linger.ms", "0")
        // one record a request: many requests in flight (in order on the one connection,
        // and nothing is retried on loopback, so the order of each partition holds)
        .set("enable.idempotence", "false")
        .set("max.in.flight.requests.per.connection", "1000")
        .create()
        .expect("test producer")
}

/// Sends `value` (with no key) round-robin over `partitions` partitions of `topic`.
pub fn send(
    p: &ThreadedProducer<DefaultProducerContext>,
    topic: &str,
    partition: i32,
    value: &str,
) {
    let mut rec = BaseRecord::<(), str>::to(topic)
        .payload(value)
        .partition(partition);
    loop {
        match p.send(rec) {
            Ok(()) => return,
            Err((_, r)) => {
                rec = r;
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

/// Waits until everything sent was delivered.
pub fn flush(p: &ThreadedProducer<DefaultProducerContext>) {
    p.flush(Duration::from_secs(180))
        .expect("flush the test producer");
}

/// One record of an output topic.
#[derive(Clone, Debug)]
pub struct OutRecord {
    pub partition: i32,
    pub offset: i64,
    pub key: String,
    pub value: String,
    pub sink_id: Option<String>,
}

/// Every record of `topic` up to its current end, in partition then offset order.
pub fn read_all(brokers: &str, topic: &str) -> Vec<OutRecord> {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", unique("reader"))
        .set("enable.auto.commit", "false")
        .create()
        .expect("test consumer");
    let progress = heron_kafka::group_progress(brokers, "unused-reader", topic).expect("topic");
    let mut tpl = TopicPartitionList::new();
    let mut ends = std::collections::HashMap::new();
    for p in &progress {
        tpl.add_partition_offset(topic, p.partition, Offset::Offset(p.low))
            .unwrap();
        if p.high > p.low {
            ends.insert(p.partition, p.high);
        }
    }
    c.assign(&tpl).unwrap();
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    // read to the ends, then on until nothing came for a second (an end may be reported
    // one short)
    let mut quiet_since: Option<Instant> = None;
    loop {
        assert!(
            Instant::now() < deadline,
            "reading {topic} timed out, left: {ends:?}"
        );
        let Some(m) = c.poll(Duration::from_millis(100)) else {
            if ends.is_empty() {
                let q = *quiet_since.get_or_insert_with(Instant::now);
                if q.elapsed() > Duration::from_secs(1) {
                    break;
                }
            }
            continue;
        };
        quiet_since = None;
        let m = m.expect("fetch");
        let sink_id = m.headers().and_then(|h| {
            h.iter()
                .find(|h| h.key == heron_kafka::SINK_ID_HEADER)
                .and_then(|h| h.value)
                .map(|v| String::from_utf8_lossy(v).into_owned())
        });
        out.push(OutRecord {
            partition: m.partition(),
            offset: m.offset(),
            key: String::from_utf8_lossy(m.key().unwrap_or_default()).into_owned(),
            value: String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned(),
            sink_id,
        });
        if ends
            .get(&m.partition())
            .is_some_and(|&e| m.offset() + 1 >= e)
        {
            ends.remove(&m.partition());
        }
    }
    out.sort_by_key(|r| (r.partition, r.offset));
    out
}

/// The partitions of `topic` once `group` committed `records` records in all and at least
/// the end of every partition. (tansu 0.6.0 sometimes reports a partition's end one short
/// of the offset after its last record, so the count is what decides.)
pub fn all_committed(
    brokers: &str,
    group: &str,
    topic: &str,
    records: i64,
) -> Option<Vec<heron_kafka::PartitionProgress>> {
    let ps = heron_kafka::group_progress(brokers, group, topic).ok()?;
    let committed: i64 = ps
        .iter()
        .map(|p| p.committed.unwrap_or(p.low) - p.low)
        .sum();
    (committed >= records && ps.iter().all(|p| p.committed >= Some(p.high))).then_some(ps)
}

/// Records committed by `group` on `topic` so far.
pub fn committed_count(brokers: &str, group: &str, topic: &str) -> i64 {
    heron_kafka::group_progress(brokers, group, topic)
        .map(|ps| {
            ps.iter()
                .map(|p| p.committed.unwrap_or(p.low) - p.low)
                .sum()
        })
        .unwrap_or(0)
}
