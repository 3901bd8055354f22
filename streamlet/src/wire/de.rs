//! The decoder: a serde deserializer over a borrowed slice. Text and bytes are lent from the
//! slice, so a `String` decoded in place copies its bytes once, into the buffer it had.

use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};

use super::varint::{take, take_u128, unzigzag, unzigzag128};
use super::WireError;

/// Reads values from the front of `input`.
pub(crate) struct Reader<'de> {
    pub input: &'de [u8],
}

type Res<T> = Result<T, WireError>;

impl<'de> Reader<'de> {
    /// Every byte read, or [`WireError::Trailing`].
    #[inline]
    pub fn finish(&self) -> Res<()> {
        match self.input.len() {
            0 => Ok(()),
            n => Err(WireError::Trailing(n)),
        }
    }

    #[inline(always)]
    fn byte(&mut self) -> Res<u8> {
        let (&b, rest) = self.input.split_first().ok_or(WireError::End)?;
        self.input = rest;
        Ok(b)
    }

    #[inline(always)]
    fn take_n(&mut self, n: usize) -> Res<&'de [u8]> {
        if n > self.input.len() {
            return Err(WireError::End);
        }
        let (head, rest) = self.input.split_at(n);
        self.input = rest;
        Ok(head)
    }

    #[inline(always)]
    fn fixed<const N: usize>(&mut self) -> Res<[u8; N]> {
        Ok(self.take_n(N)?.try_into().expect("N bytes"))
    }

    #[inline(always)]
    fn u16(&mut self) -> Res<u16> {
        Ok(take(&mut self.input, 3, u16::MAX.into())? as u16)
    }

    #[inline(always)]
    fn u32(&mut self) -> Res<u32> {
        Ok(take(&mut self.input, 5, u32::MAX.into())? as u32)
    }

    #[inline(always)]
    fn u64(&mut self) -> Res<u64> {
        take(&mut self.input, 10, u64::MAX)
    }

    /// A length (of text, bytes, a sequence or a map).
    #[inline(always)]
    fn len(&mut self) -> Res<usize> {
        usize::try_from(self.u64()?).map_err(|_| WireError::BadVarint)
    }

    #[inline(always)]
    fn text(&mut self) -> Res<&'de str> {
        let n = self.len()?;
        let bytes = self.take_n(n)?;
        heron_proto::short_utf8::str_from(bytes).ok_or(WireError::BadText)
    }
}

