//! The Heron Tracker: Heron's tracker REST API (default port 8888) over one or more state
//! managers (local file system or ZooKeeper) and the tmasters' stats ports, a Prometheus
//! endpoint (`/metrics`) for every running topology, and a web page (`/` and `/ui`) that draws
//! a topology and its live metrics. The page's HTML, JavaScript and SVG are in the binary.
//!
//! Routes ([`router`]): `/clusters`, `/health`, `/topologies`, `/topologies/states`,
//! `/topologies/{info,config,logicalplan,physicalplan,packingplan,executionstate,
//! schedulerlocation,metadata,runtimestate,metrics,metrics/timeline,metricstimeline,
//! exceptions,exceptionsummary,container/filedata,container/filestats}` with Heron's query
//! parameters, and ours: `/topologies/{backpressure,summary,component,checkpoints}` (GET)
//! and the controls `/topologies/{activate,deactivate,kill,restart,update}` (POST,
//! [`controls`]). Query parameters: (`cluster`, `environ`,
//! `topology`, `role`, `component`, `metricname`, `instance`, `interval`, `starttime`,
//! `endtime`). Answers are the JSON body itself (the FastAPI tracker's style); failures are
//! `{"status": "failure", "message": ...}` with 400 (missing or bad parameter), 404 (unknown
//! cluster, topology or component) or 503 (the tmaster cannot be reached).

mod backpressure;
mod checkpoints;
mod clusters;
pub mod controls;
mod error;
pub mod figures;
pub mod json;
mod logs;
mod metrics_routes;
mod prometheus;
mod query;
mod routes;
mod summary;
pub mod tmaster_client;
mod ui;

pub use clusters::{Cluster, Clusters, Listed};
pub use error::{ApiError, TrackerError};

use axum::routing::{get, post};
use axum::Router;
use heron_statemgr::StateManagerSpec;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;

/// Heron's default tracker port.
pub const DEFAULT_PORT: u16 = 8888;

/// The tracker's routes over `clusters`.
pub fn router(clusters: Vec<Cluster>) -> Router {
    let clusters: Clusters = Arc::new(clusters);
    Router::new()
        .route("/clusters", get(routes::clusters))
        .route("/health", get(routes::health))
        .route("/topologies", get(routes::topologies))
        .route("/topologies/states", get(routes::states))
        .route("/topologies/info", get(routes::info))
        .route("/topologies/config", get(routes::config))
        .route("/topologies/logicalplan", get(routes::logical_plan))
        .route("/topologies/physicalplan", get(routes::physical_plan))
        .route("/topologies/packingplan", get(routes::packing_plan))
        .route("/topologies/executionstate", get(routes::execution_state))
        .route(
            "/topologies/schedulerlocation",
            get(routes::scheduler_location),
        )
        .route("/topologies/metadata", get(routes::metadata))
        .route(
            "/topologies/runtimestate",
            get(metrics_routes::runtime_state),
        )
        .route("/topologies/metrics", get(metrics_routes::metrics))
        .route(
            "/topologies/metrics/timeline",
            get(metrics_routes::timeline),
        )
        .route(
            "/topologies/metricstimeline",
            get(metrics_routes::timeline_legacy),
        )
        .route("/topologies/exceptions", get(metrics_routes::exceptions))
        .route(
            "/topologies/exceptionsummary",
            get(metrics_routes::exception_summary),
        )
        .route("/topologies/backpressure", get(backpressure::backpressure))
        .route("/topologies/checkpoints", get(checkpoints::checkpoints))
        .route("/topologies/summary", get(summary::summary))
        .route("/topologies/component", get(summary::component))
        .route("/topologies/container/filedata", get(logs::filedata))
        .route("/topologies/container/filestats", get(logs::filestats))
        .route("/topologies/{verb}", post(controls::control))
        .route("/metrics", get(prometheus::metrics))
        .merge(ui::routes())
        .fallback(routes::not_found)
        .with_state(clusters)
}

/// The default cluster: `local` on Heron's local state root.
pub fn default_clusters() -> Vec<Cluster> {
    vec![Cluster::new("local", StateManagerSpec::default_local())]
}

/// Serves the tracker on `listener` until the future is dropped.
pub async fn serve(listener: TcpListener, clusters: Vec<Cluster>) -> Result<(), TrackerError> {
    axum::serve(listener, router(clusters))
        .await
        .map_err(TrackerError::Serve)
}

/// Serves the tracker on `addr` until an error; blocking (builds its own runtime).
pub fn run(addr: SocketAddr, clusters: Vec<Cluster>) -> Result<(), TrackerError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(TrackerError::Serve)?;
    rt.block_on(async move {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| TrackerError::Bind {
                addr: addr.to_string(),
                source,
            })?;
        serve(listener, clusters).await
    })
}

/// A tracker running on its own thread (for examples and tests).
pub struct BackgroundTracker {
    /// Where it listens.
    pub addr: SocketAddr,
}

impl BackgroundTracker {
    /// The page's URL.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

/// Binds `addr` (port 0: any free port) and serves the tracker on a thread of its own for the
/// rest of the process.
pub fn spawn_background(
    addr: SocketAddr,
    clusters: Vec<Cluster>,
) -> Result<BackgroundTracker, TrackerError> {
    let std_listener = std::net::TcpListener::bind(addr).map_err(|source| TrackerError::Bind {
        addr: addr.to_string(),
        source,
    })?;
    std_listener
        .set_nonblocking(true)
        .map_err(TrackerError::Serve)?;
    let bound = std_listener.local_addr().map_err(TrackerError::Serve)?;
    std::thread::Builder::new()
        .name("heron-tracker".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    tracing::error!(error = %e, "cannot start the tracker's runtime");
                    return;
                }
            };
            rt.block_on(async move {
                match TcpListener::from_std(std_listener) {
                    Ok(l) => {
                        if let Err(e) = serve(l, clusters).await {
                            tracing::error!(error = %e, "the tracker stopped");
                        }
                    }
                    Err(e) => tracing::error!(error = %e, "cannot serve the tracker"),
                }
            });
        })
        .map_err(TrackerError::Serve)?;
    Ok(BackgroundTracker { addr: bound })
}
