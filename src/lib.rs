//! heron-rs: a Storm/Heron-compatible stream processing runtime.
//!
//! This is the crate topology authors depend on. It re-exports the user API (spouts, bolts,
//! collectors, tuples, groupings, [`TopologyBuilder`], [`Config`]) and the runtime entry
//! points: [`run_role_if_requested`], which lets one binary be every process of its
//! topology, and [`LocalTopology`], which submits that binary to the local scheduler.
//!
//! A topology binary builds its topology from its arguments; its `main` starts with
//! [`run_role_if_requested`], then does what the user wants, e.g. submit itself:
//!
//! ```no_run
//! use heron::*;
//!
//! struct Numbers(i64);
//! impl Spout for Numbers {
//!     fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
//!         d.declare(Fields::new(["n"]));
//!     }
//!     fn next_tuple(&mut self, c: &mut SpoutOutputCollector) {
//!         self.0 += 1;
//!         c.emit(values![self.0]);
//!     }
//! }
//!
//! struct Print;
//! impl Bolt for Print {
//!     fn execute(&mut self, t: &Tuple, c: &mut OutputCollector) {
//!         c.ack(t);
//!     }
//! }
//!
//! fn topology(_args: &[String]) -> Result<HeronTopology, TopologyError> {
//!     let mut b = TopologyBuilder::new();
//!     b.set_spout("numbers", || Numbers(0), 1);
//!     b.set_bolt("print", || Print, 2).shuffle_grouping("numbers");
//!     b.build("Numbers", Config::new())
//! }
//!
//! fn main() {
//!     // Started as `<bin> heron-role ...`: run that process of the topology and exit.
//!     heron::run_role_if_requested(topology);
//!     // Otherwise: deploy this binary through the local scheduler, watch, kill.
//!     let args: Vec<String> = std::env::args().skip(1).collect();
//!     let stop = heron::ctrl_c_flag();
//!     let running = LocalTopology::submit_self(&args).expect("submit");
//!     while !stop.load(std::sync::atomic::Ordering::SeqCst) {
//!         std::thread::sleep(std::time::Duration::from_secs(1));
//!         println!("{:?}", running.counters());
//!     }
//!     running.kill().expect("kill");
//! }
//! ```
//!
//! The same binary can be deployed with the CLI: `heron submit local ./target/release/numbers`,
//! and stopped with `heron kill local Numbers`.

pub mod tracker;

pub use heron_api::*;
/// Shell components: spouts and bolts backed by a subprocess speaking Storm's multi-lang
/// protocol (pystorm, streamparse, any language).
pub use heron_multilang::{ShellBolt, ShellSpec, ShellSpout};
pub use heron_runtime::{
    cli_main, ctrl_c_flag, run_role_if_requested, Counters, LaunchError, LocalTopology,
    StartupFailure, SubmitRequest, Submitted,
};
/// Replayable sources for `EFFECTIVELY_ONCE` topologies ([`heron_sources`]).
pub use heron_sources as sources;
pub use heron_streamlet as streamlet;
pub use tracker::start_tracker_for;
