//! Test fixtures: a fake topology binary (a shell script) with its own HOME and state root,
//! which kills every process it started when dropped. Waiting is `heron_testkit::wait_for`.

use crate::layout;
use crate::{KillRequest, SubmitRequest};
use heron_proto::api::Topology;
use heron_proto::Message;
use heron_testkit::plan::TopologyBuilder;
use heron_testkit::ProcessGuard;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

/// What the fake executor runs by default: two children in its process group whose command
/// lines name the topology, like real roles; each runs a `sleep` (5 processes in the group).
pub const TWO_CHILDREN: &str = "sh -c 'sleep 30; true' heron-role child --topology-name \"$6\" &\n\
     sh -c 'sleep 30; true' heron-role child --topology-name \"$6\" &\n\
     wait";

pub struct FakeWorld {
    pub root: PathBuf,
    pub home: PathBuf,
    pub state_root: PathBuf,
    pub binary: PathBuf,
}

/// `name`: spout `s` x2 and bolt `b` x1 over 2 containers.
pub fn topology(name: &str) -> Topology {
    TopologyBuilder::new("", name)
        .spout("s", vec![])
        .bolt("b", vec![], vec![])
        .parallelism("s", 2)
        .parallelism("b", 1)
        .stmgrs(2)
        .build()
}

impl FakeWorld {
    /// A binary whose `define` writes [`topology`]`(name)` and whose `executor` runs
    /// `executor_script` (`$6` is the topology name).
    pub fn new(name: &str, executor_script: &str) -> FakeWorld {
        let root = std::env::temp_dir().join(format!("heron-sched-test-{}", uuid::Uuid::new_v4()));
        let home = root.join("home");
        let state_root = home.join(".herondata/repository/state/local");
        std::fs::create_dir_all(&home).unwrap();
        let defn = root.join("topology.defn");
        std::fs::write(&defn, topology(name).encode_to_vec()).unwrap();
        let binary = root.join("topo.sh");
        std::fs::write(
            &binary,
            format!(
                "#!/bin/sh\ncase \"$2\" in\n  define) cp '{}' \"$4\" ;;\n  executor)\n{executor_script}\n  ;;\n  *) exit 64 ;;\nesac\n",
                defn.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
        FakeWorld {
            root,
            home,
            state_root,
            binary,
        }
    }

    pub fn request(&self) -> SubmitRequest {
        SubmitRequest {
            role: "tester".into(),
            state_manager: heron_statemgr::StateManagerSpec::Local(self.state_root.clone()),
            home: self.home.clone(),
            ..SubmitRequest::new(&self.binary, vec!["--flag".into()])
        }
    }

    pub fn kill_request(&self, name: &str) -> KillRequest {
        KillRequest {
            role: "tester".into(),
            state_manager: heron_statemgr::StateManagerSpec::Local(self.state_root.clone()),
            home: self.home.clone(),
            grace: Duration::from_secs(2),
            ..KillRequest::new(name)
        }
    }

    pub fn working_dir(&self, name: &str) -> PathBuf {
        layout::working_dir(&self.home, "local", "tester", name)
    }
}

impl Drop for FakeWorld {
    fn drop(&mut self) {
        let base = self.home.join(".herondata/topologies/local/tester");
        let executors = std::fs::read_dir(base)
            .into_iter()
            .flatten()
            .flatten()
            .flat_map(|topo| layout::read_pid_files(&topo.path()).unwrap_or_default());
        drop(ProcessGuard::groups(executors.map(|(_, pid)| pid)));
        let _ = std::fs::remove_dir_all(&self.root);
    }
}
