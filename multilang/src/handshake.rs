//! The handshake message (reference/storm.md §1.3): `conf`, `pidDir` and `context`, built
//! from the task's [`TopologyContext`].

use std::path::Path;

use heron_api::{GroupingKind, TopologyContext};

use crate::node::{Key, Node};

/// A configuration value as the subprocess sees it: `true`/`false` as booleans, integers and
/// floats as numbers, JSON objects and lists (text starting with `{` or `[` that parses) as
/// themselves, anything else as a string.
pub fn conf_value(text: &str) -> Node {
    match text {
        "true" => return Node::Bool(true),
        "false" => return Node::Bool(false),
        _ => {}
    }
    if let Ok(i) = text.parse::<i64>() {
        return Node::Int(i);
    }
    if let Ok(f) = text.parse::<f64>() {
        if f.is_finite()
            && text
                .chars()
                .all(|c| c.is_ascii_digit() || "+-.eE".contains(c))
        {
            return Node::Float(f);
        }
    }
    let t = text.trim_start();
    if t.starts_with('{') || t.starts_with('[') {
        if let Ok(j) = serde_json::from_str::<serde_json::Value>(text) {
            return Node::from_json(&j);
        }
    }
    Node::str(text)
}

/// The full configuration map: the context's merged configuration, plus `topology.name` and
/// `topology.debug` when missing (pystorm reads both).
pub fn conf_node(ctx: &TopologyContext) -> Node {
    let mut entries: Vec<(Key, Node)> = ctx
        .config()
        .iter()
        .map(|(k, v)| (Key::Owned(k.to_owned()), conf_value(v)))
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    if !entries.iter().any(|(k, _)| k == "topology.name") {
        entries.push(("topology.name".into(), Node::str(ctx.topology_name())));
    }
    if !entries.iter().any(|(k, _)| k == "topology.debug") {
        entries.push(("topology.debug".into(), Node::Bool(false)));
    }
    Node::Map(entries)
}

/// A grouping as Storm's context writes it: `{"type": "FIELDS", "fields": [...]}`, global
/// being FIELDS with no fields.
pub fn grouping_node(g: &GroupingKind) -> Node {
    let (ty, fields): (&str, Option<Vec<Node>>) = match g {
        GroupingKind::Fields(f) => ("FIELDS", Some(f.iter().map(Node::str).collect())),
        GroupingKind::Global => ("FIELDS", Some(Vec::new())),
        GroupingKind::Shuffle => ("SHUFFLE", None),
        GroupingKind::LocalOrShuffle => ("LOCAL_OR_SHUFFLE", None),
        GroupingKind::All => ("ALL", None),
        GroupingKind::None => ("NONE", None),
        GroupingKind::Direct => ("DIRECT", None),
        GroupingKind::Custom => ("CUSTOM_OBJECT", None),
    };
    let mut m: Vec<(Key, Node)> = vec![("type".into(), Node::str(ty))];
    if let Some(f) = fields {
        m.push(("fields".into(), Node::List(f)));
    }
    Node::Map(m)
}

/// Inserts `value` at `outer`/`inner` of a map of maps.
fn put2(map: &mut Vec<(Key, Node)>, outer: &str, inner: &str, value: Node) {
    let pos = match map.iter().position(|(k, _)| k == outer) {
        Some(p) => p,
        None => {
            map.push((Key::Owned(outer.to_owned()), Node::Map(Vec::new())));
            map.len() - 1
        }
    };
    if let Node::Map(m) = &mut map[pos].1 {
        m.push((Key::Owned(inner.to_owned()), value));
    }
}

