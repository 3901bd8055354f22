//! The topology master (Heron's TManager): the one process per topology that the stream
//! managers register with.
//!
//! [`run`] reads `packingplans/<topology>` and `topologies/<topology>` from the local
//! file-system state manager, binds the binary Heron protocol server, advertises itself in the
//! ephemeral `tmanagers/<topology>` node, waits for every `stmgr-<container>` of the packing
//! plan to register, builds the physical plan, writes it to `pplans/<topology>` and pushes it
//! to every stream manager (`NewPhysicalPlanMessage`). It answers heartbeats, keeps the latest
//! published metrics in memory, rebuilds and re-pushes the plan when a stream manager comes
//! back, and exits (returns an error) when its location node is deleted or taken over, or when
//! the packing plan changes.
//!
//! Not served yet: the controller and stats HTTP endpoints. Their ports are advertised in the
//! location node as configured but nothing is bound on them.
//!
//! Layout: [`registry`] (registration state machine) and [`pplan`] (plan building) and
//! [`metrics`] are pure and synchronous; the socket code is in private modules.
//!
//! Depends on `heron-proto` and `heron-statemgr` only (plus tokio and friends).

mod config;
mod connection;
mod core;
mod error;
pub mod metrics;
pub mod pplan;
pub mod registry;
mod server;
mod startup;

pub use config::{TmasterConfig, TmasterOptions};
pub use error::TmasterError;

use heron_proto::tmanager::TManagerLocation;
use heron_proto::HeronCodec;
use heron_statemgr::LocalFsStateManager;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tracing::info;

/// Runs the tmaster with Heron's defaults until a fatal error. Blocking; builds its own
/// (current-thread) tokio runtime.
pub fn run(config: TmasterConfig) -> Result<(), TmasterError> {
    run_with_options(config, TmasterOptions::default())
}

/// [`run`] with explicit tunables.
pub fn run_with_options(
    config: TmasterConfig,
    options: TmasterOptions,
) -> Result<(), TmasterError> {
    let state = LocalFsStateManager::new(&config.state_root);
    let loaded = startup::load(&state, &config, &options)?;
    info!(
        topology = %config.topology_name,
        stmgrs = ?loaded.expected_stmgrs,
        instances = loaded.expected_instances,
        packing_plan = %loaded.packing_plan.id,
        "state loaded"
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(TmasterError::Runtime)?;
    runtime.block_on(serve(config, options, state, loaded))
}

async fn serve(
    config: TmasterConfig,
    options: TmasterOptions,
    state: LocalFsStateManager,
    loaded: startup::Loaded,
) -> Result<(), TmasterError> {
    let addr = format!("{}:{}", config.host, config.server_port);
    let bind_err = |source| TmasterError::Bind {
        addr: addr.clone(),
        source,
    };
    let listener = TcpListener::bind((config.host.as_str(), config.server_port))
        .await
        .map_err(bind_err)?;
    let server_port = listener.local_addr().map_err(bind_err)?.port();
    let location = TManagerLocation {
        topology_name: config.topology_name.clone(),
        topology_id: config.topology_id.clone(),
        host: config.host.clone(),
        controller_port: i32::from(config.controller_port),
        server_port: i32::from(server_port),
        stats_port: Some(i32::from(config.stats_port)),
    };
    startup::advertise(&state, &location)?;

    let registry = registry::Registry::new(
        loaded.topology,
        loaded.expected_stmgrs,
        loaded.expected_instances,
        loaded.previous_pplan,
        options.stmgr_state_timeout,
    );
    let (events_tx, events) = mpsc::channel(1024);
    let server = tokio::spawn(server::accept_loop(
        listener,
        events_tx,
        HeronCodec::new(options.max_packet_size),
        options.outbox_capacity,
    ));
    let core = core::Core::new(
        Box::new(state.clone()),
        location.clone(),
        loaded.packing_plan_bytes,
        registry,
    );
    let result = core.run(events, options.state_watch_interval).await;
    server.abort();
    if !matches!(
        result,
        Err(TmasterError::LocationLost(_) | TmasterError::LocationTaken(_))
    ) {
        startup::withdraw(&state, &location);
    }
    match &result {
        // The topology was killed, or is being updated: expected ways to stop.
        Err(
            e @ (TmasterError::LocationLost(_)
            | TmasterError::LocationTaken(_)
            | TmasterError::PackingPlanChanged(_)),
        ) => tracing::warn!(topology = %config.topology_name, reason = %e, "tmaster stopping"),
        Err(e) => tracing::error!(topology = %config.topology_name, error = %e, "tmaster stopping"),
        Ok(()) => {}
    }
    result
}
