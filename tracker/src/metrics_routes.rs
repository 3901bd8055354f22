//! The routes that ask the topology's tmaster (its stats port).

use crate::clusters::Clusters;
use crate::query::{topology, Found, Params};
use crate::routes::Answer;
use crate::tmaster_client::post;
use crate::ApiError;
use axum::extract::{RawQuery, State};
use axum::Json;
use heron_proto::tmanager::{
    ExceptionLogRequest, ExceptionLogResponse, MetricInterval, MetricRequest, MetricResponse,
    StmgrsRegistrationSummaryRequest, StmgrsRegistrationSummaryResponse, TManagerLocation,
    TmanagerExceptionLog,
};
use serde_json::{json, Map, Value};

/// The pseudo component stream managers publish under.
pub const STMGR_COMPONENT: &str = "__stmgr__";

pub(crate) fn tmaster(f: &Found) -> Result<&TManagerLocation, ApiError> {
    f.info.tmanager.as_ref().ok_or_else(|| ApiError {
        status: axum::http::StatusCode::SERVICE_UNAVAILABLE,
        message: format!("topology {} has no tmaster running", f.name),
    })
}

/// The `component` parameter, which must name a component of the topology (or the stream
/// managers' `__stmgr__`).
fn component(f: &Found, params: &Params) -> Result<String, ApiError> {
    let c = params.required("component")?;
    let t = f.info.topology.as_ref().expect("read only with a topology");
    let known = c == STMGR_COMPONENT
        || c == crate::checkpoints::TMASTER_COMPONENT
        || t.spouts.iter().any(|s| s.comp.name == c)
        || t.bolts.iter().any(|b| b.comp.name == c);
    if !known {
        return Err(ApiError::not_found(format!(
            "topology {} has no component {c}",
            f.name
        )));
    }
    Ok(c.to_string())
}

/// Asks the tmaster for metrics.
pub async fn query(
    tmaster: &TManagerLocation,
    request: &MetricRequest,
) -> Result<MetricResponse, ApiError> {
    Ok(post(tmaster, "/stats", request).await?)
}

/// `/topologies/metrics`: `{interval, component, metrics: {metric: {instance: value}}}`.
pub async fn metrics(State(clusters): State<Clusters>, RawQuery(q): RawQuery) -> Answer {
    let params = Params::parse(q.as_deref())?;
    let f = topology(&clusters, &params).await?;
    let component = component(&f, &params)?;
    let interval = params.int("interval")?.unwrap_or(-1);
    let request = MetricRequest {
        component_name: component.clone(),
        instance_id: params.all("instance"),
        metric: params.all("metricname"),
        interval: Some(interval),
        explicit_interval: None,
        minutely: None,
    };
    let answer = query(tmaster(&f)?, &request).await?;
    let mut out: Map<String, Value> = request
        .metric
        .iter()
        .map(|m| (m.clone(), json!({})))
        .collect();
    for task in answer.metric {
        for m in task.metric {
            let value = m.value.unwrap_or_default();
            out.entry(m.name)
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .expect("an object")
                .insert(task.instance_id.clone(), json!(value));
        }
    }
    Ok(Json(json!({
        "interval": answer.interval.unwrap_or(interval),
        "component": component,
        "metrics": out,
    })))
}

async fn timeline_of(clusters: &Clusters, q: Option<String>, as_strings: bool) -> Answer {
    let params = Params::parse(q.as_deref())?;
    let f = topology(clusters, &params).await?;
    let component = component(&f, &params)?;
    let start = params
        .int("starttime")?
        .ok_or_else(|| ApiError::bad_request("missing query parameter: starttime"))?;
    let end = params
        .int("endtime")?
        .ok_or_else(|| ApiError::bad_request("missing query parameter: endtime"))?;
    if end < start {
        return Err(ApiError::bad_request("endtime is before starttime"));
    }
    let request = MetricRequest {
        component_name: component.clone(),
        instance_id: params.all("instance"),
        metric: params.all("metricname"),
        interval: None,
        explicit_interval: Some(MetricInterval { start, end }),
        minutely: Some(true),
    };
    let answer = query(tmaster(&f)?, &request).await?;
    let mut out: Map<String, Value> = request
        .metric
        .iter()
        .map(|m| (m.clone(), json!({})))
        .collect();
    for task in answer.metric {
        for m in task.metric {
            let points: Map<String, Value> = m
                .interval_values
                .iter()
                .map(|iv| {
                    let v = if as_strings {
                        json!(iv.value)
                    } else {
                        json!(iv.value.parse::<f64>().unwrap_or(0.0))
                    };
                    (iv.interval.start.to_string(), v)
                })
                .collect();
            out.entry(m.name)
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .expect("an object")
                .insert(task.instance_id.clone(), Value::Object(points));
        }
    }
    Ok(Json(json!({
        "component": component,
        "starttime": start,
        "endtime": end,
        "timeline": out,
    })))
}