impl<'de> de::Deserializer<'de> for &mut Reader<'de> {
    type Error = WireError;

    fn deserialize_any<V: Visitor<'de>>(self, _v: V) -> Res<V::Value> {
        Err(WireError::NotSelfDescribing)
    }
    #[inline]
    fn deserialize_bool<V: Visitor<'de>>(self, v: V) -> Res<V::Value> {
        match self.byte()? {
            0 => v.visit_bool(false),
            1 => v.visit_bool(true),
            _ => Err(WireError::BadBool),
        }
    }
    #[inline]
    fn deserialize_i8<V: Visitor<'de>>(self, v: V) -> Res<V::Value> {
        v.visit_i8(self.byte()? as i8)
    }
    #[inline]
    fn deserialize_i16<V: Visitor<'de>>(self, v: V) -> Res<V::Value> {
        v.visit_i16(unzigzag(self.u16()?.into()) as i16)
    }
    #[inline]
    fn deserialize_i32<V: Visitor<'de>>(self, v: V) -> Res<V::Value> {
        v.visit_i32(unzigzag(self.u32()?.into()) as i32)
    }
    #[inline]
    fn deserialize_i64<V: Visitor<'de>>(self, v: V) -> Res<V::Value> {
        v.visit_i64(unzigzag(self.u64()?))
    }
    fn deserialize_i128<V: Visitor<'de>>(self, v: V) -> Res<V::Value> {
        v.visit_i128(unzigzag128(take_u128(&mut self.input)?))
    }
    #[inline]
    fn deserialize_u8<V: Visitor<'de>>(self, v: V) -> Res<V::Value> {
        v.visit_u8(self.byte()?)
    }
    #[inline]
    fn deserialize_u16<V: Visitor<'de>>(self, v: V) -> Res<V::Value> {
        v.visit_u16(self.u16()?)
    }
    #[inline]
    fn deserialize_u32<V: Visitor<'de>>(self, v: V) -> Res<V::Value> {
        v.visit_u32(self.u32()?)
    }
    #[inline]
    fn deserialize_u64<V: Visitor<'de>>(self, v: V) -> Res<V::Value> {
        v.visit_u64(self.u64()?)
    }
    fn deserialize_u128<V: Visitor<'de>>(self, v: V) -> Res<V::Value> {
        v.visit_u128(take_u128(&mut self.input)?)
    }
    #[inline]
    fn deserialize_f32<V: Visitor<'de>>(self, v: V) -> Res<V::Value> {
        v.visit_f32(f32::from_le_bytes(self.fixed()?))
    }
    #[inline]
    fn deserialize_f64<V: Visitor<'de>>(self, v: V) -> Res<V::Value> {
        v.visit_f64(f64::from_le_bytes(self.fixed()?))
    }
    fn deserialize_char<V: Visitor<'de>>(self, v: V) -> Res<V::Value> {
        let mut chars = self.text()?.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => v.visit_char(c),
            _ => Err(WireError::BadText),
        }
    }
    #[inline]
    fn deserialize_str<V: Visitor<'de>>(self, v: V) -> Res<V::Value> {
        v.visit_borrowed_str(self.text()?)
    }
    #[inline]
    fn deserialize_string<V: Visitor<'de>>(self, v: V) -> Res<V::Value> {
        v.visit_borrowed_str(self.text()?)
    }
    #[inline]
    fn deserialize_bytes<V: Visitor<'de>>(self, v: V) -> Res<V::Value> {
        let n = self.len()?;
        v.visit_borrowed_bytes(self.take_n(n)?)
    }
    #[inline]
    fn deserialize_byte_buf<V: Visitor<'de>>(self, v: V) -> Res<V::Value> {
        self.deserialize_bytes(v)
    }
    #[inline]
    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Res<V::Value> {
        match self.byte()? {
            0 => v.visit_none(),
            1 => v.visit_some(self),
            _ => Err(WireError::BadOption),
        }
    }
    #[inline]
    fn deserialize_unit<V: Visitor<'de>>(self, v: V) -> Res<V::Value> {
        v.visit_unit()
    }
    #[inline]
    fn deserialize_unit_struct<V: Visitor<'de>>(self, _name: &'static str, v: V) -> Res<V::Value> {
        v.visit_unit()
    }
    #[inline]
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Res<V::Value> {
        v.visit_newtype_struct(self)
    }
    #[inline]
    fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Res<V::Value> {
        let left = self.len()?;
        v.visit_seq(Parts { r: self, left })
    }
    #[inline]
    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, v: V) -> Res<V::Value> {
        v.visit_seq(Parts { r: self, left: len })
    }
    #[inline]
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        len: usize,
        v: V,
    ) -> Res<V::Value> {
        self.deserialize_tuple(len, v)
    }
    #[inline]
    fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Res<V::Value> {
        let left = self.len()?;
        v.visit_map(Parts { r: self, left })
    }
    #[inline]
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Res<V::Value> {
        self.deserialize_tuple(fields.len(), v)
    }
    #[inline]
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        v: V,
    ) -> Res<V::Value> {
        v.visit_enum(self)
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, _v: V) -> Res<V::Value> {
        Err(WireError::NotSelfDescribing)
    }
    fn deserialize_ignored_any<V: Visitor<'de>>(self, _v: V) -> Res<V::Value> {
        Err(WireError::NotSelfDescribing)
    }
    fn is_human_readable(&self) -> bool {
        false
    }
}

/// The parts of a sequence, tuple, struct or map: `left` more to read.
struct Parts<'a, 'de> {
    r: &'a mut Reader<'de>,
    left: usize,
}

impl<'de> de::SeqAccess<'de> for Parts<'_, 'de> {
    type Error = WireError;

    #[inline]
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Res<Option<T::Value>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.r).map(Some)
    }

    #[inline]
    fn size_hint(&self) -> Option<usize> {
        // no more than the bytes left: a corrupt length must not make a caller reserve much
        Some(self.left.min(self.r.input.len()))
    }
}

impl<'de> de::MapAccess<'de> for Parts<'_, 'de> {
    type Error = WireError;

    #[inline]
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Res<Option<K::Value>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.r).map(Some)
    }

    #[inline]
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Res<V::Value> {
        seed.deserialize(&mut *self.r)
    }

    #[inline]
    fn size_hint(&self) -> Option<usize> {
        Some(self.left.min(self.r.input.len()))
    }
}

impl<'de> de::EnumAccess<'de> for &mut Reader<'de> {
    type Error = WireError;
    type Variant = Self;

    #[inline]
    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Res<(V::Value, Self)> {
        let index = self.u32()?;
        let v = seed.deserialize(index.into_deserializer())?;
        Ok((v, self))
    }
}

impl<'de> de::VariantAccess<'de> for &mut Reader<'de> {
    type Error = WireError;

    #[inline]
    fn unit_variant(self) -> Res<()> {
        Ok(())
    }
    #[inline]
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Res<T::Value> {
        seed.deserialize(self)
    }
    #[inline]
    fn tuple_variant<V: Visitor<'de>>(self, len: usize, v: V) -> Res<V::Value> {
        de::Deserializer::deserialize_tuple(self, len, v)
    }
    #[inline]
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        v: V,
    ) -> Res<V::Value> {
        de::Deserializer::deserialize_tuple(self, fields.len(), v)
    }
}
