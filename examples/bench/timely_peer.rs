//! The timely dataflow peer: the same word count (vocabulary and sentence generator of
//! `common::sentences`) as a timely dataflow, two worker processes (one worker thread each)
//! over loopback. The bench binary is its own worker: `bench timely-worker --process I ...`.
//!
//! Each worker makes sentences, splits them into words, exchanges the words by a hash of the
//! word and counts them per worker. It splits with `split_whitespace`, as our split bolt does
//! and as timely's own `examples/wordcount.rs` does: both sides of the comparison run the same
//! user code, so that the ratio compares the runtimes. It feeds its input for the run's
//! duration, then closes it and waits until the dataflow is done. Throughput is measured per
//! worker between the end of the warm-up and the end of the input, and summed.
//!
//! Every sentence carries the time it was made, and so does each of its words, as in our
//! topology. With `--rate` each worker makes its share of the sentences from a token bucket,
//! waking at most once a millisecond when it has nothing to send (like our spouts), and the
//! counting operator records the end-to-end latency of one word in eight after the warm-up;
//! the driver merges both workers' histograms.

use crate::children::{die_with_parent, free_loopback_port, Children};
use crate::common::sentences::Sentences;
use crate::driver::Latency;
use crate::rate::TokenBucket;
use crate::record::{new_histogram, now_ns};
use hdrhistogram::Histogram;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::vec::Map;
use timely::dataflow::operators::{Operator, Probe};
use timely::dataflow::{InputHandleVec, ProbeHandle};

/// The subcommand that runs one worker process.
pub const WORKER_COMMAND: &str = "timely-worker";
const PROCESSES: usize = 2;
/// Sentences per epoch and epochs allowed in flight: enough to keep both workers busy,
/// few enough that the input does not run far ahead of the counting.
const SENTENCES_PER_EPOCH: usize = 1024;
const EPOCHS_IN_FLIGHT: u64 = 4;
/// With a rate cap, the longest a worker sleeps when it has nothing to send.
const IDLE_WAIT: Duration = Duration::from_millis(1);
/// One word in this many has its latency recorded (as by our final bolt).
const LATENCY_SAMPLE_EVERY: u64 = 8;

/// What one worker measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WorkerReport {
    /// Words counted by this worker after the warm-up.
    pub words: u64,
    /// Seconds from the end of the warm-up to the end of the input.
    pub secs: f64,
    /// Words counted by this worker in the whole run.
    pub total: u64,
}

/// A worker's report: its counts, and (with a rate cap) its latency histogram after the warm-up
/// as value (ns) → count.
#[derive(Clone, Debug, Default, PartialEq)]
struct Report {
    counts: WorkerReport,
    hist: BTreeMap<u64, u64>,
}

/// What the peer run measured.
#[derive(Clone, Debug)]
pub struct PeerResult {
    /// `timely` or `relay`: the prefix of the peer's JSON keys.
    pub name: &'static str,
    pub words_per_sec: f64,
    pub total_words: u64,
    /// End-to-end latency of both workers (with a rate cap).
    pub latency: Option<Latency>,
}

fn word_hash(w: &str) -> u64 {
    // FNV-1a: cheap, and the same in both processes
    w.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Runs one worker (`bench timely-worker --process I --addresses A,B --duration-ms D
/// --warmup-ms W [--vocabulary N] [--rate-per-worker R]`) and prints its report line. Returns
/// the exit code.
pub fn worker_main(args: &[String]) -> i32 {
    let mut process = None;
    let mut addresses = Vec::new();
    let mut duration = None;
    let mut warmup = None;
    let mut vocabulary = crate::common::sentences::WORDS.len();
    let mut rate = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let v = it.next();
        match (a.as_str(), v) {
            ("--process", Some(v)) => process = v.parse::<usize>().ok(),
            ("--addresses", Some(v)) => addresses = v.split(',').map(str::to_string).collect(),
            ("--duration-ms", Some(v)) => duration = v.parse().ok().map(Duration::from_millis),
            ("--warmup-ms", Some(v)) => warmup = v.parse().ok().map(Duration::from_millis),
            ("--vocabulary", Some(v)) if v.parse::<usize>().is_ok_and(|n| n > 0) => {
                vocabulary = v.parse().unwrap_or(vocabulary)
            }
            ("--rate-per-worker", Some(v)) if v.parse::<f64>().is_ok_and(|r| r > 0.0) => {
                rate = v.parse().ok()
            }
            _ => {
                eprintln!("{WORKER_COMMAND}: bad argument {a:?}");
                return 2;
            }
        }
    }
    let (Some(process), Some(duration), Some(warmup)) = (process, duration, warmup) else {
        eprintln!("{WORKER_COMMAND}: needs --process, --addresses, --duration-ms, --warmup-ms");
        return 2;
    };
    if addresses.len() < 2 || process >= addresses.len() {
        eprintln!("{WORKER_COMMAND}: --addresses needs one address per process");
        return 2;
    }
    let config = timely::Config {
        communication: timely::CommunicationConfig::Cluster {
            threads: 1,
            process,
            addresses,
            report: false,
            zerocopy: false,
        },
        worker: timely::WorkerConfig::default(),
    };
    let guards = timely::execute(config, move |worker| {
        count_words(worker, duration, warmup, vocabulary, rate)
    });
    match guards {
        Ok(guards) => {
            for r in guards.join() {
                match r {
                    Ok(r) => println!("{}", format_report(&r)),
                    Err(e) => {
                        eprintln!("{WORKER_COMMAND}: worker failed: {e}");
                        return 1;
                    }
                }
            }
            0
        }
        Err(e) => {
            eprintln!("{WORKER_COMMAND}: {e}");
            1
        }
    }
}

