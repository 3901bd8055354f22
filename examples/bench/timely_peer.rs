//! The timely dataflow peer: the same word count (vocabulary and sentence generator of
//! `common::sentences`) as a timely dataflow, two worker processes (one worker thread each)
//! over loopback. The bench binary is its own worker: `bench timely-worker --process I ...`.
//!
//! Each worker makes sentences, splits them into words, exchanges the words by a hash of the
//! word and counts them per worker. It feeds its input for the run's duration, then closes it
//! and waits until the dataflow is done. Throughput is measured per worker between the end of
//! the warm-up and the end of the input, and summed.

use crate::common::sentences::Sentences;
use std::cell::Cell;
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
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

/// What one worker measured.
#[derive(Clone, Copy, Debug, Default)]
pub struct WorkerReport {
    /// Words counted by this worker after the warm-up.
    pub words: u64,
    /// Seconds from the end of the warm-up to the end of the input.
    pub secs: f64,
    /// Words counted by this worker in the whole run.
    pub total: u64,
}

/// What the peer run measured.
#[derive(Clone, Debug)]
pub struct PeerResult {
    pub words_per_sec: f64,
    pub total_words: u64,
}

fn word_hash(w: &str) -> u64 {
    // FNV-1a: cheap, and the same in both processes
    w.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Runs one worker (`bench timely-worker --process I --addresses A,B --duration-ms D
/// --warmup-ms W`) and prints its report line. Returns the exit code.
pub fn worker_main(args: &[String]) -> i32 {
    let mut process = None;
    let mut addresses = Vec::new();
    let mut duration = None;
    let mut warmup = None;
    let mut vocabulary = crate::common::sentences::WORDS.len();
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
        count_words(worker, duration, warmup, vocabulary)
    });
    match guards {
        Ok(guards) => {
            for r in guards.join() {
                match r {
                    Ok(r) => println!(
                        "{WORKER_COMMAND} words {} secs {} total {}",
                        r.words, r.secs, r.total
                    ),
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
) -> WorkerReport {
    let counted = Rc::new(Cell::new(0u64));
    let mut input = InputHandleVec::<u64, String>::new();
    let probe = ProbeHandle::new();
    let seen = counted.clone();
    worker.dataflow::<u64, _, _>(|scope| {
        input
            .to_stream(scope)
            .flat_map(|sentence: String| {
                sentence
                    .split(' ')
                    .map(str::to_owned)
                    .collect::<Vec<String>>()
            })
            .unary::<timely::container::CapacityContainerBuilder<Vec<u64>>, _, _, _>(
                Exchange::new(|w: &String| word_hash(w)),
                "count",
                move |_capability, _info| {
                    let mut counts: HashMap<String, u64> = HashMap::new();
                    move |input, _output| {
                        input.for_each(|_time, words| {
                            let n = words.len() as u64;
                            for w in words.drain(..) {
                                *counts.entry(w).or_default() += 1;
                            }
                            seen.set(seen.get() + n);
                        });
                    }
                },
            )
            .probe_with(&probe);
    });

    let mut sentences = Sentences::with_vocabulary(0x5EED ^ worker.index() as u64, vocabulary);
    let start = Instant::now();
    let mut mark: Option<(Instant, u64)> = None;
    let mut epoch = 0u64;
    loop {
        let now = Instant::now();
        let elapsed = now.duration_since(start);
        if mark.is_none() && elapsed >= warmup {
            mark = Some((now, counted.get()));
        }
        if elapsed >= duration {
            break;
        }
        for _ in 0..SENTENCES_PER_EPOCH {
            input.send(sentences.next_sentence());
        }
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
    WorkerReport {
        words: end.1 - c0,
        secs: end.0.duration_since(t0).as_secs_f64(),
        total: counted.get(),
    }
}

fn free_loopback_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Kills the worker processes if the driver gives up on them.
struct Workers(Vec<Child>);

impl Drop for Workers {
    fn drop(&mut self) {
        for c in &mut self.0 {
            if matches!(c.try_wait(), Ok(None)) {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

/// Runs the two worker processes of `exe` and sums their rates.
pub fn run(
    exe: &Path,
    duration: Duration,
    warmup: Duration,
    vocabulary: usize,
) -> Result<PeerResult, String> {
    let ports = (0..PROCESSES)
        .map(|_| free_loopback_port())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("timely peer: no free loopback port: {e}"))?;
    let addresses: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let mut workers = Workers(Vec::new());
    for i in 0..PROCESSES {
        let mut cmd = Command::new(exe);
        cmd.arg(WORKER_COMMAND)
            .args(["--process", &i.to_string()])
            .args(["--addresses", &addresses.join(",")])
            .args(["--duration-ms", &duration.as_millis().to_string()])
            .args(["--warmup-ms", &warmup.as_millis().to_string()])
            .args(["--vocabulary", &vocabulary.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        // SAFETY: prctl is async-signal-safe; the worker dies with the bench.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
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
    Ok(PeerResult {
        words_per_sec: reports
            .iter()
            .map(|r| r.words as f64 / r.secs.max(1e-9))
            .sum(),
        total_words: reports.iter().map(|r| r.total).sum(),
    })
}

fn parse_report(line: &str) -> Option<WorkerReport> {
    let rest = line.strip_prefix(WORKER_COMMAND)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    match f.as_slice() {
        ["words", w, "secs", s, "total", t] => Some(WorkerReport {
            words: w.parse().ok()?,
            secs: s.parse().ok()?,
            total: t.parse().ok()?,
        }),
        _ => None,
    }
}
