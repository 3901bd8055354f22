//! The bench's topologies and their components.
//!
//! Every tuple carries the spout's emit time (`ts`, CLOCK_MONOTONIC ns) as its last field;
//! intermediate bolts pass it on and the final bolt records `now − ts` (end-to-end latency).
//! With acking the spout's message id is that same timestamp, and the spout records
//! `ack time − ts` (complete latency). Spouts and final bolts write bench files
//! (`record.rs`); the driver reads them.

use crate::args::{Options, Reliability, Topology};
use crate::common::sentences::Sentences;
use crate::rate::TokenBucket;
use crate::record::{now_ns, LatencyKind, Recorder};
use heron::{
    BasicBolt, BasicOutputCollector, Bolt, FailedException, Fields, HeronTopology, MessageId,
    OutputCollector, OutputFieldsDeclarer, ShellBolt, Spout, SpoutOutputCollector, State, Stateful,
    TopologyBuilder, TopologyContext, TopologyError, Tuple, Value, DEFAULT_STREAM_ID,
};
use std::collections::HashMap;

/// The value the constant spout emits.
const CONSTANT: &str = "heron-rs";

/// Component names.
pub const SPOUT: &str = "spout";
pub const FINAL_BOLT_OF_CONST: &str = "null";
pub const FINAL_BOLT_OF_WORD_COUNT: &str = "count";
pub const FINAL_BOLT_OF_MULTILANG: &str = "sink";

/// The component whose executed tuples are the topology's throughput.
pub fn final_component(t: Topology) -> &'static str {
    match t {
        Topology::ConstNull | Topology::ConstIdNull => FINAL_BOLT_OF_CONST,
        Topology::WordCount | Topology::MultilangPass => FINAL_BOLT_OF_WORD_COUNT,
        Topology::MultilangWordCount => FINAL_BOLT_OF_MULTILANG,
        Topology::StreamletWordCount => crate::streamlet::FINAL_STAGE,
    }
}

/// The topology's name (what `heron kill` would take).
pub fn topology_name(t: Topology) -> &'static str {
    match t {
        Topology::ConstNull => "BenchConstNull",
        Topology::ConstIdNull => "BenchConstIdNull",
        Topology::WordCount => "BenchWordCount",
        Topology::MultilangPass => "BenchMultilangPass",
        Topology::MultilangWordCount => "BenchMultilangWordCount",
        Topology::StreamletWordCount => "BenchStreamletWordCount",
    }
}

/// Builds the topology the arguments ask for (in every process: the arguments are the same).
pub fn build(args: &[String]) -> Result<HeronTopology, TopologyError> {
    let opts = Options::parse(args).map_err(TopologyError::Invalid)?;
    let p = opts.parallelism;
    let reliable = opts.reliability == Reliability::AtLeast;
    let rate = opts.rate_per_spout_task();
    let vocabulary = opts.vocabulary;
    if opts.topology == Topology::StreamletWordCount {
        return crate::streamlet::build(&opts, topology_name(opts.topology));
    }
    let mut b = TopologyBuilder::new();
    match opts.topology {
        Topology::ConstNull | Topology::ConstIdNull => {
            b.set_spout(
                SPOUT,
                move || BenchSpout::new(Payload::Constant, "value", reliable, rate),
                p,
            );
            let mut upstream = SPOUT;
            if opts.topology == Topology::ConstIdNull {
                b.set_basic_bolt("identity", || IdentityBolt, p)
                    .shuffle_grouping(SPOUT);
                upstream = "identity";
            }
            b.set_bolt(FINAL_BOLT_OF_CONST, FinalBolt::null, p)
                .shuffle_grouping(upstream);
        }
        Topology::StreamletWordCount => unreachable!("built above"),
        Topology::WordCount | Topology::MultilangPass | Topology::MultilangWordCount => {
            b.set_spout(
                SPOUT,
                move || {
                    BenchSpout::new(
                        Payload::Sentences(Sentences::with_vocabulary(
                            u64::from(std::process::id()),
                            vocabulary,
                        )),
                        "sentence",
                        reliable,
                        rate,
                    )
                },
                p,
            );
            let shell = |script: &str, fields: &[&str]| {
                let dir = python_dir();
                let spec =
                    ShellBolt::new([opts.python.clone(), dir.join(script).display().to_string()])
                        .output_fields(Fields::new(fields.iter().copied()))
                        .working_dir(dir)
                        .spec()
                        .clone();
                move || ShellBolt::from_spec(spec.clone())
            };
            match opts.topology {
                Topology::MultilangWordCount => {
                    b.set_bolt("split", shell("split.py", &["word", "ts"]), p)
                        .shuffle_grouping(SPOUT);
                    b.set_bolt("count", shell("count.py", &["word", "count", "ts"]), p)
                        .fields_grouping("split", Fields::new(["word"]));
                    b.set_bolt(FINAL_BOLT_OF_MULTILANG, FinalBolt::null, p)
                        .local_or_shuffle_grouping("count");
                }
                topology => {
                    let mut upstream = SPOUT;
                    if topology == Topology::MultilangPass {
                        b.set_bolt("pass", shell("pass.py", &["sentence", "ts"]), p)
                            .shuffle_grouping(SPOUT);
                        upstream = "pass";
                    }
                    b.set_basic_bolt("split", SplitBolt::new, p)
                        .shuffle_grouping(upstream);
                    b.set_bolt(FINAL_BOLT_OF_WORD_COUNT, FinalBolt::count, p)
                        .fields_grouping("split", Fields::new(["word"]));
                }
            }
        }
    }
    b.build(topology_name(opts.topology), opts.config())
}

