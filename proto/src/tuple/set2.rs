//! The sets a stream manager sends: `heron.proto.system.HeronTupleSet2 { HeronDataTupleSet2
//! data = 1; HeronControlTupleSet control = 2; int32 src_task_id = 3 }` with
//! `HeronDataTupleSet2 { required StreamId stream = 1; repeated bytes tuples = 2 }`, to a
//! local instance as they are and to another stream manager inside
//! `heron.proto.stmgr.TupleStreamMessage { required int32 task_id = 1; required bytes set = 2;
//! required int32 src_task_id = 3; required int32 num_tuples = 4 }`.
//!
//! [`Set2Builder`] builds a data set in its wire form, tuple bytes copied unchanged, with room
//! kept in front for the headers that depend on its final length, so closing it writes a few
//! header bytes and copies nothing:
//!
//! ```text
//! [ GAP ][ 0x0a len StreamId ][ 0x12 len tuple ]...
//! ```
//!
//! [`parse_tuple_set2`] splits a received set for the instance: its data part is kept as a
//! slice of the packet whose tuples are read one at a time, its control part is left encoded.
//! As with prost, fields may come in any order, unknown fields are skipped, a repeated
//! message field merges (its occurrences are concatenated), missing fields are empty and
//! strings must be UTF-8.

use std::ops::Range;

use bytes::{BufMut, Bytes, BytesMut};

use super::fields::{
    fields, int32, key, len_delimited, put_varint, read_varint, skip, span, varint_len,
    write_varint, wrong, Field, LEN,
};
use super::TupleError;

/// Bytes kept free in front of a batch: the longest headers are
/// `0x08 task(10) 0x12 len(5)` for the `TupleStreamMessage` plus `0x0a len(5)` for the data set.
const GAP: usize = 32;
/// The longest trailer: `0x18 src(10) 0x20 count(5) 0xa0 0x06 txid(10)` plus the data set's
/// `0x18 src(10)`.
const TRAILER: usize = 40;
/// What a [`Set2Builder`] adds around its body at most.
pub const SET2_FRAMING: usize = GAP + TRAILER;

/// The field of `TupleStreamMessage` (and of `DownstreamStatefulCheckpoint`) in which a
/// heron-rs stream manager names, in `EFFECTIVELY_ONCE`, the restore (its txid) after which the
/// tuples were emitted: an extension, which Heron's readers and prost skip. A receiver drops
/// tuples of another restore, and holds those of its own restore until it may start.
pub const RESTORE_TXID_FIELD: u32 = 100;

/// The key one copy of a tuple gets (ATLEAST_ONCE): written over the tuple's `key` field at
/// `offset` (see [`super::tuple_key_offset`]), or appended as a new `key` field when the tuple
/// has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TupleKey {
    /// Where the tuple's 8 key bytes are, if it has a key field.
    pub offset: Option<usize>,
    /// The key.
    pub key: i64,
}

/// One data set being built in its wire form; reused for the life of a destination.
///
/// ```
/// use heron_proto::prost::Message;
/// use heron_proto::system::HeronTupleSet2;
/// use heron_proto::tuple::{stream_field, Set2Builder};
/// let mut b = Set2Builder::default();
/// b.open(&stream_field("default", "spout"));
/// b.push(b"\x09\0\0\0\0\0\0\0\0", None);
/// let set = HeronTupleSet2::decode(b.tuple_set(3)).unwrap();
/// assert_eq!((set.src_task_id, set.data.unwrap().tuples.len()), (3, 1));
/// ```
#[derive(Debug, Default)]
pub struct Set2Builder {
    buf: BytesMut,
    /// Start of the encoded message in `buf` (moves left as headers are written).
    start: usize,
    tuples: u32,
}

impl Set2Builder {
    /// Starts a new set of the stream whose encoded field is `stream_field`
    /// ([`super::stream_field`]), dropping what was there.
    #[inline]
    pub fn open(&mut self, stream_field: &[u8]) {
        self.buf.clear();
        self.buf.put_bytes(0, GAP);
        self.buf.put_slice(stream_field);
        self.start = GAP;
        self.tuples = 0;
    }

    /// The bytes [`Set2Builder::push`] adds for a tuple of `len` bytes given `key`.
    #[inline]
    pub fn entry_len(len: usize, key: Option<TupleKey>) -> usize {
        let len = len
            + if matches!(key, Some(TupleKey { offset: None, .. })) {
                9
            } else {
                0
            };
        1 + varint_len(len as u64) + len
    }

