//! Heron packet framing: encoding and decoding of the packets the data path carries.
//!
//! * `tuple_set2/*`: a `HeronTupleSet2` (stream manager -> instance, and inside every
//!   `TupleStreamMessage`) of 100 or 1000 small tuples (key, one root, a word and a count),
//!   throughput in tuples and in wire bytes;
//!   `parse_in_place/*` is the instance's check of such a set, tuples counted, not decoded;
//! * `data_set/tuple_block/*`: the stream manager's walk over a `HeronDataTupleSet` it
//!   forwards whole (100 or 1000 of the same tuples): their count and that each is framed;
//! * `control_set/read_acks/*`: a bolt's control set of 100 or 1000 single-root acks, read
//!   as the stream managers read every control set;
//! * `control/*`: a small control message (`StartBackPressureMessage`).
//!
//! Run: `cargo bench -p heron-proto --bench framing`.

use std::hint::black_box;

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use heron_proto::api::StreamId;
use heron_proto::codec::{encode_message, encode_raw};
use heron_proto::stmgr::StartBackPressureMessage;
use heron_proto::system::{
    HeronDataTuple, HeronDataTupleSet, HeronDataTupleSet2, HeronTupleSet2, RootId,
};
use heron_proto::tuple::{parse_tuple_set2, read_acks, split_data_set, ControlKind, ControlTuples};
use heron_proto::{HeronCodec, Message, Name, Packet, ReqId};
use tokio_util::codec::Encoder;

const SIZES: [usize; 2] = [100, 1000];

/// One encoded data tuple as an instance emits it in ATLEAST_ONCE: a key, one root, a
/// string and an integer value (heron-rs value encoding: tag byte, payload).
fn tuple(i: usize) -> Bytes {
    data_tuple(i).encode_to_vec().into()
}

/// [`tuple`], not encoded.
fn data_tuple(i: usize) -> HeronDataTuple {
    let mut word = vec![4u8];
    word.extend_from_slice(format!("word-{}", i % 997).as_bytes());
    let mut count = vec![2u8];
    count.extend_from_slice(&(i as i64).to_le_bytes());
    HeronDataTuple {
        key: 0x1234_5678_9abc_def0_u64 as i64 ^ i as i64,
        roots: vec![RootId {
            taskid: 1,
            key: 0x0fed_cba9_8765_4321 ^ i as i64,
        }],
        values: vec![word.into(), count.into()],
        dest_task_ids: vec![],
    }
}

fn tuple_set2(n: usize) -> HeronTupleSet2 {
    HeronTupleSet2 {
        data: Some(HeronDataTupleSet2 {
            stream: StreamId {
                id: "default".into(),
                component_name: "word-spout".into(),
            },
            tuples: (0..n).map(tuple).collect(),
        }),
        control: None,
        src_task_id: 1,
    }
}

fn framed<M: Message + Name>(msg: &M) -> Bytes {
    let mut buf = BytesMut::new();
    encode_message(&mut buf, &ReqId::ZERO, msg);
    buf.freeze()
}

