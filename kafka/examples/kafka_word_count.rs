//! KafkaWordCount: a KafkaSpout reads sentences from a topic, `split` splits them, `count`
//! counts words (fields grouping), and a KafkaBolt writes one record per counted word to the
//! output topic: key = the word, value = its running count in decimal.
//!
//! ```sh
//! cargo run --release -p heron-kafka --example kafka_word_count -- \
//!     --brokers 127.0.0.1:9092 --input-topic sentences --output-topic counts \
//!     [--reliability atleast|effectively|atmost] [--group kafka-word-count] [--duration 60s] \
//!     [--containers 2] [--parallelism 2] [--spout-parallelism 2] [--commit-period 1s] \
//!     [--checkpoint-interval 1s]
//! ```
//!
//! It submits itself to the local scheduler, reads a new group from the earliest offset
//! (Storm's default, `UNCOMMITTED_EARLIEST`), uses topics that already exist, prints once a
//! second how far the group's committed offsets got, and runs until Ctrl-C (or
//! `--duration`), then kills the topology. With `effectively` the counts are checkpointed
//! state and the output is checkpoint-aligned: after dropping records whose `heron-sink-id`
//! header repeats, the output topic holds exactly one record per word occurrence.

use heron::{
    values, BasicBolt, BasicOutputCollector, Bolt, Config, FailedException, Fields, HeronTopology,
    OutputCollector, OutputFieldsDeclarer, ReliabilityMode, State, Stateful, TopologyBuilder,
    TopologyError, Tuple,
};
use heron_kafka::{
    group_progress, KafkaBolt, KafkaBoltConfig, KafkaSpout, KafkaSpoutConfig, TopicSelector,
};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const NAME: &str = "KafkaWordCount";

/// Splits the record value into words.
struct Split;

impl BasicBolt for Split {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["word"]));
    }

    fn execute(&mut self, t: &Tuple, c: &mut BasicOutputCollector) -> Result<(), FailedException> {
        for w in t
            .get_str_by_field("value")
            .unwrap_or_default()
            .split_whitespace()
        {
            c.emit(values![w]);
        }
        Ok(())
    }
}

/// Counts words and emits `(word, count)`; the counts are checkpointed state.
#[derive(Default)]
struct Count {
    counts: HashMap<String, i64>,
}

impl Bolt for Count {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["word", "count"]));
    }

    fn execute(&mut self, t: &Tuple, c: &mut OutputCollector) {
        let Some(w) = t.get_str(0) else {
            c.ack(t);
            return;
        };
        let n = match self.counts.get_mut(w) {
            Some(n) => {
                *n += 1;
                *n
            }
            None => {
                self.counts.insert(w.to_string(), 1);
                1
            }
        };
        c.emit_anchored(&[t], values![w, n]);
        c.ack(t);
    }

    fn stateful(&mut self) -> Option<&mut dyn Stateful> {
        Some(self)
    }
}

impl Stateful for Count {
    fn init_state(&mut self, s: &State) {
        self.counts = s
            .iter()
            .filter_map(|(w, v)| Some((w.to_string(), v.as_i64()?)))
            .collect();
    }

    fn pre_save(&mut self, _id: &str, s: &mut State) {
        s.clear();
        for (w, n) in &self.counts {
            s.put(w.clone(), *n);
        }
    }
}

#[derive(Clone, Debug)]
struct Options {
    brokers: String,
    input: String,
    output: String,
    reliability: ReliabilityMode,
    group: String,
    duration: Option<Duration>,
    containers: u32,
    parallelism: u32,
    spout_parallelism: u32,
    commit_period: Duration,
    checkpoint_interval: Duration,
    checkpoint_root: PathBuf,
}

const USAGE: &str = "usage: kafka_word_count --brokers HOST:PORT --input-topic T --output-topic U \
    [--reliability atleast|effectively|atmost] [--group ID] [--duration 60s] [--containers 2] \
    [--parallelism 2] [--spout-parallelism 2] [--commit-period 1s] [--checkpoint-interval 1s] \
    [--checkpoint-root DIR]";

/// `500ms`, `1s`, `2m` or plain seconds.
fn duration(s: &str, name: &str) -> Result<Duration, String> {
    let bad = || format!("{name} must be a duration such as 500ms, 10s or 2m, not {s:?}");
    let (num, unit_ms) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60_000)
    } else {
        (s.strip_suffix('s').unwrap_or(s), 1000)
    };
    match num.parse::<u64>() {
        Ok(n) if n > 0 => Ok(Duration::from_millis(n * unit_ms)),
        _ => Err(bad()),
    }
}

