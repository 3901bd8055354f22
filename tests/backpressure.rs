//! Back pressure end to end: the `slow_bolt` topology (ATMOST_ONCE, 2 containers, a spout at
//! 20k tuples/s per task into a bolt that manages only 2k/s per task for its first minute)
//! runs as real processes. With back pressure the stream managers stop reading their spouts,
//! so their memory stays bounded while the bolt is slow; when it speeds up, throughput
//! recovers. With our selective mode, only the spouts upstream of the slow bolt stop. The
//! tracker names the slow bolt as the cause of back pressure. The tests run one at a time;
//! numbers are printed with `--nocapture`.

mod support;

use heron_testkit::Wait;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use support::{local_tracker, role_pids, submit_slow_bolt, wait_for, TestEnv};

const NAME: &str = "SlowBolt";
const RATE: u64 = 20_000;
const SLOW_RATE: u64 = 2_000;
const SLOW_SECS: u64 = 60;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn total(out: &Path, component: &str) -> u64 {
    heron_testkit::files(out, &format!("{component}-"), ".count")
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .filter_map(|s| s.trim().parse::<u64>().ok())
        .sum()
}

/// Resident memory of a process, in bytes.
fn rss(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

#[test]
fn a_slow_bolt_keeps_stream_manager_memory_bounded_and_throughput_recovers() {
    let _serial = serial();
    let mut env = TestEnv::new();
    let out = submit_slow_bolt(
        &mut env,
        NAME,
        &[
            "--rate",
            &RATE.to_string(),
            "--slow-rate",
            &SLOW_RATE.to_string(),
            "--slow-secs",
            &SLOW_SECS.to_string(),
        ],
    );
    wait_for(Duration::from_secs(20), "the bolt to execute", || {
        (total(&out, "slow") > 0).then_some(())
    });
    let start = Instant::now();
    let stmgrs = role_pids(&env, "stmgr");
    assert_eq!(stmgrs.len(), 2);

    // The slow minute (minus a margin for start-up skew between the bolt tasks).
    let mut max_rss = 0;
    let mut samples = Vec::new();
    while start.elapsed() < Duration::from_secs(SLOW_SECS - 3) {
        std::thread::sleep(Duration::from_secs(1));
        let r = stmgrs.iter().map(|&p| rss(p)).max().unwrap_or(0);
        max_rss = max_rss.max(r);
        samples.push((
            start.elapsed().as_secs(),
            r >> 20,
            total(&out, "source"),
            total(&out, "slow"),
        ));
    }
    let (_, _, emitted_slow, executed_slow) = *samples.last().unwrap();
    let slow_elapsed = start.elapsed().as_secs_f64();
    let slow_rate = executed_slow as f64 / slow_elapsed;
    eprintln!("samples (s, max stmgr RSS MB, emitted, executed): {samples:?}");
    eprintln!(
        "slow phase: {slow_elapsed:.0}s, executed {executed_slow} ({slow_rate:.0}/s), emitted \
         {emitted_slow} (the spouts alone would have emitted {}), max stmgr RSS {} MB",
        (slow_elapsed * 2.0 * RATE as f64) as u64,
        max_rss >> 20
    );
    // The spouts were held back: they emitted far less than their rate allows, the backlog
    // is bounded, and so is stream manager memory.
    assert!(
        (emitted_slow as f64) < slow_elapsed * 2.0 * RATE as f64 * 0.5,
        "spouts were not throttled: emitted {emitted_slow} in {slow_elapsed:.0}s"
    );
    assert!(
        max_rss < 150 << 20,
        "stream manager memory grew to {} MB",
        max_rss >> 20
    );
    let half = samples.len() / 2;
    let growth = samples.last().unwrap().1 as i64 - samples[half].1 as i64;
    assert!(
        growth < 30,
        "stream manager memory kept growing: +{growth} MB in the second half"
    );

    // The bolt speeds up: throughput recovers.
    std::thread::sleep(Duration::from_secs(5));
    let (e0, t0) = (total(&out, "slow"), Instant::now());
    std::thread::sleep(Duration::from_secs(5));
    let fast_rate = (total(&out, "slow") - e0) as f64 / t0.elapsed().as_secs_f64();
    eprintln!("after the slow phase: {fast_rate:.0} tuples/s (was {slow_rate:.0}/s)");
    assert!(
        fast_rate > 3.0 * slow_rate,
        "throughput did not recover: {fast_rate:.0}/s after, {slow_rate:.0}/s during"
    );
}

#[test]
fn selective_back_pressure_stops_only_the_spouts_upstream_of_the_slow_bolt() {
    const SECS: u64 = 15;
    let _serial = serial();
    let mut env = TestEnv::new();
    let out = submit_slow_bolt(
        &mut env,
        NAME,
        &[
            "--rate",
            &RATE.to_string(),
            "--slow-rate",
            &SLOW_RATE.to_string(),
            "--slow-secs",
            "120",
            "--selective",
            "true",
        ],
    );
    wait_for(Duration::from_secs(20), "both bolts to execute", || {
        (total(&out, "slow") > 0 && total(&out, "fast") > 0).then_some(())
    });
    let stmgrs = role_pids(&env, "stmgr");
    // The buffers on the way to the slow bolt (stream manager, sockets, the instance's
    // queues) fill first; then back pressure holds the source spouts: over a 2 s window they
    // emit less than half their rate. (Held, not stopped: each release lets them emit a
    // burst, and how often that comes depends on the watermarks' band, not on this test.)
    let mut window = (Instant::now(), total(&out, "source"));
    Wait::new("the source spouts to be held")
        .timeout(Duration::from_secs(50))
        .every(Duration::from_millis(400))
        .until(|| {
            let (t0, n0) = window;
            let secs = t0.elapsed().as_secs_f64();
            if secs < 2.0 {
                return false;
            }
            let now = total(&out, "source");
            window = (Instant::now(), now);
            (now.saturating_sub(n0) as f64) < 0.5 * secs * 2.0 * RATE as f64
        });
    let start = Instant::now();
    let (source0, steady0) = (total(&out, "source"), total(&out, "steady"));
    let mut max_rss = 0;
    // the longest time the steady spouts' count did not move
    let (mut last_steady, mut moved_at, mut longest_stall) = (steady0, start, Duration::ZERO);
    while start.elapsed() < Duration::from_secs(SECS) {
        std::thread::sleep(Duration::from_millis(250));
        max_rss = max_rss.max(stmgrs.iter().map(|&p| rss(p)).max().unwrap_or(0));
        let now = total(&out, "steady");
        if now != last_steady {
            (last_steady, moved_at) = (now, Instant::now());
        }
        longest_stall = longest_stall.max(moved_at.elapsed());
    }
    let secs = start.elapsed().as_secs_f64();
    let source = total(&out, "source") - source0;
    let steady = total(&out, "steady") - steady0;
    let (fast, slow) = (total(&out, "fast"), total(&out, "slow"));
    let full = secs * 2.0 * RATE as f64;
    eprintln!(
        "selective, {secs:.0}s: source emitted {source} ({:.0}% of its rate), steady emitted \
         {steady} ({:.0}%); slow executed {slow}, fast executed {fast}; max stmgr RSS {} MB",
        100.0 * source as f64 / full,
        100.0 * steady as f64 / full,
        max_rss >> 20
    );
    // The source spouts were held (the wait above: under half their rate). Each release lets them
    // push out what their instances queued meanwhile (out-queues, socket buffers), so they
    // run in bursts, below their rate on average; the other path never stops and runs at
    // full rate.
    eprintln!("longest stall of the steady spouts: {longest_stall:?}");
    assert!(
        (source as f64) < 0.9 * full,
        "the spouts feeding the slow bolt were not throttled"
    );
    assert!(
        (steady as f64) > 0.9 * full,
        "the spouts of the other path were throttled too"
    );
    assert!(
        longest_stall < Duration::from_millis(1500),
        "the spouts of the other path stalled for {longest_stall:?}"
    );
    assert!(max_rss < 150 << 20, "stream manager memory grew");
}

#[test]
fn the_tracker_names_the_slow_bolt_as_the_cause_of_back_pressure() {
    let _serial = serial();
    let mut env = TestEnv::new();
    submit_slow_bolt(
        &mut env,
        NAME,
        &[
            "--rate",
            &RATE.to_string(),
            "--slow-rate",
            "1000",
            "--slow-secs",
            "600",
        ],
    );
    let tracker = local_tracker(&env);
    let path = format!(
        "/topologies/backpressure?cluster=local&environ=default&topology={NAME}&interval=10"
    );
    let bp = wait_for(
        Duration::from_secs(90),
        "the slow bolt reported as causing back pressure",
        || {
            let got = support::http::get(tracker.addr, &path);
            if got.status != 200 {
                return None;
            }
            let v = got.json();
            let slow = v["causes"]["slow"].as_object()?;
            let held = v["throttled"]["source"].as_object()?;
            (slow.values().any(|ms| ms.as_f64() > Some(0.0)) && !held.is_empty()).then_some(v)
        },
    );
    eprintln!("back pressure: {bp}");
    let causes: Vec<&String> = bp["causes"].as_object().unwrap().keys().collect();
    assert_eq!(causes, ["slow"], "only the slow bolt causes it: {bp}");
    for id in bp["causes"]["slow"].as_object().unwrap().keys() {
        assert!(id.contains("_slow_"), "an instance of the slow bolt: {id}");
    }
    // The same figure through Heron's metrics API, on the stream managers' component.
    let id = bp["causes"]["slow"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap();
    let metric = format!("__time_spent_back_pressure_by_compid/{id}");
    let m = support::http::get(
        tracker.addr,
        &format!(
            "/topologies/metrics?cluster=local&environ=default&topology={NAME}\
             &component=__stmgr__&metricname={metric}&interval=-1"
        ),
    )
    .json();
    let ms: f64 = m["metrics"][&metric]
        .as_object()
        .map(|o| {
            o.values()
                .filter_map(|v| v.as_str()?.parse::<f64>().ok())
                .sum()
        })
        .unwrap_or(0.0);
    eprintln!("{metric}: {ms} ms");
    assert!(ms > 0.0, "{m}");
}
