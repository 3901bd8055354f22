//! At-least-once end to end: the `ledger` topology (ATLEAST_ONCE, 2 containers, spout → relay
//! → sink, parallelism 2, message timeout 5 s) runs as real processes while a bolt instance,
//! a stream manager or the tmaster is killed with SIGKILL mid-run. Each time the process must
//! come back, and every message id the spouts emitted must end up acked at least once.
//!
//! Without faults, the relay's reported errors must reach the tracker's exceptions.
//!
//! The tests run one at a time (they share 2 cores with everything else) and each stays under
//! about 90 s. Replay counts are printed with `--nocapture`.

#[allow(dead_code)] // the topology itself runs as the `ledger` example
#[path = "topologies/args.rs"]
mod args;
#[allow(dead_code)]
#[path = "../examples/common/ledger.rs"]
mod ledger;
mod support;

use heron_statemgr::{LocalFsStateManager, StateManagerExt};
use heron_testkit::Wait;
use ledger::RELAY_ERROR;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};
use support::{
    acked_ids, arg_of, component_pids, fresh_example, role_pids, submit_with_out_dir, wait_for,
    TestEnv,
};

const NAME: &str = "Ledger";
const IDS: u64 = 20_000;
/// New ids per second per spout task.
const RATE: u64 = 2_000;
/// Acked ids before the fault.
const FAULT_AT: usize = (IDS / 4) as usize;

static SERIAL: Mutex<()> = Mutex::new(());

struct Run {
    env: TestEnv,
    out: PathBuf,
    started: Instant,
}

fn start() -> Run {
    let mut env = TestEnv::new();
    let started = Instant::now();
    let out = submit_with_out_dir(
        &mut env,
        NAME,
        &fresh_example("ledger"),
        "ledger",
        &[
            "--ids",
            &IDS.to_string(),
            "--rate",
            &RATE.to_string(),
            "--containers",
            "2",
            "--timeout-secs",
            "5",
            "--max-pending",
            "500",
        ],
    );
    Run { env, out, started }
}

/// When each spout stats file was last written.
fn stats_written(out: &Path) -> Vec<SystemTime> {
    heron_testkit::files(out, "spout-", ".json")
        .into_iter()
        .filter_map(|p| p.metadata().and_then(|m| m.modified()).ok())
        .collect()
}

/// The spouts' stats files, summed: (emitted, acks, failed, replayed, opens).
fn spout_stats(out: &Path) -> (u64, u64, u64, u64, u64) {
    let mut sum = (0, 0, 0, 0, 0);
    for p in heron_testkit::files(out, "spout-", ".json") {
        let Ok(text) = std::fs::read_to_string(p) else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let n = |k: &str| v[k].as_u64().unwrap_or(0);
        sum.0 += n("emitted");
        sum.1 += n("acks");
        sum.2 += n("failed");
        sum.3 += n("replayed");
        sum.4 += n("opens");
    }
    sum
}

impl Run {
    fn wait_acked(&self, at_least: usize, limit: Duration, what: &str) {
        let acked = Wait::new(what)
            .timeout(limit)
            .every(Duration::from_millis(100))
            .try_until(|| acked_ids(&self.out).len() >= at_least);
        if acked.is_err() {
            let n = acked_ids(&self.out).len();
            self.env.dump_logs(NAME);
            let (emitted, acks, failed, replayed, opens) = spout_stats(&self.out);
            panic!(
                "{what}: only {n} of {at_least} ids acked after {limit:?} \
                     (emitted {emitted}, acks {acks}, failed {failed}, replayed {replayed}, \
                     spout opens {opens})"
            );
        }
    }

