//! The Kafka word count (`examples/kafka_word_count.rs`) against a real Kafka-protocol broker
//! (tansu), through the local scheduler as separate processes.

mod support;

use heron_testkit::process::{component_pids, role_pids, ProcessGuard};
use heron_testkit::wait::{Outcome, Wait};
use heron_testkit::{wait_for, LocalCluster};
use std::collections::{HashMap, HashSet};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::*;

/// One topology at a time: each writes its input one record per request (see
/// `support::producer`), which a loaded 2-core machine cannot do for three at once.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

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

    /// Waits for `cond` (polled every 250 ms); on a timeout prints the logs and fails.
    fn wait<O: Outcome>(&self, what: &str, limit: Duration, cond: impl FnMut() -> O) -> O::Value {
        Wait::new(what)
            .timeout(limit)
            .every(Duration::from_millis(250))
            .try_until(cond)
            .unwrap_or_else(|e| {
                self.dump();
                panic!("{e}; committed: {:?}", self.progress())
            })
    }

    fn progress(&self) -> Result<Vec<heron_kafka::PartitionProgress>, heron_kafka::KafkaError> {
        heron_kafka::group_progress(&self.brokers, &self.group, &self.input)
    }

    fn wait_committed(&self, at_least: i64, limit: Duration) {
        let what = format!("{at_least} records of {} committed", self.input);
        self.wait(&what, limit, || self.committed() >= at_least);
    }

    /// Waits until `records` input records and the end of every partition are committed.
    fn wait_all_committed(
        &self,
        records: i64,
        limit: Duration,
    ) -> Vec<heron_kafka::PartitionProgress> {
        self.wait("every offset committed", limit, || {
            all_committed(&self.brokers, &self.group, &self.input, records)
        })
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
    let _serial = serial();
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
    let done = run.wait_all_committed(N as i64, Duration::from_secs(240));
    eprintln!(
        "every offset committed {:.1}s after the last record was sent: {done:?}",
        t.elapsed().as_secs_f64()
    );
    // every record was emitted at least once: each sentence's unique word made it out
    check_at_least_once(&run, &expected_counts(0..N), false);
}

/// The partitions each spout task logged it reads, newest line per task log.
fn spout_assignments(run: &Run) -> Vec<Vec<String>> {
    let dir = run
        .cluster
        .working_dir("KafkaWordCount")
        .expect("working dir")
        .join("log-files");
    let mut out = Vec::new();
    for f in heron_testkit::files(&dir, "container_", ".log") {
        if !f.to_string_lossy().contains("kafka-spout") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        if let Some(line) = text
            .lines()
            .rev()
            .find(|l| l.contains("KafkaSpout reading"))
        {
            let list = line.split("partitions=").nth(1).unwrap_or_default();
            out.push(
                list.split('"')
                    .skip(1)
                    .step_by(2)
                    .map(str::to_string)
                    .collect(),
            );
        }
    }
    out
}

#[test]
fn update_reassigns_partitions_and_rereads_only_uncommitted_records() {
    let Some(brokers) = broker() else { return };
    let _serial = serial();
    const HALF: u64 = 20_000;
    let run = Run::start(&brokers, 4, &["--reliability", "atleast"]);
    produce(&brokers, &run.input, 4, 0..HALF, 5_000)
        .join()
        .unwrap();
    run.wait_committed(HALF as i64, Duration::from_secs(180));
    wait_for(
        Duration::from_secs(30),
        "2 spout tasks logged their partitions",
        || spout_assignments(&run).len() == 2,
    );
    let before = heron_kafka::group_progress(&run.brokers, &run.group, &run.input).unwrap();
    let out = run.cluster.heron_in(
        "update",
        "local",
        &["--component-parallelism".into(), "kafka-spout:4".into()],
        &["KafkaWordCount"],
    );
    assert!(
        out.status.success(),
        "heron update: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for(Duration::from_secs(90), "4 kafka-spout tasks", || {
        run.spout_tasks().len() == 4
    });
    produce(&brokers, &run.input, 4, HALF..2 * HALF, 5_000)
        .join()
        .unwrap();
    run.wait_all_committed(2 * HALF as i64, Duration::from_secs(240));
    // each partition is read by exactly one of the 4 tasks
    let assigned = spout_assignments(&run);
    assert_eq!(assigned.len(), 4, "{assigned:?}");
    let mut all: Vec<String> = assigned.iter().flatten().cloned().collect();
    all.sort();
    let expect: Vec<String> = (0..4).map(|p| format!("{}-{p}", run.input)).collect();
    assert_eq!(all, expect, "every partition exactly once: {assigned:?}");
    assert!(assigned.iter().all(|a| a.len() == 1), "{assigned:?}");
    // sentence i went to partition i % 4 at offset i / 4: what was committed before the
    // update must not come out twice
    let records = read_all(&run.brokers, &run.output);
    let mut per_word: HashMap<&str, usize> = HashMap::new();
    for r in &records {
        *per_word.entry(r.key.as_str()).or_insert(0) += 1;
    }
    let mut reread = 0;
    for i in 0..2 * HALF {
        let n = per_word.get(format!("u{i}").as_str()).copied().unwrap_or(0);
        assert!(n >= 1, "sentence {i} never reached the output");
        if n > 1 {
            reread += 1;
            let p = &before[(i % 4) as usize];
            let committed = p.committed.unwrap_or(0);
            assert!(
                (i / 4) as i64 >= committed,
                "sentence {i} (partition {}, offset {}) was committed ({committed}) before the \
                 update and came out {n} times",
                i % 4,
                i / 4
            );
        }
    }
    eprintln!(
        "after the update: {reread} of {} sentences read twice (all uncommitted at the update)",
        2 * HALF
    );
    check_at_least_once(&run, &expected_counts(0..2 * HALF), false);
}

