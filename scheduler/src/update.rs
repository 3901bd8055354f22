//! `heron update --component-parallelism/--container-number` for the local scheduler.
//!
//! The flow (Heron's, minus the deactivate/reactivate pauses): repack with round robin from
//! the stored topology and plan; record the new parallelism and container count in
//! `topologies/<name>` (so the next repack starts from them); write the new
//! `packingplans/<name>`; start an executor for every new container. Then everything reacts to
//! the plan: the tmaster deletes the physical plan and exits (its executor restarts it with
//! the new plan), each executor of a remaining container restarts its processes for the new
//! plan, and the executor of a container that is gone stops its processes and exits.

use crate::layout;
use crate::process::{cmdline, spawn_session_leader, stop_groups};
use crate::submit::{default_role, ExecutorProcess};
use crate::{SchedulerError, LOCAL_CLUSTER};
use heron_proto::api::config::KeyValue;
use heron_proto::api::{Config, ConfigValueType, Topology};
use heron_proto::system::PackingPlan;
use heron_proto::Message;
use heron_statemgr::{StateDir, StateManagerExt, StateManagerSpec};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Heron's key for a component's parallelism.
const PARALLELISM_KEY: &str = "topology.component.parallelism";
/// Heron's key for the number of containers.
const STMGRS_KEY: &str = "topology.stmgrs";

/// What to change.
#[derive(Clone, Debug)]
pub struct UpdateRequest {
    /// Topology name.
    pub name: String,
    /// Cluster (names the working directory).
    pub cluster: String,
    /// Role used when the execution state does not say.
    pub role: String,
    /// The state manager holding the topology's nodes.
    pub state_manager: StateManagerSpec,
    /// Home directory of the working directories.
    pub home: PathBuf,
    /// New parallelism per component.
    pub parallelism: HashMap<String, u32>,
    /// New number of containers (same as now when `None`).
    pub containers: Option<u32>,
    /// Compute the new plan only.
    pub dry_run: bool,
}

impl UpdateRequest {
    /// No change yet, defaults as [`crate::KillRequest::new`].
    pub fn new(name: impl Into<String>) -> UpdateRequest {
        UpdateRequest {
            name: name.into(),
            cluster: LOCAL_CLUSTER.to_string(),
            role: default_role(),
            state_manager: StateManagerSpec::default_local(),
            home: heron_statemgr::home_dir(),
            parallelism: HashMap::new(),
            containers: None,
            dry_run: false,
        }
    }
}

/// What an update did.
#[derive(Clone, Debug)]
pub struct UpdateReport {
    /// The plan before.
    pub old_plan: PackingPlan,
    /// The plan after (or the one a dry run would write).
    pub new_plan: PackingPlan,
    /// Executors started for new containers.
    pub added: Vec<ExecutorProcess>,
}

/// Repacks a running topology; see the module docs.
pub fn update(req: &UpdateRequest) -> Result<UpdateReport, SchedulerError> {
    update_with(req, &mut |working_dir, topology, old_plan, new_plan| {
        // new containers are pinned as the ones submit started ([`crate::pinning`])
        let place = crate::pinning::Placement::for_topology(topology)?;
        launch_new_containers(&req.name, working_dir, old_plan, new_plan, &place)
    })
}

/// Starts the containers a new packing plan adds: called with the working directory, the
/// updated topology, the old plan and the new one; the executors it started (if this process
/// started any).
pub type GrowContainers<'a> = dyn FnMut(
        &Path,
        &Topology,
        &PackingPlan,
        &PackingPlan,
    ) -> Result<Vec<ExecutorProcess>, SchedulerError>
    + 'a;

/// [`update`] with the containers the new plan adds started by `grow` (called with the
/// working directory, the old plan and the new one, after the new plan is written); the local
/// scheduler starts an executor per new container, a cluster scheduler asks its cluster.
pub fn update_with(
    req: &UpdateRequest,
    grow: &mut GrowContainers<'_>,
) -> Result<UpdateReport, SchedulerError> {
    let name = &req.name;
    let not_found = || SchedulerError::not_found(name, &req.cluster);
    if heron_statemgr::validate_name(name).is_err() {
        return Err(not_found());
    }
    let state = req.state_manager.open()?;
    let (Some(topology), Some(old_plan)) =
        (state.get_topology(name)?, state.get_packing_plan(name)?)
    else {
        return Err(not_found());
    };
    let packing = |reason: String| SchedulerError::Packing {
        name: name.clone(),
        reason,
    };
    let new_plan = heron_packer::repack(&old_plan, &topology, &req.parallelism, req.containers)
        .map_err(|e| packing(e.to_string()))?;
    if req.dry_run {
        return Ok(UpdateReport {
            old_plan,
            new_plan,
            added: Vec::new(),
        });
    }
    if new_plan == old_plan {
        return Err(packing(
            "the new packing plan is the same as the current one".into(),
        ));
    }
    let working_dir =
        layout::topology_working_dir(&*state, &req.home, &req.cluster, &req.role, name);
    let updated = with_parallelism(&topology, &new_plan, &req.parallelism);
    state.set(StateDir::Topologies, name, &updated.encode_to_vec())?;
    state.set(StateDir::PackingPlans, name, &new_plan.encode_to_vec())?;
    tracing::info!("wrote the new packing plan of {name}");
    let added = grow(&working_dir, &updated, &old_plan, &new_plan)?;
    Ok(UpdateReport {
        old_plan,
        new_plan,
        added,
    })
}

