//! The binary element encoding: postcard 1.x's wire format, written and read by code of our
//! own that is specialised for what a stage does per element (encode into a reused buffer,
//! decode over the last element).
//!
//! The format, for every serde data type (it is not self-describing: the reader knows the
//! type):
//! - `bool`: one byte, 0 or 1; `u8` and `i8`: the byte;
//! - other integers: a varint (LEB128: seven bits a byte, low groups first, the top bit set
//!   on every byte but the last), signed ones zigzagged first (0, -1, 1, -2 … become
//!   0, 1, 2, 3 …); at most 3 bytes for 16 bits, 5 for 32, 10 for 64 and 19 for 128;
//! - `f32`, `f64`: little-endian IEEE 754;
//! - `char`, `str`, bytes: the length in bytes as a varint, then the bytes (UTF-8 for text);
//! - `Option`: 0 for `None`, 1 then the value for `Some`;
//! - unit, unit structs: nothing; newtype structs: the inner value;
//! - sequences and maps: the element count as a varint, then the elements (a map's as key,
//!   value, key, value …);
//! - tuples, tuple structs, structs: the fields in order, nothing else;
//! - enums: the variant's index as a varint, then its fields as above.
//!
//! postcard (the crate) stays the reference: `streamlet/tests/wire.rs` checks both ways
//! that the two agree byte for byte.

mod de;
mod ser;
mod varint;

use std::fmt;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Why an element could not be written or read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    /// The input ended inside the element.
    End,
    /// A varint too long, or too large for its integer type.
    BadVarint,
    /// A `bool` byte other than 0 or 1.
    BadBool,
    /// An `Option` tag other than 0 or 1.
    BadOption,
    /// Text that is not UTF-8, or a `char` that is not one character.
    BadText,
    /// Bytes left over after the element.
    Trailing(usize),
    /// A sequence or map whose length is not known before its elements are written.
    UnknownLength,
    /// A type that needs a self-describing format (`deserialize_any`, identifiers, ignored
    /// values).
    NotSelfDescribing,
    /// The type's own serialization or deserialization failed.
    Custom(Box<String>),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::End => f.write_str("the input ended inside the element"),
            WireError::BadVarint => f.write_str("a varint too long or too large for its type"),
            WireError::BadBool => f.write_str("a bool byte other than 0 or 1"),
            WireError::BadOption => f.write_str("an Option tag other than 0 or 1"),
            WireError::BadText => f.write_str("text that is not UTF-8 (or a char not one)"),
            WireError::Trailing(n) => write!(f, "{n} bytes after the element"),
            WireError::UnknownLength => f.write_str("a sequence or map of unknown length"),
            WireError::NotSelfDescribing => {
                f.write_str("the type needs a self-describing format, which this is not")
            }
            WireError::Custom(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for WireError {}

impl serde::ser::Error for WireError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        WireError::Custom(Box::new(msg.to_string()))
    }
}

impl serde::de::Error for WireError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        WireError::Custom(Box::new(msg.to_string()))
    }
}

/// Appends `value`'s encoding to `out`.
///
/// ```
/// use heron_streamlet::wire;
/// let mut out = Vec::new();
/// wire::write(&("word", 300u32, -1i64, Some(true)), &mut out).unwrap();
/// assert_eq!(out, [4, b'w', b'o', b'r', b'd', 0xac, 0x02, 0x01, 1, 1]);
/// ```
#[inline]
pub fn write<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) -> Result<(), WireError> {
    value.serialize(&mut ser::Writer { out })
}

/// The value `bytes` encode, all of them (bytes left over are [`WireError::Trailing`]).
///
/// ```
/// use heron_streamlet::wire::{self, WireError};
/// let v: (String, u32) = wire::read(&[2, b'h', b'i', 7]).unwrap();
/// assert_eq!(v, ("hi".to_string(), 7));
/// assert_eq!(wire::read::<u32>(&[7, 0]), Err(WireError::Trailing(1)));
/// assert_eq!(wire::read::<String>(&[5, b'h']), Err(WireError::End));
/// ```
#[inline]
pub fn read<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, WireError> {
    let mut r = de::Reader { input: bytes };
    let v = T::deserialize(&mut r)?;
    r.finish()?;
    Ok(v)
}

/// [`read`] over `place`, reusing what it holds (a `String`'s buffer, say).
///
/// ```
/// use heron_streamlet::wire;
/// let mut place = (String::with_capacity(16), 0i64);
/// wire::read_into(&[2, b'h', b'i', 3], &mut place).unwrap();
/// assert_eq!(place, ("hi".to_string(), -2));
/// ```
#[inline]
pub fn read_into<T: DeserializeOwned>(bytes: &[u8], place: &mut T) -> Result<(), WireError> {
    let mut r = de::Reader { input: bytes };
    T::deserialize_in_place(&mut r, place)?;
    r.finish()
}
