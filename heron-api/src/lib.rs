//! heron-api: the user-facing API of heron-rs, with Storm's and Heron's names.
//!
//! Write [`Spout`]s, [`Bolt`]s and [`BasicBolt`]s, wire them with a [`TopologyBuilder`]
//! and configure them with [`Config`]'s `topology.*` keys. The runtime side uses
//! [`HeronTopology`] (proto conversion, component factories), [`TopologyContext`] (built from
//! a physical plan) and [`Emitter`] (the batch of outgoing tuples a task accumulates; it
//! writes data tuples straight into Heron packets with `heron_proto::tuple`, the one home of
//! the tuple wire format, which also reads incoming tuples in place).
//!
//! In `EFFECTIVELY_ONCE` mode, components that implement [`Stateful`] (returned from
//! [`Spout::stateful`] / [`Bolt::stateful`]) have their [`State`] checkpointed and restored
//! by the runtime; see the [`state`] module.
//!
//! This crate depends only on `heron-proto` (Heron's messages) and small utility crates; it
//! has no async runtime and does no I/O.
//!
//! ```
//! use heron_api::*;
//!
//! struct Sentences;
//! impl Spout for Sentences {
//!     fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
//!         d.declare(Fields::new(["sentence"]));
//!     }
//!     fn next_tuple(&mut self, c: &mut SpoutOutputCollector) {
//!         c.emit(values!["the cow jumped over the moon"]);
//!     }
//! }
//!
//! struct Split;
//! impl BasicBolt for Split {
//!     fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
//!         d.declare(Fields::new(["word"]));
//!     }
//!     fn execute(&mut self, t: &Tuple, c: &mut BasicOutputCollector) -> Result<(), FailedException> {
//!         for w in t.get_str(0).unwrap_or_default().split(' ') {
//!             c.emit(values![w]);
//!         }
//!         Ok(())
//!     }
//! }
//!
//! let mut builder = TopologyBuilder::new();
//! builder.set_spout("sentences", || Sentences, 1);
//! builder.set_basic_bolt("split", || Split, 2).shuffle_grouping("sentences");
//! let mut conf = Config::new();
//! conf.set_reliability_mode(ReliabilityMode::AtLeastOnce);
//! let topology = builder.build("sentences", conf).unwrap();
//! assert_eq!(topology.to_proto().bolts.len(), 1);
//! ```

mod basic_bolt;
mod bolt;
mod builder;
mod collector;
pub mod config;
mod context;
mod declarer;
mod emitter;
mod error;
mod fields;
mod grouping;
mod spout;
pub mod state;
mod topology;
mod tuple;
mod value;
mod wake;
pub mod window;

pub use basic_bolt::{BasicBolt, BasicBoltAdapter};
pub use bolt::Bolt;
pub use builder::{BoltDeclarer, SpoutDeclarer, TopologyBuilder};
pub use collector::{BasicOutputCollector, OutputCollector, SpoutOutputCollector};
pub use config::{Config, ReliabilityMode};
pub use context::{GroupingKind, Subscription, TopologyContext, TopologyContextBuilder};
pub use declarer::{OutputFieldsDeclarer, StreamDecl};
#[doc(hidden)]
pub use emitter::{
    Emitter, EmitterCounters, StreamTally, CONTROL_SET_MAX_TUPLES, DATA_SET_MAX_BYTES,
    DATA_SET_MAX_TUPLES, MAX_TUPLE_BYTES,
};
pub use error::{ContextError, FailedException, TopologyError};
pub use fields::Fields;
pub use grouping::{
    CustomGroupingFactory, CustomStreamGrouping, Grouping, InputDecl, CUSTOM_MARKER,
    LOCAL_OR_SHUFFLE_MARKER,
};
pub use spout::Spout;
pub use state::{State, StateError, Stateful, TwoPhaseStateful};
pub use topology::HeronTopology;
#[doc(hidden)]
pub use tuple::decode_data_tuple;
pub use tuple::{
    Tuple, TupleSource, DEFAULT_STREAM_ID, SYSTEM_COMPONENT_ID, SYSTEM_TASK_ID, TICK_STREAM_ID,
};
pub use value::{MessageId, Value, ValueError, Values};
pub use wake::AsyncWaker;
