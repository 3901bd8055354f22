//! The encoder: a serde serializer appending to a borrowed vector.

use heron_proto::small_copy::extend_small;
use serde::ser::{self, Serialize};

use super::varint::{put_u128, put_u64, zigzag, zigzag128};
use super::WireError;

/// Appends what it serializes to `out`.
pub(crate) struct Writer<'a> {
    pub out: &'a mut Vec<u8>,
}

impl Writer<'_> {
    #[inline(always)]
    fn varint(&mut self, v: u64) {
        put_u64(self.out, v);
    }

    #[inline(always)]
    fn bytes(&mut self, b: &[u8]) {
        self.varint(b.len() as u64);
        extend_small(self.out, b);
    }

    #[inline]
    fn length(&mut self, len: Option<usize>) -> Result<(), WireError> {
        let len = len.ok_or(WireError::UnknownLength)?;
        self.varint(len as u64);
        Ok(())
    }
}

type Res = Result<(), WireError>;

impl<'w> ser::Serializer for &mut Writer<'w> {
    type Ok = ();
    type Error = WireError;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    #[inline]
    fn serialize_bool(self, v: bool) -> Res {
        self.out.push(u8::from(v));
        Ok(())
    }
    #[inline]
    fn serialize_i8(self, v: i8) -> Res {
        self.out.push(v as u8);
        Ok(())
    }
    #[inline]
    fn serialize_i16(self, v: i16) -> Res {
        self.varint(zigzag(v.into()));
        Ok(())
    }
    #[inline]
    fn serialize_i32(self, v: i32) -> Res {
        self.varint(zigzag(v.into()));
        Ok(())
    }
    #[inline]
    fn serialize_i64(self, v: i64) -> Res {
        self.varint(zigzag(v));
        Ok(())
    }
    fn serialize_i128(self, v: i128) -> Res {
        put_u128(self.out, zigzag128(v));
        Ok(())
    }
    #[inline]
    fn serialize_u8(self, v: u8) -> Res {
        self.out.push(v);
        Ok(())
    }
    #[inline]
    fn serialize_u16(self, v: u16) -> Res {
        self.varint(v.into());
        Ok(())
    }
    #[inline]
    fn serialize_u32(self, v: u32) -> Res {
        self.varint(v.into());
        Ok(())
    }
    #[inline]
    fn serialize_u64(self, v: u64) -> Res {
        self.varint(v);
        Ok(())
    }
    fn serialize_u128(self, v: u128) -> Res {
        put_u128(self.out, v);
        Ok(())
    }
    #[inline]
    fn serialize_f32(self, v: f32) -> Res {
        self.out.extend_from_slice(&v.to_le_bytes());
        Ok(())
    }
    #[inline]
    fn serialize_f64(self, v: f64) -> Res {
        self.out.extend_from_slice(&v.to_le_bytes());
        Ok(())
    }
    #[inline]
    fn serialize_char(self, v: char) -> Res {
        self.bytes(v.encode_utf8(&mut [0; 4]).as_bytes());
        Ok(())
    }
    #[inline]
    fn serialize_str(self, v: &str) -> Res {
        self.bytes(v.as_bytes());
        Ok(())
    }
    #[inline]
    fn serialize_bytes(self, v: &[u8]) -> Res {
        self.bytes(v);
        Ok(())
    }
    #[inline]
    fn serialize_none(self) -> Res {
        self.out.push(0);
        Ok(())
    }
    #[inline]
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Res {
        self.out.push(1);
        value.serialize(self)
    }
    #[inline]
    fn serialize_unit(self) -> Res {
        Ok(())
    }
    #[inline]
    fn serialize_unit_struct(self, _name: &'static str) -> Res {
        Ok(())
    }
    #[inline]
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
    ) -> Res {
        self.varint(index.into());
        Ok(())
    }
    #[inline]
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Res {
        value.serialize(self)
    }
    #[inline]
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        value: &T,
    ) -> Res {
        self.varint(index.into());
        value.serialize(self)
    }
    #[inline]
    fn serialize_seq(self, len: Option<usize>) -> Result<Self, WireError> {
        self.length(len)?;
        Ok(self)
    }
    #[inline]
    fn serialize_tuple(self, _len: usize) -> Result<Self, WireError> {
        Ok(self)
    }
    #[inline]
    fn serialize_tuple_struct(self, _name: &'static str, _len: usize) -> Result<Self, WireError> {
        Ok(self)
    }
    #[inline]
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self, WireError> {
        self.varint(index.into());
        Ok(self)
    }
    #[inline]
    fn serialize_map(self, len: Option<usize>) -> Result<Self, WireError> {
        self.length(len)?;
        Ok(self)
    }
    #[inline]
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self, WireError> {
        Ok(self)
    }
    #[inline]
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self, WireError> {
        self.varint(index.into());
        Ok(self)
    }
    fn is_human_readable(&self) -> bool {
        false
    }
}

/// Every compound writes its parts one after the other: the prefixes (a length, a variant
/// index) were written when it began.
macro_rules! parts {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for &mut Writer<'_> {
            type Ok = ();
            type Error = WireError;
            #[inline]
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Res {
                value.serialize(&mut **self)
            }
            #[inline]
            fn end(self) -> Res {
                Ok(())
            }
        }
    )*};
}

parts!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for &mut Writer<'_> {
    type Ok = ();
    type Error = WireError;
    #[inline]
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Res {
        key.serialize(&mut **self)
    }
    #[inline]
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Res {
        value.serialize(&mut **self)
    }
    #[inline]
    fn end(self) -> Res {
        Ok(())
    }
}

/// A struct's fields, likewise, their names unwritten.
macro_rules! fields {
    ($($trait:ident),*) => {$(
        impl ser::$trait for &mut Writer<'_> {
            type Ok = ();
            type Error = WireError;
            #[inline]
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                _key: &'static str,
                value: &T,
            ) -> Res {
                value.serialize(&mut **self)
            }
            #[inline]
            fn end(self) -> Res {
                Ok(())
            }
        }
    )*};
}

fields!(SerializeStruct, SerializeStructVariant);
