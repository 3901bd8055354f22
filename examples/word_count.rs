//! WordCount: spout `sentence` → bolt `split` (shuffle) → bolt `count` (fields on `word`).
//!
//! `cargo run --release --example word_count -- --duration 30s` deploys it through the local
//! scheduler as real separate processes (2 containers by default), prints a status line per
//! second, and kills it at the end.
//!
//! For watching the tracker's page: `--slow-count-us N` makes `count` spend N µs on each
//! word (a deliberate bottleneck), `--error-every N` makes it report an error every N words.

mod common;
#[path = "common/word_count_parts.rs"]
mod word_count_parts;

use word_count_parts::{CountBolt, SentenceSpout};

use heron::{
    values, BasicBolt, BasicOutputCollector, FailedException, Fields, HeronTopology,
    OutputFieldsDeclarer, TopologyBuilder, TopologyError, Tuple,
};

/// Splits a sentence into words.
struct SplitBolt;

impl BasicBolt for SplitBolt {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["word"]));
    }

    fn execute(
        &mut self,
        input: &Tuple,
        collector: &mut BasicOutputCollector,
    ) -> Result<(), FailedException> {
        let sentence = input.get_str(0).unwrap_or_default();
        for word in sentence.split_whitespace() {
            collector.emit(values![word]);
        }
        Ok(())
    }
}

/// Takes `--name N` (a non-negative integer) out of `args`.
fn take_number(args: &mut Vec<String>, name: &str) -> Result<u64, TopologyError> {
    let Some(i) = args.iter().position(|a| a == name) else {
        return Ok(0);
    };
    let value = args
        .get(i + 1)
        .ok_or_else(|| TopologyError::Invalid(format!("{name} needs a value")))?;
    let n = value.parse().map_err(|_| {
        TopologyError::Invalid(format!("{name} must be a whole number, not {value:?}"))
    })?;
    args.drain(i..i + 2);
    Ok(n)
}

fn topology(args: &[String]) -> Result<HeronTopology, TopologyError> {
    let mut args = args.to_vec();
    let delay = std::time::Duration::from_micros(take_number(&mut args, "--slow-count-us")?);
    let error_every = take_number(&mut args, "--error-every")?;
    let opts = common::Options::parse(&args).map_err(TopologyError::Invalid)?;
    let p = opts.parallelism;
    let reliable = opts.reliability == "atleast";
    let mut builder = TopologyBuilder::new();
    builder.set_spout("sentence", move || SentenceSpout::new(reliable), p);
    builder
        .set_basic_bolt("split", || SplitBolt, p)
        .shuffle_grouping("sentence");
    builder
        .set_bolt("count", move || CountBolt::new(delay, error_every), p)
        .fields_grouping("split", Fields::new(["word"]));
    builder.build("WordCount", opts.config())
}

fn main() {
    heron::run_role_if_requested(topology);
    std::process::exit(common::run_with_flags(
        "WordCount",
        &["--slow-count-us", "--error-every"],
    ));
}
