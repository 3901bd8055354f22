//! The errors that stop a stream manager.

/// Why [`crate::run`] returned.
#[derive(Debug, thiserror::Error)]
pub enum StmgrError {
    /// The configuration cannot work.
    #[error("invalid stream manager configuration: {0}")]
    Config(String),
    /// The tokio runtime could not be built.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// A server port could not be bound.
    #[error("cannot bind the {what} on {addr}: {source}")]
    Bind {
        /// Which server.
        what: &'static str,
        /// The address.
        addr: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}
