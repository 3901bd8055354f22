//! The stream manager's per-tuple work on tuples from its local instances:
//!
//! * `routing/grouping/*`: the routing decision per grouping (shuffle, fields, all, global,
//!   direct, local-or-shuffle) over a batch of 1000 encoded tuples;
//! * `routing/parse/*`: the in-place parse of an instance's `HeronTupleSet` (split the set,
//!   find the stream, check every tuple), and parse plus fields routing;
//! * `routing/data_path/*`: the whole synchronous data path of the core, one `HeronTupleSet`
//!   packet from a local spout in, routed, batched per destination task and framed for the
//!   local bolt instances at the end of the round; at most once and at least once (keys
//!   written per copy, XOR tracking of the spout's trees).
//!
//! Throughput is in tuples (and bytes of the set for `parse`).
//!
//! Run: `cargo bench -p heron-stmgr --bench routing`.

use std::hint::black_box;
use std::time::Instant;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use heron_proto::api::{
    self, config::KeyValue, stream_schema::KeyType, Bolt, Component, InputStream, OutputStream,
    Spout, StreamId, StreamSchema, Topology,
};
use heron_proto::stmgr::RegisterInstanceRequest;
use heron_proto::system::{
    HeronDataTuple, HeronDataTupleSet, HeronTupleSet, PhysicalPlan, RootId, StMgr,
};
use heron_proto::tuple as wire;
use heron_proto::{Message, Name, Packet, ReqId};
use heron_stmgr::bench_api::{instance, Action, Core, CoreConfig, Incoming, Router};

const N: usize = 1000;
const TOPOLOGY: &str = "bench";
const TOPOLOGY_ID: &str = "bench-1";

fn stream_id(component: &str) -> StreamId {
    StreamId {
        id: "default".into(),
        component_name: component.into(),
    }
}

fn component(name: &str) -> Component {
    Component {
        name: name.into(),
        ..Default::default()
    }
}

#[derive(Clone, Copy, Debug)]
enum G {
    Shuffle,
    Fields,
    All,
    Global,
    Direct,
    LocalOrShuffle,
}

const GROUPINGS: [G; 6] = [
    G::Shuffle,
    G::Fields,
    G::All,
    G::Global,
    G::Direct,
    G::LocalOrShuffle,
];

impl G {
    fn name(self) -> &'static str {
        match self {
            G::Shuffle => "shuffle",
            G::Fields => "fields",
            G::All => "all",
            G::Global => "global",
            G::Direct => "direct",
            G::LocalOrShuffle => "local_or_shuffle",
        }
    }

    fn input(self) -> InputStream {
        let (gtype, custom) = match self {
            G::Shuffle => (api::Grouping::Shuffle, None),
            G::Fields => (api::Grouping::Fields, None),
            G::All => (api::Grouping::All, None),
            G::Global => (api::Grouping::Lowest, None),
            G::Direct => (api::Grouping::Direct, None),
            G::LocalOrShuffle => (
                api::Grouping::Shuffle,
                Some(Bytes::from_static(b"heron-rs:local-or-shuffle")),
            ),
        };
        InputStream {
            stream: stream_id("spout"),
            gtype: gtype as i32,
            grouping_fields: matches!(self, G::Fields).then(|| StreamSchema {
                keys: vec![KeyType {
                    key: "word".into(),
                    r#type: api::Type::Object as i32,
                }],
            }),
            custom_grouping_object: custom,
            r#type: None,
        }
    }
}