/// Where the multi-lang topologies' pystorm bolts are (`examples/bench/python`).
fn python_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/bench/python")
}

/// What a spout emits.
pub(crate) enum Payload {
    Constant,
    Sentences(Sentences),
}

/// The spout of every bench topology: `[payload, ts]`, optionally rate-capped, with the
/// timestamp as message id under acking.
pub(crate) struct BenchSpout {
    payload: Payload,
    field: &'static str,
    reliable: bool,
    rate: Option<f64>,
    bucket: Option<TokenBucket>,
    rec: Option<Recorder>,
}

impl BenchSpout {
    pub(crate) fn new(
        payload: Payload,
        field: &'static str,
        reliable: bool,
        rate: Option<f64>,
    ) -> Self {
        BenchSpout {
            payload,
            field,
            reliable,
            rate,
            bucket: None,
            rec: None,
        }
    }
}

impl Spout for BenchSpout {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new([self.field, "ts"]));
    }

    fn open(&mut self, ctx: &TopologyContext) {
        let now = now_ns();
        self.bucket = self.rate.map(|r| TokenBucket::new(r, now));
        self.rec = Some(Recorder::for_task(ctx, LatencyKind::Complete, now));
    }

    fn next_tuple(&mut self, collector: &mut SpoutOutputCollector) {
        let now = now_ns();
        let Some(rec) = self.rec.as_mut() else {
            return;
        };
        rec.maybe_write(now);
        if let Some(bucket) = self.bucket.as_mut() {
            if !bucket.take(now) {
                return;
            }
        }
        let value = match &mut self.payload {
            Payload::Constant => Value::from(CONSTANT),
            Payload::Sentences(s) => Value::Str(s.next_sentence()),
        };
        let ts = now as i64;
        if self.reliable {
            collector.emit_with_id(vec![value, Value::Int(ts)], Value::Int(ts));
        } else {
            collector.emit(vec![value, Value::Int(ts)]);
        }
        rec.emitted += 1;
    }

    fn ack(&mut self, msg_id: MessageId) {
        let now = now_ns();
        if let (Some(rec), Value::Int(ts)) = (self.rec.as_mut(), msg_id) {
            rec.acked += 1;
            rec.record_since(ts as u64, now);
            rec.maybe_write(now);
        }
    }

    fn fail(&mut self, _msg_id: MessageId) {
        if let Some(rec) = self.rec.as_mut() {
            rec.failed += 1;
            rec.maybe_write(now_ns());
        }
    }

    fn close(&mut self) {
        if let Some(rec) = self.rec.as_mut() {
            rec.write(now_ns());
        }
    }

    fn stateful(&mut self) -> Option<&mut dyn Stateful> {
        Some(self)
    }
}

/// With `--reliability effectively` the spout's checkpointed state is how many tuples it
/// emitted (its generator is not replayable; the bench measures the cost of checkpoints,
/// not recovery).
impl Stateful for BenchSpout {
    fn init_state(&mut self, state: &State) {
        if let (Some(rec), Some(n)) = (self.rec.as_mut(), state.get_i64("emitted")) {
            rec.emitted = n as u64;
        }
    }

