//! Reading a Flux file (substitution, then YAML) and merging its `includes`, as Flux does:
//!
//! - `includes: [{file: path, override: bool}]`; `file` is relative to the including file's
//!   folder. `resource: true` (a classpath resource) is refused: heron-rs has no classpath.
//! - Includes are merged in order after the including file. Without `override`, the include
//!   only adds what is missing (config keys, spouts, bolts and components by `id`, the name);
//!   with `override: true` its entries replace the ones with the same key or `id`. Streams are
//!   always appended.
//! - As in Flux, includes are one level deep: an included file's own `includes` are ignored
//!   (with a warning).

use std::path::{Path, PathBuf};

use crate::error::{Location, Problem};
use crate::subst::Substitutions;
use crate::yaml::{self, Key, Node, Value};

/// A spout, bolt, component bean or stream: its YAML node and the file it is in.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub file: PathBuf,
    pub node: Node,
}

impl Entry {
    pub fn at(&self) -> Location {
        self.node.at(&self.file)
    }

    /// Its `id`, when it is a string.
    pub fn id(&self) -> Option<&str> {
        self.node.get("id").and_then(Node::as_str)
    }
}

/// A config entry and the file it is in.
#[derive(Debug, Clone)]
pub(crate) struct ConfigEntry {
    pub file: PathBuf,
    pub key: Key,
    pub value: Node,
}

/// A Flux file with its includes merged in.
#[derive(Debug, Clone, Default)]
pub(crate) struct Merged {
    /// The file given to `load`.
    pub file: PathBuf,
    pub name: Option<Entry>,
    pub config: Vec<ConfigEntry>,
    pub components: Vec<Entry>,
    pub spouts: Vec<Entry>,
    pub bolts: Vec<Entry>,
    pub streams: Vec<Entry>,
    /// `includes` entries (only read from the top file).
    includes: Vec<Entry>,
    /// The file has a (refused) `topologySource`, so no `spouts` is not a problem of its own.
    pub topology_source: bool,
}

const TOP_LEVEL_KEYS: &[&str] = &[
    "name",
    "config",
    "components",
    "spouts",
    "bolts",
    "streams",
    "includes",
    "topologySource",
    "workerHooks",
];

/// Reads `path`, substitutes, parses and merges its includes. Every problem found is pushed
/// to `problems`; `None` when the file itself could not be read or parsed.
pub(crate) fn load(
    path: &Path,
    subst: &Substitutions<'_>,
    problems: &mut Vec<Problem>,
) -> Option<Merged> {
    let mut top = read_one(path, subst, problems)?;
    let includes = std::mem::take(&mut top.includes);
    for inc in includes {
        let Some((file, override_)) = include_target(&inc, problems) else {
            continue;
        };
        if !file.is_file() {
            problems.push(Problem::new(
                inc.at(),
                format!("included file {} does not exist", file.display()),
            ));
            continue;
        }
        if let Some(mut included) = read_one(&file, subst, problems) {
            if let Some(nested) = included.includes.first() {
                tracing::warn!(
                    "{}: includes of an included file are ignored (Flux includes are one level deep)",
                    nested.at()
                );
            }
            included.includes.clear();
            merge(&mut top, included, override_);
        }
    }
    Some(top)
}

/// The file an `includes` entry names (resolved against the including file's folder) and its
/// `override` flag.
fn include_target(inc: &Entry, problems: &mut Vec<Problem>) -> Option<(PathBuf, bool)> {
    let Some(map) = inc.node.as_map() else {
        problems.push(Problem::new(
            inc.at(),
            format!(
                "an include must be a mapping with `file:`, not {}",
                inc.node.kind()
            ),
        ));
        return None;
    };
    let mut ok = true;
    for (k, v) in map {
        let at = Location::new(&inc.file, k.line, k.col);
        match k.name.as_str() {
            "file" if v.as_str().is_none() => {
                problems.push(Problem::new(
                    at,
                    format!("include `file` must be a path, not {}", v.kind()),
                ));
                ok = false;
            }
            "resource" if v.value == Value::Bool(true) => {
                problems.push(Problem::new(
                    at,
                    "`resource: true` includes a Java classpath resource, which heron-rs cannot read (it has no classpath): use `file:` with a path relative to this file",
                ));
                ok = false;
            }
            "override" | "resource" if !matches!(v.value, Value::Bool(_) | Value::Null) => {
                problems.push(Problem::new(
                    at,
                    format!(
                        "include `{}` must be true or false, not {}",
                        k.name,
                        v.kind()
                    ),
                ));
                ok = false;
            }
            "file" | "override" | "resource" => {}
            other => {
                problems.push(Problem::new(
                    at,
                    format!("unknown include key {other:?} (expected file, override, resource)"),
                ));
                ok = false;
            }
        }
    }
    let Some(file) = inc.node.get("file").and_then(Node::as_str) else {
        if ok {
            problems.push(Problem::new(inc.at(), "an include needs `file:`"));
        }
        return None;
    };
    if !ok {
        return None;
    }
    let dir = inc.file.parent().unwrap_or(Path::new(""));
    let override_ = inc
        .node
        .get("override")
        .map(|v| v.value == Value::Bool(true));
    Some((dir.join(file), override_.unwrap_or(false)))
}

