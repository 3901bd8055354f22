//! Unmodified pystorm and streamparse components in Flux files, run by `heron submit local
//! topology.yaml` on the local scheduler: exact counts, the streamparse-generated file, and a
//! Python subprocess that raises, hangs and is killed -9 mid-run.
//!
//! The components live in `tests/multilang/`; the Python is [`support::heron_python`]'s
//! virtualenv (pystorm, streamparse), put first on the topology's `PATH` so `python3` and
//! `streamparse_run` are its own, as a user's virtualenv would be.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use heron_testkit::Wait;
use support::{assert_ok, TestEnv};

const WAIT: Duration = Duration::from_secs(180);

/// The words of `tests/multilang/pystorm_wc/sentence_spout.py` and its `sentence(i)`.
const WORDS: [&str; 20] = [
    "the", "cow", "jumped", "over", "moon", "an", "apple", "a", "day", "keeps", "doctor", "away",
    "four", "score", "and", "seven", "years", "ago", "snow", "white",
];

fn sentence_words(i: usize) -> impl Iterator<Item = &'static str> {
    (1..6).map(move |k| WORDS[(i * k + k) % WORDS.len()])
}

/// The exact counts of `n` sentences.
fn expected_counts(n: usize) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for i in 0..n {
        for w in sentence_words(i) {
            *counts.entry(w.to_string()).or_insert(0) += 1;
        }
    }
    counts
}

/// A test env whose topologies find the test virtualenv's `python3` and `streamparse_run`
/// first on their PATH.
fn python_env() -> TestEnv {
    let python = support::heron_python();
    let bin = python
        .parent()
        .expect("the venv's bin directory")
        .to_path_buf();
    let mut env = TestEnv::new();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![bin];
    dirs.extend(std::env::split_paths(&path));
    env.set_env("PATH", std::env::join_paths(dirs).expect("a PATH"));
    env
}

/// Copies `tests/multilang/<name>` into the env's HOME (each test its own copy: the Python
/// components write their files next to them) and returns the copy.
fn project(env: &TestEnv, name: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/multilang")
        .join(name);
    let dst = env.home().join("projects").join(name);
    copy_dir(&src, &dst);
    dst
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap().flatten() {
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            if e.file_name() != "__pycache__" {
                copy_dir(&e.path(), &to);
            }
        } else {
            std::fs::copy(e.path(), to).unwrap();
        }
    }
}

/// Writes the properties file for `tests/multilang/pystorm_wc/topology.yaml`.
fn properties(dir: &Path, entries: &[(&str, &str)]) -> PathBuf {
    let p = dir.join("test.properties");
    let text: String = entries.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    std::fs::write(&p, text).unwrap();
    p
}

/// The topology's `resources/` copy, where its shell components run.
fn resources(env: &TestEnv, name: &str) -> PathBuf {
    env.working_dir(name)
        .expect("the topology's working directory")
        .join("resources")
}

/// Reads every `<prefix>*.json` in `dir` that parses.
fn json_files(dir: &Path, prefix: &str) -> Vec<serde_json::Value> {
    heron_testkit::files(dir, prefix, ".json")
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .filter_map(|t| serde_json::from_str(&t).ok())
        .collect()
}

/// The sum over the spout tasks' progress files of `key`, and how many files there are.
fn spout_sum(dir: &Path, key: &str) -> (u64, usize) {
    let files = json_files(dir, "spout-");
    let sum = files.iter().map(|v| v[key].as_u64().unwrap_or(0)).sum();
    (sum, files.len())
}

/// The counts bolts' counts, merged.
fn counts(dir: &Path, prefix: &str) -> BTreeMap<String, u64> {
    let mut total = BTreeMap::new();
    for v in json_files(dir, prefix) {
        for (w, n) in v.as_object().into_iter().flatten() {
            *total.entry(w.clone()).or_insert(0) += n.as_u64().unwrap_or(0);
        }
    }
    total
}

