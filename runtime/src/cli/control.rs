//! `heron activate|deactivate|restart`, and the controller requests `update` makes.

use super::http_client::{encode, post};
use super::target::{resolve, Resolved};
use super::{RestartArgs, TopologyArgs};
use anyhow::{bail, Context};
use heron_scheduler::{restart as restart_containers, RestartRequest};
use heron_statemgr::StateManagerExt;

/// `heron activate` (`on`) or `heron deactivate`.
pub fn activate(args: TopologyArgs, on: bool) -> anyhow::Result<()> {
    let r = resolve(&args.common)?;
    super::delegated::check(&r, &args.topology)?;
    let verb = if on { "activate" } else { "deactivate" };
    controller_request(&r, &args.topology, verb, &[])?;
    println!(
        "topology '{}' {verb}d in cluster {}",
        args.topology, r.target.cluster
    );
    Ok(())
}

/// `heron token`: prints the topology's controller token (what the tracker page's controls
/// and the tmaster's controller want as `Authorization: Bearer <token>`).
pub fn token(args: TopologyArgs) -> anyhow::Result<()> {
    let r = resolve(&args.common)?;
    let name = &args.topology;
    let state = r
        .state_manager
        .open()
        .with_context(|| format!("opening the state manager {}", r.state_manager))?;
    let Some(topology) = state.get_topology(name)? else {
        bail!(
            "no topology named {name} in cluster {} ({})",
            r.target.cluster,
            state.describe()
        );
    };
    match topology_secret(&r, name, &topology)? {
        Some(secret) => println!("{}", secret.bearer_token()),
        None => bail!("topology {name} does not require authentication: it has no token"),
    }
    Ok(())
}

/// Sends `/<path>?topologyid=<id>&<extra>` to the topology's tmaster; fails with the
/// controller's answer unless it is 200.
pub fn controller_request(
    r: &Resolved,
    name: &str,
    path: &str,
    extra: &[(&str, String)],
) -> anyhow::Result<()> {
    let cluster = &r.target.cluster;
    let state = r
        .state_manager
        .open()
        .with_context(|| format!("opening the state manager {}", r.state_manager))?;
    if heron_statemgr::validate_name(name).is_err() {
        bail!("no topology named {name:?} in cluster {cluster}");
    }
    let Some(topology) = state.get_topology(name)? else {
        bail!(
            "no topology named {name} in cluster {cluster} ({})",
            state.describe()
        );
    };
    let Some(loc) = state.get_tmanager_location(name)? else {
        bail!("the tmaster of {name} is not running (no tmanagers/{name}); retry in a moment");
    };
    let port = u16::try_from(loc.controller_port)
        .ok()
        .filter(|p| *p > 0)
        .with_context(|| format!("tmanagers/{name} has no controller port"))?;
    let mut query = format!("/{path}?topologyid={}", encode(&topology.id));
    for (k, v) in extra {
        query.push_str(&format!("&{k}={}", encode(v)));
    }
    let token = topology_secret(r, name, &topology)?.map(|s| s.bearer_token());
    let (status, body) = post(&loc.host, port, &query, token.as_deref())?;
    if status != 200 {
        bail!("{path} {name} refused by the tmaster (HTTP {status}): {body}");
    }
    Ok(())
}

/// The topology's secret (whose HMAC is the controller's bearer token), as `heron submit`
/// wrote it in the topology's working directory; `None` for a topology with
/// `heron-rs.auth.required=false`.
pub fn topology_secret(
    r: &Resolved,
    name: &str,
    topology: &heron_proto::api::Topology,
) -> anyhow::Result<Option<heron_auth::Secret>> {
    if !heron_scheduler::auth_required(topology)? {
        return Ok(None);
    }
    let working_dir = heron_scheduler::layout::working_dir(
        &heron_statemgr::home_dir(),
        &r.target.cluster,
        &r.target.role,
        name,
    );
    let path = heron_scheduler::layout::secret_file(&working_dir);
    let secret = heron_auth::Secret::load(&path).with_context(|| {
        format!(
            "the controller of {name} needs the topology's token, read from the secret heron \
             submit wrote (is {} the role that submitted it?)",
            r.target.role
        )
    })?;
    Ok(Some(secret))
}

/// `heron restart`.
pub fn restart(args: RestartArgs) -> anyhow::Result<()> {
    let r = resolve(&args.common)?;
    super::delegated::check(&r, &args.topology)?;
    let mut req = RestartRequest::new(&args.topology);
    req.cluster = r.target.cluster.clone();
    req.role = r.target.role.clone();
    req.state_manager = r.state_manager.clone();
    req.container = args.container.filter(|c| *c >= 0);
    if r.config.scheduler()? == crate::cluster::SchedulerKind::Kubernetes {
        let k = heron_kubernetes::Kubernetes::from_config(&r.config.values)?;
        let done = heron_kubernetes::restart(&k, &req)
            .map_err(|e| anyhow::anyhow!("restart failed: {e}"))?;
        for shard in done {
            println!(
                "restarted container {shard} of '{}' (its pod was deleted; its StatefulSet \
                 starts it again)",
                args.topology
            );
        }
        return Ok(());
    }
    if r.config.scheduler()? == crate::cluster::SchedulerKind::Slurm {
        let done =
            heron_slurm::restart(&req).map_err(|e| anyhow::anyhow!("restart failed: {e}"))?;
        for c in done {
            println!(
                "restarted container {} of '{}' (job step {} replaced by {} on {})",
                c.shard, args.topology, c.old_step, c.new_step, c.nodes
            );
        }
        return Ok(());
    }
    let done = restart_containers(&req).map_err(|e| anyhow::anyhow!("restart failed: {e}"))?;
    for (shard, n) in done {
        println!(
            "restarted container {shard} of '{}' ({n} processes)",
            args.topology
        );
    }
    Ok(())
}