    /// Adds an encoded `HeronDataTuple`, with `key` if this copy gets one.
    #[inline]
    pub fn push(&mut self, tuple: &[u8], key: Option<TupleKey>) {
        self.buf.put_u8(0x12); // HeronDataTupleSet2.tuples: field 2, length-delimited
        match key {
            None => {
                put_varint(&mut self.buf, tuple.len() as u64);
                self.buf.put_slice(tuple);
            }
            Some(TupleKey {
                offset: Some(at),
                key,
            }) => {
                put_varint(&mut self.buf, tuple.len() as u64);
                let start = self.buf.len();
                self.buf.put_slice(tuple);
                self.buf[start + at..start + at + 8].copy_from_slice(&key.to_le_bytes());
            }
            Some(TupleKey { offset: None, key }) => {
                // No key field to overwrite: append one (the last occurrence wins).
                put_varint(&mut self.buf, tuple.len() as u64 + 9);
                self.buf.put_slice(tuple);
                self.buf.put_u8(0x09);
                self.buf.put_i64_le(key);
            }
        }
        self.tuples += 1;
    }

    /// Adds `n` tuples already encoded as this message's `tuples` fields (tag, length and
    /// tuple each, as [`super::DataSetRef::tuple_block`] finds them), unkeyed, in one copy.
    #[inline]
    pub fn push_entries(&mut self, entries: &[u8], n: u32) {
        self.buf.put_slice(entries);
        self.tuples += n;
    }

    /// The bytes of the data set so far (stream and tuples).
    #[inline]
    pub fn body_len(&self) -> usize {
        self.buf.len() - GAP
    }

    /// The number of tuples.
    #[inline]
    pub fn tuples(&self) -> u32 {
        self.tuples
    }

    #[inline]
    fn prepend(&mut self, tag: u8, value: u64) {
        let mut tmp = [0u8; 11];
        tmp[0] = tag;
        let n = 1 + write_varint(&mut tmp[1..], value);
        self.start -= n;
        self.buf[self.start..self.start + n].copy_from_slice(&tmp[..n]);
    }

    #[inline]
    fn append(&mut self, tag: u8, value: u64) {
        self.buf.put_u8(tag);
        put_varint(&mut self.buf, value);
    }

    /// Finishes the set as an encoded `HeronTupleSet2` from `src_task` (for a local instance).
    /// Call once per [`Set2Builder::open`].
    #[inline]
    pub fn tuple_set(&mut self, src_task: i32) -> &[u8] {
        let data_len = self.body_len() as u64;
        self.prepend(0x0a, data_len); // HeronTupleSet2.data
        self.append(0x18, int32(src_task)); // HeronTupleSet2.src_task_id
        &self.buf[self.start..]
    }

    /// Finishes the set as an encoded `TupleStreamMessage` to `dest_task` (for the stream
    /// manager that owns it), with `restore_txid` in [`RESTORE_TXID_FIELD`] when given.
    /// Call once per [`Set2Builder::open`], instead of [`Set2Builder::tuple_set`].
    #[inline]
    pub fn stream_message(
        &mut self,
        dest_task: i32,
        src_task: i32,
        restore_txid: Option<i64>,
    ) -> &[u8] {
        let set_len = self.tuple_set(src_task).len() as u64;
        self.prepend(0x12, set_len); // TupleStreamMessage.set
        self.prepend(0x08, int32(dest_task)); // TupleStreamMessage.task_id
        self.append(0x18, int32(src_task)); // TupleStreamMessage.src_task_id
        self.append(0x20, u64::from(self.tuples)); // TupleStreamMessage.num_tuples
        if let Some(txid) = restore_txid {
            put_varint(&mut self.buf, u64::from(RESTORE_TXID_FIELD << 3)); // varint field
            put_varint(&mut self.buf, txid as u64);
        }
        &self.buf[self.start..]
    }
}

/// Appends `HeronTupleSet2 { control: <control>, src_task_id }`, `control` being encoded
/// `HeronControlTupleSet` fields.
pub fn put_control_set2(out: &mut BytesMut, control: &[u8], src_task: i32) {
    put_set2(out, 2, control, src_task);
}

