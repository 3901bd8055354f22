//! `/topologies/backpressure` (ours; Heron's tracker has no such path): who causes back
//! pressure and who is held back by it lately, from the stream managers' metrics.
//!
//! * a component *causes* back pressure when a stream manager reports time in
//!   `__time_spent_back_pressure_by_compid/<instance id>` for one of its instances (the
//!   stream manager's connection to that instance was over the high watermark: the instance
//!   does not keep up);
//! * a spout is *throttled* when the stream manager of its container reports time in
//!   `__server/__time_spent_back_pressure_throttled` (it stopped reading that container's
//!   spouts).
//!
//! Answer: `{"interval": s, "causes": {component: {instance: ms}}, "throttled": {spout:
//! {stmgr: ms}}}`, over the last `interval` seconds (default [`DEFAULT_INTERVAL`]).

use crate::clusters::Clusters;
use crate::metrics_routes::{query, STMGR_COMPONENT};
use crate::query::{topology, Params};
use crate::routes::Answer;
use crate::ApiError;
use axum::extract::{RawQuery, State};
use axum::Json;
use heron_proto::system::PhysicalPlan;
use heron_proto::tmanager::{MetricRequest, MetricResponse};
use serde_json::{json, Map, Value};

/// Seconds looked back when the request gives no `interval`.
pub const DEFAULT_INTERVAL: i64 = 10;
/// The stream manager's per-instance metric prefix.
pub const BY_COMPID: &str = "__time_spent_back_pressure_by_compid/";
/// The stream manager's time with its spouts not read.
pub const THROTTLED: &str = "__server/__time_spent_back_pressure_throttled";

/// The metric names to ask the tmaster for: throttled time and one per instance of `pplan`.
pub fn metric_names(pplan: &PhysicalPlan) -> Vec<String> {
    let mut names = vec![THROTTLED.to_string()];
    names.extend(
        pplan
            .instances
            .iter()
            .map(|i| format!("{BY_COMPID}{}", i.instance_id)),
    );
    names
}

/// Folds the stream managers' answer into `{causes, throttled}` (see the module docs); only
/// positive times count.
pub fn summarize(pplan: &PhysicalPlan, answer: &MetricResponse) -> (Value, Value) {
    let spouts: Vec<&str> = pplan
        .topology
        .spouts
        .iter()
        .map(|s| s.comp.name.as_str())
        .collect();
    let mut causes: Map<String, Value> = Map::new();
    let mut throttled: Map<String, Value> = Map::new();
    for task in &answer.metric {
        let stmgr = &task.instance_id;
        for m in &task.metric {
            let ms = m
                .value
                .as_deref()
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0);
            if ms <= 0.0 {
                continue;
            }
            if let Some(instance) = m.name.strip_prefix(BY_COMPID) {
                let Some(i) = pplan.instances.iter().find(|i| i.instance_id == instance) else {
                    continue;
                };
                let entry = causes
                    .entry(i.info.component_name.clone())
                    .or_insert_with(|| json!({}));
                entry[instance] = json!(ms);
            } else if m.name == THROTTLED {
                let local = pplan.instances.iter().filter(|i| &i.stmgr_id == stmgr);
                for i in local {
                    let c = &i.info.component_name;
                    if spouts.contains(&c.as_str()) {
                        let entry = throttled.entry(c.clone()).or_insert_with(|| json!({}));
                        entry[stmgr.as_str()] = json!(ms);
                    }
                }
            }
        }
    }
    (Value::Object(causes), Value::Object(throttled))
}

/// `/topologies/backpressure`.
pub async fn backpressure(State(clusters): State<Clusters>, RawQuery(q): RawQuery) -> Answer {
    let params = Params::parse(q.as_deref())?;
    let f = topology(&clusters, &params).await?;
    let interval = params.int("interval")?.unwrap_or(DEFAULT_INTERVAL);
    let unavailable = |what: &str| ApiError {
        status: axum::http::StatusCode::SERVICE_UNAVAILABLE,
        message: format!("topology {} has no {what} yet", f.name),
    };
    let pplan = f
        .info
        .physical_plan
        .as_ref()
        .ok_or_else(|| unavailable("physical plan"))?;
    let tmaster = f
        .info
        .tmanager
        .as_ref()
        .ok_or_else(|| unavailable("tmaster"))?;
    let request = MetricRequest {
        component_name: STMGR_COMPONENT.to_string(),
        instance_id: Vec::new(),
        metric: metric_names(pplan),
        interval: Some(interval),
        explicit_interval: None,
        minutely: None,
    };
    let answer = query(tmaster, &request).await?;
    let (causes, throttled) = summarize(pplan, &answer);
    Ok(Json(json!({
        "interval": interval,
        "causes": causes,
        "throttled": throttled,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use heron_proto::api::{Component, Spout, Topology};
    use heron_proto::system::{Instance, InstanceInfo};
    use heron_proto::tmanager::metric_response::{IndividualMetric, TaskMetric};

    fn instance(id: &str, component: &str, stmgr: &str) -> Instance {
        Instance {
            instance_id: id.into(),
            stmgr_id: stmgr.into(),
            info: InstanceInfo {
                component_name: component.into(),
                ..Default::default()
            },
        }
    }

    fn metric(name: &str, v: &str) -> IndividualMetric {
        IndividualMetric {
            name: name.into(),
            value: Some(v.into()),
            interval_values: Vec::new(),
        }
    }

    #[test]
    fn the_slow_bolt_causes_and_spouts_of_throttled_containers_are_held() {
        let pplan = PhysicalPlan {
            topology: Topology {
                spouts: vec![Spout {
                    comp: Component {
                        name: "source".into(),
                        ..Default::default()
                    },
                    ..Default::default()
                }],
                ..Default::default()
            },
            instances: vec![
                instance("container_1_source_1", "source", "stmgr-1"),
                instance("container_1_slow_3", "slow", "stmgr-1"),
                instance("container_2_slow_4", "slow", "stmgr-2"),
            ],
            ..Default::default()
        };
        let names = metric_names(&pplan);
        assert_eq!(names.len(), 4);
        assert!(names.contains(&format!("{BY_COMPID}container_2_slow_4")));
        let answer = MetricResponse {
            metric: vec![
                TaskMetric {
                    instance_id: "stmgr-1".into(),
                    metric: vec![
                        metric(THROTTLED, "900"),
                        metric(&format!("{BY_COMPID}container_1_slow_3"), "850"),
                        metric(&format!("{BY_COMPID}container_1_source_1"), "0"),
                    ],
                },
                TaskMetric {
                    instance_id: "stmgr-2".into(),
                    metric: vec![metric(THROTTLED, "0")],
                },
            ],
            ..Default::default()
        };
        let (causes, throttled) = summarize(&pplan, &answer);
        assert_eq!(causes, json!({"slow": {"container_1_slow_3": 850.0}}));
        assert_eq!(throttled, json!({"source": {"stmgr-1": 900.0}}));
    }
}
