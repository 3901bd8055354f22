//! The `heron` command line with Heron's syntax: `submit`, `kill`, `activate`, `deactivate`,
//! `restart`, `update`, `version`; `cluster[/role[/env]]`, `--config-path`,
//! `--config-property KEY=VALUE`, `--verbose`. Clusters: `local`, `localzk`, and those
//! defined under the config path (see [`crate::cluster`]).

mod control;
pub mod delegated;
mod http_client;
mod kill;
mod list;
mod submit;
mod target;
mod update;

pub use target::{parse_target, resolve, Resolved, Target};

use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;

/// Parsed `heron` command line.
#[derive(Debug, Parser)]
#[command(
    name = "heron",
    about = "Submit and manage heron-rs topologies",
    disable_version_flag = true
)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// `heron` subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Submit a topology binary or a Flux file: heron submit CLUSTER[/ROLE[/ENV]]
    /// BINARY|FLUX.yaml [TOPOLOGY ARGS...]
    Submit(SubmitArgs),
    /// Kill a topology: heron kill CLUSTER[/ROLE[/ENV]] TOPOLOGY
    Kill(TopologyArgs),
    /// Activate a deactivated topology (spouts resume next_tuple).
    Activate(TopologyArgs),
    /// Deactivate a topology (spouts stop calling next_tuple).
    Deactivate(TopologyArgs),
    /// Restart one container of a topology, or all: heron restart CLUSTER TOPOLOGY [CONTAINER]
    Restart(RestartArgs),
    /// Change parallelism or container count (repack), or runtime config.
    Update(UpdateArgs),
    /// List a cluster's topologies and their state: heron list CLUSTER
    List(ClusterArgs),
    /// Print a topology's controller token (for the tracker page's controls):
    /// heron token CLUSTER[/ROLE[/ENV]] TOPOLOGY
    Token(TopologyArgs),
    /// Print the version.
    Version,
}

/// Flags every cluster command takes, and the cluster.
#[derive(Debug, clap::Args)]
pub struct ClusterArgs {
    /// Override a config key (KEY=VALUE; repeatable), e.g.
    /// heron.statemgr.connection.string=127.0.0.1:2181 or heron.statemgr.root.path=/heron.
    #[arg(long = "config-property", value_name = "KEY=VALUE")]
    pub config_property: Vec<String>,
    /// Directory of cluster configurations (default ~/.heron/conf).
    #[arg(long = "config-path", value_name = "DIR")]
    pub config_path: Option<PathBuf>,
    /// Print more detail (and run the topology's processes with RUST_LOG=debug on submit).
    #[arg(long)]
    pub verbose: bool,
    /// cluster[/role[/env]]: local, localzk, or a directory under the config path.
    #[arg(value_name = "CLUSTER[/ROLE[/ENV]]")]
    pub cluster: String,
}

/// `heron submit`.
#[derive(Debug, clap::Args)]
pub struct SubmitArgs {
    /// Cluster and config.
    #[command(flatten)]
    pub common: ClusterArgs,
    /// The topology binary (its main starts with heron::run_role_if_requested), or a Flux
    /// file (`.yaml`/`.yml`; then the arguments may be `--filter <properties>` and
    /// `--env-filter`).
    #[arg(value_name = "TOPOLOGY-BINARY|FLUX-FILE")]
    pub binary: PathBuf,
    /// Print what would be created and change nothing (the Kubernetes scheduler: its
    /// objects, as YAML documents).
    #[arg(long = "dry-run")]
    pub dry_run: bool,
    /// Arguments for the topology (passed to every process of it).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "TOPOLOGY-ARGS"
    )]
    pub args: Vec<String>,
}

/// `heron kill|activate|deactivate`.
#[derive(Debug, clap::Args)]
pub struct TopologyArgs {
    /// Cluster and config.
    #[command(flatten)]
    pub common: ClusterArgs,
    /// The topology's name.
    #[arg(value_name = "TOPOLOGY")]
    pub topology: String,
}

/// `heron restart`.
#[derive(Debug, clap::Args)]
pub struct RestartArgs {
    /// Cluster and config.
    #[command(flatten)]
    pub common: ClusterArgs,
    /// The topology's name.
    #[arg(value_name = "TOPOLOGY")]
    pub topology: String,
    /// The container to restart (0 = the tmaster's); every container when absent or -1.
    #[arg(value_name = "CONTAINER", allow_negative_numbers = true)]
    pub container: Option<i32>,
}

/// `heron update`.
#[derive(Debug, clap::Args)]
pub struct UpdateArgs {
    /// Cluster and config.
    #[command(flatten)]
    pub common: ClusterArgs,
    /// The topology's name.
    #[arg(value_name = "TOPOLOGY")]
    pub topology: String,
    /// New parallelism of a component, COMPONENT:N (repeatable).
    #[arg(long = "component-parallelism", value_name = "COMPONENT:N")]
    pub component_parallelism: Vec<String>,
    /// New number of containers.
    #[arg(long = "container-number", value_name = "N")]
    pub container_number: Option<u32>,
    /// Runtime config, [COMPONENT:]KEY:VALUE (repeatable; not with the options above).
    #[arg(long = "runtime-config", value_name = "[COMPONENT:]KEY:VALUE")]
    pub runtime_config: Vec<String>,
    /// Print the new packing plan and change nothing.
    #[arg(long = "dry-run")]
    pub dry_run: bool,
}

/// Runs the `heron` CLI with this process's arguments; returns the exit code.
pub fn cli_main() -> i32 {
    cli_main_from(std::env::args_os())
}

/// Runs the `heron` CLI with `args` (including the program name); returns the exit code:
/// 0 on success, 1 when the command failed, 2 for a bad command line, 3 when a delegated
/// command's token was refused ([`delegated::CONTROL_TOKEN_VAR`]).
pub fn cli_main_from<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    let verbose = match &cli.command {
        Command::Submit(a) => a.common.verbose,
        Command::Kill(a) | Command::Activate(a) | Command::Deactivate(a) | Command::Token(a) => {
            a.common.verbose
        }
        Command::Restart(a) => a.common.verbose,
        Command::Update(a) => a.common.verbose,
        Command::List(a) => a.verbose,
        Command::Version => false,
    };
    init_cli_logging(verbose);
    let result = match cli.command {
        Command::Submit(args) => submit::run(args),
        Command::Kill(args) => kill::run(args),
        Command::Activate(args) => control::activate(args, true),
        Command::Deactivate(args) => control::activate(args, false),
        Command::Restart(args) => control::restart(args),
        Command::Update(args) => update::run(args),
        Command::List(args) => list::run(args),
        Command::Token(args) => control::token(args),
        Command::Version => {
            println!("heron-rs {}", heron_scheduler::VERSION);
            Ok(())
        }
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e:#}");
            if e.downcast_ref::<delegated::TokenRefused>().is_some() {
                delegated::TOKEN_REFUSED_EXIT
            } else {
                1
            }
        }
    }
}

/// Library warnings (e.g. from the scheduler) go to stderr; `--verbose` shows more.
fn init_cli_logging(verbose: bool) {
    let default = if verbose { "info" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .try_init();
}

#[cfg(test)]
mod tests;
