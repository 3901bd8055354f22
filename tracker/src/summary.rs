//! `/topologies/summary` and `/topologies/component` (ours): Storm UI's topology and
//! component tables, per window (1 min, 10 min, 3 h, all time), from the tmaster's metrics.
//! The figures themselves are computed in [`crate::figures`].

use crate::backpressure::{metric_names, BY_COMPID};
use crate::clusters::Clusters;
use crate::figures::{causes, component_figures, task_figures, Figures, TaskMetrics};
use crate::metrics_routes::{query, tmaster, STMGR_COMPONENT};
use crate::query::{topology, Found, Params};
use crate::routes::Answer;
use crate::ApiError;
use axum::extract::{RawQuery, State};
use axum::Json;
use heron_proto::api::{Grouping, Topology};
use heron_proto::system::PhysicalPlan;
use heron_proto::tmanager::{MetricRequest, TManagerLocation};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// The windows of the tables: (name, seconds; `None` = all time).
pub const WINDOWS: [(&str, Option<i64>); 4] = [
    ("60", Some(60)),
    ("600", Some(600)),
    ("10800", Some(10_800)),
    ("all", None),
];

/// Instance → its metrics over one window.
type ByInstance = BTreeMap<String, TaskMetrics>;

/// The metrics of every task of `component` over `window`.
async fn window_metrics(
    tm: &TManagerLocation,
    component: &str,
    metrics: Vec<String>,
    window: Option<i64>,
) -> Result<ByInstance, ApiError> {
    let answer = query(
        tm,
        &MetricRequest {
            component_name: component.to_string(),
            instance_id: vec![],
            metric: metrics,
            interval: Some(window.unwrap_or(-1)),
            explicit_interval: None,
            minutely: None,
        },
    )
    .await?;
    Ok(answer
        .metric
        .into_iter()
        .map(|t| {
            let m = t
                .metric
                .into_iter()
                .filter_map(|m| Some((m.name, m.value?.parse::<f64>().ok()?)))
                .collect();
            (t.instance_id, m)
        })
        .collect())
}

/// How many tasks receive each tuple of each stream of `component` (stream → copies): one
/// per consuming bolt, its parallelism for `ALL` grouping.
fn fanout(t: &Topology, pplan: &PhysicalPlan, component: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for b in &t.bolts {
        let tasks = pplan
            .instances
            .iter()
            .filter(|i| i.info.component_name == b.comp.name)
            .count() as f64;
        for i in b
            .inputs
            .iter()
            .filter(|i| i.stream.component_name == component)
        {
            let copies = if i.gtype == Grouping::All as i32 {
                tasks
            } else {
                1.0
            };
            *out.entry(i.stream.id.clone()).or_insert(0.0) += copies;
        }
    }
    out
}

/// What the tables are made of: per window, each task's figures; and each task's gauges.
struct Collected {
    /// window name → instance → figures
    windows: BTreeMap<&'static str, BTreeMap<String, Figures>>,
    /// instance → all-time metrics (gauges: memory, restarts, uptime)
    gauges: ByInstance,
}

async fn collect(
    f: &Found,
    pplan: &PhysicalPlan,
    components: &[String],
) -> Result<Collected, ApiError> {
    let t = f.info.topology.as_ref().expect("read only with a topology");
    let tm = tmaster(f)?;
    let spouts: Vec<&str> = t.spouts.iter().map(|s| s.comp.name.as_str()).collect();
    let mut windows = BTreeMap::new();
    let mut gauges = ByInstance::new();
    // the gauges first: the tasks' uptimes cut the windows
    for c in components {
        gauges.extend(window_metrics(tm, c, vec![], None).await?);
    }
    let uptime = |i: &str| gauges.get(i).and_then(|m| m.get("__uptime-secs")).copied();
    for (name, window) in WINDOWS {
        let pressure = window_metrics(tm, STMGR_COMPONENT, metric_names(pplan), window).await?;
        let mut by_instance = BTreeMap::new();
        for c in components {
            let fan = fanout(t, pplan, c);
            let spout = spouts.contains(&c.as_str());
            let all = if window.is_none() {
                gauges.clone()
            } else {
                window_metrics(tm, c, vec![], window).await?
            };
            for i in pplan
                .instances
                .iter()
                .filter(|i| &i.info.component_name == c)
            {
                let id = &i.instance_id;
                let m = all.get(id).cloned().unwrap_or_default();
                let mut fig = task_figures(&m, window.map(|w| w as f64), uptime(id), &fan, spout);
                let key = format!("{BY_COMPID}{id}");
                fig.backpressure_ms = pressure.values().filter_map(|m| m.get(&key)).sum::<f64>();
                by_instance.insert(id.clone(), fig);
            }
        }
        windows.insert(name, by_instance);
    }
    Ok(Collected { windows, gauges })
}

fn components(t: &Topology) -> Vec<String> {
    t.spouts
        .iter()
        .map(|s| s.comp.name.clone())
        .chain(t.bolts.iter().map(|b| b.comp.name.clone()))
        .collect()
}

fn reliability_mode(t: &Topology) -> String {
    t.topology_config
        .iter()
        .flat_map(|c| &c.kvs)
        .find(|kv| kv.key == "topology.reliability.mode")
        .and_then(|kv| kv.value.clone())
        .unwrap_or_else(|| "ATMOST_ONCE".to_string())
}