/// Waits until both spout tasks have every one of their `n` sentences acked.
fn wait_all_acked(env: &TestEnv, name: &str, n: u64) {
    let dir = resources(env, name);
    Wait::new(format!("all {n} sentences acked (spout-*.json)"))
        .timeout(WAIT)
        .every(Duration::from_millis(250))
        .try_until(|| {
            let (acked, files) = spout_sum(&dir, "acked");
            let (total, _) = spout_sum(&dir, "total");
            (files == 2 && total == n && acked == n).then_some(())
        })
        .unwrap_or_else(|e| {
            env.dump_logs(name);
            panic!("{e}: {:?}", spout_sum(&dir, "acked"))
        });
}

#[test]
fn pystorm_word_count_from_a_flux_file_is_exact() {
    const N: usize = 2000;
    const NAME: &str = "PystormWordCount";
    let mut env = python_env();
    let dir = project(&env, "pystorm_wc");
    let props = properties(
        &dir,
        &[
            ("topology.name", NAME),
            ("sentences", &N.to_string()),
            ("subprocess.timeout", "30"),
            ("boom", "false"),
            ("hang", "false"),
        ],
    );
    let out = env.submit(
        NAME,
        &dir.join("topology.yaml"),
        &["--filter", props.to_str().unwrap()],
    );
    assert_ok(&out, "heron submit local topology.yaml");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("loaded the Flux file"), "{stdout}");

    wait_all_acked(&env, NAME, N as u64);
    let res = resources(&env, NAME);
    let want = expected_counts(N);
    Wait::new("the count bolts to write exact counts (counts-*.json)")
        .timeout(WAIT)
        .every(Duration::from_millis(250))
        .try_until(|| (counts(&res, "counts-") == want).then_some(()))
        .unwrap_or_else(|e| panic!("{e}: got {:?}, want {want:?}", counts(&res, "counts-")));
    // nothing failed: every sentence went through once
    assert_eq!(spout_sum(&res, "failed").0, 0);
    assert_eq!(spout_sum(&res, "emitted").0, N as u64);
    // topology.max.spout.pending (200 in the Flux file) bounds each shell spout task
    for v in json_files(&res, "spout-") {
        let most = v["max_in_flight"].as_u64().unwrap();
        assert!(
            most > 0 && most <= 200,
            "max in flight {most} (pending bound 200)"
        );
    }

    // The CLI's verbs reach the Python spouts: deactivate and activate are commands to them.
    let heron = |verb: &str| env.heron_in(verb, "local", &[], &[NAME]);
    let spouts_active = |want: bool| {
        Wait::new(format!("both Python spouts to report active = {want}"))
            .timeout(WAIT)
            .until(|| {
                let files = json_files(&res, "spout-");
                (files.len() == 2 && files.iter().all(|v| v["active"] == want)).then_some(())
            })
    };
    assert_ok(&heron("deactivate"), "heron deactivate");
    spouts_active(false);
    assert_ok(&heron("activate"), "heron activate");
    spouts_active(true);
    let list = env.heron_in("list", "local", &[], &[]);
    assert_ok(&list, "heron list");
    assert!(String::from_utf8_lossy(&list.stdout).contains(NAME));
    let wd = env.working_dir(NAME).expect("working dir");
    let pids = python_pids(&wd);
    assert_eq!(pids.len(), 6, "one Python process per task: {pids:?}");
    assert_ok(&env.kill(NAME), "heron kill");
    Wait::new("every Python subprocess to be gone after heron kill")
        .timeout(Duration::from_secs(20))
        .until(|| {
            pids.iter()
                .all(|p| !Path::new(&format!("/proc/{p}")).exists())
                .then_some(())
        });
}

