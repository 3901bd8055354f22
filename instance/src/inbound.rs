//! Messages from the stream manager and the decoding of incoming tuples.

use std::collections::HashMap;
use std::sync::Arc;

use heron_api::wire::decode_data_tuple;
use heron_api::{Fields, TopologyContext, Tuple, TupleSource};
use heron_proto::codec::{CodecError, Packet};
use heron_proto::stmgr::NewInstanceAssignmentMessage;
use heron_proto::system::{HeronTupleSet2, PhysicalPlan};

/// One message for the executor.
#[derive(Debug)]
pub(crate) enum InMsg {
    /// Data or control tuples.
    Tuples(HeronTupleSet2),
    /// A new physical plan.
    Plan(Box<PhysicalPlan>),
}

/// What crosses the gateway → executor queue: the messages of one socket read.
pub(crate) type InBatch = Vec<InMsg>;

/// Decodes a packet from the stream manager. Unknown types are logged and skipped.
pub(crate) fn decode(packet: &Packet) -> Result<Option<InMsg>, CodecError> {
    if packet.is::<HeronTupleSet2>() {
        Ok(Some(InMsg::Tuples(packet.decode()?)))
    } else if packet.is::<NewInstanceAssignmentMessage>() {
        let m: NewInstanceAssignmentMessage = packet.decode()?;
        Ok(Some(InMsg::Plan(Box::new(m.pplan))))
    } else {
        tracing::warn!(
            type_name = packet.type_name(),
            "ignoring an unexpected message from the stream manager"
        );
        Ok(None)
    }
}

/// Turns serialized `HeronDataTuple`s into [`Tuple`]s, sharing one [`TupleSource`] per
/// stream, decoding values in place.
#[derive(Default)]
pub(crate) struct TupleDecoder {
    sources: HashMap<String, HashMap<String, Arc<TupleSource>>>,
    roots: Vec<(i32, i64)>,
}

impl TupleDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    fn source(&mut self, ctx: &TopologyContext, component: &str, stream: &str) -> Arc<TupleSource> {
        let by_stream = self.sources.entry(component.to_owned()).or_default();
        if let Some(s) = by_stream.get(stream) {
            return s.clone();
        }
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
        let source = Arc::new(TupleSource::new(component, stream, fields));
        by_stream.insert(stream.to_owned(), source.clone());
        source
    }

    /// Appends the data tuples of `set` to `out`; returns how many could not be decoded
    /// (they are logged and dropped).
    pub fn decode_into(
        &mut self,
        ctx: &TopologyContext,
        set: &HeronTupleSet2,
        out: &mut Vec<Tuple>,
    ) -> usize {
        let Some(data) = &set.data else { return 0 };
        let source = self.source(ctx, &data.stream.component_name, &data.stream.id);
        let width = source.fields().len();
        let mut bad = 0;
        out.reserve(data.tuples.len());
        for raw in &data.tuples {
            let mut values = Vec::with_capacity(width);
            self.roots.clear();
            match decode_data_tuple(raw, &mut values, &mut self.roots) {
                Ok(key) => out.push(Tuple::from_runtime(
                    source.clone(),
                    set.src_task_id,
                    values,
                    key,
                    &self.roots,
                )),
                Err(e) => {
                    bad += 1;
                    tracing::warn!(
                        component = %data.stream.component_name,
                        stream = %data.stream.id,
                        error = %e,
                        "dropping an undecodable tuple"
                    );
                }
            }
        }
        bad
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heron_api::Value;
    use heron_proto::api::StreamId;
    use heron_proto::codec::ReqId;
    use heron_proto::system::{HeronDataTuple, HeronDataTupleSet2, RootId};
    use prost::{Message, Name};

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
            .build()
    }

    #[test]
    fn decodes_values_keys_roots_and_shares_fields() {
        let set = HeronTupleSet2 {
            data: Some(HeronDataTupleSet2 {
                stream: StreamId {
                    id: "default".into(),
                    component_name: "spout".into(),
                },
                tuples: vec![
                    raw(
                        &[Value::from("a"), Value::Int(1)],
                        7,
                        vec![RootId { taskid: 1, key: 9 }],
                    ),
                    bytes::Bytes::from_static(&[0xff, 0xff]),
                    raw(&[Value::from("b"), Value::Int(2)], 0, vec![]),
                ],
            }),
            control: None,
            src_task_id: 1,
        };
        let mut d = TupleDecoder::new();
        let mut out = Vec::new();
        assert_eq!(
            d.decode_into(&ctx(), &set, &mut out),
            1,
            "one malformed tuple"
        );
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].get_str_by_field("word"), Some("a"));
        assert_eq!(out[0].get_i64_by_field("n"), Some(1));
        assert_eq!(out[0].key(), 7);
        assert_eq!(out[0].roots(), &[(1, 9)]);
        assert_eq!(out[0].source_component(), "spout");
        assert_eq!(out[0].source_task(), 1);
        assert_eq!(out[1].get_str(0), Some("b"));
        assert!(
            std::ptr::eq(out[0].fields(), out[1].fields()),
            "fields shared"
        );
    }

    #[test]
    fn unknown_stream_gets_empty_fields() {
        let set = HeronTupleSet2 {
            data: Some(HeronDataTupleSet2 {
                stream: StreamId {
                    id: "x".into(),
                    component_name: "other".into(),
                },
                tuples: vec![raw(&[Value::Int(5)], 0, vec![])],
            }),
            control: None,
            src_task_id: 2,
        };
        let mut out = Vec::new();
        TupleDecoder::new().decode_into(&ctx(), &set, &mut out);
        assert_eq!(out[0].get_i64(0), Some(5));
        assert!(out[0].fields().is_empty());
    }

    #[test]
    fn packet_dispatch() {
        let set = HeronTupleSet2 {
            data: None,
            control: None,
            src_task_id: 4,
        };
        let p = Packet::from_message(ReqId::ZERO, &set);
        assert!(matches!(decode(&p), Ok(Some(InMsg::Tuples(s))) if s.src_task_id == 4));
        let m = NewInstanceAssignmentMessage::default();
        let p = Packet::from_message(ReqId::ZERO, &m);
        assert!(matches!(decode(&p), Ok(Some(InMsg::Plan(_)))));
        let p = Packet::new("heron.proto.Unknown", ReqId::ZERO, bytes::Bytes::new());
        assert!(matches!(decode(&p), Ok(None)));
        let p = Packet::new(
            HeronTupleSet2::full_name(),
            ReqId::ZERO,
            bytes::Bytes::from_static(&[0xff]),
        );
        assert!(decode(&p).is_err(), "malformed payload");
    }
}