/// The `context` map.
pub fn context_node(ctx: &TopologyContext) -> Node {
    let me = ctx.component_id();
    let mut tasks: Vec<(i32, &str)> = ctx
        .components()
        .flat_map(|c| ctx.component_tasks(c).iter().map(move |&t| (t, c)))
        .collect();
    tasks.sort_unstable();
    let task_component = Node::Map(
        tasks
            .iter()
            .map(|(t, c)| (Key::Owned(t.to_string()), Node::str(*c)))
            .collect(),
    );
    let mut streams: Vec<(&str, &heron_api::Fields)> = ctx.component_streams(me).collect();
    streams.sort_by(|a, b| a.0.cmp(b.0));
    let stream_fields = Node::Map(
        streams
            .iter()
            .map(|(s, f)| {
                (
                    Key::Owned(s.to_string()),
                    Node::List(f.iter().map(Node::str).collect()),
                )
            })
            .collect(),
    );
    let mut targets: Vec<(Key, Node)> = Vec::new();
    for (s, _) in &streams {
        targets.push((Key::Owned(s.to_string()), Node::Map(Vec::new())));
        for sub in ctx.stream_targets(me, s) {
            put2(&mut targets, s, &sub.consumer, grouping_node(&sub.grouping));
        }
    }
    let mut sources: Vec<(Key, Node)> = Vec::new();
    let mut source_fields: Vec<(Key, Node)> = Vec::new();
    for sub in ctx.component_inputs(me) {
        put2(
            &mut sources,
            &sub.source,
            &sub.stream,
            grouping_node(&sub.grouping),
        );
        let fields = ctx
            .component_output_fields(&sub.source, &sub.stream)
            .map(|f| Node::List(f.iter().map(Node::str).collect()))
            .unwrap_or(Node::List(Vec::new()));
        put2(&mut source_fields, &sub.source, &sub.stream, fields);
    }
    Node::Map(vec![
        ("taskid".into(), Node::Int(i64::from(ctx.task_id()))),
        ("componentid".into(), Node::str(me)),
        ("task->component".into(), task_component),
        (
            "streams".into(),
            Node::List(streams.iter().map(|(s, _)| Node::str(*s)).collect()),
        ),
        ("stream->outputfields".into(), stream_fields),
        ("stream->target->grouping".into(), Node::Map(targets)),
        ("source->stream->grouping".into(), Node::Map(sources)),
        ("source->stream->fields".into(), Node::Map(source_fields)),
    ])
}

/// The whole handshake message.
pub fn handshake_msg(ctx: &TopologyContext, pid_dir: &Path) -> Node {
    Node::Map(vec![
        ("conf".into(), conf_node(ctx)),
        ("pidDir".into(), Node::str(pid_dir.to_string_lossy())),
        ("context".into(), context_node(ctx)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use heron_api::{Config, Fields};
    use serde_json::json;

    #[test]
    fn conf_values_keep_their_types() {
        assert_eq!(conf_value("true"), Node::Bool(true));
        assert_eq!(conf_value("30"), Node::Int(30));
        assert_eq!(conf_value("0.5"), Node::Float(0.5));
        assert_eq!(conf_value("inf"), Node::str("inf"));
        assert_eq!(conf_value("word-count"), Node::str("word-count"));
        assert_eq!(
            conf_value(r#"{"A": "1"}"#),
            Node::map([("A", Node::str("1"))])
        );
        assert_eq!(conf_value("{not json"), Node::str("{not json"));
    }

    #[test]
    fn context_has_storms_keys() {
        let mut conf = Config::new();
        conf.set("topology.name", "wc")
            .set("pystorm.log.level", "debug");
        let ctx = TopologyContext::builder("wc", "split", 3)
            .component_tasks("spout", [1])
            .component_tasks("split", [2, 3])
            .component_tasks("count", [4])
            .stream("spout", "default", Fields::new(["sentence"]))
            .stream("split", "default", Fields::new(["word"]))
            .subscription("split", "spout", "default", GroupingKind::Shuffle)
            .subscription(
                "count",
                "split",
                "default",
                GroupingKind::Fields(Fields::new(["word"])),
            )
            .config(conf)
            .build();
        let c = context_node(&ctx).to_json();
        assert_eq!(c["taskid"], json!(3));
        assert_eq!(c["componentid"], json!("split"));
        assert_eq!(
            c["task->component"],
            json!({"1": "spout", "2": "split", "3": "split", "4": "count"})
        );
        assert_eq!(c["streams"], json!(["default"]));
        assert_eq!(c["stream->outputfields"], json!({"default": ["word"]}));
        assert_eq!(
            c["stream->target->grouping"],
            json!({"default": {"count": {"type": "FIELDS", "fields": ["word"]}}})
        );
        assert_eq!(
            c["source->stream->grouping"],
            json!({"spout": {"default": {"type": "SHUFFLE"}}})
        );
        assert_eq!(
            c["source->stream->fields"],
            json!({"spout": {"default": ["sentence"]}})
        );
        let conf = conf_node(&ctx).to_json();
        assert_eq!(conf["topology.name"], json!("wc"));
        assert_eq!(conf["topology.debug"], json!(false));
        assert_eq!(conf["pystorm.log.level"], json!("debug"));
        assert_eq!(
            grouping_node(&GroupingKind::Global).to_json(),
            json!({"type": "FIELDS", "fields": []})
        );
    }
}
