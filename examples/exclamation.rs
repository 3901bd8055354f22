//! ExclamationTopology: spout `word` → bolt `exclaim1` (shuffle) → bolt `exclaim2` (shuffle),
//! each bolt appending "!!!".
//!
//! `cargo run --release --example exclamation -- --duration 10s`

mod common;

use heron::{
    values, Bolt, Fields, HeronTopology, OutputCollector, OutputFieldsDeclarer, Spout,
    SpoutOutputCollector, TopologyBuilder, TopologyError, Tuple,
};

const WORDS: &[&str] = &["nathan", "mike", "jackson", "golda", "bertels"];

struct WordSpout {
    next: usize,
}

impl Spout for WordSpout {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["word"]));
    }

    fn next_tuple(&mut self, collector: &mut SpoutOutputCollector) {
        self.next = (self.next + 1) % WORDS.len();
        collector.emit(values![WORDS[self.next]]);
    }
}

struct ExclamationBolt;

impl Bolt for ExclamationBolt {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["word"]));
    }

    fn execute(&mut self, input: &Tuple, collector: &mut OutputCollector) {
        let word = format!("{}!!!", input.get_str(0).unwrap_or_default());
        collector.emit_anchored(&[input], values![word]);
        collector.ack(input);
    }
}

fn topology(args: &[String]) -> Result<HeronTopology, TopologyError> {
    let opts = common::Options::parse(args).map_err(TopologyError::Invalid)?;
    let p = opts.parallelism;
    let mut builder = TopologyBuilder::new();
    builder.set_spout("word", || WordSpout { next: 0 }, p);
    builder
        .set_bolt("exclaim1", || ExclamationBolt, p)
        .shuffle_grouping("word");
    builder
        .set_bolt("exclaim2", || ExclamationBolt, p)
        .shuffle_grouping("exclaim1");
    builder.build("ExclamationTopology", opts.config())
}

fn main() {
    heron::run_role_if_requested(topology);
    std::process::exit(common::run("ExclamationTopology"));
}