/// The live pids the shell components' subprocesses wrote into their pid directories
/// (`<working dir>/pids/<component>-<task>/<pid>`).
fn python_pids(wd: &Path) -> Vec<i32> {
    let mut pids = Vec::new();
    for dir in std::fs::read_dir(wd.join("pids"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for f in std::fs::read_dir(dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Ok(pid) = f.file_name().to_string_lossy().parse::<i32>() {
                if Path::new(&format!("/proc/{pid}")).exists() {
                    pids.push(pid);
                }
            }
        }
    }
    pids
}

#[test]
fn a_bad_flux_file_is_refused_before_anything_starts() {
    let mut env = python_env();
    let dir = env.home().join("bad");
    std::fs::create_dir_all(&dir).unwrap();
    let flux = dir.join("topology.yaml");
    std::fs::write(
        &flux,
        "name: \"Bad\"\nspouts:\n  - id: \"kafka\"\n    className: \"org.apache.storm.kafka.KafkaSpout\"\n    parallelism: 1\nbolts:\n  - id: \"split\"\n    className: \"org.apache.storm.flux.wrappers.bolts.FluxShellBolt\"\n    constructorArgs: [[\"python3\", \"split.py\"], [\"word\"]]\nstreams:\n  - from: \"kafka\"\n    to: \"split\"\n    grouping: {type: PARTIAL_KEY}\n",
    )
    .unwrap();
    let out = env.submit("Bad", &flux, &[]);
    assert_eq!(out.status.code(), Some(1), "a refused submit exits 1");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("topology.yaml:4:"),
        "names the file and line: {err}"
    );
    assert!(err.contains("org.apache.storm.kafka.KafkaSpout"), "{err}");
    assert!(err.contains("PARTIAL_KEY"), "every problem at once: {err}");
    assert!(env.working_dir("Bad").is_none(), "nothing was started");

    // an undefined property names itself and its line; an unknown option is refused
    std::fs::write(&flux, "name: \"${nope}\"\n").unwrap();
    let out = env.submit("Bad", &flux, &["--env-filter"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("${nope}") && err.contains(":1:"),
        "{err}"
    );
    let out = env.submit("Bad", &flux, &["--local"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--local"), "{err}");
}

/// `split-started-<task>-<pid>.txt` files: (task, pid, start time in s).
fn split_starts(dir: &Path) -> Vec<(i64, i32, f64)> {
    heron_testkit::files(dir, "split-started-", ".txt")
        .into_iter()
        .filter_map(|p| {
            let name = p.file_stem()?.to_str()?.to_owned();
            let mut parts = name.trim_start_matches("split-started-").split('-');
            let task = parts.next()?.parse().ok()?;
            let pid = parts.next()?.parse().ok()?;
            let at = std::fs::read_to_string(&p).ok()?.trim().parse().ok()?;
            Some((task, pid, at))
        })
        .collect()
}

/// The first start of `task`'s split process after `after` (s since the epoch).
fn started_after(dir: &Path, task: i64, after: f64) -> Option<f64> {
    split_starts(dir)
        .into_iter()
        .filter(|&(t, _, at)| t == task && at > after)
        .map(|(_, _, at)| at)
        .min_by(f64::total_cmp)
}

fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
        .map(|c| c.contains("split.py"))
        .unwrap_or(false)
}

#[test]
fn a_python_bolt_that_raises_hangs_or_is_killed_is_restarted_and_its_tuples_replayed() {
    const N: usize = 10_000;
    const NAME: &str = "PystormFaults";
    const TIMEOUT_S: f64 = 3.0;
    let mut env = python_env();
    let tracker = support::local_tracker(&env);
    let dir = project(&env, "pystorm_wc");
    let props = properties(
        &dir,
        &[
            ("topology.name", NAME),
            ("sentences", &N.to_string()),
            ("subprocess.timeout", "3"),
            ("boom", "true"),
            ("hang", "true"),
        ],
    );
    let out = env.submit(
        NAME,
        &dir.join("topology.yaml"),
        &["--filter", props.to_str().unwrap()],
    );
    assert_ok(&out, "heron submit local topology.yaml");
    let res = resources(&env, NAME);
    let instances_before = support::component_pids(&env, "split");
    assert_eq!(instances_before.len(), 2, "two split instances");

    // A hung subprocess (no heartbeat reply) is replaced within the timeout plus a second.
    let (task, hung_at) = Wait::new("a split subprocess to hang (hang.marker)")
        .timeout(WAIT)
        .until(|| {
            let text = std::fs::read_to_string(res.join("hang.marker")).ok()?;
            let (task, at) = text.trim().split_once(' ')?;
            Some((task.parse::<i64>().ok()?, at.parse::<f64>().ok()?))
        });
    let restarted = Wait::new("the hung split subprocess to be replaced")
        .timeout(WAIT)
        .until(|| started_after(&res, task, hung_at));
    let took = restarted - hung_at;
    eprintln!("hung split (task {task}) replaced after {took:.2} s (timeout {TIMEOUT_S} s)");
    assert!(
        took <= TIMEOUT_S + 1.0,
        "the hung subprocess was replaced after {took:.2} s, more than the timeout + 1 s"
    );

    // kill -9 of a live split subprocess: it is started again.
    let (task, pid, _) = split_starts(&res)
        .into_iter()
        .find(|&(_, pid, _)| alive(pid))
        .expect("a live split subprocess");
    let killed_at = now_secs();
    // SAFETY: kill(2) with a pid read from a file our topology wrote; no memory involved.
    assert_eq!(
        unsafe { libc::kill(pid, libc::SIGKILL) },
        0,
        "kill -9 {pid}"
    );
    Wait::new("the killed split subprocess to be started again")
        .timeout(WAIT)
        .until(|| started_after(&res, task, killed_at));

    // Nothing acked is lost: every sentence is acked in the end, each word counted at least
    // as often as it occurs, and the failed trees were replayed.
    wait_all_acked(&env, NAME, N as u64);
    let (failed, _) = spout_sum(&res, "failed");
    assert!(
        failed > 0,
        "the subprocesses' pending tuples failed and were replayed"
    );
    let want = expected_counts(N);
    Wait::new("every word counted at least as often as it occurs")
        .timeout(WAIT)
        .until(|| {
            let got = counts(&res, "counts-");
            want.iter()
                .all(|(w, n)| got.get(w).copied().unwrap_or(0) >= *n)
                .then_some(())
        });

    // The instances themselves never died: only their subprocesses were restarted.
    let mut after = support::component_pids(&env, "split");
    let mut before = instances_before;
    after.sort_unstable();
    before.sort_unstable();
    assert_eq!(after, before, "the split instance processes are the same");

    // The pystorm exception reached the tracker with its message.
    let q = format!("cluster=local&environ=default&topology={NAME}&component=split");
    Wait::new("the split bolt's exception in /topologies/exceptions")
        .timeout(WAIT)
        .every(Duration::from_millis(500))
        .until(|| {
            let got = support::http::get(tracker.addr, &format!("/topologies/exceptions?{q}"));
            (got.status == 200 && got.body.contains("boom: split refused a sentence")).then_some(())
        });
}

#[test]
fn a_flux_file_generated_by_streamparse_runs_unmodified() {
    const NAME: &str = "wordcount";
    let mut env = python_env();
    // the project as streamparse lays it out; the generated Flux file is src/wordcount.yaml
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("flux/tests/fixtures/streamparse_wc");
    let dst = env.home().join("projects/streamparse_wc");
    copy_dir(&src, &dst);
    let flux = dst.join("src/wordcount.yaml");
    let text = std::fs::read_to_string(&flux).unwrap();
    assert!(
        text.contains("streamparse_run") && text.contains("spouts.words.WordSpout"),
        "the generated file runs streamparse components: {text}"
    );
    let out = env.submit(NAME, &flux, &[]);
    assert_ok(&out, "heron submit local src/wordcount.yaml");

    let want: BTreeMap<String, u64> =
        serde_json::from_str(&std::fs::read_to_string(dst.join("expected_counts.json")).unwrap())
            .unwrap();
    let res = resources(&env, NAME);
    Wait::new("the streamparse count bolts to write exact counts")
        .timeout(WAIT)
        .every(Duration::from_millis(250))
        .try_until(|| (counts(&res, "counts-") == want).then_some(()))
        .unwrap_or_else(|e| {
            env.dump_logs(NAME);
            panic!("{e}: got {:?}, want {want:?}", counts(&res, "counts-"))
        });
    assert_eq!(support::counter(&env, NAME, "failed"), 0, "nothing failed");
    assert_ok(&env.kill(NAME), "heron kill");
}
