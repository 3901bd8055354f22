//! The sets an instance sends its stream manager: `heron.proto.system.HeronTupleSet {
//! HeronDataTupleSet data = 1; HeronControlTupleSet control = 2; int32 src_task_id = 3 }` with
//! `HeronDataTupleSet { required StreamId stream = 1; repeated HeronDataTuple tuples = 2 }` and
//! `heron.proto.api.StreamId { required string id = 1; required string component_name = 2 }`.
//! The instance writes each closed set as a whole Heron packet with one copy; the stream
//! manager splits a received set in place and walks its tuples without decoding them.

use bytes::{BufMut, BytesMut};

use super::fields::{fields, int32, key, put_varint, varint_len, wrong, Field};
use super::fields::{LEN, VARINT};
use super::TupleError;

/// `HeronTupleSet`'s fully qualified name, as a constant: `full_name()` allocates, and the
/// frames are written and counted once per batch.
const TUPLE_SET: &str = "heron.proto.system.HeronTupleSet";

/// The encoded `StreamId` message as the `stream` field (1) of a `HeronDataTupleSet`: computed
/// once per output stream and copied in front of every data set.
///
/// ```
/// use heron_proto::prost::Message;
/// use heron_proto::system::HeronDataTupleSet;
/// let field = heron_proto::tuple::stream_field("words", "split");
/// let set = HeronDataTupleSet::decode(&field[..]).unwrap();
/// assert_eq!((&*set.stream.id, &*set.stream.component_name), ("words", "split"));
/// ```
pub fn stream_field(id: &str, component: &str) -> Vec<u8> {
    let inner = 1
        + varint_len(id.len() as u64)
        + id.len()
        + 1
        + varint_len(component.len() as u64)
        + component.len();
    let mut out = BytesMut::with_capacity(inner + 6);
    out.put_u8(key(1, LEN));
    put_varint(&mut out, inner as u64);
    out.put_u8(key(1, LEN));
    put_varint(&mut out, id.len() as u64);
    out.put_slice(id.as_bytes());
    out.put_u8(key(2, LEN));
    put_varint(&mut out, component.len() as u64);
    out.put_slice(component.as_bytes());
    out.to_vec()
}

/// Appends a whole Heron packet carrying a `HeronTupleSet` from `src_task` whose data set is
/// the encoded `stream` field ([`stream_field`]) followed by the encoded `tuples`
/// ([`super::put_data_tuple`]).
pub fn put_data_set_frame(out: &mut BytesMut, stream: &[u8], tuples: &[u8], src_task: i32) {
    put_set_frame(out, 1, [stream, &[], tuples], src_task);
}

/// The field of `HeronDataTupleSet` in which heron-rs names the one task every tuple of the
/// set goes to (an extension: Heron's message has fields 1 and 2 only, and protobuf readers,
/// heronpy's and Heron's own, skip a field they do not know).
pub const DEST_TASK_FIELD: u32 = 100;

/// The field of `HeronDataTupleSet` in which heron-rs says that the sender gave every
/// anchored tuple of an addressed set its key and sent the matching `emits` in its control set
/// (varint 1; an extension like [`DEST_TASK_FIELD`], written right after it). In
/// `ATLEAST_ONCE` a stream manager forwards such a set whole instead of keying each copy.
pub const KEYED_FIELD: u32 = 101;

/// [`put_data_set_frame`] for a set whose every tuple goes to task `dest_task` (each names
/// it in its `dest_task_ids`): the set carries it in [`DEST_TASK_FIELD`], between the stream
/// and the tuples, so that a stream manager can forward the set without routing each tuple.
/// `keyed`: the tuples carry their own keys ([`KEYED_FIELD`]).
///
/// ```
/// use bytes::BytesMut;
/// use heron_proto::tuple::{put_data_set_frame_to, split_data_set, split_tuple_set, stream_field};
/// use heron_proto::HeronCodec;
/// let (mut frames, tuples) = (BytesMut::new(), BytesMut::new());
/// put_data_set_frame_to(&mut frames, &stream_field("words", "split"), 7, true, &tuples, 3);
/// let packet = HeronCodec::new(0).decode_packet(&mut frames).unwrap().unwrap();
/// let data = split_tuple_set(&packet.payload).unwrap().data.unwrap();
/// let set = split_data_set(data).unwrap();
/// assert_eq!((set.stream, set.dest_task, set.keyed), ("words", Some(7), true));
/// ```
pub fn put_data_set_frame_to(
    out: &mut BytesMut,
    stream: &[u8],
    dest_task: i32,
    keyed: bool,
    tuples: &[u8],
    src_task: i32,
) {
    let mut hint = [0u8; 2 + 10 + 3];
    let free = {
        let mut w = &mut hint[..];
        put_varint(&mut w, u64::from(DEST_TASK_FIELD << 3 | u32::from(VARINT)));
        put_varint(&mut w, int32(dest_task));
        if keyed {
            put_varint(&mut w, u64::from(KEYED_FIELD << 3 | u32::from(VARINT)));
            put_varint(&mut w, 1);
        }
        w.len()
    };
    let n = hint.len() - free;
    put_set_frame(out, 1, [stream, &hint[..n], tuples], src_task);
}

