//! What the examples share: their command line and the "submit myself, watch, kill" loop.
//!
//! Every example binary is a whole topology: run with no role it submits itself to the local
//! scheduler (real separate processes), prints one status line per second, and kills the
//! topology when the duration is over or on Ctrl-C.

pub mod sentences;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Options every example understands. Unknown arguments are left for the topology.
#[derive(Clone, Debug)]
pub struct Options {
    /// How long to run before killing the topology.
    pub duration: Duration,
    /// Number of containers (`topology.stmgrs`).
    pub containers: u32,
    /// Parallelism of every component.
    pub parallelism: u32,
    /// `atmost` or `atleast`.
    pub reliability: String,
}

impl Options {
    /// Parses `--duration 30s`, `--containers N`, `--parallelism N`, `--reliability atmost|atleast`.
    pub fn parse(args: &[String]) -> Result<Options, String> {
        let mut o = Options {
            duration: Duration::from_secs(30),
            containers: 2,
            parallelism: 2,
            reliability: "atmost".to_string(),
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = |name: &str| {
                it.next()
                    .cloned()
                    .ok_or_else(|| format!("{name} needs a value"))
            };
            match a.as_str() {
                "--duration" => o.duration = parse_duration(&value("--duration")?)?,
                "--containers" => {
                    o.containers = parse_positive(&value("--containers")?, "--containers")?
                }
                "--parallelism" => {
                    o.parallelism = parse_positive(&value("--parallelism")?, "--parallelism")?
                }
                "--reliability" => {
                    let r = value("--reliability")?;
                    if r != "atmost" && r != "atleast" {
                        return Err(format!(
                            "--reliability must be atmost or atleast, not {r:?}"
                        ));
                    }
                    o.reliability = r;
                }
                "-h" | "--help" => {
                    return Err("options: --duration 30s --containers 2 --parallelism 2 \
                                --reliability atmost|atleast"
                        .to_string())
                }
                other => return Err(format!("unknown argument {other:?} (try --help)")),
            }
        }
        Ok(o)
    }

    /// The topology config these options ask for.
    pub fn config(&self) -> heron::Config {
        let mut c = heron::Config::new();
        c.set(heron::Config::TOPOLOGY_STMGRS, self.containers.to_string());
        if self.reliability == "atleast" {
            c.set(heron::Config::TOPOLOGY_RELIABILITY_MODE, "ATLEAST_ONCE");
        }
        c
    }
}

fn parse_positive(s: &str, name: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{name} must be a positive integer, not {s:?}")),
    }
}

/// `30s`, `2m`, `500ms` or a plain number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("bad duration {s:?}: use e.g. 30s, 2m or 500ms");
    let (num, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = num.parse().map_err(|_| bad())?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(bad()),
    };
    if secs.is_nan() || secs <= 0.0 {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(secs))
}

fn rate(n: u64, secs: f64) -> String {
    let r = n as f64 / secs.max(1e-9);
    if r >= 1e6 {
        format!("{:.2} M", r / 1e6)
    } else if r >= 1e3 {
        format!("{:.1} k", r / 1e3)
    } else {
        format!("{r:.0} ")
    }
}

/// Submits this binary as a topology, prints a status line per second, and kills it at the
/// end. Returns the process exit code.
#[allow(dead_code)] // each example includes this module; not all of them call it
pub fn run(what: &str) -> i32 {
    run_with_flags(what, &[])
}

/// [`run`] for a topology that reads more `--flag value` pairs of its own (`own`): they are
/// passed to the topology and skipped here.
pub fn run_with_flags(what: &str, own: &[&str]) -> i32 {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut common = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if own.contains(&a.as_str()) {
            it.next();
        } else {
            common.push(a.clone());
        }
    }
    let opts = match Options::parse(&common) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    let stop = heron::ctrl_c_flag();
    println!(
        "submitting {what} to the local scheduler ({} containers, parallelism {}, {})",
        opts.containers, opts.parallelism, opts.reliability
    );
    let topology = match heron::LocalTopology::submit_self(&args) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("submit failed: {e}");
            return 1;
        }
    };
    println!(
        "running {} (working dir {}); Ctrl-C stops it",
        topology.name(),
        topology.working_dir().display()
    );
    match heron::start_tracker_for(&topology) {
        Ok(url) => println!("tracker: {url}"),
        Err(e) => eprintln!("no tracker page: {e}"),
    }
    let start = Instant::now();
    let mut last = topology.counters();
    let mut last_t = start;
    let mut first_sample = None;
    while start.elapsed() < opts.duration && !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
        if last_t.elapsed() < Duration::from_secs(1) {
            continue;
        }
        let now = Instant::now();
        let c = topology.counters();
        let dt = now.duration_since(last_t).as_secs_f64();
        println!(
            "[{:>4.0}s] emitted {}tuples/s  executed {}tuples/s  acked {}  failed {}",
            start.elapsed().as_secs_f64(),
            rate(c.emitted.saturating_sub(last.emitted), dt),
            rate(c.executed.saturating_sub(last.executed), dt),
            c.acked,
            c.failed
        );
        if first_sample.is_none() && c.executed > 0 {
            first_sample = Some((now, c));
        }
        last = c;
        last_t = now;
    }
    let end = topology.counters();
    let name = topology.name().to_string();
    let killed = topology.kill();
    println!(
        "killed {name}: {}",
        if killed.is_ok() {
            "no process left"
        } else {
            "kill failed"
        }
    );
    if let Err(e) = killed {
        eprintln!("kill failed: {e}");
        return 1;
    }
    match first_sample {
        Some((t0, c0)) => {
            let secs = last_t.duration_since(t0).as_secs_f64();
            println!(
                "summary: {} tuples emitted, {} executed; steady state over {secs:.1}s: \
                 emitted {}tuples/s, executed {}tuples/s",
                end.emitted,
                end.executed,
                rate(last.emitted.saturating_sub(c0.emitted), secs),
                rate(last.executed.saturating_sub(c0.executed), secs),
            );
        }
        None => println!(
            "summary: {} tuples emitted, {} executed (too short to measure a rate)",
            end.emitted, end.executed
        ),
    }
    if end.complete_latency_p99_us > 0 {
        println!(
            "complete latency (emit to ack, slowest spout task, whole run): p50 {:.2} ms, p99 {:.2} ms",
            end.complete_latency_p50_us as f64 / 1000.0,
            end.complete_latency_p99_us as f64 / 1000.0
        );
    }
    0
}
