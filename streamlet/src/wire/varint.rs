//! LEB128 varints as postcard writes them (seven bits a byte, low groups first, the top bit
//! set on every byte but the last; signed integers zigzagged first), written and read a word
//! at a time rather than a byte at a time: a nanosecond timestamp takes seven to nine bytes,
//! and postcard's byte loop over them was about half of the bench element's encoding.

use super::WireError;

const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// The low 56 bits of `v` as eight 7-bit groups, one in the low bits of each byte.
#[inline(always)]
fn spread(v: u64) -> u64 {
    (v & 0x7f)
        | ((v << 1) & 0x7f00)
        | ((v << 2) & 0x7f_0000)
        | ((v << 3) & 0x7f00_0000)
        | ((v << 4) & 0x7f_0000_0000)
        | ((v << 5) & 0x7f00_0000_0000)
        | ((v << 6) & 0x7f_0000_0000_0000)
        | ((v << 7) & 0x7f00_0000_0000_0000)
}

/// The inverse of [`spread`]: the 7-bit groups of eight bytes (their top bits ignored).
#[inline(always)]
fn gather(word: u64) -> u64 {
    let x = word & !HIGH_BITS;
    (x & 0x7f)
        | ((x >> 1) & (0x7f << 7))
        | ((x >> 2) & (0x7f << 14))
        | ((x >> 3) & (0x7f << 21))
        | ((x >> 4) & (0x7f << 28))
        | ((x >> 5) & (0x7f << 35))
        | ((x >> 6) & (0x7f << 42))
        | ((x >> 7) & (0x7f << 49))
}

/// Appends `v` as a varint (1 to 10 bytes): 300 is `[0xac, 0x02]`.
#[inline(always)]
pub(crate) fn put_u64(out: &mut Vec<u8>, v: u64) {
    if v < 0x80 {
        out.push(v as u8);
        return;
    }
    let start = out.len();
    if v < 1 << 56 {
        let bits = 64 - v.leading_zeros() as usize;
        let n = bits.div_ceil(7);
        let more = HIGH_BITS & ((1u64 << (8 * (n - 1))) - 1);
        out.extend_from_slice(&(spread(v) | more).to_le_bytes());
        out.truncate(start + n);
    } else {
        out.extend_from_slice(&(spread(v) | HIGH_BITS).to_le_bytes());
        let rest = v >> 56;
        if rest < 0x80 {
            out.push(rest as u8);
        } else {
            out.push(rest as u8 | 0x80);
            out.push((rest >> 7) as u8);
        }
    }
}

/// Appends a 128-bit `v` as a varint (1 to 19 bytes).
pub(crate) fn put_u128(out: &mut Vec<u8>, mut v: u128) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// `v` zigzagged: small magnitudes of either sign become small unsigned numbers.
#[inline(always)]
pub(crate) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// The inverse of [`zigzag`].
#[inline(always)]
pub(crate) fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

/// [`zigzag`] for 128 bits.
pub(crate) fn zigzag128(v: i128) -> u128 {
    ((v << 1) ^ (v >> 127)) as u128
}

/// [`unzigzag`] for 128 bits.
pub(crate) fn unzigzag128(v: u128) -> i128 {
    (v >> 1) as i128 ^ -((v & 1) as i128)
}

/// Reads a varint of at most `max_len` bytes whose value is at most `max` (an integer type's
/// bounds: 3 bytes and `u16::MAX`, 5 and `u32::MAX`, 10 and `u64::MAX`), as postcard does: a
/// longer one, or one whose last byte carries bits above `max`, is [`WireError::BadVarint`].
#[inline(always)]
pub(crate) fn take(input: &mut &[u8], max_len: usize, max: u64) -> Result<u64, WireError> {
    let first = *input.first().ok_or(WireError::End)?;
    if first < 0x80 {
        *input = &input[1..];
        return Ok(u64::from(first));
    }
    // the first eight bytes as a word; near the end of the input, what is left, zero-padded
    // (a zero byte ends a varint, so a varint cut short ends in the padding: `End`)
    let word = match input.get(..8) {
        Some(eight) => u64::from_le_bytes(eight.try_into().expect("8 bytes")),
        None => load_short(input),
    };
    let last = !word & HIGH_BITS;
    let (v, n) = if last != 0 {
        let n = last.trailing_zeros() as usize / 8 + 1;
        if n > input.len() {
            return Err(WireError::End);
        }
        let kept = if n == 8 {
            word
        } else {
            word & ((1u64 << (8 * n)) - 1)
        };
        (gather(kept), n)
    } else {
        take_after_eight(input, gather(word))?
    };
    if n > max_len || v > max {
        return Err(WireError::BadVarint);
    }
    *input = &input[n..];
    Ok(v)
}

/// Up to seven bytes as the low bytes of a word, the rest zero: loaded as at most two
/// overlapping words of four, not copied to a buffer and loaded back (a load spanning two
/// smaller stores waits for both to retire: that cost more than the varint).
#[inline(always)]
fn load_short(b: &[u8]) -> u64 {
    let n = b.len();
    let four = |at: usize| u64::from(u32::from_le_bytes(b[at..at + 4].try_into().expect("4")));
    match n {
        4..=7 => four(0) | four(n - 4) << (8 * (n - 4)),
        1..=3 => {
            u64::from(b[0])
                | u64::from(b[n / 2]) << (8 * (n / 2))
                | u64::from(b[n - 1]) << (8 * (n - 1))
        }
        _ => 0,
    }
}

