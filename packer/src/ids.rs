//! Heron's process ids.

use heron_proto::system::ContainerPlan;

/// The stream manager of a container: `stmgr-<container>`.
pub fn stmgr_id(container: i32) -> String {
    format!("stmgr-{container}")
}

/// An instance's id: `container_<container>_<component>_<task>`.
pub fn instance_id(container: i32, component: &str, task_id: i32) -> String {
    format!("container_{container}_{component}_{task_id}")
}

/// The instance ids of a container plan, in the plan's order.
pub fn container_instance_ids(plan: &ContainerPlan) -> Vec<String> {
    plan.instance_plans
        .iter()
        .map(|i| instance_id(plan.id, &i.component_name, i.task_id))
        .collect()
}
