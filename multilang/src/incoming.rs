//! A message from the subprocess, decoded straight into the keys the protocol knows (no map
//! tree per message): the hot path of every shell component reads `emit`, `ack` and `sync`
//! this way. JSON goes through `serde`; msgpack through its [`Node`] tree. Both end in the
//! same checks ([`ShellMsg::from_raw`](crate::ShellMsg)).

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::message::{DecodeError, ShellMsg};
use crate::node::Node;

/// One message from the subprocess: a command (or the handshake reply), or why it is not one.
///
/// ```
/// use heron_multilang::{Incoming, ShellMsg};
///
/// let m: Incoming = serde_json::from_str(r#"{"command": "ack", "id": "7"}"#).unwrap();
/// assert_eq!(m.0, Ok(ShellMsg::Ack("7".into())));
/// let m: Incoming = serde_json::from_str(r#"{"command": "dance"}"#).unwrap();
/// assert!(m.0.is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Incoming(pub Result<ShellMsg, DecodeError>);

/// The commands this host knows, as static names (no allocation to match them).
const COMMANDS: [&str; 8] = [
    "emit",
    "ack",
    "fail",
    "sync",
    "log",
    "error",
    "metrics",
    "reset_timeout",
];

/// A message's known keys, before they are checked.
#[derive(Debug, Default)]
pub(crate) struct Raw {
    /// Set when the message is not a map: what it is instead.
    pub not_a_map: Option<&'static str>,
    /// What stood under `command`.
    pub command: Option<Command>,
    pub id: Option<Node>,
    pub anchors: Option<Node>,
    pub tuple: Option<Node>,
    pub stream: Option<Node>,
    pub task: Option<Node>,
    pub need_task_ids: Option<Node>,
    pub msg: Option<Node>,
    pub level: Option<Node>,
    pub name: Option<Node>,
    pub params: Option<Node>,
    pub pid: Option<Node>,
}

impl Raw {
    /// Where the value of `key` goes (`None`: a key the host ignores; `command` is apart).
    fn slot(&mut self, key: &str) -> Option<&mut Option<Node>> {
        Some(match key {
            "id" => &mut self.id,
            "anchors" => &mut self.anchors,
            "tuple" => &mut self.tuple,
            "stream" => &mut self.stream,
            "task" => &mut self.task,
            "need_task_ids" => &mut self.need_task_ids,
            "msg" => &mut self.msg,
            "level" => &mut self.level,
            "name" => &mut self.name,
            "params" => &mut self.params,
            "pid" => &mut self.pid,
            _ => return None,
        })
    }

    /// The keys of a decoded tree (msgpack).
    pub fn from_node(n: Node) -> Raw {
        let mut raw = Raw::default();
        match n {
            Node::Map(entries) => {
                for (k, v) in entries {
                    if k == "command" {
                        raw.command = Some(match v {
                            Node::Str(s) => Command::of_str(&s),
                            _ => Command::NotAString,
                        });
                    } else if let Some(slot) = raw.slot(&k) {
                        *slot = Some(v);
                    }
                }
            }
            other => raw.not_a_map = Some(other.kind()),
        }
        raw
    }
}

fn known_command(s: &str) -> Option<&'static str> {
    COMMANDS.iter().find(|c| **c == s).copied()
}

impl Incoming {
    /// The message a decoded tree holds (the msgpack path).
    pub fn from_node(n: Node) -> Incoming {
        Incoming(ShellMsg::from_raw(Raw::from_node(n)))
    }
}

/// The value under `command`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Command {
    /// A command this host knows.
    Known(&'static str),
    /// A string that names no command.
    Unknown(String),
    /// Not a string.
    NotAString,
}

impl Command {
    fn of_str(s: &str) -> Command {
        known_command(s).map_or_else(|| Command::Unknown(s.to_owned()), Command::Known)
    }
}

