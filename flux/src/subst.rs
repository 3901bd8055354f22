//! `${...}` substitution, done on the raw text before YAML parsing, line by line (so line
//! numbers stay right), as Flux does:
//!
//! - `${key}`: the value of `key` in the `--filter` properties file;
//! - `${key[i]}`: element `i` (from 0) of a list-valued property such as `["a", "b"]`
//!   (quotes around the element are dropped, as Flux does);
//! - `${ENV-NAME}`: the environment variable `NAME`, with `--env-filter` (a filter property
//!   literally named `ENV-NAME` is used when env filtering is off).
//!
//! Unlike Flux, which leaves an unknown `${...}` as it is with a warning, every `${...}` that
//! cannot be replaced is an error naming it and its line. Lines whose first non-blank character
//! is `#` are YAML comments and are left alone.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Location, Problem};

/// What `${...}` can be replaced with.
pub(crate) struct Substitutions<'a> {
    /// The filter properties and the file they came from.
    pub properties: Option<(&'a Path, &'a BTreeMap<String, String>)>,
    /// `--env-filter`.
    pub env_filter: bool,
    /// Looks up an environment variable.
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

impl Substitutions<'_> {
    /// `text` with every `${...}` replaced, or every one that could not be.
    pub(crate) fn apply(&self, file: &Path, text: &str) -> Result<String, Vec<Problem>> {
        let mut out = String::with_capacity(text.len());
        let mut problems = Vec::new();
        for (n, line) in text.split_inclusive('\n').enumerate() {
            if line.trim_start().starts_with('#') || !line.contains("${") {
                out.push_str(line);
                continue;
            }
            let mut rest = line;
            let mut col = 1;
            while let Some(start) = rest.find("${") {
                let Some(len) = rest[start + 2..].find('}') else {
                    break;
                };
                let var = &rest[start + 2..start + 2 + len];
                let at = col + rest[..start].chars().count();
                out.push_str(&rest[..start]);
                match self.lookup(var) {
                    Ok(v) => out.push_str(&v),
                    Err(why) => {
                        problems.push(Problem::new(Location::new(file, n + 1, at), why));
                        out.push_str(&rest[start..start + 3 + len]);
                    }
                }
                col = at + var.chars().count() + 3;
                rest = &rest[start + 3 + len..];
            }
            out.push_str(rest);
        }
        if problems.is_empty() {
            Ok(out)
        } else {
            Err(problems)
        }
    }

    fn lookup(&self, var: &str) -> Result<String, String> {
        let props = self.properties.map(|(_, p)| p);
        let no_such = |what: &str| match self.properties {
            Some((path, _)) => format!(
                "undefined property {what}: {} has no key {var:?}",
                path.display()
            ),
            None => format!("undefined property {what}: no --filter properties file was given"),
        };
        let shown = format!("${{{var}}}");
        if let Some(name) = var.strip_prefix("ENV-") {
            if self.env_filter {
                return (self.env)(name)
                    .ok_or_else(|| format!("{shown}: the environment variable {name} is not set"));
            }
            return props.and_then(|p| p.get(var)).cloned().ok_or_else(|| {
                format!(
                    "{shown} needs --env-filter to be replaced by the environment variable {name}"
                )
            });
        }
        if let Some((list, index)) = list_index(var) {
            let value = props
                .and_then(|p| p.get(list))
                .ok_or_else(|| no_such(&shown))?;
            return list_element(value, index).ok_or_else(|| {
                format!("{shown}: property {list:?} = {value:?} is not a list [a, b, ...] with an element {index}")
            });
        }
        props
            .and_then(|p| p.get(var))
            .cloned()
            .ok_or_else(|| no_such(&shown))
    }
}

/// `name[3]` → `("name", 3)`.
fn list_index(var: &str) -> Option<(&str, usize)> {
    let open = var.rfind('[')?;
    let index = var[open + 1..].strip_suffix(']')?.parse().ok()?;
    Some((&var[..open], index))
}

