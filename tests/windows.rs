//! Event-time windows end to end: `event_time_windows` (2 containers, ATLEAST_ONCE, a windowed
//! bolt of 2 tasks) over 100 000 generated records, out of order within the lag and some later
//! than that, must write exactly the windows a straightforward reference computes here, for
//! tumbling, sliding and session windows, and exactly the late records. The same holds
//! EFFECTIVELY_ONCE while random role processes are killed: the pending windows are part of
//! each windowed task's checkpoint.

mod support;

use rand::{RngExt, SeedableRng};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use support::chaos::killer;
use support::{fresh_example, TestEnv};

const RECORDS: usize = 100_000;
const LAG_MS: i64 = 2_000;

/// `(ts, key, value)` in file order: bursts of records (time advancing a few ms each, most
/// out of order by up to the lag, one in 150 later than that) with quiet gaps of 4 to 8 s
/// between bursts (so sessions close), over 24 keys of uneven frequency.
fn generate(seed: u64) -> Vec<(i64, i64, i64)> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut t: i64 = 1_700_000_000_000;
    let mut out = Vec::with_capacity(RECORDS);
    while out.len() < RECORDS {
        for _ in 0..rng.random_range(500..3_000) {
            t += rng.random_range(0..12);
            let key = (rng.random_range(0..24u32) * rng.random_range(1..4u32) / 3) as i64;
            let ts = if rng.random_range(0..150) == 0 {
                t - LAG_MS - rng.random_range(1..6_000)
            } else {
                t - rng.random_range(0..=LAG_MS)
            };
            out.push((ts, key, rng.random_range(0..1_000)));
        }
        t += rng.random_range(4_000..8_000);
    }
    out.truncate(RECORDS);
    out
}

/// The watermark each record is judged by: the largest event time before it, minus the lag.
fn watermarks_before(records: &[(i64, i64, i64)]) -> Vec<i64> {
    let mut max = i64::MIN;
    records
        .iter()
        .map(|&(ts, _, _)| {
            let w = max.saturating_sub(LAG_MS);
            max = max.max(ts);
            w
        })
        .collect()
}

type Lines = Vec<(i64, i64, i64, i64, i64)>;
type Late = Vec<(i64, i64, i64)>;

/// Windows `[k·slide, k·slide + size)`: a record counts in each of its windows that is still
/// open when it arrives (the watermark before it has not reached the window's end).
fn reference_aligned(records: &[(i64, i64, i64)], size: i64, slide: i64) -> (Lines, Late) {
    let before = watermarks_before(records);
    let mut acc: BTreeMap<(i64, i64), (i64, i64)> = BTreeMap::new();
    let mut late = Vec::new();
    for (&(ts, key, value), &w) in records.iter().zip(&before) {
        let mut placed = false;
        let mut s = ts.div_euclid(slide) * slide;
        while s + size > ts {
            if s + size > w {
                let e = acc.entry((s, key)).or_default();
                e.0 += value;
                e.1 += 1;
                placed = true;
            }
            s -= slide;
        }
        if !placed {
            late.push((ts, key, value));
        }
    }
    let lines = acc
        .into_iter()
        .map(|((s, key), (sum, n))| (s, s + size, key, sum, n))
        .collect();
    late.sort_unstable();
    (lines, late)
}

/// Sessions per key, simulated naively: a record joins (and merges) every open session of
/// its key that its `[ts, ts + gap)` overlaps or touches; it is late when it touches none
/// and that range has closed; sessions close when the watermark reaches their end.
fn reference_sessions(records: &[(i64, i64, i64)], gap: i64) -> (Lines, Late) {
    let before = watermarks_before(records);
    // (key, start, end, sum, count)
    let mut open: Vec<(i64, i64, i64, i64, i64)> = Vec::new();
    let mut closed = Vec::new();
    let mut late = Vec::new();
    for (i, &(ts, key, value)) in records.iter().enumerate() {
        let w = before[i];
        let (mut s, mut e, mut sum, mut n) = (ts, ts + gap, value, 1);
        let touching: Vec<usize> = (0..open.len())
            .filter(|&j| open[j].0 == key && open[j].1 <= e && open[j].2 >= s)
            .collect();
        if touching.is_empty() && e <= w {
            late.push((ts, key, value));
        } else {
            for &j in touching.iter().rev() {
                let o = open.remove(j);
                s = s.min(o.1);
                e = e.max(o.2);
                sum += o.3;
                n += o.4;
            }
            open.push((key, s, e, sum, n));
        }
        let next = before.get(i + 1).copied().unwrap_or(i64::MAX);
        open.retain(|o| {
            let done = o.2 <= next;
            if done {
                closed.push((o.1, o.2, o.0, o.3, o.4));
            }
            !done
        });
    }
    closed.extend(open.iter().map(|o| (o.1, o.2, o.0, o.3, o.4)));
    closed.sort_unstable();
    late.sort_unstable();
    (closed, late)
}

