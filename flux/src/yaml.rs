//! The YAML tree Flux files are read into: every node and mapping key keeps its line and
//! column, for error messages. Parsing is `saphyr`'s (YAML 1.2, spans on every node).

use std::fmt::Write as _;
use std::path::Path;

use saphyr::{LoadableYamlNode, MarkedYamlOwned, ScalarOwned, YamlDataOwned};

use crate::error::{Location, Problem};

/// A YAML node and where it starts (1-based line and column).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub line: usize,
    pub col: usize,
    pub value: Value,
}

/// A mapping key (its scalar text) and where it is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Key {
    pub name: String,
    pub line: usize,
    pub col: usize,
}

/// What a node holds. Mappings keep their order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Key, Node)>),
}

impl Node {
    /// Where this node is in `file`.
    pub fn at(&self, file: &Path) -> Location {
        Location::new(file, self.line, self.col)
    }

    /// "a string", "a list", ... for messages.
    pub fn kind(&self) -> &'static str {
        match self.value {
            Value::Null => "empty (null)",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Seq(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&[(Key, Node)]> {
        match &self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The value of `key` in a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.name == key)
            .map(|(_, v)| v)
    }

    /// A scalar as text (`true`, `42`, `1.5`, the string itself); `None` for null, lists and
    /// mappings.
    pub fn scalar_text(&self) -> Option<String> {
        match &self.value {
            Value::Bool(b) => Some(b.to_string()),
            Value::Int(i) => Some(i.to_string()),
            Value::Float(f) => Some(java_double(*f)),
            Value::Str(s) => Some(s.clone()),
            Value::Null | Value::Seq(_) | Value::Map(_) => None,
        }
    }

    /// The node as JSON (mapping keys as strings).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => J::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
            Value::Str(s) => J::String(s.clone()),
            Value::Seq(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(entries) => J::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.name.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }

    /// A config value as Heron stores it: scalars as their text (as Java's `toString`),
    /// lists and mappings JSON-encoded; `None` for null.
    pub fn config_string(&self) -> Option<String> {
        match &self.value {
            Value::Null => None,
            Value::Seq(_) | Value::Map(_) => Some(self.to_json().to_string()),
            _ => self.scalar_text(),
        }
    }
}

/// A float as Java's `Double.toString` writes the common cases (`2.0`, `0.5`).
fn java_double(f: f64) -> String {
    let mut s = String::new();
    let _ = write!(s, "{f:?}");
    s
}

/// Parses one YAML document. An empty text is a null node at line 1.
pub(crate) fn parse(file: &Path, text: &str) -> Result<Node, Problem> {
    let docs = MarkedYamlOwned::load_from_str(text).map_err(|e| {
        let m = e.marker();
        Problem::new(
            Location::new(file, m.line(), m.col() + 1),
            format!("YAML syntax error: {}", e.info()),
        )
    })?;
    let mut docs = docs.into_iter();
    let Some(doc) = docs.next() else {
        return Ok(Node {
            line: 1,
            col: 1,
            value: Value::Null,
        });
    };
    if let Some(second) = docs.next() {
        return Err(Problem::new(
            Location::new(file, second.span.start.line(), second.span.start.col() + 1),
            "a Flux file holds one YAML document; this is a second one",
        ));
    }
    convert(file, doc)
}

fn convert(file: &Path, node: MarkedYamlOwned) -> Result<Node, Problem> {
    let line = node.span.start.line();
    let col = node.span.start.col() + 1;
    let bad = |what: &str| Problem::new(Location::new(file, line, col), what.to_owned());
    let value = match node.data {
        YamlDataOwned::Value(s) => match s {
            ScalarOwned::Null => Value::Null,
            ScalarOwned::Boolean(b) => Value::Bool(b),
            ScalarOwned::Integer(i) => Value::Int(i),
            ScalarOwned::FloatingPoint(f) => Value::Float(f.into_inner()),
            ScalarOwned::String(s) => Value::Str(s),
        },
        YamlDataOwned::Representation(s, _, _) => Value::Str(s),
        YamlDataOwned::Sequence(items) => Value::Seq(
            items
                .into_iter()
                .map(|n| convert(file, n))
                .collect::<Result<_, _>>()?,
        ),
        YamlDataOwned::Mapping(entries) => {
            let mut out = Vec::with_capacity(entries.len());
            for (k, v) in entries {
                let key = convert(file, k)?;
                let name = match &key.value {
                    Value::Null => "null".to_owned(),
                    _ => key.scalar_text().ok_or_else(|| {
                        Problem::new(
                            Location::new(file, key.line, key.col),
                            "a mapping key must be a scalar, not a list or a mapping",
                        )
                    })?,
                };
                out.push((
                    Key {
                        name,
                        line: key.line,
                        col: key.col,
                    },
                    convert(file, v)?,
                ));
            }
            Value::Map(out)
        }
        YamlDataOwned::Tagged(_, inner) => return convert(file, *inner),
        YamlDataOwned::Alias(_) => return Err(bad("unresolved YAML alias")),
        YamlDataOwned::BadValue => return Err(bad("invalid YAML value")),
    };
    Ok(Node { line, col, value })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Node {
        parse(Path::new("t.yaml"), text).unwrap()
    }

    #[test]
    fn nodes_and_keys_carry_positions() {
        let doc = p("name: wc\nbolts:\n  - id: split\n    parallelism: 2\n");
        let bolts = doc.get("bolts").unwrap().as_seq().unwrap();
        assert_eq!((bolts[0].line, bolts[0].col), (3, 5));
        let (key, value) = &bolts[0].as_map().unwrap()[1];
        assert_eq!(
            (key.name.as_str(), key.line, key.col),
            ("parallelism", 4, 5)
        );
        assert_eq!(value.value, Value::Int(2));
        assert_eq!((value.line, value.col), (4, 18));
    }

    #[test]
    fn scalars_and_config_strings() {
        let doc = p("a: 1\nb: true\nc: 2.0\nd: '7'\ne: [x, 1]\nf: {k: v}\ng: ~\n");
        let s = |k: &str| doc.get(k).unwrap().config_string();
        assert_eq!(s("a").as_deref(), Some("1"));
        assert_eq!(s("b").as_deref(), Some("true"));
        assert_eq!(s("c").as_deref(), Some("2.0"));
        assert_eq!(s("d").as_deref(), Some("7"));
        assert_eq!(s("e").as_deref(), Some(r#"["x",1]"#));
        assert_eq!(s("f").as_deref(), Some(r#"{"k":"v"}"#));
        assert_eq!(s("g"), None);
    }

    #[test]
    fn syntax_errors_have_line_and_column() {
        let err = parse(
            Path::new("t.yaml"),
            "name: wc\nbolts:\n  - id: [a\n    b: c\n",
        )
        .unwrap_err();
        assert!(
            err.message.starts_with("YAML syntax error"),
            "{}",
            err.message
        );
        assert!(err.location.line >= 3, "{:?}", err.location);
        assert!(err.location.column > 0, "{:?}", err.location);
    }

    #[test]
    fn aliases_are_expanded_and_empty_is_null() {
        let doc = p("a: &f [x, y]\nb: *f\n");
        assert_eq!(doc.get("b").unwrap().as_seq().unwrap().len(), 2);
        assert_eq!(p("").value, Value::Null);
        assert!(parse(Path::new("t.yaml"), "a: 1\n---\nb: 2\n").is_err());
    }
}
