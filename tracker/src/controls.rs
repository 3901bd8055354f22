//! The page's controls (ours; Storm UI has the same verbs): `POST /topologies/activate`,
//! `deactivate`, `kill`, `restart?container=N` and `update?component_parallelism=NAME:N`.
//!
//! Each runs the `heron` CLI of the cluster ([`Cli`]), so that the page goes through exactly
//! the code an operator's command does, on every scheduler. The user's bearer token
//! (`Authorization: Bearer <token>`, `heron`'s controller token of the topology) is handed to
//! the CLI in `HERONRS_CONTROL_TOKEN`; for a topology that requires authentication the CLI
//! refuses a missing or wrong one (exit code 3), and the answer is 401.

use crate::clusters::Clusters;
use crate::query::{topology, Params};
use crate::ApiError;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;

/// The variable the CLI reads the delegating user's token from.
pub const CONTROL_TOKEN_VAR: &str = "HERONRS_CONTROL_TOKEN";
/// The CLI's exit code for a refused token.
const TOKEN_REFUSED_EXIT: i32 = 3;
/// How long one command may run (a kill waits for every process to stop).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(180);

/// The `heron` CLI a cluster's controls run, and the environment it runs in (its `HOME`
/// holds the cluster configuration and the topologies' working directories).
#[derive(Clone, Debug)]
pub struct Cli {
    /// The `heron` binary.
    pub binary: PathBuf,
    /// Variables set for it (on top of the tracker's).
    pub env: Vec<(String, String)>,
}

impl Cli {
    /// `heron` next to this executable (`heron-tracker` is installed beside it), if present.
    pub fn beside_current_exe() -> Option<Cli> {
        let exe = std::env::current_exe().ok()?;
        let binary = exe.with_file_name("heron");
        binary.is_file().then_some(Cli {
            binary,
            env: vec![],
        })
    }
}

/// The command line after `heron` for `verb` on `cluster/role/environ topology`.
///
/// ```
/// use heron_tracker::controls::command_args;
/// assert_eq!(
///     command_args("restart", "local/alice/default", "WC", Some("2"), None).unwrap(),
///     ["restart", "local/alice/default", "WC", "2"]
/// );
/// assert!(command_args("update", "local", "WC", None, None).is_err());
/// ```
pub fn command_args(
    verb: &str,
    target: &str,
    topology: &str,
    container: Option<&str>,
    parallelism: Option<&str>,
) -> Result<Vec<String>, ApiError> {
    let mut args = vec![verb.to_string(), target.to_string(), topology.to_string()];
    match verb {
        "activate" | "deactivate" | "kill" => {}
        "restart" => {
            let c = container.ok_or_else(|| ApiError::bad_request("restart needs container=N"))?;
            if c.parse::<u32>().is_err() {
                return Err(ApiError::bad_request(format!(
                    "container must be a container number, not {c:?}"
                )));
            }
            args.push(c.to_string());
        }
        "update" => {
            let p = parallelism.ok_or_else(|| {
                ApiError::bad_request("update needs component_parallelism=COMPONENT:N")
            })?;
            let valid = p
                .rsplit_once(':')
                .is_some_and(|(c, n)| !c.is_empty() && n.parse::<u32>().is_ok_and(|n| n > 0));
            if !valid {
                return Err(ApiError::bad_request(format!(
                    "component_parallelism must be COMPONENT:N with N > 0, not {p:?}"
                )));
            }
            args.extend(["--component-parallelism".to_string(), p.to_string()]);
        }
        other => return Err(ApiError::not_found(format!("no such control: {other}"))),
    }
    Ok(args)
}

/// `POST /topologies/{verb}`.
pub async fn control(
    State(clusters): State<Clusters>,
    UrlPath(verb): UrlPath<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    let params = Params::parse(q.as_deref())?;
    let found = topology(&clusters, &params).await?;
    let cluster_name = params.required("cluster")?;
    let cluster = clusters
        .iter()
        .find(|c| c.name == cluster_name)
        .ok_or_else(|| ApiError::not_found(format!("unknown cluster: {cluster_name}")))?;
    let cli = cluster.cli.clone().ok_or_else(|| ApiError {
        status: StatusCode::NOT_IMPLEMENTED,
        message: format!(
            "the tracker has no heron CLI for cluster {cluster_name}, so its page cannot \
             control topologies (start heron-tracker with --heron-cli PATH)"
        ),
    })?;
    let e = found.info.execution_state.clone().unwrap_or_default();
    let environ = if e.environ.is_empty() {
        "default".to_string()
    } else {
        e.environ
    };
    let target = format!("{cluster_name}/{}/{environ}", e.role);
    let args = command_args(
        &verb,
        &target,
        &found.name,
        params.one("container"),
        params.one("component_parallelism"),
    )?;
    let token = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().strip_prefix("Bearer "))
        .unwrap_or("")
        .trim()
        .to_string();
    let run = tokio::task::spawn_blocking(move || {
        std::process::Command::new(&cli.binary)
            .args(&args)
            .envs(cli.env.iter().map(|(k, v)| (k, v)))
            .env(CONTROL_TOKEN_VAR, token)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", cli.binary.display()))
    });
    let out = tokio::time::timeout(COMMAND_TIMEOUT, run)
        .await
        .map_err(|_| ApiError {
            status: StatusCode::GATEWAY_TIMEOUT,
            message: format!("heron {verb} did not finish in {COMMAND_TIMEOUT:?}"),
        })?
        .map_err(|e| ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: e.to_string(),
        })?
        .map_err(|message| ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message,
        })?;
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    tracing::info!(verb, topology = %found.name, code = ?out.status.code(), "control from the page");
    if out.status.success() {
        return Ok((
            StatusCode::OK,
            Json(json!({"status": "success", "message": stdout})),
        )
            .into_response());
    }
    let status = if out.status.code() == Some(TOKEN_REFUSED_EXIT) {
        StatusCode::UNAUTHORIZED
    } else {
        StatusCode::BAD_REQUEST
    };
    let message = stderr
        .strip_prefix("error: ")
        .unwrap_or(&stderr)
        .to_string();
    Err(ApiError { status, message })
}
