//! The runtime side of heron-rs that a topology binary and the `heron` CLI link:
//!
//! * [`run_role_if_requested`]: the first line of a topology's `main`. Started as
//!   `<bin> heron-role <role> ...` (by `heron submit` or an executor) the binary runs that
//!   role (define, executor, tmaster, stmgr, instance) and exits; otherwise `main` goes on.
//! * [`cli_main`]: the `heron` CLI (`submit`, `kill`, `activate`, `deactivate`, `restart`,
//!   `update`, `version`) for the `local` and `localzk` clusters and those under `~/.heron/conf`.
//! * [`build_flux_topology`]: the `heron` binary's own topology, a Flux file (see [`FluxArgs`]).
//! * [`LocalTopology`]: a binary submits itself to the local scheduler, reads its counters,
//!   and kills it; [`ctrl_c_flag`] lets an example stop cleanly on Ctrl-C.
//!
//! May depend on every heron-rs crate; `anyhow` is used only in the CLI module.

mod allocator;
mod cli;
pub mod cluster;
mod flux;
mod local;
mod logging;
mod role;
mod sched;
mod signals;
mod startup;

pub use cli::{
    cli_main, cli_main_from, parse_target, resolve, Cli, ClusterArgs, Command, Resolved,
    RestartArgs, SubmitArgs, Target, TopologyArgs, UpdateArgs,
};
pub use cluster::{default_config_path, ClusterConfig, ClusterError};
pub use flux::{build_topology as build_flux_topology, is_flux_file, FluxArgs, FLUX_ARG};
pub use local::{Counters, LaunchError, LocalTopology};
pub use role::{run_role, run_role_if_requested, RoleError, ROLE_ARG};
pub use signals::ctrl_c_flag;
pub use startup::{wait_for_physical_plan, StartupFailure, DEFAULT_PPLAN_TIMEOUT};

/// The scheduler types a caller of [`LocalTopology::submit`] needs.
pub use heron_scheduler::{KillRequest, SubmitRequest, Submitted};
