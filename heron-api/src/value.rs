//! Tuple values and their wire encoding.

use std::fmt;

/// One value of a tuple.
///
/// Values travel between processes in heron-rs's own stable encoding: one tag byte followed by
/// the payload (see [`Value::encode`]). Build them with `From` conversions or the
/// [`values!`](crate::values) macro.
///
/// ```
/// use heron_api::Value;
/// let v = Value::from("hello");
/// assert_eq!(v.as_str(), Some("hello"));
/// assert_eq!(Value::from(42).as_i64(), Some(42));
/// assert!(Value::Null.is_null());
/// ```
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Value {
    /// No value.
    #[default]
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed 64-bit integer (all integer types convert to this).
    Int(i64),
    /// A 64-bit float.
    Float(f64),
    /// A UTF-8 string.
    Str(String),
    /// Raw bytes.
    Bytes(Vec<u8>),
}

/// The values of one tuple, in the order of the stream's [`Fields`](crate::Fields).
pub type Values = Vec<Value>;

/// A spout's message id: handed back to [`Spout::ack`](crate::Spout::ack) and
/// [`Spout::fail`](crate::Spout::fail).
pub type MessageId = Value;

/// Builds a [`Values`] from anything that converts into [`Value`].
///
/// ```
/// use heron_api::{values, Value};
/// let v = values!["word", 1, true];
/// assert_eq!(v, vec![Value::Str("word".into()), Value::Int(1), Value::Bool(true)]);
/// let empty = values![];
/// assert!(empty.is_empty());
/// ```
#[macro_export]
macro_rules! values {
    () => { ::std::vec::Vec::<$crate::Value>::new() };
    ($($x:expr),+ $(,)?) => { ::std::vec![$($crate::Value::from($x)),+] };
}

/// [`Value::grouping_hash`] of a string value, for a caller that already knows it holds one
/// (the emitter's route on one string field).
#[inline]
pub(crate) fn str_grouping_hash(s: &str) -> u64 {
    heron_proto::grouping::value_parts_hash(tag::STR, s.as_bytes())
}

/// Tag bytes of the value encoding (docs/internals.md, "Tuple values").
mod tag {
    pub const NULL: u8 = 0;
    pub const BOOL: u8 = 1;
    pub const INT: u8 = 2;
    pub const FLOAT: u8 = 3;
    pub const STR: u8 = 4;
    pub const BYTES: u8 = 5;
}

/// Why bytes do not decode as a [`Value`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// The encoded value has no tag byte.
    #[error("empty encoded value (no tag byte)")]
    Empty,
    /// The tag byte is not one of the known tags.
    #[error("unknown value tag {0}")]
    UnknownTag(u8),
    /// The payload length does not fit the tag.
    #[error("value with tag {tag} has a payload of {len} bytes, expected {expected}")]
    BadLength {
        /// The tag byte.
        tag: u8,
        /// The payload length found.
        len: usize,
        /// The payload length the tag requires.
        expected: usize,
    },
    /// A boolean payload other than 0 or 1.
    #[error("boolean payload {0} is neither 0 nor 1")]
    BadBool(u8),
    /// A string payload that is not UTF-8.
    #[error("string payload is not valid UTF-8")]
    InvalidUtf8,
}

impl ValueError {
    /// What is wrong, in a few words (without the numbers [`ValueError`]'s `Display` adds).
    ///
    /// ```
    /// # use heron_api::Value;
    /// assert_eq!(Value::decode(&[9]).unwrap_err().reason(), "unknown value tag");
    /// ```
    pub fn reason(&self) -> &'static str {
        match self {
            ValueError::Empty => "empty encoded value (no tag byte)",
            ValueError::UnknownTag(_) => "unknown value tag",
            ValueError::BadLength { .. } => "payload length does not fit the tag",
            ValueError::BadBool(_) => "boolean payload is neither 0 nor 1",
            ValueError::InvalidUtf8 => "string payload is not valid UTF-8",
        }
    }
}

