//! How a streamlet's elements travel in tuples: one tuple field per element.
//!
//! - A value that serializes as one primitive is the tuple value of that kind, readable by any
//!   Heron component: strings and chars are `Str`, booleans `Bool`, integers that fit `i64`
//!   `Int`, floats `Float`, unit and `None` `Null`.
//! - Anything else (structs, tuples, sequences, maps, enums, options, byte strings, integers
//!   above `i64::MAX`) is `Bytes`: the byte `0x01` then its binary encoding, postcard 1.x's
//!   wire format (a compact serde format with varint integers, described in [`crate::wire`]; not
//!   self-describing, so the reader knows the element's type).
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

/// The first byte of an element in the binary (postcard-format) encoding.
pub const BINARY_TAG: u8 = 0x01;

/// Why an element could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
pub enum ElementError {
    /// Binary encoding failed.
    #[error("encoding an element: {0}")]
    Encode(String),
    /// The tuple value is not an element of the expected type.
    #[error("decoding an element: {0}")]
    Decode(String),
}

/// The tuple value that carries `element`.
pub fn to_value<T: Serialize + ?Sized>(element: &T) -> Result<Value, ElementError> {
    let mut v = Value::Null;
    encode_into(element, &mut v)?;
    Ok(v)
}

/// [`to_value`] into `slot`, reusing its buffer when it already holds a binary element (an
/// emitter's scratch value: no allocation per element once the buffer has grown).
///
/// ```
/// use heron_api::Value;
/// use heron_streamlet::element::{encode_into, to_value};
/// let mut slot = Value::Null;
/// for w in ["a", "bb"] {
///     encode_into(&(w.to_string(), 1i64), &mut slot).unwrap();
///     assert_eq!(slot, to_value(&(w.to_string(), 1i64)).unwrap());
/// }
/// encode_into(&7u8, &mut slot).unwrap();
/// assert_eq!(slot, Value::Int(7));
/// ```
pub fn encode_into<T: Serialize + ?Sized>(
    element: &T,
    slot: &mut Value,
) -> Result<(), ElementError> {
    match element.serialize(Primitive(slot)) {
        Ok(()) => {}
        Err(NotPrimitive) => {
            // in place: moving the value out and back costs more than the encoding
            if !matches!(slot, Value::Bytes(_)) {
                *slot = Value::Bytes(Vec::with_capacity(32));
            }
            let Value::Bytes(buf) = slot else {
                unreachable!("made bytes above")
            };
            buf.clear();
            buf.push(BINARY_TAG);
            crate::wire::write(element, buf).map_err(|e| ElementError::Encode(e.to_string()))?;
        }
    }
    Ok(())
}

/// The element a tuple value carries.
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, ElementError> {
    match value {
        Value::Bytes(b) if b.first() == Some(&BINARY_TAG) => from_binary(&b[1..]),
        other => T::deserialize(ValueDe(other)).map_err(|e| ElementError::Decode(e.0)),
    }
}

/// [`from_value`] without taking the value (a tuple's field, say).
pub fn from_value_ref<T: DeserializeOwned>(value: &Value) -> Result<T, ElementError> {
    match value {
        Value::Bytes(b) if b.first() == Some(&BINARY_TAG) => from_binary(&b[1..]),
        Value::Str(s) => T::deserialize(de::value::StrDeserializer::<DeError>::new(s))
            .map_err(|e| ElementError::Decode(e.0)),
        other => from_value(other.clone()),
    }
}

/// [`from_value_ref`] into `place`, reusing what it holds (a `String`'s buffer, say) when the
/// value is in the binary encoding: a bolt that keeps one decoded element decodes the next
/// without allocating.
///
/// ```
/// use heron_streamlet::element::{decode_into, to_value};
/// let mut place = (String::new(), 0i64);
/// for w in ["word", "w"] {
///     decode_into(&to_value(&(w.to_string(), 5i64)).unwrap(), &mut place).unwrap();
///     assert_eq!(place, (w.to_string(), 5));
/// }
/// ```
pub fn decode_into<T: DeserializeOwned>(value: &Value, place: &mut T) -> Result<(), ElementError> {
    match value {
        Value::Bytes(b) if b.first() == Some(&BINARY_TAG) => {
            crate::wire::read_into(&b[1..], place).map_err(|e| ElementError::Decode(e.to_string()))
        }
        other => {
            *place = from_value_ref(other)?;
            Ok(())
        }
    }
}

