//! `streams:` entries: groupings, and the checks against the components they connect.

use super::string_list;
use crate::error::{Location, Problem};
use crate::include::Entry;
use crate::model::{ComponentKind, FluxComponent, FluxGrouping, FluxStream};
use crate::yaml::Node;

/// One `streams:` entry, checked against the components.
pub(super) fn stream(
    e: &Entry,
    components: &[FluxComponent],
    broken: &[String],
    problems: &mut Vec<Problem>,
) -> Option<FluxStream> {
    let at = e.at();
    let Some(map) = e.node.as_map() else {
        problems.push(Problem::new(
            at,
            format!(
                "a stream must be a mapping (name, from, to, grouping), not {}",
                e.node.kind()
            ),
        ));
        return None;
    };
    let before = problems.len();
    for (k, _) in map {
        if !matches!(k.name.as_str(), "name" | "from" | "to" | "grouping") {
            problems.push(Problem::new(
                Location::new(&e.file, k.line, k.col),
                format!(
                    "unknown stream key {:?} (expected name, from, to, grouping)",
                    k.name
                ),
            ));
        }
    }
    let end = |key: &str, problems: &mut Vec<Problem>| -> Option<(String, Location)> {
        match e.node.get(key) {
            Some(n) => match n.scalar_text() {
                Some(s) => Some((s, n.at(&e.file))),
                None => {
                    problems.push(Problem::new(
                        n.at(&e.file),
                        format!("stream `{key}` must be a component id, not {}", n.kind()),
                    ));
                    None
                }
            },
            None => {
                problems.push(Problem::new(at.clone(), format!("a stream needs `{key}`")));
                None
            }
        }
    };
    let from = end("from", problems);
    let to = end("to", problems);
    let grouping = grouping(e, problems);
    let (Some((from, from_at)), Some((to, to_at)), Some((grouping, stream_id, args_at))) =
        (from, to, grouping)
    else {
        return None;
    };
    let ids = || {
        components
            .iter()
            .map(|c| c.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let source = components.iter().find(|c| c.id == from);
    match components.iter().find(|c| c.id == to) {
        None => problems.push(Problem::new(
            to_at,
            format!(
                "stream to unknown component {to:?} (the spouts and bolts are: {})",
                ids()
            ),
        )),
        Some(c) if c.kind == ComponentKind::Spout => problems.push(Problem::new(
            to_at,
            format!("stream to {to:?}, which is a spout: only bolts subscribe to streams"),
        )),
        Some(_) => {}
    }
    match source {
        Some(src) if broken.contains(&src.id) => {}
        None => problems.push(Problem::new(
            from_at,
            format!(
                "stream from unknown component {from:?} (the spouts and bolts are: {})",
                ids()
            ),
        )),
        Some(src) => match src.output(&stream_id) {
            None => problems.push(Problem::new(
                args_at.clone(),
                format!(
                    "{} {from:?} declares no stream {stream_id:?} (it declares: {})",
                    src.kind.as_str(),
                    if src.streams.is_empty() {
                        "none".to_owned()
                    } else {
                        src.streams
                            .iter()
                            .map(|s| s.id.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                ),
            )),
            Some(out) => {
                if let FluxGrouping::Fields(fields) = &grouping {
                    for f in fields.iter().filter(|f| !out.fields.contains(f)) {
                        problems.push(Problem::new(
                            args_at.clone(),
                            format!("FIELDS grouping on {f:?}, which is not a field of stream {stream_id:?} of {from:?} (its fields: {})", out.fields.join(", ")),
                        ));
                    }
                }
            }
        },
    }
    if problems.len() > before {
        return None;
    }
    Some(FluxStream {
        name: e.node.get("name").and_then(Node::scalar_text),
        from,
        to,
        stream_id,
        grouping,
        location: at,
    })
}

/// `grouping:` → (type, streamId, where the most specific part is).
fn grouping(e: &Entry, problems: &mut Vec<Problem>) -> Option<(FluxGrouping, String, Location)> {
    let Some(g) = e.node.get("grouping") else {
        problems.push(Problem::new(
            e.at(),
            "a stream needs a `grouping` (e.g. `grouping: {type: SHUFFLE}`)",
        ));
        return None;
    };
    let Some(map) = g.as_map() else {
        problems.push(Problem::new(
            g.at(&e.file),
            format!(
                "`grouping` must be a mapping (type, streamId, args), not {}",
                g.kind()
            ),
        ));
        return None;
    };
    let mut ok = true;
    for (k, _) in map {
        if !matches!(
            k.name.as_str(),
            "type" | "streamId" | "args" | "customClass"
        ) {
            problems.push(Problem::new(
                Location::new(&e.file, k.line, k.col),
                format!(
                    "unknown grouping key {:?} (expected type, streamId, args)",
                    k.name
                ),
            ));
            ok = false;
        }
    }
    let stream_id = match g.get("streamId") {
        None => "default".to_owned(),
        Some(s) => match s.scalar_text() {
            Some(s) => s,
            None => {
                problems.push(Problem::new(
                    s.at(&e.file),
                    format!("`streamId` must be a string, not {}", s.kind()),
                ));
                return None;
            }
        },
    };
    let id_at = g.get("streamId").unwrap_or(g).at(&e.file);
    let Some(t) = g.get("type") else {
        problems.push(Problem::new(
            g.at(&e.file),
            format!(
                "a grouping needs a `type` (one of {})",
                FluxGrouping::NAMES.join(", ")
            ),
        ));
        return None;
    };
    let t_at = t.at(&e.file);
    let name = t.scalar_text().unwrap_or_default();
    let grouping = match name.to_ascii_uppercase().as_str() {
        "SHUFFLE" => FluxGrouping::Shuffle,
        "ALL" => FluxGrouping::All,
        "GLOBAL" => FluxGrouping::Global,
        "NONE" => FluxGrouping::None,
        "LOCAL_OR_SHUFFLE" => FluxGrouping::LocalOrShuffle,
        "DIRECT" => FluxGrouping::Direct,
        "FIELDS" => {
            let Some(args) = g.get("args") else {
                problems.push(Problem::new(
                    t_at,
                    "a FIELDS grouping needs `args`: the fields to group on",
                ));
                return None;
            };
            let fields = string_list(args, &e.file, "FIELDS grouping", "`args`", problems)?;
            if fields.is_empty() {
                problems.push(Problem::new(
                    args.at(&e.file),
                    "a FIELDS grouping needs at least one field in `args`",
                ));
                return None;
            }
            return ok.then(|| (FluxGrouping::Fields(fields), stream_id, args.at(&e.file)));
        }
        "CUSTOM" => {
            let class = g
                .get("customClass")
                .and_then(|c| c.get("className"))
                .and_then(Node::as_str)
                .unwrap_or("?");
            problems.push(Problem::new(
                t_at,
                format!("CUSTOM grouping (customClass {class}) is a Java class, which heron-rs cannot run: use one of {}", FluxGrouping::NAMES.join(", ")),
            ));
            return None;
        }
        _ => {
            problems.push(Problem::new(
                t_at,
                format!(
                    "unknown grouping type {name:?} (expected one of {})",
                    FluxGrouping::NAMES.join(", ")
                ),
            ));
            return None;
        }
    };
    if let Some(a) = g.get("args") {
        tracing::warn!(
            "{}: `args` apply to FIELDS groupings only; ignored for {}",
            a.at(&e.file),
            grouping.name()
        );
    }
    ok.then_some((grouping, stream_id, id_at))
}

/// Makes every stream consumed with `DIRECT` a direct stream, and checks that no other
/// grouping consumes it.
pub(super) fn mark_direct_streams(
    streams: &[FluxStream],
    components: &mut [FluxComponent],
    problems: &mut Vec<Problem>,
) {
    for d in streams
        .iter()
        .filter(|s| s.grouping == FluxGrouping::Direct)
    {
        if let Some(other) = streams.iter().find(|s| {
            s.from == d.from && s.stream_id == d.stream_id && s.grouping != FluxGrouping::Direct
        }) {
            problems.push(Problem::new(
                other.location.clone(),
                format!(
                    "stream {:?} of {:?} is consumed with DIRECT grouping at {}, so it is a direct stream, and every subscription to it must be DIRECT (this one is {})",
                    d.stream_id, d.from, d.location, other.grouping.name()
                ),
            ));
        }
        if let Some(out) = components
            .iter_mut()
            .find(|c| c.id == d.from)
            .and_then(|c| c.streams.iter_mut().find(|s| s.id == d.stream_id))
        {
            out.direct = true;
        }
    }
    for (i, s) in streams.iter().enumerate() {
        if let Some(first) = streams[..i]
            .iter()
            .find(|f| f.from == s.from && f.to == s.to && f.stream_id == s.stream_id)
        {
            problems.push(Problem::new(
                s.location.clone(),
                format!(
                    "bolt {:?} already subscribes to stream {:?} of {:?} (at {})",
                    s.to, s.stream_id, s.from, first.location
                ),
            ));
        }
    }
}
