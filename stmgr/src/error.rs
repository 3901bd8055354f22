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

/// Why the core closes a connection: what arrived on it does not belong there or does not
/// parse. Logged with the connection; the stream manager goes on.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnError {
    /// A message type this connection must not send.
    #[error("unexpected {0}")]
    Unexpected(String),
    /// A message that prost cannot decode.
    #[error("malformed {what}: {source}")]
    Message {
        /// The message type.
        what: &'static str,
        /// Why.
        #[source]
        source: heron_proto::prost::DecodeError,
    },
    /// A packet whose payload is not the message its type names.
    #[error(transparent)]
    Packet(#[from] heron_proto::CodecError),
    /// Tuple bytes that are not what they must be.
    #[error("malformed {what}: {source}")]
    Tuples {
        /// What was being read (a tuple set, a data set, the tuples of a task, ...).
        what: TupleContext,
        /// Why.
        #[source]
        source: heron_proto::tuple::TupleError,
    },
}

/// Where malformed tuple bytes were found, for [`ConnError::Tuples`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TupleContext {
    /// A `HeronTupleSet` from an instance.
    TupleSet,
    /// Its `HeronDataTupleSet`.
    DataSet,
    /// A tuple from the instance of this task.
    Tuple(i32),
    /// The control tuples from the instance of this task.
    Control(i32),
    /// A `HeronTupleSet2` from another stream manager.
    TupleSet2,
    /// The control tuples from another stream manager.
    RemoteControl,
}

impl std::fmt::Display for TupleContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TupleContext::TupleSet => write!(f, "HeronTupleSet"),
            TupleContext::DataSet => write!(f, "HeronDataTupleSet"),
            TupleContext::Tuple(task) => write!(f, "tuple from task {task}"),
            TupleContext::Control(task) => write!(f, "control tuples from task {task}"),
            TupleContext::TupleSet2 => write!(f, "HeronTupleSet2"),
            TupleContext::RemoteControl => write!(f, "control tuples from a stream manager"),
        }
    }
}

impl TupleContext {
    /// The error for `source` found here.
    pub(crate) fn error(self, source: heron_proto::tuple::TupleError) -> ConnError {
        ConnError::Tuples { what: self, source }
    }
}
