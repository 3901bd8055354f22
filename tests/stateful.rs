//! Effectively once end to end: `stateful_word_count` (EFFECTIVELY_ONCE, 2 containers,
//! parallelism 2, a checkpoint every second) counts the words of a generated file while a
//! random role process (tmaster, stream manager, checkpoint manager or instance) is killed
//! with SIGKILL every few seconds. The counts it writes must equal the exact counts, however
//! many restores that took.
//!
//! `HERONRS_EO_LINES`, `HERONRS_EO_RATE` and `HERONRS_EO_KILL_EVERY_MS` size a longer run
//! (defaults: 40 000 lines at 4 000 lines/s, a kill every 3 s).

mod support;

use heron_statemgr::StateManagerExt;
use heron_testkit::Wait;
use rand::{RngExt, SeedableRng};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};
use support::chaos::killer;
use support::{fresh_example, TestEnv};

static SERIAL: Mutex<()> = Mutex::new(());

fn env_or(key: &str, default: u64) -> u64 {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Writes `lines` sentences of 8 words from a 200-word vocabulary; returns the exact counts.
fn generate(path: &Path, lines: u64, seed: u64) -> BTreeMap<String, i64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let vocab: Vec<String> = (0..200).map(|i| format!("w{i:03}")).collect();
    let mut counts = BTreeMap::new();
    let mut text = String::new();
    for _ in 0..lines {
        for k in 0..8 {
            let w = &vocab[rng.random_range(0..vocab.len())];
            *counts.entry(w.clone()).or_insert(0) += 1;
            if k > 0 {
                text.push(' ');
            }
            text.push_str(w);
        }
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
    counts
}

fn read_counts(path: &Path) -> BTreeMap<String, i64> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("reading the output {}: {e}", path.display()))
        .lines()
        .map(|l| {
            let (w, c) = l.split_once('\t').expect("word<TAB>count");
            (w.to_string(), c.parse().expect("a count"))
        })
        .collect()
}

/// Starts `stateful_word_count` over `<dir>/input.txt` into `<dir>/counts.tsv` with its
/// checkpoints under `<dir>/checkpoints`, 2 containers, parallelism 2, and `extra`; its
/// output is kept with `capture` (read it: a full pipe would stop it).
fn start(env: &TestEnv, dir: &Path, extra: &[&str], capture: bool) -> std::process::Child {
    let out = if capture {
        Stdio::piped()
    } else {
        Stdio::null()
    };
    Command::new(fresh_example("stateful_word_count"))
        .args(["--input".as_ref(), dir.join("input.txt").as_os_str()])
        .args(["--output".as_ref(), dir.join("counts.tsv").as_os_str()])
        .args([
            "--checkpoint-root".as_ref(),
            dir.join("checkpoints").as_os_str(),
        ])
        .args(["--containers", "2", "--parallelism", "2"])
        .args(extra)
        .env("HOME", env.home())
        .stdout(out)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start stateful_word_count")
}

