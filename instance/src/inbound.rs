//! Messages from the stream manager and the decoding of incoming tuples.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use heron_api::{Fields, TopologyContext, Tuple, TupleSource};
use heron_proto::codec::Packet;
use heron_proto::stmgr::NewInstanceAssignmentMessage;
use heron_proto::system::{HeronTupleSet2, PhysicalPlan};
use heron_proto::tuple::{parse_tuple_set2, read_acks, AckEntry, ControlKind, DataSet};

use crate::stateful::StatefulMsg;
use crate::InstanceError;

/// One message for the executor.
#[derive(Debug)]
pub(crate) enum InMsg {
    /// The data tuples of a set, still encoded: a slice of the received packet.
    Data(DataSet),
    /// The control tuples (acks and fails) of a set.
    Control(ControlSet),
    /// A new physical plan.
    Plan(Box<PhysicalPlan>),
    /// A checkpoint, restore, start or "saved" notice (`EFFECTIVELY_ONCE`).
    Stateful(StatefulMsg),
}

/// A `HeronControlTupleSet` from the stream manager, checked and read in place (no decoded
/// message, no allocation per ack): its bytes and where its entries are.
#[derive(Debug)]
pub(crate) struct ControlSet {
    bytes: Bytes,
    entries: Vec<AckEntry>,
}

impl ControlSet {
    /// Checks the encoded set `bytes`.
    pub fn read(bytes: Bytes) -> Result<ControlSet, heron_proto::tuple::TupleError> {
        let mut entries = Vec::new();
        read_acks(&bytes, &mut entries)?;
        Ok(ControlSet { bytes, entries })
    }

    /// Calls `f(task, key)` for every root of every entry of `kind`, in order.
    pub fn for_each_root(&self, kind: ControlKind, mut f: impl FnMut(i32, i64)) {
        for e in self.entries.iter().filter(|e| e.kind == kind) {
            e.for_each_root(&self.bytes, &mut f);
        }
    }
}

/// What crosses the gateway → executor queue: the messages of one socket read.
pub(crate) type InBatch = Vec<InMsg>;

/// Decodes a packet from the stream manager into `out`: a tuple set becomes its control part
/// (decoded) then its data part (checked, not decoded: see [`parse_tuple_set2`]), a plan
/// assignment its plan. Unknown types are logged and skipped. On error nothing is added.
pub(crate) fn decode(packet: &Packet, out: &mut InBatch) -> Result<(), InstanceError> {
    if packet.is::<HeronTupleSet2>() {
        let set = parse_tuple_set2(&packet.payload)?;
        if let Some(control) = set.control {
            out.push(InMsg::Control(ControlSet::read(control)?));
        }
        if let Some(data) = set.data {
            out.push(InMsg::Data(data));
        }
    } else if let Some(msg) = crate::stateful::decode(packet) {
        out.push(InMsg::Stateful(msg?));
    } else if packet.is::<NewInstanceAssignmentMessage>() {
        let m: NewInstanceAssignmentMessage = packet.decode()?;
        out.push(InMsg::Plan(Box::new(m.pplan)));
    } else {
        tracing::warn!(
            type_name = packet.type_name(),
            "ignoring an unexpected message from the stream manager"
        );
    }
    Ok(())
}

type Sources = HashMap<String, HashMap<String, Arc<TupleSource>>>;

/// The shared source of `stream` of `component`, made on first use.
fn source<'s>(
    sources: &'s mut Sources,
    ctx: &TopologyContext,
    component: &str,
    stream: &str,
) -> &'s Arc<TupleSource> {
    if !sources.contains_key(component) {
        sources.insert(component.to_owned(), HashMap::new());
    }
    let by_stream = sources.get_mut(component).expect("inserted");
    if !by_stream.contains_key(stream) {
        let fields = ctx
            .component_output_fields(component, stream)
            .cloned()
            .unwrap_or_else(|| {
                tracing::warn!(
                    component,
                    stream,
                    "tuples on a stream the physical plan does not declare"
                );
                Fields::empty()
            });
        let s = Arc::new(TupleSource::new(component, stream, fields));
        by_stream.insert(stream.to_owned(), s);
    }
    &by_stream[stream]
}