/// Appends `HeronTupleSet2 { data: <data>, src_task_id }`, `data` being an encoded
/// `HeronDataTupleSet2`.
pub fn put_data_set2(out: &mut BytesMut, data: &[u8], src_task: i32) {
    put_set2(out, 1, data, src_task);
}

#[inline]
fn put_set2(out: &mut BytesMut, field: u8, part: &[u8], src_task: i32) {
    out.reserve(1 + varint_len(part.len() as u64) + part.len() + 11);
    out.put_u8((field << 3) | 2); // HeronTupleSet2.data or .control
    put_varint(out, part.len() as u64);
    out.put_slice(part);
    out.put_u8(0x18); // HeronTupleSet2.src_task_id
    put_varint(out, int32(src_task));
}

/// Appends `TupleStreamMessage { task_id: dest_task, set, src_task_id, num_tuples }`, `set`
/// being an encoded `HeronTupleSet2`.
pub fn put_stream_message(out: &mut BytesMut, dest_task: i32, set: &[u8], src_task: i32, n: u32) {
    out.put_u8(0x08); // TupleStreamMessage.task_id
    put_varint(out, int32(dest_task));
    out.put_u8(0x12); // TupleStreamMessage.set
    put_varint(out, set.len() as u64);
    out.put_slice(set);
    out.put_u8(0x18); // TupleStreamMessage.src_task_id
    put_varint(out, int32(src_task));
    out.put_u8(0x20); // TupleStreamMessage.num_tuples
    put_varint(out, u64::from(n));
}

/// The parts of an encoded `HeronTupleSet2`, as slices ([`split_set2`]).
#[derive(Debug, Default, Clone, Copy)]
pub struct Set2Parts<'a> {
    /// `data`, encoded, if present.
    pub data: Option<&'a [u8]>,
    /// `control`, encoded, if present.
    pub control: Option<&'a [u8]>,
    /// `src_task_id`.
    pub src_task: i32,
}

/// Splits an encoded `HeronTupleSet2` (the last occurrence of each field wins).
#[inline]
pub fn split_set2(set: &[u8]) -> Result<Set2Parts<'_>, TupleError> {
    let mut parts = Set2Parts::default();
    for f in fields(set) {
        match f? {
            (1, Field::Len(d)) => parts.data = Some(d),
            (2, Field::Len(c)) => parts.control = Some(c),
            (3, Field::Varint(v)) => parts.src_task = v as i32,
            (n @ 1..=3, v) => return Err(wrong("HeronTupleSet2", n, &v)),
            _ => {}
        }
    }
    Ok(parts)
}

/// A `HeronTupleSet2` split into its parts by [`parse_tuple_set2`].
#[derive(Debug, Clone)]
pub struct ReceivedSet {
    /// The data tuples, if the set has a `data` field.
    pub data: Option<DataSet>,
    /// The encoded `HeronControlTupleSet`, if the set has a `control` field (not checked:
    /// decode it with prost).
    pub control: Option<Bytes>,
    /// The task that sent the set.
    pub src_task_id: i32,
}

/// The data part of a received set: the encoded `HeronDataTupleSet2`, a slice of the packet,
/// whose structure [`parse_tuple_set2`] checked.
#[derive(Debug, Clone)]
pub struct DataSet {
    data: Bytes,
    stream_id: Range<usize>,
    component: Range<usize>,
    src_task_id: i32,
    len: usize,
}

/// The occurrences of one length-delimited field: no allocation for the usual zero or one.
#[derive(Default)]
struct Occurrences {
    first: Option<Range<usize>>,
    more: Vec<Range<usize>>,
}

impl Occurrences {
    fn add(&mut self, at: Range<usize>) {
        if self.first.is_none() {
            self.first = Some(at);
        } else {
            self.more.push(at);
        }
    }

    /// The field's bytes: a slice of `payload` for one occurrence, the concatenation (which
    /// protobuf decodes as the merge) for several.
    fn bytes(self, payload: &Bytes) -> Option<Bytes> {
        let first = self.first?;
        if self.more.is_empty() {
            return Some(payload.slice(first));
        }
        let mut all = payload[first].to_vec();
        for at in self.more {
            all.extend_from_slice(&payload[at]);
        }
        Some(all.into())
    }
}

