//! Copies of a few bytes without a call to `memcpy`.
//!
//! A copy whose length is known only at run time compiles to a call into the C library's
//! `memcpy`, which for a handful of bytes costs more in the call and its dispatch than in the
//! copy: the cost table of the Streamlet word count (`docs/cost.md`) put about 10 ns per word
//! in `memcpy` called from postcard's varint writes alone. Up to 16 bytes are copied here as
//! at most two overlapping loads and stores of a fixed size, which compile to plain moves.

/// Appends `data` to `out`, copying short slices (up to 16 bytes) inline.
///
/// ```
/// use heron_proto::small_copy::extend_small;
/// let mut out = b"ab".to_vec();
/// for n in 0..=20u8 {
///     let data: Vec<u8> = (0..n).collect();
///     let before = out.len();
///     extend_small(&mut out, &data);
///     assert_eq!(&out[before..], &data[..]);
/// }
/// assert_eq!(&out[..2], b"ab");
/// ```
#[inline(always)]
pub fn extend_small(out: &mut Vec<u8>, data: &[u8]) {
    let n = data.len();
    let start = out.len();
    match n {
        0 => {}
        1..=3 => {
            out.push(data[0]);
            if n > 1 {
                out.push(data[1]);
            }
            if n > 2 {
                out.push(data[2]);
            }
        }
        4..=7 => {
            out.extend_from_slice(&fixed::<4>(data, 0));
            // the last four bytes, overlapping the first four when n < 8
            out.truncate(start + n - 4);
            out.extend_from_slice(&fixed::<4>(data, n - 4));
        }
        8..=16 => {
            out.extend_from_slice(&fixed::<8>(data, 0));
            out.truncate(start + n - 8);
            out.extend_from_slice(&fixed::<8>(data, n - 8));
        }
        _ => out.extend_from_slice(data),
    }
}

/// Copies `src` into `dst` (of the same length), short slices (up to 16 bytes) inline.
///
/// ```
/// use heron_proto::small_copy::copy_small;
/// for n in 0..=20u8 {
///     let src: Vec<u8> = (0..n).collect();
///     let mut dst = vec![0xff; n as usize];
///     copy_small(&mut dst, &src);
///     assert_eq!(dst, src);
/// }
/// ```
///
/// # Panics
/// When the lengths differ.
#[inline(always)]
pub fn copy_small(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    assert_eq!(
        dst.len(),
        n,
        "copy_small between slices of different lengths"
    );
    match n {
        0 => {}
        1..=3 => {
            dst[0] = src[0];
            dst[n / 2] = src[n / 2];
            dst[n - 1] = src[n - 1];
        }
        4..=7 => {
            dst[..4].copy_from_slice(&fixed::<4>(src, 0));
            dst[n - 4..].copy_from_slice(&fixed::<4>(src, n - 4));
        }
        8..=16 => {
            dst[..8].copy_from_slice(&fixed::<8>(src, 0));
            dst[n - 8..].copy_from_slice(&fixed::<8>(src, n - 8));
        }
        _ => dst.copy_from_slice(src),
    }
}

/// The `N` bytes of `data` from `at`, as an array (a fixed-size load).
#[inline(always)]
fn fixed<const N: usize>(data: &[u8], at: usize) -> [u8; N] {
    data[at..at + N].try_into().expect("N bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_length_and_offset_copies_exactly() {
        let src: Vec<u8> = (1..=40).collect();
        for n in 0..=40 {
            for prefix in 0..3 {
                let mut out = vec![0xee; prefix];
                extend_small(&mut out, &src[..n]);
                assert_eq!(out.len(), prefix + n);
                assert!(
                    out[..prefix].iter().all(|&b| b == 0xee),
                    "prefix kept at n={n}"
                );
                assert_eq!(&out[prefix..], &src[..n], "n={n}");
            }
            let mut dst = vec![0u8; n + 2];
            copy_small(&mut dst[1..=n], &src[..n]);
            assert_eq!(&dst[1..=n], &src[..n], "n={n}");
            assert_eq!((dst[0], dst[n + 1]), (0, 0), "nothing outside at n={n}");
        }
    }
}
