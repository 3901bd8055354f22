//! The topology master (Heron's TManager): the one process per topology that the stream
//! managers register with.
//!
//! [`run`] opens the state manager its config names (local file system or ZooKeeper), reads
//! `packingplans/<topology>` and `topologies/<topology>`, binds the binary Heron protocol
//! server, advertises itself in the ephemeral `tmanagers/<topology>` node, waits for every
//! `stmgr-<container>` of the packing plan to register, builds the physical plan, writes it
//! to `pplans/<topology>` and pushes it to every stream manager (`NewPhysicalPlanMessage`).
//! It answers heartbeats, keeps the latest published metrics in memory, rebuilds and re-pushes the plan when a stream manager comes
//! back, and exits (returns an error) when its location node is deleted or taken over, when
//! its state-manager session ends, or when the packing plan changes (watched, see
//! `state_watch`).
//!
//! The controller HTTP endpoint on `controller_port` serves `/activate`, `/deactivate` and
//! `/runtime_config/update` ([`controller`]). If another tmaster's location node exists, it
//! retries (`heron.tmanager.establish.retry.times` × interval) before giving up; on ZooKeeper
//! its session timeout is [`TMASTER_ZK_SESSION_TIMEOUT`] unless the spec sets one, so a crashed
//! predecessor's node expires within that budget.
//!
//! Published metrics go to a time series store ([`metrics`], 1-s buckets) that the stats
//! HTTP server on `stats_port` ([`stats`]: `/stats`, `/exceptions`, `/exceptionsummary`,
//! `/stmgrsregistrationsummary`, protobuf over POST) serves to the tracker.
//!
//! Layout: [`registry`] (registration state machine), [`pplan`] (plan building),
//! [`controller`] and [`metrics`] are pure and synchronous, and so is the private `core`, the
//! decision core over them (events in with the time passed in, actions out, like the stream
//! manager's). The private `daemon` is its async shell: it reads the clock, carries out the
//! core's actions (outboxes, state-manager reads and writes, controller replies); the socket
//! code is in `server`, `connection`, `http` and `stats`.
//!
//! Depends on `heron-proto` and `heron-statemgr` only (plus tokio and friends).

mod ckptmgr_client;
mod config;
mod connection;
pub mod controller;
mod core;
mod daemon;
mod error;
#[doc(hidden)]
pub mod fuzz;
mod http;
pub mod metrics;
pub mod pplan;
pub mod registry;
mod server;
mod startup;
mod state_watch;
pub mod stateful;
pub mod stats;

pub use config::{TmasterConfig, TmasterOptions, TMASTER_ZK_SESSION_TIMEOUT};
pub use error::TmasterError;