/// Restores the tmasters of the run started (their log survives their restarts).
fn restores_started(env: &TestEnv) -> usize {
    let Some(dir) = env.working_dir("StatefulWordCount") else {
        return 0;
    };
    std::fs::read_to_string(dir.join("log-files/tmaster.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("restoring the topology checkpoint="))
        .count()
}

#[test]
fn exact_counts_while_random_processes_are_killed() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lines = env_or("HERONRS_EO_LINES", 40_000);
    let rate = env_or("HERONRS_EO_RATE", 4_000);
    let every = Duration::from_millis(env_or("HERONRS_EO_KILL_EVERY_MS", 3_000));
    let seed = env_or("HERONRS_EO_SEED", 7);
    let env = TestEnv::new();
    let dir = env.home().join("eo");
    std::fs::create_dir_all(&dir).unwrap();
    let (input, output) = (dir.join("input.txt"), dir.join("counts.tsv"));
    let expected = generate(&input, lines, seed);
    let started = Instant::now();
    let rate = rate.to_string();
    let extra = ["--checkpoint-interval", "1s", "--timeout", "10m"];
    let mut child = start(
        &env,
        &dir,
        &[&extra[..], &["--max-lines-per-sec", &rate]].concat(),
        true,
    );
    let (stop, stopped) = mpsc::channel();
    let kills = std::thread::scope(|s| {
        let env = &env;
        let k = s.spawn(move || killer(env, every, stopped, seed));
        let status = Wait::new("stateful_word_count to finish")
            .timeout(Duration::from_secs(600))
            .every(Duration::from_millis(100))
            .try_until(|| child.try_wait().unwrap())
            .ok();
        if status.is_none() {
            let _ = child.kill();
        }
        drop(stop);
        let kills = k.join().unwrap();
        let mut out = String::new();
        let mut err = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let last = out.lines().last().unwrap_or_default().to_string();
        println!("{out}");
        if !status.is_some_and(|s| s.success()) {
            env.dump_logs("StatefulWordCount");
            panic!("stateful_word_count did not finish ({status:?}):\n{out}\n{err}");
        }
        let restores = restores_started(env);
        println!(
            "{lines} lines in {:.1}s, kills {kills:?}, restores {restores}; {last}",
            started.elapsed().as_secs_f64()
        );
        kills
    });
    let got = read_counts(&output);
    let diff: Vec<_> = expected
        .iter()
        .filter(|(w, c)| got.get(*w) != Some(c))
        .take(5)
        .collect();
    assert!(
        got == expected,
        "counts differ (kills {kills:?}): e.g. expected {diff:?}, got {:?}",
        diff.iter().map(|(w, _)| got.get(*w)).collect::<Vec<_>>()
    );
    assert!(
        kills.len() >= 3,
        "the run was too short to kill processes of most roles: {kills:?}"
    );
}

/// The consistent checkpoint ids recorded for the run, newest first.
fn consistent(env: &TestEnv) -> Vec<String> {
    let state = heron_statemgr::LocalFsStateManager::new(env.state_root());
    let list: Option<heron_proto::ckptmgr::StatefulConsistentCheckpoints> = state
        .get_proto(
            heron_statemgr::StateDir::StatefulCheckpoints,
            "StatefulWordCount",
        )
        .ok()
        .flatten();
    list.into_iter()
        .flat_map(|l| l.consistent_checkpoints)
        .map(|c| c.checkpoint_id)
        .filter(|id| !id.is_empty())
        .collect()
}

/// A checkpoint whose files were damaged is refused by the checkpoint manager when the
/// topology rolls back to it; the tmaster falls back to the previous one and the counts still
/// come out exact.
#[test]
fn a_corrupt_newest_checkpoint_falls_back_to_the_previous_one() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let env = TestEnv::new();
    let dir = env.home().join("eo");
    std::fs::create_dir_all(&dir).unwrap();
    let (input, output, root) = (
        dir.join("input.txt"),
        dir.join("counts.tsv"),
        dir.join("checkpoints"),
    );
    // 40 s of input at 1 500 lines/s: the run must outlast the checks below (debug build, CI)
    let expected = generate(&input, 60_000, 3);
    let extra = ["--checkpoint-interval", "3s", "--timeout", "5m"];
    let mut child = start(
        &env,
        &dir,
        &[&extra[..], &["--max-lines-per-sec", "1500"]].concat(),
        false,
    );
    // two consistent checkpoints, then damage every file of the newest as soon as it appears
    let before = support::wait_for(
        Duration::from_secs(120),
        "two consistent checkpoints",
        || {
            let c = consistent(&env);
            (c.len() >= 2).then_some(c)
        },
    );
    // the tracker shows the history
    let tracker = support::local_tracker(&env);
    let path = "/topologies/checkpoints?cluster=local&environ=default&topology=StatefulWordCount";
    let got = support::http::get(tracker.addr, path);
    assert_eq!(got.status, 200, "{}", got.body);
    let v = got.json();
    assert_eq!(v["reliability_mode"], "EFFECTIVELY_ONCE", "{v}");
    assert_eq!(v["checkpoint_interval_seconds"], 3, "{v}");
    let listed = v["consistent_checkpoints"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(listed.len() >= 2, "{v}");
    assert!(v["restores"].as_u64().is_some_and(|r| r >= 1), "{v}");
    // heronpy parses the checkpoint list (and the other nodes)
    let check = Command::new(support::heron_python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_state.py"))
        .arg(env.state_root())
        .arg("StatefulWordCount")
        .output()
        .expect("run check_state.py");
    assert!(
        check.status.success(),
        "heronpy could not parse our state: {}",
        String::from_utf8_lossy(&check.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    let ids = summary["consistent_checkpoints"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(ids.iter().any(|i| *i == before[0]), "{summary}");
    let newest = support::wait_for(
        Duration::from_secs(30),
        "a newer consistent checkpoint",
        || {
            let c = consistent(&env);
            c.first().filter(|n| **n != before[0]).cloned()
        },
    );
    let ckpt_dir = root.join("StatefulWordCount").join(&newest);
    let mut damaged = 0;
    for component in std::fs::read_dir(&ckpt_dir).unwrap().flatten() {
        for task in std::fs::read_dir(component.path()).unwrap().flatten() {
            let bytes = std::fs::read(task.path()).unwrap();
            std::fs::write(task.path(), &bytes[..bytes.len() / 2]).unwrap();
            damaged += 1;
        }
    }
    assert!(
        damaged >= 6,
        "every task's file of {newest} damaged, found {damaged}"
    );
    let count = support::component_pids(&env, "count");
    // SAFETY: kill(2) on a pid read from /proc
    assert_eq!(unsafe { libc::kill(count[0], libc::SIGKILL) }, 0);
    let status = support::wait_for(
        Duration::from_secs(240),
        "stateful_word_count to finish",
        || child.try_wait().unwrap(),
    );
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let log = env
        .working_dir("StatefulWordCount")
        .map(|d| std::fs::read_to_string(d.join("log-files/tmaster.log")).unwrap_or_default())
        .unwrap_or_default();
    if !status.success() {
        env.dump_logs("StatefulWordCount");
        panic!("stateful_word_count failed: {status:?}\n{err}");
    }
    assert!(
        log.lines()
            .any(|l| l.contains("restore failed") && l.contains(&newest)),
        "the tmaster never saw the restore of {newest} fail"
    );
    assert_eq!(read_counts(&output), expected, "counts after the fallback");
}
