//! A topology with a bolt that is slow for a while (used by `tests/backpressure.rs`).
//!
//! Arguments: `--out-dir <dir> --rate R --slow-rate S --slow-secs T --containers N
//! --selective true|false`.
//!
//! * spout `source` (parallelism 2, ATMOST_ONCE, no message ids) emits at most `R` tuples per
//!   second per task, each with a 64-byte payload;
//! * `slow` (shuffle, parallelism 2) executes at most `S` tuples per second per task during
//!   its first `T` seconds, then as fast as it can.
//!
//! * with `--selective true`: also spout `steady` (parallelism 2, same rate) → `fast`
//!   (shuffle, 2, never slow), and our selective back pressure
//!   (`heron-rs.backpressure.selective`), so only `source` should stop.
//!
//! Every task writes its cumulative count to `<out-dir>/<component>-<task>.count` every
//! 200 ms. The stream managers' back-pressure watermarks are lowered to 2 MB / 1 MB through
//! the topology config so that a test sees them work within a minute.

mod args;

use heron::{
    values, Bolt, Config, Fields, HeronTopology, OutputCollector, OutputFieldsDeclarer, Spout,
    SpoutOutputCollector, TopologyBuilder, TopologyContext, TopologyError, Tuple,
};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
struct Args {
    out_dir: PathBuf,
    rate: u64,
    slow_rate: u64,
    slow_secs: u64,
    containers: u32,
    selective: bool,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        out_dir: PathBuf::from("."),
        rate: 20_000,
        slow_rate: 2_000,
        slow_secs: 60,
        containers: 2,
        selective: false,
    };
    args::each_pair(args, |k, v| {
        match k {
            "--out-dir" => a.out_dir = PathBuf::from(v),
            "--rate" => a.rate = args::number(k, v)?.max(1),
            "--slow-rate" => a.slow_rate = args::number(k, v)?.max(1),
            "--slow-secs" => a.slow_secs = args::number(k, v)?,
            "--containers" => a.containers = args::number(k, v)? as u32,
            "--selective" => a.selective = v == "true",
            _ => return args::unknown(k),
        }
        Ok(())
    })?;
    Ok(a)
}

/// A cumulative count written to `<dir>/<component>-<task>.count`.
struct CountFile {
    path: PathBuf,
    count: u64,
    written: Instant,
}

impl CountFile {
    fn new(args: &Args, component: &str, task: i32) -> CountFile {
        let path = args.out_dir.join(format!("{component}-{task}.count"));
        // a restarted task continues its count
        let count = std::fs::read_to_string(&path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        CountFile {
            path,
            count,
            written: Instant::now(),
        }
    }

    fn add(&mut self, n: u64) {
        self.count += n;
        if self.written.elapsed() >= Duration::from_millis(200) {
            self.write();
        }
    }

    fn write(&mut self) {
        let tmp = self.path.with_extension("tmp");
        if std::fs::write(&tmp, self.count.to_string()).is_ok() {
            let _ = std::fs::rename(&tmp, &self.path);
        }
        self.written = Instant::now();
    }
}

struct Source {
    name: &'static str,
    args: Args,
    count: Option<CountFile>,
    start: Instant,
    sent: u64,
}

impl Spout for Source {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["n", "payload"]));
    }

    fn open(&mut self, ctx: &TopologyContext) {
        self.count = Some(CountFile::new(&self.args, self.name, ctx.task_id()));
        self.start = Instant::now();
    }

    fn next_tuple(&mut self, collector: &mut SpoutOutputCollector) {
        let allowed = (self.start.elapsed().as_secs_f64() * self.args.rate as f64) as u64;
        let burst = allowed.saturating_sub(self.sent).min(64);
        if burst == 0 {
            std::thread::sleep(Duration::from_micros(500));
            self.count.as_mut().expect("opened").add(0);
            return;
        }
        for _ in 0..burst {
            collector.emit(values![self.sent as i64, "x".repeat(64)]);
            self.sent += 1;
        }
        self.count.as_mut().expect("opened").add(burst);
    }

    fn close(&mut self) {
        if let Some(c) = &mut self.count {
            c.write();
        }
    }
}

struct Slow {
    name: &'static str,
    slow: bool,
    args: Args,
    count: Option<CountFile>,
    start: Instant,
    executed: u64,
}

impl Bolt for Slow {
    fn declare_output_fields(&self, _d: &mut OutputFieldsDeclarer) {}

    fn prepare(&mut self, ctx: &TopologyContext) {
        self.count = Some(CountFile::new(&self.args, self.name, ctx.task_id()));
        self.start = Instant::now();
    }

    fn execute(&mut self, _input: &Tuple, _collector: &mut OutputCollector) {
        self.executed += 1;
        let elapsed = self.start.elapsed();
        if self.slow && elapsed < Duration::from_secs(self.args.slow_secs) {
            let due = Duration::from_secs_f64(self.executed as f64 / self.args.slow_rate as f64);
            if due > elapsed {
                std::thread::sleep(due - elapsed);
            }
        }
        self.count.as_mut().expect("prepared").add(1);
    }

    fn cleanup(&mut self) {
        if let Some(c) = &mut self.count {
            c.write();
        }
    }
}

fn topology(argv: &[String]) -> Result<HeronTopology, TopologyError> {
    let args = parse(argv).map_err(TopologyError::Invalid)?;
    let mut b = TopologyBuilder::new();
    let a = args.clone();
    b.set_spout(
        "source",
        move || Source {
            name: "source",
            args: a.clone(),
            count: None,
            start: Instant::now(),
            sent: 0,
        },
        2,
    );
    let a = args.clone();
    b.set_bolt(
        "slow",
        move || Slow {
            name: "slow",
            slow: true,
            args: a.clone(),
            count: None,
            start: Instant::now(),
            executed: 0,
        },
        2,
    )
    .shuffle_grouping("source");
    if args.selective {
        let a = args.clone();
        b.set_spout(
            "steady",
            move || Source {
                name: "steady",
                args: a.clone(),
                count: None,
                start: Instant::now(),
                sent: 0,
            },
            2,
        );
        let a = args.clone();
        b.set_bolt(
            "fast",
            move || Slow {
                name: "fast",
                slow: false,
                args: a.clone(),
                count: None,
                start: Instant::now(),
                executed: 0,
            },
            2,
        )
        .shuffle_grouping("steady");
    }
    let mut conf = Config::new();
    conf.set(Config::TOPOLOGY_STMGRS, args.containers.to_string());
    conf.set("heron.streammgr.network.backpressure.highwatermark.mb", "2");
    conf.set("heron.streammgr.network.backpressure.lowwatermark.mb", "1");
    conf.set("heron-rs.backpressure.selective", args.selective);
    b.build("SlowBolt", conf)
}

fn main() {
    heron::run_role_if_requested(topology);
    eprintln!("slow_bolt is a test topology: submit it with `heron submit local <this binary> --out-dir DIR`");
    std::process::exit(2);
}
