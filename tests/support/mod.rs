//! Shared harness for the multi-process tests: a private HOME per test, the `heron` CLI and
//! example binaries (the cluster, its process cleanup and the waiting are heron-testkit's),
//! and readers of what the topologies write.
#![allow(dead_code)]

pub mod chaos;
pub mod http;

use heron_testkit::wait::{Outcome, Wait};
use heron_testkit::LocalCluster;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// One test's world: a [`LocalCluster`] (its own HOME, so its own state root and working
/// directories) driven by this crate's `heron` binary; every process it started is killed
/// when it is dropped.
pub struct TestEnv(LocalCluster);

impl TestEnv {
    pub fn new() -> TestEnv {
        TestEnv(LocalCluster::new(env!("CARGO_BIN_EXE_heron")))
    }
}

impl Deref for TestEnv {
    type Target = LocalCluster;
    fn deref(&self) -> &LocalCluster {
        &self.0
    }
}

impl DerefMut for TestEnv {
    fn deref_mut(&mut self) -> &mut LocalCluster {
        &mut self.0
    }
}

#[allow(unused_imports)] // not every test binary uses both
pub use heron_testkit::{process::processes_mentioning, wait::wait_growth};

/// [`heron_testkit::wait_for`] polling every 100 ms (these conditions read files and `/proc`).
#[track_caller]
pub fn wait_for<O: Outcome>(timeout: Duration, what: &str, f: impl FnMut() -> O) -> O::Value {
    Wait::new(what)
        .timeout(timeout)
        .every(Duration::from_millis(100))
        .until(f)
}

/// An example binary built by `cargo test` (examples are built alongside the tests).
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test exe");
    // target/<profile>/deps/<test> -> target/<profile>/examples/<name>
    let p = exe
        .parent()
        .and_then(Path::parent)
        .expect("target dir")
        .join("examples")
        .join(name);
    assert!(p.exists(), "example binary {} is missing", p.display());
    p
}

/// Runs `cmd` (an example binary, say) with `env`'s HOME until it exits, at most `timeout`;
/// panics with its output unless it succeeded. Its stdout.
pub fn run_to_success(env: &TestEnv, cmd: &mut Command, what: &str, timeout: Duration) -> String {
    let mut child = cmd
        .env("HOME", env.home())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {what}: {e}"));
    let status = wait_for(timeout, &format!("{what} to finish"), || {
        child.try_wait().expect("wait")
    });
    let out = child.wait_with_output().expect("output");
    assert!(
        status.success(),
        "{what} failed: {status}\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Sums one counter over the topology's instance counter files.
pub fn counter(env: &TestEnv, name: &str, key: &str) -> u64 {
    counter_in(env, "local", name, key)
}

/// A Python with heronpy's protobuf modules, pystorm and streamparse: `$HERONRS_PYTHON`, or a
/// virtualenv made once under `target/` from `tests/python/requirements.txt` (again when that
/// file changes).
pub fn heron_python() -> PathBuf {
    if let Some(p) = std::env::var_os("HERONRS_PYTHON") {
        return PathBuf::from(p);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let venv = root.join("target/test-venv");
    let python = venv.join("bin/python");
    let requirements = root.join("tests/python/requirements.txt");
    // ready for these requirements: a changed file installs again into the same venv
    let wanted = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        std::fs::read(&requirements)
            .expect("tests/python/requirements.txt")
            .hash(&mut h);
        h.finish()
    };
    let ready = venv.join(format!(".ready-{wanted:016x}"));
    let lock = root.join("target/test-venv.lock");
    // Serialise creation between test binaries running in parallel: either it is ready, or we
    // take the lock and build it.
    let ours = Wait::new("another test to build the Python environment")
        .timeout(Duration::from_secs(300))
        .every(Duration::from_millis(200))
        .until(|| {
            if ready.exists() {
                Some(false)
            } else {
                std::fs::create_dir(&lock).is_ok().then_some(true)
            }
        });
    if !ours {
        return python;
    }
    let result = (|| {
        let ok = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .map_err(|e| format!("python3 -m venv: {e}"))?
            .success();
        if !ok {
            return Err("python3 -m venv failed".to_string());
        }
        let ok = Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(&requirements)
            .status()
            .map_err(|e| format!("pip: {e}"))?
            .success();
        if !ok {
            return Err("pip install -r tests/python/requirements.txt failed".to_string());
        }
        std::fs::write(&ready, b"").map_err(|e| e.to_string())
    })();
    let _ = std::fs::remove_dir(&lock);
    if let Err(e) = result {
        panic!("cannot build the Python test environment: {e}");
    }
    python
}

/// The value after `flag` on the command line of `pid`.
pub fn arg_of(pid: i32, flag: &str) -> Option<String> {
    let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<&[u8]> = cmd.split(|b| *b == 0).collect();
    args.windows(2)
        .find(|w| w[0] == flag.as_bytes())
        .map(|w| String::from_utf8_lossy(w[1]).to_string())
}

/// Pids of this env's processes running `heron-role <role>`.
pub fn role_pids(env: &TestEnv, role: &str) -> Vec<i32> {
    heron_testkit::process::role_pids(env.home(), role)
}

/// The scheduling policy (`SCHED_OTHER` 0, `SCHED_BATCH` 3, ...) of every thread of `pid`.
pub fn thread_policies(pid: i32) -> Vec<i64> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
        // fields after "tid (comm) " start at field 3 (state); policy is field 41
        let policy = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().nth(41 - 3))
            .and_then(|p| p.parse().ok());
        if let Some(p) = policy {
            out.push(p);
        }
    }
    out
}