fn bench_tuple_set2(c: &mut Criterion) {
    let mut g = c.benchmark_group("framing/tuple_set2");
    let codec = HeronCodec::default();
    for n in SIZES {
        let set = tuple_set2(n);
        let frame = framed(&set);
        let payload = set.encode_to_vec();
        let packet = Packet::new(
            HeronTupleSet2::full_name(),
            ReqId::ZERO,
            payload.clone().into(),
        );
        g.throughput(Throughput::ElementsAndBytes {
            elements: n as u64,
            bytes: frame.len() as u64,
        });
        let mut dst = BytesMut::with_capacity(frame.len());

        // prost encodes the message straight after the header (instances' control sets,
        // every non-tuple message).
        g.bench_function(format!("encode_message/{n}"), |b| {
            b.iter(|| {
                dst.clear();
                encode_message(&mut dst, &ReqId::ZERO, black_box(&set));
                black_box(dst.len())
            })
        });
        // Header plus one copy of an already encoded payload (the stream manager's batches).
        g.bench_function(format!("encode_raw/{n}"), |b| {
            b.iter(|| {
                dst.clear();
                encode_raw(
                    &mut dst,
                    HeronTupleSet2::full_name().as_str(),
                    &ReqId::ZERO,
                    black_box(&payload),
                );
                black_box(dst.len())
            })
        });
        // The tokio codec's encoder with a `Packet` (type name allocated once, outside).
        g.bench_function(format!("codec_encode_packet/{n}"), |b| {
            let mut codec = codec;
            b.iter(|| {
                dst.clear();
                codec.encode(black_box(&packet), &mut dst).unwrap();
                black_box(dst.len())
            })
        });
        // Splitting one packet off a read buffer (no payload decoding).
        g.bench_function(format!("decode_packet/{n}"), |b| {
            b.iter_batched_ref(
                || BytesMut::from(&frame[..]),
                |buf| codec.decode_packet(buf).unwrap().unwrap(),
                BatchSize::SmallInput,
            )
        });
        // The instance's read of a set in place: the set checked and its tuples counted,
        // nothing decoded or copied.
        g.bench_function(format!("parse_in_place/{n}"), |b| {
            let payload = Bytes::from(payload.clone());
            b.iter(|| {
                let set = parse_tuple_set2(black_box(&payload)).unwrap();
                set.data.map(|d| d.len())
            })
        });
        // Splitting and decoding the payload with prost, as the instance does (tuples stay
        // `Bytes` slices of the read buffer).
        g.bench_function(format!("decode_message/{n}"), |b| {
            b.iter_batched_ref(
                || BytesMut::from(&frame[..]),
                |buf| {
                    let p = codec.decode_packet(buf).unwrap().unwrap();
                    p.decode::<HeronTupleSet2>().unwrap()
                },
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

fn bench_tuple_block(c: &mut Criterion) {
    let mut g = c.benchmark_group("framing/data_set");
    for n in SIZES {
        let set = HeronDataTupleSet {
            stream: StreamId {
                id: "default".into(),
                component_name: "split".into(),
            },
            tuples: (0..n).map(data_tuple).collect(),
        }
        .encode_to_vec();
        g.throughput(Throughput::ElementsAndBytes {
            elements: n as u64,
            bytes: set.len() as u64,
        });
        let (_, count) = split_data_set(&set)
            .unwrap()
            .tuple_block()
            .unwrap()
            .unwrap();
        assert_eq!(count as usize, n, "every tuple counted");
        g.bench_function(format!("tuple_block/{n}"), |b| {
            b.iter(|| {
                let set = split_data_set(black_box(&set)).unwrap();
                set.tuple_block().unwrap().map(|(_, n)| n)
            })
        });
    }
    g.finish();
}

/// A bolt's control set of `n` single-root acks, each with another root, read as the stream
/// managers read every control set (`read_acks`).
fn bench_read_acks(c: &mut Criterion) {
    let mut g = c.benchmark_group("framing/control_set");
    for n in SIZES {
        let mut acks = ControlTuples::default();
        for i in 0..n as i64 {
            acks.push_merged(ControlKind::Ack, &[(1, 0x0fed_cba9 ^ i)], 0x1234_5678 ^ i);
        }
        g.throughput(Throughput::Elements(n as u64));
        let mut out = Vec::with_capacity(n);
        read_acks(acks.as_bytes(), &mut out).unwrap();
        assert_eq!(out.len(), n, "every ack read");
        g.bench_function(format!("read_acks/{n}"), |b| {
            b.iter(|| {
                out.clear();
                read_acks(black_box(acks.as_bytes()), &mut out).unwrap();
                out.len()
            })
        });
    }
    g.finish();
}

fn bench_control(c: &mut Criterion) {
    let mut g = c.benchmark_group("framing/control");
    let codec = HeronCodec::default();
    let msg = StartBackPressureMessage {
        topology_name: "word-count".into(),
        topology_id: "word-count-3f2a9c1e-5b7d-4e8f-9a0b-1c2d3e4f5a6b".into(),
        stmgr: "stmgr-2".into(),
        message_id: "heron-rs-selective:count".into(),
    };
    let frame = framed(&msg);
    g.throughput(Throughput::ElementsAndBytes {
        elements: 1,
        bytes: frame.len() as u64,
    });
    let mut dst = BytesMut::with_capacity(frame.len());
    g.bench_function("encode_message", |b| {
        b.iter(|| {
            dst.clear();
            encode_message(&mut dst, &ReqId::ZERO, black_box(&msg));
            black_box(dst.len())
        })
    });
    g.bench_function("decode_message", |b| {
        b.iter_batched_ref(
            || BytesMut::from(&frame[..]),
            |buf| {
                let p = codec.decode_packet(buf).unwrap().unwrap();
                p.decode::<StartBackPressureMessage>().unwrap()
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group!(
    benches,
    bench_tuple_set2,
    bench_tuple_block,
    bench_read_acks,
    bench_control
);
criterion_main!(benches);
