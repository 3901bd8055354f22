//! Event-time windows over a file of records, exact whatever the timing.
//!
//! ```sh
//! cargo run --release --example event_time_windows -- --input records.tsv --output windows.tsv \
//!     --window 10s [--slide 5s | --session-gap 3s] [--lag 2s]
//! ```
//!
//! Reads `timestamp_ms<TAB>key<TAB>value` records (integers; out of order by up to the lag,
//! some later than that) with one spout task, in order; its watermark is the largest event
//! time read so far minus the lag, sent in-band after each record, and a final watermark at
//! the end of the input. A windowed bolt (2 tasks, fields grouping on the key) computes per
//! window and key the sum and count of the values; a sink writes
//! `window_start_ms<TAB>window_end_ms<TAB>key<TAB>sum<TAB>count` lines, sorted, to the output
//! and the late records to `<output>.late` once the final watermark has reached it, then this
//! program kills the topology and exits 0. `--window` alone: tumbling windows; with `--slide`:
//! sliding; `--session-gap` alone: session windows per key. 2 containers, ATLEAST_ONCE.
//!
//! `--reliability effectively [--checkpoint-interval 1s]` runs it EFFECTIVELY_ONCE: the
//! spout's read position, the windows' pending tuples and the sink's results are checkpointed,
//! so the output stays exact when processes are killed. `--max-records-per-sec N` paces the
//! spout (to watch it run, or to kill processes while it does).

#[allow(dead_code)] // only its duration parser is used here
mod common;
#[allow(dead_code)] // only the submit loop and the path helper are used here
#[path = "common/files.rs"]
mod files;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::Duration;

use heron::window::{Length, Window, WindowCollector, WindowConfig, WindowedBolt};
use heron::{
    values, Bolt, Config, Fields, HeronTopology, MessageId, OutputCollector, OutputFieldsDeclarer,
    ReliabilityMode, Spout, SpoutOutputCollector, State, Stateful, TopologyBuilder, TopologyError,
    Tuple, Value,
};

/// The late records' stream, from the windowed bolt to the sink.
const LATE: &str = "late";

/// What the command line asks for.
#[derive(Clone, Debug)]
struct Options {
    input: PathBuf,
    output: PathBuf,
    window: Option<Duration>,
    slide: Option<Duration>,
    session_gap: Option<Duration>,
    lag: Duration,
    containers: u32,
    parallelism: u32,
    /// EFFECTIVELY_ONCE with checkpoints this often (`None`: ATLEAST_ONCE).
    checkpoints: Option<Duration>,
    max_per_sec: Option<u64>,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, String> {
        let mut input = None;
        let mut output = None;
        let mut o = Options {
            input: PathBuf::new(),
            output: PathBuf::new(),
            window: None,
            slide: None,
            session_gap: None,
            lag: Duration::ZERO,
            containers: 2,
            parallelism: 2,
            checkpoints: None,
            max_per_sec: None,
        };
        let mut reliability = "atleast".to_owned();
        let mut interval = Duration::from_secs(1);
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = |name: &str| {
                it.next()
                    .cloned()
                    .ok_or_else(|| format!("{name} needs a value"))
            };
            let positive = |s: String, name: &str| match s.parse::<u32>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(format!("{name} must be a positive integer, not {s:?}")),
            };
            match a.as_str() {
                "--input" => input = Some(PathBuf::from(value(a)?)),
                "--output" => output = Some(PathBuf::from(value(a)?)),
                "--window" => o.window = Some(common::parse_duration(&value(a)?)?),
                "--slide" => o.slide = Some(common::parse_duration(&value(a)?)?),
                "--session-gap" => o.session_gap = Some(common::parse_duration(&value(a)?)?),
                "--lag" => {
                    let v = value(a)?;
                    o.lag = if v == "0" {
                        Duration::ZERO
                    } else {
                        common::parse_duration(&v)?
                    }
                }
                "--containers" => o.containers = positive(value(a)?, a)?,
                "--parallelism" => o.parallelism = positive(value(a)?, a)?,
                "--reliability" => reliability = value(a)?,
                "--checkpoint-interval" => {
                    interval = common::parse_duration(&value(a)?)?;
                    if interval.as_secs() == 0 || interval.subsec_nanos() != 0 {
                        return Err(format!(
                            "--checkpoint-interval must be whole seconds, not {interval:?}"
                        ));
                    }
                }
                "--max-records-per-sec" => {
                    o.max_per_sec = Some(u64::from(positive(value(a)?, a)?));
                }
                "-h" | "--help" => {
                    return Err("options: --input FILE --output FILE --window 10s \
                                [--slide 5s | --session-gap 3s] [--lag 2s] [--containers 2] \
                                [--parallelism 2] [--reliability atleast|effectively] \
                                [--checkpoint-interval 1s] [--max-records-per-sec N]"
                        .to_owned())
                }
                other => return Err(format!("unknown argument {other:?} (try --help)")),
            }
        }
        o.checkpoints = match reliability.as_str() {
            "atleast" => None,
            "effectively" => Some(interval),
            other => {
                return Err(format!(
                    "--reliability must be atleast or effectively, not {other:?}"
                ))
            }
        };
        o.input = input.ok_or("--input FILE is required")?;
        o.output = output.ok_or("--output FILE is required")?;
        match (o.window, o.slide, o.session_gap) {
            (Some(_), _, None) | (None, None, Some(_)) => {}
            (_, _, Some(_)) => {
                return Err("--session-gap goes alone (no --window or --slide)".to_owned())
            }
            (None, _, None) => {
                return Err(
                    "give --window (with --slide for sliding windows) or --session-gap".to_owned(),
                )
            }
        }
        Ok(o)
    }

    fn windows(&self) -> WindowConfig {
        let config = match (self.window, self.slide, self.session_gap) {
            (_, _, Some(gap)) => WindowConfig::session(gap, Fields::new(["key"])),
            (Some(w), Some(s), _) => {
                WindowConfig::sliding(Length::Duration(w), Length::Duration(s))
            }
            (Some(w), None, _) => WindowConfig::tumbling(Length::Duration(w)),
            (None, ..) => unreachable!("checked in parse"),
        };
        config
            .with_timestamp_field("ts")
            .with_lag(self.lag)
            .with_late_tuple_stream(LATE, ["ts", "key", "value"])
    }

    fn done_marker(&self) -> PathBuf {
        suffixed(&self.output, ".done")
    }
}

