//! A finite topology that checks every grouping end to end (used by `tests/multiprocess.rs`).
//!
//! Arguments: `--out-dir <dir> --containers N --words-per-spout N --marks-per-spout N`.
//!
//! * spout `words` (parallelism 2) emits `words-per-spout` words from a fixed vocabulary on
//!   `default`, `marks-per-spout` marks on `marks`, and one tuple per word on the direct stream
//!   `direct` addressed (emit_direct) to a chosen task of bolt `direct`, carrying that choice.
//! * `relay` (shuffle, 2) forwards words; `count` (fields on `word`, 3) counts them.
//! * `everyone` (all grouping on `marks`, 2), `lowest` (global grouping on `marks`, 2),
//!   `direct` (direct grouping, 2), `custom` (a custom grouping on `default`, 2),
//!   `local` (local-or-shuffle on `default`, 2).
//!
//! Each bolt task writes what it saw to `<out-dir>/<component>-<task>.json` (atomically, at most
//! every 100 ms and at cleanup).

mod args;

use heron::{
    values, Bolt, Config, CustomStreamGrouping, Fields, HeronTopology, OutputCollector,
    OutputFieldsDeclarer, Spout, SpoutOutputCollector, TopologyBuilder, TopologyContext,
    TopologyError, Tuple, Value,
};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const VOCAB: &[&str] = &[
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
    "uniform", "victor", "whiskey", "xray", "yankee", "zulu", "one", "two", "three", "four",
];

#[derive(Clone, Debug)]
struct Args {
    out_dir: PathBuf,
    containers: u32,
    words_per_spout: u64,
    marks_per_spout: u64,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        out_dir: PathBuf::from("."),
        containers: 2,
        words_per_spout: 10_000,
        marks_per_spout: 10,
    };
    args::each_pair(args, |k, v| {
        match k {
            "--out-dir" => a.out_dir = PathBuf::from(v),
            "--containers" => a.containers = args::number(k, v)? as u32,
            "--words-per-spout" => a.words_per_spout = args::number(k, v)?,
            "--marks-per-spout" => a.marks_per_spout = args::number(k, v)?,
            _ => return args::unknown(k),
        }
        Ok(())
    })?;
    Ok(a)
}

/// The word a spout emits at position `i`: a fixed, known multiset.
pub fn word_at(i: u64) -> &'static str {
    VOCAB[((i * 7 + i / 3) % VOCAB.len() as u64) as usize]
}

struct WordSpout {
    args: Args,
    emitted: u64,
    marks: u64,
    direct_tasks: Vec<i32>,
}

impl Spout for WordSpout {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["word", "n"]));
        d.declare_stream("marks", Fields::new(["mark"]));
        d.declare_direct_stream("direct", Fields::new(["word", "target"]));
    }

    fn open(&mut self, ctx: &TopologyContext) {
        self.direct_tasks = ctx.component_tasks("direct").to_vec();
    }

    fn next_tuple(&mut self, collector: &mut SpoutOutputCollector) {
        if self.marks < self.args.marks_per_spout {
            collector.emit_stream("marks", values![self.marks as i64], None);
            self.marks += 1;
        }
        // Emit in small bursts so a spout's quota spans many batches.
        for _ in 0..16 {
            if self.emitted >= self.args.words_per_spout {
                std::thread::sleep(Duration::from_millis(1));
                return;
            }
            let word = word_at(self.emitted);
            collector.emit(values![word, self.emitted as i64]);
            let target = self.direct_tasks[(self.emitted as usize) % self.direct_tasks.len()];
            collector.emit_direct(target, "direct", values![word, target], None);
            self.emitted += 1;
        }
    }
}

/// Forwards words (shuffle hop).
struct Relay;

impl Bolt for Relay {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["word"]));
    }

    fn execute(&mut self, input: &Tuple, collector: &mut OutputCollector) {
        let word = input
            .get_str_by_field("word")
            .unwrap_or_default()
            .to_string();
        collector.emit_anchored(&[input], values![word]);
        collector.ack(input);
    }
}

/// Records what a task saw and writes it out.
struct Recorder {
    component: String,
    task: i32,
    out_dir: PathBuf,
    seen: BTreeMap<String, u64>,
    /// Tuples whose content says they should not have come here.
    misrouted: u64,
    total: u64,
    dirty: bool,
    last_write: Instant,
    mode: Mode,
}

#[derive(Clone, Copy)]
enum Mode {
    /// Count by the `word` field.
    Words,
    /// Count all tuples.
    Total,
    /// Check the tuple's `target` field names this task.
    Direct,
    /// Check the custom grouping's choice.
    Custom,
}

impl Recorder {
    fn new(args: &Args, component: &str, mode: Mode) -> Recorder {
        Recorder {
            component: component.to_string(),
            task: 0,
            out_dir: args.out_dir.clone(),
            seen: BTreeMap::new(),
            misrouted: 0,
            total: 0,
            dirty: true,
            last_write: Instant::now(),
            mode,
        }
    }

    fn write(&mut self) {
        let body = serde_json::json!({
            "component": self.component,
            "task": self.task,
            "total": self.total,
            "misrouted": self.misrouted,
            "seen": self.seen,
        });
        let path = self
            .out_dir
            .join(format!("{}-{}.json", self.component, self.task));
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, body.to_string()).expect("write results");
        std::fs::rename(&tmp, &path).expect("rename results");
        self.dirty = false;
        self.last_write = Instant::now();
    }
}

