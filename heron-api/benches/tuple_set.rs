//! Tuple sets through the instance: emitting N tuples through the [`Emitter`] (the hand-written
//! wire writer, straight into a Heron packet) and decoding them back into [`Tuple`]s as the
//! instance does for the sets its stream manager sends. Throughput is in tuples.
//!
//! Every tuple has two fields: a word (`"word-NNN"`) and a count, the word-count shape.
//!
//! Run: `cargo bench -p heron-api --bench tuple_set`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use heron_api::decode_data_tuple;
use heron_api::{
    values, Emitter, Fields, ReliabilityMode, StreamDecl, Tuple, TupleSource, Value, Values,
};
use heron_proto::system::HeronTupleSet2;
use heron_proto::tuple::parse_tuple_set2;
use heron_proto::{HeronCodec, Name, Packet};

const SIZES: [usize; 2] = [100, 1000];
const STREAM: &str = "default";

fn streams() -> Vec<StreamDecl> {
    vec![StreamDecl {
        id: STREAM.into(),
        fields: Fields::new(["word", "count"]),
        direct: false,
    }]
}

fn batch(n: usize) -> Vec<Values> {
    (0..n)
        .map(|i| values![format!("word-{}", i % 997), i as i64])
        .collect()
}

/// Times `emit` over a fresh copy of `batch` for each iteration (the copy is made outside the
/// timing; dropping the emitted `Values` inside `emit` is timed, as it is in a real emit), then
/// takes the frames (timed) and runs `reset` (untimed).
fn time_emits(
    iters: u64,
    emitter: &mut Emitter,
    batch: &[Values],
    mut emit: impl FnMut(&mut Emitter, usize, Values),
    mut reset: impl FnMut(&mut Emitter),
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let input = batch.to_vec();
        let start = Instant::now();
        for (i, values) in input.into_iter().enumerate() {
            emit(emitter, i, values);
        }
        black_box(emitter.take_frames());
        total += start.elapsed();
        reset(emitter);
    }
    total
}

fn bench_emit(c: &mut Criterion) {
    let mut g = c.benchmark_group("tuple_set/emit");
    let streams = streams();
    let far_future = || Instant::now() + Duration::from_secs(3600);
    for n in SIZES {
        let input = batch(n);
        g.throughput(Throughput::Elements(n as u64));

        // Spout emits without a message id (or any emit in ATMOST_ONCE).
        let mut e = Emitter::new("word-spout", 1, ReliabilityMode::AtMostOnce, &streams);
        g.bench_function(format!("spout_unanchored/{n}"), |b| {
            b.iter_custom(|iters| {
                time_emits(
                    iters,
                    &mut e,
                    &input,
                    |e, _, v| e.emit_spout(STREAM, None, &v, None),
                    |_| {},
                )
            })
        });

        // ATLEAST_ONCE spout emits with a message id: a fresh root key, the in-flight map.
        let mut e = Emitter::new("word-spout", 1, ReliabilityMode::AtLeastOnce, &streams);
        g.bench_function(format!("spout_with_msg_id/{n}"), |b| {
            b.iter_custom(|iters| {
                time_emits(
                    iters,
                    &mut e,
                    &input,
                    |e, i, v| e.emit_spout(STREAM, None, &v, Some(Value::Int(i as i64))),
                    |e| {
                        e.expire(far_future(), Duration::ZERO);
                    },
                )
            })
        });

        // ATLEAST_ONCE bolt emits anchored to one input tuple with one root.
        let source = Arc::new(TupleSource::new("word-spout", STREAM, Fields::new(["w"])));
        let anchor = Tuple::from_runtime(source, 1, values!["x"], 42, &[(1, 0x5eed)]);
        let mut e = Emitter::new("split", 3, ReliabilityMode::AtLeastOnce, &streams);
        g.bench_function(format!("bolt_anchored/{n}"), |b| {
            b.iter_custom(|iters| {
                time_emits(
                    iters,
                    &mut e,
                    &input,
                    |e, _, v| e.emit_bolt(STREAM, None, &[&anchor], &v),
                    |_| {},
                )
            })
        });

        // The word count's split: ATMOST_ONCE, one reused pair of values overwritten per
        // word (`emit_ref`), on a stream whose one consumer groups it by the word: the emitter
        // hashes the word and puts the tuple in that task's addressed set.
        let topology = {
            let mut b = heron_api::TopologyBuilder::new();
            b.set_spout("word-spout", || WordSpout, 1);
            b.set_bolt("split", || Pass, 1)
                .shuffle_grouping("word-spout");
            b.set_bolt("count", || Pass, 2)
                .fields_grouping("split", Fields::new(["word"]));
            b.build("bench", heron_api::Config::new())
                .expect("a topology")
        };
        let ctx = heron_api::TopologyContext::builder("bench", "split", 3)
            .component_tasks("count", [4, 5])
            .subscription(
                "count",
                "split",
                STREAM,
                heron_api::GroupingKind::Fields(Fields::new(["word"])),
            )
            .build();
        let mut e = Emitter::for_task(&topology, &ctx);
        let words: Vec<String> = input
            .iter()
            .map(|v| v[0].as_str().unwrap_or_default().to_owned())
            .collect();
        let mut pair = values!["", 0];
        g.bench_function(format!("bolt_fields_addressed_reused/{n}"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    for (i, w) in words.iter().enumerate() {
                        if let Value::Str(s) = &mut pair[0] {
                            s.clear();
                            s.push_str(w);
                        }
                        pair[1] = Value::Int(i as i64);
                        e.emit_bolt(STREAM, None, &[], &pair);
                    }
                    black_box(e.take_frames());
                    total += start.elapsed();
                }
                total
            })
        });
    }
    g.finish();
}

