//! `/topologies/checkpoints` (ours; Heron's tracker has no such path): an `EFFECTIVELY_ONCE`
//! topology's checkpoint history and restores.
//!
//! Answer: `{"topology", "reliability_mode", "checkpoint_interval_seconds",
//! "consistent_checkpoints": [{"checkpoint_id", "packing_plan_id"}] (newest first, from
//! `statefulcheckpoints/<topology>`), "newest_consistent_checkpoint", "restores",
//! "consistent_checkpoints_seen"}`. The last two come from the tmaster's own metrics
//! (component [`TMASTER_COMPONENT`]) and are `null` while it does not run.

use crate::clusters::Clusters;
use crate::metrics_routes::query;
use crate::query::{topology, Params};
use crate::routes::Answer;
use axum::extract::{RawQuery, State};
use axum::Json;
use heron_proto::tmanager::MetricRequest;
use serde_json::{json, Value};

/// The component name of the tmaster's own metrics (heron-tmaster's `core/stateful.rs`
/// publishes them under these names).
pub const TMASTER_COMPONENT: &str = "__tmaster__";
/// Restores the running tmaster started.
pub const RESTORES_METRIC: &str = "__stateful_restores";
/// Consistent checkpoints the running tmaster keeps.
pub const CONSISTENT_METRIC: &str = "__stateful_consistent_checkpoints";

/// `/topologies/checkpoints`.
pub async fn checkpoints(State(clusters): State<Clusters>, RawQuery(q): RawQuery) -> Answer {
    let f = topology(&clusters, &Params::parse(q.as_deref())?).await?;
    let t = f.info.topology.as_ref().expect("read only with a topology");
    let config = |key: &str| heron_proto::config_value(t, key).map(str::to_string);
    let mode = config("topology.reliability.mode").unwrap_or_else(|| "ATMOST_ONCE".into());
    let list: Vec<Value> = f
        .info
        .checkpoints
        .iter()
        .flat_map(|c| &c.consistent_checkpoints)
        .filter(|c| !c.checkpoint_id.is_empty())
        .map(|c| json!({"checkpoint_id": c.checkpoint_id, "packing_plan_id": c.packing_plan_id}))
        .collect();
    let newest = list.first().map(|c| c["checkpoint_id"].clone());
    let (mut restores, mut seen) = (Value::Null, Value::Null);
    if let Some(tm) = f
        .info
        .tmanager
        .as_ref()
        .filter(|_| mode == "EFFECTIVELY_ONCE")
    {
        let request = MetricRequest {
            component_name: TMASTER_COMPONENT.to_string(),
            instance_id: vec![],
            metric: vec![RESTORES_METRIC.to_string(), CONSISTENT_METRIC.to_string()],
            interval: Some(-1),
            explicit_interval: None,
            minutely: None,
        };
        if let Ok(answer) = query(tm, &request).await {
            for m in answer.metric.iter().flat_map(|task| &task.metric) {
                let v = m
                    .value
                    .as_deref()
                    .and_then(|v| v.parse::<f64>().ok())
                    .map_or(Value::Null, |v| json!(v as u64));
                match m.name.as_str() {
                    RESTORES_METRIC => restores = v,
                    CONSISTENT_METRIC => seen = v,
                    _ => {}
                }
            }
        }
    }
    Ok(Json(json!({
        "topology": f.name,
        "reliability_mode": mode,
        "checkpoint_interval_seconds": config("topology.stateful.checkpoint.interval.seconds")
            .and_then(|v| v.parse::<u64>().ok()),
        "consistent_checkpoints": list,
        "newest_consistent_checkpoint": newest,
        "restores": restores,
        "consistent_checkpoints_seen": seen,
    })))
}
