//! Start-up: reading and checking the state the submitter wrote, and advertising ourselves.

use crate::{TmasterConfig, TmasterError, TmasterOptions};
use heron_proto::api::Topology;
use heron_proto::system::{PackingPlan, PhysicalPlan};
use heron_proto::tmanager::TManagerLocation;
use heron_proto::Message;
use heron_statemgr::{StateDir, StateError, StateManager, StateManagerExt};
use std::collections::BTreeSet;
use tracing::{info, warn};

/// What the tmaster needs from the state before serving.
#[derive(Debug)]
pub struct Loaded {
    /// The packing plan.
    pub packing_plan: PackingPlan,
    /// The packing plan's bytes as stored, to notice changes.
    pub packing_plan_bytes: Vec<u8>,
    /// The topology.
    pub topology: Topology,
    /// `stmgr-<id>` for every container plan.
    pub expected_stmgrs: Vec<String>,
    /// Instances in the packing plan.
    pub expected_instances: usize,
    /// A physical plan left by a previous tmaster of the same topology id.
    pub previous_pplan: Option<PhysicalPlan>,
    /// `EFFECTIVELY_ONCE`: the checkpoint settings.
    pub stateful: Option<crate::stateful::StatefulConfig>,
    /// `EFFECTIVELY_ONCE`: the consistent checkpoints a previous tmaster recorded.
    pub checkpoints: Option<heron_proto::ckptmgr::StatefulConsistentCheckpoints>,
}

fn state_err(what: impl Into<String>) -> impl FnOnce(StateError) -> TmasterError {
    let what = what.into();
    move |source| TmasterError::State { what, source }
}

/// Reads the packing plan (retrying while it is absent), the topology and any previous
/// physical plan, and checks them against `config`.
pub fn load(
    state: &dyn StateManager,
    config: &TmasterConfig,
    options: &TmasterOptions,
) -> Result<Loaded, TmasterError> {
    let name = &config.topology_name;
    let bytes = read_packing_plan(state, name, options)?;
    let packing_plan = PackingPlan::decode(&bytes[..]).map_err(|source| TmasterError::State {
        what: format!("reading packingplans/{name}"),
        source: StateError::Corrupted {
            dir: StateDir::PackingPlans.name(),
            topology: name.clone(),
            source,
        },
    })?;
    let topology = state
        .get_topology(name)
        .map_err(state_err(format!("reading topologies/{name}")))?
        .ok_or_else(|| TmasterError::MissingTopology(name.clone()))?;
    let components = validate_topology(&topology, config)?;
    let (expected_stmgrs, expected_instances) = validate_packing_plan(&packing_plan, &components)?;
    let previous_pplan = match state.get_physical_plan(name) {
        Ok(Some(p)) if p.topology.id == config.topology_id => {
            info!(topology = %name, "found a physical plan from a previous tmaster; keeping its instances");
            Some(p)
        }
        Ok(Some(p)) => {
            warn!(topology = %name, stored_id = %p.topology.id, "ignoring a physical plan of another topology id");
            None
        }
        Ok(None) => None,
        Err(e) => {
            warn!(topology = %name, error = %e, "ignoring an unreadable physical plan");
            None
        }
    };
    let stateful =
        crate::stateful::stateful_config(&topology).map_err(TmasterError::InvalidTopology)?;
    let checkpoints = match &stateful {
        None => None,
        Some(_) => match state.get_proto(StateDir::StatefulCheckpoints, name) {
            Ok(c) => c,
            Err(e) => {
                warn!(topology = %name, error = %e, "ignoring unreadable statefulcheckpoints; starting from the clean state");
                None
            }
        },
    };
    Ok(Loaded {
        packing_plan,
        packing_plan_bytes: bytes,
        topology,
        expected_stmgrs,
        expected_instances,
        previous_pplan,
        stateful,
        checkpoints,
    })
}

fn read_packing_plan(
    state: &dyn StateManager,
    name: &str,
    options: &TmasterOptions,
) -> Result<Vec<u8>, TmasterError> {
    let attempts = options.packing_plan_attempts.max(1);
    for attempt in 1..=attempts {
        match state.get(StateDir::PackingPlans, name) {
            Ok(Some(bytes)) => return Ok(bytes),
            Ok(None) => info!(topology = %name, attempt, "no packing plan yet; waiting"),
            Err(e @ StateError::InvalidName(_)) => {
                return Err(state_err(format!("reading packingplans/{name}"))(e))
            }
            Err(e) => {
                warn!(topology = %name, attempt, error = %e, "cannot read the packing plan; retrying")
            }
        }
        if attempt < attempts {
            std::thread::sleep(options.packing_plan_retry_interval);
        }
    }
    Err(TmasterError::MissingPackingPlan {
        topology: name.to_string(),
        attempts,
    })
}

