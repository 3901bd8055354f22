//! Role dispatch for topology binaries: `<bin> heron-role <role> [flags] -- <user args>`.
//!
//! [`run_role_if_requested`] is the first line of a topology's `main`. The flags are those of
//! `docs/internals.md`; every role gets the same user arguments, so every process builds the
//! same topology.

use crate::logging;
use clap::{Args, Parser, Subcommand};
use heron_api::{HeronTopology, TopologyError};
use heron_proto::Message;
use heron_scheduler::limits::PacketLimits;
use heron_statemgr::StateManagerSpec;
use std::ffi::OsString;
use std::path::PathBuf;

/// The first argument that selects a role.
pub const ROLE_ARG: &str = "heron-role";

/// Exit code of a role that ran and failed.
pub const EXIT_FAILED: i32 = 1;

/// Exit code of a topology that does not build (and of bad role flags).
pub const EXIT_BAD_TOPOLOGY: i32 = 2;

/// If this process was started as `<bin> heron-role <role> ...`, runs that role and exits the
/// process (0 on success, 1 when the role fails, 2 when the topology does not build or the
/// flags are wrong). Otherwise returns, and the caller's `main` continues.
///
/// `build` gets the user arguments (what follows `--`) and returns the topology.
pub fn run_role_if_requested<F>(build: F)
where
    F: Fn(&[String]) -> Result<HeronTopology, TopologyError>,
{
    let args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).is_none_or(|a| a != ROLE_ARG) {
        return;
    }
    std::process::exit(run_role(&args[2..], build));
}

/// Runs the role described by `args` (what follows `heron-role`) and returns the exit code.
pub fn run_role<F>(args: &[OsString], build: F) -> i32
where
    F: Fn(&[String]) -> Result<HeronTopology, TopologyError>,
{
    let parsed = match RoleCli::try_parse_from(args) {
        Ok(p) => p,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_BAD_TOPOLOGY } else { 0 };
        }
    };
    let role = parsed.role;
    crate::allocator::tune();
    // before logging, which may start a thread: every thread inherits the policy
    let sched = role.is_data_path().then(crate::sched::use_batch_policy);
    logging::init(&role.process_name());
    if let Some(outcome) = &sched {
        crate::sched::log(outcome);
    }
    let topology = match build(role.user_args()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: the topology does not build: {e}");
            return EXIT_BAD_TOPOLOGY;
        }
    };
    let name = role.process_name();
    match role.run(&topology) {
        Ok(()) => {
            tracing::info!("{name} exiting");
            0
        }
        Err(e) => {
            tracing::error!("{name} failed: {e}");
            EXIT_FAILED
        }
    }
}

