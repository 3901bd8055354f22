//! Building the physical plan from the registered stream managers (pure).

use heron_proto::api::Topology;
use heron_proto::system::{Instance, PhysicalPlan, StMgr};
use std::collections::BTreeSet;

/// Why a physical plan cannot be published.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The stmgrs reported a different number of instances than the packing plan has.
    #[error("the stream managers reported {got} instances but the packing plan has {expected}")]
    InstanceCount {
        /// Instances in the packing plan.
        expected: usize,
        /// Instances reported.
        got: usize,
    },
    /// Two instances claim the same task id.
    #[error("task id {0} is reported by more than one instance")]
    DuplicateTask(i32),
}

/// Builds the physical plan once every expected stmgr is registered.
///
/// * Without a `previous` plan: `topology`, every registered stmgr, and every instance the
///   stmgrs reported.
/// * With one: its topology (which carries the RUNNING/PAUSED state) and its instances, with
///   the stmgr records refreshed (hosts and ports may have moved).
///
/// Stmgrs are sorted by id and instances by task id (then instance id), so the plan does not
/// depend on the order of registration. The plan must hold exactly `expected_instances`
/// instances with distinct task ids.
pub fn build<'a>(
    previous: Option<&PhysicalPlan>,
    topology: &Topology,
    registered: impl IntoIterator<Item = (&'a StMgr, &'a [Instance])>,
    expected_instances: usize,
) -> Result<PhysicalPlan, PlanError> {
    let mut stmgrs = Vec::new();
    let mut reported = Vec::new();
    for (stmgr, instances) in registered {
        stmgrs.push(stmgr.clone());
        reported.extend_from_slice(instances);
    }
    stmgrs.sort_by(|a, b| a.id.cmp(&b.id));
    let (topology, mut instances) = match previous {
        Some(p) => (p.topology.clone(), p.instances.clone()),
        None => (topology.clone(), reported),
    };
    instances
        .sort_by(|a, b| (a.info.task_id, &a.instance_id).cmp(&(b.info.task_id, &b.instance_id)));
    if instances.len() != expected_instances {
        return Err(PlanError::InstanceCount {
            expected: expected_instances,
            got: instances.len(),
        });
    }
    let mut tasks = BTreeSet::new();
    if let Some(dup) = instances.iter().find(|i| !tasks.insert(i.info.task_id)) {
        return Err(PlanError::DuplicateTask(dup.info.task_id));
    }
    Ok(PhysicalPlan {
        topology,
        stmgrs,
        instances,
    })
}
