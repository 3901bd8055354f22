//! Heron's state protos as the Heron Tracker's JSON shapes (pure functions).

use heron_proto::api::{Config, Grouping, Topology, TopologyState};
use heron_proto::scheduler::SchedulerLocation;
use heron_proto::system::{ExecutionState, PackingPlan, PhysicalPlan, Resource};
use heron_proto::tmanager::TManagerLocation;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// A config as a flat `{key: value}` object (serialized values are shown as such).
pub fn config(c: Option<&Config>) -> Value {
    let mut out = Map::new();
    for kv in c.into_iter().flat_map(|c| &c.kvs) {
        let v = match (&kv.value, &kv.serialized_value) {
            (Some(v), _) => Value::String(v.clone()),
            (None, Some(b)) => Value::String(format!("<{} serialized bytes>", b.len())),
            (None, None) => Value::Null,
        };
        out.insert(kv.key.clone(), v);
    }
    Value::Object(out)
}

/// Heron's grouping name for the proto enum value.
pub fn grouping_name(gtype: i32) -> String {
    Grouping::try_from(gtype)
        .map(|g| g.as_str_name().to_string())
        .unwrap_or_else(|_| gtype.to_string())
}

/// `RUNNING`, `PAUSED` or `KILLED` as the tracker's status ("Running", ...).
pub fn status(t: &Topology) -> &'static str {
    match TopologyState::try_from(t.state) {
        Ok(TopologyState::Paused) => "Paused",
        Ok(TopologyState::Killed) => "Killed",
        _ => "Running",
    }
}

/// `/topologies/logicalplan`.
pub fn logical_plan(t: &Topology) -> Value {
    let mut spouts = Map::new();
    for s in &t.spouts {
        spouts.insert(
            s.comp.name.clone(),
            json!({
                "config": config(Some(&s.comp.config)),
                "spout_type": "default",
                "spout_source": "NA",
                "version": "NA",
                "outputs": s.outputs.iter().map(|o| json!({"stream_name": o.stream.id})).collect::<Vec<_>>(),
                "extra_links": [],
            }),
        );
    }
    let mut bolts = Map::new();
    for b in &t.bolts {
        let mut inputs_from: Vec<String> = b
            .inputs
            .iter()
            .map(|i| i.stream.component_name.clone())
            .collect();
        inputs_from.dedup();
        bolts.insert(
            b.comp.name.clone(),
            json!({
                "config": config(Some(&b.comp.config)),
                "outputs": b.outputs.iter().map(|o| json!({"stream_name": o.stream.id})).collect::<Vec<_>>(),
                "inputs": b.inputs.iter().map(|i| json!({
                    "stream_name": i.stream.id,
                    "component_name": i.stream.component_name,
                    "grouping": grouping_name(i.gtype),
                })).collect::<Vec<_>>(),
                "inputComponents": inputs_from,
            }),
        );
    }
    json!({"spouts": spouts, "bolts": bolts, "stages": stages(t)})
}

/// The number of stages: the longest path from a spout, in components.
fn stages(t: &Topology) -> usize {
    let mut depth: BTreeMap<&str, usize> = t.spouts.iter().map(|s| (&s.comp.name[..], 1)).collect();
    for _ in 0..t.bolts.len() {
        for b in &t.bolts {
            let d = b
                .inputs
                .iter()
                .filter_map(|i| depth.get(&i.stream.component_name[..]))
                .max()
                .map_or(1, |d| d + 1)
                .min(t.bolts.len() + 1);
            depth.insert(&b.comp.name, d);
        }
    }
    depth.values().copied().max().unwrap_or(0)
}

/// `/topologies/physicalplan`.
pub fn physical_plan(p: &PhysicalPlan) -> Value {
    let mut instances = Map::new();
    let mut stmgrs = Map::new();
    let mut by_stmgr: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut by_component: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for i in &p.instances {
        by_stmgr
            .entry(&i.stmgr_id)
            .or_default()
            .push(&i.instance_id);
        by_component
            .entry(&i.info.component_name)
            .or_default()
            .push(&i.instance_id);
        let container = i.stmgr_id.trim_start_matches("stmgr-");
        instances.insert(
            i.instance_id.clone(),
            json!({
                "id": i.instance_id,
                "name": i.info.component_name,
                "stmgr_id": i.stmgr_id,
                "task_id": i.info.task_id,
                "component_index": i.info.component_index,
                "container": container,
                "logfile": format!("log-files/{}.log", i.instance_id),
            }),
        );
    }
    for s in &p.stmgrs {
        stmgrs.insert(
            s.id.clone(),
            json!({
                "id": s.id,
                "host": s.host_name,
                "port": s.data_port,
                "shell_port": s.shell_port,
                "cwd": s.cwd,
                "pid": s.pid,
                "joburl": "",
                "logfiles": format!("log-files/{}.log", s.id),
                "instance_ids": by_stmgr.get(&s.id[..]).cloned().unwrap_or_default(),
            }),
        );
    }
    let t = &p.topology;
    let ids = |name: &str| by_component.get(name).cloned().unwrap_or_default();
    let spouts: Map<String, Value> = t
        .spouts
        .iter()
        .map(|s| (s.comp.name.clone(), json!(ids(&s.comp.name))))
        .collect();
    let bolts: Map<String, Value> = t
        .bolts
        .iter()
        .map(|b| (b.comp.name.clone(), json!(ids(&b.comp.name))))
        .collect();
    let components: Map<String, Value> = t
        .spouts
        .iter()
        .map(|s| &s.comp)
        .chain(t.bolts.iter().map(|b| &b.comp))
        .map(|c| (c.name.clone(), json!({"config": config(Some(&c.config))})))
        .collect();
    let groups: Map<String, Value> = by_stmgr
        .iter()
        .map(|(s, ids)| (s.trim_start_matches("stmgr-").to_string(), json!(ids)))
        .collect();
    json!({
        "instances": instances,
        "instance_groups": groups,
        "stmgrs": stmgrs,
        "spouts": spouts,
        "bolts": bolts,
        "config": config(t.topology_config.as_ref()),
        "components": components,
    })
}