/// Why a role failed.
#[derive(Debug, thiserror::Error)]
pub enum RoleError {
    /// Writing the topology definition failed.
    #[error("writing the topology definition to {}: {source}", path.display())]
    Define {
        /// The output file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The executor's own binary or directory could not be found.
    #[error("executor setup: {0}")]
    Setup(std::io::Error),
    /// The executor failed.
    #[error(transparent)]
    Executor(#[from] heron_scheduler::SchedulerError),
    /// The tmaster failed.
    #[error(transparent)]
    Tmaster(#[from] heron_tmaster::TmasterError),
    /// The stream manager failed.
    #[error(transparent)]
    Stmgr(#[from] heron_stmgr::StmgrError),
    /// The instance failed.
    #[error(transparent)]
    Instance(#[from] heron_instance::InstanceError),
    /// The checkpoint manager failed (or its storage is not configured right).
    #[error(transparent)]
    Ckptmgr(#[from] heron_ckptmgr::CkptmgrError),
    /// The topology's config asks for something no role can run with.
    #[error("topology config: {0}")]
    Config(String),
}

#[derive(Debug, Parser)]
#[command(
    name = "heron-role",
    no_binary_name = true,
    about = "run one process of a topology"
)]
struct RoleCli {
    #[command(subcommand)]
    role: Role,
}

/// `--topology-name T --topology-id I`, common to the daemons.
#[derive(Debug, Clone, Args)]
struct TopologyIds {
    #[arg(long)]
    topology_name: String,
    #[arg(long)]
    topology_id: String,
}

/// A parsed role with its flags.
#[derive(Debug, Subcommand)]
enum Role {
    /// Write the serialized Topology proto to a file.
    Define {
        #[arg(long)]
        output: PathBuf,
        #[arg(last = true)]
        user_args: Vec<String>,
    },
    /// Supervise one container's processes.
    Executor {
        #[arg(long)]
        shard: i32,
        #[command(flatten)]
        ids: TopologyIds,
        #[arg(long)]
        state_manager: StateManagerSpec,
        #[arg(long, default_value = "local")]
        cluster: String,
        #[arg(long)]
        role: String,
        #[arg(long, default_value = "default")]
        environ: String,
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        #[arg(long)]
        fixed_ports: bool,
        #[arg(last = true)]
        user_args: Vec<String>,
    },
    /// The topology master (container 0).
    Tmaster {
        #[command(flatten)]
        ids: TopologyIds,
        #[arg(long)]
        state_manager: StateManagerSpec,
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        #[arg(long)]
        server_port: u16,
        #[arg(long)]
        controller_port: u16,
        #[arg(long)]
        stats_port: u16,
        #[arg(long)]
        ckptmgr_port: Option<u16>,
        #[arg(long)]
        auth_secret_file: Option<PathBuf>,
        #[arg(last = true)]
        user_args: Vec<String>,
    },
    /// A container's stream manager.
    Stmgr {
        #[command(flatten)]
        ids: TopologyIds,
        #[arg(long)]
        state_manager: StateManagerSpec,
        #[arg(long)]
        stmgr_id: String,
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        #[arg(long)]
        data_port: u16,
        #[arg(long)]
        local_data_port: u16,
        #[arg(long, value_delimiter = ',')]
        instance_ids: Vec<String>,
        #[arg(long)]
        ckptmgr_port: Option<u16>,
        #[arg(long)]
        shell_port: Option<u16>,
        #[arg(long)]
        auth_secret_file: Option<PathBuf>,
        #[arg(last = true)]
        user_args: Vec<String>,
    },
    /// One spout or bolt task.
    Instance {
        #[command(flatten)]
        ids: TopologyIds,
        #[arg(long)]
        instance_id: String,
        #[arg(long)]
        component_name: String,
        #[arg(long)]
        task_id: i32,
        #[arg(long)]
        component_index: i32,
        #[arg(long)]
        stmgr_id: String,
        #[arg(long)]
        stmgr_port: u16,
        #[arg(long)]
        auth_secret_file: Option<PathBuf>,
        #[arg(last = true)]
        user_args: Vec<String>,
    },
    /// A container's checkpoint manager (`EFFECTIVELY_ONCE` topologies).
    Ckptmgr {
        #[command(flatten)]
        ids: TopologyIds,
        #[arg(long)]
        ckptmgr_id: String,
        #[arg(long)]
        port: u16,
        #[arg(long)]
        auth_secret_file: Option<PathBuf>,
        #[arg(last = true)]
        user_args: Vec<String>,
    },
}

impl Role {
    /// Stream managers and instances: the processes tuples pass through.
    fn is_data_path(&self) -> bool {
        matches!(self, Role::Stmgr { .. } | Role::Instance { .. })
    }

    /// The name in log lines: `define`, `executor-N`, `tmaster`, `stmgr-N`, the instance id.
    fn process_name(&self) -> String {
        match self {
            Role::Define { .. } => "define".to_string(),
            Role::Executor { shard, .. } => format!("executor-{shard}"),
            Role::Tmaster { .. } => "tmaster".to_string(),
            Role::Stmgr { stmgr_id, .. } => stmgr_id.clone(),
            Role::Instance { instance_id, .. } => instance_id.clone(),
            Role::Ckptmgr { ckptmgr_id, .. } => ckptmgr_id.clone(),
        }
    }

    fn user_args(&self) -> &[String] {
        match self {
            Role::Define { user_args, .. }
            | Role::Executor { user_args, .. }
            | Role::Tmaster { user_args, .. }
            | Role::Stmgr { user_args, .. }
            | Role::Instance { user_args, .. }
            | Role::Ckptmgr { user_args, .. } => user_args,
        }
    }

    fn run(self, topology: &HeronTopology) -> Result<(), RoleError> {
        let limits =
            PacketLimits::from_config(|k| topology.config().get(k)).map_err(RoleError::Config)?;
        match self {
            Role::Define { output, .. } => {
                std::fs::write(&output, topology.to_proto().encode_to_vec()).map_err(|source| {
                    RoleError::Define {
                        path: output,
                        source,
                    }
                })
            }
            Role::Executor {
                shard,
                ids,
                state_manager,
                cluster,
                role,
                environ,
                host,
                fixed_ports,
                user_args,
            } => {
                let binary = std::env::current_exe().map_err(RoleError::Setup)?;
                let working_dir = std::env::current_dir().map_err(RoleError::Setup)?;
                let host = heron_scheduler::host::resolve_host(
                    &host,
                    &state_manager,
                    std::env::var("HOST").ok().as_deref(),
                );
                heron_scheduler::executor::run(heron_scheduler::executor::ExecutorConfig {
                    shard,
                    topology_name: ids.topology_name,
                    topology_id: ids.topology_id,
                    state_manager,
                    cluster,
                    role,
                    environ,
                    user_args,
                    binary,
                    working_dir,
                    host,
                    fixed_ports,
                })?;
                Ok(())
            }
            Role::Tmaster {
                ids,
                state_manager,
                host,
                server_port,
                controller_port,
                stats_port,
                ckptmgr_port,
                auth_secret_file,
                ..
            } => {
                let config = heron_tmaster::TmasterConfig {
                    topology_name: ids.topology_name,
                    topology_id: ids.topology_id,
                    state_manager,
                    host,
                    server_port,
                    controller_port,
                    stats_port,
                    ckptmgr_port,
                    auth: load_auth(auth_secret_file.as_deref(), topology)?,
                    tls: load_tls(auth_secret_file.as_deref(), topology)?,
                };
                let options = heron_tmaster::TmasterOptions {
                    max_packet_size: limits.tmaster,
                    ..heron_tmaster::TmasterOptions::default()
                };
                heron_tmaster::run_with_options(config, options)?;
                Ok(())
            }
            Role::Stmgr {
                ids,
                state_manager,
                stmgr_id,
                host,
                data_port,
                local_data_port,
                instance_ids,
                ckptmgr_port,
                shell_port,
                auth_secret_file,
                ..
            } => {
                heron_stmgr::run(heron_stmgr::StmgrConfig {
                    topology_name: ids.topology_name,
                    topology_id: ids.topology_id,
                    state_manager,
                    stmgr_id,
                    host,
                    data_port,
                    local_data_port,
                    instance_ids: instance_ids.into_iter().filter(|i| !i.is_empty()).collect(),
                    max_packet_size: limits.stmgr,
                    ckptmgr_port,
                    shell_port,
                    auth: load_auth(auth_secret_file.as_deref(), topology)?,
                    tls: load_tls(auth_secret_file.as_deref(), topology)?,
                })?;
                Ok(())
            }
            Role::Instance {
                ids,
                instance_id,
                component_name,
                task_id,
                component_index,
                stmgr_id,
                stmgr_port,
                auth_secret_file,
                ..
            } => {
                let metrics_dir = std::env::current_dir()
                    .map(|d| d.join("metrics"))
                    .map_err(RoleError::Setup)?;
                heron_instance::run(
                    heron_instance::InstanceConfig {
                        topology_name: ids.topology_name,
                        topology_id: ids.topology_id,
                        instance_id,
                        component_name,
                        task_id,
                        component_index,
                        stmgr_id,
                        stmgr_port,
                        metrics_dir: Some(metrics_dir),
                        max_packet_size: limits.instance,
                        auth: load_auth(auth_secret_file.as_deref(), topology)?,
                    },
                    topology,
                )?;
                Ok(())
            }
            Role::Ckptmgr {
                ids,
                ckptmgr_id,
                port,
                auth_secret_file,
                ..
            } => {
                let home = std::env::var_os("HOME").map(PathBuf::from);
                let mut config = ckptmgr_config(ids, ckptmgr_id, port, topology.config(), home)?;
                config.max_packet_size = limits.ckptmgr;
                config.auth = load_auth(auth_secret_file.as_deref(), topology)?;
                heron_ckptmgr::run(config)?;
                Ok(())
            }
        }
    }
}

/// The topology's secret for a daemon role: read from `--auth-secret-file` unless the
/// topology turns authentication off (`heron-rs.auth.required=false`); a topology that wants
/// it and no file given is refused, so no daemon runs open by mistake.
fn load_auth(
    file: Option<&std::path::Path>,
    topology: &HeronTopology,
) -> Result<Option<heron_auth::Secret>, RoleError> {
    let required = heron_auth::required(topology.config().get(heron_auth::REQUIRED_KEY))
        .map_err(RoleError::Config)?;
    match (required, file) {
        (false, _) => Ok(None),
        (true, Some(path)) => heron_auth::Secret::load(path)
            .map(Some)
            .map_err(|e| RoleError::Config(e.to_string())),
        (true, None) => Err(RoleError::Config(format!(
            "{} is on (the default) but no --auth-secret-file was given",
            heron_auth::REQUIRED_KEY
        ))),
    }
}

/// The topology's TLS identity for the tmaster and the stream managers, when its config sets
/// `heron-rs.tls.enabled=true`: read from the directory of the secret, where `heron submit`
/// wrote it.
fn load_tls(
    secret_file: Option<&std::path::Path>,
    topology: &HeronTopology,
) -> Result<Option<heron_auth::Tls>, RoleError> {
    let on = heron_auth::tls_enabled(topology.config().get(heron_auth::TLS_KEY))
        .map_err(RoleError::Config)?;
    if !on {
        return Ok(None);
    }
    let dir = secret_file.and_then(|f| f.parent()).ok_or_else(|| {
        RoleError::Config(format!("{} needs --auth-secret-file", heron_auth::TLS_KEY))
    })?;
    heron_auth::Tls::load(dir)
        .map(Some)
        .map_err(|e| RoleError::Config(e.to_string()))
}

/// The checkpoint manager's config: its storage root comes from the topology's config
/// (`heron.statefulstorage.*`), refusing backends other than the local file system.
fn ckptmgr_config(
    ids: TopologyIds,
    ckptmgr_id: String,
    port: u16,
    config: &heron_api::Config,
    home: Option<PathBuf>,
) -> Result<heron_ckptmgr::CkptmgrConfig, RoleError> {
    let root = heron_ckptmgr::storage_root(
        config.get(heron_ckptmgr::STORAGE_CLASSNAME_KEY),
        config.get(heron_ckptmgr::LOCALFS_ROOT_PATH_KEY),
        home.as_deref(),
    )?;
    Ok(heron_ckptmgr::CkptmgrConfig {
        topology_name: ids.topology_name,
        topology_id: ids.topology_id,
        ckptmgr_id,
        port,
        root,
        max_packet_size: heron_ckptmgr::MAX_PACKET_SIZE,
        auth: None,
    })
}

#[cfg(test)]
mod tests;
