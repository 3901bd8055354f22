use super::*;
use crate::process::cmdline;
use heron_testkit::{wait_for, ProcessGuard};
use std::path::PathBuf;
use std::sync::Arc;

/// A temporary working directory; kills the pids listed in its `*.pid` files on drop.
struct Dir(PathBuf);

impl Dir {
    fn new() -> Dir {
        let d = std::env::temp_dir().join(format!("heron-supervise-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn pid(&self, name: &str) -> Option<i32> {
        std::fs::read_to_string(self.0.join(name))
            .ok()
            .and_then(|s| s.trim().parse().ok())
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let mut guard = ProcessGuard::new();
        for pid in ["a.pid", "b.pid"]
            .into_iter()
            .filter_map(|name| self.pid(name))
        {
            guard.pid(pid);
        }
        drop(guard);
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn sh(name: &str, script: &str) -> ProcessSpec {
    ProcessSpec {
        name: name.into(),
        args: vec!["-c".into(), script.into()],
    }
}

fn fast() -> BackoffPolicy {
    BackoffPolicy {
        initial: Duration::from_millis(20),
        max: Duration::from_millis(80),
        reset_after: Duration::from_secs(60),
    }
}

fn run_in_thread(
    dir: &Dir,
    specs: Vec<ProcessSpec>,
) -> (
    Arc<AtomicBool>,
    std::thread::JoinHandle<Result<(), SchedulerError>>,
) {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let wd = dir.0.clone();
    let handle =
        std::thread::spawn(move || supervise(Path::new("/bin/sh"), &wd, &specs, fast(), &flag));
    (stop, handle)
}

#[test]
fn a_crashing_process_is_restarted_and_logs_go_to_its_file() {
    let dir = Dir::new();
    let (stop, handle) = run_in_thread(&dir, vec![sh("crasher", "echo run; exit 3")]);
    std::thread::sleep(Duration::from_millis(800));
    stop.store(true, Ordering::SeqCst);
    handle.join().unwrap().unwrap();
    let log = std::fs::read_to_string(dir.0.join("log-files/crasher.log")).unwrap();
    let runs = log.lines().filter(|l| *l == "run").count();
    // 20 + 40 + 80 + 80 ... ms of backoff in 800 ms: several restarts, but far fewer than a
    // tight loop would make.
    assert!((4..=20).contains(&runs), "{runs} runs");
}

#[test]
fn shutdown_stops_children_even_if_they_ignore_sigterm() {
    let dir = Dir::new();
    let (stop, handle) = run_in_thread(
        &dir,
        vec![
            sh("a", "echo $$ > a.pid; exec sleep 30"),
            sh("b", "trap '' TERM; echo $$ > b.pid; exec sleep 30"),
        ],
    );
    let (a, b) = wait_for(Duration::from_secs(5), "both pid files", || {
        Some((dir.pid("a.pid")?, dir.pid("b.pid")?))
    });
    // (the pid files are written just before `exec sleep`: wait for both to be `sleep`)
    wait_for(Duration::from_secs(5), "a and b to exec sleep", || {
        [a, b]
            .iter()
            .all(|&p| cmdline(p).first().is_some_and(|c| c == "sleep"))
    });
    let stopping = Instant::now();
    stop.store(true, Ordering::SeqCst);
    handle.join().unwrap().unwrap();
    let took = stopping.elapsed();
    assert!(
        took >= STOP_GRACE,
        "b ignored SIGTERM, so it took the grace period: {took:?}"
    );
    assert!(took < STOP_GRACE + Duration::from_secs(2), "{took:?}");
    // Both were reaped by supervise: their pids are gone.
    assert!(!signal_process(a, 0).unwrap(), "a is gone");
    assert!(!signal_process(b, 0).unwrap(), "b is gone");
}

#[test]
fn a_missing_binary_is_retried_not_fatal() {
    let dir = Dir::new();
    let stop = AtomicBool::new(false);
    let specs = [sh("x", "true")];
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            supervise(
                Path::new("/nonexistent/binary"),
                &dir.0,
                &specs,
                fast(),
                &stop,
            )
        });
        // each start attempt creates the log file before it fails: see two attempts
        let log = dir.0.join("log-files/x.log");
        wait_for(Duration::from_secs(5), "a first start attempt", || {
            log.exists()
        });
        std::fs::remove_file(&log).unwrap();
        wait_for(Duration::from_secs(5), "a retry", || log.exists());
        stop.store(true, Ordering::SeqCst);
        h.join().unwrap().unwrap();
    });
}
