//! The protobuf wire primitives every tuple reader and writer is built on: varints, field keys
//! and a field iterator that borrows from the message it walks.

use bytes::BufMut;

use super::TupleError;

/// Wire type 0: varint.
pub(crate) const VARINT: u8 = 0;
/// Wire type 1: 64-bit little-endian.
pub(crate) const FIXED64: u8 = 1;
/// Wire type 2: length-delimited.
pub(crate) const LEN: u8 = 2;

/// The one-byte key of field `field` with wire type `wire`.
#[inline]
pub(crate) const fn key(field: u8, wire: u8) -> u8 {
    (field << 3) | wire
}

/// Appends `value` as a varint.
#[inline(always)]
pub fn put_varint(buf: &mut impl BufMut, value: u64) {
    // Keys and short lengths are one byte: inlined into every writer.
    if value < 0x80 {
        buf.put_u8(value as u8);
    } else {
        prost::encoding::encode_varint(value, buf);
    }
}

/// Writes `value` as a varint at the start of `dst` (which must have room for it: at most 10
/// bytes) and returns the number of bytes written.
#[inline(always)]
pub fn write_varint(dst: &mut [u8], value: u64) -> usize {
    if value < 0x80 {
        dst[0] = value as u8;
        return 1;
    }
    let n = varint_len(value);
    let mut out = &mut dst[..n];
    prost::encoding::encode_varint(value, &mut out);
    n
}

/// The number of bytes of `value` as a varint.
#[inline]
pub fn varint_len(value: u64) -> usize {
    prost::encoding::encoded_len_varint(value)
}

/// An `int32` field's varint value: negative numbers are sign-extended to 64 bits.
#[inline]
pub fn int32(value: i32) -> u64 {
    i64::from(value) as u64
}

/// Reads a varint off the front of `buf`.
#[inline(always)]
pub fn read_varint(buf: &mut &[u8]) -> Result<u64, TupleError> {
    // Keys and short lengths are one byte: inlined into every caller's loop.
    if let Some((&b, rest)) = buf.split_first() {
        if b < 0x80 {
            *buf = rest;
            return Ok(u64::from(b));
        }
    }
    read_long_varint(buf)
}

/// [`read_varint`] of more than one byte.
#[inline(never)]
fn read_long_varint(buf: &mut &[u8]) -> Result<u64, TupleError> {
    let mut value = 0u64;
    for i in 0..10 {
        let Some(&b) = buf.get(i) else {
            return Err(TupleError::Truncated);
        };
        value |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            *buf = &buf[i + 1..];
            return Ok(value);
        }
    }
    Err(TupleError::VarintTooLong)
}

#[inline]
pub(crate) fn take<'a>(buf: &mut &'a [u8], n: usize) -> Result<&'a [u8], TupleError> {
    if buf.len() < n {
        return Err(TupleError::Truncated);
    }
    let (head, tail) = buf.split_at(n);
    *buf = tail;
    Ok(head)
}

/// Reads a length-delimited field's bytes (its length, then the bytes) off the front of
/// `buf`.
#[inline]
pub(crate) fn len_delimited<'a>(buf: &mut &'a [u8]) -> Result<&'a [u8], TupleError> {
    let len = read_varint(buf)?;
    take(
        buf,
        usize::try_from(len).map_err(|_| TupleError::Truncated)?,
    )
}

/// Skips the value of the field whose key `key` was just read off `buf`.
#[inline]
pub(crate) fn skip(buf: &mut &[u8], key: u64) -> Result<(), TupleError> {
    if key >> 3 == 0 {
        return Err(TupleError::BadKey(key));
    }
    match key & 7 {
        0 => read_varint(buf).map(drop),
        1 => take(buf, 8).map(drop),
        2 => len_delimited(buf).map(drop),
        5 => take(buf, 4).map(drop),
        _ => Err(TupleError::BadKey(key)),
    }
}

/// One field's value as it is on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1.
    Fixed64(u64),
    /// Wire type 2: bytes, strings, sub-messages, packed repeated fields.
    Len(&'a [u8]),
    /// Wire type 5.
    Fixed32(u32),
}