fn resource(r: &Resource) -> Value {
    json!({"cpu": r.cpu, "ram": r.ram, "disk": r.disk})
}

/// `/topologies/packingplan`.
pub fn packing_plan(p: &PackingPlan) -> Value {
    json!({
        "id": p.id,
        "container_plans": p.container_plans.iter().map(|c| json!({
            "id": c.id,
            "instances": c.instance_plans.iter().map(|i| json!({
                "component_name": i.component_name,
                "task_id": i.task_id,
                "component_index": i.component_index,
                "instance_resources": resource(&i.resource),
            })).collect::<Vec<_>>(),
            "required_resources": resource(&c.required_resource),
            "scheduled_resources": c.scheduled_resource.as_ref().map(resource),
        })).collect::<Vec<_>>(),
    })
}

/// What the tracker knows of one topology, read from its state manager.
#[derive(Clone, Debug, Default)]
pub struct TopologyInfo {
    /// `topologies/<name>`.
    pub topology: Option<Topology>,
    /// `pplans/<name>`.
    pub physical_plan: Option<PhysicalPlan>,
    /// `packingplans/<name>`.
    pub packing_plan: Option<PackingPlan>,
    /// `executionstate/<name>`.
    pub execution_state: Option<ExecutionState>,
    /// `tmanagers/<name>`.
    pub tmanager: Option<TManagerLocation>,
    /// `schedulers/<name>`.
    pub scheduler: Option<SchedulerLocation>,
    /// `statefulcheckpoints/<name>` (`EFFECTIVELY_ONCE` topologies).
    pub checkpoints: Option<heron_proto::ckptmgr::StatefulConsistentCheckpoints>,
}

impl TopologyInfo {
    /// The topology's state as the tracker's status string.
    pub fn status(&self) -> &'static str {
        match (&self.physical_plan, &self.topology) {
            (Some(p), _) => status(&p.topology),
            (None, Some(t)) => status(t),
            (None, None) => "Unknown",
        }
    }
}

/// `/topologies/executionstate`.
pub fn execution_state(name: &str, s: &TopologyInfo) -> Value {
    let e = s.execution_state.clone().unwrap_or_default();
    let release = e.release_state.clone().unwrap_or_default();
    json!({
        "cluster": e.cluster,
        "environ": e.environ,
        "role": e.role,
        "jobname": name,
        "submission_time": e.submission_time,
        "submission_user": e.submission_user,
        "release_username": release.release_username,
        "release_tag": release.release_tag,
        "release_version": release.release_version,
        "has_physical_plan": s.physical_plan.is_some(),
        "has_packing_plan": s.packing_plan.is_some(),
        "has_tmanager_location": s.tmanager.is_some(),
        "has_scheduler_location": s.scheduler.is_some(),
        "status": s.status(),
        "extra_links": [],
    })
}

/// `/topologies/metadata`.
pub fn metadata(name: &str, s: &TopologyInfo) -> Value {
    let e = s.execution_state.clone().unwrap_or_default();
    let instances = s.physical_plan.as_ref().map_or(0, |p| p.instances.len());
    json!({
        "cluster": e.cluster,
        "environ": e.environ,
        "role": e.role,
        "jobname": name,
        "submission_time": e.submission_time,
        "submission_user": e.submission_user,
        "release_username": e.release_state.as_ref().and_then(|r| r.release_username.clone()),
        "release_tag": e.release_state.as_ref().and_then(|r| r.release_tag.clone()),
        "release_version": e.release_state.as_ref().and_then(|r| r.release_version.clone()),
        "instances": instances,
        "extra_links": [],
    })
}

/// `/topologies/schedulerlocation`.
pub fn scheduler_location(name: &str, s: Option<&SchedulerLocation>) -> Value {
    match s {
        Some(s) => json!({
            "name": s.topology_name,
            "http_endpoint": s.http_endpoint,
            "job_page_link": s.job_page_link.first(),
        }),
        None => json!({"name": name, "http_endpoint": null, "job_page_link": null}),
    }
}

/// The `tmanager_location` of `/topologies/info`.
pub fn tmanager_location(l: Option<&TManagerLocation>) -> Value {
    match l {
        Some(l) => json!({
            "name": l.topology_name,
            "id": l.topology_id,
            "host": l.host,
            "controller_port": l.controller_port,
            "server_port": l.server_port,
            "stats_port": l.stats_port,
        }),
        None => Value::Null,
    }
}

/// Unix time in seconds.
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
