//! Errors of the API.

/// Returned by [`BasicBolt::execute`](crate::BasicBolt::execute) to fail the input tuple
/// (Storm's `FailedException`; [`FailedException::reported`] is `ReportedFailedException`).
///
/// ```
/// use heron_api::FailedException;
/// let e = FailedException::new("bad input");
/// assert_eq!(e.to_string(), "bad input");
/// assert!(!e.is_reported());
/// assert!(FailedException::reported("boom").is_reported());
/// let from_str: FailedException = "x".into();
/// assert_eq!(from_str.message(), "x");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FailedException {
    message: String,
    reported: bool,
}

impl FailedException {
    /// Fails the tuple without reporting an error.
    pub fn new(message: impl Into<String>) -> Self {
        FailedException {
            message: message.into(),
            reported: false,
        }
    }

    /// Fails the tuple and also reports the error (like `report_error`).
    pub fn reported(message: impl Into<String>) -> Self {
        FailedException {
            message: message.into(),
            reported: true,
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// `true` when the error is also reported.
    pub fn is_reported(&self) -> bool {
        self.reported
    }
}

impl From<&str> for FailedException {
    fn from(s: &str) -> Self {
        FailedException::new(s)
    }
}

impl From<String> for FailedException {
    fn from(s: String) -> Self {
        FailedException::new(s)
    }
}

/// Why [`TopologyBuilder::build`](crate::TopologyBuilder::build) refused a topology.
/// Each message names the component, stream or field at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    /// A problem the topology's own code found (e.g. bad user arguments).
    #[error("invalid topology: {0}")]
    Invalid(String),
    /// The topology name is empty.
    #[error("the topology name is empty")]
    EmptyTopologyName,
    /// The topology name has characters other than letters, digits, '-', '_' and '.'.
    #[error("invalid topology name {0:?}: use only letters, digits, '-', '_' and '.'")]
    InvalidTopologyName(String),
    /// A windowed bolt's windows cannot run with this topology's settings.
    #[error("windowed bolt {component:?}: {reason}")]
    InvalidWindow {
        /// The bolt.
        component: String,
        /// What is wrong.
        reason: String,
    },
    /// A config value the runtime reads does not parse or is out of range.
    #[error("topology config {key} = {value:?}: expected {expected}")]
    InvalidConfig {
        /// The key.
        key: String,
        /// Its value.
        value: String,
        /// What it must be.
        expected: &'static str,
    },
    /// The topology has no spout.
    #[error("topology {0:?} has no spouts")]
    NoSpouts(String),
    /// A component name is empty, reserved, or has characters other than letters, digits,
    /// '-', '_' and '.'.
    #[error("invalid component name {name:?}: {reason}")]
    InvalidComponentName {
        /// The name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Two components have the same name.
    #[error("component name {0:?} is used more than once")]
    DuplicateComponent(String),
    /// A component has parallelism 0.
    #[error("component {0:?} has parallelism 0")]
    ZeroParallelism(String),
    /// A component declares the same stream twice.
    #[error("component {component:?} declares stream {stream:?} more than once")]
    DuplicateStream {
        /// The component.
        component: String,
        /// The stream.
        stream: String,
    },
    /// A stream id is empty or has characters other than letters, digits, '-', '_' and '.'.
    #[error("component {component:?} declares an invalid stream name {stream:?}")]
    InvalidStreamName {
        /// The component.
        component: String,
        /// The stream.
        stream: String,
    },
    /// A stream declares the same field twice.
    #[error(
        "stream {stream:?} of component {component:?} declares field {field:?} more than once"
    )]
    DuplicateField {
        /// The component.
        component: String,
        /// The stream.
        stream: String,
        /// The field.
        field: String,
    },
    /// A bolt subscribes to a component that does not exist.
    #[error("bolt {component:?} subscribes to unknown component {source_component:?}")]
    UnknownSource {
        /// The subscribing bolt.
        component: String,
        /// The unknown component.
        source_component: String,
    },
    /// A bolt subscribes to a stream its source does not declare.
    #[error("bolt {component:?} subscribes to stream {stream:?} which component {source_component:?} does not declare")]
    UnknownStream {
        /// The subscribing bolt.
        component: String,
        /// The source component.
        source_component: String,
        /// The stream.
        stream: String,
    },
    /// A bolt subscribes to the same stream twice.
    #[error(
        "bolt {component:?} subscribes to stream {stream:?} of {source_component:?} more than once"
    )]
    DuplicateInput {
        /// The subscribing bolt.
        component: String,
        /// The source component.
        source_component: String,
        /// The stream.
        stream: String,
    },
    /// A fields grouping names a field the stream does not declare.
    #[error("bolt {component:?} groups stream {stream:?} of {source_component:?} by field {field:?}, which the stream does not declare")]
    UnknownGroupingField {
        /// The subscribing bolt.
        component: String,
        /// The source component.
        source_component: String,
        /// The stream.
        stream: String,
        /// The field.
        field: String,
    },
    /// A fields grouping with no fields.
    #[error("bolt {component:?} groups stream {stream:?} of {source_component:?} by an empty list of fields")]
    EmptyGroupingFields {
        /// The subscribing bolt.
        component: String,
        /// The source component.
        source_component: String,
        /// The stream.
        stream: String,
    },
    /// A direct grouping on a stream not declared direct.
    #[error("bolt {component:?} uses a direct grouping on stream {stream:?} of {source_component:?}, which is not declared direct")]
    DirectGroupingOnNonDirectStream {
        /// The subscribing bolt.
        component: String,
        /// The source component.
        source_component: String,
        /// The stream.
        stream: String,
    },
    /// A direct stream consumed with a grouping other than direct.
    #[error("bolt {component:?} consumes direct stream {stream:?} of {source_component:?} without a direct grouping")]
    DirectStreamNeedsDirectGrouping {
        /// The subscribing bolt.
        component: String,
        /// The source component.
        source_component: String,
        /// The stream.
        stream: String,
    },
}

/// Why a [`TopologyContext`](crate::TopologyContext) could not be built from a physical plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContextError {
    /// The task id is not in the physical plan.
    #[error("task {0} is not in the physical plan")]
    UnknownTask(i32),
    /// The task's component is not in the plan's topology.
    #[error("component {0:?} of the physical plan is not in its topology")]
    UnknownComponent(String),
}
