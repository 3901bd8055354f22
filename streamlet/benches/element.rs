//! A stage's element through its wire encoding: encoded into the reused scratch value (as a
//! stage emits it) and decoded over the last element (as a keyed reduce reads its input).
//! The element is the bench's Streamlet word count's: `KeyValue<String, (i64, i64)>`, a word
//! with a count of 1 and a nanosecond timestamp: since the epoch (a nine-byte varint) for
//! half of them, since boot (`CLOCK_MONOTONIC`, the bench's, seven bytes, at the element's
//! end) for the others. Throughput is in elements.
//!
//! Run: `cargo bench -p heron-streamlet --bench element`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use heron_api::Value;
use heron_streamlet::element::{decode_into, encode_into};
use heron_streamlet::KeyValue;

const WORDS: [&str; 8] = [
    "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog",
];
const TS: i64 = 1_796_000_000_123_456_789;
/// A day and a bit after boot, in nanoseconds.
const MONOTONIC_TS: i64 = 90_061_000_000_000;

fn elements() -> Vec<KeyValue<String, (i64, i64)>> {
    WORDS
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let ts = if i % 2 == 0 { TS } else { MONOTONIC_TS };
            KeyValue::new((*w).to_owned(), (1, ts + i as i64))
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let elements = elements();
    let mut g = c.benchmark_group("element");
    g.throughput(Throughput::Elements(elements.len() as u64));
    g.bench_function("encode_into", |b| {
        let mut slot = Value::Null;
        b.iter(|| {
            for e in &elements {
                encode_into(black_box(e), &mut slot).expect("encodes");
                black_box(&slot);
            }
        })
    });
    let encoded: Vec<Value> = elements
        .iter()
        .map(|e| {
            let mut v = Value::Null;
            encode_into(e, &mut v).expect("encodes");
            v
        })
        .collect();
    g.bench_function("decode_into", |b| {
        let mut place = KeyValue::new(String::new(), (0i64, 0i64));
        b.iter(|| {
            for v in &encoded {
                decode_into(black_box(v), &mut place).expect("decodes");
                black_box(&place);
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
