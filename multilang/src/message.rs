//! Messages from the subprocess, decoded into typed commands, and the messages the host
//! sends (Storm's multi-lang protocol, reference/storm.md §1.3–1.7).

use std::borrow::Cow;

use crate::incoming::{Command, Raw};
use crate::node::Node;

/// An `emit` command.
#[derive(Clone, Debug, PartialEq)]
pub struct Emit {
    /// The values.
    pub tuple: Vec<Node>,
    /// The stream (`default` when absent).
    pub stream: Cow<'static, str>,
    /// Bolts: the string ids of the input tuples it is anchored to.
    pub anchors: Vec<String>,
    /// A direct emit's consumer task.
    pub task: Option<i32>,
    /// Spouts: the message id, in the type the subprocess gave it.
    pub id: Option<Node>,
    /// Whether the subprocess waits for the task ids (absent means `true`, as in Storm).
    pub need_task_ids: bool,
}

/// A command from the subprocess.
#[derive(Clone, Debug, PartialEq)]
pub enum ShellMsg {
    /// Emit a tuple.
    Emit(Emit),
    /// Ack the input tuple with this id.
    Ack(String),
    /// Fail the input tuple with this id.
    Fail(String),
    /// Log a line at a level 0..=4 (trace, debug, info, warn, error).
    Log {
        /// The text.
        msg: String,
        /// The level.
        level: i64,
    },
    /// Report an error.
    Error(String),
    /// A metric value.
    Metrics {
        /// The metric's name.
        name: String,
        /// Its value.
        params: Node,
    },
    /// Done with the current command / heartbeat reply.
    Sync,
    /// Storm's `reset_timeout` (nothing to do here).
    ResetTimeout(String),
    /// The handshake reply: the subprocess's pid.
    Handshake {
        /// The pid it reported.
        pid: i32,
    },
}

/// Why a message is not a command this host understands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Not a map.
    #[error("a message is {0}, not a map")]
    NotAMap(&'static str),
    /// No `command` key.
    #[error("a message has no \"command\"")]
    NoCommand,
    /// A command this host does not know.
    #[error("unknown command {0:?}")]
    UnknownCommand(String),
    /// A key is missing or has the wrong type.
    #[error("command {command:?}: {problem}")]
    Bad {
        /// The command.
        command: String,
        /// What is wrong.
        problem: String,
    },
    /// The handshake reply's `pid` is not a positive integer.
    #[error("the handshake reply has no integer \"pid\": {0}")]
    NoPid(String),
}

fn bad(command: &str, problem: impl Into<String>) -> DecodeError {
    DecodeError::Bad {
        command: command.to_owned(),
        problem: problem.into(),
    }
}

/// A tuple id as a string: strings as they are, integers in decimal.
fn id_string(n: Node) -> Result<String, Node> {
    match n {
        Node::Str(s) => Ok(s),
        Node::Int(i) => Ok(i.to_string()),
        Node::UInt(u) => Ok(u.to_string()),
        other => Err(other),
    }
}

