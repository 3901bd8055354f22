//! Turns a merged Flux file into a [`FluxTopology`], checking everything and collecting every
//! problem: what heron-rs cannot run (Java classes, component beans, `properties`, `factory`,
//! `numTasks` ≠ `parallelism`, `CUSTOM` groupings) and what is wrong (missing `name`, unknown
//! keys, grouping types or components, undeclared streams and fields, duplicate ids).

use std::collections::HashMap;

use crate::config::ConfigBuilder;
use crate::error::{Location, Problem};
use crate::include::{Entry, Merged};
use crate::model::{
    is_valid_name, ComponentKind, FluxComponent, FluxStream, OutputStream, FLUX_SHELL_BOLT,
    FLUX_SHELL_SPOUT,
};
use crate::topology::FluxTopology;
use crate::yaml::{Key, Node, Value};

const COMPONENT_KEYS: &str =
    "id, className, constructorArgs, configMethods, parallelism, numTasks, config";
const CONFIG_METHODS: &str = "setDefaultStream, setNamedStream, addComponentConfig, setEnv";

/// Checks `m` and builds the topology, or returns every problem found.
pub(crate) fn interpret(m: Merged) -> Result<FluxTopology, Vec<Problem>> {
    let mut problems = Vec::new();
    let name = topology_name(&m, &mut problems);

    let mut conf = ConfigBuilder::default();
    for c in &m.config {
        conf.set(
            &c.key.name,
            &c.value,
            Location::new(&c.file, c.key.line, c.key.col),
            &mut problems,
        );
    }
    let (config, env) = conf.topology();

    // every id, for duplicates: id -> (what, where)
    let mut ids: HashMap<String, (&'static str, Location)> = HashMap::new();
    let mut claim = |id: &str, what: &'static str, at: Location, problems: &mut Vec<Problem>| {
        if let Some((first, first_at)) = ids.get(id) {
            problems.push(Problem::new(
                at,
                format!("duplicate id {id:?}: already used by the {first} at {first_at}"),
            ));
        } else {
            ids.insert(id.to_owned(), (what, at));
        }
    };
    for bean in &m.components {
        let id = bean.id().unwrap_or("?");
        let class = bean
            .node
            .get("className")
            .and_then(Node::as_str)
            .unwrap_or("?");
        claim(id, "component", bean.at(), &mut problems);
        problems.push(Problem::new(
            bean.at(),
            format!("component {id:?} is the Java object {class}, which heron-rs cannot create: `components:` beans are used by Java spouts and bolts, and heron-rs runs only multi-lang ones ({FLUX_SHELL_SPOUT}, {FLUX_SHELL_BOLT})"),
        ));
    }
    let mut components = Vec::new();
    // components with problems of their own: streams may name them, but are not checked
    // against their (unknown) outputs
    let mut broken = Vec::new();
    for (entries, kind) in [
        (&m.spouts, ComponentKind::Spout),
        (&m.bolts, ComponentKind::Bolt),
    ] {
        for e in entries {
            if let Some((c, ok)) = component(e, kind, &env, &mut problems) {
                claim(&c.id, kind.as_str(), c.location.clone(), &mut problems);
                if !ok {
                    broken.push(c.id.clone());
                }
                components.push(c);
            }
        }
    }
    let streams: Vec<FluxStream> = m
        .streams
        .iter()
        .filter_map(|e| streams::stream(e, &components, &broken, &mut problems))
        .collect();
    streams::mark_direct_streams(&streams, &mut components, &mut problems);
    if m.spouts.is_empty() && !m.topology_source {
        problems.push(Problem::new(
            Location::file(&m.file),
            "the topology has no `spouts`",
        ));
    }
    problems.sort_by(|a, b| {
        (&a.location.file, a.location.line, a.location.column).cmp(&(
            &b.location.file,
            b.location.line,
            b.location.column,
        ))
    });
    match name {
        Some(name) if problems.is_empty() => {
            Ok(FluxTopology::new(name, m.file, config, components, streams))
        }
        _ => Err(problems),
    }
}

