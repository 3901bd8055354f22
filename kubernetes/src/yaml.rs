//! Kubernetes objects as YAML documents and back: through `serde_json::Value` (the objects'
//! serde form) and saphyr's YAML tree, emitted in block style.

use saphyr::{LoadableYamlNode, Mapping, Scalar, ScalarStyle, Yaml, YamlEmitter};
use serde_json::Value;
use std::borrow::Cow;

/// Why YAML could not be read.
#[derive(Debug, thiserror::Error)]
pub enum YamlError {
    /// Not YAML.
    #[error("not YAML: {0}")]
    Parse(String),
    /// YAML that JSON cannot hold (a non-string key, an alias, a tag).
    #[error("YAML that is not a Kubernetes object: {0}")]
    Shape(String),
    /// Emitting failed.
    #[error("emitting YAML: {0}")]
    Emit(String),
}

fn to_yaml(v: &Value) -> Yaml<'static> {
    match v {
        Value::Null => Yaml::Value(Scalar::Null),
        Value::Bool(b) => Yaml::Value(Scalar::Boolean(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Yaml::Value(Scalar::Integer(i)),
            None => Yaml::Representation(Cow::Owned(n.to_string()), ScalarStyle::Plain, None),
        },
        Value::String(s) => Yaml::Value(Scalar::String(Cow::Owned(s.clone()))),
        Value::Array(a) => Yaml::Sequence(a.iter().map(to_yaml).collect()),
        Value::Object(o) => {
            let mut m = Mapping::new();
            for (k, v) in o {
                m.insert(
                    Yaml::Value(Scalar::String(Cow::Owned(k.clone()))),
                    to_yaml(v),
                );
            }
            Yaml::Mapping(m)
        }
    }
}

fn to_json(y: &Yaml<'_>) -> Result<Value, YamlError> {
    Ok(match y {
        Yaml::Value(Scalar::Null) => Value::Null,
        Yaml::Value(Scalar::Boolean(b)) => Value::Bool(*b),
        Yaml::Value(Scalar::Integer(i)) => Value::from(*i),
        Yaml::Value(Scalar::FloatingPoint(f)) => serde_json::Number::from_f64(f.into_inner())
            .map(Value::Number)
            .ok_or_else(|| YamlError::Shape(format!("the number {f}")))?,
        Yaml::Value(Scalar::String(s)) => Value::String(s.to_string()),
        Yaml::Sequence(items) => Value::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Yaml::Mapping(m) => {
            let mut o = serde_json::Map::new();
            for (k, v) in m {
                let Yaml::Value(Scalar::String(key)) = k else {
                    return Err(YamlError::Shape(format!("the mapping key {k:?}")));
                };
                o.insert(key.to_string(), to_json(v)?);
            }
            Value::Object(o)
        }
        other => return Err(YamlError::Shape(format!("{other:?}"))),
    })
}

/// The documents of a YAML stream, each `---`-separated, in block style.
///
/// ```
/// let docs = heron_kubernetes::yaml::emit(&[serde_json::json!({"kind": "Service", "port": 6001})]).unwrap();
/// assert_eq!(docs, "---\nkind: Service\nport: 6001\n");
/// ```
pub fn emit(documents: &[Value]) -> Result<String, YamlError> {
    let mut out = String::new();
    for doc in documents {
        let mut text = String::new();
        YamlEmitter::new(&mut text)
            .dump(&to_yaml(doc))
            .map_err(|e| YamlError::Emit(e.to_string()))?;
        out.push_str(&text);
        out.push('\n');
    }
    Ok(out)
}

/// The documents of a YAML stream, as JSON values.
pub fn parse(text: &str) -> Result<Vec<Value>, YamlError> {
    let docs = Yaml::load_from_str(text).map_err(|e| YamlError::Parse(e.to_string()))?;
    docs.iter().map(to_json).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn documents_round_trip_with_strings_that_look_like_other_scalars() {
        let docs = [
            json!({"a": "true", "b": "6001", "c": "", "d": null, "e": [1, "x: y", {"f": false}], "g": 0.5}),
            json!({"kind": "Service", "spec": {"clusterIP": "None"}}),
        ];
        let text = emit(&docs).unwrap();
        assert_eq!(text.matches("---").count(), 2, "{text}");
        assert_eq!(parse(&text).unwrap(), docs, "{text}");
        assert!(parse("a: [").is_err());
        assert!(parse("? [1]\n: 2\n").is_err(), "a non-string key");
    }
}