impl ShellMsg {
    /// Checks a message's keys ([`Incoming`](crate::Incoming) decodes into them) and makes
    /// the command of them: a map without `command` but with `pid` is the handshake reply.
    pub(crate) fn from_raw(mut r: Raw) -> Result<ShellMsg, DecodeError> {
        if let Some(kind) = r.not_a_map {
            return Err(DecodeError::NotAMap(kind));
        }
        let command = match r.command.take() {
            Some(Command::Known(c)) => c,
            Some(Command::Unknown(c)) => return Err(DecodeError::UnknownCommand(c)),
            Some(Command::NotAString) => return Err(DecodeError::NoCommand),
            None => {
                return match r.pid.take() {
                    Some(pid) => decode_pid(pid).map(|pid| ShellMsg::Handshake { pid }),
                    None => Err(DecodeError::NoCommand),
                }
            }
        };
        let mut id = |required: bool| -> Result<String, DecodeError> {
            match r.id.take() {
                Some(n) => {
                    id_string(n).map_err(|n| bad(command, format!("\"id\" is {}", n.kind())))
                }
                None if required => Err(bad(command, "no \"id\"")),
                None => Ok(String::new()),
            }
        };
        Ok(match command {
            "sync" => ShellMsg::Sync,
            "ack" => ShellMsg::Ack(id(true)?),
            "fail" => ShellMsg::Fail(id(true)?),
            "reset_timeout" => ShellMsg::ResetTimeout(id(false)?),
            "error" => ShellMsg::Error(text(r.msg)),
            "log" => ShellMsg::Log {
                msg: text(r.msg),
                level: match r.level {
                    None | Some(Node::Null) => 2,
                    Some(Node::Int(l)) => l,
                    Some(other) => {
                        return Err(bad(command, format!("\"level\" is {}", other.kind())))
                    }
                },
            },
            "metrics" => ShellMsg::Metrics {
                name: match r.name {
                    Some(Node::Str(s)) => s,
                    _ => return Err(bad(command, "no string \"name\"")),
                },
                params: r.params.unwrap_or(Node::Null),
            },
            "emit" => ShellMsg::Emit(decode_emit(r)?),
            other => unreachable!("{other} is in incoming::COMMANDS but not here"),
        })
    }
}

fn text(n: Option<Node>) -> String {
    match n {
        Some(Node::Str(s)) => s,
        Some(Node::Null) | None => String::new(),
        Some(other) => other.to_json().to_string(),
    }
}

/// An emit's anchors: absent, a list of ids, or one id.
fn decode_anchors(anchors: Option<Node>) -> Result<Vec<String>, DecodeError> {
    let one = |a: Node| id_string(a).map_err(|a| bad("emit", format!("an anchor is {}", a.kind())));
    match anchors {
        None | Some(Node::Null) => Ok(Vec::new()),
        Some(Node::List(l)) => l.into_iter().map(one).collect(),
        Some(a) => Ok(vec![one(a)?]),
    }
}

fn decode_emit(r: Raw) -> Result<Emit, DecodeError> {
    let c = "emit";
    let tuple = match r.tuple {
        Some(Node::List(l)) => l,
        Some(other) => return Err(bad(c, format!("\"tuple\" is {}, not a list", other.kind()))),
        None => return Err(bad(c, "no \"tuple\"")),
    };
    let stream = match r.stream {
        None | Some(Node::Null) => Cow::Borrowed(heron_api::DEFAULT_STREAM_ID),
        Some(Node::Str(s)) => Cow::Owned(s),
        Some(other) => return Err(bad(c, format!("\"stream\" is {}", other.kind()))),
    };
    let anchors = decode_anchors(r.anchors)?;
    let task = match r.task {
        None | Some(Node::Null) => None,
        Some(Node::Int(t)) => {
            Some(i32::try_from(t).map_err(|_| bad(c, format!("task {t} out of range")))?)
        }
        Some(other) => return Err(bad(c, format!("\"task\" is {}", other.kind()))),
    };
    let need_task_ids = match r.need_task_ids {
        None | Some(Node::Null) => true,
        Some(Node::Bool(b)) => b,
        Some(other) => return Err(bad(c, format!("\"need_task_ids\" is {}", other.kind()))),
    };
    Ok(Emit {
        tuple,
        stream,
        anchors,
        task,
        id: r.id.filter(|n| *n != Node::Null),
        need_task_ids,
    })
}

/// The pid of the handshake reply `{"pid": N}`.
fn decode_pid(pid: Node) -> Result<i32, DecodeError> {
    pid.as_i64()
        .and_then(|p| i32::try_from(p).ok())
        .filter(|&p| p > 0)
        .ok_or_else(|| DecodeError::NoPid(pid.to_json().to_string()))
}

/// A bolt's input tuple: `{"id", "comp", "stream", "task", "tuple"}`.
pub fn tuple_msg(id: &str, comp: Node, stream: &str, task: i32, values: Vec<Node>) -> Node {
    Node::map([
        ("id", Node::str(id)),
        ("comp", comp),
        ("stream", Node::str(stream)),
        ("task", Node::Int(i64::from(task))),
        ("tuple", Node::List(values)),
    ])
}