/// The components attributed back pressure over the last minute.
fn attributed(c: &Collected, pplan: &PhysicalPlan, names: &[String]) -> Vec<String> {
    let minute = &c.windows["60"];
    let times: Vec<(&str, f64)> = names
        .iter()
        .map(|n| {
            let ms = pplan
                .instances
                .iter()
                .filter(|i| &i.info.component_name == n)
                .filter_map(|i| minute.get(&i.instance_id))
                .map(|f| f.backpressure_ms)
                .sum();
            (n.as_str(), ms)
        })
        .collect();
    causes(times, 60_000.0)
        .into_iter()
        .map(str::to_string)
        .collect()
}

fn pplan_of(f: &Found) -> Result<&PhysicalPlan, ApiError> {
    f.info
        .physical_plan
        .as_ref()
        .ok_or_else(|| ApiError::not_found(format!("topology {} has no physical plan yet", f.name)))
}

/// `/topologies/summary`: the topology's facts and a row per component per window.
pub async fn summary(State(clusters): State<Clusters>, RawQuery(q): RawQuery) -> Answer {
    let f = topology(&clusters, &Params::parse(q.as_deref())?).await?;
    let t = f.info.topology.as_ref().expect("read only with a topology");
    let pplan = pplan_of(&f)?;
    let names = components(t);
    let c = collect(&f, pplan, &names).await?;
    let bp = attributed(&c, pplan, &names);
    let mut out = Map::new();
    for n in &names {
        let ids: Vec<&str> = pplan
            .instances
            .iter()
            .filter(|i| &i.info.component_name == n)
            .map(|i| i.instance_id.as_str())
            .collect();
        let windows: Map<String, Value> = c
            .windows
            .iter()
            .map(|(w, tasks)| {
                let fig = component_figures(ids.iter().filter_map(|i| tasks.get(*i)));
                (w.to_string(), json!(fig))
            })
            .collect();
        out.insert(
            n.clone(),
            json!({
                "type": if t.spouts.iter().any(|s| &s.comp.name == n) { "spout" } else { "bolt" },
                "parallelism": ids.len(),
                "backpressure_cause": bp.contains(n),
                "windows": windows,
            }),
        );
    }
    let e = f.info.execution_state.clone().unwrap_or_default();
    let now = crate::json::now_secs();
    Ok(Json(json!({
        "name": f.name,
        "id": t.id,
        "status": f.info.status(),
        "uptime_secs": (now - e.submission_time.unwrap_or(now)).max(0),
        "mode": reliability_mode(t),
        "containers": pplan.stmgrs.len(),
        "instances": pplan.instances.len(),
        "submission_user": e.submission_user,
        "windows": WINDOWS.iter().map(|(w, _)| *w).collect::<Vec<_>>(),
        "backpressure_causes": bp,
        "components": out,
    })))
}

/// `/topologies/component`: a row per task of `component`, with its container, host,
/// process figures and log file.
pub async fn component(State(clusters): State<Clusters>, RawQuery(q): RawQuery) -> Answer {
    let params = Params::parse(q.as_deref())?;
    let f = topology(&clusters, &params).await?;
    let t = f.info.topology.as_ref().expect("read only with a topology");
    let pplan = pplan_of(&f)?;
    let name = params.required("component")?.to_string();
    let names = components(t);
    if !names.contains(&name) {
        return Err(ApiError::not_found(format!(
            "topology {} has no component {name}",
            f.name
        )));
    }
    let c = collect(&f, pplan, std::slice::from_ref(&name)).await?;
    let bp = attributed(&c, pplan, &names);
    let mut rows = Vec::new();
    for i in pplan
        .instances
        .iter()
        .filter(|i| i.info.component_name == name)
    {
        let id = &i.instance_id;
        let g = c.gauges.get(id);
        let gauge = |k: &str| g.and_then(|m| m.get(k)).copied();
        let uptime = gauge("__uptime-secs");
        let minute = c.windows["60"].get(id);
        let cpu_percent = match (minute, uptime) {
            (Some(m), Some(u)) if u > 0.0 => Some(m.cpu_ms / (u.min(60.0) * 1000.0) * 100.0),
            _ => None,
        };
        let host = pplan
            .stmgrs
            .iter()
            .find(|s| s.id == i.stmgr_id)
            .map(|s| s.host_name.clone());
        let windows: Map<String, Value> = c
            .windows
            .iter()
            .map(|(w, tasks)| (w.to_string(), json!(tasks.get(id))))
            .collect();
        rows.push(json!({
            "id": id,
            "task_id": i.info.task_id,
            "container": i.stmgr_id.trim_start_matches("stmgr-"),
            "stmgr_id": i.stmgr_id,
            "host": host,
            "cpu_percent": cpu_percent,
            "memory_mb": gauge("__memory-rss-kb").map(|kb| kb / 1024.0),
            "restarts": gauge("__restarts"),
            "uptime_secs": uptime,
            "backpressure_cause": bp.contains(&name)
                && minute.is_some_and(|m| m.backpressure_ms > 0.0),
            "logfile": format!("log-files/{id}.log"),
            "windows": windows,
        }));
    }
    Ok(Json(json!({
        "component": name,
        "type": if t.spouts.iter().any(|s| s.comp.name == name) { "spout" } else { "bolt" },
        "windows": WINDOWS.iter().map(|(w, _)| *w).collect::<Vec<_>>(),
        "instances": rows,
    })))
}