    /// SIGKILLs `pid` (found among `pids()`), then waits until `pids()` has as many processes
    /// again, one of them new.
    fn kill_and_wait_restart(&self, what: &str, pid: i32, pids: impl Fn() -> Vec<i32>) {
        let before = pids();
        assert!(before.contains(&pid));
        eprintln!(
            "[{:>5.1}s] kill -9 {what} (pid {pid}), {} ids acked",
            self.started.elapsed().as_secs_f64(),
            acked_ids(&self.out).len()
        );
        // SAFETY: signalling a process this test started.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
        let killed_at = Instant::now();
        let new = wait_for(
            Duration::from_secs(30),
            &format!("{what} to be restarted"),
            || {
                let now = pids();
                let fresh: Vec<i32> = now
                    .iter()
                    .copied()
                    .filter(|p| !before.contains(p))
                    .collect();
                (now.len() == before.len() && !now.contains(&pid) && !fresh.is_empty())
                    .then_some(fresh)
            },
        );
        eprintln!(
            "[{:>5.1}s] {what} is back as pid {new:?} after {:.1}s",
            self.started.elapsed().as_secs_f64(),
            killed_at.elapsed().as_secs_f64()
        );
    }

    /// Waits for every id to be acked, checks none is missing, prints the replay counts;
    /// returns (failed, replayed after a fail, re-emitted after a spout restart).
    fn finish(&self, test: &str, limit: Duration) -> (u64, u64, u64) {
        self.wait_acked(IDS as usize, limit, test);
        let acked = acked_ids(&self.out);
        let missing: Vec<u64> = (0..IDS).filter(|i| !acked.contains(i)).take(10).collect();
        assert!(missing.is_empty(), "{test}: ids never acked: {missing:?}");
        assert_eq!(acked.len() as u64, IDS, "{test}: only ids the spouts own");
        // the stats files lag the ledger by up to 200 ms: wait for each to be written again
        let acked_at = SystemTime::now();
        wait_for(
            Duration::from_secs(10),
            "the spout stats after the last ack",
            || stats_written(&self.out).iter().all(|&t| t > acked_at),
        );
        let (emitted, acks, failed, replayed, opens) = spout_stats(&self.out);
        let reemitted = emitted.saturating_sub(IDS + replayed);
        eprintln!(
            "{test}: all {IDS} ids acked in {:.1}s; emitted {emitted}, ack callbacks {acks}, \
             failed {failed}, replayed after fail {replayed}, re-emitted after a spout restart \
             {reemitted}, spout opens {opens}",
            self.started.elapsed().as_secs_f64(),
        );
        (failed, replayed, reemitted)
    }
}

/// How often `needle` appears in the log of process `name` (`log-files/<name>.log`).
fn log_count(env: &TestEnv, name: &str, needle: &str) -> usize {
    let Some(dir) = env.working_dir(NAME) else {
        return 0;
    };
    std::fs::read_to_string(dir.join("log-files").join(format!("{name}.log")))
        .unwrap_or_default()
        .matches(needle)
        .count()
}

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn without_faults_every_id_is_acked_and_none_fails() {
    let _serial = serial();
    let run = start();
    let (failed, replayed, reemitted) = run.finish("no faults", Duration::from_secs(60));
    assert_eq!(
        (failed, replayed, reemitted),
        (0, 0, 0),
        "nothing fails without faults"
    );
    // the relay reported an error for each id that is a multiple of 5000 (each went through
    // once): the tracker shows them, from the instances through the tmaster
    let tracker = support::local_tracker(&run.env);
    let q = format!("cluster=local&environ=default&topology={NAME}&component=relay");
    let errors = IDS.div_ceil(5000);
    let seen = wait_for(Duration::from_secs(30), "the relay's errors", || {
        let got = support::http::get(tracker.addr, &format!("/topologies/exceptions?{q}"));
        let list = got.json().as_array().cloned().unwrap_or_default();
        let count: u64 = list
            .iter()
            .filter_map(|e| e["count"].as_str()?.parse::<u64>().ok())
            .sum();
        (count == errors).then_some(list)
    });
    for e in &seen {
        assert!(
            e["stacktrace"]
                .as_str()
                .unwrap_or_default()
                .contains(RELAY_ERROR),
            "{e}"
        );
        let instance = e["instance_id"].as_str().unwrap_or_default();
        assert!(instance.contains("_relay_"), "{e}");
        assert!(
            !e["hostname"].as_str().unwrap_or_default().is_empty(),
            "{e}"
        );
    }
    let summary = support::http::get(tracker.addr, &format!("/topologies/exceptionsummary?{q}"));
    let total: u64 = summary
        .json()
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|e| e["count"].as_str()?.parse::<u64>().ok())
        .sum();
    assert_eq!(total, errors, "{}", summary.body);
}

