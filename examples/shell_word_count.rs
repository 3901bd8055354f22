//! ShellWordCount: a Rust spout `sentence` → a pystorm bolt `split` (a Python subprocess per
//! task, Storm's multi-lang protocol: `examples/multilang/split.py`) → a Rust bolt `count`.
//!
//! `cargo run --release --example shell_word_count -- --duration 30s --reliability atleast`
//! with a `python3` on the PATH that has pystorm (`pip install pystorm`) deploys it through the
//! local scheduler, prints a status line per second, and kills it at the end.

mod common;

use common::sentences::Sentences;

use heron::{
    values, Bolt, Fields, HeronTopology, OutputCollector, OutputFieldsDeclarer, ShellBolt, Spout,
    SpoutOutputCollector, TopologyBuilder, TopologyError, Tuple,
};
use std::collections::HashMap;

/// Emits sentences of 8 words drawn from a fixed vocabulary (`common::sentences`); with `--reliability atleast`
/// each sentence carries a message id, so the whole tree is tracked (XOR acking).
struct SentenceSpout {
    sentences: Sentences,
    reliable: bool,
    next_id: u64,
}

impl Spout for SentenceSpout {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["sentence"]));
    }

    fn next_tuple(&mut self, collector: &mut SpoutOutputCollector) {
        let sentence = self.sentences.next_sentence();
        if self.reliable {
            self.next_id += 1;
            collector.emit_with_id(values![sentence], self.next_id);
        } else {
            collector.emit(values![sentence]);
        }
    }
}

/// Counts words; the final bolt.
#[derive(Default)]
struct CountBolt {
    counts: HashMap<String, u64>,
}

impl Bolt for CountBolt {
    fn execute(&mut self, input: &Tuple, collector: &mut OutputCollector) {
        if let Some(word) = input.get_str(0) {
            match self.counts.get_mut(word) {
                Some(c) => *c += 1,
                None => {
                    self.counts.insert(word.to_string(), 1);
                }
            }
        }
        collector.ack(input);
    }
}

fn topology(args: &[String]) -> Result<HeronTopology, TopologyError> {
    let opts = common::Options::parse(args).map_err(TopologyError::Invalid)?;
    let p = opts.parallelism;
    let reliable = opts.reliability == "atleast";
    let mut builder = TopologyBuilder::new();
    builder.set_spout(
        "sentence",
        move || SentenceSpout {
            sentences: Sentences::per_process(),
            reliable,
            next_id: 0,
        },
        p,
    );
    // the Python script and its folder (the subprocess's working directory)
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/multilang");
    builder
        .set_bolt(
            "split",
            move || {
                ShellBolt::new(["python3", "split.py"])
                    .output_fields(Fields::new(["word"]))
                    .working_dir(dir)
            },
            p,
        )
        .shuffle_grouping("sentence");
    builder
        .set_bolt("count", CountBolt::default, p)
        .fields_grouping("split", Fields::new(["word"]));
    builder.build("ShellWordCount", opts.config())
}

fn main() {
    heron::run_role_if_requested(topology);
    std::process::exit(common::run("ShellWordCount"));
}
