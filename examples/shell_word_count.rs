//! ShellWordCount: a Rust spout `sentence` → a pystorm bolt `split` (a Python subprocess per
//! task, Storm's multi-lang protocol: `examples/multilang/split.py`) → a Rust bolt `count`.
//!
//! `cargo run --release --example shell_word_count -- --duration 30s --reliability atleast`
//! with a `python3` on the PATH that has pystorm (`pip install pystorm`) deploys it through the
//! local scheduler, prints a status line per second, and kills it at the end.

mod common;
#[path = "common/word_count_parts.rs"]
mod word_count_parts;

use word_count_parts::{CountBolt, SentenceSpout};

use heron::{Fields, HeronTopology, ShellBolt, TopologyBuilder, TopologyError};

fn topology(args: &[String]) -> Result<HeronTopology, TopologyError> {
    let opts = common::Options::parse(args).map_err(TopologyError::Invalid)?;
    let p = opts.parallelism;
    let reliable = opts.reliability == "atleast";
    let mut builder = TopologyBuilder::new();
    builder.set_spout("sentence", move || SentenceSpout::new(reliable), p);
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