/// One file: read, substituted, parsed, split into its top-level sections.
fn read_one(path: &Path, subst: &Substitutions<'_>, problems: &mut Vec<Problem>) -> Option<Merged> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            problems.push(Problem::new(
                Location::file(path),
                format!("cannot read the Flux file: {e}"),
            ));
            return None;
        }
    };
    from_text(path, &text, subst, problems)
}

/// [`read_one`] of `text` as the contents of `path`.
pub(crate) fn from_text(
    path: &Path,
    text: &str,
    subst: &Substitutions<'_>,
    problems: &mut Vec<Problem>,
) -> Option<Merged> {
    let text = match subst.apply(path, text) {
        Ok(t) => t,
        Err(mut p) => {
            problems.append(&mut p);
            return None;
        }
    };
    let root = match yaml::parse(path, &text) {
        Ok(r) => r,
        Err(p) => {
            problems.push(p);
            return None;
        }
    };
    let Some(map) = root.as_map() else {
        problems.push(Problem::new(
            root.at(path),
            format!("a Flux file must be a mapping with `name`, `spouts`, `bolts`, `streams`..., not {}", root.kind()),
        ));
        return None;
    };
    let mut out = Merged {
        file: path.to_path_buf(),
        ..Merged::default()
    };
    for (k, v) in map {
        let at = Location::new(path, k.line, k.col);
        let entry = || Entry {
            file: path.to_path_buf(),
            node: v.clone(),
        };
        let list = |problems: &mut Vec<Problem>| -> Vec<Entry> {
            match &v.value {
                Value::Null => Vec::new(),
                Value::Seq(items) => items
                    .iter()
                    .map(|n| Entry {
                        file: path.to_path_buf(),
                        node: n.clone(),
                    })
                    .collect(),
                _ => {
                    problems.push(Problem::new(
                        v.at(path),
                        format!("`{}` must be a list, not {}", k.name, v.kind()),
                    ));
                    Vec::new()
                }
            }
        };
        match k.name.as_str() {
            "name" => out.name = Some(entry()),
            "config" => match &v.value {
                Value::Null => {}
                Value::Map(entries) => {
                    out.config.extend(entries.iter().map(|(k, v)| ConfigEntry {
                        file: path.to_path_buf(),
                        key: k.clone(),
                        value: v.clone(),
                    }))
                }
                _ => problems.push(Problem::new(
                    v.at(path),
                    format!(
                        "`config` must be a mapping of keys to values, not {}",
                        v.kind()
                    ),
                )),
            },
            "components" => out.components = list(problems),
            "spouts" => out.spouts = list(problems),
            "bolts" => out.bolts = list(problems),
            "streams" => out.streams = list(problems),
            "includes" => out.includes = list(problems),
            "topologySource" => {
                out.topology_source = true;
                problems.push(Problem::new(
                at,
                "`topologySource` builds the topology with a Java class, which heron-rs cannot run: describe the spouts, bolts and streams in this file instead",
                ));
            }
            "workerHooks" => problems.push(Problem::new(
                at,
                "`workerHooks` are Java classes, which heron-rs cannot run",
            )),
            other => problems.push(Problem::new(
                at,
                format!(
                    "unknown top-level key {other:?} (expected one of {})",
                    TOP_LEVEL_KEYS.join(", ")
                ),
            )),
        }
    }
    Some(out)
}

