//! UTF-8 checks of short text: a word count's words and sentences are short and ASCII, and
//! `str::from_utf8`'s set-up costs more than the check of a few dozen bytes.

/// Up to this many bytes, ASCII text is checked a word (8 bytes) at a time here; longer
/// text goes to `str::from_utf8`, whose own ASCII path pays off from about there.
pub const ASCII_WORDS_MAX: usize = 256;

/// `bytes` as UTF-8, if they are: `str::from_utf8(bytes).ok()`, with up to
/// [`ASCII_WORDS_MAX`] ASCII bytes checked as 8-byte words (the last one overlapping).
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
        17..=ASCII_WORDS_MAX => {
            let words = bytes.chunks_exact(8);
            let last = word(n - 8);
            let any = words.fold(last, |acc, w| {
                acc | u64::from_le_bytes(w.try_into().expect("8 bytes"))
            });
            any & HIGH == 0
        }
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
        for n in (0..40usize).chain([63, 64, 65, 200, 255, 256, 257, 300]) {
            let ascii: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
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
            "a sentence of some length with one accent: café, at its end".into(),
            [&[b'x'; 100][..], "é".as_bytes(), &[b'y'; 100][..]].concat(),
            [&[b'x'; 100][..], &"é".as_bytes()[..1], &[b'y'; 100][..]].concat(),
        ]);
        for b in cases {
            assert_eq!(str_from(&b), std::str::from_utf8(&b).ok(), "{b:?}");
        }
    }
}
