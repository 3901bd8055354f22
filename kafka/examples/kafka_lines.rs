//! Lines in and out of a Kafka topic, for trying the Kafka examples and measuring the broker.
//!
//! ```sh
//! # create a topic (4 partitions) and write stdin's lines to it, one record a line
//! seq 1 100000 | sed 's/.*/the quick brown fox/' | cargo run --release -p heron-kafka \
//!     --example kafka_lines -- produce --brokers 127.0.0.1:9092 --topic sentences --partitions 4
//! # print a topic's records up to its current end: partition, offset, key, value, sink id
//! cargo run --release -p heron-kafka --example kafka_lines -- consume --brokers 127.0.0.1:9092 --topic counts
//! ```
//!
//! Both print their rate (records/s) on stderr at the end. `produce --one-per-batch` writes
//! every record in a batch of its own: tansu 0.6.0 returns nothing for a fetch that starts
//! inside a batch, so a spout that resumes or retries mid-batch needs it there.

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Headers;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

const USAGE: &str =
    "usage: kafka_lines produce|consume --brokers HOST:PORT --topic T [--partitions N]";

fn main() {
    if let Err(e) = run() {
        eprintln!("kafka_lines: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let verb = args.first().cloned().unwrap_or_default();
    let (mut brokers, mut topic, mut partitions) = (None, None, None);
    let mut one_per_batch = false;
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--brokers" => brokers = Some(value()?),
            "--topic" => topic = Some(value()?),
            "--one-per-batch" => one_per_batch = true,
            "--partitions" => {
                let v = value()?;
                partitions = Some(v.parse::<i32>().ok().filter(|n| *n > 0).ok_or(format!(
                    "--partitions must be a positive integer, not {v:?}"
                ))?)
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let brokers = brokers.ok_or(format!("--brokers is required\n{USAGE}"))?;
    let topic = topic.ok_or(format!("--topic is required\n{USAGE}"))?;
    match verb.as_str() {
        "produce" => produce(&brokers, &topic, partitions, one_per_batch),
        "consume" => consume(&brokers, &topic),
        _ => Err(USAGE.into()),
    }
}

/// `one_per_batch`: every record in a record batch of its own, so that a consumer can start
/// at any offset even on tansu 0.6.0, which returns nothing for a fetch that starts inside a
/// batch (slower to write).
fn produce(
    brokers: &str,
    topic: &str,
    partitions: Option<i32>,
    one_per_batch: bool,
) -> Result<(), String> {
    if let Some(n) = partitions {
        heron_kafka::create_topic(brokers, topic, n).map_err(|e| e.to_string())?;
    }
    let mut cc = ClientConfig::new();
    cc.set("bootstrap.servers", brokers)
        .set("enable.idempotence", "true")
        .set("linger.ms", "5");
    if one_per_batch {
        cc.set("batch.num.messages", "1").set("linger.ms", "0");
    }
    let p: ThreadedProducer<DefaultProducerContext> = cc.create().map_err(|e| e.to_string())?;
    let start = Instant::now();
    let mut n = 0u64;
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        let mut rec = BaseRecord::<(), str>::to(topic).payload(&line);
        loop {
            match p.send(rec) {
                Ok(()) => break,
                Err((_, r)) => {
                    rec = r; // the queue is full: let it drain
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
        n += 1;
    }
    p.flush(Duration::from_secs(120))
        .map_err(|e| e.to_string())?;
    let s = start.elapsed().as_secs_f64();
    eprintln!(
        "produced {n} records to {topic} in {s:.2}s: {:.0} records/s",
        n as f64 / s
    );
    Ok(())
}

fn consume(brokers: &str, topic: &str) -> Result<(), String> {
    let progress =
        heron_kafka::group_progress(brokers, "kafka-lines", topic).map_err(|e| e.to_string())?;
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", "kafka-lines")
        .set("enable.auto.commit", "false")
        .create()
        .map_err(|e| e.to_string())?;
    let mut tpl = TopicPartitionList::new();
    let mut left = 0i64;
    for p in &progress {
        tpl.add_partition_offset(topic, p.partition, Offset::Offset(p.low))
            .map_err(|e| e.to_string())?;
        left += p.high - p.low;
    }
    c.assign(&tpl).map_err(|e| e.to_string())?;
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    let start = Instant::now();
    let mut n = 0i64;
    let mut idle = Instant::now();
    // to the ends read at the start, then on until a second passes with nothing new
    while n < left || idle.elapsed() < Duration::from_secs(1) {
        match c.poll(Duration::from_millis(100)) {
            None => continue,
            Some(Err(e)) => return Err(e.to_string()),
            Some(Ok(m)) => {
                idle = Instant::now();
                n += 1;
                let sink = m
                    .headers()
                    .and_then(|h| h.iter().find(|h| h.key == heron_kafka::SINK_ID_HEADER))
                    .and_then(|h| h.value)
                    .map(|v| String::from_utf8_lossy(v).into_owned())
                    .unwrap_or_default();
                writeln!(
                    out,
                    "{}\t{}\t{}\t{}\t{sink}",
                    m.partition(),
                    m.offset(),
                    String::from_utf8_lossy(m.key().unwrap_or_default()),
                    String::from_utf8_lossy(m.payload().unwrap_or_default())
                )
                .map_err(|e| e.to_string())?;
            }
        }
    }
    out.flush().map_err(|e| e.to_string())?;
    let s = start.elapsed().as_secs_f64();
    eprintln!(
        "consumed {n} records of {topic} in {s:.2}s: {:.0} records/s",
        n as f64 / s
    );
    Ok(())
}