/// `/topologies/metrics/timeline`: `{component, starttime, endtime, timeline: {metric:
/// {instance: {ts: value}}}}`.
pub async fn timeline(State(clusters): State<Clusters>, RawQuery(q): RawQuery) -> Answer {
    timeline_of(&clusters, q, false).await
}

/// `/topologies/metricstimeline` (legacy: values as strings).
pub async fn timeline_legacy(State(clusters): State<Clusters>, RawQuery(q): RawQuery) -> Answer {
    timeline_of(&clusters, q, true).await
}

async fn exception_logs(
    clusters: &Clusters,
    q: Option<String>,
    path: &str,
) -> Result<Vec<TmanagerExceptionLog>, ApiError> {
    let params = Params::parse(q.as_deref())?;
    let f = topology(clusters, &params).await?;
    let component = match params.one("component") {
        Some(_) => component(&f, &params)?,
        None => String::new(),
    };
    let request = ExceptionLogRequest {
        component_name: component,
        instances: params.all("instance"),
    };
    let answer: ExceptionLogResponse = post(tmaster(&f)?, path, &request).await?;
    Ok(answer.exceptions)
}

/// `/topologies/exceptions`.
pub async fn exceptions(State(clusters): State<Clusters>, RawQuery(q): RawQuery) -> Answer {
    let logs = exception_logs(&clusters, q, "/exceptions").await?;
    Ok(Json(json!(logs
        .iter()
        .map(|e| json!({
            "hostname": e.hostname,
            "instance_id": e.instance_id,
            "stacktrace": e.stacktrace,
            "lasttime": e.lasttime,
            "firsttime": e.firsttime,
            "count": e.count.to_string(),
            "logging": e.logging,
        }))
        .collect::<Vec<_>>())))
}

/// `/topologies/exceptionsummary`.
pub async fn exception_summary(State(clusters): State<Clusters>, RawQuery(q): RawQuery) -> Answer {
    let logs = exception_logs(&clusters, q, "/exceptionsummary").await?;
    Ok(Json(json!(logs
        .iter()
        .map(|e| json!({
            "class_name": e.stacktrace,
            "lasttime": e.lasttime,
            "firsttime": e.firsttime,
            "count": e.count.to_string(),
        }))
        .collect::<Vec<_>>())))
}

/// The runtime state: what is in the state manager, and which stream managers the tmaster
/// has registered (all unregistered when it cannot be asked).
pub async fn runtime(f: &Found) -> Value {
    let i = &f.info;
    let expected: Vec<String> = i
        .packing_plan
        .as_ref()
        .map(|p| {
            p.container_plans
                .iter()
                .map(|c| format!("stmgr-{}", c.id))
                .collect()
        })
        .unwrap_or_default();
    let registered = match &i.tmanager {
        Some(t) => post::<_, StmgrsRegistrationSummaryResponse>(
            t,
            "/stmgrsregistrationsummary",
            &StmgrsRegistrationSummaryRequest {},
        )
        .await
        .map(|r| r.registered_stmgrs)
        .unwrap_or_default(),
        None => vec![],
    };
    let stmgrs: Map<String, Value> = expected
        .iter()
        .chain(registered.iter().filter(|r| !expected.contains(r)))
        .map(|s| (s.clone(), json!({"is_registered": registered.contains(s)})))
        .collect();
    json!({
        "has_physical_plan": i.physical_plan.is_some(),
        "has_packing_plan": i.packing_plan.is_some(),
        "has_tmanager_location": i.tmanager.is_some(),
        "has_scheduler_location": i.scheduler.is_some(),
        "stmgrs": stmgrs,
    })
}

/// `/topologies/runtimestate`.
pub async fn runtime_state(State(clusters): State<Clusters>, RawQuery(q): RawQuery) -> Answer {
    let f = topology(&clusters, &Params::parse(q.as_deref())?).await?;
    Ok(Json(runtime(&f).await))
}
