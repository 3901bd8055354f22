//! Protobuf wire format, read and written by hand on the hot path.
//!
//! Decoding a `HeronTupleSet` with prost would allocate a `Vec` per tuple (for its values and
//! roots) and re-encoding would copy every value again. The stream manager only needs to find
//! each tuple's bytes, look at a few of its fields (grouping values, direct targets) and copy
//! the bytes on unchanged, so it walks the encoding in place: no allocation per tuple.
//!
//! Only the wire format is used here (varints, tags, length-delimited fields); the message
//! layouts are those of `tuple.proto` (`HeronTupleSet`, `HeronDataTupleSet`, `HeronDataTuple`,
//! `RootId`, `StreamId`).

/// Why bytes are not a valid encoding of the expected message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum WireError {
    /// A field runs past the end of its message.
    #[error("truncated protobuf field")]
    Truncated,
    /// A varint has more than 10 bytes.
    #[error("varint longer than 10 bytes")]
    VarintTooLong,
    /// A field key is invalid (field number 0, or a group wire type).
    #[error("invalid protobuf field key {0}")]
    BadKey(u64),
    /// A known field has the wrong wire type.
    #[error("field {field} of {message} has wire type {wire_type}")]
    WireType {
        /// The message being read.
        message: &'static str,
        /// The field number.
        field: u32,
        /// The wire type found.
        wire_type: u8,
    },
    /// A required field is absent.
    #[error("{0} is missing")]
    Missing(&'static str),
    /// A string field is not UTF-8.
    #[error("{0} is not UTF-8")]
    Utf8(&'static str),
}

/// One field's value as it is on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1.
    Fixed64(u64),
    /// Wire type 2: bytes, strings, sub-messages, packed repeated fields.
    Len(&'a [u8]),
    /// Wire type 5.
    Fixed32(u32),
}

impl Value<'_> {
    fn wire_type(&self) -> u8 {
        match self {
            Value::Varint(_) => 0,
            Value::Fixed64(_) => 1,
            Value::Len(_) => 2,
            Value::Fixed32(_) => 5,
        }
    }
}

/// Reads a varint off the front of `buf`.
#[inline]
pub(crate) fn read_varint(buf: &mut &[u8]) -> Result<u64, WireError> {
    // Tags and short lengths are one byte.
    if let Some(&b) = buf.first() {
        if b < 0x80 {
            *buf = &buf[1..];
            return Ok(u64::from(b));
        }
    }
    let mut value = 0u64;
    for i in 0..10 {
        let Some(&b) = buf.get(i) else {
            return Err(WireError::Truncated);
        };
        value |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            *buf = &buf[i + 1..];
            return Ok(value);
        }
    }
    Err(WireError::VarintTooLong)
}

fn take<'a>(buf: &mut &'a [u8], n: usize) -> Result<&'a [u8], WireError> {
    if buf.len() < n {
        return Err(WireError::Truncated);
    }
    let (head, tail) = buf.split_at(n);
    *buf = tail;
    Ok(head)
}

/// The fields of one message, in wire order. Stops after the first error.
pub(crate) struct Fields<'a> {
    buf: &'a [u8],
}

/// Iterates over the fields encoded in `buf`.
pub(crate) fn fields(buf: &[u8]) -> Fields<'_> {
    Fields { buf }
}

impl<'a> Fields<'a> {
    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    #[inline]
    fn read(&mut self) -> Result<(u32, Value<'a>), WireError> {
        let key = read_varint(&mut self.buf)?;
        let field = key >> 3;
        if field == 0 || field > u64::from(u32::MAX >> 3) {
            return Err(WireError::BadKey(key));
        }
        let value = match key & 7 {
            0 => Value::Varint(read_varint(&mut self.buf)?),
            1 => {
                let b = take(&mut self.buf, 8)?;
                Value::Fixed64(u64::from_le_bytes(b.try_into().expect("8 bytes")))
            }
            2 => {
                let len = read_varint(&mut self.buf)?;
                let len = usize::try_from(len).map_err(|_| WireError::Truncated)?;
                Value::Len(take(&mut self.buf, len)?)
            }
            5 => {
                let b = take(&mut self.buf, 4)?;
                Value::Fixed32(u32::from_le_bytes(b.try_into().expect("4 bytes")))
            }
            _ => return Err(WireError::BadKey(key)),
        };
        Ok((field as u32, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>), WireError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() {
            return None;
        }
        let r = self.read();
        if r.is_err() {
            self.buf = &[];
        }
        Some(r)
    }
}

fn wrong(message: &'static str, field: u32, value: &Value<'_>) -> WireError {
    WireError::WireType {
        message,
        field,
        wire_type: value.wire_type(),
    }
}

/// The parts of a `HeronTupleSet` (instance -> stmgr), still encoded.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TupleSetParts<'a> {
    /// The encoded `HeronDataTupleSet`, if any.
    pub data: Option<&'a [u8]>,
    /// The encoded `HeronControlTupleSet`, if any.
    pub control: Option<&'a [u8]>,
}

