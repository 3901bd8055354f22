//! Messages from the subprocess, decoded into typed commands, and the messages the host
//! sends (Storm's multi-lang protocol, reference/storm.md §1.3–1.7).

use crate::node::Node;

/// An `emit` command.
#[derive(Clone, Debug, PartialEq)]
pub struct Emit {
    /// The values.
    pub tuple: Vec<Node>,
    /// The stream (`default` when absent).
    pub stream: String,
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
    /// The handshake reply has no integer `pid`.
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
fn id_string(n: &Node) -> Option<String> {
    match n {
        Node::Str(s) => Some(s.clone()),
        Node::Int(i) => Some(i.to_string()),
        Node::UInt(u) => Some(u.to_string()),
        _ => None,
    }
}

impl ShellMsg {
    /// [`decode`](Self::decode), moving the values out of `msg` instead of copying them (the
    /// hot path: `emit`, `ack`, `fail`, `sync`).
    pub fn decode_owned(mut msg: Node) -> Result<ShellMsg, DecodeError> {
        let command = msg.get("command").and_then(Node::as_str);
        match command {
            Some("emit") => {
                // the big parts move out; what is left is checked as usual
                let tuple = msg.take_with("tuple", Node::List(Vec::new()));
                let anchors = msg.take("anchors");
                let id = msg.take("id");
                let mut e = decode_emit(&msg)?;
                e.tuple = match tuple {
                    Some(Node::List(l)) => l,
                    Some(other) => {
                        return Err(bad(
                            "emit",
                            format!("\"tuple\" is {}, not a list", other.kind()),
                        ))
                    }
                    None => return Err(bad("emit", "no \"tuple\"")),
                };
                e.anchors = decode_anchors(anchors)?;
                e.id = id.filter(|n| *n != Node::Null);
                Ok(ShellMsg::Emit(e))
            }
            Some(c @ ("ack" | "fail")) => {
                let ack = c == "ack";
                if !matches!(msg.get("id"), Some(Node::Str(_))) {
                    return ShellMsg::decode(&msg);
                }
                match msg.take("id") {
                    Some(Node::Str(s)) if ack => Ok(ShellMsg::Ack(s)),
                    Some(Node::Str(s)) => Ok(ShellMsg::Fail(s)),
                    _ => unreachable!("checked above"),
                }
            }
            _ => ShellMsg::decode(&msg),
        }
    }

