//! The stream manager's parts with their real interfaces, for the criterion benches in
//! `benches/` (`routing`, `xor`) and the tests: the same types the daemon runs, no wrappers.
//! Not a stable API: hidden from the docs. [`instance`] builds plan records for benches and
//! tests alike.

use heron_proto::system::{Instance, InstanceInfo};

pub use crate::acking::AckCounters;
pub use crate::core::{Action, Bytes4, ConnId, Core, CoreConfig, Counters, Incoming};
pub use crate::outbox::Delivered;
pub use crate::routing::{PlanError, Router, TaskInfo};
pub use crate::xor::{XorTracker, DEFAULT_NBUCKETS};

/// The plan record of task `task` of `component` in the container of `stmgr`
/// (`stmgr-<c>`), with Heron's instance id `container_<c>_<component>_<task>`. Shared by the
/// benches, the unit tests and the integration tests.
pub fn instance(stmgr: &str, component: &str, task: i32) -> Instance {
    let container = stmgr.trim_start_matches("stmgr-");
    Instance {
        instance_id: format!("container_{container}_{component}_{task}"),
        stmgr_id: stmgr.into(),
        info: InstanceInfo {
            task_id: task,
            component_index: 0,
            component_name: component.into(),
            ..Default::default()
        },
    }
}
