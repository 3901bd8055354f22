//! The protobuf wire format of `tuple.proto`'s data tuples, written and read by hand on the
//! hot path: an emit appends its `HeronDataTuple` straight to a byte buffer and a closed set
//! becomes a whole Heron packet with one copy, with no per-tuple allocation; the receiving
//! side reads values out of the encoding in place. Message layouts are those of
//! `heron.proto.system.{HeronTupleSet, HeronDataTupleSet, HeronDataTuple, RootId}` and
//! `heron.proto.api.StreamId`; the tests check everything against prost.

use bytes::{BufMut, BytesMut};
use heron_proto::system::HeronTupleSet;
use heron_proto::Name;

use crate::{Value, ValueError};

const WIRE_VARINT: u8 = 0;
const WIRE_FIXED64: u8 = 1;
const WIRE_LEN: u8 = 2;
const WIRE_FIXED32: u8 = 5;

const fn key(field: u8, wire: u8) -> u8 {
    (field << 3) | wire
}

pub(crate) use heron_proto::wire::{int32 as int32_varint, put_varint, varint_len};

/// The encoded `StreamId` message, as the `stream` field (1) of a `HeronDataTupleSet`.
pub(crate) fn stream_field(id: &str, component: &str) -> Vec<u8> {
    let mut inner = BytesMut::new();
    inner.put_u8(key(1, WIRE_LEN));
    put_varint(&mut inner, id.len() as u64);
    inner.put_slice(id.as_bytes());
    inner.put_u8(key(2, WIRE_LEN));
    put_varint(&mut inner, component.len() as u64);
    inner.put_slice(component.as_bytes());
    let mut out = BytesMut::new();
    out.put_u8(key(1, WIRE_LEN));
    put_varint(&mut out, inner.len() as u64);
    out.put_slice(&inner);
    out.to_vec()
}

fn root_len(taskid: i32) -> usize {
    1 + varint_len(int32_varint(taskid)) + 1 + 8
}

/// Appends one `HeronDataTuple` (key 0) as field 2 (`tuples`) of a `HeronDataTupleSet`.
/// Returns the number of bytes written.
pub(crate) fn put_data_tuple(
    buf: &mut BytesMut,
    roots: &[(i32, i64)],
    values: &[Value],
    dest_task_ids: &[i32],
) -> usize {
    let mut len = 1 + 8; // key
    for &(taskid, _) in roots {
        let r = root_len(taskid);
        len += 1 + varint_len(r as u64) + r;
    }
    for v in values {
        let n = v.encoded_len();
        len += 1 + varint_len(n as u64) + n;
    }
    for &t in dest_task_ids {
        len += 1 + varint_len(int32_varint(t));
    }
    let total = 1 + varint_len(len as u64) + len;
    buf.reserve(total);
    buf.put_u8(key(2, WIRE_LEN));
    put_varint(buf, len as u64);
    buf.put_u8(key(1, WIRE_FIXED64));
    buf.put_i64_le(0);
    for &(taskid, k) in roots {
        buf.put_u8(key(2, WIRE_LEN));
        put_varint(buf, root_len(taskid) as u64);
        buf.put_u8(key(1, WIRE_VARINT));
        put_varint(buf, int32_varint(taskid));
        buf.put_u8(key(2, WIRE_FIXED64));
        buf.put_i64_le(k);
    }
    for v in values {
        buf.put_u8(key(3, WIRE_LEN));
        put_varint(buf, v.encoded_len() as u64);
        v.encode_to(buf);
    }
    for &t in dest_task_ids {
        buf.put_u8(key(4, WIRE_VARINT));
        put_varint(buf, int32_varint(t));
    }
    total
}

/// Appends a whole Heron packet carrying a `HeronTupleSet` whose data set has the encoded
/// `stream` field and the encoded `tuples`.
pub(crate) fn put_data_set_frame(out: &mut BytesMut, stream: &[u8], tuples: &[u8], src_task: i32) {
    put_tuple_set_frame(out, 1, [stream, tuples], src_task);
}

