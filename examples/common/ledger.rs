//! The `Ledger` topology (ATLEAST_ONCE, its spouts keep a ledger of message ids), shared by
//! `tests/topologies/ledger.rs` (the reliability tests) and `examples/chaos.rs` (the chaos
//! run). Arguments: `--out-dir <dir> --ids N --rate R --containers N --timeout-secs S
//! --max-pending P [--shape relay|word-count] [--config KEY=VALUE]...`; the including binary has an `args` module
//! (`tests/topologies/args.rs`).
//!
//! * spout `ledger` (parallelism 2): task k of n owns the ids `i < N` with `i % n == k` and
//!   emits each with message id `i`, at most `R` new ids per second per task. A failed id is
//!   emitted again (a replay). Acked ids are appended to `<out-dir>/acked-<task>.log` (one
//!   per line; flushed every 100 ms, before each stats write and at close), which the spout
//!   reads back when it is restarted, so a restarted spout emits again only the ids not
//!   acked yet. It writes
//!   `<out-dir>/spout-<task>.json` (emitted, acked, failed, replayed, opens, done) every
//!   200 ms.
//! * `--shape relay` (the default): `relay` (shuffle, 2) emits two tuples anchored to its
//!   input, one on stream `default` and one on stream `copies`, then acks it (and reports an
//!   error, [`RELAY_ERROR`], for each id that is a multiple of 5000); `sink` (fields on
//!   `id` of both streams, 2) acks.
//! * `--shape word-count`: each id carries a sentence of 3 to 7 words; `split` (shuffle, 2)
//!   emits its words anchored to it, `count` (fields on `word`, 2) counts and acks.
//!
//! Everything runs across the containers, so trees cross stream managers both ways.

use heron::{
    values, Bolt, Config, Fields, HeronTopology, MessageId, OutputCollector, OutputFieldsDeclarer,
    ReliabilityMode, Spout, SpoutOutputCollector, TopologyBuilder, TopologyContext, TopologyError,
    Tuple,
};
use std::collections::{HashSet, VecDeque};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct Args {
    out_dir: PathBuf,
    ids: u64,
    rate: u64,
    containers: u32,
    timeout_secs: u64,
    max_pending: u64,
    word_count: bool,
    /// `heron.*` config keys to set (`--config KEY=VALUE`, repeatable).
    config: Vec<(String, String)>,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        out_dir: PathBuf::from("."),
        ids: 20_000,
        rate: 2_000,
        containers: 2,
        timeout_secs: 5,
        max_pending: 500,
        word_count: false,
        config: Vec::new(),
    };
    crate::args::each_pair(args, |k, v| {
        match k {
            "--out-dir" => a.out_dir = PathBuf::from(v),
            "--ids" => a.ids = crate::args::number(k, v)?,
            "--rate" => a.rate = crate::args::number(k, v)?.max(1),
            "--containers" => a.containers = crate::args::number(k, v)? as u32,
            "--timeout-secs" => a.timeout_secs = crate::args::number(k, v)?,
            "--max-pending" => a.max_pending = crate::args::number(k, v)?,
            "--config" => {
                let (key, value) = v
                    .split_once('=')
                    .ok_or_else(|| format!("--config takes KEY=VALUE, not {v:?}"))?;
                a.config.push((key.to_owned(), value.to_owned()));
            }
            "--shape" => {
                a.word_count = match v {
                    "relay" => false,
                    "word-count" => true,
                    _ => return Err(format!("--shape must be relay or word-count, not {v:?}")),
                }
            }
            _ => return crate::args::unknown(k),
        }
        Ok(())
    })?;
    Ok(a)
}

struct LedgerSpout {
    args: Args,
    task: i32,
    /// Ids of this task not emitted yet in this run, in order.
    fresh: VecDeque<u64>,
    /// Failed ids to emit again.
    replay: VecDeque<u64>,
    acked: HashSet<u64>,
    owned: u64,
    /// Fresh ids emitted since open.
    fresh_sent: u64,
    log: Option<std::io::BufWriter<std::fs::File>>,
    emitted: u64,
    acks: u64,
    failed: u64,
    replayed: u64,
    opens: u64,
    started: Instant,
    last_flush: Instant,
    last_stats: Instant,
}

