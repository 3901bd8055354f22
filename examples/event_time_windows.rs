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

#[allow(dead_code)] // only its duration parser is used here
mod common;
#[allow(dead_code)] // only the submit loop and the path helper are used here
#[path = "common/files.rs"]
mod files;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use heron::window::{Length, Window, WindowCollector, WindowConfig, WindowedBolt};
use heron::{
    values, Bolt, Config, Fields, HeronTopology, MessageId, OutputCollector, OutputFieldsDeclarer,
    Spout, SpoutOutputCollector, TopologyBuilder, TopologyError, Tuple, Value,
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
        };
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
                "-h" | "--help" => {
                    return Err("options: --input FILE --output FILE --window 10s \
                                [--slide 5s | --session-gap 3s] [--lag 2s] [--containers 2] \
                                [--parallelism 2]"
                        .to_owned())
                }
                other => return Err(format!("unknown argument {other:?} (try --help)")),
            }
        }
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

/// Reads the records in order; the watermark follows the data.
struct RecordSpout {
    input: PathBuf,
    lag_ms: i64,
    lines: Option<std::io::Lines<BufReader<std::fs::File>>>,
    line_no: i64,
    max_ts: i64,
    /// Emitted and not yet acked, by line number (replayed when failed).
    pending: HashMap<i64, (i64, i64, i64)>,
    finished: bool,
}

impl RecordSpout {
    fn new(input: PathBuf, lag: Duration) -> Self {
        RecordSpout {
            input,
            lag_ms: ms(lag),
            lines: None,
            line_no: 0,
            max_ts: i64::MIN,
            pending: HashMap::new(),
            finished: false,
        }
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
        match std::fs::File::open(&self.input) {
            Ok(f) => self.lines = Some(BufReader::new(f).lines()),
            Err(e) => panic!("cannot open {}: {e}", self.input.display()),
        }
    }

    fn next_tuple(&mut self, c: &mut SpoutOutputCollector) {
        if self.finished {
            return;
        }
        // a batch per call, each record followed by the watermark it moves
        for _ in 0..64 {
            let Some(lines) = &mut self.lines else { return };
            match lines.next() {
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
                    self.pending.insert(self.line_no, (ts, key, value));
                    c.emit_with_id(values![ts, key, value], self.line_no);
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
        self.lines.sort_unstable();
        self.late.sort_unstable();
        let mut out = std::io::BufWriter::new(std::fs::File::create(&self.output)?);
        for (s, e, k, sum, n) in &self.lines {
            writeln!(out, "{s}\t{e}\t{k}\t{sum}\t{n}")?;
        }
        out.flush()?;
        let mut late =
            std::io::BufWriter::new(std::fs::File::create(suffixed(&self.output, ".late"))?);
        for (ts, k, v) in &self.late {
            writeln!(late, "{ts}\t{k}\t{v}")?;
        }
        late.flush()?;
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
}

fn topology(args: &[String]) -> Result<HeronTopology, TopologyError> {
    let o = Options::parse(args).map_err(TopologyError::Invalid)?;
    let mut b = TopologyBuilder::new();
    let (input, lag) = (o.input.clone(), o.lag);
    b.set_spout("records", move || RecordSpout::new(input.clone(), lag), 1);
    b.set_windowed_bolt("windows", || Aggregate, o.windows(), o.parallelism)
        .fields_grouping("records", Fields::new(["key"]));
    let output = o.output.clone();
    b.set_bolt("sink", move || Sink::new(output.clone()), 1)
        .global_grouping("windows")
        .global_grouping_stream("windows", LATE);
    let mut c = Config::new();
    c.set(Config::TOPOLOGY_STMGRS, o.containers.to_string());
    c.set(Config::TOPOLOGY_RELIABILITY_MODE, "ATLEAST_ONCE");
    // windows hold their tuples until they close: the whole input may be pending
    c.set(Config::TOPOLOGY_MAX_SPOUT_PENDING, "10000000");
    c.set(Config::TOPOLOGY_MESSAGE_TIMEOUT_SECS, "600");
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