fn suffixed(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Reads the records in order; the watermark follows the data. EFFECTIVELY_ONCE: its read
/// position and largest event time are its checkpointed state.
struct RecordSpout {
    input: PathBuf,
    lag_ms: i64,
    /// Open at `line_no` (`None`: opened, and skipped there, by the next call).
    lines: Option<std::io::Lines<BufReader<std::fs::File>>>,
    line_no: i64,
    max_ts: i64,
    /// Emitted and not yet acked, by line number (ATLEAST_ONCE only).
    pending: HashMap<i64, (i64, i64, i64)>,
    acking: bool,
    finished: bool,
    /// Records a second at most, counted from the first call (or the last restore).
    pace: Option<(u64, Option<(std::time::Instant, u64)>)>,
}

impl RecordSpout {
    fn new(input: PathBuf, lag: Duration, acking: bool, max_per_sec: Option<u64>) -> Self {
        RecordSpout {
            input,
            lag_ms: ms(lag),
            lines: None,
            line_no: 0,
            max_ts: i64::MIN,
            pending: HashMap::new(),
            acking,
            finished: false,
            pace: max_per_sec.map(|n| (n, None)),
        }
    }

    /// The records open at the current position.
    fn reader(&mut self) -> &mut std::io::Lines<BufReader<std::fs::File>> {
        let (input, line_no) = (&self.input, self.line_no);
        self.lines.get_or_insert_with(|| {
            let f = std::fs::File::open(input)
                .unwrap_or_else(|e| panic!("cannot open {}: {e}", input.display()));
            let mut lines = BufReader::new(f).lines();
            for _ in 0..line_no {
                lines.next();
            }
            lines
        })
    }

    /// How many records this call may emit (at most 64).
    fn allowance(&mut self) -> u64 {
        let Some((per_sec, started)) = &mut self.pace else {
            return 64;
        };
        let (at, sent) = started.get_or_insert((std::time::Instant::now(), 0));
        let due = (at.elapsed().as_secs_f64() * *per_sec as f64) as u64;
        let n = due.saturating_sub(*sent).min(64);
        *sent += n;
        n
    }
}

fn parse_record(line: &str) -> Option<(i64, i64, i64)> {
    let mut f = line.split('\t').map(|x| x.trim().parse::<i64>());
    match (f.next(), f.next(), f.next(), f.next()) {
        (Some(Ok(ts)), Some(Ok(key)), Some(Ok(value)), None) => Some((ts, key, value)),
        _ => None,
    }
}

impl Spout for RecordSpout {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["ts", "key", "value"]));
    }

    fn open(&mut self, _ctx: &heron::TopologyContext) {
        self.reader();
    }

    fn next_tuple(&mut self, c: &mut SpoutOutputCollector) {
        if self.finished {
            return;
        }
        // a batch per call, each record followed by the watermark it moves
        for _ in 0..self.allowance() {
            match self.reader().next() {
                Some(Ok(line)) => {
                    self.line_no += 1;
                    let Some((ts, key, value)) = parse_record(&line) else {
                        if !line.trim().is_empty() {
                            c.report_error(&format!(
                                "{}:{}: not timestamp_ms<TAB>key<TAB>value: {line:?}",
                                self.input.display(),
                                self.line_no
                            ));
                        }
                        continue;
                    };
                    if self.acking {
                        self.pending.insert(self.line_no, (ts, key, value));
                        c.emit_with_id(values![ts, key, value], self.line_no);
                    } else {
                        c.emit(values![ts, key, value]);
                    }
                    if ts > self.max_ts {
                        self.max_ts = ts;
                        c.emit_watermark(ts.saturating_sub(self.lag_ms));
                    }
                }
                Some(Err(e)) => panic!("reading {}: {e}", self.input.display()),
                None => {
                    // the end of the input: every window can close
                    c.emit_watermark(i64::MAX);
                    self.finished = true;
                    return;
                }
            }
        }
    }

    fn ack(&mut self, msg_id: MessageId) {
        if let Some(n) = msg_id.as_i64() {
            self.pending.remove(&n);
        }
    }

    fn fail(&mut self, msg_id: MessageId) {
        // no faults are expected; a failed record is logged (a replay would come after the
        // watermark passed it, so it would be late)
        if let Some(n) = msg_id.as_i64() {
            if let Some(r) = self.pending.remove(&n) {
                eprintln!("record on line {n} failed: {r:?}");
            }
        }
    }

    fn stateful(&mut self) -> Option<&mut dyn Stateful> {
        Some(self)
    }
}