fn read_lines<const N: usize>(path: &Path) -> Vec<[i64; N]> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
        .lines()
        .map(|l| {
            let v: Vec<i64> = l
                .split('\t')
                .map(|x| x.parse().expect("an integer"))
                .collect();
            v.try_into().unwrap_or_else(|v| panic!("{N} fields: {v:?}"))
        })
        .collect()
}

/// Runs the example over `records` with `args`; returns what it wrote.
fn run(name: &str, records: &[(i64, i64, i64)], args: &[&str]) -> (Lines, Late) {
    run_with_kills(name, records, args, None)
}

/// [`run`], killing a random role process `every` while the example runs (then the kills
/// per role are printed and at least 3 roles must have been hit).
fn run_with_kills(
    name: &str,
    records: &[(i64, i64, i64)],
    args: &[&str],
    every: Option<Duration>,
) -> (Lines, Late) {
    let env = TestEnv::new();
    let dir = env.home().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("records.tsv");
    let output = dir.join("windows.tsv");
    let text: String = records
        .iter()
        .map(|(t, k, v)| format!("{t}\t{k}\t{v}\n"))
        .collect();
    std::fs::write(&input, text).unwrap();
    let start = Instant::now();
    let mut cmd = Command::new(fresh_example("event_time_windows"));
    cmd.args(["--input".as_ref(), input.as_os_str()])
        .args(["--output".as_ref(), output.as_os_str()])
        .args(args)
        .args(["--lag", "2s"]);
    let what = format!("event_time_windows {args:?}");
    let (stdout, kills) = std::thread::scope(|s| {
        let (stop, stopped) = mpsc::channel::<()>();
        let env = &env;
        let killer = every.map(|every| s.spawn(move || killer(env, every, stopped, 11)));
        let stdout = support::run_to_success(env, &mut cmd, &what, Duration::from_secs(300));
        drop(stop);
        (stdout, killer.map(|k| k.join().unwrap()))
    });
    eprintln!(
        "{name}: {:.1}s, kills {kills:?}; {}",
        start.elapsed().as_secs_f64(),
        stdout.trim()
    );
    if let Some(kills) = kills {
        assert!(kills.len() >= 3, "too few roles were killed: {kills:?}");
    }
    let lines = read_lines::<5>(&output)
        .into_iter()
        .map(|[a, b, c, d, e]| (a, b, c, d, e))
        .collect();
    let late = read_lines::<3>(&dir.join("windows.tsv.late"))
        .into_iter()
        .map(|[a, b, c]| (a, b, c))
        .collect();
    (lines, late)
}

fn check(name: &str, got: (Lines, Late), want: (Lines, Late)) {
    assert!(
        !want.0.is_empty() && !want.1.is_empty(),
        "{name}: a meaningful input: {} windows, {} late",
        want.0.len(),
        want.1.len()
    );
    assert_eq!(got.1.len(), want.1.len(), "{name}: late records");
    assert_eq!(got.1, want.1, "{name}: late records");
    assert_eq!(got.0.len(), want.0.len(), "{name}: windows");
    for (g, w) in got.0.iter().zip(&want.0) {
        assert_eq!(g, w, "{name}: (start, end, key, sum, count)");
    }
}

#[test]
fn tumbling_event_time_windows_are_exact() {
    let records = generate(1);
    let got = run("tumbling", &records, &["--window", "10s"]);
    check("tumbling", got, reference_aligned(&records, 10_000, 10_000));
}

#[test]
fn sliding_event_time_windows_are_exact() {
    let records = generate(2);
    let got = run("sliding", &records, &["--window", "10s", "--slide", "5s"]);
    check("sliding", got, reference_aligned(&records, 10_000, 5_000));
}

#[test]
fn session_windows_are_exact() {
    let records = generate(3);
    let got = run("session", &records, &["--session-gap", "3s"]);
    let want = reference_sessions(&records, 3_000);
    assert!(
        want.0.iter().any(|w| w.1 - w.0 > 3_000),
        "some sessions span several records"
    );
    check("session", got, want);
}

/// EFFECTIVELY_ONCE (a checkpoint every second) over 24 000 records at 2 000 a second, a
/// random tmaster, stream manager, checkpoint manager or instance killed every 2 s: tumbling
/// windows, sessions and late records come out exactly as without faults.
#[test]
fn windows_stay_exact_effectively_once_while_processes_are_killed() {
    let mut records = generate(4);
    records.truncate(24_000);
    let eo = [
        "--reliability",
        "effectively",
        "--checkpoint-interval",
        "1s",
        "--max-records-per-sec",
        "2000",
    ];
    let every = Some(Duration::from_secs(2));
    let tumbling = [&["--window", "10s"][..], &eo].concat();
    let got = run_with_kills("eo-tumbling", &records, &tumbling, every);
    check(
        "eo-tumbling",
        got,
        reference_aligned(&records, 10_000, 10_000),
    );
    let session = [&["--session-gap", "3s"][..], &eo].concat();
    let got = run_with_kills("eo-session", &records, &session, every);
    check("eo-session", got, reference_sessions(&records, 3_000));
}
