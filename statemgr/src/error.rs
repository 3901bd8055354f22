//! [`StateError`]: everything that can go wrong with state, for every backend.

use std::path::PathBuf;
use std::time::Duration;

/// A boxed error from a backend's client library, kept as the `source` of a [`StateError`]
/// without putting the library's types into this crate's API.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What can go wrong with state.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The node exists and the caller asked to create it (Heron's
    /// `TMANAGERLOCATION_ALREADY_EXISTS` for the tmanager's ephemeral node).
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
    /// A ZooKeeper operation failed (other than the cases with their own variant).
    #[error("zookeeper {op} {path} failed: {source}")]
    Zk {
        /// The operation: `get`, `set`, `create`, `delete`, `list`, `watch`, ...
        op: &'static str,
        /// The znode's full path.
        path: String,
        /// The client library's error.
        source: BoxError,
    },
    /// No ZooKeeper session could be established.
    #[error("cannot connect to zookeeper at {connect}: {source}")]
    Connect {
        /// The connection string, e.g. `127.0.0.1:2181`.
        connect: String,
        /// Why.
        source: BoxError,
    },
    /// The state manager's ZooKeeper session expired or was closed. Its ephemeral nodes are
    /// gone and every later call fails the same way: open a new state manager (a tmaster
    /// exits, and its executor restarts it).
    #[error("zookeeper session lost during {op} {path}: its ephemeral nodes are gone")]
    SessionExpired {
        /// The operation that noticed.
        op: &'static str,
        /// The znode's full path.
        path: String,
    },
    /// An operation got no answer in time.
    #[error("{op} {path} timed out after {after:?}")]
    Timeout {
        /// The operation.
        op: &'static str,
        /// The node's path.
        path: String,
        /// How long it waited.
        after: Duration,
    },
    /// A configuration entry for the state manager is missing or invalid.
    #[error("invalid state manager configuration {key} = {value:?}: {reason}")]
    Config {
        /// The configuration key, e.g. `heron.statemgr.connection.string`.
        key: String,
        /// The value given (empty when missing).
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A state manager spec (`local:/path`, `zk://host:port/root`) does not parse.
    #[error("invalid state manager spec {spec:?}: {reason}")]
    BadSpec {
        /// The spec as given.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The backend does not implement the operation.
    #[error("{backend} does not support {what}")]
    Unsupported {
        /// The backend's [`describe`](crate::StateManager::describe).
        backend: String,
        /// The operation.
        what: &'static str,
    },
}
