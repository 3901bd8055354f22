//! The local scheduler: submitting a topology binary, killing a topology, and the
//! per-container executor that starts and supervises a container's processes.
//!
//! * [`submit()`](submit::submit) runs the binary's `define` role, packs the topology, writes its
//!   state (`topologies`, `packingplans`, `executionstate`, rolled back on failure) and starts
//!   one detached executor per container (shard 0 = tmaster container), each a session
//!   leader so its process group is the container.
//! * [`kill()`](kill::kill) stops the executors' process groups (SIGTERM, then SIGKILL) and
//!   deletes the topology's state.
//! * [`restart()`](restart::restart) restarts the processes of one container or all.
//! * [`executor::run`] is the `executor` role: it starts the container's daemons and
//!   instances as the same binary and restarts them with backoff when they exit.
//!
//! Paths and flags follow `docs/internals.md`. Depends on `heron-proto`, `heron-statemgr` and
//! `heron-packer` only; it never links user code.

mod define;
mod error;
pub mod executor;
pub mod host;
mod kill;
pub mod layout;
pub mod limits;
mod modes;
pub mod pinning;
pub mod process;
pub mod resources;
mod restart;
pub mod shell;
mod submit;
#[cfg(test)]
mod test_support;
mod update;

pub use define::define_topology;
pub use error::SchedulerError;
pub use kill::{clean_up, kill, KillReport, KillRequest};
pub use modes::{auth_required, check_supported as check_modes, tls_enabled};
pub use restart::{restart, RestartRequest};
pub use submit::{
    check_binary, default_role, ensure_not_running, execution_state, executor_args,
    launch_executors, new_topology_id, pack, prepare_working_dir, submit, submit_with,
    submit_with_progress, write_secret, write_state, ExecutorProcess, Launch, Launcher,
    LocalLauncher, SubmitEvent, SubmitRequest, Submitted,
};
pub use update::{update, update_with, GrowContainers, UpdateReport, UpdateRequest};

/// The default cluster: local processes, local file-system state (`localzk` and clusters under
/// `~/.heron/conf` use this scheduler too, with another state manager).
pub const LOCAL_CLUSTER: &str = "local";

/// The default environ.
pub const DEFAULT_ENVIRON: &str = "default";

/// This crate's version, recorded as the release version of every submission.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