use heron_proto::tmanager::TManagerLocation;
use heron_proto::HeronCodec;
use heron_statemgr::{
    StateDir, StateManager, StateManagerExt, StateManagerSpec, DEFAULT_ZK_TIMEOUT,
};
use std::sync::Arc;
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
    let state = open_state(&config.state_manager)?;
    let loaded = startup::load(&*state, &config, &options)?;
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
    state: Arc<dyn StateManager>,
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
    let ctl_addr = format!("{}:{}", config.host, config.controller_port);
    let controller = TcpListener::bind((config.host.as_str(), config.controller_port))
        .await
        .map_err(|source| TmasterError::Bind {
            addr: ctl_addr.clone(),
            source,
        })?;
    let controller_port = controller
        .local_addr()
        .map_err(|source| TmasterError::Bind {
            addr: ctl_addr,
            source,
        })?
        .port();
    let metrics = metrics::MetricsStore::new();
    let (stats, stats_port) = stats::start(&config.host, config.stats_port, metrics.clone()).await;
    let location = TManagerLocation {
        topology_name: config.topology_name.clone(),
        topology_id: config.topology_id.clone(),
        host: config.host.clone(),
        controller_port: i32::from(controller_port),
        server_port: i32::from(server_port),
        stats_port: Some(i32::from(stats_port)),
    };
    startup::advertise(&*state, &location, &options).await?;

    let registry = registry::Registry::new(
        loaded.topology,
        loaded.expected_stmgrs,
        loaded.expected_instances,
        loaded.previous_pplan,
        options.stmgr_state_timeout,
    );
    let (events_tx, events) = mpsc::channel(1024);
    let control = tokio::spawn(http::serve(
        controller,
        events_tx.clone(),
        config.auth.clone(),
    ));
    state_watch::spawn(&state, &config.topology_name, &events_tx);
    let server = tokio::spawn(server::accept_loop(
        listener,
        events_tx,
        HeronCodec::new(options.max_packet_size),
        options.outbox_capacity,
        config.tls.clone(),
        config.auth.clone(),
    ));
    let mut core = core::Core::new(
        location.clone(),
        loaded.packing_plan_bytes,
        registry,
        metrics,
        options.state_watch_interval,
        std::time::Instant::now(),
    );
    let ckptmgr = match loaded.stateful {
        Some(cfg) => {
            let port = config.ckptmgr_port.ok_or_else(|| {
                TmasterError::InvalidTopology(format!(
                    "{} is EFFECTIVELY_ONCE but the tmaster has no checkpoint manager \
                     (--ckptmgr-port)",
                    config.topology_name
                ))
            })?;
            let since_epoch = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            let start_count = since_epoch.as_secs();
            info!(
                topology = %config.topology_name,
                interval = ?cfg.interval,
                start_clean = cfg.start_clean,
                consistent = loaded.checkpoints.as_ref().map_or(0, |c| c.consistent_checkpoints.len()),
                "EFFECTIVELY_ONCE: checkpoints driven from here"
            );
            let controller = stateful::StatefulController::new(
                cfg,
                loaded.checkpoints.clone(),
                loaded.packing_plan.id.clone(),
                start_count,
                std::time::Instant::now(),
            )
            .with_txid_base(i64::try_from(since_epoch.as_micros()).unwrap_or(i64::MAX / 2));
            if loaded.checkpoints.is_none() {
                // Heron creates the node at start: readers find the clean entry
                let name = &config.topology_name;
                if let Err(e) =
                    state.set_proto(StateDir::StatefulCheckpoints, name, controller.history())
                {
                    tracing::warn!(topology = %name, error = %e, "cannot write statefulcheckpoints");
                }
            }
            core.set_stateful(controller);
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(ckptmgr_client::run(
                port,
                config.topology_name.clone(),
                config.topology_id.clone(),
                config.auth.clone(),
                HeronCodec::new(options.max_packet_size),
                rx,
            ));
            Some(tx)
        }
        None => None,
    };
    let result = daemon::run_with_ckptmgr(
        core,
        state.clone(),
        config.topology_name.clone(),
        events,
        ckptmgr,
    )
    .await;
    server.abort();
    if let Some(stats) = stats {
        stats.abort();
    }
    control.abort();
    if !matches!(
        result,
        Err(TmasterError::LocationLost(_)
            | TmasterError::LocationTaken(_)
            | TmasterError::SessionLost(_))
    ) {
        startup::withdraw(&*state, &location);
    }
    match &result {
        // The topology was killed, or is being updated: expected ways to stop.
        Err(
            e @ (TmasterError::LocationLost(_)
            | TmasterError::LocationTaken(_)
            | TmasterError::SessionLost(_)
            | TmasterError::PackingPlanChanged(_)),
        ) => tracing::warn!(topology = %config.topology_name, reason = %e, "tmaster stopping"),
        Err(e) => tracing::error!(topology = %config.topology_name, error = %e, "tmaster stopping"),
        Ok(()) => {}
    }
    result
}

/// Opens the state manager; on ZooKeeper with the default session timeout, asks for
/// [`TMASTER_ZK_SESSION_TIMEOUT`] instead.
fn open_state(spec: &StateManagerSpec) -> Result<Arc<dyn StateManager>, TmasterError> {
    let mut spec = spec.clone();
    if let StateManagerSpec::ZooKeeper(c) = &mut spec {
        if c.session_timeout == DEFAULT_ZK_TIMEOUT {
            c.session_timeout = TMASTER_ZK_SESSION_TIMEOUT;
        }
    }
    spec.open().map_err(|source| TmasterError::State {
        what: format!("opening {spec}"),
        source,
    })
}
