//! The message tree both serializers decode into and encode from, and its conversion to and
//! from tuple [`Value`]s.
//!
//! Conversions (documented in the crate root too):
//! - host → process: `Null`, `Bool`, `Int`, `Float`, `Str` map to the JSON / msgpack scalar;
//!   `Bytes` is a list of byte values (0..=255) in JSON and a msgpack `bin` with msgpack.
//! - process → host: scalars map back; an integer above `i64::MAX` becomes a `Float`; a
//!   msgpack `bin` becomes `Bytes`; a **list or map** (which a tuple value cannot hold)
//!   becomes a `Str` holding its compact JSON text (map keys sorted), so `json.loads` downstream recovers it.

use std::borrow::Cow;

use heron_api::Value;

/// A map key: the protocol's own keys are static strings (no allocation per message, on
/// either side); others are owned.
pub type Key = Cow<'static, str>;

/// A decoded message value (a superset of JSON: msgpack adds byte strings).
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// `null` / nil.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer that fits `i64`.
    Int(i64),
    /// An integer above `i64::MAX`.
    UInt(u64),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
    /// Bytes (msgpack `bin`).
    Bytes(Vec<u8>),
    /// A list.
    List(Vec<Node>),
    /// A map, in message order.
    Map(Vec<(Key, Node)>),
}