/// Appends a whole Heron packet carrying a `HeronTupleSet` from `src_task` whose control set
/// is `control` (encoded `HeronControlTupleSet` fields, see [`super::ControlTuples`]).
pub fn put_control_set_frame(out: &mut BytesMut, control: &[u8], src_task: i32) {
    put_set_frame(out, 2, [control, &[], &[]], src_task);
}

/// A `HeronTupleSet` packet with one message field (`data` = 1 or `control` = 2), encoded as
/// the concatenation of `parts`.
fn put_set_frame(out: &mut BytesMut, field: u8, parts: [&[u8]; 3], src_task: i32) {
    let data_len = parts.iter().map(|p| p.len()).sum::<usize>();
    let src = int32(src_task);
    let payload = 1 + varint_len(data_len as u64) + data_len + 1 + varint_len(src);
    let name = TUPLE_SET;
    let data_size = 4 + name.len() + crate::codec::REQID_LEN + 4 + payload;
    out.reserve(4 + data_size);
    out.put_u32(data_size as u32);
    out.put_i32(name.len() as i32);
    out.put_slice(name.as_bytes());
    out.put_bytes(0, crate::codec::REQID_LEN);
    out.put_i32(payload as i32);
    out.put_u8(key(field, LEN));
    put_varint(out, data_len as u64);
    for part in parts {
        out.put_slice(part);
    }
    out.put_u8(key(3, VARINT));
    put_varint(out, src);
}

/// The parts of a `HeronTupleSet`, still encoded.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TupleSetParts<'a> {
    /// The encoded `HeronDataTupleSet`, if any.
    pub data: Option<&'a [u8]>,
    /// The encoded `HeronControlTupleSet`, if any.
    pub control: Option<&'a [u8]>,
}

/// Splits a `HeronTupleSet` into its data and control sets (the last occurrence of each wins).
#[inline]
pub fn split_tuple_set(buf: &[u8]) -> Result<TupleSetParts<'_>, TupleError> {
    const M: &str = "HeronTupleSet";
    let mut parts = TupleSetParts::default();
    for f in fields(buf) {
        match f? {
            (1, Field::Len(d)) => parts.data = Some(d),
            (2, Field::Len(c)) => parts.control = Some(c),
            (3, Field::Varint(_)) => {}
            (n @ 1..=3, v) => return Err(wrong(M, n, &v)),
            _ => {}
        }
    }
    Ok(parts)
}

/// A `HeronDataTupleSet` read in place ([`split_data_set`]): its stream and its still-encoded
/// tuples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataSetRef<'a> {
    /// The producing component (`StreamId.component_name`).
    pub component: &'a str,
    /// The stream id (`StreamId.id`).
    pub stream: &'a str,
    /// The one task every tuple goes to, when the sender named it ([`DEST_TASK_FIELD`]).
    pub dest_task: Option<i32>,
    /// The sender keyed the set's anchored tuples and sent their emits ([`KEYED_FIELD`]).
    pub keyed: bool,
    body: &'a [u8],
    /// Where the tuples start when the stream (and task) come first, as encoders write them.
    tuples_at: Option<usize>,
}