/// Appends a whole Heron packet carrying a `HeronTupleSet` from `src_task` with one message
/// field: `data` (1) or `control` (2), encoded as the concatenation of `parts`.
pub(crate) fn put_tuple_set_frame(out: &mut BytesMut, field: u8, parts: [&[u8]; 2], src_task: i32) {
    let data_len = parts[0].len() + parts[1].len();
    let src = int32_varint(src_task);
    let payload = 1 + varint_len(data_len as u64) + data_len + 1 + varint_len(src);
    let name = HeronTupleSet::full_name();
    let data_size = 4 + name.len() + 32 + 4 + payload;
    out.reserve(4 + data_size);
    out.put_u32(data_size as u32);
    out.put_i32(name.len() as i32);
    out.put_slice(name.as_bytes());
    out.put_bytes(0, 32);
    out.put_i32(payload as i32);
    out.put_u8(key(field, WIRE_LEN));
    put_varint(out, data_len as u64);
    out.put_slice(parts[0]);
    out.put_slice(parts[1]);
    out.put_u8(key(3, WIRE_VARINT));
    put_varint(out, src);
}

/// Why bytes are not a `HeronDataTuple`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// A field runs past the end of the message.
    #[error("truncated protobuf field")]
    Truncated,
    /// A varint longer than 10 bytes.
    #[error("varint longer than 10 bytes")]
    VarintTooLong,
    /// A field key with an unsupported wire type or field number 0.
    #[error("invalid protobuf field key {0}")]
    BadKey(u64),
    /// A known field with the wrong wire type.
    #[error("field {0} has the wrong wire type")]
    WireType(u64),
    /// A value does not decode.
    #[error("bad value: {0}")]
    Value(#[from] ValueError),
    /// A string field (its number) that is not UTF-8.
    #[error("string field {0} is not valid UTF-8")]
    InvalidUtf8(u64),
}

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    #[inline]
    fn varint(&mut self) -> Result<u64, WireError> {
        // keys and short lengths: one byte
        if let Some((&b, rest)) = self.buf.split_first() {
            if b < 0x80 {
                self.buf = rest;
                return Ok(u64::from(b));
            }
        }
        let mut v = 0u64;
        for i in 0..10 {
            let (&b, rest) = self.buf.split_first().ok_or(WireError::Truncated)?;
            self.buf = rest;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(WireError::VarintTooLong)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.buf.len() < n {
            return Err(WireError::Truncated);
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn fixed64(&mut self) -> Result<i64, WireError> {
        Ok(i64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    fn len_delimited(&mut self) -> Result<&'a [u8], WireError> {
        let n = self.varint()?;
        self.take(usize::try_from(n).map_err(|_| WireError::Truncated)?)
    }

    /// Skips a field of an unknown number.
    fn skip(&mut self, wire: u8, k: u64) -> Result<(), WireError> {
        match wire {
            WIRE_VARINT => self.varint().map(drop),
            WIRE_FIXED64 => self.take(8).map(drop),
            WIRE_LEN => self.len_delimited().map(drop),
            WIRE_FIXED32 => self.take(4).map(drop),
            _ => Err(WireError::BadKey(k)),
        }
    }
}

fn split_key(k: u64) -> Result<(u64, u8), WireError> {
    let field = k >> 3;
    if field == 0 {
        return Err(WireError::BadKey(k));
    }
    Ok((field, (k & 7) as u8))
}

fn decode_root(bytes: &[u8]) -> Result<(i32, i64), WireError> {
    let mut r = Reader { buf: bytes };
    let (mut taskid, mut rkey) = (0i32, 0i64);
    while !r.buf.is_empty() {
        let k = r.varint()?;
        match split_key(k)? {
            (1, WIRE_VARINT) => taskid = r.varint()? as i32,
            (2, WIRE_FIXED64) => rkey = r.fixed64()?,
            (1 | 2, _) => return Err(WireError::WireType(k >> 3)),
            (_, wire) => r.skip(wire, k)?,
        }
    }
    Ok((taskid, rkey))
}

/// Walks a serialized `HeronDataTuple`, handing each root to `root` and each encoded value
/// to `value`; returns its key. Destination task ids and unknown fields are skipped.
fn walk_data_tuple<'a>(
    bytes: &'a [u8],
    mut root: impl FnMut((i32, i64)),
    mut value: impl FnMut(&'a [u8]) -> Result<(), ValueError>,
) -> Result<i64, WireError> {
    let mut r = Reader { buf: bytes };
    let mut tuple_key = 0;
    while !r.buf.is_empty() {
        let k = r.varint()?;
        match split_key(k)? {
            (1, WIRE_FIXED64) => tuple_key = r.fixed64()?,
            (2, WIRE_LEN) => root(decode_root(r.len_delimited()?)?),
            (3, WIRE_LEN) => value(r.len_delimited()?)?,
            (1..=3, _) => return Err(WireError::WireType(k >> 3)),
            (_, wire) => r.skip(wire, k)?,
        }
    }
    Ok(tuple_key)
}

/// Decodes a serialized `HeronDataTuple` in place: its values are appended to `values`,
/// its roots to `roots`; returns its key. Destination task ids are skipped.
#[doc(hidden)]
pub fn decode_data_tuple(
    bytes: &[u8],
    values: &mut Vec<Value>,
    roots: &mut Vec<(i32, i64)>,
) -> Result<i64, WireError> {
    walk_data_tuple(
        bytes,
        |r| roots.push(r),
        |v| {
            values.push(Value::decode(v)?);
            Ok(())
        },
    )
}

/// Decodes a serialized `HeronDataTuple` over the previous contents of `values`: value `i`
/// is decoded into `values[i]` (reusing its string or bytes buffer, see
/// [`Value::decode_in_place`]) and `values` ends with exactly the tuple's values. Roots go
/// to `root`; returns the key. On error `values` holds a mix of old and new values.
pub(crate) fn decode_data_tuple_over(
    bytes: &[u8],
    values: &mut Vec<Value>,
    root: impl FnMut((i32, i64)),
) -> Result<i64, WireError> {
    let mut n = 0;
    let key = walk_data_tuple(bytes, root, |v| {
        match values.get_mut(n) {
            Some(slot) => slot.decode_in_place(v)?,
            None => values.push(Value::decode(v)?),
        }
        n += 1;
        Ok(())
    })?;
    values.truncate(n);
    Ok(key)
}

mod received;
pub use received::{parse_tuple_set2, DataSet, DataTuples, ReceivedSet};

/// The prost form of a data tuple, for tests that check the hand-written codecs against prost.
#[cfg(test)]
pub(crate) fn prost_data_tuple(
    key: i64,
    roots: &[(i32, i64)],
    values: &[Value],
    dest_task_ids: &[i32],
) -> heron_proto::system::HeronDataTuple {
    heron_proto::system::HeronDataTuple {
        key,
        roots: roots
            .iter()
            .map(|&(taskid, key)| heron_proto::system::RootId { taskid, key })
            .collect(),
        values: values
            .iter()
            .map(|v| {
                let mut b = Vec::new();
                v.encode(&mut b);
                b.into()
            })
            .collect(),
        dest_task_ids: dest_task_ids.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heron_proto::codec::HeronCodec;
    use heron_proto::system::{HeronDataTuple, RootId};
    use heron_proto::Message;

    #[test]
    fn varint_lengths() {
        for (v, n) in [
            (0u64, 1),
            (127, 1),
            (128, 2),
            (16383, 2),
            (16384, 3),
            (u64::MAX, 10),
        ] {
            assert_eq!(varint_len(v), n, "{v}");
            let mut b = BytesMut::new();
            put_varint(&mut b, v);
            assert_eq!(b.len(), n);
        }
    }

    fn sample() -> (Vec<(i32, i64)>, Vec<Value>, Vec<i32>) {
        (
            vec![(1, -5), (-3, i64::MAX)],
            vec![
                Value::from("word"),
                Value::Int(-1),
                Value::Null,
                Value::Bytes(vec![0; 300]),
            ],
            vec![7, -2, 100_000],
        )
    }

    #[test]
    fn data_tuple_encoding_matches_prost() {
        let (roots, values, dests) = sample();
        let mut buf = BytesMut::new();
        let n = put_data_tuple(&mut buf, &roots, &values, &dests);
        assert_eq!(n, buf.len());
        let expected = prost_data_tuple(0, &roots, &values, &dests);
        // Field 2 of the set: key byte, length, then the tuple.
        let mut r = Reader { buf: &buf[..] };
        assert_eq!(r.varint().unwrap(), 0x12);
        let inner = r.len_delimited().unwrap();
        assert!(r.buf.is_empty());
        assert_eq!(HeronDataTuple::decode(inner).unwrap(), expected);
        // prost writes the same bytes (dest_task_ids unpacked, as proto2 does).
        assert_eq!(inner, &expected.encode_to_vec()[..]);

        let (mut vs, mut rs) = (Vec::new(), Vec::new());
        assert_eq!(decode_data_tuple(inner, &mut vs, &mut rs), Ok(0));
        assert_eq!(vs, values);
        assert_eq!(rs, roots);
    }

    #[test]
    fn decoder_reads_prost_output_and_rejects_garbage() {
        let t = HeronDataTuple {
            key: 42,
            roots: vec![RootId { taskid: 3, key: 9 }],
            values: vec![vec![2, 1, 0, 0, 0, 0, 0, 0, 0].into()],
            dest_task_ids: vec![],
        };
        let (mut vs, mut rs) = (Vec::new(), Vec::new());
        assert_eq!(
            decode_data_tuple(&t.encode_to_vec(), &mut vs, &mut rs),
            Ok(42)
        );
        assert_eq!(vs, vec![Value::Int(1)]);
        assert_eq!(rs, vec![(3, 9)]);
        assert_eq!(
            decode_data_tuple(&[0x1a, 5, 4], &mut vs, &mut rs),
            Err(WireError::Truncated)
        );
        assert_eq!(
            decode_data_tuple(&[0x09, 1], &mut vs, &mut rs),
            Err(WireError::Truncated)
        );
        assert_eq!(
            decode_data_tuple(&[0x08, 1], &mut vs, &mut rs),
            Err(WireError::WireType(1))
        );
        assert!(matches!(
            decode_data_tuple(&[0x1a, 1, 9], &mut vs, &mut rs),
            Err(WireError::Value(_))
        ));
        assert_eq!(
            decode_data_tuple(&[0x00], &mut vs, &mut rs),
            Err(WireError::BadKey(0))
        );
        // Unknown fields are skipped.
        assert_eq!(
            decode_data_tuple(&[0x28, 5, 0x09, 1, 0, 0, 0, 0, 0, 0, 0], &mut vs, &mut rs),
            Ok(1)
        );
    }

    #[test]
    fn data_set_frame_is_a_heron_packet_prost_decodes() {
        let (roots, values, dests) = sample();
        let mut tuples = BytesMut::new();
        put_data_tuple(&mut tuples, &roots, &values, &dests);
        put_data_tuple(&mut tuples, &[], &values[..1], &[]);
        let stream = stream_field("words", "split");
        let mut out = BytesMut::new();
        put_data_set_frame(&mut out, &stream, &tuples, -7);
        let packet = HeronCodec::new(0).decode_packet(&mut out).unwrap().unwrap();
        assert!(out.is_empty(), "exactly one packet");
        assert!(packet.reqid.is_zero());
        let set: HeronTupleSet = packet.decode().unwrap();
        assert_eq!(set.src_task_id, -7);
        assert!(set.control.is_none());
        let data = set.data.unwrap();
        assert_eq!(data.stream.id, "words");
        assert_eq!(data.stream.component_name, "split");
        assert_eq!(data.tuples.len(), 2);
        assert_eq!(data.tuples[0].dest_task_ids, dests);
        assert_eq!(data.tuples[1].roots, vec![]);
    }
}
