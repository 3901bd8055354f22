//! Shared harness for the multi-process tests: a private HOME per test, the `heron` CLI and
//! example binaries, a guard that kills every process a test started, and waiting helpers.
#![allow(dead_code)]

pub mod http;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// One test's world: its own HOME (so its own state root and working directories).
pub struct TestEnv {
    pub home: tempfile::TempDir,
    /// Topologies submitted through this env; killed on drop.
    topologies: Vec<String>,
}

impl TestEnv {
    pub fn new() -> TestEnv {
        TestEnv {
            home: tempfile::Builder::new()
                .prefix("heron-test-home")
                .tempdir()
                .expect("temp HOME"),
            topologies: Vec::new(),
        }
    }

    pub fn home(&self) -> &Path {
        self.home.path()
    }

    pub fn state_root(&self) -> PathBuf {
        self.home().join(".herondata/repository/state/local")
    }

    /// The topology's working directory (`~/.herondata/topologies/local/<role>/<name>`).
    pub fn working_dir(&self, name: &str) -> Option<PathBuf> {
        self.working_dir_in("local", name)
    }

    /// The `heron` CLI with this env's HOME.
    pub fn heron(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_heron"));
        c.env("HOME", self.home()).env("USER", "tester");
        c
    }

    /// Submits `binary` with `args` through `heron submit local`; the topology is killed when
    /// this env is dropped.
    pub fn submit(&mut self, name: &str, binary: &Path, args: &[&str]) -> Output {
        self.topologies.push(name.to_string());
        let out = self
            .heron()
            .arg("submit")
            .arg("local")
            .arg(binary)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run heron submit");
        if !out.status.success() {
            eprintln!(
                "heron submit failed:\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            self.dump_logs(name);
        }
        out
    }

    pub fn kill(&self, name: &str) -> Output {
        self.heron()
            .args(["kill", "local", name])
            .stdin(Stdio::null())
            .output()
            .expect("run heron kill")
    }

    /// Prints the tail of every log of the topology (for failing tests).
    pub fn dump_logs(&self, name: &str) {
        self.dump_logs_in("local", name);
    }

    /// Process groups of the topology's executors, from their pid files.
    fn executor_groups(&self, name: &str) -> Vec<i32> {
        let Some(dir) = self.working_dir(name) else {
            return Vec::new();
        };
        let mut pids = Vec::new();
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let f = e.file_name().to_string_lossy().to_string();
            if f.starts_with("executor-") && f.ends_with(".pid") {
                if let Ok(s) = std::fs::read_to_string(e.path()) {
                    if let Ok(p) = s.trim().parse::<i32>() {
                        pids.push(p);
                    }
                }
            }
        }
        pids
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        for name in self.topologies.clone() {
            let groups = self.executor_groups(&name);
            let _ = self.kill(&name);
            for g in groups {
                // SAFETY: signalling a process group we started; harmless if it is gone.
                unsafe {
                    libc::kill(-g, libc::SIGKILL);
                }
            }
        }
        // Anything still running with this HOME in its command line or environment is ours.
        for pid in processes_mentioning(&self.home().to_string_lossy()) {
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// Pids of processes whose command line contains `needle` (excluding this process).
pub fn processes_mentioning(needle: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if pid == me {
            continue;
        }
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let env = std::fs::read(e.path().join("environ")).unwrap_or_default();
        let hit = |b: &[u8]| {
            b.windows(needle.len().max(1))
                .any(|w| w == needle.as_bytes())
        };
        if hit(&cmd) || hit(&env) {
            // skip zombies: they are gone but not yet reaped by their parent
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            if stat.split(") ").nth(1).is_some_and(|s| s.starts_with('Z')) {
                continue;
            }
            found.push(pid);
        }
    }
    found
}

/// Polls `f` every 100 ms until it returns `Some`, or panics with `what` after `timeout`.
pub fn wait_for<T>(timeout: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        if start.elapsed() > timeout {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
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

/// Sums one counter over the topology's instance counter files.
pub fn counter(env: &TestEnv, name: &str, key: &str) -> u64 {
    counter_in(env, "local", name, key)
}

/// A Python with heronpy's protobuf modules: `$HERONRS_PYTHON`, or a virtualenv made once
/// under `target/` from `tests/python/requirements.txt`.
pub fn heron_python() -> PathBuf {
    if let Some(p) = std::env::var_os("HERONRS_PYTHON") {
        return PathBuf::from(p);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let venv = root.join("target/test-venv");
    let python = venv.join("bin/python");
    let ready = venv.join(".ready");
    let lock = root.join("target/test-venv.lock");
    // Serialise creation between test binaries running in parallel.
    let start = Instant::now();
    loop {
        if ready.exists() {
            return python;
        }
        if std::fs::create_dir(&lock).is_ok() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "timed out waiting for another test to build the Python environment"
        );
        std::thread::sleep(Duration::from_millis(200));
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
            .arg(root.join("tests/python/requirements.txt"))
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

/// Pids of this env's processes running `heron-role <role>`.
pub fn role_pids(env: &TestEnv, role: &str) -> Vec<i32> {
    let home = env.home().to_string_lossy().to_string();
    let mut pids: Vec<i32> = processes_mentioning(&home)
        .into_iter()
        .filter(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let args: Vec<&[u8]> = cmd.split(|b| *b == 0).collect();
            args.windows(2)
                .any(|w| w[0] == b"heron-role" && w[1] == role.as_bytes())
        })
        .collect();
    pids.sort_unstable();
    pids
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

// ---- clusters other than `local` (tests/zookeeper.rs, tests/control.rs) ----

impl TestEnv {
    /// `heron <verb> [extra flags] <cluster> <args...>` with this env's HOME; not recorded for
    /// the kill on drop (processes are still cleaned up by HOME).
    pub fn heron_in(&self, verb: &str, cluster: &str, extra: &[String], args: &[&str]) -> Output {
        self.heron()
            .arg(verb)
            .args(extra)
            .arg(cluster)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("run heron {verb}: {e}"))
    }

    /// The topology's working directory in `cluster`.
    pub fn working_dir_in(&self, cluster: &str, name: &str) -> Option<PathBuf> {
        let base = self.home().join(".herondata/topologies").join(cluster);
        for role in std::fs::read_dir(&base).ok()?.flatten() {
            let p = role.path().join(name);
            if p.is_dir() {
                return Some(p);
            }
        }
        None
    }

    /// Prints the tail of every log of the topology in `cluster`.
    pub fn dump_logs_in(&self, cluster: &str, name: &str) {
        let Some(dir) = self.working_dir_in(cluster, name) else {
            return;
        };
        for e in std::fs::read_dir(dir.join("log-files"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(30)..];
            eprintln!("---- {} ----\n{}", e.path().display(), tail.join("\n"));
        }
    }
}

/// Sums one counter over the instance counter files of the topology in `cluster`.
pub fn counter_in(env: &TestEnv, cluster: &str, name: &str, key: &str) -> u64 {
    let Some(dir) = env.working_dir_in(cluster, name) else {
        return 0;
    };
    let mut sum = 0;
    for e in std::fs::read_dir(dir.join("metrics"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
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

/// Waits until `f()` grows by more than `by` from its value now; returns the new value.
pub fn wait_growth(timeout: Duration, what: &str, by: u64, mut f: impl FnMut() -> u64) -> u64 {
    let start = f();
    wait_for(timeout, what, || {
        let now = f();
        (now > start + by).then_some(now)
    })
}

/// Pids of this env's instance processes of `component` (`--component-name <component>`).
pub fn component_pids(env: &TestEnv, component: &str) -> Vec<i32> {
    role_pids(env, "instance")
        .into_iter()
        .filter(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let args: Vec<&[u8]> = cmd.split(|b| *b == 0).collect();
            args.windows(2)
                .any(|w| w[0] == b"--component-name" && w[1] == component.as_bytes())
        })
        .collect()
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
    let clusters = vec![heron_tracker::Cluster::new(
        "local",
        heron_statemgr::StateManagerSpec::Local(env.state_root()),
    )];
    heron_tracker::spawn_background("127.0.0.1:0".parse().unwrap(), clusters)
        .expect("start the tracker")
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
