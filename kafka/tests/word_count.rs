//! The Kafka word count (`examples/kafka_word_count.rs`) against a real Kafka-protocol broker
//! (tansu), through the local scheduler as separate processes.

mod support;

use heron_testkit::process::{component_pids, role_pids, ProcessGuard};
use heron_testkit::{wait_for, LocalCluster};
use std::collections::{HashMap, HashSet};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

/// A running `kafka_word_count` with its private HOME.
struct Run {
    cluster: LocalCluster,
    _guard: ProcessGuard,
    brokers: String,
    input: String,
    output: String,
    group: String,
    log: std::path::PathBuf,
}

impl Run {
    fn start(brokers: &str, partitions: i32, extra: &[&str]) -> Run {
        let input = unique("sentences");
        let output = unique("counts");
        let group = unique("group");
        heron_kafka::create_topic(brokers, &input, partitions).expect("create the input topic");
        heron_kafka::create_topic(brokers, &output, partitions).expect("create the output topic");
        let cluster = LocalCluster::new(heron_cli());
        let log = cluster.home().join("driver.log");
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new(fresh_example("kafka_word_count"))
            .args([
                "--brokers",
                brokers,
                "--input-topic",
                &input,
                "--output-topic",
                &output,
            ])
            .args(["--group", &group, "--commit-period", "500ms"])
            .args(extra)
            .env("HOME", cluster.home())
            .env("USER", "tester")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .process_group(0)
            .spawn()
            .expect("start kafka_word_count");
        let mut guard = ProcessGuard::new();
        guard.group(child.id() as i32);
        guard.child(child);
        Run {
            cluster,
            _guard: guard,
            brokers: brokers.to_string(),
            input,
            output,
            group,
            log,
        }
    }

    fn committed(&self) -> i64 {
        committed_count(&self.brokers, &self.group, &self.input)
    }

    fn wait_committed(&self, at_least: i64, limit: Duration) {
        let what = format!("{at_least} records of {} committed", self.input);
        let t = Instant::now();
        while self.committed() < at_least {
            if t.elapsed() > limit {
                self.dump();
                panic!(
                    "timed out after {limit:?} waiting for {what} (now {})",
                    self.committed()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn dump(&self) {
        eprintln!(
            "---- driver ----\n{}",
            std::fs::read_to_string(&self.log).unwrap_or_default()
        );
        self.cluster.dump_logs("KafkaWordCount");
    }

    /// kill -9 the first of `pids()`, then waits until as many run again, none of them it.
    fn kill_and_wait_restart(&self, what: &str, pids: impl Fn() -> Vec<i32>) {
        let before = wait_for(Duration::from_secs(60), what, || {
            let p = pids();
            (!p.is_empty()).then_some(p)
        });
        let victim = before[0];
        eprintln!(
            "kill -9 {what} (pid {victim}) at {} committed",
            self.committed()
        );
        assert_eq!(unsafe { libc::kill(victim, libc::SIGKILL) }, 0);
        wait_for(
            Duration::from_secs(90),
            &format!("{what} restarted"),
            || {
                let now = pids();
                now.len() == before.len() && !now.contains(&victim)
            },
        );
    }

    fn spout_tasks(&self) -> Vec<i32> {
        component_pids(self.cluster.home(), "kafka-spout")
    }
}

/// Sends `n` sentences `u<i> c<i % 7> c<i % 13>` over `partitions` partitions at about
/// `per_sec` a second, from a thread.
fn produce(
    brokers: &str,
    topic: &str,
    partitions: i32,
    range: std::ops::Range<u64>,
    per_sec: u64,
) -> std::thread::JoinHandle<()> {
    let (brokers, topic) = (brokers.to_string(), topic.to_string());
    std::thread::spawn(move || {
        let p = producer(&brokers);
        let start = Instant::now();
        let first = range.start;
        for i in range {
            let sentence = format!("u{i} c{} c{}", i % 7, i % 13);
            send(&p, &topic, (i % partitions as u64) as i32, &sentence);
            let due = Duration::from_secs_f64((i - first) as f64 / per_sec as f64);
            if let Some(wait) = due.checked_sub(start.elapsed()) {
                std::thread::sleep(wait);
            }
        }
        flush(&p);
    })
}

/// The words each sentence of `range` holds, counted.
fn expected_counts(range: std::ops::Range<u64>) -> HashMap<String, i64> {
    let mut m = HashMap::new();
    for i in range {
        for w in [
            format!("u{i}"),
            format!("c{}", i % 7),
            format!("c{}", i % 13),
        ] {
            *m.entry(w).or_insert(0) += 1;
        }
    }
    m
}

/// Checks at-least-once output: every word of the input has a record (so every sentence
/// was emitted and processed at least once); with `exact_floor`, each word's largest count is
/// at least its number of occurrences (only without faults: a restarted `count` task starts
/// from zero, as in Storm). Returns how many records repeat a (word, count) pair (replays).
fn check_at_least_once(run: &Run, expected: &HashMap<String, i64>, exact_floor: bool) -> usize {
    let out = read_all(&run.brokers, &run.output);
    let mut max: HashMap<&str, i64> = HashMap::new();
    let mut seen = HashSet::new();
    let mut repeats = 0;
    for r in &out {
        let n: i64 = r
            .value
            .parse()
            .unwrap_or_else(|_| panic!("count {:?} of {:?}", r.value, r.key));
        let e = max.entry(r.key.as_str()).or_insert(0);
        *e = (*e).max(n);
        if !seen.insert((r.key.as_str(), n)) {
            repeats += 1;
        }
    }
    let missing: Vec<&String> = expected
        .keys()
        .filter(|w| !max.contains_key(w.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "{} words never reached the output, e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    for (w, &n) in expected.iter().filter(|_| exact_floor) {
        assert!(
            max[w.as_str()] >= n,
            "{w}: counted {} < {n} occurrences",
            max[w.as_str()]
        );
    }
    eprintln!(
        "{} output records, {} distinct words, {repeats} repeated (word, count) pairs",
        out.len(),
        max.len()
    );
    repeats
}

#[test]
fn at_least_once_survives_a_killed_spout_and_stream_manager() {
    let Some(brokers) = broker() else { return };
    const N: u64 = 100_000;
    let run = Run::start(&brokers, 4, &["--reliability", "atleast"]);
    let producing = produce(&brokers, &run.input, 4, 0..N, 5_000);
    run.wait_committed(10_000, Duration::from_secs(180));
    run.kill_and_wait_restart("a kafka-spout instance", || run.spout_tasks());
    run.wait_committed(run.committed() + 5_000, Duration::from_secs(180));
    let home = run.cluster.home().to_path_buf();
    run.kill_and_wait_restart("a stream manager", || role_pids(&home, "stmgr"));
    producing.join().expect("the producer");
    let t = Instant::now();
    let done = loop {
        if let Some(ps) = all_committed(&run.brokers, &run.group, &run.input, N as i64) {
            break ps;
        }
        if t.elapsed() > Duration::from_secs(240) {
            run.dump();
            panic!(
                "not every offset was committed: {:?}",
                heron_kafka::group_progress(&run.brokers, &run.group, &run.input)
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    eprintln!(
        "every offset committed {:.1}s after the last record was sent: {done:?}",
        t.elapsed().as_secs_f64()
    );
    // every record was emitted at least once: each sentence's unique word made it out
    check_at_least_once(&run, &expected_counts(0..N), false);
}