impl LedgerSpout {
    fn new(args: Args) -> LedgerSpout {
        let now = Instant::now();
        LedgerSpout {
            args,
            task: 0,
            fresh: VecDeque::new(),
            replay: VecDeque::new(),
            acked: HashSet::new(),
            owned: 0,
            fresh_sent: 0,
            log: None,
            emitted: 0,
            acks: 0,
            failed: 0,
            replayed: 0,
            opens: 0,
            started: now,
            last_flush: now,
            last_stats: now,
        }
    }

    fn path(&self, what: &str, ext: &str) -> PathBuf {
        self.args
            .out_dir
            .join(format!("{what}-{}.{ext}", self.task))
    }

    fn write_stats(&mut self) {
        // the ids counted acked here are in the ledger file before anyone reads "done"
        self.flush();
        let body = serde_json::json!({
            "task": self.task,
            "owned": self.owned,
            "emitted": self.emitted,
            "acked": self.acked.len(),
            "acks": self.acks,
            "failed": self.failed,
            "replayed": self.replayed,
            "opens": self.opens,
            "done": self.acked.len() as u64 == self.owned,
        });
        let path = self.path("spout", "json");
        let tmp = path.with_extension("tmp");
        if std::fs::write(&tmp, body.to_string()).is_ok() {
            let _ = std::fs::rename(&tmp, &path);
        }
        self.last_stats = Instant::now();
    }

    fn flush(&mut self) {
        if let Some(log) = &mut self.log {
            let _ = log.flush();
        }
        self.last_flush = Instant::now();
    }
}

fn id_of(msg: &MessageId) -> Option<u64> {
    msg.as_i64().and_then(|i| u64::try_from(i).ok())
}

impl LedgerSpout {
    /// Emits id `id`: alone, or with its sentence in the word-count shape.
    fn emit(&self, id: u64, collector: &mut SpoutOutputCollector) {
        if self.args.word_count {
            collector.emit_with_id(values![id as i64, sentence(id)], id as i64);
        } else {
            collector.emit_with_id(values![id as i64], id as i64);
        }
    }
}

/// The sentence of id `id`: 3 to 7 words of a 64-word vocabulary.
fn sentence(id: u64) -> String {
    let mut x = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let n = 3 + x % 5;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("w{}", x % 64)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl Spout for LedgerSpout {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        if self.args.word_count {
            d.declare(Fields::new(["id", "sentence"]));
        } else {
            d.declare(Fields::new(["id"]));
        }
    }

    fn open(&mut self, ctx: &TopologyContext) {
        self.task = ctx.task_id();
        let mut tasks = ctx.this_component_tasks().to_vec();
        tasks.sort_unstable();
        let n = tasks.len() as u64;
        let k = tasks.iter().position(|t| *t == self.task).unwrap_or(0) as u64;
        // What an earlier run of this task got acked, and how often it was opened.
        if let Ok(text) = std::fs::read_to_string(self.path("acked", "log")) {
            self.acked = text.lines().filter_map(|l| l.parse().ok()).collect();
        }
        if let Ok(text) = std::fs::read_to_string(self.path("spout", "json")) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
                self.opens = v["opens"].as_u64().unwrap_or(0);
                self.replayed = v["replayed"].as_u64().unwrap_or(0);
                self.failed = v["failed"].as_u64().unwrap_or(0);
                self.emitted = v["emitted"].as_u64().unwrap_or(0);
                self.acks = v["acks"].as_u64().unwrap_or(0);
            }
        }
        self.opens += 1;
        self.fresh = (0..self.args.ids)
            .filter(|i| i % n == k && !self.acked.contains(i))
            .collect();
        self.owned = (0..self.args.ids).filter(|i| i % n == k).count() as u64;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path("acked", "log"))
            .expect("open the ledger");
        self.log = Some(std::io::BufWriter::new(file));
        self.started = Instant::now();
        self.write_stats();
    }

    fn next_tuple(&mut self, collector: &mut SpoutOutputCollector) {
        if self.last_flush.elapsed() > Duration::from_millis(100) {
            self.flush();
        }
        if self.last_stats.elapsed() > Duration::from_millis(200) {
            self.write_stats();
        }
        if let Some(id) = self.replay.pop_front() {
            self.replayed += 1;
            self.emitted += 1;
            self.emit(id, collector);
            return;
        }
        // Rate limit for fresh ids, so that faults happen mid-run.
        let allowed = self.started.elapsed().as_secs_f64() * self.args.rate as f64;
        if (self.fresh_sent as f64) >= allowed || self.fresh.is_empty() {
            std::thread::sleep(Duration::from_micros(200));
            return;
        }
        let id = self.fresh.pop_front().expect("not empty");
        self.fresh_sent += 1;
        self.emitted += 1;
        self.emit(id, collector);
    }

    fn ack(&mut self, msg: MessageId) {
        self.acks += 1;
        if let Some(id) = id_of(&msg) {
            if self.acked.insert(id) {
                if let Some(log) = &mut self.log {
                    let _ = writeln!(log, "{id}");
                }
            }
        }
    }

    fn fail(&mut self, msg: MessageId) {
        self.failed += 1;
        if let Some(id) = id_of(&msg) {
            if !self.acked.contains(&id) {
                self.replay.push_back(id);
            }
        }
    }

    fn close(&mut self) {
        self.flush();
        self.write_stats();
    }
}