/// The container ids of `new` that `old` does not have.
pub(crate) fn added_containers(old: &PackingPlan, new: &PackingPlan) -> Vec<i32> {
    let old_ids: BTreeSet<i32> = old.container_plans.iter().map(|c| c.id).collect();
    new.container_plans
        .iter()
        .map(|c| c.id)
        .filter(|id| !old_ids.contains(id))
        .collect()
}

/// The local scheduler's growth: an executor per new container, started with a running
/// executor's command line.
fn launch_new_containers(
    name: &str,
    working_dir: &Path,
    old_plan: &PackingPlan,
    new_plan: &PackingPlan,
    place: &crate::pinning::Placement,
) -> Result<Vec<ExecutorProcess>, SchedulerError> {
    let new_ids = added_containers(old_plan, new_plan);
    if new_ids.is_empty() {
        return Ok(Vec::new());
    }
    let executors = layout::read_pid_files(working_dir)?;
    let template = executors
        .iter()
        .map(|(_, pid)| cmdline(*pid))
        .find(|args| args.iter().any(|a| a == "--shard"))
        .ok_or_else(|| {
            SchedulerError::Executor(format!(
                "no running executor of {name} in {} to copy the command line from",
                working_dir.display()
            ))
        })?;
    let mut added = Vec::new();
    for id in new_ids {
        match launch_like(&template, id, place.cpu_for(id), working_dir) {
            Ok(pid) => added.push(ExecutorProcess { shard: id, pid }),
            Err(e) => {
                stop_groups(
                    &added.iter().map(|e| e.pid).collect::<Vec<_>>(),
                    Duration::from_secs(2),
                );
                return Err(e);
            }
        }
    }
    Ok(added)
}

/// The topology with the new parallelism and container count in its config.
fn with_parallelism(
    topology: &Topology,
    plan: &PackingPlan,
    parallelism: &HashMap<String, u32>,
) -> Topology {
    let mut t = topology.clone();
    for (comp, n) in parallelism {
        let config = t
            .spouts
            .iter_mut()
            .map(|s| &mut s.comp)
            .chain(t.bolts.iter_mut().map(|b| &mut b.comp))
            .find(|c| &c.name == comp)
            .map(|c| &mut c.config);
        if let Some(config) = config {
            set_kv(config, PARALLELISM_KEY, &n.to_string());
        }
    }
    let containers = plan.container_plans.len().to_string();
    set_kv(
        t.topology_config.get_or_insert_with(Config::default),
        STMGRS_KEY,
        &containers,
    );
    t
}

/// Sets `key` to the string `value` in `config` (replacing an earlier value).
pub(crate) fn set_kv(config: &mut Config, key: &str, value: &str) {
    match config.kvs.iter_mut().find(|kv| kv.key == key) {
        Some(kv) => {
            kv.value = Some(value.to_string());
            kv.serialized_value = None;
            kv.r#type = Some(ConfigValueType::StringValue as i32);
        }
        None => config.kvs.push(KeyValue {
            key: key.to_string(),
            value: Some(value.to_string()),
            r#type: Some(ConfigValueType::StringValue as i32),
            ..KeyValue::default()
        }),
    }
}

/// Starts an executor for `shard` with another executor's command line (`--shard` replaced),
/// detached like the ones `submit` starts; writes its pid file.
fn launch_like(
    template: &[String],
    shard: i32,
    cpu: Option<usize>,
    working_dir: &Path,
) -> Result<i32, SchedulerError> {
    let mut args: Vec<String> = template[1..].to_vec();
    if let Some(i) = args.iter().position(|a| a == "--shard") {
        if let Some(v) = args.get_mut(i + 1) {
            *v = shard.to_string();
        }
    }
    let name = format!("executor-{shard}");
    let log_path = layout::log_file(working_dir, &name);
    let open = || {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(SchedulerError::io(format!(
                "opening {}",
                log_path.display()
            )))
    };
    let mut cmd = Command::new(&template[0]);
    cmd.args(&args)
        .current_dir(working_dir)
        .stdin(Stdio::null())
        .stdout(open()?)
        .stderr(open()?);
    if let Some(cpu) = cpu {
        crate::pinning::pin(&mut cmd, cpu);
    }
    let child = spawn_session_leader(&mut cmd).map_err(SchedulerError::io(format!(
        "starting {name} ({})",
        template[0]
    )))?;
    let pid = child.id() as i32;
    drop(child);
    layout::write_pid_file(working_dir, shard, pid)?;
    tracing::info!("started {name} (pid {pid}) for a new container");
    Ok(pid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use heron_proto::api::{Bolt, Component};

    #[test]
    fn parallelism_and_containers_go_into_the_topology_config() {
        let t = Topology {
            bolts: vec![Bolt {
                comp: Component {
                    name: "split".into(),
                    ..Component::default()
                },
                ..Bolt::default()
            }],
            ..Topology::default()
        };
        let plan = PackingPlan {
            container_plans: vec![Default::default(); 3],
            ..PackingPlan::default()
        };
        let p = HashMap::from([("split".to_string(), 4)]);
        let u = with_parallelism(&t, &plan, &p);
        let kv = &u.bolts[0].comp.config.kvs[0];
        assert_eq!(
            (kv.key.as_str(), kv.value.as_deref()),
            (PARALLELISM_KEY, Some("4"))
        );
        let kv = &u.topology_config.as_ref().unwrap().kvs[0];
        assert_eq!(
            (kv.key.as_str(), kv.value.as_deref()),
            (STMGRS_KEY, Some("3"))
        );
        // setting again replaces
        let u = with_parallelism(&u, &plan, &HashMap::from([("split".to_string(), 2)]));
        assert_eq!(u.bolts[0].comp.config.kvs.len(), 1);
        assert_eq!(u.bolts[0].comp.config.kvs[0].value.as_deref(), Some("2"));
    }
}
