//! How a streamlet's elements travel in tuples: one tuple field per element.
//!
//! - A value that serializes as one primitive is the tuple value of that kind, readable by any
//!   Heron component: strings and chars are `Str`, booleans `Bool`, integers that fit `i64`
//!   `Int`, floats `Float`, unit and `None` `Null`.
//! - Anything else (structs, tuples, sequences, maps, enums with data, byte strings, integers
//!   above `i64::MAX`) is `Bytes`: the byte `0x01` then its CBOR encoding (RFC 8949, through
//!   serde and `ciborium`).
//!
//! ```
//! use heron_api::Value;
//! use heron_streamlet::element::{from_value, to_value};
//!
//! assert_eq!(to_value(&"word").unwrap(), Value::from("word"));
//! assert_eq!(to_value(&7u8).unwrap(), Value::Int(7));
//! let pair = to_value(&("word".to_string(), 3i64)).unwrap();
//! assert!(matches!(&pair, Value::Bytes(b) if b[0] == 0x01));
//! assert_eq!(from_value::<(String, i64)>(pair).unwrap(), ("word".to_string(), 3));
//! assert_eq!(from_value::<String>(Value::from("w")).unwrap(), "w");
//! ```

use std::fmt;

use heron_api::Value;
use serde::de::{self, DeserializeOwned, Visitor};
use serde::ser::{self, Impossible, Serialize};

/// The tag of a CBOR-encoded element.
pub const CBOR_TAG: u8 = 0x01;

/// Why an element could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
pub enum ElementError {
    /// CBOR encoding failed.
    #[error("encoding an element as CBOR: {0}")]
    Encode(String),
    /// The tuple value is not an element of the expected type.
    #[error("decoding an element: {0}")]
    Decode(String),
}

/// The tuple value that carries `element`.
pub fn to_value<T: Serialize + ?Sized>(element: &T) -> Result<Value, ElementError> {
    match element.serialize(Primitive) {
        Ok(v) => Ok(v),
        Err(NotPrimitive) => {
            let mut out = vec![CBOR_TAG];
            ciborium::ser::into_writer(element, &mut out)
                .map_err(|e| ElementError::Encode(e.to_string()))?;
            Ok(Value::Bytes(out))
        }
    }
}

/// The element a tuple value carries.
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, ElementError> {
    match value {
        Value::Bytes(b) if b.first() == Some(&CBOR_TAG) => {
            ciborium::de::from_reader(&b[1..]).map_err(|e| ElementError::Decode(e.to_string()))
        }
        other => T::deserialize(ValueDe(other)).map_err(|e| ElementError::Decode(e.0)),
    }
}

/// "Not one primitive": the caller falls back to CBOR.
#[derive(Debug)]
struct NotPrimitive;

impl fmt::Display for NotPrimitive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a primitive")
    }
}

impl std::error::Error for NotPrimitive {}

impl ser::Error for NotPrimitive {
    fn custom<M: fmt::Display>(_: M) -> Self {
        NotPrimitive
    }
}

/// Serializes one primitive into a [`Value`]; anything compound is [`NotPrimitive`].
struct Primitive;

type Fail = Impossible<Value, NotPrimitive>;

impl ser::Serializer for Primitive {
    type Ok = Value;
    type Error = NotPrimitive;
    type SerializeSeq = Fail;
    type SerializeTuple = Fail;
    type SerializeTupleStruct = Fail;
    type SerializeTupleVariant = Fail;
    type SerializeMap = Fail;
    type SerializeStruct = Fail;
    type SerializeStructVariant = Fail;