/// Turns the serialized `HeronDataTuple`s of a set into one reused [`Tuple`], one at a time:
/// each tuple is decoded over the previous one (reusing its value buffers), and the shared
/// [`TupleSource`] of its stream is set once per set. No allocation in a steady state.
#[derive(Default)]
pub(crate) struct TupleDecoder {
    sources: Sources,
    /// The tuple every received tuple is decoded into.
    tuple: Option<Tuple>,
}

impl TupleDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes the tuples of `set` one at a time into the reused tuple and calls `execute`
    /// with each. Returns how many could not be decoded (they are logged and dropped), or
    /// the first error of `execute`.
    pub fn for_each<E>(
        &mut self,
        ctx: &TopologyContext,
        set: &DataSet,
        mut execute: impl FnMut(&mut Tuple) -> Result<(), E>,
    ) -> Result<usize, E> {
        let (component, stream) = (set.component(), set.stream_id());
        let source = source(&mut self.sources, ctx, component, stream);
        let tuple = self
            .tuple
            .get_or_insert_with(|| Tuple::from_runtime(source.clone(), 0, Vec::new(), 0, &[]));
        tuple.set_source(source);
        let mut bad = 0;
        for raw in set.tuples() {
            match tuple.decode_over(set.src_task_id(), raw) {
                Ok(()) => execute(tuple)?,
                Err(e) => {
                    bad += 1;
                    tracing::warn!(
                        component,
                        stream,
                        error = %e,
                        "dropping an undecodable tuple"
                    );
                }
            }
        }
        Ok(bad)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heron_api::Value;
    use heron_proto::api::StreamId;
    use heron_proto::codec::ReqId;
    use heron_proto::system::{
        AckTuple, HeronControlTupleSet, HeronDataTuple, HeronDataTupleSet2, RootId,
    };
    use prost::{Message, Name};

    #[test]
    fn a_control_set_is_read_in_place_root_by_root_per_kind() {
        let ack = |roots: &[(i32, i64)], k| AckTuple {
            roots: roots
                .iter()
                .map(|&(taskid, key)| RootId { taskid, key })
                .collect(),
            ackedtuple: k,
        };
        let set = HeronControlTupleSet {
            acks: vec![ack(&[(1, 10)], 0), ack(&[(2, 20), (1, 11)], 0)],
            fails: vec![ack(&[(1, 12)], 0)],
            emits: vec![ack(&[(1, 13)], 5)],
        };
        let c = ControlSet::read(set.encode_to_vec().into()).unwrap();
        let roots = |kind| {
            let mut v = Vec::new();
            c.for_each_root(kind, |t, k| v.push((t, k)));
            v
        };
        assert_eq!(roots(ControlKind::Ack), vec![(1, 10), (2, 20), (1, 11)]);
        assert_eq!(roots(ControlKind::Fail), vec![(1, 12)]);
        assert_eq!(roots(ControlKind::Emit), vec![(1, 13)]);
        // an ack without its `ackedtuple`, and a truncated root
        assert!(ControlSet::read(bytes::Bytes::from_static(&[0x0a, 0x00])).is_err());
        assert!(ControlSet::read(bytes::Bytes::from_static(&[0x0a, 0x02, 0x0a, 0x05])).is_err());
    }

    fn raw(values: &[Value], key: i64, roots: Vec<RootId>) -> bytes::Bytes {
        let mut encoded = Vec::new();
        for v in values {
            let mut b = Vec::new();
            v.encode(&mut b);
            encoded.push(b.into());
        }
        HeronDataTuple {
            key,
            roots,
            values: encoded,
            dest_task_ids: vec![],
        }
        .encode_to_vec()
        .into()
    }

    fn ctx() -> TopologyContext {
        TopologyContext::builder("t", "bolt", 3)
            .stream("spout", "default", Fields::new(["word", "n"]))
            .stream("spout", "nums", Fields::new(["n"]))
            .build()
    }

    /// The packet of `set`, through [`decode`]: its data part.
    fn data_of(set: &HeronTupleSet2) -> DataSet {
        let mut out = InBatch::new();
        decode(&Packet::from_message(ReqId::ZERO, set), &mut out).unwrap();
        match out.pop() {
            Some(InMsg::Data(d)) => d,
            other => panic!("{other:?}"),
        }
    }

    /// Decodes `set` as the bolt does, keeping a clone of each executed tuple.
    fn run(d: &mut TupleDecoder, set: &HeronTupleSet2) -> (Vec<Tuple>, usize) {
        let mut out = Vec::new();
        let bad = d
            .for_each(&ctx(), &data_of(set), |t| {
                out.push(t.clone());
                Ok::<_, ()>(())
            })
            .unwrap();
        (out, bad)
    }

    fn set_of(component: &str, stream: &str, tuples: Vec<bytes::Bytes>) -> HeronTupleSet2 {
        HeronTupleSet2 {
            data: Some(HeronDataTupleSet2 {
                stream: StreamId {
                    id: stream.into(),
                    component_name: component.into(),
                },
                tuples,
            }),
            control: None,
            src_task_id: 1,
        }
    }

    #[test]
    fn decodes_values_keys_roots_and_shares_fields() {
        let set = set_of(
            "spout",
            "default",
            vec![
                raw(
                    &[Value::from("a"), Value::Int(1)],
                    7,
                    vec![RootId { taskid: 1, key: 9 }],
                ),
                bytes::Bytes::from_static(&[0xff, 0xff]),
                raw(&[Value::from("b"), Value::Int(2)], 0, vec![]),
            ],
        );
        let mut d = TupleDecoder::new();
        let (out, bad) = run(&mut d, &set);
        assert_eq!(bad, 1, "one malformed tuple");
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].get_str_by_field("word"), Some("a"));
        assert_eq!(out[0].get_i64_by_field("n"), Some(1));
        assert_eq!(out[0].key(), 7);
        assert_eq!(out[0].roots(), &[(1, 9)]);
        assert_eq!(out[0].source_component(), "spout");
        assert_eq!(out[0].source_task(), 1);
        assert_eq!(out[1].get_str(0), Some("b"));
        assert_eq!(out[1].roots(), &[] as &[(i32, i64)]);
        assert!(
            std::ptr::eq(out[0].fields(), out[1].fields()),
            "fields shared"
        );
        // The next set of the stream shares them too.
        let (again, _) = run(&mut d, &set);
        assert!(std::ptr::eq(out[0].fields(), again[0].fields()));
    }

    #[test]
    fn unknown_stream_gets_empty_fields() {
        let set = HeronTupleSet2 {
            src_task_id: 2,
            ..set_of("other", "x", vec![raw(&[Value::Int(5)], 0, vec![])])
        };
        let (out, _) = run(&mut TupleDecoder::new(), &set);
        assert_eq!(out[0].get_i64(0), Some(5));
        assert_eq!(out[0].source_task(), 2);
        assert!(out[0].fields().is_empty());
    }

    /// A tuple as executed: values, key, roots, source task, stream.
    type Seen = (Vec<Value>, i64, Vec<(i32, i64)>, i32, String);

    /// What the bolt got before: prost over the set, then each tuple decoded on its own.
    fn old_path(set: &HeronTupleSet2) -> Vec<Seen> {
        let p = Packet::from_message(ReqId::ZERO, set);
        let set: HeronTupleSet2 = p.decode().unwrap();
        let d = set.data.unwrap();
        d.tuples
            .iter()
            .filter_map(|t| {
                let (mut values, mut roots) = (Vec::new(), Vec::new());
                let key = heron_api::decode_data_tuple(t, &mut values, &mut roots).ok()?;
                Some((values, key, roots, set.src_task_id, d.stream.id.clone()))
            })
            .collect()
    }

    #[test]
    fn same_tuples_as_prost_across_streams_and_shapes() {
        let long = "a much longer string than the first one".to_owned();
        let sets = [
            set_of(
                "spout",
                "default",
                vec![
                    raw(
                        &[Value::from("word"), Value::Int(1)],
                        3,
                        vec![RootId { taskid: 1, key: 2 }, RootId { taskid: 4, key: -5 }],
                    ),
                    raw(&[Value::Bytes(vec![1; 20]), Value::Null], 4, vec![]),
                    raw(&[Value::from(long.as_str()), Value::Int(-1)], 5, vec![]),
                    raw(&[Value::from("w")], 6, vec![RootId { taskid: 9, key: 9 }]),
                    raw(
                        &[Value::from("x"), Value::Float(0.5), Value::Bool(true)],
                        7,
                        vec![],
                    ),
                ],
            ),
            set_of("spout", "nums", vec![raw(&[Value::Int(42)], 8, vec![])]),
            set_of(
                "spout",
                "default",
                vec![raw(&[Value::from("y"), Value::Int(2)], 9, vec![])],
            ),
        ];
        let mut d = TupleDecoder::new();
        let mut clones = Vec::new();
        for set in &sets {
            let (out, bad) = run(&mut d, set);
            assert_eq!(bad, 0);
            let got: Vec<_> = out
                .iter()
                .map(|t| {
                    (
                        t.values().to_vec(),
                        t.key(),
                        t.roots().to_vec(),
                        t.source_task(),
                        t.source_stream().to_owned(),
                    )
                })
                .collect();
            assert_eq!(got, old_path(set));
            clones.extend(out);
        }
        // The clones taken during execute kept their own values.
        assert_eq!(clones[0].get_str(0), Some("word"));
        assert_eq!(clones[2].get_str(0), Some(long.as_str()));
        assert_eq!(clones[5].get_i64_by_field("n"), Some(42));
        assert_eq!(clones[6].get_str_by_field("word"), Some("y"));
    }

    #[test]
    fn packet_dispatch() {
        let mut out = InBatch::new();
        let set = HeronTupleSet2 {
            data: None,
            control: None,
            src_task_id: 4,
        };
        decode(&Packet::from_message(ReqId::ZERO, &set), &mut out).unwrap();
        assert!(out.is_empty(), "neither data nor control");
        let with_both = HeronTupleSet2 {
            control: Some(HeronControlTupleSet::default()),
            ..set_of("spout", "default", vec![])
        };
        decode(&Packet::from_message(ReqId::ZERO, &with_both), &mut out).unwrap();
        assert!(matches!(&out[..], [InMsg::Control(_), InMsg::Data(d)] if d.is_empty()));
        out.clear();
        let m = NewInstanceAssignmentMessage::default();
        decode(&Packet::from_message(ReqId::ZERO, &m), &mut out).unwrap();
        assert!(matches!(&out[..], [InMsg::Plan(_)]));
        out.clear();
        let p = Packet::new("heron.proto.Unknown", ReqId::ZERO, bytes::Bytes::new());
        decode(&p, &mut out).unwrap();
        assert!(out.is_empty());
        for bad in [
            &[0xff][..],
            &[0x0a, 0x02, 0x12, 0x05], // truncated tuple in the data part
            &[0x0a, 0x05, 0x0a, 0x03, 0x0a, 0x01, 0xff], // non-UTF-8 stream id
            &[0x12, 0x02, 0x0a, 0x05], // malformed control part
        ] {
            let p = Packet::new(
                HeronTupleSet2::full_name(),
                ReqId::ZERO,
                bytes::Bytes::copy_from_slice(bad),
            );
            assert!(decode(&p, &mut out).is_err(), "malformed payload {bad:?}");
            assert!(out.is_empty());
        }
    }
}
