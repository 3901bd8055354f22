use super::*;
use crate::process::{group_alive, group_members};
use crate::test_support::{FakeWorld, TWO_CHILDREN};
use crate::{kill, SchedulerError};
use heron_statemgr::StateManagerExt;
use heron_testkit::wait_for;
use std::collections::HashMap;
use std::sync::Mutex;

#[test]
fn submit_writes_state_and_starts_one_executor_per_container_then_kill_leaves_nothing() {
    let world = FakeWorld::new("T", TWO_CHILDREN);
    let mut events = Vec::new();
    let sub = submit_with_progress(&world.request(), |e| events.push(format!("{e:?}"))).unwrap();
    assert_eq!(events.len(), 5, "{events:?}");
    assert_eq!(sub.name, "T");
    assert!(
        sub.id.starts_with("T-") && sub.id.len() == 2 + 36,
        "{}",
        sub.id
    );
    assert_eq!((sub.containers, sub.instances), (2, 3));
    assert_eq!(sub.working_dir, world.working_dir("T"));
    let shards: Vec<i32> = sub.executors.iter().map(|e| e.shard).collect();
    assert_eq!(shards, [0, 1, 2]);

    let state = heron_statemgr::LocalFsStateManager::new(&world.state_root);
    assert_eq!(state.get_topology("T").unwrap().unwrap().id, sub.id);
    let plan = state.get_packing_plan("T").unwrap().unwrap();
    assert_eq!(plan.container_plans.len(), 2);
    let exec = state.get_execution_state("T").unwrap().unwrap();
    assert_eq!(exec.topology_id, sub.id);
    assert_eq!(
        (exec.cluster.as_str(), exec.role.as_str()),
        ("local", "tester")
    );
    assert_eq!(exec.environ, "default");
    assert_eq!(
        exec.release_state.unwrap().release_version.as_deref(),
        Some(VERSION)
    );
    assert!(exec.submission_time.unwrap() > 1_600_000_000);

    for e in &sub.executors {
        let pid_file =
            std::fs::read_to_string(layout::pid_file(&sub.working_dir, e.shard)).unwrap();
        assert_eq!(pid_file.trim(), e.pid.to_string());
        // the executor script and its two children share the executor's process group
        wait_for(Duration::from_secs(5), "3 processes in the group", || {
            group_members(e.pid).len() >= 3
        });
    }
    let args = crate::process::cmdline(sub.executors[1].pid);
    let tail: Vec<&str> = args.iter().skip(2).map(String::as_str).collect();
    assert_eq!(
        tail,
        [
            "heron-role",
            "executor",
            "--shard",
            "1",
            "--topology-name",
            "T",
            "--topology-id",
            &sub.id,
            "--state-manager",
            &format!("local:{}", world.state_root.display()),
            "--cluster",
            "local",
            "--role",
            "tester",
            "--environ",
            "default",
            "--host",
            "127.0.0.1",
            "--",
            "--flag"
        ]
    );

    let report = kill(&world.kill_request("T")).unwrap();
    assert_eq!(report.executors, sub.executors);
    for e in &sub.executors {
        assert!(!group_alive(e.pid), "group {} is gone", e.pid);
    }
    for dir in StateDir::ALL {
        assert!(
            state.get(dir, "T").unwrap().is_none(),
            "{} deleted",
            dir.name()
        );
    }
    assert!(layout::read_pid_files(&sub.working_dir).unwrap().is_empty());
    assert!(layout::log_file(&sub.working_dir, "executor-0").exists());
    assert!(layout::metrics_dir(&sub.working_dir).is_dir());
}

#[test]
fn a_running_topology_is_refused() {
    let world = FakeWorld::new("Dup", TWO_CHILDREN);
    let state = heron_statemgr::LocalFsStateManager::new(&world.state_root);
    state.set(StateDir::Topologies, "Dup", b"").unwrap();
    let err = submit(&world.request()).unwrap_err();
    assert!(
        matches!(err, SchedulerError::AlreadyRunning { .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("topology 'Dup' is already running in cluster 'local'"),
        "{msg}"
    );
    assert!(msg.contains("heron kill local Dup"), "{msg}");
    assert!(
        msg.contains(&world.state_root.to_string_lossy().into_owned()),
        "{msg}"
    );
    assert!(state.get(StateDir::PackingPlans, "Dup").unwrap().is_none());
    assert!(!world.working_dir("Dup").exists(), "nothing launched");
}

#[test]
fn a_failing_define_writes_no_state() {
    let world = FakeWorld::new("T", TWO_CHILDREN);
    let mut req = world.request();
    let bad = world.root.join("bad.sh");
    std::fs::write(&bad, "#!/bin/sh\necho 'no spouts declared' >&2\nexit 1\n").unwrap();
    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o755)).unwrap();
    req.binary = bad;
    let err = submit(&req).unwrap_err().to_string();
    assert!(err.contains("no spouts declared"), "{err}");
    assert!(heron_statemgr::LocalFsStateManager::new(&world.state_root)
        .list(StateDir::Topologies)
        .unwrap()
        .is_empty());
}

