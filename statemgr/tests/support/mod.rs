//! A real ZooKeeper server for the tests.
//!
//! * `HERONRS_ZK=host:port` set: use that server.
//! * Otherwise start a private one with `scripts/zookeeper.sh start <tempdir> <free port>`
//!   (which installs Debian's `zookeeper` package if it is missing and we are root), shared by
//!   the tests of this binary that run at the same time, and stopped (by pid) when the last of
//!   them drops it — also when a test panics. The script's watchdog (`ZK_OWNER_PID`) stops it if
//!   the test binary is killed.
//! * If no server can be had the tests FAIL, unless `HERONRS_SKIP_ZK=1` is set.
//!
//! Every test works under its own root (`/heron-test-<pid>-<n>-<random>`), deleted at the end,
//! so tests can share a server and run in parallel.

#![allow(dead_code)]

pub mod proxy;

use heron_statemgr::{ZkConfig, ZkStateManager};
use heron_testkit::free_port;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// How long a test waits for anything to happen.
pub const WAIT: Duration = Duration::from_secs(20);

pub struct ZkServer {
    pub connect: String,
    private: Option<Private>,
}

struct Private {
    dir: tempfile::TempDir,
    pid: u32,
}

static SHARED: Mutex<Weak<ZkServer>> = Mutex::new(Weak::new());

/// `scripts/zookeeper.sh` of the workspace, from the statemgr crate or the workspace root
/// (tests/zookeeper.rs includes this file too).
fn script() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let here = dir.join("scripts/zookeeper.sh");
    if here.exists() {
        here
    } else {
        dir.join("../scripts/zookeeper.sh")
    }
}

fn start_private() -> Result<ZkServer, String> {
    let mut last = String::new();
    for _ in 0..3 {
        let dir = tempfile::Builder::new()
            .prefix("heronrs-zk-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let port = free_port();
        let out = Command::new("bash")
            .arg(script())
            .arg("start")
            .arg(dir.path())
            .arg(port.to_string())
            .env("ZK_OWNER_PID", std::process::id().to_string())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", script().display()))?;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if out.status.success() {
            let stdout = String::from_utf8_lossy(&out.stdout);
            let pid = stdout
                .lines()
                .last()
                .and_then(|l| l.trim().parse::<u32>().ok())
                .ok_or_else(|| format!("no pid from zookeeper.sh start: {stdout:?} {stderr}"))?;
            eprintln!("zk fixture: private server pid {pid} on 127.0.0.1:{port}");
            return Ok(ZkServer {
                connect: format!("127.0.0.1:{port}"),
                private: Some(Private { dir, pid }),
            });
        }
        last = format!("zookeeper.sh start failed ({}): {stderr}", out.status);
        if !stderr.contains("already in use") {
            break;
        }
    }
    Err(last)
}

/// The shared server, or `None` when none can be had and `HERONRS_SKIP_ZK=1`.
pub fn server() -> Option<Arc<ZkServer>> {
    let mut shared = SHARED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(s) = shared.upgrade() {
        return Some(s);
    }
    let started = match std::env::var("HERONRS_ZK") {
        Ok(connect) if !connect.trim().is_empty() => Ok(ZkServer {
            connect: connect.trim().to_string(),
            private: None,
        }),
        _ => start_private(),
    };
    match started {
        Ok(s) => {
            let s = Arc::new(s);
            *shared = Arc::downgrade(&s);
            Some(s)
        }
        Err(why) if std::env::var("HERONRS_SKIP_ZK").as_deref() == Ok("1") => {
            eprintln!("zk fixture: SKIPPING, no ZooKeeper server: {why}");
            None
        }
        Err(why) => panic!(
            "no ZooKeeper server for the tests: {why}\n\
             Install Debian's zookeeper package (scripts/zookeeper.sh does it when run as root), \
             or set HERONRS_ZK=host:port to use a running server, \
             or set HERONRS_SKIP_ZK=1 to skip these tests."
        ),
    }
}

impl Drop for ZkServer {
    fn drop(&mut self) {
        let Some(p) = &self.private else { return };
        let stopped = Command::new("bash")
            .arg(script())
            .arg("stop")
            .arg(p.dir.path())
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if !stopped {
            let _ = Command::new("kill")
                .args(["-KILL", &p.pid.to_string()])
                .status();
        }
        eprintln!("zk fixture: stopped private server pid {}", p.pid);
    }
}

/// One test's view: the server and a root of its own, deleted when dropped.
pub struct Ctx {
    pub server: Arc<ZkServer>,
    pub root: String,
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A fresh context, or `None` to skip (see [`server`]).
pub fn ctx() -> Option<Ctx> {
    let server = server()?;
    let root = format!(
        "/heron-test-{}-{}-{:08x}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        rand::random::<u32>()
    );
    Some(Ctx { server, root })
}

impl Ctx {
    pub fn config(&self) -> ZkConfig {
        let mut c = ZkConfig::new(self.server.connect.clone(), self.root.clone());
        c.connect_timeout = WAIT;
        c.operation_timeout = WAIT;
        c
    }

    /// A new state manager (a new session) on this test's root.
    pub fn open(&self) -> ZkStateManager {
        ZkStateManager::connect(self.config())
            .unwrap_or_else(|e| panic!("connect to {}: {e}", self.server.connect))
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        let mut c = self.config();
        c.connect_timeout = Duration::from_secs(5);
        c.operation_timeout = Duration::from_secs(5);
        if let Ok(sm) = ZkStateManager::connect(c) {
            let _ = sm.delete_root();
        }
    }
}
