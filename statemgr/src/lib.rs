//! State managers: where a topology's shared state lives, in Heron's layout.
//!
//! A node is `<root>/<dir>/<topology>` and holds a serialized Heron proto (see [`StateDir`]).
//! [`StateManager`] is the one interface every daemon and the CLI use. Two backends:
//!
//! * [`LocalFsStateManager`], the embedded default (no server needed), with Heron's local root
//!   `~/.herondata/repository/state/local`;
//! * [`ZkStateManager`], a real ZooKeeper ensemble (default root `/heron`), with ephemeral
//!   nodes that go away with the session and watches instead of polling.
//!
//! Pick one from Heron-style configuration with [`from_config`], or from a compact spec
//! (`local:/path`, `zk://127.0.0.1:2181/heron`) with [`StateManagerSpec`].
//!
//! Depends only on `heron-proto` (and the `zookeeper-client` crate for the ZooKeeper backend).

mod config;
mod error;
mod local;
mod spec;
mod watch;
mod zk;
mod zk_watch;

pub use config::{
    from_config, CLASS_LOCAL_FS, CLASS_ZOOKEEPER, KEY_CLASS, KEY_CLUSTER, KEY_CONNECTION_STRING,
    KEY_ROOT_PATH, KEY_ZK_CONNECTION_TIMEOUT_MS, KEY_ZK_SESSION_TIMEOUT_MS,
};
pub use error::{BoxError, StateError};
pub use local::LocalFsStateManager;
pub use spec::StateManagerSpec;
pub use watch::{poll_node, NodeEvent, NodeWatch, DEFAULT_POLL_INTERVAL};
pub use zk::{ZkConfig, ZkStateManager, DEFAULT_ZK_ROOT, DEFAULT_ZK_TIMEOUT};

use heron_proto::{api, system, tmanager, Message};
use std::path::PathBuf;

/// The directories of Heron's state layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StateDir {
    /// `tmanagers`: `TManagerLocation`, ephemeral.
    TManagers,
    /// `topologies`: `Topology`.
    Topologies,
    /// `packingplans`: `PackingPlan`.
    PackingPlans,
    /// `pplans`: `PhysicalPlan`.
    PPlans,
    /// `executionstate`: `ExecutionState`.
    ExecutionState,
    /// `schedulers`: `SchedulerLocation`.
    Schedulers,
    /// `statefulcheckpoints`: `StatefulConsistentCheckpoints`.
    StatefulCheckpoints,
    /// `metricscaches`: `MetricsCacheLocation`.
    MetricsCaches,
    /// `locks`.
    Locks,
}

impl StateDir {
    /// Every directory, in Heron's order.
    pub const ALL: [StateDir; 9] = [
        StateDir::TManagers,
        StateDir::Topologies,
        StateDir::PackingPlans,
        StateDir::PPlans,
        StateDir::ExecutionState,
        StateDir::Schedulers,
        StateDir::StatefulCheckpoints,
        StateDir::MetricsCaches,
        StateDir::Locks,
    ];

    /// The directory's name in the layout.
    pub fn name(self) -> &'static str {
        match self {
            StateDir::TManagers => "tmanagers",
            StateDir::Topologies => "topologies",
            StateDir::PackingPlans => "packingplans",
            StateDir::PPlans => "pplans",
            StateDir::ExecutionState => "executionstate",
            StateDir::Schedulers => "schedulers",
            StateDir::StatefulCheckpoints => "statefulcheckpoints",
            StateDir::MetricsCaches => "metricscaches",
            StateDir::Locks => "locks",
        }
    }
}

