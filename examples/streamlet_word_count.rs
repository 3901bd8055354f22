//! The word count in Heron's Streamlet API: five lines instead of three structs.
//!
//! ```sh
//! cargo run --release --example streamlet_word_count -- --input words.txt --output counts.tsv
//! ```
//!
//! `--pairs` splits lines into `(word, ())` pairs and counts them with `count_by_window`, by the
//! pairs' own keys (no copy of a key per word); the output is the same.
//!
//! Lines of `--input` → words → counts per word in 1 s tumbling windows → a sink adding them
//! up and writing `word<TAB>count` lines to `--output`. Exits 0 (killing its topology) once the
//! counts add up to every word of the input. 2 containers, parallelism 2, ATLEAST_ONCE.

#[path = "common/files.rs"]
mod files;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use heron::sources::SourceSpout;
use heron::streamlet::{Builder, KeyValue, KeyedWindow, Sink};
use heron::window::{Length, WindowConfig};
use heron::{Config, HeronTopology, TopologyError};

/// Adds up the windows' counts and keeps `word<TAB>count` lines in the output file.
struct Totals {
    output: PathBuf,
    counts: BTreeMap<String, i64>,
}

impl Sink<KeyValue<KeyedWindow<String>, i64>> for Totals {
    fn put(&mut self, kv: KeyValue<KeyedWindow<String>, i64>) {
        *self.counts.entry(kv.key.key).or_default() += kv.value;
        let text: String = self
            .counts
            .iter()
            .map(|(w, n)| format!("{w}\t{n}\n"))
            .collect();
        if let Err(e) = files::write_atomically(&self.output, &text) {
            eprintln!("writing {}: {e}", self.output.display());
        }
    }
}

fn topology(args: &[String]) -> Result<HeronTopology, TopologyError> {
    let bad = TopologyError::Invalid;
    let input = files::arg(args, "--input").ok_or_else(|| bad("--input FILE".into()))?;
    let output =
        PathBuf::from(files::arg(args, "--output").ok_or_else(|| bad("--output FILE".into()))?);
    let p = files::count_arg(args, "--parallelism", 2).map_err(bad)?;
    let containers = files::count_arg(args, "--containers", 2).map_err(bad)?;

    let b = Builder::new();
    let lines = b.new_source_spout(move || SourceSpout::files([input.clone()]));
    let windows = WindowConfig::tumbling(Length::duration(Duration::from_secs(1)));
    let counts = if args.iter().any(|a| a == "--pairs") {
        // words as (word, ()) pairs, counted by the pairs' own keys: no key copied per word
        lines
            .flat_map(|line: String| {
                line.split_whitespace()
                    .map(|w| KeyValue::new(w.to_owned(), ()))
                    .collect::<Vec<_>>()
            })
            .set_name("split")
            .set_num_partitions(p)
            .count_by_window(windows)
    } else {
        lines
            .flat_map(|line: String| {
                line.split_whitespace()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .set_name("split")
            .set_num_partitions(p)
            .count_by_key_and_window(|w: &String| w.clone(), windows)
    };
    counts
        .set_name("count")
        .set_num_partitions(p)
        .to_sink(move || Totals {
            output: output.clone(),
            counts: BTreeMap::new(),
        })
        .set_name("totals");

    let mut c = Config::new();
    c.set(Config::TOPOLOGY_STMGRS, containers.to_string());
    c.set(Config::TOPOLOGY_RELIABILITY_MODE, "ATLEAST_ONCE");
    c.set(Config::TOPOLOGY_MAX_SPOUT_PENDING, "100000");
    b.build("StreamletWordCount", c)
}

fn main() {
    heron::run_role_if_requested(topology);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(input), Some(output)) = (files::arg(&args, "--input"), files::arg(&args, "--output"))
    else {
        eprintln!("usage: streamlet_word_count --input FILE --output FILE [--pairs] [--containers 2] [--parallelism 2]");
        std::process::exit(2);
    };
    let words = match std::fs::read_to_string(&input) {
        Ok(t) => t.split_whitespace().count() as i64,
        Err(e) => {
            eprintln!("cannot read --input {input}: {e}");
            std::process::exit(2);
        }
    };
    let _ = std::fs::remove_file(&output);
    let role_args = files::absolute_paths(&args, &["--input", "--output"]);
    let counted = || {
        std::fs::read_to_string(&output)
            .map(|t| {
                t.lines()
                    .filter_map(|l| l.split_once('\t')?.1.parse::<i64>().ok())
                    .sum::<i64>()
            })
            .unwrap_or(0)
    };
    let code = files::run_until(&role_args, Duration::from_secs(600), || counted() >= words);
    if code == 0 {
        println!("{words} words counted in {output}");
    }
    std::process::exit(code);
}
