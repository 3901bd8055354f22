//! State managers: where a topology's shared state lives, in Heron's layout.
//!
//! A node is `<root>/<dir>/<topology>` and holds a serialized Heron proto (see [`StateDir`]).
//! [`StateManager`] is the one interface every daemon and the CLI use; [`LocalFsStateManager`]
//! is the embedded default (no server needed), with Heron's local root
//! `~/.herondata/repository/state/local`.
//!
//! Depends only on `heron-proto`.

mod local;

pub use local::LocalFsStateManager;

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

/// What can go wrong with state.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The node exists and the caller asked to create it.
    #[error("{dir}/{topology} already exists")]
    AlreadyExists {
        /// Directory name.
        dir: &'static str,
        /// Topology name.
        topology: String,
    },
    /// Reading or writing the backing store failed.
    #[error("state i/o error at {path}: {source}")]
    Io {
        /// The node's path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A node holds bytes that are not the expected proto.
    #[error("{dir}/{topology} is corrupted: {source}")]
    Corrupted {
        /// Directory name.
        dir: &'static str,
        /// Topology name.
        topology: String,
        /// prost's error.
        source: heron_proto::prost::DecodeError,
    },
    /// The topology name cannot be used as a node name.
    #[error("invalid topology name {0:?}: use letters, digits, '-', '_' and '.'")]
    InvalidName(String),
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
            Some(bytes) => M::decode(&bytes[..])
                .map(Some)
                .map_err(|source| StateError::Corrupted {
                    dir: dir.name(),
                    topology: topology.to_string(),
                    source,
                }),
        }
    }
    /// Encodes and writes a node.
    fn set_proto<M: Message>(&self, dir: StateDir, topology: &str, msg: &M) -> Result<(), StateError> {
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
    fn get_execution_state(&self, name: &str) -> Result<Option<system::ExecutionState>, StateError> {
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
