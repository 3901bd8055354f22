//! The word count's Rust spout and count bolt, shared by `word_count` and `shell_word_count`
//! (included with `#[path]` by those two only).

use crate::common::sentences::Sentences;

use heron::{
    values, Bolt, Fields, OutputCollector, OutputFieldsDeclarer, Spout, SpoutOutputCollector, Tuple,
};
use std::collections::HashMap;

/// Emits sentences of 8 words drawn from a fixed vocabulary (`common::sentences`); with `--reliability atleast`
/// each sentence carries a message id, so the whole tree is tracked (XOR acking).
pub struct SentenceSpout {
    sentences: Sentences,
    reliable: bool,
    next_id: u64,
}

impl SentenceSpout {
    /// A spout of this process's sentences; `reliable`: each gets a message id.
    pub fn new(reliable: bool) -> SentenceSpout {
        SentenceSpout {
            sentences: Sentences::per_process(),
            reliable,
            next_id: 0,
        }
    }
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
pub struct CountBolt {
    counts: HashMap<String, u64>,
    /// Time spent on each word (a deliberately slow bolt; zero by default).
    pub delay: std::time::Duration,
    /// Report an error every this many words (0: never).
    pub error_every: u64,
    seen: u64,
}

impl CountBolt {
    /// A count bolt that spends `delay` on each word and reports an error every
    /// `error_every` words (0: never).
    #[allow(dead_code)] // shell_word_count includes this file and counts at full speed
    pub fn new(delay: std::time::Duration, error_every: u64) -> CountBolt {
        CountBolt {
            delay,
            error_every,
            ..CountBolt::default()
        }
    }
}

impl Bolt for CountBolt {
    fn execute(&mut self, input: &Tuple, collector: &mut OutputCollector) {
        if !self.delay.is_zero() {
            std::thread::sleep(self.delay);
        }
        self.seen += 1;
        if self.error_every > 0 && self.seen.is_multiple_of(self.error_every) {
            collector.report_error(&format!("word {} of this task: a sample error", self.seen));
        }
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
