//! The `heron` command line: `submit`, `kill`, `version` for the local cluster, with Heron's
//! syntax (`cluster[/role[/env]]`, `--config-property`, `--verbose`).

mod kill;
mod submit;
mod target;

pub use target::{parse_config_properties, parse_target, ConfigOverrides, Target};

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
    /// Submit a topology binary: heron submit local[/ROLE[/ENV]] BINARY [TOPOLOGY ARGS...]
    Submit(SubmitArgs),
    /// Kill a topology: heron kill local[/ROLE[/ENV]] TOPOLOGY
    Kill(KillArgs),
    /// Print the version.
    Version,
}

/// `heron submit`.
#[derive(Debug, clap::Args)]
pub struct SubmitArgs {
    /// Override a config value (KEY=VALUE; repeatable). Understood here:
    /// heron.statemgr.root.path (the local state root).
    #[arg(long = "config-property", value_name = "KEY=VALUE")]
    pub config_property: Vec<String>,
    /// Run the topology's processes with RUST_LOG=debug and print more detail.
    #[arg(long)]
    pub verbose: bool,
    /// cluster[/role[/env]]; the only cluster is "local".
    #[arg(value_name = "CLUSTER[/ROLE[/ENV]]")]
    pub cluster: String,
    /// The topology binary (its main starts with heron::run_role_if_requested).
    #[arg(value_name = "TOPOLOGY-BINARY")]
    pub binary: PathBuf,
    /// Arguments for the topology (passed to every process of it).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "TOPOLOGY-ARGS"
    )]
    pub args: Vec<String>,
}

/// `heron kill`.
#[derive(Debug, clap::Args)]
pub struct KillArgs {
    /// Override a config value (KEY=VALUE; repeatable), e.g. heron.statemgr.root.path.
    #[arg(long = "config-property", value_name = "KEY=VALUE")]
    pub config_property: Vec<String>,
    /// Print more detail.
    #[arg(long)]
    pub verbose: bool,
    /// cluster[/role[/env]]; the only cluster is "local".
    #[arg(value_name = "CLUSTER[/ROLE[/ENV]]")]
    pub cluster: String,
    /// The topology's name.
    #[arg(value_name = "TOPOLOGY")]
    pub topology: String,
}

/// Runs the `heron` CLI with this process's arguments; returns the exit code.
pub fn cli_main() -> i32 {
    cli_main_from(std::env::args_os())
}

/// Runs the `heron` CLI with `args` (including the program name); returns the exit code:
/// 0 on success, 1 when the command failed, 2 for a bad command line.
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
        Command::Submit(a) => a.verbose,
        Command::Kill(a) => a.verbose,
        Command::Version => false,
    };
    init_cli_logging(verbose);
    let result = match cli.command {
        Command::Submit(args) => submit::run(args),
        Command::Kill(args) => kill::run(args),
        Command::Version => {
            println!("heron-rs {}", heron_scheduler::VERSION);
            Ok(())
        }
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e:#}");
            1
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