/// The binary encoding's element.
fn from_binary<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ElementError> {
    crate::wire::read(bytes).map_err(|e| ElementError::Decode(e.to_string()))
}

/// The element a spout's tuple stands for: its one value (decoded as [`from_value`] does), or
/// the tuple of its values (plain tuple values, as spouts emit them), so a spout emitting `[sentence, ts]` is a source of
/// `(String, i64)`.
///
/// ```
/// use heron_api::Value;
/// use heron_streamlet::element::from_values;
///
/// let e: (String, i64) = from_values(vec![Value::from("w"), Value::Int(3)]).unwrap();
/// assert_eq!(e, ("w".to_string(), 3));
/// let one: String = from_values(vec![Value::from("w")]).unwrap();
/// assert_eq!(one, "w");
/// ```
pub fn from_values<T: DeserializeOwned>(mut values: Vec<Value>) -> Result<T, ElementError> {
    if values.len() == 1 {
        return from_value(values.pop().expect("one value"));
    }
    T::deserialize(SeqDe(values.into_iter())).map_err(|e| ElementError::Decode(e.0))
}

/// "Not one primitive": the caller falls back to the binary encoding.
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

/// Serializes one primitive into the [`Value`] it holds (a string into the value's buffer);
/// anything compound is [`NotPrimitive`], the value untouched.
struct Primitive<'a>(&'a mut Value);

impl Primitive<'_> {
    fn set(self, v: Value) -> Result<(), NotPrimitive> {
        *self.0 = v;
        Ok(())
    }
}

type Fail = Impossible<(), NotPrimitive>;