#[test]
fn a_killed_bolt_instance_comes_back_and_nothing_is_lost() {
    let _serial = serial();
    let run = start();
    run.wait_acked(FAULT_AT, Duration::from_secs(40), "before the fault");
    let pid = *component_pids(&run.env, "relay").first().expect("a relay");
    run.kill_and_wait_restart("relay instance", pid, || component_pids(&run.env, "relay"));
    let (failed, replayed, _) = run.finish("bolt instance killed", Duration::from_secs(60));
    // ids in flight through the killed relay time out, fail and are replayed
    assert!(
        failed > 0 && replayed > 0,
        "a killed relay lost nothing to replay: failed {failed}, replayed {replayed}"
    );
}

#[test]
fn a_killed_stream_manager_comes_back_and_nothing_is_lost() {
    let _serial = serial();
    let run = start();
    run.wait_acked(FAULT_AT, Duration::from_secs(40), "before the fault");
    let pids = role_pids(&run.env, "stmgr");
    let (pid, other) = (pids[0], pids[1]);
    let killed = arg_of(pid, "--stmgr-id").expect("--stmgr-id");
    let survivor = arg_of(other, "--stmgr-id").expect("--stmgr-id");
    run.kill_and_wait_restart("stream manager", pid, || role_pids(&run.env, "stmgr"));
    // the mesh heals: the survivor connects again to the restarted one
    let link = format!("connected to stream manager {killed}");
    wait_for(Duration::from_secs(20), "the mesh to heal", || {
        (log_count(&run.env, &survivor, &link) >= 2).then_some(())
    });
    let (failed, replayed, reemitted) =
        run.finish("stream manager killed", Duration::from_secs(70));
    // ids buffered in the killed stream manager are replayed (after their timeout, or by a
    // spout that restarted with it)
    assert!(
        replayed + reemitted > 0,
        "a killed stream manager lost nothing to replay: failed {failed}, replayed {replayed}, \
         re-emitted {reemitted}"
    );
}

#[test]
fn a_killed_tmaster_comes_back_and_nothing_is_lost() {
    let _serial = serial();
    let run = start();
    run.wait_acked(FAULT_AT, Duration::from_secs(40), "before the fault");
    let state = LocalFsStateManager::new(run.env.state_root());
    let location = || state.get_tmanager_location(NAME).ok().flatten();
    let before = location().expect("the tmaster location");
    let pid = *role_pids(&run.env, "tmaster").first().expect("the tmaster");
    // the dead tmaster's node stays on disk (a local file has no session): the new tmaster
    // must write its own, so the node is read once it was written after the kill
    let node = run.env.state_root().join("tmanagers").join(NAME);
    let killed_at = SystemTime::now();
    run.kill_and_wait_restart("tmaster", pid, || role_pids(&run.env, "tmaster"));
    // it comes back on the same ports and publishes its location again
    let after = wait_for(Duration::from_secs(20), "the new tmaster location", || {
        let written = node.metadata().and_then(|m| m.modified()).ok()?;
        (written > killed_at).then(location).flatten()
    });
    assert_eq!(
        (after.server_port, after.controller_port),
        (before.server_port, before.controller_port),
        "the tmaster restarts on the same ports"
    );
    // every stream manager registers again with the new tmaster
    wait_for(
        Duration::from_secs(30),
        "stream managers to re-register",
        || {
            ["stmgr-1", "stmgr-2"]
                .iter()
                .all(|s| log_count(&run.env, s, "registered with the tmaster") >= 2)
                .then_some(())
        },
    );
    run.finish("tmaster killed", Duration::from_secs(60));
}
