//! StatefulWordCount, EFFECTIVELY_ONCE: spout `lines` (a [`SourceSpout`] over a text file,
//! one sentence a line, its read position checkpointed) → bolt `split` (shuffle) → bolt
//! `count` (fields on `word`, its counts checkpointed).
//!
//! ```sh
//! cargo run --release --example stateful_word_count -- --input words.txt --output counts.tsv \
//!     [--checkpoint-interval 1s] [--containers 2] [--parallelism 2]
//! ```
//!
//! deploys it through the local scheduler as separate processes with a checkpoint manager
//! per container, prints once a second how far the newest globally consistent checkpoint
//! got, and when one covers the whole input writes that checkpoint's counts to the output
//! file (`word<TAB>count`, sorted by word), kills the topology and exits 0. Whatever process
//! of the topology dies meanwhile (kill -9 one), the counts come out exact: the topology
//! rolls back to its newest consistent checkpoint and replays the lines after it.

use heron::sources::{FileSource, SourceSpout};
use heron::{
    values, BasicBolt, BasicOutputCollector, Bolt, Config, FailedException, Fields, HeronTopology,
    OutputCollector, ReliabilityMode, Spout, SpoutOutputCollector, State, Stateful,
    TopologyBuilder, TopologyError, Tuple,
};
use heron_ckptmgr::{CheckpointKey, LocalFsStorage, Storage};
use heron_proto::ckptmgr::{InstanceStateCheckpoint, StatefulConsistentCheckpoints};
use heron_statemgr::{StateDir, StateManagerExt};
use prost::Message;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The topology's name.
const NAME: &str = "StatefulWordCount";

/// A spout that lets `inner` read at most `per_sec` lines a second (`--max-lines-per-sec`,
/// split over the spout's tasks), so that a test can kill processes while it reads.
struct Throttled {
    inner: SourceSpout<FileSource>,
    per_sec: Option<f64>,
    started: Option<Instant>,
}

impl Spout for Throttled {
    fn declare_output_fields(&self, d: &mut heron::OutputFieldsDeclarer) {
        self.inner.declare_output_fields(d)
    }

    fn open(&mut self, ctx: &heron::TopologyContext) {
        let tasks = ctx.this_component_tasks().len().max(1) as f64;
        self.per_sec = self.per_sec.map(|r| r / tasks);
        self.inner.open(ctx)
    }

    fn next_tuple(&mut self, collector: &mut SpoutOutputCollector) {
        if let Some(rate) = self.per_sec {
            let started = *self.started.get_or_insert_with(Instant::now);
            let emitted = self.inner.counters().emitted as f64;
            if emitted >= rate * started.elapsed().as_secs_f64() {
                return;
            }
        }
        self.inner.next_tuple(collector);
    }

    fn activate(&mut self) {
        self.inner.activate()
    }

    fn deactivate(&mut self) {
        self.inner.deactivate()
    }

    fn stateful(&mut self) -> Option<&mut dyn Stateful> {
        self.inner.stateful()
    }
}

/// Splits a sentence into words (stateless).
struct SplitBolt;

impl BasicBolt for SplitBolt {
    fn declare_output_fields(&self, d: &mut heron::OutputFieldsDeclarer) {
        d.declare(Fields::new(["word"]));
    }

    fn execute(
        &mut self,
        input: &Tuple,
        collector: &mut BasicOutputCollector,
    ) -> Result<(), FailedException> {
        for word in input.get_str(0).unwrap_or_default().split_whitespace() {
            collector.emit(values![word]);
        }
        Ok(())
    }
}

/// Counts words; the counts are its checkpointed state (one entry per word).
#[derive(Default)]
struct CountBolt {
    counts: HashMap<String, i64>,
}

impl Bolt for CountBolt {
    fn execute(&mut self, input: &Tuple, _collector: &mut OutputCollector) {
        if let Some(word) = input.get_str(0) {
            match self.counts.get_mut(word) {
                Some(c) => *c += 1,
                None => {
                    self.counts.insert(word.to_string(), 1);
                }
            }
        }
    }

    fn stateful(&mut self) -> Option<&mut dyn Stateful> {
        Some(self)
    }
}

impl Stateful for CountBolt {
    fn init_state(&mut self, state: &State) {
        self.counts = state
            .iter()
            .filter_map(|(w, v)| Some((w.to_string(), v.as_i64()?)))
            .collect();
    }

    fn pre_save(&mut self, _checkpoint_id: &str, state: &mut State) {
        state.clear();
        for (w, c) in &self.counts {
            state.put(w.clone(), *c);
        }
    }
}

