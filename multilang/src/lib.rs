//! Components backed by a subprocess that speaks Storm's multi-lang protocol
//! (`reference/storm.md` §1): [`ShellSpout`] and [`ShellBolt`] run pystorm and streamparse
//! components, or any other multi-lang adapter, unmodified.
//!
//! ```no_run
//! use heron_api::TopologyBuilder;
//! use heron_multilang::{ShellBolt, ShellSpout};
//!
//! let mut b = TopologyBuilder::new();
//! b.set_spout("sentences", || ShellSpout::new(["python3", "sentence_spout.py"]).output_fields(["sentence"]), 1);
//! b.set_bolt("split", || ShellBolt::new(["python3", "split.py"]).output_fields(["word"]), 2)
//!     .shuffle_grouping("sentences");
//! ```
//!
//! # How it runs
//! - One subprocess per task, started in `open` / `prepare` (argv = the command) in its own
//!   process group with `PR_SET_PDEATHSIG = SIGKILL`; killed (SIGKILL to the group) on
//!   `close` / `cleanup` / drop. Working directory: [`ShellSpec::working_dir`], else
//!   `resources/` under the current directory when it exists, else the current directory.
//!   Environment: inherited, then `topology.environment` (a JSON object string
//!   `{"K": "v"}`, or `K=v,K2=v2`), then [`ShellSpec::env`] (a `PATH` entry is appended).
//!   Stderr is logged line by line at INFO (`tracing`, field `component`).
//! - Handshake: `conf` (the merged configuration; `true`/`false`, numbers and JSON text
//!   become JSON values), `pidDir` (`<cwd>/pids/<component>-<task>`) and `context` (task
//!   ids, streams, fields and groupings from [`heron_api::TopologyContext`]).
//! - Serializer (`topology.multilang.serializer`): JSON (`<json>\nend\n`, the default, also
//!   `org.apache.storm.multilang.JsonSerializer`) or `msgpack` (pystorm's
//!   `MsgpackSerializer`, `streamparse_run -s msgpack`); any other name is refused: the
//!   component reports the error and does not start.
//! - Values: see [`Node`] — bytes travel as a list of byte values in JSON and as `bin` in
//!   msgpack; a list or map emitted by the subprocess becomes a string holding its JSON text.
//! - Bolts: input tuples carry decimal string ids; emits become anchored emits (XOR acking
//!   works across the boundary); `ack` / `fail` release the held input. Heartbeats go every
//!   second; a subprocess silent for `topology.subprocess.timeout.secs` (30) while one is
//!   outstanding is hung. At most `topology.shellbolt.max.pending` (100) inputs are in the
//!   subprocess at once; at the limit the bolt waits until a quarter of them are answered.
//!   While output keeps coming, stdout is read at most every 0.5 ms (one wake-up per run of
//!   messages; a read after a quiet spell is not delayed). Output that arrives between inputs is handled through
//!   [`heron_api::Bolt::poll_async`]: the stdout reader thread wakes the executor with the
//!   context's [`heron_api::AsyncWaker`].
//! - Spouts: `next` / `ack` / `fail` / `activate` / `deactivate` commands answered by `sync`;
//!   message ids go back in the JSON type the subprocess gave them.
//! - `need_task_ids` (absent means true, as Storm's own adapters send it): answered from
//!   the plan for FIELDS, ALL, GLOBAL and direct emits. For SHUFFLE / NONE /
//!   LOCAL_OR_SHUFFLE consumers the host *pins* the tuple: it picks the task by its own
//!   round robin per (stream, consumer) and emits with
//!   [`heron_api::OutputCollector::emit_pinned`], so the stream manager delivers it exactly
//!   there (LOCAL_OR_SHUFFLE tuples so emitted lose their local preference); see
//!   [`task_ids`]. A stream read with CUSTOM grouping cannot be answered, and such an emit
//!   is treated as misbehaviour (error report naming the stream).
//! - Death, hang or misbehaviour (EOF, bad output, unknown command or tuple id, emit on an
//!   undeclared stream or with the wrong number of values): the error is reported through
//!   the collector, every pending input fails, the process group is killed and restarted
//!   after a backoff (100 ms doubling to 10 s). [`ShellBolt::restarts`] counts restarts.

mod bolt;
mod codec;
mod engine;
mod handshake;
mod incoming;
mod message;
mod node;
mod node_serde;
mod pending;
mod pipe;
mod process;
mod shell;
mod spec;
mod spout;
mod task_ids;

pub use bolt::DEFAULT_MAX_PENDING;
pub use codec::{CodecError, Decoded, Serializer, MAX_MESSAGE_BYTES, SERIALIZER_KEY};
pub use engine::{Backoff, Heartbeat, Liveness, DEFAULT_TIMEOUT, HEARTBEAT_INTERVAL};
pub use handshake::{conf_value, context_node, grouping_node, handshake_msg};
pub use incoming::Incoming;
pub use message::{DecodeError, Emit, ShellMsg};
pub use node::Node;
pub use pending::{parse_id, Pending};
pub use process::{parse_environment, ProcessError};
pub use shell::{ENVIRONMENT_KEY, MAX_PENDING_KEY, TIMEOUT_KEY};
pub use spec::{ShellBolt, ShellSpec, ShellSpout};
pub use task_ids::{task_ids, PinState, TaskIds, Unanswerable};