/// Splits a `HeronTupleSet` into its data and control sets (the last occurrence of each wins).
pub(crate) fn split_tuple_set(buf: &[u8]) -> Result<TupleSetParts<'_>, WireError> {
    const M: &str = "HeronTupleSet";
    let mut parts = TupleSetParts::default();
    for f in fields(buf) {
        match f? {
            (1, Value::Len(d)) => parts.data = Some(d),
            (2, Value::Len(c)) => parts.control = Some(c),
            (3, Value::Varint(_)) => {}
            (n @ 1..=3, v) => return Err(wrong(M, n, &v)),
            _ => {}
        }
    }
    Ok(parts)
}

/// A `HeronDataTupleSet`: its stream and its still-encoded tuples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DataSet<'a> {
    /// The producing component (`StreamId.component_name`).
    pub component: &'a str,
    /// The stream id (`StreamId.id`).
    pub stream: &'a str,
    body: &'a [u8],
}

impl<'a> DataSet<'a> {
    /// Calls `f` with the encoded bytes of every `HeronDataTuple`, in order.
    pub fn for_each_tuple(
        &self,
        mut f: impl FnMut(&'a [u8]) -> Result<(), WireError>,
    ) -> Result<(), WireError> {
        for field in fields(self.body) {
            match field? {
                (2, Value::Len(t)) => f(t)?,
                (2, v) => return Err(wrong("HeronDataTupleSet", 2, &v)),
                _ => {}
            }
        }
        Ok(())
    }

    /// The number of tuples, for counting what is dropped.
    pub fn count(&self) -> u64 {
        fields(self.body)
            .filter(|f| matches!(f, Ok((2, _))))
            .count() as u64
    }
}

/// Reads a `HeronDataTupleSet`'s stream and finds its tuples.
pub(crate) fn split_data_set(buf: &[u8]) -> Result<DataSet<'_>, WireError> {
    let mut stream = None;
    // Encoders write the stream first; look further only if it is not there.
    if let Some(Ok((1, Value::Len(s)))) = fields(buf).next() {
        stream = Some(s);
    } else {
        for f in fields(buf) {
            match f? {
                (1, Value::Len(s)) => stream = Some(s),
                (1, v) => return Err(wrong("HeronDataTupleSet", 1, &v)),
                _ => {}
            }
        }
    }
    let stream = stream.ok_or(WireError::Missing("HeronDataTupleSet.stream"))?;
    let (mut id, mut component) = (None, None);
    for f in fields(stream) {
        match f? {
            (1, Value::Len(s)) => id = Some(s),
            (2, Value::Len(s)) => component = Some(s),
            (n @ 1..=2, v) => return Err(wrong("StreamId", n, &v)),
            _ => {}
        }
    }
    fn utf8<'a>(b: Option<&'a [u8]>, what: &'static str) -> Result<&'a str, WireError> {
        std::str::from_utf8(b.ok_or(WireError::Missing(what))?).map_err(|_| WireError::Utf8(what))
    }
    Ok(DataSet {
        stream: utf8(id, "StreamId.id")?,
        component: utf8(component, "StreamId.component_name")?,
        body: buf,
    })
}

