//! Records/s through KafkaSpout → bolt → KafkaBolt, against the broker's own produce and
//! consume rates measured in the same run.
//!
//! ```sh
//! scripts/kafka.sh start /tmp/kafka 9092
//! cargo run --release -p heron-kafka --example kafka_bench -- --brokers 127.0.0.1:9092 \
//!     [--records 500000] [--partitions 4] [--parallelism 2] [--runs 3] [--json FILE] \
//!     [--max-spout-pending 5000] \
//!     [--spout-prop librdkafka.key=value]... [--bolt-prop librdkafka.key=value]...
//! ```
//!
//! Each run writes `--records` records (about 60 bytes) to a new topic with a batching
//! producer (the broker's produce rate), reads them back with a plain consumer (its consume
//! rate), then runs topology KafkaBench (`kafka-spout` → `upper` → `kafka-bolt`, 2
//! containers) until the output topic holds every record, and times that from the first
//! record emitted. It prints one line per run and the medians, and with `--json FILE` writes
//! them as JSON.

use heron::{
    values, BasicBolt, BasicOutputCollector, Config, FailedException, Fields, HeronTopology,
    OutputFieldsDeclarer, ReliabilityMode, TopologyBuilder, TopologyError, Tuple,
};
use heron_kafka::{
    group_progress, KafkaBolt, KafkaBoltConfig, KafkaSpout, KafkaSpoutConfig, TopicSelector,
};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use std::time::{Duration, Instant};

/// Upper-cases the record value.
struct Upper;

impl BasicBolt for Upper {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["value"]));
    }

    fn execute(&mut self, t: &Tuple, c: &mut BasicOutputCollector) -> Result<(), FailedException> {
        c.emit(values![t
            .get_str_by_field("value")
            .unwrap_or_default()
            .to_ascii_uppercase()]);
        Ok(())
    }
}