/// Element `index` of `[a, "b", c]`, trimmed, one pair of surrounding quotes dropped.
fn list_element(value: &str, index: usize) -> Option<String> {
    let inner = value.trim().strip_prefix('[')?.strip_suffix(']')?;
    let elem = inner.split(',').nth(index)?.trim();
    let unquoted = ['"', '\'']
        .iter()
        .find_map(|q| elem.strip_prefix(*q).and_then(|e| e.strip_suffix(*q)))
        .unwrap_or(elem);
    Some(unquoted.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "HOME_DIR").then(|| "/home/storm".to_owned())
    }

    fn props() -> BTreeMap<String, String> {
        [
            ("kafka.topic", "words"),
            ("par", "3"),
            ("hosts", "[\"h1\", 'h2', h3]"),
            ("ENV-LITERAL", "from-props"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    fn apply(text: &str, with_props: bool, env_filter: bool) -> Result<String, Vec<Problem>> {
        let p = props();
        let path = Path::new("dev.properties");
        Substitutions {
            properties: with_props.then_some((path, &p)),
            env_filter,
            env: &env,
        }
        .apply(Path::new("t.yaml"), text)
    }

    #[test]
    fn replaces_every_occurrence_on_a_line() {
        let out = apply("a: ${kafka.topic}-${par}\nb: ${par}\n", true, false).unwrap();
        assert_eq!(out, "a: words-3\nb: 3\n");
    }

    #[test]
    fn list_elements_and_env() {
        let out = apply(
            "- ${hosts[0]}\n- ${hosts[1]}\n- ${hosts[2]}\nd: ${ENV-HOME_DIR}\n",
            true,
            true,
        )
        .unwrap();
        assert_eq!(out, "- h1\n- h2\n- h3\nd: /home/storm\n");
    }

    #[test]
    fn undefined_property_names_it_line_and_column() {
        let errs = apply("name: x\nconfig:\n  a: ${nope} ${par}\n", true, false).unwrap_err();
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].location.line, 3);
        assert_eq!(errs[0].location.column, 6);
        assert!(errs[0].message.contains("${nope}"), "{}", errs[0].message);
        assert!(
            errs[0].message.contains("dev.properties"),
            "{}",
            errs[0].message
        );
    }

    #[test]
    fn every_failure_is_reported() {
        let errs = apply("a: ${x}\nb: ${ENV-UNSET}\nc: ${hosts[7]}\n", true, true).unwrap_err();
        let lines: Vec<usize> = errs.iter().map(|p| p.location.line).collect();
        assert_eq!(lines, [1, 2, 3]);
        assert!(
            errs[1].message.contains("UNSET is not set"),
            "{}",
            errs[1].message
        );
        assert!(errs[2].message.contains("element 7"), "{}", errs[2].message);
    }

    #[test]
    fn env_without_env_filter() {
        let errs = apply("a: ${ENV-HOME_DIR}\n", false, false).unwrap_err();
        assert!(
            errs[0].message.contains("--env-filter"),
            "{}",
            errs[0].message
        );
        assert_eq!(
            apply("a: ${ENV-LITERAL}\n", true, false).unwrap(),
            "a: from-props\n"
        );
    }

    #[test]
    fn no_filter_file_and_comments() {
        let errs = apply("a: ${x}\n", false, false).unwrap_err();
        assert!(
            errs[0].message.contains("no --filter"),
            "{}",
            errs[0].message
        );
        let text = "# uses ${x} somewhere\n  # ${y}\na: 1 # ${par}\n";
        assert_eq!(
            apply(text, true, false).unwrap(),
            "# uses ${x} somewhere\n  # ${y}\na: 1 # 3\n"
        );
    }

    #[test]
    fn unterminated_is_left_alone() {
        assert_eq!(apply("a: ${par\n", true, false).unwrap(), "a: ${par\n");
    }
}
