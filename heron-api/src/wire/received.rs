//! Tuple sets as an instance receives them, read by hand: a `HeronTupleSet2` payload is split
//! into its data part, kept as a slice of the packet whose tuples are read one at a time, and
//! its control part, left encoded for prost. Message layouts (`tuple.proto`, `topology.proto`):
//! `HeronTupleSet2 { HeronDataTupleSet2 data = 1; HeronControlTupleSet control = 2;
//! int32 src_task_id = 3 }`, `HeronDataTupleSet2 { StreamId stream = 1; repeated bytes
//! tuples = 2 }`, `StreamId { string id = 1; string component_name = 2 }`.
//!
//! As with prost, fields may come in any order, unknown fields are skipped, a repeated
//! message field merges (its occurrences are concatenated), missing fields are empty and
//! strings must be UTF-8. The tuples themselves are not looked into here.

use std::ops::Range;

use bytes::Bytes;

use super::{split_key, Reader, WireError, WIRE_LEN, WIRE_VARINT};

/// A `HeronTupleSet2` split into its parts by [`parse_tuple_set2`].
#[doc(hidden)]
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
#[doc(hidden)]
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

/// Where the slice `field`, just read by `r` from `base`, lies in `base`.
fn span(base: &[u8], r: &Reader<'_>, field: &[u8]) -> Range<usize> {
    let end = base.len() - r.buf.len();
    end - field.len()..end
}

/// Splits a `HeronTupleSet2` payload, checking the structure of the set, of its data part and
/// of its stream id (not of the tuples, nor of the control part). No copy is made unless a
/// message field occurs more than once.
#[doc(hidden)]
pub fn parse_tuple_set2(payload: &Bytes) -> Result<ReceivedSet, WireError> {
    let mut r = Reader { buf: payload };
    let (mut data, mut control) = (Occurrences::default(), Occurrences::default());
    let mut src_task_id = 0;
    while !r.buf.is_empty() {
        let k = r.varint()?;
        match split_key(k)? {
            (1, WIRE_LEN) => {
                let field = r.len_delimited()?;
                data.add(span(payload, &r, field));
            }
            (2, WIRE_LEN) => {
                let field = r.len_delimited()?;
                control.add(span(payload, &r, field));
            }
            // int32: the low 32 bits of the varint, as prost reads it
            (3, WIRE_VARINT) => src_task_id = r.varint()? as i32,
            (1..=3, _) => return Err(WireError::WireType(k >> 3)),
            (_, wire) => r.skip(wire, k)?,
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
) -> Result<(), WireError> {
    let mut r = Reader { buf: stream };
    while !r.buf.is_empty() {
        let k = r.varint()?;
        let (field, wire) = split_key(k)?;
        match (field, wire) {
            (1 | 2, WIRE_LEN) => {
                let s = r.len_delimited()?;
                std::str::from_utf8(s).map_err(|_| WireError::InvalidUtf8(field))?;
                let at = span(stream, &r, s);
                let at = base + at.start..base + at.end;
                if field == 1 {
                    *id = at;
                } else {
                    *component = at;
                }
            }
            (1 | 2, _) => return Err(WireError::WireType(field)),
            _ => r.skip(wire, k)?,
        }
    }
    Ok(())
}

impl DataSet {
    fn parse(data: Bytes, src_task_id: i32) -> Result<DataSet, WireError> {
        let (mut stream_id, mut component) = (0..0, 0..0);
        let mut len = 0;
        let mut r = Reader { buf: &data };
        while !r.buf.is_empty() {
            let k = r.varint()?;
            match split_key(k)? {
                (1, WIRE_LEN) => {
                    let stream = r.len_delimited()?;
                    let at = span(&data, &r, stream);
                    parse_stream_id(stream, at.start, &mut stream_id, &mut component)?;
                }
                (2, WIRE_LEN) => {
                    r.len_delimited()?;
                    len += 1;
                }
                (1 | 2, _) => return Err(WireError::WireType(k >> 3)),
                (_, wire) => r.skip(wire, k)?,
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
    pub fn tuples(&self) -> DataTuples<'_> {
        DataTuples {
            r: Reader { buf: &self.data },
        }
    }
}

/// The serialized tuples of a [`DataSet`].
#[doc(hidden)]
pub struct DataTuples<'a> {
    r: Reader<'a>,
}

impl<'a> Iterator for DataTuples<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        // The structure was checked when the set was parsed: an error cannot happen here,
        // and would end the iteration.
        while !self.r.buf.is_empty() {
            let k = self.r.varint().ok()?;
            let (field, wire) = split_key(k).ok()?;
            if (field, wire) == (2, WIRE_LEN) {
                return self.r.len_delimited().ok();
            }
            self.r.skip(wire, k).ok()?;
        }
        None
    }
}

#[cfg(test)]
mod tests;
