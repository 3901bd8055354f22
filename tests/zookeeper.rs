//! WordCount on the `localzk` cluster against a real ZooKeeper server: the nodes read back by
//! a client of another language (Python `kazoo`, parsed with heronpy's protos), the tmaster's
//! ephemeral node lost and re-created, controller commands, and kill removing every node.
//!
//! The server comes from statemgr's fixture (`HERONRS_ZK=host:port`, or a private server
//! started with scripts/zookeeper.sh). Each test has a private HOME, where
//! `~/.heron/conf/localzk/statemgr.yaml` points `localzk` at the server and a root of its own.

mod support;
#[path = "../statemgr/tests/support/mod.rs"]
mod zk;

use heron_statemgr::{StateDir, StateManager, ZkConfig, ZkStateManager};
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use support::{
    assert_ok, counter_in, example, heron_python, role_pids, wait_for, wait_growth, TestEnv,
};

const CLUSTER: &str = "localzk";
const NAME: &str = "WordCount";
const WAIT: Duration = Duration::from_secs(60);

struct World {
    env: TestEnv,
    ctx: zk::Ctx,
}

impl World {
    fn new() -> Option<World> {
        let ctx = zk::ctx()?;
        let env = TestEnv::new();
        let dir = env.home().join(".heron/conf").join(CLUSTER);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("statemgr.yaml"),
            format!(
                "# written by tests/zookeeper.rs\n\
                 heron.statemgr.connection.string: \"{}\"\n\
                 heron.statemgr.root.path: {}\n",
                ctx.server.connect, ctx.root
            ),
        )
        .unwrap();
        Some(World { env, ctx })
    }

    fn heron(&self, verb: &str, args: &[&str]) -> std::process::Output {
        self.env.heron_in(verb, CLUSTER, &[], args)
    }

    fn counter(&self, key: &str) -> u64 {
        counter_in(&self.env, CLUSTER, NAME, key)
    }

    /// kazoo + heronpy over the topology's nodes; the JSON summary.
    fn check_zk(&self, absent: bool) -> serde_json::Value {
        ensure_kazoo();
        let mut cmd = Command::new(heron_python());
        cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_zk.py"))
            .arg(&self.ctx.server.connect)
            .arg(&self.ctx.root)
            .arg(NAME);
        if absent {
            cmd.arg("--absent");
        }
        let out = cmd.output().expect("run check_zk.py");
        assert_ok(&out, "check_zk.py");
        serde_json::from_slice(&out.stdout).expect("check_zk.py prints JSON")
    }

    fn state(&self) -> ZkStateManager {
        let mut c = ZkConfig::new(self.ctx.server.connect.clone(), self.ctx.root.clone());
        c.connect_timeout = Duration::from_secs(20);
        ZkStateManager::connect(c).expect("connect to zookeeper")
    }

    /// The tmaster's pid, once exactly one runs.
    fn tmaster_pid(&self) -> i32 {
        wait_for(WAIT, "one tmaster process", || {
            let pids = role_pids(&self.env, "tmaster");
            (pids.len() == 1).then(|| pids[0])
        })
    }

    /// Waits until the location node names a session other than `old_owner`; returns it.
    fn new_location_owner(&self, old_owner: u64) -> u64 {
        wait_for(WAIT, "a new tmanagers node", || {
            let out = Command::new(heron_python())
                .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_zk.py"))
                .arg(&self.ctx.server.connect)
                .arg(&self.ctx.root)
                .arg(NAME)
                .output()
                .ok()?;
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
            let owner = v["tmanager_owner"].as_u64()?;
            (owner != old_owner).then_some(owner)
        })
    }
}

impl Drop for World {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.env.dump_logs_in(CLUSTER, NAME);
        }
        let _ = self.heron("kill", &[NAME]);
    }
}

