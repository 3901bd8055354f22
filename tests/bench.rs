//! The bench harness (examples/bench): short runs of each topology with `--json`, checked for
//! the JSON's shape and sanity (never for speed), and for leaving no process behind.

mod support;

use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::Duration;
use support::{fresh_example, processes_mentioning, wait_for, TestEnv};

/// Runs the bench with this env's HOME; returns (exit code, stdout, stderr).
fn bench(env: &TestEnv, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(fresh_example("bench"))
        .args(args)
        .env("HOME", env.home())
        .env("USER", "tester")
        .stdin(Stdio::null())
        .output()
        .expect("run the bench");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_no_process_left(env: &TestEnv) {
    let home = env.home().to_string_lossy().to_string();
    let left = wait_for(Duration::from_secs(10), "processes to exit", || {
        let p = processes_mentioning(&home);
        p.is_empty().then_some(p)
    });
    assert!(left.is_empty(), "processes left: {left:?}");
}

/// Runs one short bench and checks what every run must report.
fn run_json(topology: &str, reliability: &str, extra: &[&str]) -> Value {
    let env = TestEnv::new();
    let mut args = vec![
        "--topology",
        topology,
        "--reliability",
        reliability,
        "--duration",
        "5s",
        "--json",
    ];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = bench(&env, &args);
    assert_eq!(
        code, 0,
        "bench failed:\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one JSON line:\n{stdout}");
    let v: Value = serde_json::from_str(lines[0]).expect("the output is JSON");
    assert_eq!(v["topology"], topology, "{v}");
    assert_eq!(v["reliability"], reliability, "{v}");
    assert_eq!(v["duration_s"].as_f64(), Some(5.0), "{v}");
    for key in [
        "tuples_per_sec",
        "emitted_per_sec",
        "acked_per_sec",
        "latency_p50_us",
        "latency_p99_us",
    ] {
        assert!(v[key].is_number(), "{key} missing: {v}");
    }
    assert!(v["failed"].is_u64(), "{v}");
    assert!(v["tuples_per_sec"].as_f64().unwrap() > 0.0, "{v}");
    assert!(v["emitted_per_sec"].as_f64().unwrap() > 0.0, "{v}");
    let p50 = v["latency_p50_us"].as_f64().unwrap();
    let p99 = v["latency_p99_us"].as_f64().unwrap();
    assert!(p50 > 0.0 && p99 >= p50, "{v}");
    if reliability == "atmost" {
        assert_eq!(v["failed"].as_u64(), Some(0), "{v}");
        assert_eq!(v["latency_kind"], "end-to-end", "{v}");
    } else {
        assert_eq!(v["latency_kind"], "complete", "{v}");
        assert!(v["acked_per_sec"].as_f64().unwrap() > 0.0, "{v}");
    }
    for role in ["tmaster", "stmgr", "instance"] {
        let r = &v["roles"][role];
        assert!(
            r["peak_rss_mb"].as_f64().unwrap_or(0.0) > 0.0,
            "{role}: {v}"
        );
        assert!(r["cpu_s"].as_f64().is_some(), "{role}: {v}");
    }
    assert_eq!(v["processes_left"].as_u64(), Some(0), "{v}");
    assert_no_process_left(&env);
    v
}

#[test]
fn const_null_atmost_reports_json() {
    let v = run_json("const-null", "atmost", &[]);
    assert!(v.get("words_per_sec").is_none(), "{v}");
}

#[test]
fn const_id_null_atleast_reports_complete_latency() {
    let v = run_json(
        "const-id-null",
        "atleast",
        &["--containers", "1", "--max-spout-pending", "500"],
    );
    assert_eq!(v["containers"].as_u64(), Some(1), "{v}");
    assert_eq!(v["max_spout_pending"].as_u64(), Some(500), "{v}");
}

#[test]
fn word_count_with_timely_peer_reports_a_ratio() {
    let v = run_json(
        "word-count",
        "atmost",
        &["--rate", "20000", "--peer", "timely"],
    );
    assert!(v["words_per_sec"].as_f64().unwrap() > 0.0, "{v}");
    assert!(v["timely_words_per_sec"].as_f64().unwrap() > 0.0, "{v}");
    // both are capped at 20 000 sentences/s: about the same number of words each
    let ratio = v["ratio"].as_f64().unwrap();
    assert!((0.5..2.0).contains(&ratio), "{v}");
    // with a cap, timely's end-to-end latency is measured too
    assert!(v["timely_latency_samples"].as_u64().unwrap() > 0, "{v}");
    let p50 = v["timely_latency_p50_us"].as_f64().unwrap();
    let p99 = v["timely_latency_p99_us"].as_f64().unwrap();
    assert!(p50 > 0.0 && p99 >= p50, "{v}");
}

#[test]
fn word_count_with_relay_peer_reports_the_floor() {
    let v = run_json("word-count", "atmost", &["--peer", "relay"]);
    // the relay floor forwards bare frames: it counts words, and more of them than we do
    let relay = v["relay_words_per_sec"].as_f64().unwrap();
    assert!(relay > 0.0, "{v}");
    assert_eq!(v["relay_window"].as_u64(), Some(0), "{v}");
    assert!(v["relay_total_words"].as_u64().unwrap() > 0, "{v}");
    let ratio = v["ratio"].as_f64().unwrap();
    assert!(ratio > 0.0 && ratio < 2.0, "{v}");
    // it runs flat out only
    let env = TestEnv::new();
    let (code, _, stderr) = bench(
        &env,
        &[
            "--topology",
            "word-count",
            "--peer",
            "relay",
            "--rate",
            "10",
        ],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--rate"), "{stderr}");
}

#[test]
fn word_count_at_least_once_with_relay_peer_acks_in_the_same_window() {
    let v = run_json(
        "word-count",
        "atleast",
        &[
            "--peer",
            "relay",
            "--max-spout-pending",
            "20",
            "--conf",
            "heron-rs.local.cpu.pinning=core",
        ],
    );
    // the acked relay keeps 20 sentences (160 words) in flight per spout: only trees that
    // complete, again and again, let it count more than a few windows' words
    assert_eq!(v["relay_window"].as_u64(), Some(20), "{v}");
    let total = v["relay_total_words"].as_u64().unwrap();
    assert!(total > 100 * 2 * 160, "{v}");
    assert!(v["relay_words_per_sec"].as_f64().unwrap() > 0.0, "{v}");
    assert!(v["ratio"].as_f64().unwrap() > 0.0, "{v}");
    assert_eq!(v["failed"].as_u64(), Some(0), "{v}");
    // it has no effectively-once mode
    let env = TestEnv::new();
    let (code, _, stderr) = bench(
        &env,
        &[
            "--topology",
            "word-count",
            "--reliability",
            "effectively",
            "--peer",
            "relay",
        ],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("effectively-once"), "{stderr}");
}

#[test]
fn bad_arguments_exit_2_and_name_the_argument() {
    let env = TestEnv::new();
    for (args, name) in [
        (vec!["--topology", "nope"], "--topology"),
        (
            vec!["--topology", "const-null", "--frobnicate"],
            "--frobnicate",
        ),
        (vec!["--topology", "const-null", "--rate", "x"], "--rate"),
        (vec!["--reliability", "atmost"], "--topology"),
    ] {
        let (code, stdout, stderr) = bench(&env, &args);
        assert_eq!(code, 2, "{args:?}: {stdout} {stderr}");
        assert!(stderr.contains(name), "{args:?}: {stderr}");
    }
    assert_no_process_left(&env);
}

#[test]
fn hop_cost_measures_every_mechanism_and_refuses_bad_arguments() {
    let env = TestEnv::new();
    let (code, stdout, stderr) = bench(
        &env,
        &[
            "hop-cost",
            "--size",
            "512",
            "--round-trips",
            "300",
            "--cpus",
            "0,0",
        ],
    );
    assert_eq!(code, 0, "{stdout} {stderr}");
    // one line per mechanism, each with a positive wall time per hop (the echoes were checked)
    for m in ["tcp", "unix", "futex"] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(m))
            .unwrap_or_else(|| panic!("no {m} line: {stdout}"));
        let us: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!(us > 0.0, "{line}");
    }
    for args in [
        vec!["hop-cost", "--cpus", "0"],
        vec!["hop-cost", "--size", "x"],
        // a CPU this machine does not have: refused before any peer starts
        vec!["hop-cost", "--cpus", "0,100000"],
    ] {
        let (code, _, stderr) = bench(&env, &args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(args[1]), "{args:?}: {stderr}");
    }
    assert_no_process_left(&env);
}