/// A spout (`id`, `word`) with tasks 1 and 2 on stmgr-1 and a bolt of `bolt_tasks` tasks
/// (from 3 on) subscribed with `g`; the bolt's tasks alternate between the stream managers
/// `stmgrs` (all on stmgr-1 with one).
fn plan(g: G, bolt_tasks: i32, stmgrs: i32, acking: bool) -> PhysicalPlan {
    let fields = ["id", "word"].map(|k| KeyType {
        key: k.into(),
        r#type: api::Type::Object as i32,
    });
    let mut topology = Topology {
        id: TOPOLOGY_ID.into(),
        name: TOPOLOGY.into(),
        state: api::TopologyState::Running as i32,
        spouts: vec![Spout {
            comp: component("spout"),
            outputs: vec![OutputStream {
                stream: stream_id("spout"),
                schema: StreamSchema {
                    keys: fields.to_vec(),
                },
            }],
        }],
        bolts: vec![Bolt {
            comp: component("bolt"),
            inputs: vec![g.input()],
            outputs: vec![],
        }],
        ..Default::default()
    };
    if acking {
        let kv = |k: &str, v: &str| KeyValue {
            key: k.into(),
            value: Some(v.into()),
            ..Default::default()
        };
        topology.topology_config = Some(api::Config {
            kvs: vec![
                kv("topology.reliability.mode", "ATLEAST_ONCE"),
                kv("topology.message.timeout.secs", "1"),
            ],
        });
    }
    let stmgr = |i: i32| format!("stmgr-{i}");
    let mut instances = vec![
        instance("stmgr-1", "spout", 1),
        instance("stmgr-1", "spout", 2),
    ];
    for t in 0..bolt_tasks {
        instances.push(instance(&stmgr(1 + t % stmgrs), "bolt", 3 + t));
    }
    PhysicalPlan {
        topology,
        stmgrs: (1..=stmgrs)
            .map(|i| StMgr {
                id: stmgr(i),
                host_name: "127.0.0.1".into(),
                data_port: 6000 + i,
                local_endpoint: "/unused".into(),
                ..Default::default()
            })
            .collect(),
        instances,
    }
}

/// Tuple `i` as the emitter writes it: key 0, the spout's root in at-least-once, an id and a
/// word (heron-rs string values: tag 4, UTF-8), a destination for direct streams.
fn data_tuple(i: usize, root: bool, dest: Option<i32>) -> HeronDataTuple {
    let s = |v: String| {
        let mut b = vec![4u8];
        b.extend_from_slice(v.as_bytes());
        Bytes::from(b)
    };
    HeronDataTuple {
        key: 0,
        roots: if root {
            vec![RootId {
                taskid: 1,
                key: (i as i64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15_u64 as i64),
            }]
        } else {
            vec![]
        },
        values: vec![s(format!("id-{i:06}")), s(format!("word-{}", i % 997))],
        dest_task_ids: dest.into_iter().collect(),
    }
}

fn encoded_tuples(dest_tasks: Option<i32>) -> Vec<Vec<u8>> {
    (0..N)
        .map(|i| {
            let dest = dest_tasks.map(|n| 3 + i as i32 % n);
            data_tuple(i, false, dest).encode_to_vec()
        })
        .collect()
}

/// An instance's `HeronTupleSet` payload of `N` tuples.
fn tuple_set(root: bool) -> Vec<u8> {
    HeronTupleSet {
        data: Some(HeronDataTupleSet {
            stream: stream_id("spout"),
            tuples: (0..N).map(|i| data_tuple(i, root, None)).collect(),
        }),
        control: None,
        src_task_id: 1,
    }
    .encode_to_vec()
}

fn bench_groupings(c: &mut Criterion) {
    let mut g = c.benchmark_group("routing/grouping");
    g.throughput(Throughput::Elements(N as u64));
    const BOLT_TASKS: i32 = 8;
    for grouping in GROUPINGS {
        let mut router = Router::new(&plan(grouping, BOLT_TASKS, 2, false), "stmgr-1").unwrap();
        let stream = router.stream_index("spout", "default").unwrap();
        let tuples = encoded_tuples(matches!(grouping, G::Direct).then_some(BOLT_TASKS));
        let mut out = Vec::with_capacity(BOLT_TASKS as usize);
        g.bench_function(grouping.name(), |b| {
            b.iter(|| {
                let mut n = 0;
                for t in &tuples {
                    out.clear();
                    let t = black_box(t);
                    let scan = wire::scan_tuple(t).unwrap();
                    router.route(stream, t, &scan, &mut out);
                    n += out.len();
                }
                n
            })
        });
    }
    g.finish();
}