impl Stateful for RecordSpout {
    fn init_state(&mut self, state: &State) {
        // rewind: the records after the checkpoint are read again
        self.line_no = state.get_i64("line").unwrap_or(0);
        self.max_ts = state.get_i64("max_ts").unwrap_or(i64::MIN);
        self.lines = None;
        self.finished = false;
        if let Some((_, started)) = &mut self.pace {
            *started = None;
        }
    }

    fn pre_save(&mut self, _checkpoint_id: &str, state: &mut State) {
        state.put("line", self.line_no);
        state.put("max_ts", self.max_ts);
    }
}

/// Sum and count per key in each window (the window's tuples of one key are its anchors).
struct Aggregate;

impl WindowedBolt for Aggregate {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["start", "end", "key", "sum", "count"]));
    }

    fn execute(&mut self, w: &Window<'_>, c: &mut WindowCollector<'_, '_>) {
        let (Some(start), Some(end)) = (w.start_ms(), w.end_ms()) else {
            return;
        };
        let mut by_key: BTreeMap<i64, (i64, i64, Vec<&Tuple>)> = BTreeMap::new();
        for t in w.tuples() {
            let (Some(key), Some(value)) = (t.get_i64(1), t.get_i64(2)) else {
                continue;
            };
            let e = by_key.entry(key).or_default();
            e.0 += value;
            e.1 += 1;
            e.2.push(t);
        }
        for (key, (sum, count, tuples)) in by_key {
            c.emit_anchored_to(&tuples, values![start, end, key, sum, count]);
        }
    }
}

/// Collects results and late records; writes them when the final watermark arrives.
/// EFFECTIVELY_ONCE: what it collected is its checkpointed state.
struct Sink {
    output: PathBuf,
    lines: Vec<(i64, i64, i64, i64, i64)>,
    late: Vec<(i64, i64, i64)>,
    written: bool,
}

impl Sink {
    fn new(output: PathBuf) -> Sink {
        Sink {
            output,
            lines: Vec::new(),
            late: Vec::new(),
            written: false,
        }
    }

    fn write(&mut self) -> std::io::Result<()> {
        let mut lines = self.lines.clone();
        lines.sort_unstable();
        let mut late = self.late.clone();
        late.sort_unstable();
        let text: String = lines
            .iter()
            .map(|(s, e, k, sum, n)| format!("{s}\t{e}\t{k}\t{sum}\t{n}\n"))
            .collect();
        files::write_atomically(&self.output, &text)?;
        let text: String = late
            .iter()
            .map(|(ts, k, v)| format!("{ts}\t{k}\t{v}\n"))
            .collect();
        files::write_atomically(&suffixed(&self.output, ".late"), &text)?;
        std::fs::write(suffixed(&self.output, ".done"), b"done\n")
    }
}