/// A varint whose first eight bytes all continue: the low 56 bits, then one or two more bytes
/// (the tenth may only hold bit 63).
#[inline]
fn take_after_eight(input: &[u8], low: u64) -> Result<(u64, usize), WireError> {
    let ninth = *input.get(8).ok_or(WireError::End)?;
    if ninth < 0x80 {
        return Ok((low | u64::from(ninth) << 56, 9));
    }
    let tenth = *input.get(9).ok_or(WireError::End)?;
    if tenth > 1 {
        return Err(WireError::BadVarint);
    }
    Ok((
        low | u64::from(ninth & 0x7f) << 56 | u64::from(tenth) << 63,
        10,
    ))
}

/// Reads a 128-bit varint (at most 19 bytes, the last holding at most two bits).
pub(crate) fn take_u128(input: &mut &[u8]) -> Result<u128, WireError> {
    let mut v = 0u128;
    for i in 0..19 {
        let b = *input.get(i).ok_or(WireError::End)?;
        v |= u128::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            if i == 18 && b > 0x03 {
                return Err(WireError::BadVarint);
            }
            *input = &input[i + 1..];
            return Ok(v);
        }
    }
    Err(WireError::BadVarint)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The varint of `v` written the plain way, a byte at a time.
    fn reference(mut v: u128) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }

    fn samples() -> Vec<u64> {
        let mut s = vec![
            0,
            1,
            0x7f,
            0x80,
            300,
            u64::MAX,
            u64::MAX - 1,
            1_796_000_000_123_456_789,
        ];
        for bit in 0..64 {
            s.extend([1u64 << bit, (1u64 << bit) - 1, (1u64 << bit) + 1]);
        }
        s
    }

    #[test]
    fn writes_and_reads_every_length() {
        for v in samples() {
            let mut out = vec![0xee];
            put_u64(&mut out, v);
            assert_eq!(&out[1..], &reference(u128::from(v))[..], "{v}");
            // read back with the input ending right after it and with bytes after it
            for tail in [&[][..], &[0xff; 12][..]] {
                let mut bytes = out[1..].to_vec();
                bytes.extend_from_slice(tail);
                let mut input = &bytes[..];
                assert_eq!(take(&mut input, 10, u64::MAX).unwrap(), v, "{v}");
                assert_eq!(input, tail, "{v}");
            }
        }
    }

    #[test]
    fn the_128_bit_ones_too() {
        for v in [0u128, 1, 300, u128::from(u64::MAX) + 1, u128::MAX] {
            let mut out = Vec::new();
            put_u128(&mut out, v);
            assert_eq!(out, reference(v));
            let mut input = &out[..];
            assert_eq!(take_u128(&mut input).unwrap(), v);
            assert!(input.is_empty());
        }
    }

    #[test]
    fn refuses_what_postcard_refuses() {
        // eleven bytes, a tenth byte above bit 63, a truncated varint
        let long = [0xff; 11];
        assert!(matches!(
            take(&mut &long[..], 10, u64::MAX),
            Err(WireError::BadVarint)
        ));
        let mut over = vec![0xff; 9];
        over.push(0x02);
        assert!(matches!(
            take(&mut &over[..], 10, u64::MAX),
            Err(WireError::BadVarint)
        ));
        assert!(matches!(
            take(&mut &[0x80, 0x80][..], 10, u64::MAX),
            Err(WireError::End)
        ));
        // u32: five bytes at most, the fifth at most 0x0f
        let mut input = &[0xff, 0xff, 0xff, 0xff, 0x0f][..];
        assert_eq!(
            take(&mut input, 5, u32::MAX.into()).unwrap(),
            u64::from(u32::MAX)
        );
        let too_big = [0x80, 0x80, 0x80, 0x80, 0x10];
        assert!(matches!(
            take(&mut &too_big[..], 5, u32::MAX.into()),
            Err(WireError::BadVarint)
        ));
        let too_long = [0x81, 0x80, 0x80, 0x80, 0x80, 0x00];
        assert!(matches!(
            take(&mut &too_long[..], 5, u32::MAX.into()),
            Err(WireError::BadVarint)
        ));
        // u16: three bytes, at most 0xffff
        let mut input = &[0xff, 0xff, 0x03][..];
        assert_eq!(take(&mut input, 3, u16::MAX.into()).unwrap(), 0xffff);
        assert!(matches!(
            take(&mut &[0x80, 0x80, 0x04][..], 3, u16::MAX.into()),
            Err(WireError::BadVarint)
        ));
    }

    #[test]
    fn short_loads_are_the_bytes_zero_padded() {
        for n in 0..8 {
            let b: Vec<u8> = (1..=n as u8).collect();
            let mut padded = [0u8; 8];
            padded[..n].copy_from_slice(&b);
            assert_eq!(load_short(&b), u64::from_le_bytes(padded), "{n}");
        }
    }

    #[test]
    fn zigzag_round_trips() {
        for v in [
            0i64,
            1,
            -1,
            63,
            -64,
            i64::MAX,
            i64::MIN,
            1_796_000_000_123_456_789,
        ] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!((zigzag(0), zigzag(-1), zigzag(1), zigzag(-2)), (0, 1, 2, 3));
        for v in [0i128, -1, i128::MAX, i128::MIN] {
            assert_eq!(unzigzag128(zigzag128(v)), v);
        }
    }
}