impl<'a> DataSetRef<'a> {
    /// Calls `f` with the encoded bytes of every `HeronDataTuple`, in order.
    #[inline]
    pub fn for_each_tuple(
        &self,
        mut f: impl FnMut(&'a [u8]) -> Result<(), TupleError>,
    ) -> Result<(), TupleError> {
        for field in fields(self.body) {
            match field? {
                (2, Field::Len(t)) => f(t)?,
                (2, v) => return Err(wrong("HeronDataTupleSet", 2, &v)),
                _ => {}
            }
        }
        Ok(())
    }

    /// The tuples as one block of encoded `tuples` fields (tag, length, tuple each: the same
    /// bytes a `HeronDataTupleSet2` holds them in) and their number, when they follow the
    /// stream (and task) to the end of the set; `None` when other fields come among them.
    /// Every field is read, so a malformed one is an error here.
    pub fn tuple_block(&self) -> Result<Option<(&'a [u8], u32)>, TupleError> {
        let Some(at) = self.tuples_at else {
            return Ok(None);
        };
        let block = &self.body[at..];
        let n = match count_tuple_fields(block) {
            Some(n) => n,
            // something other than well-framed `tuples` fields: the general walk says what
            None => match walk_tuple_fields(block)? {
                Some(n) => n,
                None => return Ok(None),
            },
        };
        Ok(Some((block, n)))
    }

    /// The number of tuples, for counting what is dropped.
    #[inline]
    pub fn count(&self) -> u64 {
        fields(self.body)
            .filter(|f| matches!(f, Ok((2, _))))
            .count() as u64
    }
}

/// The number of fields in `block` when every one is a `tuples` field (field 2, length
/// delimited, its key in one byte as encoders write it) whose bytes are all there; `None`
/// otherwise. The stream manager's walk over every set it forwards whole: a key byte, a
/// length and a skip per tuple ([`Fields::skip_len_field`](super::fields::Fields)), where
/// the general walk decodes each key and wire type. It accepts only what the general walk
/// counts as tuples, so the two agree.
#[inline]
fn count_tuple_fields(block: &[u8]) -> Option<u32> {
    let mut f = fields(block);
    let mut n = 0u32;
    while !f.is_empty() {
        if !f.skip_len_field(key(2, LEN)) {
            return None;
        }
        n = n.checked_add(1)?;
    }
    Some(n)
}

/// The number of fields in `block` when every one is a `tuples` field, reading each field
/// in full (`None` when another field comes among them, an error when one is malformed).
fn walk_tuple_fields(block: &[u8]) -> Result<Option<u32>, TupleError> {
    let mut n = 0u32;
    for field in fields(block) {
        match field? {
            (2, Field::Len(_)) => n += 1,
            (2, v) => return Err(wrong("HeronDataTupleSet", 2, &v)),
            _ => return Ok(None),
        }
    }
    Ok(Some(n))
}

/// Reads a `HeronDataTupleSet`'s stream and finds its tuples.
#[inline]
pub fn split_data_set(buf: &[u8]) -> Result<DataSetRef<'_>, TupleError> {
    let (mut stream, mut dest_task, mut tuples_at) = (None, None, None);
    let mut keyed = false;
    // Encoders write the stream first, then the destination task if they name one; look
    // further only if they are not there.
    let mut head = fields(buf);
    if let Some(Ok((1, Field::Len(s)))) = head.next() {
        stream = Some(s);
        tuples_at = Some(buf.len() - head.remaining());
        if let Some(Ok((DEST_TASK_FIELD, Field::Varint(t)))) = head.next() {
            dest_task = Some(t as i32);
            tuples_at = Some(buf.len() - head.remaining());
            if let Some(Ok((KEYED_FIELD, Field::Varint(k)))) = head.next() {
                keyed = k != 0;
                tuples_at = Some(buf.len() - head.remaining());
            }
        }
    } else {
        for f in fields(buf) {
            match f? {
                (1, Field::Len(s)) => stream = Some(s),
                (1, v) => return Err(wrong("HeronDataTupleSet", 1, &v)),
                (DEST_TASK_FIELD, Field::Varint(t)) => dest_task = Some(t as i32),
                (DEST_TASK_FIELD, v) => {
                    return Err(wrong("HeronDataTupleSet", DEST_TASK_FIELD, &v))
                }
                (KEYED_FIELD, Field::Varint(k)) => keyed = k != 0,
                (KEYED_FIELD, v) => return Err(wrong("HeronDataTupleSet", KEYED_FIELD, &v)),
                _ => {}
            }
        }
    }
    let stream = stream.ok_or(TupleError::Missing("HeronDataTupleSet.stream"))?;
    let (mut id, mut component) = (None, None);
    for f in fields(stream) {
        match f? {
            (1, Field::Len(s)) => id = Some(s),
            (2, Field::Len(s)) => component = Some(s),
            (n @ 1..=2, v) => return Err(wrong("StreamId", n, &v)),
            _ => {}
        }
    }
    fn utf8<'a>(b: Option<&'a [u8]>, what: &'static str) -> Result<&'a str, TupleError> {
        std::str::from_utf8(b.ok_or(TupleError::Missing(what))?).map_err(|_| TupleError::Utf8(what))
    }
    Ok(DataSetRef {
        stream: utf8(id, "StreamId.id")?,
        component: utf8(component, "StreamId.component_name")?,
        dest_task,
        keyed,
        body: buf,
        tuples_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::StreamId;
    use crate::codec::HeronCodec;
    use crate::system::HeronTupleSet;
    use crate::system::{HeronDataTuple, HeronDataTupleSet};
    use crate::tuple::{check_tuple, put_data_tuple, values};
    use crate::Message;
    use crate::Name;

    fn set(stream: &str, n: usize) -> HeronTupleSet {
        HeronTupleSet {
            data: Some(HeronDataTupleSet {
                stream: StreamId {
                    id: stream.into(),
                    component_name: "c".into(),
                },
                tuples: (0..n)
                    .map(|k| HeronDataTuple {
                        key: k as i64,
                        values: vec![bytes::Bytes::from_static(b"\x04a")],
                        dest_task_ids: vec![5, -2],
                        ..Default::default()
                    })
                    .collect(),
            }),
            control: None,
            src_task_id: 4,
        }
    }

    #[test]
    fn a_tuple_set_splits_into_stream_and_tuple_bytes() {
        let s = set("default", 2);
        let bytes = s.encode_to_vec();
        let parts = split_tuple_set(&bytes).unwrap();
        assert!(parts.control.is_none());
        let data = split_data_set(parts.data.unwrap()).unwrap();
        assert_eq!((data.component, data.stream), ("c", "default"));
        assert_eq!(data.count(), 2);
        let mut seen = Vec::new();
        data.for_each_tuple(|t| {
            check_tuple(t)?;
            seen.push(t.to_vec());
            Ok(())
        })
        .unwrap();
        let tuples = &s.data.as_ref().unwrap().tuples;
        assert_eq!(seen[0], tuples[0].encode_to_vec());
        assert_eq!(seen[1], tuples[1].encode_to_vec());
        assert_eq!(values(&seen[0]).collect::<Vec<_>>(), vec![&b"\x04a"[..]]);
    }

    #[test]
    fn a_data_set_without_its_stream_is_refused() {
        // only a tuple field, no stream
        assert_eq!(
            split_data_set(&[0x12, 0]),
            Err(TupleError::Missing("HeronDataTupleSet.stream"))
        );
        assert_eq!(
            split_data_set(&[0x0a, 2, 0x0a, 0]),
            Err(TupleError::Missing("StreamId.component_name"))
        );
        assert_eq!(
            split_data_set(&[0x0a, 6, 0x0a, 1, 0xff, 0x12, 1, b'c']),
            Err(TupleError::Utf8("StreamId.id"))
        );
    }

    #[test]
    fn data_and_control_frames_are_heron_packets_prost_decodes() {
        let mut tuples = BytesMut::new();
        let v: &[u8] = b"\x04w";
        put_data_tuple(&mut tuples, &[(1, 2)], &[v], &[7]);
        put_data_tuple(&mut tuples, &[], &[v], &[]);
        let stream = stream_field("words", "split");
        let mut out = BytesMut::new();
        put_data_set_frame(&mut out, &stream, &tuples, -7);
        put_control_set_frame(&mut out, &[], 3);
        let codec = HeronCodec::new(0);
        let packet = codec.decode_packet(&mut out).unwrap().unwrap();
        assert!(packet.reqid.is_zero());
        let set: HeronTupleSet = packet.decode().unwrap();
        assert_eq!(set.src_task_id, -7);
        assert!(set.control.is_none());
        let data = set.data.unwrap();
        assert_eq!(data.stream.id, "words");
        assert_eq!(data.stream.component_name, "split");
        assert_eq!(data.tuples.len(), 2);
        assert_eq!(data.tuples[0].dest_task_ids, vec![7]);
        let set: HeronTupleSet = codec
            .decode_packet(&mut out)
            .unwrap()
            .unwrap()
            .decode()
            .unwrap();
        assert_eq!(set.src_task_id, 3);
        assert!(set.data.is_none() && set.control.is_some());
        assert!(out.is_empty(), "exactly two packets");
    }

    #[test]
    fn a_set_for_one_task_names_it_and_prost_reads_it_as_heron_does() {
        let mut tuples = BytesMut::new();
        let v: &[u8] = b"\x04w";
        for task in [9, 9] {
            put_data_tuple(&mut tuples, &[], &[v], &[task]);
        }
        let stream = stream_field("words", "split");
        for dest in [9, 0, 300_000, -1] {
            let mut out = BytesMut::new();
            put_data_set_frame_to(&mut out, &stream, dest, dest == 9, &tuples, 4);
            let packet = HeronCodec::new(0).decode_packet(&mut out).unwrap().unwrap();
            // the stream manager's read: the task, the stream and the same tuples
            let data = split_tuple_set(&packet.payload).unwrap().data.unwrap();
            let set = split_data_set(data).unwrap();
            assert_eq!(
                (set.stream, set.dest_task, set.keyed, set.count()),
                ("words", Some(dest), dest == 9, 2)
            );
            let mut seen = Vec::new();
            set.for_each_tuple(|t| {
                seen.extend_from_slice(&[0x12, t.len() as u8]);
                seen.extend_from_slice(t);
                Ok(())
            })
            .unwrap();
            assert_eq!(seen, tuples);
            assert_eq!(set.tuple_block().unwrap(), Some((&tuples[..], 2)));
            // prost (as heronpy) skips the field it does not know
            let decoded: HeronTupleSet = packet.decode().unwrap();
            let d = decoded.data.unwrap();
            assert_eq!((d.stream.id.as_str(), d.tuples.len()), ("words", 2));
            assert_eq!(d.tuples[1].dest_task_ids, vec![9]);
        }
        // a plain set names none; the task is found after the tuples too
        let mut plain = stream.clone();
        plain.extend_from_slice(&tuples);
        let plain_set = split_data_set(&plain).unwrap();
        assert_eq!(plain_set.dest_task, None);
        assert_eq!(plain_set.tuple_block().unwrap(), Some((&tuples[..], 2)));
        // another field among the tuples: no block; a malformed tuple field: an error
        let mut mixed = plain.clone();
        mixed.extend_from_slice(&[0x18, 1]);
        assert_eq!(split_data_set(&mixed).unwrap().tuple_block().unwrap(), None);
        let mut bad = plain.clone();
        bad.extend_from_slice(&[0x12, 5, 1]);
        assert!(
            split_data_set(&bad).unwrap().tuple_block().is_err(),
            "truncated"
        );
        let mut late = tuples.to_vec();
        late.extend_from_slice(&stream);
        late.extend_from_slice(&[0xa0, 0x06, 5]);
        let late_set = split_data_set(&late).unwrap();
        assert_eq!(late_set.dest_task, Some(5));
        assert_eq!(
            late_set.tuple_block().unwrap(),
            None,
            "the stream is not first"
        );
        late.extend_from_slice(&[0xa2, 0x06, 0]);
        assert!(
            split_data_set(&late).is_err(),
            "the task as a length-delimited field"
        );
    }

    /// One piece of a block after a set's stream: a well-framed tuple field, or something the
    /// fast count must leave to the general walk.
    fn piece(kind: u8, len: usize) -> Vec<u8> {
        let mut b = Vec::new();
        match kind % 6 {
            // a tuple field as encoders write it, its length in one or two bytes
            0..=2 => {
                b.push(0x12);
                put_varint(&mut b, len as u64);
                b.resize(b.len() + len, 7);
            }
            // the same key written in two bytes (valid protobuf, not what encoders write)
            3 => {
                b.extend_from_slice(&[0x92, 0x00]);
                put_varint(&mut b, len as u64);
                b.resize(b.len() + len, 7);
            }
            // another field among the tuples
            4 => b.extend_from_slice(&[0x18, len as u8 & 0x7f]),
            // a tuple field cut short
            _ => {
                b.push(0x12);
                put_varint(&mut b, len as u64 + 1);
                b.resize(b.len() + len, 7);
            }
        }
        b
    }

    proptest::proptest! {
        /// The fast count never disagrees with the general walk, and takes every block of
        /// well-framed tuple fields.
        #[test]
        fn the_fast_tuple_count_agrees_with_the_general_walk(
            pieces in proptest::collection::vec((0u8..6, 0usize..200), 0..12),
            noise in proptest::collection::vec(proptest::num::u8::ANY, 0..40),
        ) {
            let mut block: Vec<u8> = pieces.iter().flat_map(|&(k, n)| piece(k, n)).collect();
            let general = walk_tuple_fields(&block);
            match count_tuple_fields(&block) {
                Some(n) => proptest::prop_assert_eq!(general, Ok(Some(n))),
                None => proptest::prop_assert!(
                    pieces.iter().any(|&(k, _)| k % 6 >= 3),
                    "only well-framed tuple fields, yet no fast count"
                ),
            }
            block.extend_from_slice(&noise);
            if let Some(n) = count_tuple_fields(&block) {
                proptest::prop_assert_eq!(walk_tuple_fields(&block), Ok(Some(n)));
            }
        }
    }

    #[test]
    fn the_type_name_is_the_messages() {
        assert_eq!(TUPLE_SET, HeronTupleSet::full_name());
    }
}
