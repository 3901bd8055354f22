//! `serde` for [`Node`], so the JSON codec writes the host's messages, and reads the values
//! inside the subprocess's (tuple values, metric params), without building a
//! `serde_json::Value` in between. Bytes serialize as a list
//! of byte values, a non-finite float as `null` (as [`Node::to_json`] does); maps keep their
//! order both ways.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use crate::node::{Key, Node};

impl Serialize for Node {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Node::Null => s.serialize_unit(),
            Node::Bool(b) => s.serialize_bool(*b),
            Node::Int(i) => s.serialize_i64(*i),
            Node::UInt(u) => s.serialize_u64(*u),
            Node::Float(f) if f.is_finite() => s.serialize_f64(*f),
            Node::Float(_) => s.serialize_unit(),
            Node::Str(t) => s.serialize_str(t),
            Node::Bytes(b) => {
                let mut seq = s.serialize_seq(Some(b.len()))?;
                for x in b {
                    seq.serialize_element(x)?;
                }
                seq.end()
            }
            Node::List(l) => {
                let mut seq = s.serialize_seq(Some(l.len()))?;
                for x in l {
                    seq.serialize_element(x)?;
                }
                seq.end()
            }
            Node::Map(m) => {
                let mut map = s.serialize_map(Some(m.len()))?;
                for (k, v) in m {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        Node::deserialize(d)
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Node, E> {
        Ok(Node::Bool(b))
    }

    fn visit_i64<E: de::Error>(self, i: i64) -> Result<Node, E> {
        Ok(Node::Int(i))
    }

    fn visit_u64<E: de::Error>(self, u: u64) -> Result<Node, E> {
        Ok(i64::try_from(u).map_or(Node::UInt(u), Node::Int))
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Node, E> {
        Ok(Node::Float(f))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Node, E> {
        Ok(Node::Str(s.to_owned()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Node, E> {
        Ok(Node::Str(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(n) = seq.next_element()? {
            out.push(n);
        }
        Ok(Node::List(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0).min(4096));
        // messages decode into their known keys (`Incoming`); a tree's map is a nested
        // value, so its keys are simply owned
        while let Some((k, v)) = map.next_entry::<String, Node>()? {
            out.push((Key::Owned(k), v));
        }
        Ok(Node::Map(out))
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trips_without_an_intermediate_tree_and_agrees_with_to_json() {
        let text = r#"{"command":"emit","anchors":["7"],"tuple":["w",1,-2,2.5,true,null,[1,{"b":1,"a":2}]],"big":18446744073709551615}"#;
        let n: Node = serde_json::from_str(text).unwrap();
        // message order is kept
        let Node::Map(m) = &n else { panic!("{n:?}") };
        let keys: Vec<&str> = m.iter().map(|(k, _)| k.as_ref()).collect();
        assert_eq!(keys, ["command", "anchors", "tuple", "big"]);
        assert_eq!(n.get("big"), Some(&Node::UInt(u64::MAX)));
        assert_eq!(serde_json::to_string(&n).unwrap(), text);
        // the same JSON value as the Value-based encoding (which sorts keys)
        let direct: serde_json::Value = serde_json::to_value(&n).unwrap();
        assert_eq!(direct, n.to_json());
        let odd = Node::List(vec![Node::Bytes(vec![0, 255]), Node::Float(f64::NAN)]);
        assert_eq!(serde_json::to_string(&odd).unwrap(), "[[0,255],null]");
    }
}