/// A bolt's input tuple by reference, written as JSON straight from its values (no message
/// tree on the hot path); [`TupleOut::to_node`] is the same message as a tree (msgpack).
#[derive(Debug, Clone, Copy)]
pub struct TupleOut<'a> {
    /// The tuple id (sent as a decimal string).
    pub id: u64,
    /// The source component.
    pub comp: &'a str,
    /// The source stream.
    pub stream: &'a str,
    /// The source task.
    pub task: i32,
    /// The values.
    pub values: &'a [heron_api::Value],
}

impl TupleOut<'_> {
    /// The message as a tree.
    pub fn to_node(self) -> Node {
        tuple_msg(
            &self.id.to_string(),
            Node::str(self.comp),
            self.stream,
            self.task,
            self.values.iter().map(Node::from_value).collect(),
        )
    }
}

impl serde::Serialize for TupleOut<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        struct Values<'a>(&'a [heron_api::Value]);
        impl serde::Serialize for Values<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use heron_api::Value as V;
                use serde::ser::SerializeSeq;
                let mut seq = s.serialize_seq(Some(self.0.len()))?;
                for v in self.0 {
                    match v {
                        V::Null => seq.serialize_element(&())?,
                        V::Bool(b) => seq.serialize_element(b)?,
                        V::Int(i) => seq.serialize_element(i)?,
                        V::Float(f) if f.is_finite() => seq.serialize_element(f)?,
                        V::Float(_) => seq.serialize_element(&())?,
                        V::Str(t) => seq.serialize_element(t)?,
                        V::Bytes(b) => seq.serialize_element(b)?,
                    }
                }
                seq.end()
            }
        }
        let mut m = s.serialize_map(Some(5))?;
        m.serialize_key("id")?;
        m.serialize_value(&Decimal(self.id))?;
        m.serialize_entry("comp", self.comp)?;
        m.serialize_entry("stream", self.stream)?;
        m.serialize_entry("task", &self.task)?;
        m.serialize_entry("tuple", &Values(self.values))?;
        m.end()
    }
}

/// A number serialized as a decimal string, without building the string.
struct Decimal(u64);

