//! `/topologies/container/filedata` and `/topologies/container/filestats` (Heron's tracker
//! paths): a container's files, read through its shell (`heron_shell`, at the
//! `shell_port` its stream manager put in the physical plan).

use crate::clusters::Clusters;
use crate::query::{topology, Params};
use crate::tmaster_client::get;
use crate::ApiError;
use axum::extract::{RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

/// Percent-encodes `s` for a URL path, keeping `/`.
fn encode_path(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

async fn proxy(clusters: Clusters, q: Option<String>, what: &str) -> Result<Response, ApiError> {
    let params = Params::parse(q.as_deref())?;
    let f = topology(&clusters, &params).await?;
    let container = params.required("container")?;
    let path = params.required("path")?;
    let pplan = f.info.physical_plan.as_ref().ok_or_else(|| {
        ApiError::not_found(format!("topology {} has no physical plan yet", f.name))
    })?;
    let stmgr_id = format!("stmgr-{container}");
    let stmgr = pplan
        .stmgrs
        .iter()
        .find(|s| s.id == stmgr_id)
        .ok_or_else(|| {
            ApiError::not_found(format!("topology {} has no container {container}", f.name))
        })?;
    let port = stmgr
        .shell_port
        .filter(|p| *p > 0)
        .ok_or_else(|| ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: format!("container {container} of {} runs no shell", f.name),
        })?;
    let mut url = format!("/{what}/{}", encode_path(path.trim_start_matches('/')));
    if what == "filedata" {
        let offset = params.int("offset")?.unwrap_or(-1);
        let length = params.int("length")?.unwrap_or(64 * 1024).max(0);
        url.push_str(&format!("?offset={offset}&length={length}"));
    }
    let addr = format!("{}:{port}", stmgr.host_name);
    let (status, body) = get(&addr, &url).await.map_err(|e| ApiError {
        status: StatusCode::SERVICE_UNAVAILABLE,
        message: e.to_string(),
    })?;
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    Ok((status, [(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// `/topologies/container/filedata?container=N&path=P[&offset=O][&length=L]`: a page of a
/// container's file (`offset` -1, the default: its last `length` bytes).
pub async fn filedata(
    State(clusters): State<Clusters>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    proxy(clusters, q, "filedata").await
}

/// `/topologies/container/filestats?container=N&path=P`: a directory's entries.
pub async fn filestats(
    State(clusters): State<Clusters>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    proxy(clusters, q, "filestats").await
}
