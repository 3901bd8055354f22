//! WordCount on a real Slurm cluster: slurmctld and two emulated slurmd nodes (n1, n2) from
//! Debian's slurm-wlm, started by scripts/slurm.sh (or `HERONRS_SLURM_CONF` pointing at a
//! running one), with the topology's state in a real ZooKeeper (statemgr's fixture).
//!
//! The test submits to a `slurm` cluster defined the Heron way
//! (`~/.heron/conf/slurm/scheduler.yaml` naming `SlurmScheduler`, `statemgr.yaml` beside it),
//! then checks: the containers run as job steps of one job spread over both nodes (`squeue`),
//! counts grow (read through the tracker), `schedulerlocation` names the job, `heron restart
//! slurm WordCount 1` replaces container 1's step and its processes, `heron update
//! --container-number 3` submits the job again with four containers, and `heron kill` ends the
//! job and leaves no process and no state node.
//!
//! Slurm needs root (slurmd runs the steps as their users): elsewhere the test says what is
//! missing and skips, except under CI (`CI=true`), where it fails.

mod support;
#[path = "../statemgr/tests/support/mod.rs"]
mod zk;

use heron_statemgr::{StateDir, StateManager, StateManagerExt, StateManagerSpec};
use heron_testkit::process::processes_mentioning;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use support::http::get;
use support::{assert_ok, example, wait_for, TestEnv};

const CLUSTER: &str = "slurm";
const NAME: &str = "WordCount";
const WAIT: Duration = Duration::from_secs(60);

/// A Slurm cluster for this test: the one CI started, or a private one.
struct Slurm {
    conf: PathBuf,
    private: Option<tempfile::TempDir>,
}

impl Slurm {
    fn get() -> Option<Slurm> {
        if let Some(conf) = std::env::var_os("HERONRS_SLURM_CONF") {
            return Some(Slurm {
                conf: conf.into(),
                private: None,
            });
        }
        let missing = |why: String| {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("CI=true and no Slurm cluster can be had: {why}");
            }
            eprintln!("SKIPPED: no Slurm cluster ({why}); run as root, or set HERONRS_SLURM_CONF");
            None
        };
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return missing("slurmd must run as root".into());
        }
        let dir = tempfile::Builder::new()
            .prefix("heronrs-slurm-")
            .tempdir()
            .expect("temp dir");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/slurm.sh");
        let out = Command::new("bash")
            .arg(&script)
            .arg("start")
            .arg(dir.path())
            .output()
            .expect("run scripts/slurm.sh");
        if !out.status.success() {
            return missing(format!(
                "scripts/slurm.sh start failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Some(Slurm {
            conf: dir.path().join("slurm.conf"),
            private: Some(dir),
        })
    }

    /// A Slurm command against this cluster; its stdout.
    fn run(&self, program: &str, args: &[&str]) -> String {
        let out = Command::new(program)
            .args(args)
            .env("SLURM_CONF", &self.conf)
            .output()
            .unwrap_or_else(|e| panic!("run {program}: {e}"));
        assert!(out.status.success(), "{program} {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `(step id, step name, node)` of the job's steps.
    fn steps(&self, job: &str) -> Vec<(String, String, String)> {
        self.run("squeue", &["-h", "-s", "-j", job, "-o", "%i|%j|%N"])
            .lines()
            .filter_map(|l| {
                let mut p = l.trim().splitn(3, '|');
                Some((
                    p.next()?.to_string(),
                    p.next()?.to_string(),
                    p.next()?.to_string(),
                ))
            })
            .collect()
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        if let Some(dir) = &self.private {
            let _ = Command::new("bash")
                .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/slurm.sh"))
                .arg("stop")
                .arg(dir.path())
                .status();
        }
    }
}

/// Cancels the topology's job if the test ends before `heron kill` did.
struct CancelJob<'a>(&'a Slurm, Option<String>);

impl Drop for CancelJob<'_> {
    fn drop(&mut self) {
        if let Some(job) = &self.1 {
            let _ = Command::new("scancel")
                .arg(job)
                .env("SLURM_CONF", &self.0.conf)
                .status();
        }
    }
}