fn count_words(
    worker: &mut timely::worker::Worker,
    duration: Duration,
    warmup: Duration,
    vocabulary: usize,
    rate: Option<f64>,
) -> Report {
    let counted = Rc::new(Cell::new(0u64));
    // `None` until the warm-up ends (and without a rate cap)
    let latency: Rc<RefCell<Option<Histogram<u64>>>> = Rc::new(RefCell::new(None));
    let mut input = InputHandleVec::<u64, (String, u64)>::new();
    let probe = ProbeHandle::new();
    let seen = counted.clone();
    let hist = latency.clone();
    worker.dataflow::<u64, _, _>(|scope| {
        input
            .to_stream(scope)
            .flat_map(|(sentence, ts): (String, u64)| {
                sentence
                    .split_whitespace()
                    .map(|w| (w.to_owned(), ts))
                    .collect::<Vec<(String, u64)>>()
            })
            .unary::<timely::container::CapacityContainerBuilder<Vec<u64>>, _, _, _>(
                Exchange::new(|(w, _): &(String, u64)| word_hash(w)),
                "count",
                move |_capability, _info| {
                    let mut counts: HashMap<String, u64> = HashMap::new();
                    move |input, _output| {
                        input.for_each(|_time, words| {
                            let mut n = seen.get();
                            let mut hist = hist.borrow_mut();
                            for (w, ts) in words.drain(..) {
                                *counts.entry(w).or_default() += 1;
                                n += 1;
                                if let Some(h) = hist.as_mut() {
                                    if n.is_multiple_of(LATENCY_SAMPLE_EVERY) {
                                        h.saturating_record(now_ns().saturating_sub(ts).max(1));
                                    }
                                }
                            }
                            seen.set(n);
                        });
                    }
                },
            )
            .probe_with(&probe);
    });

    let mut sentences = Sentences::with_vocabulary(0x5EED ^ worker.index() as u64, vocabulary);
    // A barrier: the probe passes epoch 0 only once every worker has built the dataflow and
    // closed it. Without it the workers' clocks start up to a second apart (the time a worker
    // takes to connect to the other), their measured windows overlap only in part, and near
    // either end one worker counts only its own words.
    let mut epoch = 1u64;
    input.advance_to(epoch);
    while probe.less_than(&epoch) {
        worker.step();
    }
    let mut bucket = rate.map(|r| TokenBucket::new(r, now_ns()));
    let start = Instant::now();
    let mut mark: Option<(Instant, u64)> = None;
    loop {
        let now = Instant::now();
        let elapsed = now.duration_since(start);
        if mark.is_none() && elapsed >= warmup {
            mark = Some((now, counted.get()));
            if rate.is_some() {
                *latency.borrow_mut() = Some(new_histogram());
            }
        }
        if elapsed >= duration {
            break;
        }
        for _ in 0..SENTENCES_PER_EPOCH {
            let ts = now_ns();
            if bucket.as_mut().is_some_and(|b| !b.take(ts)) {
                break;
            }
            input.send((sentences.next_sentence(), ts));
        }
        if bucket.is_some() {
            // epochs are milliseconds of the shared monotonic clock, so both workers close
            // them at the same pace whatever each sends
            let now_epoch = now_ns() / 1_000_000;
            if now_epoch > epoch {
                epoch = now_epoch;
                input.advance_to(epoch);
            }
            // run what was sent; with nothing to do, sleep until the peer's words come or
            // for at most the idle wait (then the bucket has tokens again). The rate bounds
            // what is in flight.
            worker.step_or_park(Some(IDLE_WAIT));
            continue;
        }
        // flat out: a full epoch was sent
        epoch += 1;
        input.advance_to(epoch);
        let behind = epoch.saturating_sub(EPOCHS_IN_FLIGHT);
        while probe.less_than(&behind) {
            worker.step();
        }
    }
    let end = (Instant::now(), counted.get());
    drop(input);
    while !probe.done() {
        worker.step();
    }
    let (t0, c0) = mark.unwrap_or((start, 0));
    let hist = latency
        .borrow()
        .as_ref()
        .map(|h| {
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect()
        })
        .unwrap_or_default();
    Report {
        counts: WorkerReport {
            words: end.1 - c0,
            secs: end.0.duration_since(t0).as_secs_f64(),
            total: counted.get(),
        },
        hist,
    }
}

