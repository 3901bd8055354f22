//! The routes answered from the state managers alone.

use crate::clusters::{blocking, Clusters};
use crate::json;
use crate::query::{topology, Params};
use crate::ApiError;
use axum::extract::{RawQuery, State};
use axum::Json;
use serde_json::{json, Map, Value};

/// The answer of a JSON route.
pub type Answer = Result<Json<Value>, ApiError>;

/// `/clusters`.
pub async fn clusters(State(clusters): State<Clusters>) -> Json<Value> {
    Json(json!(clusters
        .iter()
        .map(|c| c.name.clone())
        .collect::<Vec<_>>()))
}

/// `/health`.
pub async fn health() -> Json<Value> {
    Json(json!("ok"))
}

/// Unknown paths.
pub async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!("no such path: {}", uri.path()))
}

/// Every listed topology of the clusters the query asks for (`cluster`, `environ`
/// repeatable; none = all), as (cluster, topology).
pub async fn listed(
    clusters: &Clusters,
    params: &Params,
) -> Result<Vec<(String, crate::Listed)>, ApiError> {
    let want_clusters = params.all("cluster");
    let want_environs = params.all("environ");
    for c in &want_clusters {
        if !clusters.iter().any(|k| &k.name == c) {
            return Err(ApiError::not_found(format!("unknown cluster: {c}")));
        }
    }
    let all = clusters.clone();
    let lists = blocking(move || {
        let mut out = Vec::new();
        for c in all.iter() {
            if !want_clusters.is_empty() && !want_clusters.contains(&c.name) {
                continue;
            }
            for t in c.list()? {
                if want_environs.is_empty() || want_environs.contains(&t.environ) {
                    out.push((c.name.clone(), t));
                }
            }
        }
        Ok(out)
    })
    .await?;
    Ok(lists)
}

/// `/topologies`: `{cluster: {role: {environ: [names]}}}`.
pub async fn topologies(State(clusters): State<Clusters>, RawQuery(q): RawQuery) -> Answer {
    let params = Params::parse(q.as_deref())?;
    let mut out = Map::new();
    for c in clusters.iter() {
        if params.all("cluster").is_empty() || params.all("cluster").contains(&c.name) {
            out.insert(c.name.clone(), json!({}));
        }
    }
    for (cluster, t) in listed(&clusters, &params).await? {
        let names = out[&cluster]
            .as_object_mut()
            .expect("an object")
            .entry(t.role.clone())
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("an object")
            .entry(t.environ.clone())
            .or_insert_with(|| json!([]));
        names.as_array_mut().expect("an array").push(json!(t.name));
    }
    Ok(Json(Value::Object(out)))
}

/// `/topologies/states`: `{cluster: {environ: {topology: execution state}}}`.
pub async fn states(State(clusters): State<Clusters>, RawQuery(q): RawQuery) -> Answer {
    let params = Params::parse(q.as_deref())?;
    let mut out = Map::new();
    for (cluster, t) in listed(&clusters, &params).await? {
        let state = json::execution_state(&t.name, &t.info);
        out.entry(cluster)
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("an object")
            .entry(t.environ.clone())
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("an object")
            .insert(t.name.clone(), state);
    }
    Ok(Json(Value::Object(out)))
}

fn missing(what: &str, name: &str) -> ApiError {
    ApiError::not_found(format!("topology {name} has no {what} yet"))
}

/// `/topologies/info`.
pub async fn info(State(clusters): State<Clusters>, RawQuery(q): RawQuery) -> Answer {
    let f = topology(&clusters, &Params::parse(q.as_deref())?).await?;
    let i = &f.info;
    let t = i.topology.as_ref().expect("read only with a topology");
    let runtime = crate::metrics_routes::runtime(&f).await;
    Ok(Json(json!({
        "name": f.name,
        "id": t.id,
        "logical_plan": json::logical_plan(t),
        "physical_plan": i.physical_plan.as_ref().map(json::physical_plan),
        "packing_plan": i.packing_plan.as_ref().map(json::packing_plan),
        "execution_state": json::execution_state(&f.name, i),
        "metadata": json::metadata(&f.name, i),
        "runtime_state": runtime,
        "scheduler_location": json::scheduler_location(&f.name, i.scheduler.as_ref()),
        "tmanager_location": json::tmanager_location(i.tmanager.as_ref()),
    })))
}

/// `/topologies/config`.
pub async fn config(State(clusters): State<Clusters>, RawQuery(q): RawQuery) -> Answer {
    let f = topology(&clusters, &Params::parse(q.as_deref())?).await?;
    let t = f.info.topology.as_ref().expect("read only with a topology");
    Ok(Json(json::config(t.topology_config.as_ref())))
}

/// `/topologies/logicalplan`.
pub async fn logical_plan(State(clusters): State<Clusters>, RawQuery(q): RawQuery) -> Answer {
    let f = topology(&clusters, &Params::parse(q.as_deref())?).await?;
    let t = f.info.topology.as_ref().expect("read only with a topology");
    Ok(Json(json::logical_plan(t)))
}

/// `/topologies/physicalplan`.
pub async fn physical_plan(State(clusters): State<Clusters>, RawQuery(q): RawQuery) -> Answer {
    let f = topology(&clusters, &Params::parse(q.as_deref())?).await?;
    let p = f.info.physical_plan.as_ref();
    Ok(Json(json::physical_plan(
        p.ok_or_else(|| missing("physical plan", &f.name))?,
    )))
}

/// `/topologies/packingplan`.
pub async fn packing_plan(State(clusters): State<Clusters>, RawQuery(q): RawQuery) -> Answer {
    let f = topology(&clusters, &Params::parse(q.as_deref())?).await?;
    let p = f.info.packing_plan.as_ref();
    Ok(Json(json::packing_plan(
        p.ok_or_else(|| missing("packing plan", &f.name))?,
    )))
}

/// `/topologies/executionstate`.
pub async fn execution_state(State(clusters): State<Clusters>, RawQuery(q): RawQuery) -> Answer {
    let f = topology(&clusters, &Params::parse(q.as_deref())?).await?;
    Ok(Json(json::execution_state(&f.name, &f.info)))
}

/// `/topologies/schedulerlocation`.
pub async fn scheduler_location(State(clusters): State<Clusters>, RawQuery(q): RawQuery) -> Answer {
    let f = topology(&clusters, &Params::parse(q.as_deref())?).await?;
    Ok(Json(json::scheduler_location(
        &f.name,
        f.info.scheduler.as_ref(),
    )))
}

/// `/topologies/metadata`.
pub async fn metadata(State(clusters): State<Clusters>, RawQuery(q): RawQuery) -> Answer {
    let f = topology(&clusters, &Params::parse(q.as_deref())?).await?;
    Ok(Json(json::metadata(&f.name, &f.info)))
}