fn topology_name(m: &Merged, problems: &mut Vec<Problem>) -> Option<String> {
    let Some(entry) = &m.name else {
        problems.push(Problem::new(
            Location::file(&m.file),
            "missing `name`: a Flux file must name its topology (`name: my-topology`)",
        ));
        return None;
    };
    let Some(name) = entry.node.scalar_text() else {
        problems.push(Problem::new(
            entry.at(),
            format!("`name` must be a string, not {}", entry.node.kind()),
        ));
        return None;
    };
    if !is_valid_name(&name) {
        problems.push(Problem::new(
            entry.at(),
            format!("invalid topology name {name:?}: use only letters, digits, '-', '_' and '.'"),
        ));
        return None;
    }
    Some(name)
}

/// One spout or bolt and whether it is free of problems; `None` when it has no usable id.
fn component(
    e: &Entry,
    kind: ComponentKind,
    env: &[(String, String)],
    problems: &mut Vec<Problem>,
) -> Option<(FluxComponent, bool)> {
    let what = kind.as_str();
    let at = e.at();
    let key_at = |k: &Key| Location::new(&e.file, k.line, k.col);
    let Some(map) = e.node.as_map() else {
        problems.push(Problem::new(
            at,
            format!(
                "a {what} must be a mapping ({COMPONENT_KEYS}), not {}",
                e.node.kind()
            ),
        ));
        return None;
    };
    let before = problems.len();
    let id = match e.node.get("id") {
        Some(n) => match n.scalar_text() {
            Some(id) if is_valid_name(&id) && !id.starts_with("__") => id,
            Some(id) => {
                problems.push(Problem::new(n.at(&e.file), format!("invalid {what} id {id:?}: use only letters, digits, '-', '_' and '.' (and no leading \"__\")")));
                id
            }
            None => {
                problems.push(Problem::new(
                    n.at(&e.file),
                    format!("a {what} `id` must be a string, not {}", n.kind()),
                ));
                return None;
            }
        },
        None => {
            problems.push(Problem::new(at, format!("a {what} needs an `id`")));
            return None;
        }
    };
    let named = format!("{what} {id:?}");

    let mut java = false;
    match e.node.get("className") {
        None => problems.push(Problem::new(
            at.clone(),
            format!("{named} has no `className` (use {})", kind.wrapper_class()),
        )),
        Some(n) => match n.as_str() {
            Some(c) if c == kind.wrapper_class() => {}
            Some(c) if c == FLUX_SHELL_SPOUT || c == FLUX_SHELL_BOLT => {
                problems.push(Problem::new(
                    n.at(&e.file),
                    format!(
                        "{named} uses {c}, which is not a {what}: {what}s use {}",
                        kind.wrapper_class()
                    ),
                ))
            }
            Some(c) => {
                java = true;
                problems.push(Problem::new(
                    n.at(&e.file),
                    format!("{named} is the Java class {c}, which heron-rs cannot run: it runs only multi-lang components ({})", kind.wrapper_class()),
                ));
            }
            None => problems.push(Problem::new(
                n.at(&e.file),
                format!("{named}: `className` must be a string, not {}", n.kind()),
            )),
        },
    }

    let mut parallelism = 1u32;
    let mut num_tasks = None;
    let mut command = Vec::new();
    let mut streams: Vec<OutputStream> = Vec::new();
    let mut conf = ConfigBuilder::default();
    let mut component_env: Vec<(String, String)> = env.to_vec();
    for (k, v) in map {
        match k.name.as_str() {
            "id" | "className" => {}
            "parallelism" | "numTasks" => match &v.value {
                Value::Int(n) if *n >= 1 && *n <= i64::from(u32::MAX) => {
                    if k.name == "parallelism" {
                        parallelism = *n as u32;
                    } else {
                        num_tasks = Some((*n as u32, key_at(k)));
                    }
                }
                _ => problems.push(Problem::new(v.at(&e.file), format!("{named}: `{}` must be a whole number ≥ 1, not {}", k.name, v.kind()))),
            },
            "constructorArgs" if !java => {
                if let Some((cmd, fields)) = constructor_args(v, &e.file, &named, kind, problems) {
                    command = cmd;
                    if let Some(fields) = fields {
                        set_stream(&mut streams, "default", fields);
                    }
                }
            }
            "configMethods" if !java => {
                config_methods(v, &e.file, &named, &mut streams, &mut conf, &mut component_env, problems)
            }
            "constructorArgs" | "configMethods" => {}
            "config" => match v.as_map() {
                Some(entries) => {
                    for (ck, cv) in entries {
                        conf.set(&ck.name, cv, key_at(ck), problems);
                    }
                }
                None if v.value == Value::Null => {}
                None => problems.push(Problem::new(v.at(&e.file), format!("{named}: `config` must be a mapping, not {}", v.kind()))),
            },
            "properties" => problems.push(Problem::new(
                key_at(k),
                format!("{named} sets `properties` (Java bean setters or fields), which heron-rs cannot apply"),
            )),
            "factory" | "factoryArgs" => problems.push(Problem::new(
                key_at(k),
                format!("{named} uses `{}` (a static Java factory method), which heron-rs cannot call", k.name),
            )),
            "onHeapMemoryLoad" | "offHeapMemoryLoad" | "cpuLoad" => {
                tracing::warn!("{}: {named}: `{}` (Storm's resource-aware scheduler) is ignored", key_at(k), k.name);
            }
            other => problems.push(Problem::new(
                key_at(k),
                format!("{named}: unknown key {other:?} (expected {COMPONENT_KEYS})"),
            )),
        }
    }
    if !java && command.is_empty() && e.node.get("constructorArgs").is_none() {
        problems.push(Problem::new(
            at.clone(),
            format!("{named} has no `constructorArgs`: give the command, e.g. `constructorArgs: [[python3, {what}.py], [field, ...]]`"),
        ));
    }
    if let Some((n, n_at)) = num_tasks {
        if n != parallelism {
            problems.push(Problem::new(
                n_at,
                format!("{named} has numTasks {n} but parallelism {parallelism}: heron-rs runs one task per instance, so numTasks must equal parallelism (or be left out)"),
            ));
        }
    }
    let ok = problems.len() == before;
    let c = FluxComponent {
        id,
        kind,
        command,
        streams,
        parallelism,
        config: conf.component(),
        env: component_env,
        location: at,
    };
    Some((c, ok))
}