/// The custom grouping: word length decides the target.
#[derive(Clone, Default)]
struct ByLength {
    targets: Vec<i32>,
}

impl CustomStreamGrouping for ByLength {
    fn prepare(&mut self, _ctx: &TopologyContext, _stream: &str, target_tasks: &[i32]) {
        self.targets = target_tasks.to_vec();
        self.targets.sort_unstable();
    }

    fn choose_tasks(&mut self, values: &[Value]) -> Vec<i32> {
        let len = values[0].as_str().map_or(0, str::len);
        vec![self.targets[len % self.targets.len()]]
    }
}

impl Bolt for Recorder {
    fn prepare(&mut self, ctx: &TopologyContext) {
        self.task = ctx.task_id();
        let mut tasks = ctx.this_component_tasks().to_vec();
        tasks.sort_unstable();
        if let Mode::Custom = self.mode {
            // the expected target index for a word of length L is L % n
            self.seen.insert(
                "__index".to_string(),
                tasks.iter().position(|t| *t == self.task).unwrap() as u64,
            );
            self.seen.insert("__n".to_string(), tasks.len() as u64);
        }
        self.write();
    }

    fn execute(&mut self, input: &Tuple, collector: &mut OutputCollector) {
        self.total += 1;
        match self.mode {
            Mode::Words => {
                let w = input.get_str_by_field("word").unwrap_or("?").to_string();
                *self.seen.entry(w).or_default() += 1;
            }
            Mode::Total => {}
            Mode::Direct => {
                if input.get_i64_by_field("target") != Some(i64::from(self.task)) {
                    self.misrouted += 1;
                }
            }
            Mode::Custom => {
                let len = input.get_str_by_field("word").map_or(0, str::len) as u64;
                if len % self.seen["__n"] != self.seen["__index"] {
                    self.misrouted += 1;
                }
            }
        }
        collector.ack(input);
        self.dirty = true;
        if self.last_write.elapsed() > Duration::from_millis(100) {
            self.write();
        }
    }

    fn cleanup(&mut self) {
        if self.dirty {
            self.write();
        }
    }
}

/// A bolt that flushes its results on a tick tuple too, so quiet tasks still report.
struct Ticking(Recorder);

impl Bolt for Ticking {
    fn prepare(&mut self, ctx: &TopologyContext) {
        self.0.prepare(ctx);
    }

    fn execute(&mut self, input: &Tuple, collector: &mut OutputCollector) {
        if input.is_tick_tuple() {
            if self.0.dirty {
                self.0.write();
            }
            return;
        }
        self.0.execute(input, collector);
    }

    fn cleanup(&mut self) {
        self.0.cleanup();
    }
}

fn topology(argv: &[String]) -> Result<HeronTopology, TopologyError> {
    let args = parse(argv).map_err(TopologyError::Invalid)?;
    let mut b = TopologyBuilder::new();
    let a = args.clone();
    b.set_spout(
        "words",
        move || WordSpout {
            args: a.clone(),
            emitted: 0,
            marks: 0,
            direct_tasks: Vec::new(),
        },
        2,
    );
    b.set_bolt("relay", || Relay, 2).shuffle_grouping("words");
    let rec = |name: &'static str, mode: Mode| {
        let a = args.clone();
        move || Ticking(Recorder::new(&a, name, mode))
    };
    b.set_bolt("count", rec("count", Mode::Words), 3)
        .fields_grouping("relay", Fields::new(["word"]))
        .add_configuration(Config::TOPOLOGY_TICK_TUPLE_FREQ_MS, "200");
    b.set_bolt("everyone", rec("everyone", Mode::Total), 2)
        .all_grouping_stream("words", "marks")
        .add_configuration(Config::TOPOLOGY_TICK_TUPLE_FREQ_MS, "200");
    b.set_bolt("lowest", rec("lowest", Mode::Total), 2)
        .global_grouping_stream("words", "marks")
        .add_configuration(Config::TOPOLOGY_TICK_TUPLE_FREQ_MS, "200");
    b.set_bolt("direct", rec("direct", Mode::Direct), 2)
        .direct_grouping_stream("words", "direct")
        .add_configuration(Config::TOPOLOGY_TICK_TUPLE_FREQ_MS, "200");
    b.set_bolt("custom", rec("custom", Mode::Custom), 2)
        .custom_grouping("words", "default", ByLength::default())
        .add_configuration(Config::TOPOLOGY_TICK_TUPLE_FREQ_MS, "200");
    b.set_bolt("local", rec("local", Mode::Total), 2)
        .local_or_shuffle_grouping("words")
        .add_configuration(Config::TOPOLOGY_TICK_TUPLE_FREQ_MS, "200");
    let mut conf = Config::new();
    conf.set(Config::TOPOLOGY_STMGRS, args.containers.to_string());
    b.build("RoutingCheck", conf)
}

fn main() {
    heron::run_role_if_requested(topology);
    eprintln!("routing_check is a test topology: submit it with `heron submit local <this binary> --out-dir DIR`");
    std::process::exit(2);
}