impl Value {
    /// `true` for [`Value::Null`].
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The string, if this is a [`Value::Str`].
    ///
    /// ```
    /// # use heron_api::Value;
    /// assert_eq!(Value::from("a").as_str(), Some("a"));
    /// assert_eq!(Value::from(1).as_str(), None);
    /// ```
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The integer, if this is a [`Value::Int`].
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The float, if this is a [`Value::Float`] (integers convert too).
    ///
    /// ```
    /// # use heron_api::Value;
    /// assert_eq!(Value::from(1.5).as_f64(), Some(1.5));
    /// assert_eq!(Value::from(2).as_f64(), Some(2.0));
    /// ```
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Float(f) => Some(*f),
            Value::Int(i) => Some(*i as f64),
            _ => None,
        }
    }

    /// The boolean, if this is a [`Value::Bool`].
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The bytes, if this is a [`Value::Bytes`] (or the UTF-8 bytes of a [`Value::Str`]).
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Bytes(b) => Some(b),
            Value::Str(s) => Some(s.as_bytes()),
            _ => None,
        }
    }

    /// The name of the variant, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "string",
            Value::Bytes(_) => "bytes",
        }
    }

    /// The length of [`Value::encode`]'s output.
    ///
    /// ```
    /// # use heron_api::Value;
    /// assert_eq!(Value::from("abc").encoded_len(), 4);
    /// assert_eq!(Value::from(7).encoded_len(), 9);
    /// ```
    pub fn encoded_len(&self) -> usize {
        1 + match self {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Int(_) | Value::Float(_) => 8,
            Value::Str(s) => s.len(),
            Value::Bytes(b) => b.len(),
        }
    }

    /// Appends the encoding: one tag byte (0 null, 1 bool, 2 int, 3 float, 4 string,
    /// 5 bytes), then the payload (bool: one byte 0/1; int and float: 8 bytes little endian;
    /// string: UTF-8 bytes; bytes: raw). The length is the enclosing protobuf field's.
    ///
    /// ```
    /// # use heron_api::Value;
    /// let mut out = Vec::new();
    /// Value::from(1).encode(&mut out);
    /// assert_eq!(out, [2, 1, 0, 0, 0, 0, 0, 0, 0]);
    /// ```
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.reserve(self.encoded_len());
        self.encode_to(out);
    }

    /// The fields-grouping hash of this value: [`heron_proto::grouping::value_hash`] of
    /// [`Value::encode`]'s output, computed where the value lies, without encoding it.
    ///
    /// ```
    /// # use heron_api::Value;
    /// for v in [Value::from("hi"), Value::Int(-3), Value::Null, Value::Bytes(vec![1])] {
    ///     let mut encoded = Vec::new();
    ///     v.encode(&mut encoded);
    ///     assert_eq!(v.grouping_hash(), heron_proto::grouping::value_hash(&encoded));
    /// }
    /// ```
    #[inline]
    pub fn grouping_hash(&self) -> u64 {
        use heron_proto::grouping::value_parts_hash as hash;
        match self {
            Value::Null => hash(tag::NULL, &[]),
            Value::Bool(b) => hash(tag::BOOL, &[u8::from(*b)]),
            Value::Int(i) => hash(tag::INT, &i.to_le_bytes()),
            Value::Float(f) => hash(tag::FLOAT, &f.to_bits().to_le_bytes()),
            Value::Str(s) => str_grouping_hash(s),
            Value::Bytes(b) => hash(tag::BYTES, b),
        }
    }

    /// [`Value::encode`] into any [`bytes::BufMut`].
    #[inline]
    pub fn encode_to<B: bytes::BufMut>(&self, out: &mut B) {
        match self {
            Value::Null => out.put_u8(tag::NULL),
            Value::Bool(b) => {
                out.put_u8(tag::BOOL);
                out.put_u8(u8::from(*b));
            }
            Value::Int(i) => {
                out.put_u8(tag::INT);
                out.put_i64_le(*i);
            }
            Value::Float(f) => {
                out.put_u8(tag::FLOAT);
                out.put_u64_le(f.to_bits());
            }
            Value::Str(s) => {
                out.put_u8(tag::STR);
                out.put_slice(s.as_bytes());
            }
            Value::Bytes(b) => {
                out.put_u8(tag::BYTES);
                out.put_slice(b);
            }
        }
    }

    /// Decodes one value encoded by [`Value::encode`]; `bytes` must be exactly one value.
    ///
    /// ```
    /// # use heron_api::Value;
    /// assert_eq!(Value::decode(&[4, b'h', b'i']), Ok(Value::from("hi")));
    /// assert!(Value::decode(&[9]).is_err());
    /// ```
    pub fn decode(bytes: &[u8]) -> Result<Value, ValueError> {
        Ok(match parse(bytes)? {
            Raw::Null => Value::Null,
            Raw::Bool(b) => Value::Bool(b),
            Raw::Int(i) => Value::Int(i),
            Raw::Float(f) => Value::Float(f),
            Raw::Str(s) => Value::Str(s.to_owned()),
            Raw::Bytes(b) => Value::Bytes(b.to_vec()),
        })
    }

    /// [`Value::decode`] into `self`, reusing the buffer of a string or bytes value already
    /// here for a decoded string or bytes value (so a steady stream of tuples of one shape
    /// decodes without allocating). On error `self` is left unchanged.
    pub(crate) fn decode_in_place(&mut self, bytes: &[u8]) -> Result<(), ValueError> {
        match parse(bytes)? {
            Raw::Null => *self = Value::Null,
            Raw::Bool(b) => *self = Value::Bool(b),
            Raw::Int(i) => *self = Value::Int(i),
            Raw::Float(f) => *self = Value::Float(f),
            Raw::Str(s) => match self {
                Value::Str(buf) if !oversized(buf.capacity(), s.len()) => {
                    // SAFETY: the vector is emptied, then gets exactly the bytes of `s`, a
                    // `str`: it holds valid UTF-8 when the borrow ends.
                    let bytes = unsafe { buf.as_mut_vec() };
                    bytes.clear();
                    // a word is a few bytes: copied inline, not by a call to `memcpy`
                    heron_proto::small_copy::extend_small(bytes, s.as_bytes());
                }
                _ => {
                    // An empty buffer is valid UTF-8, so this keeps its capacity.
                    let mut buf = String::from_utf8(self.take_buffer(s.len())).unwrap_or_default();
                    buf.push_str(s);
                    *self = Value::Str(buf);
                }
            },
            Raw::Bytes(b) => match self {
                Value::Bytes(buf) if !oversized(buf.capacity(), b.len()) => {
                    buf.clear();
                    heron_proto::small_copy::extend_small(buf, b);
                }
                _ => {
                    let mut buf = self.take_buffer(b.len());
                    buf.extend_from_slice(b);
                    *self = Value::Bytes(buf);
                }
            },
        }
        Ok(())
    }

    /// Takes the (cleared) heap buffer of a string or bytes value, to hold `len` bytes,
    /// leaving `Null`; an empty vector for the other variants or an oversized buffer.
    fn take_buffer(&mut self, len: usize) -> Vec<u8> {
        let mut buf = match std::mem::take(self) {
            Value::Str(s) => s.into_bytes(),
            Value::Bytes(b) => b,
            _ => Vec::new(),
        };
        if oversized(buf.capacity(), len) {
            return Vec::new();
        }
        buf.clear();
        buf
    }
}