impl<'de> Deserialize<'de> for Command {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Command, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Command;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a command name")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Command, E> {
                Ok(Command::of_str(s))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Command, E> {
                Ok(Command::NotAString)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Command, E> {
                Ok(Command::NotAString)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Command, E> {
                Ok(Command::NotAString)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Command, E> {
                Ok(Command::NotAString)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Command, E> {
                Ok(Command::NotAString)
            }
            fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Command, E> {
                Ok(Command::NotAString)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Command, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Command::NotAString)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Command, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Command::NotAString)
            }
        }
        d.deserialize_any(V)
    }
}

struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a multi-lang message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
        let mut raw = Raw::default();
        while let Some(key) = map.next_key::<KeyStr<'de>>()? {
            let key = key.as_str();
            if key == "command" {
                raw.command = Some(map.next_value::<Command>()?);
            } else if let Some(slot) = raw.slot(key) {
                *slot = Some(map.next_value::<Node>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(raw)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(not_a_map("a list"))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Raw, E> {
        Ok(not_a_map("null"))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Raw, E> {
        Ok(not_a_map("a boolean"))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Raw, E> {
        Ok(not_a_map("an integer"))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Raw, E> {
        Ok(not_a_map("an integer"))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Raw, E> {
        Ok(not_a_map("a float"))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Raw, E> {
        Ok(not_a_map("a string"))
    }

    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Raw, E> {
        Ok(not_a_map("bytes"))
    }
}

fn not_a_map(kind: &'static str) -> Raw {
    Raw {
        not_a_map: Some(kind),
        ..Raw::default()
    }
}

/// A map key, borrowed from the input when it can be.
enum KeyStr<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl KeyStr<'_> {
    fn as_str(&self) -> &str {
        match self {
            KeyStr::Borrowed(s) => s,
            KeyStr::Owned(s) => s,
        }
    }
}

impl<'de> Deserialize<'de> for KeyStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<KeyStr<'de>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeyStr<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<KeyStr<'de>, E> {
                Ok(KeyStr::Borrowed(s))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<KeyStr<'de>, E> {
                Ok(KeyStr::Owned(s.to_owned()))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Deserialize<'de> for Incoming {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Incoming, D::Error> {
        let raw = d.deserialize_any(RawVisitor)?;
        Ok(Incoming(ShellMsg::from_raw(raw)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(text: &str) -> Result<ShellMsg, DecodeError> {
        let direct: Incoming = serde_json::from_str(text).unwrap();
        let tree: Node = serde_json::from_str(text).unwrap();
        assert_eq!(Incoming::from_node(tree), direct, "{text}");
        direct.0
    }

    #[test]
    fn json_and_tree_decoding_agree() {
        for text in [
            r#"{"command":"emit","anchors":["1"],"tuple":["a",1],"extra":{"x":[1,2]}}"#,
            r#"{"command":"ack","id":"9"}"#,
            r#"{"id":"9","command":"fail"}"#,
            r#"{"command":"sync"}"#,
            r#"{"pid":1234}"#,
            r#"{"command":7}"#,
            r#"{"command":"dance"}"#,
            r#"[1,{"command":"sync"}]"#,
            r#""sync""#,
            r#"null"#,
        ] {
            both(text).ok();
        }
        assert_eq!(both(r#"{"pid":12}"#), Ok(ShellMsg::Handshake { pid: 12 }));
        assert_eq!(
            both(r#"{"command":"dance"}"#),
            Err(DecodeError::UnknownCommand("dance".into()))
        );
        assert_eq!(both(r#"{"command":7}"#), Err(DecodeError::NoCommand));
        assert_eq!(both("[1,2]"), Err(DecodeError::NotAMap("a list")));
    }

    #[test]
    fn escaped_keys_are_still_known() {
        // "\u0069d" is "id": serde cannot borrow it, the key is still matched
        assert_eq!(
            both(r#"{"command":"ack","\u0069d":"3"}"#),
            Ok(ShellMsg::Ack("3".into()))
        );
    }
}