fn positive(s: &str, name: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{name} must be a positive integer, not {s:?}")),
    }
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, String> {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default();
        let mut o = Options {
            brokers: String::new(),
            input: String::new(),
            output: String::new(),
            reliability: ReliabilityMode::AtLeastOnce,
            group: "kafka-word-count".into(),
            duration: None,
            containers: 2,
            parallelism: 2,
            spout_parallelism: 2,
            commit_period: Duration::from_secs(1),
            checkpoint_interval: Duration::from_secs(1),
            checkpoint_root: home.join(".herondata/checkpoints"),
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = || it.next().cloned().ok_or(format!("{a} needs a value"));
            match a.as_str() {
                "--brokers" => o.brokers = value()?,
                "--input-topic" => o.input = value()?,
                "--output-topic" => o.output = value()?,
                "--group" => o.group = value()?,
                "--reliability" => {
                    o.reliability = match value()?.as_str() {
                        "atmost" => ReliabilityMode::AtMostOnce,
                        "atleast" => ReliabilityMode::AtLeastOnce,
                        "effectively" => ReliabilityMode::EffectivelyOnce,
                        other => {
                            return Err(format!(
                            "--reliability must be atmost, atleast or effectively, not {other:?}"
                        ))
                        }
                    }
                }
                "--duration" => o.duration = Some(duration(&value()?, a)?),
                "--containers" => o.containers = positive(&value()?, a)?,
                "--parallelism" => o.parallelism = positive(&value()?, a)?,
                "--spout-parallelism" => o.spout_parallelism = positive(&value()?, a)?,
                "--commit-period" => o.commit_period = duration(&value()?, a)?,
                "--checkpoint-interval" => o.checkpoint_interval = duration(&value()?, a)?,
                "--checkpoint-root" => o.checkpoint_root = PathBuf::from(value()?),
                "-h" | "--help" => return Err(USAGE.into()),
                other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
            }
        }
        for (v, flag) in [
            (&o.brokers, "--brokers"),
            (&o.input, "--input-topic"),
            (&o.output, "--output-topic"),
        ] {
            if v.is_empty() {
                return Err(format!("{flag} is required\n{USAGE}"));
            }
        }
        o.checkpoint_root = std::path::absolute(&o.checkpoint_root)
            .map_err(|e| format!("--checkpoint-root: {e}"))?;
        Ok(o)
    }
}

fn topology(args: &[String]) -> Result<HeronTopology, TopologyError> {
    let o = Options::parse(args).map_err(TopologyError::Invalid)?;
    let bad = |e: heron_kafka::KafkaError| TopologyError::Invalid(e.to_string());
    let spout = KafkaSpoutConfig::builder(&o.brokers, [o.input.clone()])
        .group_id(&o.group)
        .commit_period(o.commit_period)
        .build()
        .map_err(bad)?;
    let sink = KafkaBoltConfig::builder(&o.brokers, TopicSelector::Fixed(o.output.clone()))
        .key_field("word")
        .value_field("count")
        .build()
        .map_err(bad)?;
    let p = o.parallelism;
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "kafka-spout",
        move || KafkaSpout::new(spout.clone()),
        o.spout_parallelism,
    );
    b.set_basic_bolt("split", || Split, p)
        .shuffle_grouping("kafka-spout");
    b.set_bolt("count", Count::default, p)
        .fields_grouping("split", Fields::new(["word"]));
    b.set_bolt("kafka-bolt", move || KafkaBolt::new(sink.clone()), p)
        .fields_grouping("count", Fields::new(["word"]));
    let mut c = Config::new();
    c.set(Config::TOPOLOGY_STMGRS, o.containers.to_string());
    c.set_reliability_mode(o.reliability);
    if o.reliability == ReliabilityMode::EffectivelyOnce {
        c.set(
            "topology.stateful.checkpoint.interval.seconds",
            o.checkpoint_interval.as_secs().max(1).to_string(),
        );
        c.set(
            "heron.statefulstorage.localfs.root.path",
            o.checkpoint_root.display().to_string(),
        );
    }
    b.build(NAME, c)
}

fn main() {
    heron::run_role_if_requested(topology);
    std::process::exit(match drive() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("kafka_word_count: {e}");
            1
        }
    });
}

fn drive() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = Options::parse(&args)?;
    // fail early, and clearly, when a topic is missing
    for t in [&o.input, &o.output] {
        group_progress(&o.brokers, &o.group, t).map_err(|e| format!("{t}: {e}"))?;
    }
    let mut sub = args.clone();
    if !sub.iter().any(|a| a == "--checkpoint-root") {
        sub.extend([
            "--checkpoint-root".into(),
            o.checkpoint_root.display().to_string(),
        ]);
    }
    println!(
        "submitting {NAME} ({}, {} containers): {} → {} on {}, group {}",
        o.reliability.as_str(),
        o.containers,
        o.input,
        o.output,
        o.brokers,
        o.group
    );
    let topology =
        heron::LocalTopology::submit_self(&sub).map_err(|e| format!("submit failed: {e}"))?;
    let stop = heron::ctrl_c_flag();
    let start = Instant::now();
    while !stop.load(std::sync::atomic::Ordering::SeqCst)
        && o.duration.is_none_or(|d| start.elapsed() < d)
    {
        std::thread::sleep(Duration::from_millis(250));
        if start.elapsed().as_millis() % 1000 >= 250 {
            continue;
        }
        let c = topology.counters();
        let progress = match group_progress(&o.brokers, &o.group, &o.input) {
            Ok(ps) => {
                let committed: i64 = ps
                    .iter()
                    .map(|p| p.committed.unwrap_or(p.low) - p.low)
                    .sum();
                let total: i64 = ps.iter().map(|p| p.high - p.low).sum();
                format!("committed {committed}/{total}")
            }
            Err(e) => format!("progress unknown: {e}"),
        };
        println!(
            "[{:>4.0}s] {progress} records of {}; tuples emitted {}, acked {}, failed {}",
            start.elapsed().as_secs_f64(),
            o.input,
            c.emitted,
            c.acked,
            c.failed
        );
    }
    topology.kill().map_err(|e| format!("kill failed: {e}"))?;
    println!(
        "topology killed after {:.1}s",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
