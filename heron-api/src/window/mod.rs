//! Windows over a bolt's input (Storm's windowed bolts, plus session windows): tumbling and
//! sliding by count or duration, processing time by default or event time from a field or
//! an extractor, with lag, in-band watermarks and late tuples.
//!
//! - Count windows (a length or slide given in tuples) follow Storm: every `slide` tuples
//!   (or every `slide` of time) the window is the last `length` tuples (or those that arrived
//!   within `length`). Processing time only.
//! - Duration windows are aligned to the epoch: `[start, start + size)` with `start` a
//!   multiple of the slide. A window closes when the watermark reaches its end (in processing
//!   time the watermark is the clock); a tuple is late when every window it belongs to has
//!   closed; empty windows do not fire.
//! - Session windows, per key: `[first, last + gap)`, merged with every open session of the
//!   key they overlap or touch; closed when the watermark reaches the end.
//! - Event-time watermarks travel in-band on the [`WATERMARK_STREAM_ID`] stream: a spout
//!   calls [`SpoutOutputCollector::emit_watermark`](crate::SpoutOutputCollector::emit_watermark)
//!   (the largest event time it has read minus the lag, say); every bolt's watermark is the
//!   minimum over its input tasks ([`WatermarkTracker`]), passed to
//!   [`Bolt::on_watermark`](crate::Bolt::on_watermark) and forwarded downstream by the
//!   runtime. A topology with an event-time windowed bolt gets the stream on every component
//!   and an ALL subscription to it along every edge.
//! - ATLEAST_ONCE: emits are anchored to the window's tuples; a tuple is acked when it has
//!   left every window (late tuples at once, after going to the late stream if any).
//! - EFFECTIVELY_ONCE: the pending windows (held tuples, what has fired, the watermark or
//!   clock) are part of the task's checkpointed state, under [`WINDOW_STATE_KEY`] (layout in
//!   `snapshot`), beside the bolt's own state if it has some ([`WindowedBolt::stateful`]);
//!   a rollback restores them, and the replayed tuples after the checkpoint fill them again.

mod aligned;
mod bolt;
mod config;
mod count;
mod session;
pub mod snapshot;
mod watermark;

pub use aligned::{AlignedWindows, Fired, Inserted, Span};
pub use bolt::{Window, WindowCollector, WindowedBolt, WindowedBoltAdapter};
pub use config::{keys, WindowConfig};
pub use count::{CountFired, CountWindows, Length};
pub use session::SessionWindows;
pub use snapshot::{SnapshotError, WINDOW_STATE_KEY};
pub use watermark::{WatermarkTracker, WATERMARK_FIELD, WATERMARK_STREAM_ID};

#[cfg(test)]
mod tests;

#[cfg(test)]
mod bolt_tests;

#[cfg(test)]
mod checkpoint_tests;