    fn pre_save(&mut self, _checkpoint_id: &str, state: &mut State) {
        let emitted = self.rec.as_ref().map_or(0, |r| r.emitted);
        state.put("emitted", emitted as i64);
    }
}

/// Passes `[value, ts]` on unchanged.
struct IdentityBolt;

impl BasicBolt for IdentityBolt {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["value", "ts"]));
    }

    fn execute(
        &mut self,
        input: &Tuple,
        collector: &mut BasicOutputCollector,
    ) -> Result<(), FailedException> {
        collector.emit(input.values().to_vec());
        Ok(())
    }
}

/// Splits a sentence into `[word, ts]` tuples, built in one reused buffer.
struct SplitBolt {
    out: Vec<Value>,
}

impl SplitBolt {
    fn new() -> SplitBolt {
        SplitBolt {
            out: vec![Value::Str(String::new()), Value::Int(0)],
        }
    }
}

impl BasicBolt for SplitBolt {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["word", "ts"]));
    }

    fn execute(
        &mut self,
        input: &Tuple,
        collector: &mut BasicOutputCollector,
    ) -> Result<(), FailedException> {
        let ts = input.get_i64(1).unwrap_or_default();
        self.out[1] = Value::Int(ts);
        for word in input.get_str(0).unwrap_or_default().split_whitespace() {
            if let Value::Str(s) = &mut self.out[0] {
                s.clear();
                s.push_str(word);
            }
            collector.emit_ref(DEFAULT_STREAM_ID, &self.out);
        }
        Ok(())
    }
}

/// The final bolt measures the end-to-end latency of one tuple in this many (a clock read and a
/// histogram update per tuple cost the bolt about a tenth of its time, which the timely peer
/// does not pay); thousands of samples per second remain.
const LATENCY_SAMPLE_EVERY: u64 = 8;

/// The last bolt: records end-to-end latency and acks; the word count's also counts words.
struct FinalBolt {
    counts: Option<HashMap<String, u64>>,
    rec: Option<Recorder>,
}

impl FinalBolt {
    fn null() -> FinalBolt {
        FinalBolt {
            counts: None,
            rec: None,
        }
    }

    fn count() -> FinalBolt {
        FinalBolt {
            counts: Some(HashMap::new()),
            rec: None,
        }
    }
}

impl Bolt for FinalBolt {
    fn prepare(&mut self, ctx: &TopologyContext) {
        self.rec = Some(Recorder::for_task(ctx, LatencyKind::EndToEnd, now_ns()));
    }

    fn execute(&mut self, input: &Tuple, collector: &mut OutputCollector) {
        if let Some(counts) = self.counts.as_mut() {
            if let Some(word) = input.get_str(0) {
                match counts.get_mut(word) {
                    Some(c) => *c += 1,
                    None => {
                        counts.insert(word.to_string(), 1);
                    }
                }
            }
        }
        if let Some(rec) = self.rec.as_mut() {
            rec.receive(1);
            if rec.received % LATENCY_SAMPLE_EVERY == 0 {
                let now = now_ns();
                if let Some(ts) = input.get_i64(1) {
                    rec.record_since(ts as u64, now);
                }
                rec.maybe_write(now);
            }
        }
        collector.ack(input);
    }

    fn cleanup(&mut self) {
        if let Some(rec) = self.rec.as_mut() {
            rec.write(now_ns());
        }
    }

    fn stateful(&mut self) -> Option<&mut dyn Stateful> {
        Some(self)
    }
}

/// With `--reliability effectively` the word counts are the checkpointed state (the null
/// bolt's is empty).
impl Stateful for FinalBolt {
    fn init_state(&mut self, state: &State) {
        if let Some(counts) = self.counts.as_mut() {
            counts.clear();
            counts.extend(
                state
                    .iter()
                    .filter_map(|(w, v)| Some((w.to_string(), v.as_i64()? as u64))),
            );
        }
    }

    fn pre_save(&mut self, _checkpoint_id: &str, state: &mut State) {
        for (w, c) in self.counts.iter().flatten() {
            state.put(w.clone(), *c as i64);
        }
    }
}