fn bench_parse(c: &mut Criterion) {
    let mut g = c.benchmark_group("routing/parse");
    let payload = tuple_set(false);
    g.throughput(Throughput::ElementsAndBytes {
        elements: N as u64,
        bytes: payload.len() as u64,
    });
    g.bench_function("tuple_set", |b| {
        b.iter(|| {
            let parts = wire::split_tuple_set(black_box(&payload)).unwrap();
            let set = wire::split_data_set(parts.data.unwrap()).unwrap();
            black_box((set.component, set.stream));
            let mut bytes = 0;
            set.for_each_tuple(|t| {
                wire::check_tuple(t)?;
                bytes += t.len();
                Ok(())
            })
            .unwrap();
            bytes
        })
    });
    let mut router = Router::new(&plan(G::Fields, 8, 2, false), "stmgr-1").unwrap();
    let mut out = Vec::with_capacity(1);
    g.bench_function("tuple_set_and_fields_routing", |b| {
        b.iter(|| {
            let parts = wire::split_tuple_set(black_box(&payload)).unwrap();
            let set = wire::split_data_set(parts.data.unwrap()).unwrap();
            let stream = router.stream_index(set.component, set.stream).unwrap();
            let mut n = 0;
            set.for_each_tuple(|t| {
                wire::check_tuple(t)?;
                out.clear();
                let scan = wire::scan_tuple(t)?;
                router.route(stream, t, &scan, &mut out);
                n += out.len();
                Ok(())
            })
            .unwrap();
            n
        })
    });
    g.finish();
}

/// A core for stmgr-1 alone: the spout's tasks 1 and 2 and the bolt's 4 tasks (3..=6)
/// registered on connections 1..=6, the plan applied.
fn running_core(g: G, acking: bool) -> Core {
    let pplan = plan(g, 4, 1, acking);
    let ids: Vec<String> = pplan
        .instances
        .iter()
        .map(|i| i.instance_id.clone())
        .collect();
    let now = Instant::now();
    let cfg = CoreConfig {
        topology_name: TOPOLOGY.into(),
        topology_id: TOPOLOGY_ID.into(),
        stmgr_id: "stmgr-1".into(),
        instance_ids: ids,
        max_packet_size: heron_stmgr::DEFAULT_MAX_PACKET_SIZE,
        batch_bytes: heron_stmgr::BATCH_BYTES,
    };
    let mut core = Core::new(cfg, now);
    for i in &pplan.instances {
        let conn = i.info.task_id as u64;
        core.on_connected(conn, Incoming::Instance, format!("bench-{conn}"));
        let req = RegisterInstanceRequest {
            instance: i.clone(),
            topology_name: TOPOLOGY.into(),
            topology_id: TOPOLOGY_ID.into(),
        };
        core.on_packet(conn, &Packet::from_message(ReqId::random(), &req), now);
    }
    core.on_pplan(pplan, now);
    round(&mut core, now);
    core
}

/// Ends a round and drops the resulting actions; returns the bytes it would write.
fn round(core: &mut Core, now: Instant) -> usize {
    core.end_round(now, true);
    core.drain_actions()
        .map(|a| match a {
            Action::Send(_, b) => b.len(),
            _ => 0,
        })
        .sum()
}

fn bench_data_path(c: &mut Criterion) {
    let mut g = c.benchmark_group("routing/data_path");
    g.throughput(Throughput::Elements(N as u64));
    for acking in [false, true] {
        let packet = Packet::new(
            HeronTupleSet::full_name(),
            ReqId::ZERO,
            tuple_set(acking).into(),
        );
        for grouping in [G::Shuffle, G::Fields] {
            let mut core = running_core(grouping, acking);
            // One round first: every tuple must reach a local bolt.
            let now = Instant::now();
            core.on_packet(1, &packet, now);
            assert!(round(&mut core, now) > 0);
            assert_eq!(core.counters().tuples_from_instances, N as u64);
            assert_eq!(core.delivered().to_instances, N as u64);
            let mode = if acking {
                "at_least_once"
            } else {
                "at_most_once"
            };
            g.bench_function(format!("{mode}/{}", grouping.name()), |b| {
                b.iter(|| {
                    let now = Instant::now();
                    core.on_packet(1, black_box(&packet), now);
                    round(&mut core, now)
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench_groupings, bench_parse, bench_data_path);
criterion_main!(benches);