/// Checks that `tuple` is a well-formed `HeronDataTuple`, so that what is forwarded parses.
pub(crate) fn check_tuple(tuple: &[u8]) -> Result<(), WireError> {
    const M: &str = "HeronDataTuple";
    for f in fields(tuple) {
        match f? {
            (1, Value::Fixed64(_)) | (3, Value::Len(_)) | (4, Value::Varint(_)) => {}
            (2, Value::Len(root)) => check_root(root)?,
            (4, Value::Len(mut packed)) => {
                while !packed.is_empty() {
                    read_varint(&mut packed)?;
                }
            }
            (n @ 1..=4, v) => return Err(wrong(M, n, &v)),
            _ => {}
        }
    }
    Ok(())
}

fn check_root(root: &[u8]) -> Result<(), WireError> {
    for f in fields(root) {
        match f? {
            (1, Value::Varint(_)) | (2, Value::Fixed64(_)) => {}
            (n @ 1..=2, v) => return Err(wrong("RootId", n, &v)),
            _ => {}
        }
    }
    Ok(())
}

/// Roots a [`TupleScan`] keeps inline; a tuple with more is walked again for them.
pub(crate) const INLINE_ROOTS: usize = 4;
/// Values a [`TupleScan`] keeps (as ranges); a tuple with more is walked again for them.
pub(crate) const INLINE_VALUES: usize = 8;

/// What one walk over a tuple finds: that it is well formed (as [`check_tuple`]), where its
/// key is (as [`tuple_key_offset`]), its roots (as [`for_each_root`]) and its values (as
/// [`values`]).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct TupleScan {
    pub key_offset: Option<usize>,
    /// How many roots the tuple has.
    pub roots: usize,
    inline: [(i32, i64); INLINE_ROOTS],
    /// How many values the tuple has.
    values: usize,
    /// Where the first [`INLINE_VALUES`] values are in the tuple: (start, end).
    value_ranges: [(u32, u32); INLINE_VALUES],
}

impl TupleScan {
    /// Calls `f` with the serialized values of the scanned `tuple`, in schema order.
    #[inline]
    pub fn for_each_value<'t>(&self, tuple: &'t [u8], mut f: impl FnMut(&'t [u8])) {
        if self.values <= INLINE_VALUES {
            for &(start, end) in &self.value_ranges[..self.values] {
                f(&tuple[start as usize..end as usize]);
            }
        } else {
            values(tuple).for_each(f);
        }
    }

    /// Calls `f(taskid, key)` for every root of the scanned `tuple`.
    #[inline]
    pub fn for_each_root(&self, tuple: &[u8], mut f: impl FnMut(i32, i64)) {
        if self.roots <= INLINE_ROOTS {
            for &(task, key) in &self.inline[..self.roots] {
                f(task, key);
            }
        } else {
            for_each_root(tuple, f);
        }
    }
}

/// Checks `tuple` and collects its key offset, roots and value positions in one walk (the
/// data path needs the check and the values, at least once also the key and the roots).
pub(crate) fn scan_tuple(tuple: &[u8]) -> Result<TupleScan, WireError> {
    const M: &str = "HeronDataTuple";
    let mut scan = TupleScan::default();
    let mut f = Fields { buf: tuple };
    while !f.buf.is_empty() {
        match f.read()? {
            (1, Value::Fixed64(_)) => scan.key_offset = Some(tuple.len() - f.buf.len() - 8),
            (3, Value::Len(v)) => {
                if scan.values < INLINE_VALUES {
                    let end = tuple.len() - f.buf.len();
                    // a tuple is at most a packet, far below 4 GiB
                    scan.value_ranges[scan.values] = ((end - v.len()) as u32, end as u32);
                }
                scan.values += 1;
            }
            (4, Value::Varint(_)) => {}
            (2, Value::Len(root)) => {
                check_root(root)?;
                if scan.roots < INLINE_ROOTS {
                    scan.inline[scan.roots] = read_root(root);
                }
                scan.roots += 1;
            }
            (4, Value::Len(mut packed)) => {
                while !packed.is_empty() {
                    read_varint(&mut packed)?;
                }
            }
            (n @ 1..=4, v) => return Err(wrong(M, n, &v)),
            _ => {}
        }
    }
    Ok(scan)
}

/// The serialized values of a checked tuple, in schema order.
pub(crate) fn values(tuple: &[u8]) -> impl Iterator<Item = &[u8]> {
    fields(tuple).map_while(Result::ok).filter_map(|f| match f {
        (3, Value::Len(v)) => Some(v),
        _ => None,
    })
}

