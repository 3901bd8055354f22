//! Submit, kill, restart and update on Kubernetes, in the shape of the other schedulers:
//! [`KubernetesLauncher`] is the submit's last step, [`dry_run`] prints the objects instead.

use crate::{api, object_name, Kubernetes, KubernetesError, ManifestInput, Manifests};
use heron_proto::scheduler::SchedulerLocation;
use heron_proto::{api as topo, system};
use heron_scheduler::{
    executor_args, layout, KillReport, KillRequest, Launch, Launcher, RestartRequest,
    SchedulerError, SubmitRequest, UpdateReport, UpdateRequest,
};
use heron_statemgr::{StateManagerExt, StateManagerSpec};
use std::path::Path;

fn cluster_error(e: KubernetesError) -> SchedulerError {
    SchedulerError::Cluster {
        scheduler: "kubernetes",
        reason: e.to_string(),
    }
}

/// Refuses what the pods could not use: a state manager on this machine's file system, TLS
/// (its files are not shipped to the pods yet).
pub fn check_supported(
    state: &StateManagerSpec,
    topology: &topo::Topology,
) -> Result<(), SchedulerError> {
    if matches!(state, StateManagerSpec::Local(_)) {
        return Err(SchedulerError::Cluster {
            scheduler: "kubernetes",
            reason: format!(
                "the state manager {state} is this machine's file system, which the pods \
                 cannot read; configure ZooKeeper in the cluster's statemgr.yaml"
            ),
        });
    }
    if heron_scheduler::tls_enabled(topology)? {
        return Err(SchedulerError::Cluster {
            scheduler: "kubernetes",
            reason: format!(
                "{}=true is not supported by the Kubernetes scheduler yet (the TLS identity \
                 is not shipped to the pods)",
                heron_auth::TLS_KEY
            ),
        });
    }
    Ok(())
}

fn manifests(
    settings: &Kubernetes,
    req: &SubmitRequest,
    topology: &topo::Topology,
    plan: &system::PackingPlan,
    secret: Option<Vec<u8>>,
) -> Result<Manifests, SchedulerError> {
    Manifests::build(&ManifestInput {
        topology,
        plan,
        settings,
        executor_args: executor_args(req, topology, 0),
        secret,
    })
    .map_err(cluster_error)
}

/// The objects `heron submit kubernetes` would create for `req`, as YAML documents; runs the
/// binary's `define` role and packs, and touches no state and no cluster.
pub fn dry_run(settings: &Kubernetes, req: &SubmitRequest) -> Result<String, SchedulerError> {
    let binary = heron_scheduler::check_binary(&req.binary)?;
    let mut topology = heron_scheduler::define_topology(&binary, &req.user_args)?;
    heron_scheduler::check_modes(&topology)?;
    object_name(&topology.name).map_err(cluster_error)?;
    topology.id = heron_scheduler::new_topology_id(&topology.name);
    let plan = heron_scheduler::pack(&topology)?;
    let secret = heron_scheduler::auth_required(&topology)?
        .then(|| format!("{}\n", heron_auth::Secret::generate().to_hex()).into_bytes());
    let req = SubmitRequest {
        binary,
        ..req.clone()
    };
    manifests(settings, &req, &topology, &plan, secret)?
        .to_yaml()
        .map_err(cluster_error)
}

/// The submit's last step on Kubernetes: creates the objects through the API.
pub struct KubernetesLauncher(pub Kubernetes);

impl Launcher for KubernetesLauncher {
    fn launch(
        &self,
        req: &SubmitRequest,
        topology: &topo::Topology,
        plan: &system::PackingPlan,
        _shards: &[i32],
        working_dir: &Path,
    ) -> Result<Launch, SchedulerError> {
        let uri = self
            .0
            .uri
            .clone()
            .ok_or_else(|| cluster_error(KubernetesError::NoApi))?;
        let secret_path = layout::secret_file(working_dir);
        let secret = secret_path.exists().then(|| std::fs::read(&secret_path));
        let secret = secret.transpose().map_err(SchedulerError::io(format!(
            "reading {}",
            secret_path.display()
        )))?;
        let m = manifests(&self.0, req, topology, plan, secret)?;
        api::create(&self.0, &m).map_err(cluster_error)?;
        let name = object_name(&topology.name).map_err(cluster_error)?;
        Ok(Launch {
            executors: Vec::new(),
            location: Some(SchedulerLocation {
                topology_name: topology.name.clone(),
                http_endpoint: uri,
                job_page_link: vec![format!("kubernetes:{}/{name}", self.0.namespace)],
            }),
            description: format!(
                "StatefulSets {name}-manager and {name}-executors ({} replicas) in namespace {}",
                plan.container_plans.len(),
                self.0.namespace
            ),
        })
    }
}

/// `heron kill`: deletes the objects, then the topology's state.
pub fn kill(settings: &Kubernetes, req: &KillRequest) -> Result<KillReport, SchedulerError> {
    let name = object_name(&req.name).map_err(cluster_error)?;
    let state = req.state_manager.open()?;
    api::delete(settings, &name).map_err(cluster_error)?;
    let working_dir =
        layout::topology_working_dir(&*state, &req.home, &req.cluster, &req.role, &req.name);
    heron_scheduler::clean_up(&*state, &req.name, &working_dir)?;
    Ok(KillReport {
        name: req.name.clone(),
        working_dir,
        executors: Vec::new(),
    })
}

/// `heron restart`: deletes the container's pod (every pod when `req.container` is `None`);
/// its StatefulSet starts it again.
pub fn restart(settings: &Kubernetes, req: &RestartRequest) -> Result<Vec<i32>, SchedulerError> {
    let name = object_name(&req.name).map_err(cluster_error)?;
    let state = req.state_manager.open()?;
    let plan = state
        .get_packing_plan(&req.name)?
        .ok_or_else(|| SchedulerError::not_found(&req.name, &req.cluster))?;
    let mut shards = vec![0];
    shards.extend(plan.container_plans.iter().map(|c| c.id));
    if let Some(c) = req.container {
        if !shards.contains(&c) {
            return Err(SchedulerError::Executor(format!(
                "topology {} has no container {c}",
                req.name
            )));
        }
        shards = vec![c];
    }
    api::restart(settings, &name, &shards).map_err(cluster_error)?;
    Ok(shards)
}

/// `heron update`: writes the new plan, then sets the executors' replicas to its container
/// count (Heron's scale).
pub fn update(settings: &Kubernetes, req: &UpdateRequest) -> Result<UpdateReport, SchedulerError> {
    let name = object_name(&req.name).map_err(cluster_error)?;
    heron_scheduler::update_with(req, &mut |_, _, old, new| {
        if new.container_plans.len() != old.container_plans.len() {
            api::scale(settings, &name, new.container_plans.len()).map_err(cluster_error)?;
        }
        Ok(Vec::new())
    })
}
