//! The stream manager (`heron-stmgr`): one per container, between that container's instances
//! and the rest of the topology.
//!
//! It accepts its instances' registrations, registers the container with the tmaster once all
//! of them are in, receives the physical plan and hands it to the instances, and keeps a full
//! mesh of directed connections to the other stream managers. On the data path it routes every
//! tuple an instance emits by the plan's groupings, batches tuples per destination task as
//! `HeronTupleSet2` (tuple bytes copied unchanged, never re-encoded), and sends each batch to
//! the local instance or, wrapped in a `TupleStreamMessage`, to the stream manager that owns
//! the task. Batches from other stream managers are forwarded to instances without parsing.
//! Behaviour follows Heron's stream manager (`shared/reference/heron.md` §2); delivery is at
//! most once for now.
//!
//! Depends on `heron-proto` (messages, framing) and `heron-statemgr` (the tmaster location),
//! plus tokio; nothing else of heron-rs. Logs go through `tracing`; the binary installs the
//! subscriber.
//!
//! # Layout
//!
//! * [`StmgrConfig`], [`run`]: the entry point (`config`, `daemon`: the async shell, fed by
//!   its I/O tasks through `event`).
//! * `core`: the synchronous state machine: events in, frames and actions out, time passed
//!   in. It owns no concern itself; it composes these parts, each a state type with its own
//!   tests, and carries out what they decide:
//!   * `conns`: connections, their roles, instance registration;
//!   * `mesh`: the links to the other stream managers and their reconnect schedule;
//!   * `routing`, `grouping`: the routing table a physical plan implies, one grouping per
//!     subscriber; `route_set`: one data set through the groupings into the batches;
//!   * `tuple_cache`: per-destination batches; `outbox`: per-connection buffers and the
//!     slot → connection table;
//!   * `acking`, `xor`: XOR acking (`ATLEAST_ONCE`) and the rotating tracker;
//!   * `backpressure`: watermark decisions; `backpressure::plan`: what they need of the
//!     plan (selective mode, spouts upstream of a component) and the paused spouts.
//! * `heron_proto::tuple` (not here): the tuple wire format, read in place so routing
//!   allocates nothing per tuple.
//! * `ids`: connection ids and the message names the core dispatches on; `error`: why a
//!   stream manager stops ([`StmgrError`]) and why a connection is closed.
//! * `net`: the socket settings of the data connections; `conn`: socket reader and writer
//!   tasks; `instance_server`, `stmgr_server`: what a registration and a hello must satisfy;
//!   `stmgr_client`, `tmaster_client`: outgoing connections.
//! * `bench_api` (hidden): the parts' real types, re-exported for the benches and tests.

mod acking;
mod backpressure;
#[doc(hidden)]
pub mod bench_api;
mod checkpoint;
mod ckptmgr_client;
mod config;
mod conn;
mod conns;
mod core;
mod daemon;
mod error;
mod event;
mod grouping;
mod ids;
mod instance_server;
mod kernel_queue;
mod mesh;
pub mod metrics_publisher;
mod net;
mod outbox;
mod restore_epoch;
mod restorer;
mod route_set;
mod routing;
mod spout_windows;
mod stateful_plan;
mod stmgr_client;
mod stmgr_server;
mod tmaster_client;
mod tuple_cache;
mod xor;

#[cfg(test)]
mod testutil;

pub use config::{
    StmgrConfig, BATCH_BYTES, DEFAULT_MAX_PACKET_SIZE, FLUSH_INTERVAL, HEARTBEAT_INTERVAL,
    RECONNECT_INTERVAL,
};
pub use error::StmgrError;

/// Runs a stream manager until a fatal error (a port that cannot be bound, an unusable
/// configuration). Blocks the calling thread: it builds its own single-threaded tokio runtime.
pub fn run(config: StmgrConfig) -> Result<(), StmgrError> {
    check(&config)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(StmgrError::Runtime)?;
    runtime.block_on(daemon::serve(config))
}

fn check(c: &StmgrConfig) -> Result<(), StmgrError> {
    let fail = |m: String| Err(StmgrError::Config(m));
    if c.topology_name.is_empty() || c.topology_id.is_empty() {
        return fail("the topology name and id must not be empty".into());
    }
    if c.stmgr_id.is_empty() || c.host.is_empty() {
        return fail("the stream manager id and host must not be empty".into());
    }
    if c.max_packet_size <= config::PACKET_OVERHEAD * 2 {
        return fail(format!(
            "max_packet_size {} is too small",
            c.max_packet_size
        ));
    }
    let mut ids = c.instance_ids.clone();
    ids.sort();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        return fail(format!("instance id {} is listed twice", w[0]));
    }
    Ok(())
}