/// Calls `f` for every `dest_task_ids` entry of a checked tuple (packed or not).
pub(crate) fn for_each_dest_task(tuple: &[u8], mut f: impl FnMut(i32)) {
    for field in fields(tuple).map_while(Result::ok) {
        match field {
            // int32 on the wire is the sign-extended 64-bit varint; truncation restores it.
            (4, Value::Varint(v)) => f(v as i32),
            (4, Value::Len(mut packed)) => {
                while let Ok(v) = read_varint(&mut packed) {
                    f(v as i32);
                }
            }
            _ => {}
        }
    }
}

/// Where the 8 bytes of a checked tuple's `key` (field 1, sfixed64) are, if it has one (the
/// last occurrence, which is the one a parser keeps). Encoders write it first.
pub(crate) fn tuple_key_offset(tuple: &[u8]) -> Option<usize> {
    let mut found = None;
    let mut f = Fields { buf: tuple };
    while !f.buf.is_empty() {
        let Ok((n, v)) = f.read() else { break };
        if let (1, Value::Fixed64(_)) = (n, v) {
            found = Some(tuple.len() - f.buf.len() - 8);
        }
    }
    found
}

/// Calls `f(taskid, key)` for every root of a checked tuple; returns how many there were.
#[inline]
pub(crate) fn for_each_root(tuple: &[u8], mut f: impl FnMut(i32, i64)) -> usize {
    let mut n = 0;
    for field in fields(tuple).map_while(Result::ok) {
        if let (2, Value::Len(root)) = field {
            let (task, key) = read_root(root);
            f(task, key);
            n += 1;
        }
    }
    n
}

/// A checked `RootId`'s task id and key (missing fields read as 0).
pub(crate) fn read_root(root: &[u8]) -> (i32, i64) {
    let (mut task, mut key) = (0i32, 0i64);
    for field in fields(root).map_while(Result::ok) {
        match field {
            (1, Value::Varint(v)) => task = v as i32,
            (2, Value::Fixed64(v)) => key = v as i64,
            _ => {}
        }
    }
    (task, key)
}

pub(crate) use heron_proto::wire::{int32, put_varint, varint_len, write_varint};

#[cfg(test)]
mod tests {
    use super::*;
    use heron_proto::api::StreamId;
    use heron_proto::system::{HeronDataTuple, HeronDataTupleSet, HeronTupleSet, RootId};
    use heron_proto::Message;

    fn tuple(values: &[&[u8]], dest: &[i32]) -> HeronDataTuple {
        HeronDataTuple {
            key: 0,
            roots: vec![RootId { taskid: 3, key: -7 }],
            values: values
                .iter()
                .map(|v| bytes::Bytes::copy_from_slice(v))
                .collect(),
            dest_task_ids: dest.to_vec(),
        }
    }

    #[test]
    fn varints_round_trip() {
        for v in [0u64, 1, 127, 128, 300, 1 << 35, u64::MAX, int32(-1)] {
            let mut tmp = [0u8; 10];
            let n = write_varint(&mut tmp, v);
            assert_eq!(n, varint_len(v), "{v}");
            let mut s = &tmp[..n];
            assert_eq!(read_varint(&mut s).unwrap(), v);
            assert!(s.is_empty());
        }
        assert_eq!(varint_len(int32(-1)), 10);
        assert_eq!(
            read_varint(&mut &[0x80u8, 0x80][..]),
            Err(WireError::Truncated)
        );
        assert_eq!(
            read_varint(&mut &[0xffu8; 11][..]),
            Err(WireError::VarintTooLong)
        );
    }