impl Bolt for Sink {
    fn execute(&mut self, t: &Tuple, c: &mut OutputCollector) {
        let ints: Vec<i64> = t.values().iter().filter_map(Value::as_i64).collect();
        match (t.source_stream(), ints.as_slice()) {
            (LATE, &[ts, k, v]) => self.late.push((ts, k, v)),
            (_, &[s, e, k, sum, n]) => self.lines.push((s, e, k, sum, n)),
            _ => c.report_error(&format!("unexpected tuple {:?}", t.values())),
        }
        c.ack(t);
    }

    fn on_watermark(&mut self, watermark: i64, c: &mut OutputCollector) {
        if watermark == i64::MAX && !self.written {
            self.written = true;
            if let Err(e) = self.write() {
                c.report_error(&format!("writing {}: {e}", self.output.display()));
            }
        }
    }

    fn stateful(&mut self) -> Option<&mut dyn Stateful> {
        Some(self)
    }
}

/// Integers in one string, `,` between fields and `;` between records.
fn join_records<const N: usize>(records: impl Iterator<Item = [i64; N]>) -> String {
    let mut out = String::new();
    for r in records {
        let fields: Vec<String> = r.iter().map(i64::to_string).collect();
        out.push_str(&fields.join(","));
        out.push(';');
    }
    out
}

fn split_records<const N: usize>(text: &str) -> Vec<[i64; N]> {
    text.split_terminator(';')
        .filter_map(|r| {
            let v: Vec<i64> = r.split(',').filter_map(|x| x.parse().ok()).collect();
            v.try_into().ok()
        })
        .collect()
}

impl Stateful for Sink {
    fn init_state(&mut self, state: &State) {
        let windows = split_records::<5>(state.get_str("windows").unwrap_or_default());
        self.lines = windows
            .iter()
            .map(|&[s, e, k, sum, n]| (s, e, k, sum, n))
            .collect();
        let late = split_records::<3>(state.get_str("late").unwrap_or_default());
        self.late = late.iter().map(|&[ts, k, v]| (ts, k, v)).collect();
        self.written = false;
    }

    fn pre_save(&mut self, _checkpoint_id: &str, state: &mut State) {
        let windows = self
            .lines
            .iter()
            .map(|&(s, e, k, sum, n)| [s, e, k, sum, n]);
        state.put("windows", join_records(windows));
        state.put(
            "late",
            join_records(self.late.iter().map(|&(ts, k, v)| [ts, k, v])),
        );
    }
}

fn topology(args: &[String]) -> Result<HeronTopology, TopologyError> {
    let o = Options::parse(args).map_err(TopologyError::Invalid)?;
    let mut b = TopologyBuilder::new();
    let (input, lag, pace) = (o.input.clone(), o.lag, o.max_per_sec);
    let acking = o.checkpoints.is_none();
    b.set_spout(
        "records",
        move || RecordSpout::new(input.clone(), lag, acking, pace),
        1,
    );
    b.set_windowed_bolt("windows", || Aggregate, o.windows(), o.parallelism)
        .fields_grouping("records", Fields::new(["key"]));
    let output = o.output.clone();
    b.set_bolt("sink", move || Sink::new(output.clone()), 1)
        .global_grouping("windows")
        .global_grouping_stream("windows", LATE);
    let mut c = Config::new();
    c.set(Config::TOPOLOGY_STMGRS, o.containers.to_string());
    match o.checkpoints {
        None => {
            c.set(Config::TOPOLOGY_RELIABILITY_MODE, "ATLEAST_ONCE");
            // windows hold their tuples until they close: the whole input may be pending
            c.set(Config::TOPOLOGY_MAX_SPOUT_PENDING, "10000000");
            c.set(Config::TOPOLOGY_MESSAGE_TIMEOUT_SECS, "600");
        }
        Some(every) => {
            c.set_reliability_mode(ReliabilityMode::EffectivelyOnce);
            c.set(
                "topology.stateful.checkpoint.interval.seconds",
                every.as_secs().to_string(),
            );
        }
    }
    b.build("EventTimeWindows", c)
}

fn main() {
    heron::run_role_if_requested(topology);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = match Options::parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let role_args = files::absolute_paths(&args, &["--input", "--output"]);
    let done = std::path::absolute(opts.done_marker()).unwrap_or_else(|_| opts.done_marker());
    let _ = std::fs::remove_file(&done);
    if let Err(e) = std::fs::File::open(&opts.input) {
        eprintln!("cannot read --input {}: {e}", opts.input.display());
        std::process::exit(2);
    }
    let code = files::run_until(&role_args, Duration::from_secs(600), || done.exists());
    let _ = std::fs::remove_file(&done);
    if code == 0 {
        println!(
            "every window closed: windows in {}, late records in {}",
            opts.output.display(),
            suffixed(&opts.output, ".late").display()
        );
    }
    std::process::exit(code);
}