    /// Decodes one message from the subprocess.
    pub fn decode(msg: &Node) -> Result<ShellMsg, DecodeError> {
        if !matches!(msg, Node::Map(_)) {
            return Err(DecodeError::NotAMap(msg.kind()));
        }
        let command = msg
            .get("command")
            .ok_or(DecodeError::NoCommand)?
            .as_str()
            .ok_or(DecodeError::NoCommand)?;
        let id = |required: bool| -> Result<String, DecodeError> {
            match msg.get("id") {
                Some(n) => {
                    id_string(n).ok_or_else(|| bad(command, format!("\"id\" is {}", n.kind())))
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
            "error" => ShellMsg::Error(text(msg, "msg")),
            "log" => ShellMsg::Log {
                msg: text(msg, "msg"),
                level: match msg.get("level") {
                    None | Some(Node::Null) => 2,
                    Some(Node::Int(l)) => *l,
                    Some(other) => {
                        return Err(bad(command, format!("\"level\" is {}", other.kind())))
                    }
                },
            },
            "metrics" => ShellMsg::Metrics {
                name: msg
                    .get("name")
                    .and_then(Node::as_str)
                    .ok_or_else(|| bad(command, "no string \"name\""))?
                    .to_owned(),
                params: msg.get("params").cloned().unwrap_or(Node::Null),
            },
            "emit" => ShellMsg::Emit(decode_emit(msg)?),
            other => return Err(DecodeError::UnknownCommand(other.to_owned())),
        })
    }
}

fn text(msg: &Node, key: &str) -> String {
    match msg.get(key) {
        Some(Node::Str(s)) => s.clone(),
        Some(Node::Null) | None => String::new(),
        Some(other) => other.to_json().to_string(),
    }
}

/// An emit's anchors: absent, a list of ids, or one id.
fn decode_anchors(anchors: Option<Node>) -> Result<Vec<String>, DecodeError> {
    let c = "emit";
    let one = |a: Node| match a {
        Node::Str(s) => Ok(s),
        other => id_string(&other).ok_or_else(|| bad(c, format!("an anchor is {}", other.kind()))),
    };
    match anchors {
        None | Some(Node::Null) => Ok(Vec::new()),
        Some(Node::List(l)) => l.into_iter().map(one).collect(),
        Some(a) => Ok(vec![one(a)?]),
    }
}

/// Decodes an emit. With `tuple` (or `anchors`, `id`) already taken out by
/// [`ShellMsg::decode_owned`], those come back empty and are filled in there.
fn decode_emit(msg: &Node) -> Result<Emit, DecodeError> {
    let c = "emit";
    let tuple = match msg.get("tuple") {
        Some(Node::List(l)) => l.clone(),
        Some(other) => return Err(bad(c, format!("\"tuple\" is {}, not a list", other.kind()))),
        None => return Err(bad(c, "no \"tuple\"")),
    };
    let stream = match msg.get("stream") {
        None | Some(Node::Null) => heron_api::DEFAULT_STREAM_ID.to_owned(),
        Some(Node::Str(s)) => s.clone(),
        Some(other) => return Err(bad(c, format!("\"stream\" is {}", other.kind()))),
    };
    let anchors = decode_anchors(msg.get("anchors").cloned())?;
    let task = match msg.get("task") {
        None | Some(Node::Null) => None,
        Some(Node::Int(t)) => {
            Some(i32::try_from(*t).map_err(|_| bad(c, format!("task {t} out of range")))?)
        }
        Some(other) => return Err(bad(c, format!("\"task\" is {}", other.kind()))),
    };
    let id = match msg.get("id") {
        None | Some(Node::Null) => None,
        Some(n) => Some(n.clone()),
    };
    let need_task_ids = match msg.get("need_task_ids") {
        None | Some(Node::Null) => true,
        Some(Node::Bool(b)) => *b,
        Some(other) => return Err(bad(c, format!("\"need_task_ids\" is {}", other.kind()))),
    };
    Ok(Emit {
        tuple,
        stream,
        anchors,
        task,
        id,
        need_task_ids,
    })
}

/// The pid in the handshake reply `{"pid": N}`.
pub fn decode_pid(msg: &Node) -> Result<i32, DecodeError> {
    msg.get("pid")
        .and_then(Node::as_i64)
        .and_then(|p| i32::try_from(p).ok())
        .filter(|&p| p > 0)
        .ok_or_else(|| DecodeError::NoPid(msg.to_json().to_string()))
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
    /// The tuple id.
    pub id: &'a str,
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
            self.id,
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
        m.serialize_entry("id", self.id)?;
        m.serialize_entry("comp", self.comp)?;
        m.serialize_entry("stream", self.stream)?;
        m.serialize_entry("task", &self.task)?;
        m.serialize_entry("tuple", &Values(self.values))?;
        m.end()
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

    /// Both decoders, which must agree (the owned one is the host's hot path).
    fn decode(j: serde_json::Value) -> Result<ShellMsg, DecodeError> {
        let n = Node::from_json(&j);
        let by_ref = ShellMsg::decode(&n);
        assert_eq!(ShellMsg::decode_owned(n), by_ref, "{j}");
        by_ref
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
        assert_eq!((e.stream.as_str(), e.task), ("s", Some(4)));
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
            decode_pid(&Node::from_json(&json!({"pid": 42}))).unwrap(),
            42
        );
        assert!(decode_pid(&Node::from_json(&json!({"pid": "x"}))).is_err());
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
            id: "17",
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