/// What the relay reports for every id that is a multiple of 5000.
pub const RELAY_ERROR: &str = "relay: an id that is a multiple of 5000";

/// Emits two tuples anchored to each input (on `default` and on `copies`), then acks it.
struct Relay;

impl Bolt for Relay {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["id", "copy"]));
        d.declare_stream("copies", Fields::new(["id", "copy"]));
    }

    fn execute(&mut self, input: &Tuple, collector: &mut OutputCollector) {
        let id = input.get_i64_by_field("id").unwrap_or(-1);
        if id % 5000 == 0 {
            // the exceptions path end to end: the tracker must show these
            collector.report_error(RELAY_ERROR);
        }
        collector.emit_anchored(&[input], values![id, 0i64]);
        collector.emit_stream("copies", &[input], values![id, 1i64]);
        collector.ack(input);
    }
}

/// Acks.
struct Sink;

impl Bolt for Sink {
    fn declare_output_fields(&self, _d: &mut OutputFieldsDeclarer) {}

    fn execute(&mut self, input: &Tuple, collector: &mut OutputCollector) {
        collector.ack(input);
    }
}

/// Emits the words of a sentence anchored to it, then acks it.
struct Split;

impl Bolt for Split {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["word"]));
    }

    fn execute(&mut self, input: &Tuple, collector: &mut OutputCollector) {
        let sentence = input.get_str_by_field("sentence").unwrap_or_default();
        for w in sentence.split_whitespace() {
            collector.emit_anchored(&[input], values![w]);
        }
        collector.ack(input);
    }
}

/// Counts words and acks them.
#[derive(Default)]
struct Count(std::collections::HashMap<String, u64>);

impl Bolt for Count {
    fn declare_output_fields(&self, _d: &mut OutputFieldsDeclarer) {}

    fn execute(&mut self, input: &Tuple, collector: &mut OutputCollector) {
        let word = input.get_str(0).unwrap_or_default();
        match self.0.get_mut(word) {
            Some(n) => *n += 1,
            None => {
                self.0.insert(word.to_owned(), 1);
            }
        }
        collector.ack(input);
    }
}

/// The `Ledger` topology `argv` describes.
pub fn topology(argv: &[String]) -> Result<HeronTopology, TopologyError> {
    let args = parse(argv).map_err(TopologyError::Invalid)?;
    let mut b = TopologyBuilder::new();
    let a = args.clone();
    b.set_spout("ledger", move || LedgerSpout::new(a.clone()), 2);
    if args.word_count {
        b.set_bolt("split", || Split, 2).shuffle_grouping("ledger");
        b.set_bolt("count", Count::default, 2)
            .fields_grouping("split", Fields::new(["word"]));
    } else {
        b.set_bolt("relay", || Relay, 2).shuffle_grouping("ledger");
        b.set_bolt("sink", || Sink, 2)
            .fields_grouping("relay", Fields::new(["id"]))
            .fields_grouping_stream("relay", "copies", Fields::new(["id"]));
    }
    let mut conf = Config::new();
    conf.set(Config::TOPOLOGY_STMGRS, args.containers.to_string());
    conf.set_reliability_mode(ReliabilityMode::AtLeastOnce);
    conf.set_message_timeout_secs(args.timeout_secs);
    conf.set_max_spout_pending(args.max_pending);
    for (k, v) in &args.config {
        conf.set(k, v);
    }
    b.build("Ledger", conf)
}
