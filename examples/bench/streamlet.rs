//! The bench's word count in the Streamlet API (`--topology streamlet-word-count`): the same
//! spout, then `transform` (split into `(word, (1, emit time))` pairs, one pair overwritten
//! per word; with `--streamlet-flat-map`, `flat_map` and a new pair per word),
//! `reduce_by_window` (count per word in tumbling 1000-word windows, `--streamlet-window`,
//! keeping the newest emit
//! time) and a sink that counts the words of every window and records end-to-end latency from
//! that newest emit time.

use crate::args::{Options, Reliability};
use crate::common::sentences::Sentences;
use crate::record::{now_ns, LatencyKind, Recorder};
use crate::topology::{BenchSpout, Payload, SPOUT};
use heron::streamlet::{Builder, KeyValue, KeyedWindow, Sink, Transformer};
use heron::window::{Length, WindowConfig};
use heron::{HeronTopology, TopologyContext, TopologyError};

/// The stage whose words are the throughput.
pub const FINAL_STAGE: &str = "sink";

/// Counts the words of each window result; latency from the window's newest emit time.
struct WindowSink {
    rec: Option<Recorder>,
}

impl Sink<KeyValue<KeyedWindow<String>, (i64, i64)>> for WindowSink {
    fn setup(&mut self, ctx: &TopologyContext) {
        self.rec = Some(Recorder::for_task(ctx, LatencyKind::EndToEnd, now_ns()));
    }

    fn put(&mut self, kv: KeyValue<KeyedWindow<String>, (i64, i64)>) {
        let Some(rec) = self.rec.as_mut() else { return };
        let (words, newest) = kv.value;
        rec.receive(words.max(0) as u64);
        let now = now_ns();
        rec.record_since(newest as u64, now);
        rec.maybe_write(now);
    }

    fn cleanup(&mut self) {
        if let Some(rec) = self.rec.as_mut() {
            rec.write(now_ns());
        }
    }
}

/// Splits `(sentence, emit time)` into `(word, (1, emit time))` pairs, overwriting one pair
/// for every word (as the hand-written split overwrites its scratch values).
#[derive(Default)]
struct Split(KeyValue<String, (i64, i64)>);

impl Transformer<(String, i64), KeyValue<String, (i64, i64)>> for Split {
    fn transform(
        &mut self,
        (sentence, ts): (String, i64),
        emit: &mut dyn FnMut(&KeyValue<String, (i64, i64)>),
    ) {
        for w in sentence.split_whitespace() {
            self.0.key.clear();
            self.0.key.push_str(w);
            self.0.value = (1, ts);
            emit(&self.0);
        }
    }
}

/// The topology.
pub fn build(opts: &Options, name: &str) -> Result<HeronTopology, TopologyError> {
    let p = opts.parallelism;
    let reliable = opts.reliability == Reliability::AtLeast;
    let rate = opts.rate_per_spout_task();
    let vocabulary = opts.vocabulary;
    let b = Builder::new();
    let sentences = b
        .new_source_spout(move || {
            let sentences = Sentences::with_vocabulary(u64::from(std::process::id()), vocabulary);
            BenchSpout::new(Payload::Sentences(sentences), "sentence", reliable, rate)
        })
        .set_name(SPOUT)
        .set_num_partitions(p);
    let words = if opts.streamlet_flat_map {
        sentences.flat_map(|(sentence, ts): (String, i64)| {
            sentence
                .split_whitespace()
                .map(|w| KeyValue::new(w.to_owned(), (1i64, ts)))
                .collect::<Vec<_>>()
        })
    } else {
        sentences.transform(Split::default)
    };
    words
        .set_name("split")
        .set_num_partitions(p)
        .reduce_by_window(
            WindowConfig::tumbling(Length::count(opts.streamlet_window)),
            |a: (i64, i64), b| (a.0 + b.0, a.1.max(b.1)),
        )
        .set_name("count")
        .set_num_partitions(p)
        .to_sink(|| WindowSink { rec: None })
        .set_name(FINAL_STAGE)
        .set_num_partitions(p);
    b.build(name, opts.config())
}