/// Merges an included file into `base` (see the module docs for the rules).
pub(crate) fn merge(base: &mut Merged, inc: Merged, override_: bool) {
    if let Some(name) = inc.name {
        if override_ || base.name.is_none() {
            base.name = Some(name);
        }
    }
    for c in inc.config {
        match base.config.iter_mut().find(|b| b.key.name == c.key.name) {
            Some(existing) if override_ => *existing = c,
            Some(_) => tracing::warn!(
                "{}: config key {:?} is already set; the include has no `override: true`, so it is ignored",
                Location::new(&c.file, c.key.line, c.key.col),
                c.key.name
            ),
            None => base.config.push(c),
        }
    }
    base.topology_source |= inc.topology_source;
    merge_by_id(&mut base.components, inc.components, override_);
    merge_by_id(&mut base.spouts, inc.spouts, override_);
    merge_by_id(&mut base.bolts, inc.bolts, override_);
    base.streams.extend(inc.streams);
}

fn merge_by_id(base: &mut Vec<Entry>, inc: Vec<Entry>, override_: bool) {
    for e in inc {
        let existing = e
            .id()
            .and_then(|id| base.iter().position(|b| b.id() == Some(id)));
        match existing {
            Some(i) if override_ => base[i] = e,
            Some(_) => tracing::warn!(
                "{}: {:?} is already defined; the include has no `override: true`, so it is ignored",
                e.at(),
                e.id().unwrap_or_default()
            ),
            None => base.push(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(file: &str, text: &str) -> Merged {
        let none = |_: &str| None;
        let s = Substitutions {
            properties: None,
            env_filter: false,
            env: &none,
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(file);
        std::fs::write(&path, text).unwrap();
        let mut problems = Vec::new();
        let m = read_one(&path, &s, &mut problems).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        m
    }

    fn ids(entries: &[Entry]) -> Vec<(String, i64)> {
        entries
            .iter()
            .map(|e| {
                let par = match e.node.get("parallelism").map(|n| &n.value) {
                    Some(Value::Int(i)) => *i,
                    _ => 1,
                };
                (e.id().unwrap().to_owned(), par)
            })
            .collect()
    }

    const BASE: &str = "name: base\nconfig: {a: 1, b: 2}\nbolts:\n  - {id: x, parallelism: 1}\nstreams:\n  - {from: s, to: x}\n";
    const INC: &str = "name: inc\nconfig: {b: 20, c: 30}\nbolts:\n  - {id: x, parallelism: 9}\n  - {id: y}\nstreams:\n  - {from: s, to: y}\n";

    fn config(m: &Merged) -> Vec<(String, String)> {
        m.config
            .iter()
            .map(|c| (c.key.name.clone(), c.value.scalar_text().unwrap()))
            .collect()
    }

    #[test]
    fn without_override_only_fills_gaps() {
        let mut base = merged("base.yaml", BASE);
        merge(&mut base, merged("inc.yaml", INC), false);
        assert_eq!(base.name.as_ref().unwrap().node.as_str(), Some("base"));
        let cfg = config(&base);
        assert_eq!(
            cfg,
            [
                ("a".into(), "1".into()),
                ("b".into(), "2".into()),
                ("c".into(), "30".into())
            ]
        );
        assert_eq!(ids(&base.bolts), [("x".into(), 1), ("y".into(), 1)]);
        assert_eq!(base.streams.len(), 2);
    }

    #[test]
    fn with_override_replaces() {
        let mut base = merged("base.yaml", BASE);
        merge(&mut base, merged("inc.yaml", INC), true);
        assert_eq!(base.name.as_ref().unwrap().node.as_str(), Some("inc"));
        let cfg = config(&base);
        assert_eq!(cfg[1], ("b".into(), "20".into()));
        assert_eq!(ids(&base.bolts), [("x".into(), 9), ("y".into(), 1)]);
        assert!(base.bolts[0].file.ends_with("inc.yaml"));
        assert_eq!(base.streams.len(), 2);
    }

    #[test]
    fn a_missing_name_is_filled_either_way() {
        let mut base = merged("base.yaml", "spouts: []\n");
        merge(&mut base, merged("inc.yaml", "name: inc\n"), false);
        assert_eq!(base.name.as_ref().unwrap().node.as_str(), Some("inc"));
    }
}