/// Buffers above this capacity are not kept for values much smaller (a reused tuple does
/// not hold on to the memory of one large value).
const KEEP_CAPACITY: usize = 64 << 10;

fn oversized(capacity: usize, len: usize) -> bool {
    capacity > KEEP_CAPACITY && capacity / 4 > len
}

/// A decoded value borrowing its payload from the encoding.
enum Raw<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'a str),
    Bytes(&'a [u8]),
}

/// Reads one value encoded by [`Value::encode`] without copying its payload.
fn parse(bytes: &[u8]) -> Result<Raw<'_>, ValueError> {
    let (&t, payload) = bytes.split_first().ok_or(ValueError::Empty)?;
    let fixed = |expected: usize| {
        if payload.len() == expected {
            Ok(())
        } else {
            Err(ValueError::BadLength {
                tag: t,
                len: payload.len(),
                expected,
            })
        }
    };
    match t {
        tag::NULL => fixed(0).map(|_| Raw::Null),
        tag::BOOL => {
            fixed(1)?;
            match payload[0] {
                0 => Ok(Raw::Bool(false)),
                1 => Ok(Raw::Bool(true)),
                b => Err(ValueError::BadBool(b)),
            }
        }
        tag::INT => {
            fixed(8)?;
            Ok(Raw::Int(i64::from_le_bytes(
                payload.try_into().expect("8 bytes"),
            )))
        }
        tag::FLOAT => {
            fixed(8)?;
            let bits = u64::from_le_bytes(payload.try_into().expect("8 bytes"));
            Ok(Raw::Float(f64::from_bits(bits)))
        }
        tag::STR => heron_proto::short_utf8::str_from(payload)
            .map(Raw::Str)
            .ok_or(ValueError::InvalidUtf8),
        tag::BYTES => Ok(Raw::Bytes(payload)),
        other => Err(ValueError::UnknownTag(other)),
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Str(s) => f.write_str(s),
            Value::Bytes(b) => write!(f, "{b:?}"),
        }
    }
}

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Value { Value::Int(v as i64) }
        }
    )*};
}
from_int!(i8, i16, i32, i64, u8, u16, u32, u64, usize, isize);

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Str(v.to_owned())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Str(v)
    }
}
impl From<&String> for Value {
    fn from(v: &String) -> Value {
        Value::Str(v.clone())
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Bool(v)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Float(v)
    }
}
impl From<f32> for Value {
    fn from(v: f32) -> Value {
        Value::Float(f64::from(v))
    }
}
impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Value {
        Value::Bytes(v)
    }
}
impl From<&[u8]> for Value {
    fn from(v: &[u8]) -> Value {
        Value::Bytes(v.to_vec())
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

impl heron_proto::tuple::EncodeValue for Value {
    #[inline]
    fn encoded_len(&self) -> usize {
        Value::encoded_len(self)
    }

    #[inline]
    fn encode_to<B: bytes::BufMut>(&self, buf: &mut B) {
        Value::encode_to(self, buf)
    }

    /// A string or bytes payload (a word, an encoded Streamlet element: most often a few
    /// bytes) is copied inline rather than by a call to `memcpy`; a number is two stores; and
    /// the whole is inlined into each of the tuple writers, which call it once a value (a
    /// call to the general [`Value::encode_to`] for a tuple's timestamp cost a spout's emit
    /// about a tenth).
    #[inline(always)]
    fn encode_exact(&self, out: &mut [u8]) {
        use heron_proto::small_copy::copy_small;
        match self {
            Value::Str(s) => {
                out[0] = tag::STR;
                copy_small(&mut out[1..], s.as_bytes());
            }
            Value::Bytes(b) => {
                out[0] = tag::BYTES;
                copy_small(&mut out[1..], b);
            }
            Value::Int(i) => {
                out[0] = tag::INT;
                out[1..9].copy_from_slice(&i.to_le_bytes());
            }
            Value::Float(f) => {
                out[0] = tag::FLOAT;
                out[1..9].copy_from_slice(&f.to_bits().to_le_bytes());
            }
            Value::Bool(b) => {
                out[0] = tag::BOOL;
                out[1] = u8::from(*b);
            }
            Value::Null => out[0] = tag::NULL,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        v.encode(&mut out);
        assert_eq!(out.len(), v.encoded_len(), "encoded_len of {v:?}");
        // the tuple writers' encoder writes the same bytes into a slice of encoded_len
        let mut exact = vec![0xaa; out.len()];
        heron_proto::tuple::EncodeValue::encode_exact(v, &mut exact);
        assert_eq!(exact, out, "encode_exact of {v:?}");
        out
    }

    #[test]
    fn byte_vectors_match_the_documented_encoding() {
        assert_eq!(enc(&Value::Null), [0]);
        assert_eq!(enc(&Value::Bool(false)), [1, 0]);
        assert_eq!(enc(&Value::Bool(true)), [1, 1]);
        assert_eq!(
            enc(&Value::Int(-2)),
            [2, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
        );
        assert_eq!(enc(&Value::Int(0x0102)), [2, 2, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(enc(&Value::Float(1.0)), [3, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f]);
        assert_eq!(enc(&Value::from("hé")), [4, b'h', 0xc3, 0xa9]);
        assert_eq!(enc(&Value::Bytes(vec![0, 255])), [5, 0, 255]);
        assert_eq!(enc(&Value::from("")), [4]);
    }

    #[test]
    fn round_trips() {
        let all = [
            Value::Null,
            Value::Bool(true),
            Value::Bool(false),
            Value::Int(i64::MIN),
            Value::Int(i64::MAX),
            Value::Int(0),
            Value::Float(-0.5),
            Value::Float(f64::INFINITY),
            Value::from("word"),
            Value::from(""),
            Value::Bytes(vec![]),
            Value::Bytes((0..=255).collect()),
        ];
        for v in all {
            assert_eq!(Value::decode(&enc(&v)), Ok(v.clone()), "{v:?}");
        }
        let nan = Value::decode(&enc(&Value::Float(f64::NAN))).unwrap();
        assert!(nan.as_f64().unwrap().is_nan());
    }

    #[test]
    fn decode_errors() {
        assert_eq!(Value::decode(&[]), Err(ValueError::Empty));
        assert_eq!(Value::decode(&[6]), Err(ValueError::UnknownTag(6)));
        assert_eq!(
            Value::decode(&[2, 1, 2]),
            Err(ValueError::BadLength {
                tag: 2,
                len: 2,
                expected: 8
            })
        );
        assert_eq!(Value::decode(&[1, 2]), Err(ValueError::BadBool(2)));
        assert_eq!(
            Value::decode(&[0, 0]),
            Err(ValueError::BadLength {
                tag: 0,
                len: 1,
                expected: 0
            })
        );
        assert_eq!(Value::decode(&[4, 0xff]), Err(ValueError::InvalidUtf8));
    }

    #[test]
    fn conversions_and_accessors() {
        assert_eq!(Value::from(3u64), Value::Int(3));
        assert_eq!(Value::from(3usize), Value::Int(3));
        assert_eq!(Value::from(-3i32), Value::Int(-3));
        assert_eq!(Value::from(String::from("s")).as_str(), Some("s"));
        assert_eq!(Value::from(vec![1u8]).as_bytes(), Some(&[1u8][..]));
        assert_eq!(Value::from(true).as_bool(), Some(true));
        assert_eq!(Value::from(None::<i64>), Value::Null);
        assert_eq!(Value::from("x").as_i64(), None);
        assert_eq!(
            crate::values!["a", 1u32, 2.5],
            vec![Value::from("a"), Value::Int(1), Value::Float(2.5)]
        );
        assert_eq!(Value::from(5).to_string(), "5");
    }

    #[test]
    fn decode_in_place_reuses_buffers_and_matches_decode() {
        let all = [
            Value::from("a longer string, to size the buffer"),
            Value::Int(-7),
            Value::from("short"),
            Value::Bytes(vec![1, 2, 3]),
            Value::from("hé"),
            Value::Null,
            Value::Bool(true),
            Value::Float(2.5),
            Value::Bytes(vec![]),
            Value::from(""),
        ];
        let mut slot = Value::Null;
        for v in &all {
            slot.decode_in_place(&enc(v)).unwrap();
            assert_eq!(&slot, v);
        }
        // A string replacing a string keeps its allocation; so does bytes replacing a string.
        let mut slot = Value::from("0123456789abcdef");
        let ptr = slot.as_str().unwrap().as_ptr();
        slot.decode_in_place(&enc(&Value::from("xy"))).unwrap();
        assert_eq!(slot.as_str(), Some("xy"));
        assert_eq!(slot.as_str().unwrap().as_ptr(), ptr);
        slot.decode_in_place(&enc(&Value::Bytes(vec![9; 4])))
            .unwrap();
        assert_eq!(slot, Value::Bytes(vec![9; 4]));
        assert_eq!(slot.as_bytes().unwrap().as_ptr(), ptr);
        slot.decode_in_place(&enc(&Value::from("back"))).unwrap();
        assert_eq!(slot.as_str().unwrap().as_ptr(), ptr);
        // Errors are those of decode and leave the value alone.
        assert_eq!(
            slot.decode_in_place(&[4, 0xff]),
            Err(ValueError::InvalidUtf8)
        );
        assert_eq!(slot.decode_in_place(&[]), Err(ValueError::Empty));
        assert_eq!(
            slot.decode_in_place(&[2, 1]).unwrap_err(),
            Value::decode(&[2, 1]).unwrap_err()
        );
        assert_eq!(slot.as_str(), Some("back"));

        // A large buffer is not kept for a small value.
        let mut slot = Value::Null;
        slot.decode_in_place(&enc(&Value::from("x".repeat(1 << 20))))
            .unwrap();
        slot.decode_in_place(&enc(&Value::from("y".repeat(600 << 10))))
            .unwrap();
        assert!(slot.as_str().unwrap().len() == 600 << 10);
        slot.decode_in_place(&enc(&Value::from("small"))).unwrap();
        assert_eq!(slot.as_str(), Some("small"));
        match &slot {
            Value::Str(s) => assert!(s.capacity() < 1 << 10, "{}", s.capacity()),
            other => panic!("{other:?}"),
        }
        slot.decode_in_place(&enc(&Value::Bytes(vec![1; 1 << 20])))
            .unwrap();
        slot.decode_in_place(&enc(&Value::Bytes(vec![2]))).unwrap();
        match &slot {
            Value::Bytes(b) => assert!(b.capacity() < 1 << 10, "{}", b.capacity()),
            other => panic!("{other:?}"),
        }
    }
}