/// The command line.
#[derive(Clone, Debug)]
struct Options {
    input: PathBuf,
    output: PathBuf,
    interval: Duration,
    containers: u32,
    parallelism: u32,
    checkpoint_root: PathBuf,
    timeout: Duration,
    max_lines_per_sec: Option<f64>,
}

const USAGE: &str = "usage: stateful_word_count --input FILE --output FILE \
    [--checkpoint-interval 1s] [--containers 2] [--parallelism 2] [--checkpoint-root DIR] \
    [--timeout 30m] [--max-lines-per-sec N]";

impl Options {
    fn parse(args: &[String]) -> Result<Options, String> {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default();
        let (mut input, mut output) = (None, None);
        let mut o = Options {
            input: PathBuf::new(),
            output: PathBuf::new(),
            interval: Duration::from_secs(1),
            containers: 2,
            parallelism: 2,
            checkpoint_root: home.join(".herondata/checkpoints"),
            timeout: Duration::from_secs(30 * 60),
            max_lines_per_sec: None,
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = || it.next().cloned().ok_or(format!("{a} needs a value"));
            match a.as_str() {
                "--input" => input = Some(PathBuf::from(value()?)),
                "--output" => output = Some(PathBuf::from(value()?)),
                "--checkpoint-interval" => o.interval = parse_secs(&value()?, a)?,
                "--timeout" => o.timeout = parse_secs(&value()?, a)?,
                "--containers" => o.containers = positive(&value()?, a)?,
                "--parallelism" => o.parallelism = positive(&value()?, a)?,
                "--checkpoint-root" => o.checkpoint_root = PathBuf::from(value()?),
                "--max-lines-per-sec" => {
                    o.max_lines_per_sec = Some(f64::from(positive(&value()?, a)?))
                }
                "-h" | "--help" => return Err(USAGE.to_string()),
                other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
            }
        }
        o.input = input.ok_or(format!("--input is required\n{USAGE}"))?;
        o.output = output.ok_or(format!("--output is required\n{USAGE}"))?;
        // every process of the topology must find the same files
        o.input = std::path::absolute(&o.input).map_err(|e| format!("--input: {e}"))?;
        o.checkpoint_root = std::path::absolute(&o.checkpoint_root)
            .map_err(|e| format!("--checkpoint-root: {e}"))?;
        Ok(o)
    }
}

/// `1s`, `10s`, `2m` or a plain number of seconds; whole seconds (Heron's unit).
fn parse_secs(s: &str, name: &str) -> Result<Duration, String> {
    let bad = || format!("{name} must be whole seconds such as 1s, 10s or 2m, not {s:?}");
    let (num, mult) = match s.strip_suffix('m') {
        Some(n) => (n, 60),
        None => (s.strip_suffix('s').unwrap_or(s), 1),
    };
    match num.parse::<u64>() {
        Ok(n) if n > 0 => Ok(Duration::from_secs(n * mult)),
        _ => Err(bad()),
    }
}

fn positive(s: &str, name: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{name} must be a positive integer, not {s:?}")),
    }
}

fn topology(args: &[String]) -> Result<HeronTopology, TopologyError> {
    let o = Options::parse(args).map_err(TopologyError::Invalid)?;
    let p = o.parallelism;
    let files = vec![o.input.display().to_string()];
    let mut builder = TopologyBuilder::new();
    let per_sec = o.max_lines_per_sec;
    builder.set_spout(
        "lines",
        move || Throttled {
            inner: SourceSpout::files(files.clone()).max_per_call(64),
            per_sec,
            started: None,
        },
        p,
    );
    builder
        .set_basic_bolt("split", || SplitBolt, p)
        .shuffle_grouping("lines");
    builder
        .set_bolt("count", CountBolt::default, p)
        .fields_grouping("split", Fields::new(["word"]));
    let mut c = Config::new();
    c.set(Config::TOPOLOGY_STMGRS, o.containers.to_string());
    c.set_reliability_mode(ReliabilityMode::EffectivelyOnce);
    c.set(
        "topology.stateful.checkpoint.interval.seconds",
        o.interval.as_secs().to_string(),
    );
    c.set(
        "heron.statefulstorage.localfs.root.path",
        o.checkpoint_root.display().to_string(),
    );
    builder.build(NAME, c)
}

fn main() {
    heron::run_role_if_requested(topology);
    std::process::exit(match drive() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("stateful_word_count: {e}");
            1
        }
    });
}

/// Words of the input, counted here: what the topology's checkpoint must end up with.
fn expected_words(input: &Path) -> Result<u64, String> {
    let text = std::fs::read_to_string(input)
        .map_err(|e| format!("cannot read --input {}: {e}", input.display()))?;
    Ok(text.split_whitespace().count() as u64)
}

