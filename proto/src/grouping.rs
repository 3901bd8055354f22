//! The stream managers' fields grouping, shared with the instances that address their sets
//! to one task: the hash of a tuple's grouping values and its remainder by the consumer's
//! task count, computed without a division.
//!
//! The hash (`docs/internals.md`): for each grouping value as the tuple encodes it, xxh3-64 of
//! its payload seeded with its tag byte ([`value_hash`]), combined as `h = h * 31 + x`
//! (wrapping) from 0, over the grouping fields in schema order; the task is the consumer's
//! `h % n`-th, ascending. Every stream manager and every instance computes the same. The tag
//! is a seed rather than part of the input so that an emitter hashes a value where it lies
//! (a word in its `String`) without encoding it first.
//!
//! The remainder is Lemire, Kaser and Kurz's direct method ("Faster remainder by direct
//! computation", 2019): with `c = ⌈2^128 / n⌉`, the remainder of a 64-bit `h` by a 32-bit `n`
//! is the high 64 bits of `(c·h mod 2^128) · n`. Exact for every `h` and every `n ≥ 1`; a
//! 64-bit `div` (tens of cycles, its result awaited at once) was half of the grouping's time.

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// The hash of one encoded value: xxh3-64 of its payload (what follows the tag byte), seeded
/// with the tag (an empty value hashes as an empty payload with tag 0).
///
/// ```
/// use heron_proto::grouping::{value_hash, value_parts_hash};
/// assert_eq!(value_hash(b"\x04hello"), value_parts_hash(4, b"hello"));
/// assert_ne!(value_hash(b"\x04hello"), value_hash(b"\x05hello"), "the tag counts");
/// ```
#[inline]
pub fn value_hash(encoded: &[u8]) -> u64 {
    match encoded.split_first() {
        Some((&tag, payload)) => value_parts_hash(tag, payload),
        None => value_parts_hash(0, &[]),
    }
}

/// [`value_hash`] of a value given as its tag and payload, where it lies.
#[inline]
pub fn value_parts_hash(tag: u8, payload: &[u8]) -> u64 {
    xxh3_64_with_seed(payload, u64::from(tag))
}

/// Folds one value's hash into a tuple's: `h * 31 + x`, wrapping.
#[inline]
pub fn combine(h: u64, x: u64) -> u64 {
    h.wrapping_mul(31).wrapping_add(x)
}

/// One step of the fields hash over an encoded value: [`combine`] of `h` and
/// [`value_hash`]`(value)`; fold it from 0 over a tuple's grouping values (encoded, in schema
/// order).
///
/// ```
/// use heron_proto::grouping::{fields_hash_step, Modulus};
/// let values: [&[u8]; 2] = [b"\x04hello", b"\x02\x07\0\0\0\0\0\0\0"];
/// let h = values.iter().fold(0, |h, v| fields_hash_step(h, v));
/// assert_eq!(Modulus::new(3).rem(h), (h % 3) as usize);
/// ```
#[inline]
pub fn fields_hash_step(h: u64, value: &[u8]) -> u64 {
    combine(h, value_hash(value))
}

/// A divisor with its precomputed reciprocal: `h % n` in a few multiplies instead of a
/// division, and in one `and` when `n` is a power of two (the parallelism of most
/// components).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Modulus {
    n: u32,
    /// `⌈2^128 / n⌉ mod 2^128` (0 for `n == 1`, where every remainder is 0).
    c: u128,
    /// `n - 1` when `n` is a power of two, else `u64::MAX`.
    mask: u64,
}

impl Modulus {
    /// The modulus `n`.
    ///
    /// # Panics
    /// When `n` is 0 or above `u32::MAX`.
    pub fn new(n: usize) -> Modulus {
        let n = u32::try_from(n).expect("a task count fits 32 bits");
        assert!(n > 0, "a modulus of 0");
        // ⌈2^128 / n⌉ = ⌊(2^128 - 1) / n⌋ + 1; wraps to 0 for n = 1
        let c = (u128::MAX / u128::from(n)).wrapping_add(1);
        let mask = if n.is_power_of_two() {
            u64::from(n - 1)
        } else {
            u64::MAX
        };
        Modulus { n, c, mask }
    }

    /// `h % n`.
    #[inline]
    pub fn rem(&self, h: u64) -> usize {
        if self.mask != u64::MAX {
            return (h & self.mask) as usize;
        }
        let low = self.c.wrapping_mul(u128::from(h));
        // the high 64 bits of the 160-bit product low · n, from its two 64-bit halves
        let n = u128::from(self.n);
        let hi = (low >> 64) * n;
        let lo = (u128::from(low as u64) * n) >> 64;
        ((hi + lo) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_the_remainder_for_every_kind_of_hash_and_divisor() {
        let edges = [
            0,
            1,
            2,
            3,
            31,
            u64::MAX,
            u64::MAX - 1,
            1 << 63,
            (1 << 63) - 1,
            1 << 32,
        ];
        let divisors = (1..=130).chain([
            255,
            256,
            1000,
            65_536,
            65_537,
            1 << 31,
            u32::MAX - 1,
            u32::MAX,
        ]);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for n in divisors {
            let m = Modulus::new(n as usize);
            for &h in &edges {
                assert_eq!(m.rem(h), (h % u64::from(n)) as usize, "{h} % {n}");
            }
            for _ in 0..2000 {
                // xorshift: hashes across the whole 64-bit range
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                assert_eq!(m.rem(x), (x % u64::from(n)) as usize, "{x} % {n}");
                let near = x - x % u64::from(n);
                for h in [
                    near,
                    near.wrapping_sub(1),
                    near.wrapping_add(u64::from(n) - 1),
                ] {
                    assert_eq!(m.rem(h), (h % u64::from(n)) as usize, "{h} % {n}");
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "a modulus of 0")]
    fn zero_is_refused() {
        Modulus::new(0);
    }
}