impl serde::Serialize for Decimal {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// A heartbeat tuple (pystorm tests `task == -1 and stream == "__heartbeat"`).
pub fn heartbeat_msg(id: &str) -> Node {
    tuple_msg(id, Node::Null, "__heartbeat", -1, Vec::new())
}

/// A spout command: `{"command": ..., "id": ...}` (`id` `""` for next/activate/deactivate).
pub fn command_msg(command: &str, id: Node) -> Node {
    Node::map([("command", Node::str(command)), ("id", id)])
}

/// The task ids of a previous emit.
pub fn task_ids_msg(tasks: &[i32]) -> Node {
    Node::List(tasks.iter().map(|&t| Node::Int(i64::from(t))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Both ways in, which must agree: JSON text (the hot path) and a tree (msgpack).
    fn decode(j: serde_json::Value) -> Result<ShellMsg, DecodeError> {
        let direct: crate::Incoming = serde_json::from_str(&j.to_string()).unwrap();
        assert_eq!(
            crate::Incoming::from_node(Node::from_json(&j)),
            direct,
            "{j}"
        );
        direct.0
    }

    #[test]
    fn emits_as_pystorm_writes_them() {
        let e = decode(
            json!({"command": "emit", "tuple": ["a"], "anchors": ["-123"], "need_task_ids": false}),
        )
        .unwrap();
        assert_eq!(
            e,
            ShellMsg::Emit(Emit {
                tuple: vec![Node::str("a")],
                stream: "default".into(),
                anchors: vec!["-123".into()],
                task: None,
                id: None,
                need_task_ids: false,
            })
        );
        // need_task_ids absent means true; spout ids keep their type
        let ShellMsg::Emit(e) =
            decode(json!({"command": "emit", "tuple": [1], "id": 7, "stream": "s", "task": 4}))
                .unwrap()
        else {
            panic!()
        };
        assert!(e.need_task_ids);
        assert_eq!(e.id, Some(Node::Int(7)));
        assert_eq!((&*e.stream, e.task), ("s", Some(4)));
        let ShellMsg::Emit(e) =
            decode(json!({"command": "emit", "tuple": [], "anchors": "x"})).unwrap()
        else {
            panic!()
        };
        assert_eq!(e.anchors, vec!["x".to_string()]);
    }

    #[test]
    fn other_commands() {
        assert_eq!(
            decode(json!({"command": "ack", "id": "5"})).unwrap(),
            ShellMsg::Ack("5".into())
        );
        assert_eq!(
            decode(json!({"command": "fail", "id": 5})).unwrap(),
            ShellMsg::Fail("5".into())
        );
        assert_eq!(decode(json!({"command": "sync"})).unwrap(), ShellMsg::Sync);
        assert_eq!(
            decode(json!({"command": "log", "msg": "hi", "level": 4})).unwrap(),
            ShellMsg::Log {
                msg: "hi".into(),
                level: 4
            }
        );
        assert_eq!(
            decode(json!({"command": "log", "msg": "hi"})).unwrap(),
            ShellMsg::Log {
                msg: "hi".into(),
                level: 2
            }
        );
        assert_eq!(
            decode(json!({"command": "error", "msg": "boom"})).unwrap(),
            ShellMsg::Error("boom".into())
        );
        assert!(matches!(
            decode(json!({"command": "metrics", "name": "m", "params": 3})).unwrap(),
            ShellMsg::Metrics { .. }
        ));
    }

    #[test]
    fn clear_errors() {
        assert_eq!(
            decode(json!({"command": "dance"})).unwrap_err(),
            DecodeError::UnknownCommand("dance".into())
        );
        assert_eq!(
            decode(json!([1, 2])).unwrap_err(),
            DecodeError::NotAMap("a list")
        );
        assert_eq!(
            decode(json!({"id": 1})).unwrap_err(),
            DecodeError::NoCommand
        );
        let e = decode(json!({"command": "emit", "tuple": "abc"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a list"), "{e}");
        let e = decode(json!({"command": "ack"})).unwrap_err().to_string();
        assert!(e.contains("no \"id\""), "{e}");
        assert_eq!(
            decode(json!({"pid": 42})).unwrap(),
            ShellMsg::Handshake { pid: 42 }
        );
        let e = decode(json!({"pid": "x"})).unwrap_err().to_string();
        assert!(e.contains("no integer \"pid\": \"x\""), "{e}");
        assert!(decode(json!({"pid": -1})).is_err());
    }

    #[test]
    fn a_tuple_written_directly_is_the_same_json_as_its_tree() {
        use heron_api::Value;
        let values = [
            Value::from("w"),
            Value::Int(-3),
            Value::Float(0.5),
            Value::Bool(true),
            Value::Null,
            Value::Bytes(vec![0, 255]),
            Value::Float(f64::INFINITY),
        ];
        let t = TupleOut {
            id: 17,
            comp: "split",
            stream: "default",
            task: 4,
            values: &values,
        };
        let direct: serde_json::Value = serde_json::to_value(t).unwrap();
        assert_eq!(direct, t.to_node().to_json());
        assert_eq!(
            direct["tuple"][5],
            json!([0, 255]),
            "bytes as a list of byte values"
        );
    }

    #[test]
    fn host_messages() {
        assert_eq!(
            heartbeat_msg("1").to_json(),
            json!({"id": "1", "comp": null, "stream": "__heartbeat", "task": -1, "tuple": []})
        );
        assert_eq!(
            command_msg("ack", Node::Int(3)).to_json(),
            json!({"command": "ack", "id": 3})
        );
        assert_eq!(task_ids_msg(&[2, 3]).to_json(), json!([2, 3]));
    }
}