#[test]
fn effectively_once_output_is_exact_after_dropping_repeated_sink_ids() {
    let Some(brokers) = broker() else { return };
    let _serial = serial();
    const N: u64 = 30_000;
    let run = Run::start(
        &brokers,
        4,
        &[
            "--reliability",
            "effectively",
            "--checkpoint-interval",
            "1s",
        ],
    );
    let producing = produce(&brokers, &run.input, 4, 0..N, 2_000);
    run.wait_committed(3_000, Duration::from_secs(180));
    let home = run.cluster.home().to_path_buf();
    // a kill every few seconds (every 3 000 more records committed, a checkpoint or more
    // apart): the spout, a stream manager, a counting task, a sink task
    let limit = Duration::from_secs(180);
    run.kill_and_wait_restart("a kafka-spout instance", || run.spout_tasks());
    run.wait_committed((run.committed() + 3_000).min(N as i64), limit);
    run.kill_and_wait_restart("a stream manager", || role_pids(&home, "stmgr"));
    run.wait_committed((run.committed() + 3_000).min(N as i64), limit);
    run.kill_and_wait_restart("a count instance", || component_pids(&home, "count"));
    run.wait_committed((run.committed() + 3_000).min(N as i64), limit);
    run.kill_and_wait_restart("a kafka-bolt instance", || {
        component_pids(&home, "kafka-bolt")
    });
    producing.join().expect("the producer");
    let expected = expected_counts(0..N);
    let words: i64 = expected.values().sum();
    // the group's commits follow consistent checkpoints; the output follows the same ones
    run.wait_all_committed(N as i64, Duration::from_secs(300));
    let (distinct, records) = run.wait(
        "one output record per word occurrence",
        Duration::from_secs(120),
        || {
            let records = read_all(&run.brokers, &run.output);
            let mut ids = HashSet::new();
            let distinct: Vec<OutRecord> = records
                .iter()
                .filter(|r| ids.insert(r.sink_id.clone().expect("every record has a sink id")))
                .cloned()
                .collect();
            (distinct.len() as i64 >= words).then_some((distinct, records.len()))
        },
    );
    assert_eq!(
        distinct.len() as i64,
        words,
        "one record per word occurrence"
    );
    // each word's values are exactly 1..=n, once each: the counts were exact throughout
    let mut values: HashMap<&str, Vec<i64>> = HashMap::new();
    for r in &distinct {
        values
            .entry(r.key.as_str())
            .or_default()
            .push(r.value.parse().unwrap());
    }
    assert_eq!(values.len(), expected.len());
    for (w, &n) in &expected {
        let mut v = values.remove(w.as_str()).unwrap_or_default();
        v.sort_unstable();
        assert_eq!(v, (1..=n).collect::<Vec<_>>(), "the counts of {w}");
    }
    eprintln!(
        "{records} output records, {} after dropping repeated sink ids = {words} word occurrences",
        distinct.len()
    );
}
