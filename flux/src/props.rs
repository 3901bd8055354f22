//! Java properties files (`java.util.Properties.load`), the format of Flux's `--filter`.
//!
//! Handles `key=value`, `key: value` and `key value`; comment lines starting with `#` or `!`;
//! a line ending in an odd number of backslashes continues on the next line (whose leading
//! white space is dropped); the escapes `\t`, `\n`, `\r`, `\f`, `\uXXXX` and `\` before any
//! other character (that character). A later key replaces an earlier one.

use std::collections::BTreeMap;

/// Parses properties text. An error names the (1-based) line of a malformed `\uXXXX` escape.
pub(crate) fn parse(text: &str) -> Result<BTreeMap<String, String>, (usize, String)> {
    let mut out = BTreeMap::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let first_line = i + 1;
        let start = lines[i].trim_start_matches([' ', '\t', '\x0c']);
        i += 1;
        if start.is_empty() || start.starts_with('#') || start.starts_with('!') {
            continue;
        }
        // join continuation lines: a line ending in an odd number of backslashes
        let mut logical = String::new();
        let mut cur = start;
        loop {
            if ends_with_odd_backslashes(cur) {
                logical.push_str(&cur[..cur.len() - 1]);
                if i == lines.len() {
                    break;
                }
                cur = lines[i].trim_start_matches([' ', '\t', '\x0c']);
                i += 1;
            } else {
                logical.push_str(cur);
                break;
            }
        }
        let (key, value) = split_key_value(&logical);
        let key = unescape(key).map_err(|e| (first_line, e))?;
        let value = unescape(value).map_err(|e| (first_line, e))?;
        out.insert(key, value);
    }
    Ok(out)
}

fn ends_with_odd_backslashes(s: &str) -> bool {
    s.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1
}

/// The raw (still escaped) key and value of a logical line.
fn split_key_value(line: &str) -> (&str, &str) {
    let bytes = line.as_bytes();
    let mut k = 0;
    while k < bytes.len() {
        match bytes[k] {
            b'\\' => k += 2,
            b'=' | b':' | b' ' | b'\t' | b'\x0c' => break,
            _ => k += 1,
        }
    }
    let k = k.min(bytes.len());
    let key = &line[..k];
    let mut rest = line[k..].trim_start_matches([' ', '\t', '\x0c']);
    if let Some(r) = rest.strip_prefix(['=', ':']) {
        rest = r.trim_start_matches([' ', '\t', '\x0c']);
    }
    (key, rest)
}

fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            None => {}
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\x0c'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = u32::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| hex.len() == 4)
                    .ok_or_else(|| format!("malformed \\uXXXX escape \"\\u{hex}\""))?;
                out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
            }
            Some(other) => out.push(other),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(text: &str) -> BTreeMap<String, String> {
        parse(text).unwrap()
    }

    #[test]
    fn three_separators_and_comments() {
        let p = props("# comment\n! also a comment\n\n  a=1\nb: 2\nc 3\nd\t=\t4\ne\nf = x = y\n");
        assert_eq!(p["a"], "1");
        assert_eq!(p["b"], "2");
        assert_eq!(p["c"], "3");
        assert_eq!(p["d"], "4");
        assert_eq!(p["e"], "");
        assert_eq!(p["f"], "x = y");
        assert!(!p.contains_key("#"));
        assert_eq!(p.len(), 6);
    }

    #[test]
    fn continuation_lines_drop_leading_blanks() {
        let p = props("list = a, \\\n        b, \\\n   c\nnext=1\n");
        assert_eq!(p["list"], "a, b, c");
        assert_eq!(p["next"], "1");
    }

    #[test]
    fn escaped_backslash_does_not_continue() {
        let p = props("path=C:\\\\dir\\\\\nx=1\n");
        assert_eq!(p["path"], "C:\\dir\\");
        assert_eq!(p["x"], "1");
    }

    #[test]
    fn escapes_in_keys_and_values() {
        let p = props("my\\ key\\:x = tab\\there \\u0041\\z\n");
        assert_eq!(p["my key:x"], "tab\there Az");
    }

    #[test]
    fn later_keys_win_and_bad_unicode_names_the_line() {
        assert_eq!(props("a=1\na=2\n")["a"], "2");
        let err = parse("ok=1\nbad=\\u12G4\n").unwrap_err();
        assert_eq!(err.0, 2);
        assert!(err.1.contains("\\uXXXX"), "{}", err.1);
    }

    #[test]
    fn continuation_at_end_of_file() {
        assert_eq!(props("a=x\\")["a"], "x");
    }
}
