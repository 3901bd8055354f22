//! UTF-8 checks of short text: a word count's words are short and ASCII, and
//! `str::from_utf8`'s set-up costs more than the check of a few bytes.

/// `bytes` as UTF-8, if they are: `str::from_utf8(bytes).ok()`, with up to 16 ASCII bytes
/// checked as two overlapping words.
///
/// ```
/// use heron_proto::short_utf8::str_from;
/// assert_eq!(str_from(b"word"), Some("word"));
/// assert_eq!(str_from("mot\u{e9}".as_bytes()), Some("mot\u{e9}"));
/// assert_eq!(str_from(&[b'a', 0xff]), None);
/// ```
#[inline]
pub fn str_from(bytes: &[u8]) -> Option<&str> {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let n = bytes.len();
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let half = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let ascii = match n {
        8..=16 => (word(0) | word(n - 8)) & HIGH == 0,
        4..=7 => (half(0) | half(n - 4)) & HIGH as u32 == 0,
        0..=3 => bytes.iter().all(u8::is_ascii),
        _ => false,
    };
    if ascii {
        // SAFETY: every byte is below 0x80, and ASCII is valid UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(bytes) })
    } else {
        std::str::from_utf8(bytes).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_strings_are_checked_as_utf8_like_the_standard_library() {
        let mut cases: Vec<Vec<u8>> = Vec::new();
        for n in 0..20usize {
            let ascii: Vec<u8> = (0..n).map(|i| b'a' + i as u8).collect();
            cases.push(ascii.clone());
            for at in 0..n {
                for bad in [0x80u8, 0xC3, 0xFF] {
                    let mut b = ascii.clone();
                    b[at] = bad;
                    cases.push(b);
                }
            }
        }
        cases.extend([
            "é".as_bytes().to_vec(),
            "aé".into(),
            "abcdefgé".into(),
            "日本語".into(),
        ]);
        for b in cases {
            assert_eq!(str_from(&b), std::str::from_utf8(&b).ok(), "{b:?}");
        }
    }
}