/// `[[command...]]` or `[[command...], [fields...]]`.
fn constructor_args(
    v: &Node,
    file: &std::path::Path,
    named: &str,
    kind: ComponentKind,
    problems: &mut Vec<Problem>,
) -> Option<(Vec<String>, Option<Vec<String>>)> {
    let class = kind.wrapper_class().rsplit('.').next().unwrap_or_default();
    let usage = format!("{class} takes constructorArgs [[command, args...]] or [[command, args...], [output fields...]]");
    let Some(args) = v.as_seq() else {
        problems.push(Problem::new(
            v.at(file),
            format!("{named}: {usage}, not {}", v.kind()),
        ));
        return None;
    };
    if let Some(r) = args
        .iter()
        .find(|a| a.get("ref").is_some() || a.get("reflist").is_some())
    {
        problems.push(Problem::new(
            r.at(file),
            format!("{named}: constructorArgs refer to `components:` beans (`ref`/`reflist`), which heron-rs cannot create"),
        ));
        return None;
    }
    if args.is_empty() || args.len() > 2 {
        problems.push(Problem::new(
            v.at(file),
            format!("{named}: {usage}; got {} arguments", args.len()),
        ));
        return None;
    }
    let command = string_list(&args[0], file, named, "the command", problems)?;
    if command.is_empty() {
        problems.push(Problem::new(
            args[0].at(file),
            format!("{named}: the command is empty"),
        ));
        return None;
    }
    let fields = match args.get(1) {
        Some(f) => Some(fields_list(f, file, named, problems)?),
        None => None,
    };
    Some((command, fields))
}

/// A list of scalars as strings.
fn string_list(
    v: &Node,
    file: &std::path::Path,
    named: &str,
    what: &str,
    problems: &mut Vec<Problem>,
) -> Option<Vec<String>> {
    let Some(items) = v.as_seq() else {
        problems.push(Problem::new(
            v.at(file),
            format!("{named}: {what} must be a list, not {}", v.kind()),
        ));
        return None;
    };
    let mut out = Vec::with_capacity(items.len());
    for i in items {
        match i.scalar_text() {
            Some(s) => out.push(s),
            None => {
                problems.push(Problem::new(
                    i.at(file),
                    format!(
                        "{named}: {what} must be a list of strings; this entry is {}",
                        i.kind()
                    ),
                ));
                return None;
            }
        }
    }
    Some(out)
}