/// The texts of the finished counters files in `<working dir>/metrics`: one per instance,
/// named by its id. Files being written (`.<id>.tmp`, which exists next to the old file until
/// it is renamed over it) and `<id>.exceptions` are not counters files; reading them too would
/// count an instance twice.
pub fn counters_files(working_dir: &Path) -> Vec<String> {
    std::fs::read_dir(working_dir.join("metrics"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            !name.starts_with('.') && !name.ends_with(".exceptions")
        })
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .collect()
}

/// Sums one counter over the instance counter files of the topology in `cluster`.
pub fn counter_in(env: &TestEnv, cluster: &str, name: &str, key: &str) -> u64 {
    let Some(dir) = env.working_dir_in(cluster, name) else {
        return 0;
    };
    let mut sum = 0;
    for text in counters_files(&dir) {
        for line in text.lines() {
            let mut parts = line.split_whitespace();
            if parts.next() == Some(key) {
                sum += parts
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    sum
}

/// Panics with both streams unless `out` succeeded.
pub fn assert_ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Pids of this env's instance processes of `component` (`--component-name <component>`).
pub fn component_pids(env: &TestEnv, component: &str) -> Vec<i32> {
    heron_testkit::process::component_pids(env.home(), component)
}

/// [`example`], built first with `cargo build --example <name>` (into this test's target
/// directory and profile): a filtered `cargo test --test X` neither builds examples nor
/// rebuilds stale ones. Cargo makes this a quick no-op when the binary is up to date.
pub fn fresh_example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test exe");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let target = profile_dir.parent().expect("target dir");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "--example", name, "--target-dir"])
        .arg(target)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let status = cmd.status().expect("run cargo build --example");
    assert!(status.success(), "cargo build --example {name} failed");
    example(name)
}

/// A tracker over this env's local state root, on a free loopback port (it serves for the
/// rest of the test process).
pub fn local_tracker(env: &TestEnv) -> heron_tracker::BackgroundTracker {
    let cli = heron_tracker::controls::Cli {
        binary: env.heron_binary().to_path_buf(),
        env: env.heron_env(),
    };
    let clusters = vec![heron_tracker::Cluster::new(
        "local",
        heron_statemgr::StateManagerSpec::Local(env.state_root()),
    )
    .with_cli(cli)];
    heron_tracker::spawn_background("127.0.0.1:0".parse().unwrap(), clusters)
        .expect("start the tracker")
}

/// Submits the WordCount example (2 containers, parallelism 2, then `extra`, e.g.
/// `--slow-count-us 1000`); the submit must succeed.
#[allow(dead_code)] // not every test binary runs a WordCount
pub fn submit_word_count(env: &mut TestEnv, extra: &[&str]) {
    let mut args = vec!["--containers", "2", "--parallelism", "2"];
    args.extend_from_slice(extra);
    let submitted = env.submit("WordCount", &example("word_count"), &args);
    assert_ok(&submitted, "heron submit WordCount");
}

/// Submits the test topology `binary` as `name` with `--out-dir <HOME>/<dir>` (created and
/// returned) followed by `args`; the submit must succeed.
pub fn submit_with_out_dir(
    env: &mut TestEnv,
    name: &str,
    binary: &Path,
    dir: &str,
    args: &[&str],
) -> PathBuf {
    let out = env.home().join(dir);
    std::fs::create_dir_all(&out).unwrap();
    let mut all = vec!["--out-dir", out.to_str().unwrap()];
    all.extend_from_slice(args);
    let submitted = env.submit(name, binary, &all);
    assert_ok(&submitted, &format!("heron submit {name}"));
    out
}

/// Submits the `slow_bolt` test topology as `name`, writing its counts under
/// `<HOME>/counts` (returned), with `args` after `--out-dir`; the submit must succeed.
pub fn submit_slow_bolt(env: &mut TestEnv, name: &str, args: &[&str]) -> PathBuf {
    submit_with_out_dir(env, name, &fresh_example("slow_bolt"), "counts", args)
}

/// Every id in the ledger spouts' acked logs (`acked-*` in the topology's `--out-dir`).
pub fn acked_ids(out: &Path) -> std::collections::HashSet<u64> {
    let mut ids = std::collections::HashSet::new();
    for p in heron_testkit::files(out, "acked-", "") {
        let text = std::fs::read_to_string(p).unwrap_or_default();
        ids.extend(text.lines().filter_map(|l| l.parse::<u64>().ok()));
    }
    ids
}

/// The secret `heron submit` wrote for topology `name` (`<working dir>/auth/secret`).
pub fn topology_secret(env: &TestEnv, name: &str) -> heron_auth::Secret {
    let dir = env
        .working_dir(name)
        .unwrap_or_else(|| panic!("no working directory for {name}"));
    let path = heron_scheduler::layout::secret_file(&dir);
    heron_auth::Secret::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Connects to a daemon of topology `name` on 127.0.0.1:`port` and passes the handshake with
/// the topology's secret, as its own processes do: what is sent next reaches the decoders.
pub fn connect_as_member(env: &TestEnv, name: &str, port: u16) -> std::net::TcpStream {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port))
        .unwrap_or_else(|e| panic!("connect to {port}: {e}"));
    heron_auth::connect_std(&mut s, &topology_secret(env, name))
        .unwrap_or_else(|e| panic!("handshake with port {port}: {e}"));
    s
}

/// Submits the `ledger` test topology with `--config KEY=VALUE` and checks that the submit
/// fails naming the key.
pub fn assert_ledger_config_refused(env: &mut TestEnv, key: &str, value: &str) {
    let out = env.home().join("ledger");
    std::fs::create_dir_all(&out).unwrap();
    let config = format!("{key}={value}");
    let args = ["--out-dir", out.to_str().unwrap(), "--config", &config];
    let submitted = env.submit("Ledger", &fresh_example("ledger"), &args);
    assert!(!submitted.status.success(), "{config} was accepted");
    let err = String::from_utf8_lossy(&submitted.stderr);
    assert!(
        err.contains(key),
        "the refusal of {config} names the key: {err}"
    );
}

/// Submits the `ledger` test topology as `Ledger`, writing its ledger under `<HOME>/ledger`
/// (returned), with `args` after `--out-dir`; the submit must succeed.
pub fn submit_ledger(env: &mut TestEnv, args: &[&str]) -> PathBuf {
    submit_with_out_dir(env, "Ledger", &fresh_example("ledger"), "ledger", args)
}