#[derive(Clone, Debug)]
struct Options {
    brokers: String,
    records: u64,
    partitions: i32,
    parallelism: u32,
    reliability: ReliabilityMode,
    runs: u32,
    max_spout_pending: u64,
    json: Option<String>,
    /// librdkafka properties for the spout's consumer and the bolt's producer (`--spout-prop
    /// k=v`, `--bolt-prop k=v`).
    spout_props: Vec<(String, String)>,
    bolt_props: Vec<(String, String)>,
    // set for the topology's processes
    input: String,
    output: String,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        brokers: String::new(),
        records: 500_000,
        partitions: 4,
        parallelism: 2,
        reliability: ReliabilityMode::AtLeastOnce,
        runs: 3,
        max_spout_pending: 5000,
        json: None,
        spout_props: Vec::new(),
        bolt_props: Vec::new(),
        input: String::new(),
        output: String::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().ok_or(format!("{a} needs a value"));
        let num = |v: String| {
            v.parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or(format!("{a}: not a positive number: {v:?}"))
        };
        match a.as_str() {
            "--brokers" => o.brokers = value()?,
            "--records" => o.records = num(value()?)?,
            "--partitions" => o.partitions = num(value()?)? as i32,
            "--parallelism" => o.parallelism = num(value()?)? as u32,
            "--runs" => o.runs = num(value()?)? as u32,
            "--max-spout-pending" => o.max_spout_pending = num(value()?)?,
            "--json" => o.json = Some(value()?),
            "--spout-prop" | "--bolt-prop" => {
                let v = value()?;
                let (k, val) = v
                    .split_once('=')
                    .ok_or(format!("{a} wants key=value, not {v:?}"))?;
                let kv = (k.to_string(), val.to_string());
                if a == "--spout-prop" {
                    o.spout_props.push(kv);
                } else {
                    o.bolt_props.push(kv);
                }
            }
            "--input-topic" => o.input = value()?,
            "--output-topic" => o.output = value()?,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if o.brokers.is_empty() {
        return Err("--brokers HOST:PORT is required".into());
    }
    Ok(o)
}

fn topology(args: &[String]) -> Result<HeronTopology, TopologyError> {
    let o = parse(args).map_err(TopologyError::Invalid)?;
    let bad = |e: heron_kafka::KafkaError| TopologyError::Invalid(e.to_string());
    let mut spout = KafkaSpoutConfig::builder(&o.brokers, [o.input.clone()])
        .group_id(format!("{}-group", o.input))
        .commit_period(Duration::from_millis(200));
    for (k, v) in &o.spout_props {
        spout = spout.property(k, v);
    }
    let spout = spout.build().map_err(bad)?;
    let mut sink = KafkaBoltConfig::builder(&o.brokers, TopicSelector::Fixed(o.output.clone()))
        .no_key()
        .value_field("value");
    for (k, v) in &o.bolt_props {
        sink = sink.property(k, v);
    }
    let sink = sink.build().map_err(bad)?;
    let p = o.parallelism;
    let mut b = TopologyBuilder::new();
    b.set_spout("kafka-spout", move || KafkaSpout::new(spout.clone()), p);
    b.set_basic_bolt("upper", || Upper, p)
        .shuffle_grouping("kafka-spout");
    b.set_bolt("kafka-bolt", move || KafkaBolt::new(sink.clone()), p)
        .local_or_shuffle_grouping("upper");
    let mut c = Config::new();
    c.set(Config::TOPOLOGY_STMGRS, "2");
    c.set_reliability_mode(o.reliability);
    c.set_max_spout_pending(o.max_spout_pending);
    b.build("KafkaBench", c)
}

fn producer(brokers: &str) -> Result<ThreadedProducer<DefaultProducerContext>, String> {
    ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("linger.ms", "5")
        .create()
        .map_err(|e| e.to_string())
}

/// Writes `n` records round robin over the partitions; returns records/s.
fn produce(o: &Options, topic: &str) -> Result<f64, String> {
    let p = producer(&o.brokers)?;
    let start = Instant::now();
    for i in 0..o.records {
        let value = format!("record {i:>10} of the kafka bench, some words to carry");
        let part = (i % o.partitions as u64) as i32;
        let mut rec = BaseRecord::<(), str>::to(topic)
            .payload(&value)
            .partition(part);
        loop {
            match p.send(rec) {
                Ok(()) => break,
                Err((_, r)) => {
                    rec = r;
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        }
    }
    p.flush(Duration::from_secs(600))
        .map_err(|e| e.to_string())?;
    Ok(o.records as f64 / start.elapsed().as_secs_f64())
}

/// Reads every record of `topic` with a plain consumer; returns records/s.
fn consume(o: &Options, topic: &str) -> Result<f64, String> {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &o.brokers)
        .set("group.id", format!("{topic}-reader"))
        .set("enable.auto.commit", "false")
        .create()
        .map_err(|e| e.to_string())?;
    let mut tpl = TopicPartitionList::new();
    for p in 0..o.partitions {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .map_err(|e| e.to_string())?;
    }
    c.assign(&tpl).map_err(|e| e.to_string())?;
    let start = Instant::now();
    let mut n = 0;
    while n < o.records {
        if start.elapsed() > Duration::from_secs(600) {
            return Err(format!("read only {n} records in 600 s"));
        }
        if let Some(m) = c.poll(Duration::from_millis(100)) {
            m.map_err(|e| e.to_string())?;
            n += 1;
        }
    }
    Ok(o.records as f64 / start.elapsed().as_secs_f64())
}

/// Records of `topic` the spout's group committed.
fn committed(o: &Options, topic: &str) -> i64 {
    group_progress(&o.brokers, &format!("{topic}-group"), topic)
        .map(|ps| {
            ps.iter()
                .map(|p| p.committed.unwrap_or(p.low) - p.low)
                .sum()
        })
        .unwrap_or(0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn one_run(o: &Options, run: u32) -> Result<(f64, f64, f64), String> {
    let tag = format!(
        "{}-{run}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    );
    let (input, output) = (format!("bench-in-{tag}"), format!("bench-out-{tag}"));
    for t in [&input, &output] {
        heron_kafka::create_topic(&o.brokers, t, o.partitions).map_err(|e| e.to_string())?;
    }
    let produce_rate = produce(o, &input)?;
    let consume_rate = consume(o, &input)?;
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    args.extend([
        "--input-topic".into(),
        input.clone(),
        "--output-topic".into(),
        output.clone(),
    ]);
    let topology =
        heron::LocalTopology::submit_self(&args).map_err(|e| format!("submit failed: {e}"))?;
    // from the first record the spout emitted to the last one in the output topic
    let t0 = Instant::now();
    let mut first = None;
    let deadline = Duration::from_secs(900);
    let done = loop {
        if t0.elapsed() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
        if first.is_none() && topology.counters().emitted > 0 {
            first = Some(Instant::now());
        }
        if first.is_some() && committed(o, &input) >= o.records as i64 {
            break first;
        }
    };
    let _ = topology.kill();
    let first = done.ok_or(format!(
        "the spout did not commit all {} records",
        o.records
    ))?;
    let topology_rate = o.records as f64 / first.elapsed().as_secs_f64();
    Ok((produce_rate, consume_rate, topology_rate))
}

fn main() {
    heron::run_role_if_requested(topology);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("kafka_bench: {e}");
            std::process::exit(2);
        }
    };
    let (mut pr, mut cr, mut tr) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..o.runs {
        match one_run(&o, run) {
            Ok((p, c, t)) => {
                println!(
                    "run {run}: broker produce {p:.0} records/s, consume {c:.0} records/s; \
                     KafkaSpout → upper → KafkaBolt {t:.0} records/s ({:.2} × produce, {:.2} × consume)",
                    t / p,
                    t / c
                );
                pr.push(p);
                cr.push(c);
                tr.push(t);
            }
            Err(e) => {
                eprintln!("kafka_bench: run {run}: {e}");
                std::process::exit(1);
            }
        }
    }
    let ratios: Vec<f64> = tr.iter().zip(&pr).map(|(t, p)| t / p).collect();
    let (p, c, t, r) = (median(pr), median(cr), median(tr), median(ratios));
    println!(
        "median of {} runs ({} records, {}): produce {p:.0}/s, consume {c:.0}/s, topology {t:.0}/s, \
         topology/produce {r:.2}",
        o.runs,
        o.records,
        o.reliability.as_str()
    );
    if let Some(path) = &o.json {
        let j = serde_json::json!({
            "records": o.records, "runs": o.runs, "reliability": o.reliability.as_str(),
            "produce_per_s": p, "consume_per_s": c, "topology_per_s": t,
            "topology_over_produce": r,
        });
        if let Err(e) = std::fs::write(path, j.to_string()) {
            eprintln!("kafka_bench: {path}: {e}");
            std::process::exit(1);
        }
    }
}