/// A store of nodes `<dir>/<topology>`, each holding bytes.
pub trait StateManager: Send + Sync {
    /// The node's bytes, or `None` if it does not exist.
    fn get(&self, dir: StateDir, topology: &str) -> Result<Option<Vec<u8>>, StateError>;
    /// Creates or overwrites the node, atomically: readers see the old or the new bytes.
    fn set(&self, dir: StateDir, topology: &str, data: &[u8]) -> Result<(), StateError>;
    /// Creates the node; [`StateError::AlreadyExists`] if it exists. An ephemeral node goes
    /// away with the session that created it (where the backend has sessions).
    fn create(
        &self,
        dir: StateDir,
        topology: &str,
        data: &[u8],
        ephemeral: bool,
    ) -> Result<(), StateError>;
    /// Deletes the node; deleting a missing node is not an error.
    fn delete(&self, dir: StateDir, topology: &str) -> Result<(), StateError>;
    /// The topology names that have a node in `dir`, sorted.
    fn list(&self, dir: StateDir) -> Result<Vec<String>, StateError>;
    /// A short description for logs, e.g. `local:/home/u/.herondata/repository/state/local`.
    fn describe(&self) -> String;
    /// Watches one node; see [`NodeWatch`] for the semantics. The first event is the node's
    /// value when the watch was set; every change after `watch` returns is reported (changes in
    /// quick succession may be coalesced into one event carrying the latest value).
    ///
    /// [`ZkStateManager`] uses ZooKeeper watches and reports [`NodeEvent::SessionLost`] when its
    /// session ends; [`LocalFsStateManager`] polls (see [`poll_node`]). This default returns
    /// [`StateError::Unsupported`], so that other implementations (test doubles) need not
    /// implement it.
    fn watch(&self, dir: StateDir, topology: &str) -> Result<NodeWatch, StateError> {
        let _ = (dir, topology);
        Err(StateError::Unsupported {
            backend: self.describe(),
            what: "watch",
        })
    }
}

/// Typed access to the nodes, for every [`StateManager`].
pub trait StateManagerExt: StateManager {
    /// Reads and decodes a node.
    fn get_proto<M: Message + Default>(
        &self,
        dir: StateDir,
        topology: &str,
    ) -> Result<Option<M>, StateError> {
        match self.get(dir, topology)? {
            None => Ok(None),
            Some(bytes) => {
                M::decode(&bytes[..])
                    .map(Some)
                    .map_err(|source| StateError::Corrupted {
                        dir: dir.name(),
                        topology: topology.to_string(),
                        source,
                    })
            }
        }
    }
    /// Encodes and writes a node.
    fn set_proto<M: Message>(
        &self,
        dir: StateDir,
        topology: &str,
        msg: &M,
    ) -> Result<(), StateError> {
        self.set(dir, topology, &msg.encode_to_vec())
    }
    /// `topologies/<name>`.
    fn get_topology(&self, name: &str) -> Result<Option<api::Topology>, StateError> {
        self.get_proto(StateDir::Topologies, name)
    }
    /// `packingplans/<name>`.
    fn get_packing_plan(&self, name: &str) -> Result<Option<system::PackingPlan>, StateError> {
        self.get_proto(StateDir::PackingPlans, name)
    }
    /// `pplans/<name>`.
    fn get_physical_plan(&self, name: &str) -> Result<Option<system::PhysicalPlan>, StateError> {
        self.get_proto(StateDir::PPlans, name)
    }
    /// `executionstate/<name>`.
    fn get_execution_state(
        &self,
        name: &str,
    ) -> Result<Option<system::ExecutionState>, StateError> {
        self.get_proto(StateDir::ExecutionState, name)
    }
    /// `tmanagers/<name>`.
    fn get_tmanager_location(
        &self,
        name: &str,
    ) -> Result<Option<tmanager::TManagerLocation>, StateError> {
        self.get_proto(StateDir::TManagers, name)
    }
    /// Deletes every node of the topology in every directory.
    fn delete_topology(&self, name: &str) -> Result<(), StateError> {
        for dir in StateDir::ALL {
            self.delete(dir, name)?;
        }
        Ok(())
    }
}

impl<S: StateManager + ?Sized> StateManagerExt for S {}

/// Checks that a topology name can be a node name.
pub fn validate_name(name: &str) -> Result<(), StateError> {
    let ok = !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(StateError::InvalidName(name.to_string()))
    }
}

/// Heron's default local state root for a cluster: `~/.herondata/repository/state/<cluster>`.
pub fn default_local_root(cluster: &str) -> PathBuf {
    home_dir()
        .join(".herondata")
        .join("repository")
        .join("state")
        .join(cluster)
}

/// `$HOME`, or `/` when unset.
pub fn home_dir() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}
