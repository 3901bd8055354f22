//! Protobuf wire primitives for the crates that read and write Heron's tuple messages by hand
//! on the hot path (the instance's emitter and the stream manager's router). One definition
//! here, on top of prost's own varint encoding.

use bytes::BufMut;

/// Appends `value` as a varint.
#[inline]
pub fn put_varint(buf: &mut impl BufMut, value: u64) {
    prost::encoding::encode_varint(value, buf);
}

/// Writes `value` as a varint at the start of `dst` (which must have room for it: at most 10
/// bytes) and returns the number of bytes written.
#[inline]
pub fn write_varint(dst: &mut [u8], value: u64) -> usize {
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
            u32::MAX as u64,
            u64::MAX,
        ] {
            let mut a = Vec::new();
            put_varint(&mut a, v);
            let mut b = [0u8; 10];
            let n = write_varint(&mut b, v);
            assert_eq!(&b[..n], &a[..], "{v}");
            assert_eq!(varint_len(v), a.len(), "{v}");
        }
        let mut a = Vec::new();
        put_varint(&mut a, 300);
        assert_eq!(a, [0xac, 0x02]);
        assert_eq!(int32(-1), u64::MAX);
        assert_eq!(varint_len(int32(-1)), 10);
    }
}