    fn serialize_bool(self, v: bool) -> Result<Value, NotPrimitive> {
        Ok(Value::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<Value, NotPrimitive> {
        Ok(Value::Int(v.into()))
    }
    fn serialize_i16(self, v: i16) -> Result<Value, NotPrimitive> {
        Ok(Value::Int(v.into()))
    }
    fn serialize_i32(self, v: i32) -> Result<Value, NotPrimitive> {
        Ok(Value::Int(v.into()))
    }
    fn serialize_i64(self, v: i64) -> Result<Value, NotPrimitive> {
        Ok(Value::Int(v))
    }
    fn serialize_u8(self, v: u8) -> Result<Value, NotPrimitive> {
        Ok(Value::Int(v.into()))
    }
    fn serialize_u16(self, v: u16) -> Result<Value, NotPrimitive> {
        Ok(Value::Int(v.into()))
    }
    fn serialize_u32(self, v: u32) -> Result<Value, NotPrimitive> {
        Ok(Value::Int(v.into()))
    }
    fn serialize_u64(self, v: u64) -> Result<Value, NotPrimitive> {
        i64::try_from(v).map(Value::Int).map_err(|_| NotPrimitive)
    }
    fn serialize_f32(self, v: f32) -> Result<Value, NotPrimitive> {
        Ok(Value::Float(v.into()))
    }
    fn serialize_f64(self, v: f64) -> Result<Value, NotPrimitive> {
        Ok(Value::Float(v))
    }
    fn serialize_char(self, v: char) -> Result<Value, NotPrimitive> {
        Ok(Value::Str(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Value, NotPrimitive> {
        Ok(Value::Str(v.to_owned()))
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<Value, NotPrimitive> {
        Err(NotPrimitive)
    }
    fn serialize_none(self) -> Result<Value, NotPrimitive> {
        Ok(Value::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<Value, NotPrimitive> {
        // Some(x) and x would look alike: keep the option in CBOR
        Err(NotPrimitive)
    }
    fn serialize_unit(self) -> Result<Value, NotPrimitive> {
        Ok(Value::Null)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<Value, NotPrimitive> {
        Err(NotPrimitive)
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<Value, NotPrimitive> {
        Err(NotPrimitive)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<Value, NotPrimitive> {
        Err(NotPrimitive)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Value, NotPrimitive> {
        Err(NotPrimitive)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Fail, NotPrimitive> {
        Err(NotPrimitive)
    }
    fn serialize_tuple(self, _: usize) -> Result<Fail, NotPrimitive> {
        Err(NotPrimitive)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Fail, NotPrimitive> {
        Err(NotPrimitive)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Fail, NotPrimitive> {
        Err(NotPrimitive)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Fail, NotPrimitive> {
        Err(NotPrimitive)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Fail, NotPrimitive> {
        Err(NotPrimitive)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Fail, NotPrimitive> {
        Err(NotPrimitive)
    }
}

#[derive(Debug)]
struct DeError(String);

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<M: fmt::Display>(m: M) -> Self {
        DeError(m.to_string())
    }
}

/// Deserializes a primitive element from its tuple value.
struct ValueDe(Value);

impl<'de> de::Deserializer<'de> for ValueDe {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        match self.0 {
            Value::Null => v.visit_unit(),
            Value::Bool(b) => v.visit_bool(b),
            Value::Int(i) => v.visit_i64(i),
            Value::Float(f) => v.visit_f64(f),
            Value::Str(s) => v.visit_string(s),
            Value::Bytes(b) => v.visit_byte_buf(b),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        match self.0 {
            Value::Null => v.visit_none(),
            _ => Err(DeError("an option travels as CBOR".into())),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round<T: Serialize + DeserializeOwned + PartialEq + fmt::Debug>(x: T) -> Value {
        let v = to_value(&x).unwrap();
        assert_eq!(from_value::<T>(v.clone()).unwrap(), x);
        v
    }

    #[test]
    fn primitives_are_plain_tuple_values_and_the_rest_tagged_cbor() {
        assert_eq!(round("w".to_string()), Value::from("w"));
        assert_eq!(round(-5i32), Value::Int(-5));
        assert_eq!(round(2.5f64), Value::Float(2.5));
        assert_eq!(round(true), Value::Bool(true));
        assert_eq!(round('x'), Value::from("x"));
        assert_eq!(round(()), Value::Null);
        for v in [
            round(u64::MAX),
            round(Some(3i64)),
            round(None::<i64>),
            round(vec![1u8, 2]),
            round(("k".to_string(), 1i64)),
            round(std::collections::BTreeMap::from([(1i64, "a".to_string())])),
        ] {
            if v != Value::Null {
                assert!(matches!(&v, Value::Bytes(b) if b[0] == CBOR_TAG), "{v:?}");
            }
        }
        assert!(from_value::<i64>(Value::from("not a number")).is_err());
        assert!(from_value::<(i64, i64)>(Value::Bytes(vec![CBOR_TAG, 0xff])).is_err());
    }
}