impl ser::Serializer for Primitive<'_> {
    type Ok = ();
    type Error = NotPrimitive;
    type SerializeSeq = Fail;
    type SerializeTuple = Fail;
    type SerializeTupleStruct = Fail;
    type SerializeTupleVariant = Fail;
    type SerializeMap = Fail;
    type SerializeStruct = Fail;
    type SerializeStructVariant = Fail;

    fn serialize_bool(self, v: bool) -> Result<(), NotPrimitive> {
        self.set(Value::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<(), NotPrimitive> {
        self.set(Value::Int(v.into()))
    }
    fn serialize_i16(self, v: i16) -> Result<(), NotPrimitive> {
        self.set(Value::Int(v.into()))
    }
    fn serialize_i32(self, v: i32) -> Result<(), NotPrimitive> {
        self.set(Value::Int(v.into()))
    }
    fn serialize_i64(self, v: i64) -> Result<(), NotPrimitive> {
        self.set(Value::Int(v))
    }
    fn serialize_u8(self, v: u8) -> Result<(), NotPrimitive> {
        self.set(Value::Int(v.into()))
    }
    fn serialize_u16(self, v: u16) -> Result<(), NotPrimitive> {
        self.set(Value::Int(v.into()))
    }
    fn serialize_u32(self, v: u32) -> Result<(), NotPrimitive> {
        self.set(Value::Int(v.into()))
    }
    fn serialize_u64(self, v: u64) -> Result<(), NotPrimitive> {
        let v = i64::try_from(v).map_err(|_| NotPrimitive)?;
        self.set(Value::Int(v))
    }
    fn serialize_f32(self, v: f32) -> Result<(), NotPrimitive> {
        self.set(Value::Float(v.into()))
    }
    fn serialize_f64(self, v: f64) -> Result<(), NotPrimitive> {
        self.set(Value::Float(v))
    }
    fn serialize_char(self, v: char) -> Result<(), NotPrimitive> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), NotPrimitive> {
        match self.0 {
            Value::Str(s) => {
                s.clear();
                s.push_str(v);
                Ok(())
            }
            _ => self.set(Value::Str(v.to_owned())),
        }
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), NotPrimitive> {
        Err(NotPrimitive)
    }
    fn serialize_none(self) -> Result<(), NotPrimitive> {
        self.set(Value::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), NotPrimitive> {
        // Some(x) and x would look alike: keep the option in the binary encoding
        Err(NotPrimitive)
    }
    fn serialize_unit(self) -> Result<(), NotPrimitive> {
        self.set(Value::Null)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), NotPrimitive> {
        Err(NotPrimitive)
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<(), NotPrimitive> {
        Err(NotPrimitive)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<(), NotPrimitive> {
        Err(NotPrimitive)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), NotPrimitive> {
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
            _ => Err(DeError("an option travels in the binary encoding".into())),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// [`from_values`] without taking the values (a spout tuple's, say).
pub fn from_values_ref<T: DeserializeOwned>(values: &[Value]) -> Result<T, ElementError> {
    match values {
        [one] => from_value_ref(one),
        many => T::deserialize(SeqRefDe(many.iter())).map_err(|e| ElementError::Decode(e.0)),
    }
}

/// [`SeqDe`] over borrowed values: strings are read in place.
struct SeqRefDe<'v>(std::slice::Iter<'v, Value>);

impl<'de> de::SeqAccess<'de> for SeqRefDe<'_> {
    type Error = DeError;

    fn next_element_seed<S: de::DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, DeError> {
        match self.0.next() {
            None => Ok(None),
            Some(Value::Str(s)) => seed
                .deserialize(de::value::StrDeserializer::<DeError>::new(s))
                .map(Some),
            Some(v) => seed.deserialize(ValueDe(v.clone())).map(Some),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

impl<'de> de::Deserializer<'de> for SeqRefDe<'_> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        v.visit_seq(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// Deserializes a tuple (or sequence) element from several tuple values.
struct SeqDe(std::vec::IntoIter<Value>);

impl<'de> de::SeqAccess<'de> for SeqDe {
    type Error = DeError;

    fn next_element_seed<S: de::DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, DeError> {
        match self.0.next() {
            None => Ok(None),
            Some(v) => seed.deserialize(ValueDe(v)).map(Some),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

impl<'de> de::Deserializer<'de> for SeqDe {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        v.visit_seq(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
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
    fn primitives_are_plain_tuple_values_and_the_rest_tagged_binary() {
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
                assert!(matches!(&v, Value::Bytes(b) if b[0] == BINARY_TAG), "{v:?}");
            }
        }
        assert!(from_value::<i64>(Value::from("not a number")).is_err());
        assert!(from_value::<(i64, i64)>(Value::Bytes(vec![BINARY_TAG, 0xff])).is_err());
    }

    #[test]
    fn decoding_a_pair_over_the_last_one_reuses_its_key_buffer() {
        let mut place = crate::KeyValue::new(String::with_capacity(32), 0i64);
        let ptr = place.key.as_ptr();
        for (w, n) in [("word", 1i64), ("other", 2)] {
            let v = to_value(&crate::KeyValue::new(w.to_string(), n)).unwrap();
            decode_into(&v, &mut place).unwrap();
            assert_eq!((place.key.as_str(), place.value), (w, n));
        }
        assert_eq!(
            place.key.as_ptr(),
            ptr,
            "decoded in place (serde_derive's deserialize_in_place)"
        );
    }

    #[test]
    fn encoding_over_the_last_element_reuses_its_buffer() {
        let mut slot = Value::Null;
        encode_into(&"a first word", &mut slot).unwrap();
        let str_ptr = slot.as_str().unwrap().as_ptr();
        for w in ["w", "word", "x"] {
            encode_into(&w, &mut slot).unwrap();
            assert_eq!(slot, Value::from(w));
        }
        encode_into(&'é', &mut slot).unwrap();
        assert_eq!(slot, Value::from("é"));
        assert_eq!(
            slot.as_str().unwrap().as_ptr(),
            str_ptr,
            "a string over a string"
        );
        let pair = |w: &str| crate::KeyValue::new(w.to_string(), (1i64, i64::MAX));
        encode_into(&pair("a longer first key"), &mut slot).unwrap();
        let Value::Bytes(b) = &slot else {
            panic!("{slot:?}")
        };
        let bytes_ptr = b.as_ptr();
        for w in ["k", "key"] {
            encode_into(&pair(w), &mut slot).unwrap();
            assert_eq!(slot, to_value(&pair(w)).unwrap());
        }
        let Value::Bytes(b) = &slot else {
            panic!("{slot:?}")
        };
        assert_eq!(b.as_ptr(), bytes_ptr, "an element over an element");
        // a primitive after a compound one, and back
        encode_into(&7u8, &mut slot).unwrap();
        assert_eq!(slot, Value::Int(7));
        encode_into(&pair("k"), &mut slot).unwrap();
        assert_eq!(
            from_value_ref::<crate::KeyValue<String, (i64, i64)>>(&slot).unwrap(),
            pair("k")
        );
    }
}