struct WordSpout;
impl heron_api::Spout for WordSpout {
    fn declare_output_fields(&self, d: &mut heron_api::OutputFieldsDeclarer) {
        d.declare(Fields::new(["word", "count"]));
    }
    fn next_tuple(&mut self, _: &mut heron_api::SpoutOutputCollector) {}
}

struct Pass;
impl heron_api::Bolt for Pass {
    fn declare_output_fields(&self, d: &mut heron_api::OutputFieldsDeclarer) {
        d.declare(Fields::new(["word", "count"]));
    }
    fn execute(&mut self, _: &Tuple, _: &mut heron_api::OutputCollector) {}
}

/// The instance's decoder path for one `HeronTupleSet2` packet from its stream manager:
/// prost decodes the set (tuples stay `Bytes` slices), then each tuple's values and roots
/// are decoded in place and it becomes a [`Tuple`] sharing one [`TupleSource`]. The loop is
/// the one of `TupleDecoder::decode_into` (instance/src/inbound.rs, private to that crate).
fn decode_set(
    packet: &Packet,
    source: &Arc<TupleSource>,
    roots: &mut Vec<(i32, i64)>,
    out: &mut Vec<Tuple>,
) {
    let set: HeronTupleSet2 = packet.decode().expect("a HeronTupleSet2");
    let data = set.data.as_ref().expect("data");
    let width = source.fields().len();
    out.reserve(data.tuples.len());
    for raw in &data.tuples {
        let mut values = Vec::with_capacity(width);
        roots.clear();
        let key = decode_data_tuple(raw, &mut values, roots).expect("a tuple");
        out.push(Tuple::from_runtime(
            source.clone(),
            set.src_task_id,
            values,
            key,
            roots,
        ));
    }
}

fn bench_decode(c: &mut Criterion) {
    let mut g = c.benchmark_group("tuple_set/decode");
    let streams = streams();
    for n in SIZES {
        // What the stream manager forwards: the emitter's tuples, unchanged, in a
        // `HeronTupleSet2` (wire-compatible with the `HeronTupleSet` the emitter writes).
        let mut e = Emitter::new("word-spout", 1, ReliabilityMode::AtLeastOnce, &streams);
        for (i, v) in batch(n).into_iter().enumerate() {
            e.emit_spout(STREAM, None, &v, Some(Value::Int(i as i64)));
        }
        let mut frames = BytesMut::from(&e.take_frames()[..]);
        let packet = HeronCodec::new(0)
            .decode_packet(&mut frames)
            .unwrap()
            .unwrap();
        assert!(frames.is_empty(), "one set");
        let packet = Packet::new(HeronTupleSet2::full_name(), packet.reqid, packet.payload);
        let source = Arc::new(TupleSource::new(
            "word-spout",
            STREAM,
            Fields::new(["word", "count"]),
        ));
        g.throughput(Throughput::Elements(n as u64));

        g.bench_function(format!("to_tuples/{n}"), |b| {
            let (mut roots, mut out) = (Vec::new(), Vec::with_capacity(n));
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    decode_set(black_box(&packet), &source, &mut roots, &mut out);
                    total += start.elapsed();
                    out.clear(); // dropping the tuples is the bolt's business
                }
                total
            })
        });

        // The old path with the tuples' drop timed too, as the bolt paid it.
        g.bench_function(format!("to_tuples_and_drop/{n}"), |b| {
            let (mut roots, mut out) = (Vec::new(), Vec::with_capacity(n));
            b.iter(|| {
                decode_set(black_box(&packet), &source, &mut roots, &mut out);
                out.clear();
            })
        });

        // The bolt's path today: the set split by hand (no prost, no copy), each tuple
        // decoded over one reused `Tuple` (as instance/src/inbound.rs `TupleDecoder` does).
        g.bench_function(format!("in_place/{n}"), |b| {
            let mut tuple = Tuple::from_runtime(source.clone(), 0, Vec::new(), 0, &[]);
            b.iter(|| {
                let set = parse_tuple_set2(black_box(&packet.payload)).expect("a set");
                let data = set.data.expect("data");
                tuple.set_source(&source);
                let mut keys = 0i64;
                for raw in data.tuples() {
                    tuple.decode_over(data.src_task_id(), raw).expect("a tuple");
                    keys ^= black_box(&tuple).key();
                }
                keys
            })
        });

        // Only the in-place tuple decoder (values and roots), over the set's tuple bytes.
        let set: HeronTupleSet2 = packet.decode().unwrap();
        let raws = set.data.unwrap().tuples;
        g.bench_function(format!("decode_data_tuple/{n}"), |b| {
            let (mut values, mut roots) = (Vec::with_capacity(2), Vec::with_capacity(1));
            b.iter(|| {
                let mut keys = 0i64;
                for raw in &raws {
                    values.clear();
                    roots.clear();
                    keys ^= decode_data_tuple(black_box(raw), &mut values, &mut roots).unwrap();
                }
                keys
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_emit, bench_decode);
criterion_main!(benches);
