//! Why the tmaster stops.

use heron_statemgr::StateError;

/// A fatal error: [`run`](crate::run) returns it and the executor restarts the tmaster.
#[derive(Debug, thiserror::Error)]
pub enum TmasterError {
    /// The tokio runtime could not be built.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The state manager failed.
    #[error("state manager: {what}: {source}")]
    State {
        /// What the tmaster was doing.
        what: String,
        /// The error.
        #[source]
        source: StateError,
    },
    /// No packing plan appeared in time.
    #[error("no packingplans/{topology} after {attempts} attempts")]
    MissingPackingPlan {
        /// The topology.
        topology: String,
        /// How many times we looked.
        attempts: u32,
    },
    /// The packing plan cannot be used.
    #[error("invalid packing plan: {0}")]
    InvalidPackingPlan(String),
    /// There is no topology in the state.
    #[error("no topologies/{0} in the state")]
    MissingTopology(String),
    /// The stored topology does not match the config or is malformed.
    #[error("invalid topology: {0}")]
    InvalidTopology(String),
    /// The server port could not be bound.
    #[error("cannot bind the server port at {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// Our location node is gone (the topology was killed).
    #[error("tmanagers/{0} was deleted")]
    LocationLost(String),
    /// Another tmaster's location node stayed in place through every retry.
    #[error(
        "tmanagers/{topology} still exists after {attempts} attempts: another tmaster of this \
         topology is running (or a crashed one's ZooKeeper session has not expired yet)"
    )]
    LocationExists {
        /// The topology.
        topology: String,
        /// How many times we tried.
        attempts: u32,
    },
    /// The state manager's session ended (ZooKeeper session expired): our ephemeral location
    /// node is gone with it.
    #[error("the state manager session of {0} ended; tmanagers/{0} went with it")]
    SessionLost(String),
    /// Another tmaster wrote its location over ours.
    #[error("tmanagers/{0} now names another tmaster")]
    LocationTaken(String),
    /// The packing plan changed (an update): the pplan was deleted; restart to apply it.
    #[error("packingplans/{0} changed; restarting to apply it")]
    PackingPlanChanged(String),
}