    #[test]
    fn a_tuple_set_splits_into_stream_and_tuple_bytes() {
        let tuples = vec![
            tuple(&[b"\x04a", b"\x02\x01"], &[]),
            tuple(&[b"\x04b"], &[5, -2]),
        ];
        let set = HeronTupleSet {
            data: Some(HeronDataTupleSet {
                stream: StreamId {
                    id: "default".into(),
                    component_name: "spout".into(),
                },
                tuples: tuples.clone(),
            }),
            control: None,
            src_task_id: 4,
        };
        let bytes = set.encode_to_vec();
        let parts = split_tuple_set(&bytes).unwrap();
        assert!(parts.control.is_none());
        let data = split_data_set(parts.data.unwrap()).unwrap();
        assert_eq!((data.component, data.stream), ("spout", "default"));
        assert_eq!(data.count(), 2);
        let mut seen = Vec::new();
        data.for_each_tuple(|t| {
            check_tuple(t)?;
            seen.push(t.to_vec());
            Ok(())
        })
        .unwrap();
        assert_eq!(seen[0], tuples[0].encode_to_vec());
        assert_eq!(seen[1], tuples[1].encode_to_vec());
        let vals: Vec<&[u8]> = values(&seen[0]).collect();
        assert_eq!(vals, vec![&b"\x04a"[..], &b"\x02\x01"[..]]);
        let mut dest = Vec::new();
        for_each_dest_task(&seen[1], |t| dest.push(t));
        assert_eq!(dest, vec![5, -2]);
    }

    #[test]
    fn packed_dest_task_ids_are_read_too() {
        // field 4, wire type 2: [7, 300]
        let t = [0x22u8, 3, 7, 0xac, 0x02];
        check_tuple(&t).unwrap();
        let mut dest = Vec::new();
        for_each_dest_task(&t, |d| dest.push(d));
        assert_eq!(dest, vec![7, 300]);
    }

    #[test]
    fn malformed_tuples_are_refused() {
        // key with wire type 0 instead of fixed64
        assert!(matches!(
            check_tuple(&[0x08, 0x01]),
            Err(WireError::WireType { field: 1, .. })
        ));
        // value that runs past the end
        assert_eq!(check_tuple(&[0x1a, 5, 1, 2]), Err(WireError::Truncated));
        // field number 0
        assert!(matches!(
            check_tuple(&[0x00, 0x01]),
            Err(WireError::BadKey(0))
        ));
        // group wire type
        assert!(matches!(check_tuple(&[0x0b]), Err(WireError::BadKey(_))));
        // root with a bad key type
        assert!(check_tuple(&[0x12, 2, 0x11, 0x01]).is_err());
        // unknown fields are skipped
        check_tuple(&[0x28, 0x01, 0x1a, 0]).unwrap();
    }

    #[test]
    fn one_scan_finds_what_the_separate_walks_find() {
        for roots in [0usize, 1, 4, 5, 9] {
            let t = HeronDataTuple {
                key: 0x1122_3344_5566_7788,
                roots: (0..roots)
                    .map(|i| RootId {
                        taskid: i as i32 - 2,
                        key: (i as i64 + 1) * -1_000_003,
                    })
                    .collect(),
                values: vec![bytes::Bytes::from_static(b"word")],
                dest_task_ids: vec![7, -1],
            }
            .encode_to_vec();
            let scan = scan_tuple(&t).unwrap();
            assert_eq!(scan.key_offset, tuple_key_offset(&t));
            assert_eq!(scan.roots, roots);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            scan.for_each_root(&t, |task, key| a.push((task, key)));
            for_each_root(&t, |task, key| b.push((task, key)));
            assert_eq!(a, b, "{roots} roots");
        }
        for bad in [
            &[0x08u8, 0x01][..],
            &[0x1a, 5, 1, 2],
            &[0x00, 0x01],
            &[0x0b],
            &[0x12, 2, 0x11, 0x01],
        ] {
            assert_eq!(scan_tuple(bad).err(), check_tuple(bad).err(), "{bad:?}");
        }
        assert_eq!(scan_tuple(&[0x28, 0x01, 0x1a, 0]).unwrap().roots, 0);
    }

    #[test]
    fn a_data_set_without_its_stream_is_refused() {
        // only a tuple field, no stream
        assert_eq!(
            split_data_set(&[0x12, 0]),
            Err(WireError::Missing("HeronDataTupleSet.stream"))
        );
        assert_eq!(
            split_data_set(&[0x0a, 2, 0x0a, 0]),
            Err(WireError::Missing("StreamId.component_name"))
        );
        assert_eq!(
            split_data_set(&[0x0a, 6, 0x0a, 1, 0xff, 0x12, 1, b'c']),
            Err(WireError::Utf8("StreamId.id"))
        );
    }
}