fn metric_total(addr: SocketAddr, component: &str, metric: &str) -> f64 {
    let q = format!("cluster={CLUSTER}&environ=default&topology={NAME}");
    let got = get(
        addr,
        &format!("/topologies/metrics?{q}&component={component}&metricname={metric}&interval=-1"),
    );
    if got.status != 200 {
        return 0.0;
    }
    got.json()["metrics"][metric]
        .as_object()
        .map(|o| {
            o.values()
                .filter_map(|v| v.as_str().and_then(|s| s.parse::<f64>().ok()))
                .sum()
        })
        .unwrap_or(0.0)
}

/// Pids of the topology's executor of `shard`.
fn executor_pids(topology_id: &str, shard: i32) -> Vec<i32> {
    processes_mentioning(topology_id)
        .into_iter()
        .filter(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let args: Vec<&[u8]> = cmd.split(|b| *b == 0).collect();
            // the executor itself, not the srun that started it
            args.get(1..3) == Some(&[&b"heron-role"[..], b"executor"][..])
                && args
                    .windows(2)
                    .any(|w| w[0] == b"--shard" && w[1] == shard.to_string().as_bytes())
        })
        .collect()
}

#[test]
fn word_count_runs_as_job_steps_over_two_nodes_restarts_a_container_and_is_killed() {
    let Some(slurm) = Slurm::get() else { return };
    let Some(zk) = zk::ctx() else { return };
    let mut env = TestEnv::new();
    env.set_env("SLURM_CONF", &slurm.conf);
    let dir = env.home().join(".heron/conf").join(CLUSTER);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("scheduler.yaml"),
        "heron.class.scheduler: org.apache.heron.scheduler.slurm.SlurmScheduler\n\
         heron-rs.slurm.nodes: 2\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("statemgr.yaml"),
        format!(
            "heron.class.state.manager: org.apache.heron.statemgr.zookeeper.curator.CuratorStateManager\n\
             heron.statemgr.connection.string: \"{}\"\n\
             heron.statemgr.root.path: {}\n",
            zk.server.connect, zk.root
        ),
    )
    .unwrap();
    let binary = example("word_count");
    let out = env.heron_in("submit", CLUSTER, &[], &[binary.to_str().unwrap()]);
    let state = zk.open();
    let job = state
        .get_proto::<heron_proto::scheduler::SchedulerLocation>(StateDir::Schedulers, NAME)
        .ok()
        .flatten()
        .and_then(|l| {
            l.job_page_link
                .iter()
                .find_map(|s| s.strip_prefix("slurm:").map(str::to_string))
        });
    let mut cancel = CancelJob(&slurm, job.clone());
    assert_ok(&out, "heron submit slurm WordCount");
    let job = job.expect("schedulers/WordCount names the Slurm job");
    let topology_id = state
        .get_proto::<heron_proto::api::Topology>(StateDir::Topologies, NAME)
        .unwrap()
        .expect("topologies/WordCount")
        .id;

    // one job; its steps are the three containers, over both nodes
    let steps = wait_for(WAIT, "three container steps", || {
        let s: Vec<_> = slurm
            .steps(&job)
            .into_iter()
            .filter(|(_, name, _)| name.starts_with("container-"))
            .collect();
        (s.len() == 3).then_some(s)
    });
    let mut names: Vec<&str> = steps.iter().map(|(_, n, _)| n.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["container-0", "container-1", "container-2"]);
    let mut nodes: Vec<&str> = steps.iter().map(|(_, _, n)| n.as_str()).collect();
    nodes.sort_unstable();
    nodes.dedup();
    assert_eq!(nodes, ["n1", "n2"], "steps {steps:?}");
    let jobs = slurm.run("squeue", &["-h", "-o", "%i|%j|%T", "-j", &job]);
    assert!(
        jobs.contains(&format!("{job}|{NAME}|RUNNING")),
        "squeue: {jobs}"
    );

    // counts grow, read through the tracker
    let tracker = heron_tracker::spawn_background(
        "127.0.0.1:0".parse().unwrap(),
        vec![heron_tracker::Cluster::new(
            CLUSTER,
            StateManagerSpec::ZooKeeper(zk.config()),
        )],
    )
    .expect("start the tracker");
    let addr = tracker.addr;
    let executed = "__execute-count/default";
    let first = wait_for(WAIT, "counts through the tracker", || {
        let n = metric_total(addr, "count", executed);
        (n > 0.0).then_some(n)
    });
    wait_for(WAIT, "counts to grow", || {
        (metric_total(addr, "count", executed) > first).then_some(())
    });
    let loc = get(
        addr,
        &format!("/topologies/schedulerlocation?cluster={CLUSTER}&environ=default&topology={NAME}"),
    )
    .json();
    assert_eq!(loc["name"], NAME, "{loc}");
    assert_eq!(loc["job_page_link"], format!("slurm:{job}"), "{loc}");

    // restart container 1: a new step, new processes, and the counts go on
    let old_step = steps
        .iter()
        .find(|(_, n, _)| n == "container-1")
        .map(|(id, _, _)| id.clone())
        .unwrap();
    let old_pids = executor_pids(&topology_id, 1);
    assert_eq!(old_pids.len(), 1, "executor-1 runs once: {old_pids:?}");
    let out = env.heron_in("restart", CLUSTER, &[], &[NAME, "1"]);
    assert_ok(&out, "heron restart slurm WordCount 1");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("restarted container 1"), "{stdout}");
    let new_step = slurm
        .steps(&job)
        .into_iter()
        .find(|(_, n, _)| n == "container-1")
        .map(|(id, _, _)| id)
        .expect("container-1 runs again");
    assert_ne!(new_step, old_step);
    let new_pids = wait_for(WAIT, "executor-1 to run again", || {
        let p = executor_pids(&topology_id, 1);
        (p.len() == 1 && p != old_pids).then_some(p)
    });
    assert!(!old_pids.iter().any(|p| new_pids.contains(p)));
    let before = metric_total(addr, "count", executed);
    wait_for(WAIT, "counts to grow after the restart", || {
        (metric_total(addr, "count", executed) > before).then_some(())
    });

    // update to three containers: the job is submitted again with four container steps
    let out = env.heron_in("update", CLUSTER, &[], &[NAME, "--container-number", "3"]);
    assert_ok(&out, "heron update slurm WordCount --container-number 3");
    let new_job = wait_for(WAIT, "the job submitted again", || {
        state
            .get_proto::<heron_proto::scheduler::SchedulerLocation>(StateDir::Schedulers, NAME)
            .ok()
            .flatten()
            .and_then(|l| {
                l.job_page_link
                    .first()?
                    .strip_prefix("slurm:")
                    .map(str::to_string)
            })
            .filter(|j| *j != job)
    });
    cancel.1 = Some(new_job.clone());
    wait_for(WAIT, "four container steps", || {
        let n = slurm
            .steps(&new_job)
            .iter()
            .filter(|(_, name, _)| name.starts_with("container-"))
            .count();
        (n == 4).then_some(())
    });
    wait_for(WAIT, "a physical plan with three stream managers", || {
        state
            .get_proto::<heron_proto::system::PhysicalPlan>(StateDir::PPlans, NAME)
            .ok()
            .flatten()
            .filter(|p| p.stmgrs.len() == 3)
    });
    let job = new_job;

    // kill: the job ends, no process and no state node is left
    let out = env.heron_in("kill", CLUSTER, &[], &[NAME]);
    assert_ok(&out, "heron kill slurm WordCount");
    cancel.1 = None;
    let left = slurm.run("squeue", &["-h", "-j", &job, "-o", "%T"]);
    assert!(
        left.trim().is_empty() || !left.contains("RUNNING") && !left.contains("COMPLETING"),
        "job {job} after kill: {left}"
    );
    wait_for(
        Duration::from_secs(10),
        "no process of the topology",
        || processes_mentioning(&topology_id).is_empty().then_some(()),
    );
    for dir in StateDir::ALL {
        assert_eq!(
            state.get(dir, NAME).unwrap(),
            None,
            "{}/{NAME} after kill",
            dir.name()
        );
    }
}
