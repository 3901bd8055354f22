//! Query parameters (repeatable ones too) and finding the topology they name.

use crate::clusters::{blocking, Clusters};
use crate::json::TopologyInfo;
use crate::ApiError;

/// The query string's pairs, in order.
#[derive(Clone, Debug, Default)]
pub struct Params(Vec<(String, String)>);

impl Params {
    /// Parses a raw query string.
    pub fn parse(raw: Option<&str>) -> Result<Params, ApiError> {
        serde_urlencoded::from_str(raw.unwrap_or(""))
            .map(Params)
            .map_err(|e| ApiError::bad_request(format!("bad query string: {e}")))
    }

    /// The first value of `name`, if any and not empty.
    pub fn one(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.as_str())
    }

    /// The first value of `name`; 400 if missing.
    pub fn required(&self, name: &str) -> Result<&str, ApiError> {
        self.one(name)
            .ok_or_else(|| ApiError::bad_request(format!("missing query parameter: {name}")))
    }

    /// Every value of `name`.
    pub fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// An integer parameter, if present; 400 if it does not parse.
    pub fn int(&self, name: &str) -> Result<Option<i64>, ApiError> {
        self.one(name)
            .map(|v| {
                v.parse().map_err(|_| {
                    ApiError::bad_request(format!("query parameter {name} is not an integer: {v}"))
                })
            })
            .transpose()
    }
}

/// The topology a request names.
pub struct Found {
    /// Its name.
    pub name: String,
    /// What is known of it.
    pub info: TopologyInfo,
}

/// Finds `cluster`/`environ`/`topology` (all required; `role` checked when given): 400 for a
/// missing parameter, 404 for an unknown cluster or topology.
pub async fn topology(clusters: &Clusters, params: &Params) -> Result<Found, ApiError> {
    let cluster = params.required("cluster")?.to_string();
    let environ = params.required("environ")?.to_string();
    let name = params.required("topology")?.to_string();
    let role = params.one("role").map(str::to_string);
    let index = clusters
        .iter()
        .position(|c| c.name == cluster)
        .ok_or_else(|| ApiError::not_found(format!("unknown cluster: {cluster}")))?;
    let all = clusters.clone();
    let n = name.clone();
    let info = blocking(move || all[index].read(&n)).await?;
    let unknown = || ApiError::not_found(format!("unknown topology: {cluster}/{environ}/{name}"));
    let info = info.ok_or_else(unknown)?;
    let e = info.execution_state.clone().unwrap_or_default();
    let its_environ = if e.environ.is_empty() {
        "default"
    } else {
        &e.environ
    };
    if its_environ != environ || role.is_some_and(|r| r != e.role) {
        return Err(unknown());
    }
    Ok(Found { name, info })
}
