//! Why a topology cannot be packed.

/// Why packing failed. Every message names the numbers or the config entry at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PackingError {
    /// `topology.stmgrs` is below 1.
    #[error("topology.stmgrs is {containers}: a topology needs at least 1 container")]
    TooFewContainers {
        /// The requested number of containers.
        containers: i64,
    },
    /// More containers than instances: some container would be empty.
    #[error(
        "{containers} containers requested (topology.stmgrs) but the topology has only \
         {instances} instances; every container needs at least one"
    )]
    TooManyContainers {
        /// The requested number of containers.
        containers: i64,
        /// The total number of instances.
        instances: u64,
    },
    /// More instances than task ids (an `i32`) can number.
    #[error("the topology has {instances} instances; task ids run out at 2147483647")]
    TooManyInstances {
        /// The total number of instances.
        instances: u64,
    },
    /// A component's parallelism is below 1.
    #[error("component {component:?} has parallelism {parallelism}; it must be at least 1")]
    InvalidParallelism {
        /// The component.
        component: String,
        /// The parallelism asked for.
        parallelism: i64,
    },
    /// Two components share a name.
    #[error("component name {0:?} is used twice")]
    DuplicateComponent(String),
    /// A parallelism change names a component the topology does not have.
    #[error("no component {0:?} in the topology")]
    UnknownComponent(String),
    /// A config value does not parse.
    #[error("config {key} = {value:?}: {reason}")]
    BadConfig {
        /// The config key.
        key: String,
        /// The value found.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An instance would get less RAM than the minimum.
    #[error(
        "instance {task_id} of {component:?} in container {container} would get {ram} bytes of \
         RAM; the minimum is {min} bytes"
    )]
    InsufficientRam {
        /// The container.
        container: i32,
        /// The component.
        component: String,
        /// The instance's task id.
        task_id: i32,
        /// The RAM it would get, in bytes.
        ram: i64,
        /// The minimum, in bytes.
        min: i64,
    },
    /// An instance would get no CPU.
    #[error(
        "instance {task_id} of {component:?} in container {container} would get {cpu} CPUs; \
         it needs more than 0"
    )]
    InsufficientCpu {
        /// The container.
        container: i32,
        /// The component.
        component: String,
        /// The instance's task id.
        task_id: i32,
        /// The CPU it would get.
        cpu: f64,
    },
}