impl Node {
    /// A map from `(key, value)` pairs.
    pub fn map<const N: usize>(entries: [(&'static str, Node); N]) -> Node {
        Node::Map(
            entries
                .into_iter()
                .map(|(k, v)| (Cow::Borrowed(k), v))
                .collect(),
        )
    }

    /// A string node.
    pub fn str(s: impl Into<String>) -> Node {
        Node::Str(s.into())
    }

    /// The value of `key` in a map.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Map(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Takes the value of `key` out of a map, leaving `Null` in its place.
    pub fn take(&mut self, key: &str) -> Option<Node> {
        self.take_with(key, Node::Null)
    }

    /// Takes the value of `key` out of a map, leaving `with` in its place.
    pub fn take_with(&mut self, key: &str, with: Node) -> Option<Node> {
        match self {
            Node::Map(m) => m
                .iter_mut()
                .find(|(k, _)| k == key)
                .map(|(_, v)| std::mem::replace(v, with)),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The integer, if this is one that fits `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Node::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// A short name of the kind of node, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Bool(_) => "a boolean",
            Node::Int(_) | Node::UInt(_) => "an integer",
            Node::Float(_) => "a float",
            Node::Str(_) => "a string",
            Node::Bytes(_) => "bytes",
            Node::List(_) => "a list",
            Node::Map(_) => "a map",
        }
    }

    /// The tuple value this node stands for (see the module docs).
    pub fn to_value(&self) -> Value {
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Int(i) => Value::Int(*i),
            Node::UInt(u) => Value::Float(*u as f64),
            Node::Float(f) => Value::Float(*f),
            Node::Str(s) => Value::Str(s.clone()),
            Node::Bytes(b) => Value::Bytes(b.clone()),
            Node::List(_) | Node::Map(_) => Value::Str(self.to_json().to_string()),
        }
    }

    /// [`to_value`](Self::to_value), moving strings and bytes instead of copying them.
    pub fn into_value(self) -> Value {
        match self {
            Node::Str(s) => Value::Str(s),
            Node::Bytes(b) => Value::Bytes(b),
            other => other.to_value(),
        }
    }

    /// The node for a tuple value (see the module docs).
    pub fn from_value(v: &Value) -> Node {
        match v {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Int(i) => Node::Int(*i),
            Value::Float(f) => Node::Float(*f),
            Value::Str(s) => Node::Str(s.clone()),
            Value::Bytes(b) => Node::Bytes(b.clone()),
        }
    }

    /// This node as JSON (bytes become a list of byte values; a non-finite float `null`).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match self {
            Node::Null => J::Null,
            Node::Bool(b) => J::Bool(*b),
            Node::Int(i) => J::from(*i),
            Node::UInt(u) => J::from(*u),
            Node::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
            Node::Str(s) => J::String(s.clone()),
            Node::Bytes(b) => J::Array(b.iter().map(|&x| J::from(x)).collect()),
            Node::List(l) => J::Array(l.iter().map(Node::to_json).collect()),
            Node::Map(m) => J::Object(
                m.iter()
                    .map(|(k, v)| (k.to_string(), v.to_json()))
                    .collect(),
            ),
        }
    }

    /// The node for a JSON value.
    pub fn from_json(j: &serde_json::Value) -> Node {
        use serde_json::Value as J;
        match j {
            J::Null => Node::Null,
            J::Bool(b) => Node::Bool(*b),
            J::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Node::Int(i)
                } else if let Some(u) = n.as_u64() {
                    Node::UInt(u)
                } else {
                    Node::Float(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            J::String(s) => Node::Str(s.clone()),
            J::Array(a) => Node::List(a.iter().map(Node::from_json).collect()),
            J::Object(o) => Node::Map(
                o.iter()
                    .map(|(k, v)| (Key::Owned(k.clone()), Node::from_json(v)))
                    .collect(),
            ),
        }
    }

    /// This node as msgpack.
    pub fn to_msgpack(&self) -> rmpv::Value {
        use rmpv::Value as M;
        match self {
            Node::Null => M::Nil,
            Node::Bool(b) => M::Boolean(*b),
            Node::Int(i) => M::from(*i),
            Node::UInt(u) => M::from(*u),
            Node::Float(f) => M::F64(*f),
            Node::Str(s) => M::String(s.clone().into()),
            Node::Bytes(b) => M::Binary(b.clone()),
            Node::List(l) => M::Array(l.iter().map(Node::to_msgpack).collect()),
            Node::Map(m) => M::Map(
                m.iter()
                    .map(|(k, v)| (M::String(k.clone().into()), v.to_msgpack()))
                    .collect(),
            ),
        }
    }

    /// The node for a msgpack value; `Err` names what cannot be represented.
    pub fn from_msgpack(m: rmpv::Value) -> Result<Node, String> {
        use rmpv::Value as M;
        Ok(match m {
            M::Nil => Node::Null,
            M::Boolean(b) => Node::Bool(b),
            M::Integer(i) => match (i.as_i64(), i.as_u64()) {
                (Some(i), _) => Node::Int(i),
                (None, Some(u)) => Node::UInt(u),
                _ => return Err(format!("integer {i} out of range")),
            },
            M::F32(f) => Node::Float(f64::from(f)),
            M::F64(f) => Node::Float(f),
            M::String(s) => match s.into_str() {
                Some(s) => Node::Str(s),
                None => return Err("a msgpack string that is not UTF-8".into()),
            },
            M::Binary(b) => Node::Bytes(b),
            M::Array(a) => Node::List(
                a.into_iter()
                    .map(Node::from_msgpack)
                    .collect::<Result<_, _>>()?,
            ),
            M::Map(entries) => {
                let mut out = Vec::with_capacity(entries.len());
                for (k, v) in entries {
                    let key = match k {
                        M::String(s) => s
                            .into_str()
                            .ok_or_else(|| "a msgpack map key that is not UTF-8".to_string())?,
                        other => other.to_string(),
                    };
                    out.push((Key::Owned(key), Node::from_msgpack(v)?));
                }
                Node::Map(out)
            }
            M::Ext(t, _) => return Err(format!("a msgpack extension value (type {t})")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_round_trip_through_values() {
        for v in [
            Value::Null,
            Value::Bool(true),
            Value::Int(-7),
            Value::Float(1.5),
            Value::Str("héllo".into()),
            Value::Bytes(vec![0, 255, 3]),
        ] {
            assert_eq!(Node::from_value(&v).to_value(), v);
        }
    }

    #[test]
    fn bytes_are_a_list_in_json_and_bin_in_msgpack() {
        let n = Node::Bytes(vec![1, 2]);
        assert_eq!(n.to_json(), serde_json::json!([1, 2]));
        assert_eq!(n.to_msgpack(), rmpv::Value::Binary(vec![1, 2]));
        assert_eq!(
            Node::from_msgpack(rmpv::Value::Binary(vec![9]))
                .unwrap()
                .to_value(),
            Value::Bytes(vec![9])
        );
    }

    #[test]
    fn nested_lists_and_maps_become_json_strings() {
        let n = Node::from_json(&serde_json::json!({"a": [1, 2, {"b": null}]}));
        assert_eq!(n.to_value(), Value::Str(r#"{"a":[1,2,{"b":null}]}"#.into()));
        let l = Node::from_json(&serde_json::json!([1, "x"]));
        assert_eq!(l.to_value(), Value::Str(r#"[1,"x"]"#.into()));
    }

    #[test]
    fn big_integers_and_floats() {
        let n = Node::from_json(&serde_json::json!(u64::MAX));
        assert_eq!(n, Node::UInt(u64::MAX));
        assert_eq!(n.to_value(), Value::Float(u64::MAX as f64));
        assert_eq!(Node::from_json(&serde_json::json!(2.5)), Node::Float(2.5));
        assert_eq!(Node::Float(f64::NAN).to_json(), serde_json::Value::Null);
    }

    #[test]
    fn msgpack_maps_and_errors() {
        let m = rmpv::Value::Map(vec![(rmpv::Value::from("k"), rmpv::Value::from(3))]);
        assert_eq!(
            Node::from_msgpack(m).unwrap(),
            Node::map([("k", Node::Int(3))])
        );
        assert!(Node::from_msgpack(rmpv::Value::Ext(1, vec![])).is_err());
    }
}
