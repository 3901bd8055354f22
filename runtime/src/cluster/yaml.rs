//! The flat subset of YAML that Heron's cluster files use: one `key: value` per line.

use std::collections::BTreeMap;

/// A line that is not flat `key: value` YAML.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct YamlError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

/// Parses `key: value` lines. Blank lines, `#` comments (whole-line, or after a value
/// following a space), and `---` / `...` document markers are skipped; values may be quoted
/// with `"` or `'`; an empty value is the empty string (YAML's null). Nested maps, lists and
/// multi-line values are refused with the line number.
pub fn parse_flat_yaml(text: &str) -> Result<BTreeMap<String, String>, YamlError> {
    let mut out = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let bad = |reason: &str| YamlError {
            line: i + 1,
            reason: reason.to_string(),
        };
        let trimmed = raw.trim_end();
        let content = trimmed.trim_start();
        if content.is_empty() || content.starts_with('#') || content == "---" || content == "..." {
            continue;
        }
        if trimmed.len() != content.len() || content.starts_with("- ") {
            return Err(bad(
                "nested values and lists are not supported (flat key: value only)",
            ));
        }
        let (key, value) = split_key(content).ok_or_else(|| bad("expected key: value"))?;
        let value = scalar(value).map_err(|r| bad(&r))?;
        if matches!(value.as_str(), "|" | ">") {
            return Err(bad("multi-line values are not supported"));
        }
        out.insert(unquote(key).map_err(|r| bad(&r))?, value);
    }
    Ok(out)
}

/// Splits at the first `: ` (or a trailing `:`) outside quotes.
fn split_key(line: &str) -> Option<(&str, &str)> {
    let mut quote = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, ':') => {
                let rest = &line[i + 1..];
                if rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t') {
                    let key = line[..i].trim();
                    return (!key.is_empty()).then_some((key, rest.trim()));
                }
            }
            _ => {}
        }
    }
    None
}

fn scalar(v: &str) -> Result<String, String> {
    if v.starts_with('"') || v.starts_with('\'') {
        let q = v.chars().next().unwrap_or('"');
        let end = v[1..]
            .find(q)
            .ok_or_else(|| format!("unterminated quote in {v:?}"))?;
        let rest = v[end + 2..].trim();
        if !rest.is_empty() && !rest.starts_with('#') {
            return Err(format!("text after the quoted value: {rest:?}"));
        }
        return Ok(v[1..end + 1].to_string());
    }
    if v.starts_with('{') || v.starts_with('[') {
        return Err("flow maps and lists are not supported".into());
    }
    let v = match v.find(" #") {
        Some(i) => v[..i].trim_end(),
        None => v,
    };
    Ok(if v == "~" || v == "null" {
        String::new()
    } else {
        v.to_string()
    })
}

fn unquote(k: &str) -> Result<String, String> {
    if k.starts_with('"') || k.starts_with('\'') {
        scalar(k)
    } else {
        Ok(k.to_string())
    }
}