#[test]
fn bad_binaries_are_named() {
    let world = FakeWorld::new("T", TWO_CHILDREN);
    let missing = check_binary(&world.root.join("nope"))
        .unwrap_err()
        .to_string();
    assert!(
        missing.contains("nope") && missing.contains("does not exist"),
        "{missing}"
    );
    let dir = check_binary(&world.root).unwrap_err().to_string();
    assert!(dir.contains("is a directory"), "{dir}");
    let plain = world.root.join("plain");
    std::fs::write(&plain, "x").unwrap();
    let not_exec = check_binary(&plain).unwrap_err().to_string();
    assert!(not_exec.contains("not executable"), "{not_exec}");
    assert!(check_binary(Path::new("")).is_err());
    assert_eq!(
        check_binary(&world.binary).unwrap(),
        world.binary.canonicalize().unwrap()
    );
}

#[test]
fn bad_cluster_and_role_names_are_refused() {
    let world = FakeWorld::new("T", TWO_CHILDREN);
    let mut req = world.request();
    req.cluster = "a/b".into();
    assert!(submit(&req)
        .unwrap_err()
        .to_string()
        .contains("invalid cluster"));
    let mut req = world.request();
    req.role = "../etc".into();
    assert!(submit(&req)
        .unwrap_err()
        .to_string()
        .contains("invalid role"));
}

/// A state manager in memory that fails writes to one directory.
struct Flaky {
    nodes: Mutex<HashMap<(StateDir, String), Vec<u8>>>,
    fail: StateDir,
}

impl StateManager for Flaky {
    fn get(&self, dir: StateDir, t: &str) -> Result<Option<Vec<u8>>, StateError> {
        Ok(self
            .nodes
            .lock()
            .unwrap()
            .get(&(dir, t.to_string()))
            .cloned())
    }
    fn set(&self, dir: StateDir, t: &str, data: &[u8]) -> Result<(), StateError> {
        if dir == self.fail {
            return Err(StateError::Io {
                path: PathBuf::from(dir.name()),
                source: std::io::Error::other("disk full"),
            });
        }
        self.nodes
            .lock()
            .unwrap()
            .insert((dir, t.to_string()), data.to_vec());
        Ok(())
    }
    fn create(&self, dir: StateDir, t: &str, data: &[u8], _e: bool) -> Result<(), StateError> {
        if self.get(dir, t)?.is_some() {
            return Err(StateError::AlreadyExists {
                dir: dir.name(),
                topology: t.to_string(),
            });
        }
        self.set(dir, t, data)
    }
    fn delete(&self, dir: StateDir, t: &str) -> Result<(), StateError> {
        self.nodes.lock().unwrap().remove(&(dir, t.to_string()));
        Ok(())
    }
    fn list(&self, _dir: StateDir) -> Result<Vec<String>, StateError> {
        Ok(Vec::new())
    }
    fn describe(&self) -> String {
        "memory".into()
    }
}

#[test]
fn write_state_rolls_back_what_it_wrote() {
    let mut topo = crate::test_support::topology("T");
    topo.id = "T-1".into();
    let plan = heron_packer::round_robin(&topo, "T-1").unwrap();
    let world = FakeWorld::new("T", TWO_CHILDREN);
    let exec = execution_state(&topo, &world.request(), SystemTime::now());
    for fail in [StateDir::PackingPlans, StateDir::ExecutionState] {
        let state = Flaky {
            nodes: Mutex::new(HashMap::new()),
            fail,
        };
        let err = write_state(&state, &topo, &plan, &exec).unwrap_err();
        assert!(err.to_string().contains("disk full"), "{err}");
        assert!(
            state.nodes.lock().unwrap().is_empty(),
            "rolled back after {fail:?}"
        );
    }
    let state = Flaky {
        nodes: Mutex::new(HashMap::new()),
        fail: StateDir::Locks,
    };
    write_state(&state, &topo, &plan, &exec).unwrap();
    assert_eq!(state.nodes.lock().unwrap().len(), 3);
    let again = write_state(&state, &topo, &plan, &exec).unwrap_err();
    assert!(matches!(again, SchedulerError::AlreadyRunning { .. }));
    assert_eq!(
        state.nodes.lock().unwrap().len(),
        3,
        "a refused write deletes nothing"
    );
}

/// A launcher that places processes elsewhere (as Slurm and Kubernetes do).
struct Elsewhere;

impl Launcher for Elsewhere {
    fn launch(
        &self,
        _req: &SubmitRequest,
        _topology: &heron_proto::api::Topology,
        _plan: &heron_proto::system::PackingPlan,
        _shards: &[i32],
        _working_dir: &std::path::Path,
    ) -> Result<Launch, SchedulerError> {
        panic!("a topology asking for CPU pinning must not be launched here")
    }
}

#[test]
fn cpu_pinning_is_refused_where_the_scheduler_cannot_pin_and_for_unknown_values() {
    let world = FakeWorld::new("Pin", TWO_CHILDREN);
    let mut req = world.request();
    req.topology_defaults = vec![(crate::pinning::KEY.into(), "core".into())];
    let err = submit_with(&req, &Elsewhere, |_| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains(crate::pinning::KEY), "{err}");
    assert!(err.contains("local scheduler"), "{err}");
    req.topology_defaults = vec![(crate::pinning::KEY.into(), "socket".into())];
    let err = submit(&req).unwrap_err().to_string();
    assert!(err.contains("\"socket\""), "{err}");
    let state = heron_statemgr::LocalFsStateManager::new(&world.state_root);
    assert!(state.list(StateDir::Topologies).unwrap().is_empty());
}