impl Field<'_> {
    /// The field's wire type.
    #[inline]
    pub fn wire_type(&self) -> u8 {
        match self {
            Field::Varint(_) => 0,
            Field::Fixed64(_) => 1,
            Field::Len(_) => 2,
            Field::Fixed32(_) => 5,
        }
    }
}

/// The fields of one message, in wire order, as `(field number, value)`. Stops after the
/// first error.
///
/// ```
/// use heron_proto::tuple::{fields, Field};
/// // field 1 = varint 150, field 2 = "hi"
/// let msg = [0x08, 0x96, 0x01, 0x12, 2, b'h', b'i'];
/// let all: Vec<_> = fields(&msg).collect::<Result<_, _>>().unwrap();
/// assert_eq!(all, vec![(1, Field::Varint(150)), (2, Field::Len(b"hi"))]);
/// ```
#[derive(Debug, Clone)]
pub struct Fields<'a> {
    buf: &'a [u8],
}

/// Iterates over the fields encoded in `buf`.
#[inline]
pub fn fields(buf: &[u8]) -> Fields<'_> {
    Fields { buf }
}

impl<'a> Fields<'a> {
    /// Bytes not read yet.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    /// `true` when every field was read.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Skips the next field when its key is the one byte `key` of a length-delimited field
    /// and all its bytes are there, and says whether it did (nothing is read when not): the
    /// hot loops' way past a set's tuples, one compare where [`Fields::read`] decodes the key
    /// and its wire type. What it skips, `read` would have read as that field.
    #[inline]
    pub(crate) fn skip_len_field(&mut self, key: u8) -> bool {
        self.buf.first() == Some(&key) && self.next_len_field().is_some()
    }

    /// Reads the next field when it is length-delimited with a one-byte key (fields 1 to 15,
    /// as the encoders write them) and all its bytes are there: its number and bytes, as
    /// [`Fields::read`] would return them. `None`, with nothing read, for anything else,
    /// which `read` then reads or refuses.
    #[inline]
    pub(crate) fn next_len_field(&mut self) -> Option<(u32, &'a [u8])> {
        let (&k, mut b) = self.buf.split_first()?;
        if k & 7 != LEN || k >= 0x80 || k >> 3 == 0 {
            return None;
        }
        let len = usize::try_from(read_varint(&mut b).ok()?).ok()?;
        if b.len() < len {
            return None;
        }
        let (value, rest) = b.split_at(len);
        self.buf = rest;
        Some((u32::from(k >> 3), value))
    }