/// Runs the two worker processes of `exe` and sums their rates; with `rate` (sentences a
/// second in all) each makes its share, and their latency histograms are merged.
pub fn run(
    exe: &Path,
    duration: Duration,
    warmup: Duration,
    vocabulary: usize,
    rate: Option<f64>,
) -> Result<PeerResult, String> {
    let ports = (0..PROCESSES)
        .map(|_| free_loopback_port())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("timely peer: no free loopback port: {e}"))?;
    let addresses: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let mut workers = Children::default();
    for i in 0..PROCESSES {
        let mut cmd = Command::new(exe);
        cmd.arg(WORKER_COMMAND)
            .args(["--process", &i.to_string()])
            .args(["--addresses", &addresses.join(",")])
            .args(["--duration-ms", &duration.as_millis().to_string()])
            .args(["--warmup-ms", &warmup.as_millis().to_string()])
            .args(["--vocabulary", &vocabulary.to_string()]);
        if let Some(r) = rate {
            cmd.args(["--rate-per-worker", &(r / PROCESSES as f64).to_string()]);
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::piped());
        die_with_parent(&mut cmd);
        let child = cmd
            .spawn()
            .map_err(|e| format!("timely peer: cannot start {}: {e}", exe.display()))?;
        workers.0.push(child);
    }
    // read each worker's stdout on a thread of its own, so a hung worker cannot block us
    let readers: Vec<_> = workers
        .0
        .iter_mut()
        .map(|c| {
            let out = c.stdout.take().expect("piped stdout");
            std::thread::spawn(move || {
                BufReader::new(out)
                    .lines()
                    .map_while(Result::ok)
                    .filter_map(|l| parse_report(&l))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let deadline = Instant::now() + duration + Duration::from_secs(60);
    for (i, child) in workers.0.iter_mut().enumerate() {
        loop {
            match child.try_wait() {
                Ok(Some(status)) if status.success() => break,
                Ok(Some(status)) => {
                    return Err(format!("timely peer: worker {i} exited with {status}"))
                }
                Ok(None) if Instant::now() > deadline => {
                    return Err(format!("timely peer: worker {i} did not finish"))
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Err(format!("timely peer: worker {i}: {e}")),
            }
        }
    }
    let mut reports = Vec::new();
    for r in readers {
        reports.extend(r.join().unwrap_or_default());
    }
    if reports.len() != PROCESSES {
        return Err(format!(
            "timely peer: {} worker reports, expected {PROCESSES}",
            reports.len()
        ));
    }
    let mut merged: BTreeMap<u64, u64> = BTreeMap::new();
    for r in &reports {
        for (&v, &n) in &r.hist {
            *merged.entry(v).or_default() += n;
        }
    }
    Ok(PeerResult {
        name: "timely",
        words_per_sec: reports
            .iter()
            .map(|r| r.counts.words as f64 / r.counts.secs.max(1e-9))
            .sum(),
        total_words: reports.iter().map(|r| r.counts.total).sum(),
        latency: rate.map(|_| Latency::from_buckets(&merged)),
    })
}

/// `timely-worker words W secs S total T [hist V:N,V:N,...]`.
fn format_report(r: &Report) -> String {
    use std::fmt::Write as _;
    let c = &r.counts;
    let mut line = format!(
        "{WORKER_COMMAND} words {} secs {} total {}",
        c.words, c.secs, c.total
    );
    if !r.hist.is_empty() {
        line.push_str(" hist ");
        for (i, (v, n)) in r.hist.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            let _ = write!(line, "{sep}{v}:{n}");
        }
    }
    line
}

fn parse_report(line: &str) -> Option<Report> {
    let rest = line.strip_prefix(WORKER_COMMAND)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let (counts, hist) = match f.as_slice() {
        ["words", w, "secs", s, "total", t, tail @ ..] => (
            WorkerReport {
                words: w.parse().ok()?,
                secs: s.parse().ok()?,
                total: t.parse().ok()?,
            },
            tail,
        ),
        _ => return None,
    };
    let hist = match hist {
        [] => BTreeMap::new(),
        ["hist", buckets] => buckets
            .split(',')
            .map(|b| {
                let (v, n) = b.split_once(':')?;
                Some((v.parse().ok()?, n.parse().ok()?))
            })
            .collect::<Option<BTreeMap<u64, u64>>>()?,
        _ => return None,
    };
    Some(Report { counts, hist })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_round_trip_with_and_without_a_histogram() {
        let counts = WorkerReport {
            words: 10,
            secs: 1.5,
            total: 12,
        };
        let plain = Report {
            counts,
            hist: BTreeMap::new(),
        };
        assert_eq!(
            format_report(&plain),
            "timely-worker words 10 secs 1.5 total 12"
        );
        assert_eq!(parse_report(&format_report(&plain)), Some(plain));
        let with = Report {
            counts,
            hist: BTreeMap::from([(1_000, 3), (250_000, 1)]),
        };
        assert_eq!(parse_report(&format_report(&with)), Some(with));
        assert_eq!(
            parse_report("timely-worker words 1 secs 1 total 1 hist 5"),
            None
        );
        assert_eq!(parse_report("other words 1 secs 1 total 1"), None);
    }
}