/// Splits a `HeronTupleSet2` payload, checking the structure of the set, of its data part and
/// of its stream id (not of the tuples, nor of the control part). No copy is made unless a
/// message field occurs more than once.
#[inline]
pub fn parse_tuple_set2(payload: &Bytes) -> Result<ReceivedSet, TupleError> {
    const M: &str = "HeronTupleSet2";
    let mut f = fields(payload);
    let (mut data, mut control) = (Occurrences::default(), Occurrences::default());
    let mut src_task_id = 0;
    while !f.is_empty() {
        match f.read()? {
            (1, Field::Len(d)) => data.add(span(payload, &f, d)),
            (2, Field::Len(c)) => control.add(span(payload, &f, c)),
            // int32: the low 32 bits of the varint, as prost reads it
            (3, Field::Varint(v)) => src_task_id = v as i32,
            (n @ 1..=3, v) => return Err(wrong(M, n, &v)),
            _ => {}
        }
    }
    let data = match data.bytes(payload) {
        Some(d) => Some(DataSet::parse(d, src_task_id)?),
        None => None,
    };
    Ok(ReceivedSet {
        data,
        control: control.bytes(payload),
        src_task_id,
    })
}

/// Reads a `StreamId` at `base` in its enclosing message into the ranges of its strings
/// (a later occurrence of a field replaces an earlier one).
fn parse_stream_id(
    stream: &[u8],
    base: usize,
    id: &mut Range<usize>,
    component: &mut Range<usize>,
) -> Result<(), TupleError> {
    let mut f = fields(stream);
    while !f.is_empty() {
        match f.read()? {
            (n @ 1..=2, Field::Len(s)) => {
                let what = if n == 1 {
                    "StreamId.id"
                } else {
                    "StreamId.component_name"
                };
                std::str::from_utf8(s).map_err(|_| TupleError::Utf8(what))?;
                let at = span(stream, &f, s);
                let at = base + at.start..base + at.end;
                if n == 1 {
                    *id = at;
                } else {
                    *component = at;
                }
            }
            (n @ 1..=2, v) => return Err(wrong("StreamId", n, &v)),
            _ => {}
        }
    }
    Ok(())
}

impl DataSet {
    #[inline]
    fn parse(data: Bytes, src_task_id: i32) -> Result<DataSet, TupleError> {
        const M: &str = "HeronDataTupleSet2";
        let (mut stream_id, mut component) = (0..0, 0..0);
        let mut len = 0;
        let mut f = fields(&data);
        while !f.is_empty() {
            if f.skip_len_field(key(2, LEN)) {
                len += 1;
                continue;
            }
            match f.read()? {
                (1, Field::Len(stream)) => {
                    let at = span(&data, &f, stream);
                    parse_stream_id(stream, at.start, &mut stream_id, &mut component)?;
                }
                (2, Field::Len(_)) => len += 1,
                (n @ 1..=2, v) => return Err(wrong(M, n, &v)),
                _ => {}
            }
        }
        Ok(DataSet {
            data,
            stream_id,
            component,
            src_task_id,
            len,
        })
    }

    fn str_at(&self, at: &Range<usize>) -> &str {
        // checked by `parse_stream_id`
        std::str::from_utf8(&self.data[at.clone()]).unwrap_or_default()
    }

    /// The stream id (empty if the set has none).
    pub fn stream_id(&self) -> &str {
        self.str_at(&self.stream_id)
    }

    /// The component that emitted the tuples (empty if the set has none).
    pub fn component(&self) -> &str {
        self.str_at(&self.component)
    }

    /// The task that sent the set.
    pub fn src_task_id(&self) -> i32 {
        self.src_task_id
    }

    /// The number of tuples.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when the set has no tuples.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The serialized `HeronDataTuple`s, in order, as slices of the packet.
    #[inline]
    pub fn tuples(&self) -> DataTuples<'_> {
        DataTuples { buf: &self.data }
    }
}

/// The serialized tuples of a [`DataSet`], in order.
#[derive(Debug, Clone)]
pub struct DataTuples<'a> {
    buf: &'a [u8],
}

impl<'a> Iterator for DataTuples<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        // The structure was checked when the set was parsed: an error cannot happen here,
        // and would end the iteration.
        while !self.buf.is_empty() {
            let k = read_varint(&mut self.buf).ok()?;
            if k == 0x12 {
                return len_delimited(&mut self.buf).ok();
            }
            skip(&mut self.buf, k).ok()?;
        }
        None
    }
}

#[cfg(test)]
mod tests;