/// A list of distinct field names.
fn fields_list(
    v: &Node,
    file: &std::path::Path,
    named: &str,
    problems: &mut Vec<Problem>,
) -> Option<Vec<String>> {
    let fields = string_list(v, file, named, "output fields", problems)?;
    for (i, f) in fields.iter().enumerate() {
        if fields[..i].contains(f) {
            problems.push(Problem::new(
                v.at(file),
                format!("{named}: output field {f:?} is declared twice"),
            ));
            return None;
        }
    }
    Some(fields)
}

fn set_stream(streams: &mut Vec<OutputStream>, id: &str, fields: Vec<String>) {
    let s = OutputStream {
        id: id.to_owned(),
        fields,
        direct: false,
    };
    match streams.iter_mut().find(|s| s.id == id) {
        Some(existing) => *existing = s,
        None => streams.push(s),
    }
}

fn config_methods(
    v: &Node,
    file: &std::path::Path,
    named: &str,
    streams: &mut Vec<OutputStream>,
    conf: &mut ConfigBuilder,
    env: &mut Vec<(String, String)>,
    problems: &mut Vec<Problem>,
) {
    let methods = match &v.value {
        Value::Null => return,
        Value::Seq(m) => m,
        _ => {
            problems.push(Problem::new(
                v.at(file),
                format!(
                    "{named}: `configMethods` must be a list of {{name, args}}, not {}",
                    v.kind()
                ),
            ));
            return;
        }
    };
    for m in methods {
        let Some(name) = m.get("name").and_then(Node::as_str) else {
            problems.push(Problem::new(
                m.at(file),
                format!("{named}: a configMethod needs a `name` ({CONFIG_METHODS})"),
            ));
            continue;
        };
        if let Some((k, _)) = m
            .as_map()
            .unwrap_or_default()
            .iter()
            .find(|(k, _)| k.name != "name" && k.name != "args")
        {
            problems.push(Problem::new(
                Location::new(file, k.line, k.col),
                format!(
                    "{named}: unknown configMethod key {:?} (expected name, args)",
                    k.name
                ),
            ));
            continue;
        }
        let empty = Vec::new();
        let args = match m.get("args").map(|a| &a.value) {
            None | Some(Value::Null) => &empty,
            Some(Value::Seq(a)) => a,
            Some(_) => {
                problems.push(Problem::new(
                    m.at(file),
                    format!("{named}: `args` of {name} must be a list"),
                ));
                continue;
            }
        };
        let wrong =
            |usage: &str| Problem::new(m.at(file), format!("{named}: {name} takes args {usage}"));
        match (name, args.as_slice()) {
            ("setDefaultStream", [fields]) => {
                if let Some(f) = fields_list(fields, file, named, problems) {
                    set_stream(streams, "default", f);
                }
            }
            ("setNamedStream", [id, fields]) => {
                let Some(id) = id
                    .scalar_text()
                    .filter(|s| is_valid_name(s) && !s.starts_with("__"))
                else {
                    problems.push(Problem::new(id.at(file), format!("{named}: invalid stream id: use only letters, digits, '-', '_' and '.' (and no leading \"__\")")));
                    continue;
                };
                if let Some(f) = fields_list(fields, file, named, problems) {
                    set_stream(streams, &id, f);
                }
            }
            ("addComponentConfig", [key, value]) => match key.scalar_text() {
                Some(k) => conf.set(&k, value, m.at(file), problems),
                None => problems.push(wrong("[key, value]: the key must be a string")),
            },
            ("setEnv", [vars]) => match vars.as_map() {
                Some(entries) => env.extend(
                    entries
                        .iter()
                        .filter_map(|(k, v)| Some((k.name.clone(), v.scalar_text()?))),
                ),
                None => problems.push(wrong("[{NAME: value, ...}]")),
            },
            ("setDefaultStream", _) => problems.push(wrong("[[field, ...]]")),
            ("setNamedStream", _) => problems.push(wrong("[stream id, [field, ...]]")),
            ("addComponentConfig", _) => problems.push(wrong("[key, value]")),
            ("setEnv", _) => problems.push(wrong("[{NAME: value, ...}]")),
            (other, _) => problems.push(Problem::new(
                m.at(file),
                format!(
                    "{named}: unknown configMethod {other:?} (heron-rs supports {CONFIG_METHODS})"
                ),
            )),
        }
    }
}

mod streams;

#[cfg(test)]
mod tests;
