//! Components backed by a subprocess that speaks Storm's multi-lang protocol
//! (`../shared/reference/storm.md` §1): [`ShellSpout`] and [`ShellBolt`] run pystorm and
//! streamparse components, or any other multi-lang adapter, unmodified.
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

mod spec;

pub use spec::{ShellBolt, ShellSpec, ShellSpout};
