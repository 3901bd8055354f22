//! The scheduler's error type.

use heron_statemgr::StateError;
use std::path::PathBuf;

/// What can go wrong while submitting, killing or running an executor.
#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    /// A role, environ or topology name that cannot be used in paths and state nodes.
    #[error("invalid {what} {value:?}: use letters, digits, '-', '_' and '.'")]
    InvalidName {
        /// What the name is for ("role", "environ", "topology name").
        what: &'static str,
        /// The rejected value.
        value: String,
    },
    /// The topology binary is missing or not runnable.
    #[error("topology binary {}: {reason}", path.display())]
    Binary {
        /// The path given.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The `define` role failed or produced nothing usable.
    #[error("defining the topology with {}: {reason}", binary.display())]
    Define {
        /// The topology binary.
        binary: PathBuf,
        /// What happened, with the binary's stderr when it has any.
        reason: String,
    },
    /// A topology of that name is already deployed.
    #[error(
        "topology '{name}' is already running in cluster '{cluster}' (state at {state}); \
         kill it first with `heron kill {cluster} {name}`"
    )]
    AlreadyRunning {
        /// Topology name.
        name: String,
        /// Cluster.
        cluster: String,
        /// The state manager's description.
        state: String,
    },
    /// No topology of that name is deployed.
    #[error("no topology named {name} in cluster {cluster}")]
    NotFound {
        /// Topology name.
        name: String,
        /// Cluster.
        cluster: String,
    },
    /// The topology asks for a mode or option heron-rs does not implement.
    #[error("topology '{name}' cannot be submitted: {reason}")]
    Unsupported {
        /// Topology name.
        name: String,
        /// What it asks for and why it is refused.
        reason: String,
    },
    /// The packer rejected the topology.
    #[error("packing topology '{name}' failed: {reason}")]
    Packing {
        /// Topology name.
        name: String,
        /// The packer's error.
        reason: String,
    },
    /// Reading or writing state failed.
    #[error(transparent)]
    State(#[from] StateError),
    /// A file or process operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
    /// The topology's secret could not be written or read.
    #[error("topology secret: {0}")]
    Auth(#[from] heron_auth::AuthError),
    /// The executor cannot run its container.
    #[error("executor: {0}")]
    Executor(String),
    /// A cluster scheduler (Slurm, ...) failed a request.
    #[error("{scheduler}: {reason}")]
    Cluster {
        /// The scheduler (`slurm`).
        scheduler: &'static str,
        /// What failed, with the cluster's own message.
        reason: String,
    },
    /// Processes of a topology survived SIGKILL.
    #[error("processes of topology '{name}' are still alive after SIGKILL: {pids:?}")]
    Survivors {
        /// Topology name.
        name: String,
        /// Pids still alive.
        pids: Vec<i32>,
    },
}

impl SchedulerError {
    /// [`SchedulerError::NotFound`] for topology `name` in `cluster`.
    ///
    /// ```
    /// let e = heron_scheduler::SchedulerError::not_found("WordCount", "local");
    /// assert_eq!(e.to_string(), "no topology named WordCount in cluster local");
    /// ```
    pub fn not_found(name: &str, cluster: &str) -> SchedulerError {
        SchedulerError::NotFound {
            name: name.to_string(),
            cluster: cluster.to_string(),
        }
    }

    /// An [`SchedulerError::Io`] with context, for `map_err`.
    ///
    /// ```
    /// use heron_scheduler::SchedulerError;
    /// let e = std::fs::read("/no/such/file").map_err(SchedulerError::io("reading it")).unwrap_err();
    /// assert!(e.to_string().starts_with("reading it: "));
    /// ```
    pub fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> SchedulerError {
        let context = context.into();
        move |source| SchedulerError::Io { context, source }
    }
}