    /// Reads the next field; call only when [`Fields::is_empty`] is `false`.
    #[inline]
    pub(crate) fn read(&mut self) -> Result<(u32, Field<'a>), TupleError> {
        let key = read_varint(&mut self.buf)?;
        let field = key >> 3;
        if field == 0 || field > u64::from(u32::MAX >> 3) {
            return Err(TupleError::BadKey(key));
        }
        let value = match key & 7 {
            0 => Field::Varint(read_varint(&mut self.buf)?),
            1 => {
                let b = take(&mut self.buf, 8)?;
                Field::Fixed64(u64::from_le_bytes(b.try_into().expect("8 bytes")))
            }
            2 => {
                let len = read_varint(&mut self.buf)?;
                let len = usize::try_from(len).map_err(|_| TupleError::Truncated)?;
                Field::Len(take(&mut self.buf, len)?)
            }
            5 => {
                let b = take(&mut self.buf, 4)?;
                Field::Fixed32(u32::from_le_bytes(b.try_into().expect("4 bytes")))
            }
            _ => return Err(TupleError::BadKey(key)),
        };
        Ok((field as u32, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Field<'a>), TupleError>;

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

/// The error for `field` of `message` found with the wrong wire type.
pub(crate) fn wrong(message: &'static str, field: u32, value: &Field<'_>) -> TupleError {
    TupleError::WireType {
        message,
        field,
        wire_type: value.wire_type(),
    }
}

/// Where the slice `field`, just read by `f` from `base`, lies in `base`.
#[inline]
pub(crate) fn span(base: &[u8], f: &Fields<'_>, field: &[u8]) -> std::ops::Range<usize> {
    let end = base.len() - f.remaining();
    end - field.len()..end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_match_prost_and_the_spec() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            1 << 35,
            u32::MAX as u64,
            u64::MAX,
            int32(-1),
        ] {
            let mut a = Vec::new();
            put_varint(&mut a, v);
            let mut b = [0u8; 10];
            let n = write_varint(&mut b, v);
            assert_eq!(&b[..n], &a[..], "{v}");
            assert_eq!(varint_len(v), a.len(), "{v}");
            let mut s = &b[..n];
            assert_eq!(read_varint(&mut s).unwrap(), v);
            assert!(s.is_empty());
        }
        let mut a = Vec::new();
        put_varint(&mut a, 300);
        assert_eq!(a, [0xac, 0x02]);
        assert_eq!(int32(-1), u64::MAX);
        assert_eq!(varint_len(int32(-1)), 10);
        assert_eq!(
            read_varint(&mut &[0x80u8, 0x80][..]),
            Err(TupleError::Truncated)
        );
        assert_eq!(
            read_varint(&mut &[0xffu8; 11][..]),
            Err(TupleError::VarintTooLong)
        );
    }

    #[test]
    fn fields_stop_at_the_first_error() {
        // a good varint field, then a length past the end
        let mut f = fields(&[0x08, 1, 0x12, 5, 1]);
        assert_eq!(f.next(), Some(Ok((1, Field::Varint(1)))));
        assert_eq!(f.next(), Some(Err(TupleError::Truncated)));
        assert_eq!(f.next(), None);
        // field number 0 and the group wire types are refused
        assert_eq!(fields(&[0x00]).next(), Some(Err(TupleError::BadKey(0))));
        assert_eq!(fields(&[0x0b]).next(), Some(Err(TupleError::BadKey(0x0b))));
        let four = [0x0d, 1, 2, 3, 4];
        assert_eq!(
            fields(&four).next(),
            Some(Ok((1, Field::Fixed32(0x0403_0201))))
        );
        assert_eq!(
            wrong("M", 1, &Field::Fixed32(0)).to_string(),
            "field 1 of M has wire type 5"
        );
    }

    proptest::proptest! {
        /// The fast read of a length-delimited field takes only what the general read
        /// returns as that field, leaves the same bytes, and takes every such field with a
        /// one-byte key that is all there.
        #[test]
        fn a_fast_length_field_read_agrees_with_the_general_read(
            field in 1u8..20,
            wire in 0u8..8,
            len in 0usize..300,
            cut in 0usize..4,
            noise in proptest::collection::vec(proptest::num::u8::ANY, 0..24),
        ) {
            let mut buf = Vec::new();
            put_varint(&mut buf, u64::from(field) << 3 | u64::from(wire));
            put_varint(&mut buf, len as u64);
            buf.resize(buf.len() + len.saturating_sub(cut), 7);
            buf.extend_from_slice(&noise);
            for bytes in [&buf[..], &noise[..]] {
                let (mut fast, mut general) = (fields(bytes), fields(bytes));
                let expected = (!general.is_empty()).then(|| general.read());
                match fast.next_len_field() {
                    Some((n, v)) => {
                        proptest::prop_assert_eq!(expected, Some(Ok((n, Field::Len(v)))));
                        proptest::prop_assert_eq!(fast.remaining(), general.remaining());
                    }
                    None => {
                        proptest::prop_assert_eq!(fast.remaining(), bytes.len(), "nothing read");
                        let taken = bytes.first().is_some_and(|&k| k < 0x80 && k & 7 == LEN && k >> 3 > 0);
                        proptest::prop_assert!(
                            !(taken && matches!(expected, Some(Ok((_, Field::Len(_)))))),
                            "a one-byte length field that is all there, not read fast"
                        );
                    }
                }
            }
        }
    }
}