/// The test Python may predate kazoo in requirements.txt: install it into that environment.
fn ensure_kazoo() {
    let py = heron_python();
    let ok = Command::new(&py)
        .args(["-c", "import kazoo"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        let st = Command::new(&py)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .arg("kazoo==2.11.0")
            .status()
            .expect("run pip");
        assert!(st.success(), "pip install kazoo failed");
    }
}

macro_rules! world_or_skip {
    () => {
        match World::new() {
            Some(w) => w,
            None => return,
        }
    };
}

#[test]
fn word_count_on_localzk_survives_tmaster_loss_and_kill_removes_every_node() {
    let w = world_or_skip!();
    let out = w.heron(
        "submit",
        &[
            example("word_count").to_str().unwrap(),
            "--parallelism",
            "2",
        ],
    );
    assert_ok(&out, "heron submit localzk");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("zk://{}", w.ctx.server.connect)),
        "{stdout}"
    );
    wait_growth(WAIT, "tuples emitted", 100, || w.counter("emitted"));

    // Every node parses with Heron's protos; the location is ephemeral.
    let summary = w.check_zk(false);
    assert_eq!(summary["instances"], 6, "{summary}");
    let owner = summary["tmanager_owner"].as_u64().unwrap();
    assert_ne!(owner, 0);

    // The location node is deleted: the tmaster exits, is restarted, writes a new node.
    let pid = w.tmaster_pid();
    w.state().delete(StateDir::TManagers, NAME).unwrap();
    let owner2 = w.new_location_owner(owner);
    wait_for(WAIT, "a new tmaster process", || {
        let p = role_pids(&w.env, "tmaster");
        (p.len() == 1 && p[0] != pid).then_some(())
    });
    wait_growth(WAIT, "tuples after the location was deleted", 100, || {
        w.counter("emitted")
    });

    // The tmaster is killed: its node lives until its session times out (10 s), then the
    // restarted tmaster takes over.
    let pid = w.tmaster_pid();
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    w.new_location_owner(owner2);
    wait_growth(WAIT, "tuples after the tmaster was killed", 100, || {
        w.counter("emitted")
    });
    let summary = w.check_zk(false);
    assert_eq!(summary["instances"], 6, "{summary}");

    // Controller commands on localzk.
    assert_ok(&w.heron("deactivate", &[NAME]), "heron deactivate localzk");
    let out = w.heron("deactivate", &[NAME]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("TOPOLOGY_ALREADY_DEACTIVE"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(w.check_zk(false)["state"], 2, "PAUSED in the pplan node");
    assert_ok(&w.heron("activate", &[NAME]), "heron activate localzk");
    assert_eq!(w.check_zk(false)["state"], 1, "RUNNING in the pplan node");

    // A --config-property overrides the file: another root has no such topology.
    let other_root = format!(
        "--config-property=heron.statemgr.root.path={}-x",
        w.ctx.root
    );
    let out = w.env.heron_in("activate", CLUSTER, &[other_root], &[NAME]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no topology named WordCount"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Kill removes every node of the topology.
    assert_ok(&w.heron("kill", &[NAME]), "heron kill localzk");
    w.check_zk(true);
    assert!(role_pids(&w.env, "tmaster").is_empty());
}

#[test]
fn a_second_tmaster_waits_for_the_location_then_gives_up() {
    let Some(ctx) = zk::ctx() else { return };
    // A location node held by another session: a tmaster retries, then exits clearly.
    let mut c = ZkConfig::new(ctx.server.connect.clone(), ctx.root.clone());
    c.connect_timeout = Duration::from_secs(20);
    let holder = ZkStateManager::connect(c).unwrap();
    holder
        .create(StateDir::TManagers, "T", b"someone else", true)
        .unwrap();
    let spec = heron_statemgr::StateManagerSpec::ZooKeeper(ZkConfig::new(
        ctx.server.connect.clone(),
        ctx.root.clone(),
    ));
    let topology = heron_proto::api::Topology {
        id: "T-1".into(),
        name: "T".into(),
        ..Default::default()
    };
    let state = spec.open().unwrap();
    heron_statemgr::StateManagerExt::set_proto(&*state, StateDir::Topologies, "T", &topology)
        .unwrap();
    let plan = heron_proto::system::PackingPlan {
        id: "T-1".into(),
        container_plans: vec![heron_proto::system::ContainerPlan {
            id: 1,
            ..Default::default()
        }],
    };
    heron_statemgr::StateManagerExt::set_proto(&*state, StateDir::PackingPlans, "T", &plan)
        .unwrap();
    let config = heron_tmaster::TmasterConfig {
        topology_name: "T".into(),
        topology_id: "T-1".into(),
        state_manager: spec,
        host: "127.0.0.1".into(),
        server_port: 0,
        controller_port: 0,
        stats_port: 0,
        ckptmgr_port: None,
        auth: None,
        tls: None,
    };
    let options = heron_tmaster::TmasterOptions {
        establish_retry_times: 3,
        establish_retry_interval: Duration::from_millis(200),
        ..Default::default()
    };
    let start = std::time::Instant::now();
    let err = heron_tmaster::run_with_options(config, options).unwrap_err();
    assert!(
        matches!(
            err,
            heron_tmaster::TmasterError::LocationExists { attempts: 3, .. }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("another tmaster"), "{err}");
    assert!(start.elapsed() >= Duration::from_millis(400));
    drop(holder);
}

#[test]
fn an_unreachable_state_manager_is_a_clear_error_naming_its_address() {
    // a port nothing listens on (no server needed)
    let port = heron_testkit::free_port();
    let env = TestEnv::new();
    let out = env.heron_in(
        "submit",
        CLUSTER,
        &[
            "--config-property".into(),
            format!("heron.statemgr.connection.string=127.0.0.1:{port}"),
            "--config-property".into(),
            "heron.statemgr.zookeeper.connection.timeout.ms=2000".into(),
        ],
        &[example("word_count").to_str().unwrap()],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("127.0.0.1:{port}")) && err.contains("state manager"),
        "{err}"
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("[1/5]"),
        "nothing was defined before the state manager answered"
    );
}