/// The counts stored for checkpoint `id`: every task of `count`, summed.
fn checkpoint_counts(root: &Path, id: &str) -> Result<BTreeMap<String, i64>, String> {
    let storage = LocalFsStorage::new(root);
    let dir = root.join(NAME).join(id).join("count");
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut counts = BTreeMap::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue; // a write in progress
        }
        let task: i32 = name.parse().map_err(|_| format!("{name}: not a task id"))?;
        let key = CheckpointKey::new(NAME, id, "count", task);
        // the checkpoint manager stores the task's InstanceStateCheckpoint, framed
        let payload = storage.restore(&key).map_err(|e| format!("{key}: {e}"))?;
        let stored =
            InstanceStateCheckpoint::decode(&payload[..]).map_err(|e| format!("{key}: {e}"))?;
        let state = State::decode(stored.state.as_deref().unwrap_or_default())
            .map_err(|e| format!("{name}: {e}"))?;
        for (w, v) in state.iter() {
            *counts.entry(w.to_string()).or_insert(0) += v.as_i64().unwrap_or(0);
        }
    }
    Ok(counts)
}

fn drive() -> Result<(), String> {
    let cli: Vec<String> = std::env::args().skip(1).collect();
    let o = Options::parse(&cli)?;
    let total = expected_words(&o.input)?;
    println!(
        "submitting {NAME} (EFFECTIVELY_ONCE, checkpoints every {:?}, {} containers, \
         parallelism {}) over {} ({total} words)",
        o.interval,
        o.containers,
        o.parallelism,
        o.input.display()
    );
    // every process of the topology parses these, in its own working directory
    let mut args = vec![
        "--input".to_string(),
        o.input.display().to_string(),
        "--output".to_string(),
        o.output.display().to_string(),
        "--checkpoint-interval".to_string(),
        format!("{}s", o.interval.as_secs()),
        "--containers".to_string(),
        o.containers.to_string(),
        "--parallelism".to_string(),
        o.parallelism.to_string(),
        "--checkpoint-root".to_string(),
        o.checkpoint_root.display().to_string(),
    ];
    if let Some(r) = o.max_lines_per_sec {
        args.extend(["--max-lines-per-sec".to_string(), format!("{r}")]);
    }
    let topology =
        heron::LocalTopology::submit_self(&args).map_err(|e| format!("submit failed: {e}"))?;
    let state = topology
        .submitted()
        .state_manager
        .open()
        .map_err(|e| format!("cannot open the state manager: {e}"))?;
    let stop = heron::ctrl_c_flag();
    let start = Instant::now();
    let mut done = None;
    let mut last_print = Instant::now() - Duration::from_secs(1);
    while done.is_none() {
        if stop.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = topology.kill();
            return Err("interrupted".into());
        }
        if start.elapsed() > o.timeout {
            let _ = topology.kill();
            return Err(format!(
                "no consistent checkpoint covered the input within {:?}",
                o.timeout
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
        let newest: Option<StatefulConsistentCheckpoints> = state
            .get_proto(StateDir::StatefulCheckpoints, NAME)
            .ok()
            .flatten();
        let newest = newest.and_then(|c| c.consistent_checkpoints.into_iter().next());
        let id = newest.map(|c| c.checkpoint_id).unwrap_or_default();
        let counts = if id.is_empty() {
            BTreeMap::new()
        } else {
            checkpoint_counts(&o.checkpoint_root, &id).unwrap_or_default()
        };
        let counted: i64 = counts.values().sum();
        if counted as u64 == total && !id.is_empty() {
            done = Some((id.clone(), counts));
        }
        if last_print.elapsed() >= Duration::from_secs(1) || done.is_some() {
            last_print = Instant::now();
            let c = topology.counters();
            println!(
                "[{:>4.0}s] words counted in the last consistent checkpoint {counted}/{total} \
                 (checkpoint {}), tuples emitted {} (replays included), restores seen by the oldest task {}",
                start.elapsed().as_secs_f64(),
                if id.is_empty() { "none yet" } else { &id },
                c.emitted,
                c.restores.saturating_sub(1),
            );
        }
    }
    let (id, counts) = done.expect("loop ends done");
    let mut out = String::new();
    for (w, c) in &counts {
        out.push_str(&format!("{w}\t{c}\n"));
    }
    std::fs::write(&o.output, out).map_err(|e| format!("writing {}: {e}", o.output.display()))?;
    let restores = topology.counters().restores.saturating_sub(1);
    topology.kill().map_err(|e| format!("kill failed: {e}"))?;
    println!(
        "done in {:.1}s: checkpoint {id} holds all {total} words ({} distinct), written to {}; \
         {restores} restores seen by the oldest task; topology killed",
        start.elapsed().as_secs_f64(),
        counts.len(),
        o.output.display()
    );
    Ok(())
}