/// Name and id match the config; component names are unique. Returns the component names.
fn validate_topology(
    topology: &Topology,
    config: &TmasterConfig,
) -> Result<BTreeSet<String>, TmasterError> {
    if topology.name != config.topology_name {
        return Err(TmasterError::InvalidTopology(format!(
            "stored topology is named {:?}, expected {:?}",
            topology.name, config.topology_name
        )));
    }
    if topology.id != config.topology_id {
        return Err(TmasterError::InvalidTopology(format!(
            "stored topology has id {:?}, expected {:?}",
            topology.id, config.topology_id
        )));
    }
    let mut names = BTreeSet::new();
    let comps = topology
        .spouts
        .iter()
        .map(|s| &s.comp.name)
        .chain(topology.bolts.iter().map(|b| &b.comp.name));
    for n in comps {
        if !names.insert(n.clone()) {
            return Err(TmasterError::InvalidTopology(format!(
                "component name {n:?} is used twice"
            )));
        }
    }
    Ok(names)
}

/// At least one container, distinct container ids, only known components. Returns the
/// expected stmgr ids and the number of instances.
fn validate_packing_plan(
    plan: &PackingPlan,
    components: &BTreeSet<String>,
) -> Result<(Vec<String>, usize), TmasterError> {
    if plan.container_plans.is_empty() {
        return Err(TmasterError::InvalidPackingPlan(
            "it has no containers".to_string(),
        ));
    }
    let mut ids = BTreeSet::new();
    let mut instances = 0;
    for c in &plan.container_plans {
        if !ids.insert(c.id) {
            return Err(TmasterError::InvalidPackingPlan(format!(
                "container {} appears twice",
                c.id
            )));
        }
        for i in &c.instance_plans {
            if !components.contains(&i.component_name) {
                return Err(TmasterError::InvalidPackingPlan(format!(
                    "container {} holds an instance of unknown component {:?}",
                    c.id, i.component_name
                )));
            }
        }
        instances += c.instance_plans.len();
    }
    let stmgrs = ids.iter().map(|id| format!("stmgr-{id}")).collect();
    Ok((stmgrs, instances))
}

/// Creates our ephemeral location node. While another tmaster's node exists (a live one, or
/// a crashed one whose ZooKeeper session has not timed out yet) it retries
/// `options.establish_retry_times` times, `options.establish_retry_interval` apart, then
/// gives up with [`TmasterError::LocationExists`].
pub async fn advertise(
    state: &dyn StateManager,
    location: &TManagerLocation,
    options: &TmasterOptions,
) -> Result<(), TmasterError> {
    let name = &location.topology_name;
    let attempts = options.establish_retry_times.max(1);
    let mut attempt = 1;
    loop {
        match state.create(StateDir::TManagers, name, &location.encode_to_vec(), true) {
            Ok(()) => break,
            Err(StateError::AlreadyExists { .. }) if attempt < attempts => {
                info!(
                    topology = %name,
                    attempt,
                    "tmanagers/{name} exists (another tmaster, or one whose session has not \
                     expired yet); retrying"
                );
                attempt += 1;
                tokio::time::sleep(options.establish_retry_interval).await;
            }
            Err(StateError::AlreadyExists { .. }) => {
                return Err(TmasterError::LocationExists {
                    topology: name.clone(),
                    attempts,
                })
            }
            Err(e) => return Err(state_err(format!("writing tmanagers/{name}"))(e)),
        }
    }
    info!(
        topology = %name,
        host = %location.host,
        server_port = location.server_port,
        "advertised the tmaster location"
    );
    Ok(())
}

/// Deletes our location node if it still names us (best effort, on the way out).
pub fn withdraw(state: &dyn StateManager, location: &TManagerLocation) {
    let name = &location.topology_name;
    match state.get_tmanager_location(name) {
        Ok(Some(l)) if &l == location => {
            if let Err(e) = state.delete(StateDir::TManagers, name) {
                warn!(topology = %name, error = %e, "cannot delete our location node");
            }
        }
        _ => {}
    }
}
