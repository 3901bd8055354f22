//! Flux `config` (and `addComponentConfig`) values to heron's string [`Config`].
//!
//! Every value is stored as Heron stores config values: numbers, booleans and strings as their
//! text (`2`, `true`, `2.0`), lists and mappings JSON-encoded (`["a","b"]`, `{"K":"v"}`); a
//! null value leaves the key unset. On top of that, Storm keys keep their meaning, as Heron's
//! Storm compatibility layer translates them:
//!
//! | Storm key | heron-rs |
//! |---|---|
//! | `topology.workers` | also `topology.stmgrs` (the number of containers) unless that is set |
//! | `topology.acker.executors` | `topology.reliability.mode`, unless that (or `topology.acking`) is set: `0` → `ATMOST_ONCE`, more → `ATLEAST_ONCE`; **unset → `ATLEAST_ONCE`** |
//! | `topology.tick.tuple.freq.secs` | also `topology.tick.tuple.freq.ms` (× 1000) unless that is set |
//! | `topology.environment` | a mapping, stored as JSON and given to every shell subprocess as environment variables |
//! | `topology.multilang.serializer` | JSON (`org.apache.storm.multilang.JsonSerializer`, the default) or pystorm's msgpack (`msgpack`, `*.MsgpackSerializer`); anything else is refused |
//! | `topology.max.spout.pending`, `topology.message.timeout.secs`, `topology.subprocess.timeout.secs`, `topology.shellbolt.max.pending` | kept; must be whole numbers |
//! | `topology.debug`, `topology.enable.message.timeouts` | kept; must be booleans |
//!
//! The acker rule differs from Heron's layer in one case on purpose: Heron maps an unset
//! `topology.acker.executors` to `ATMOST_ONCE`, but in Storm an unset value means one acker
//! per worker, i.e. tuples emitted with an id are tracked, acked and replayed. A Flux file
//! written for Storm (for example by streamparse, whose spouts emit with `tup_id`s) keeps that
//! meaning here.

use heron_api::config::{
    TOPOLOGY_ACKING, TOPOLOGY_DEBUG, TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS, TOPOLOGY_ENVIRONMENT,
    TOPOLOGY_MAX_SPOUT_PENDING, TOPOLOGY_MESSAGE_TIMEOUT_SECS, TOPOLOGY_RELIABILITY_MODE,
    TOPOLOGY_STMGRS, TOPOLOGY_TICK_TUPLE_FREQ_MS,
};
use heron_api::{Config, ReliabilityMode};

use crate::error::{Location, Problem};
use crate::yaml::{Node, Value};

/// Storm's `topology.workers`.
pub const TOPOLOGY_WORKERS: &str = "topology.workers";
/// Storm's `topology.acker.executors`.
pub const TOPOLOGY_ACKER_EXECUTORS: &str = "topology.acker.executors";
/// Storm's `topology.tick.tuple.freq.secs`.
pub const TOPOLOGY_TICK_TUPLE_FREQ_SECS: &str = "topology.tick.tuple.freq.secs";
/// Storm's `topology.multilang.serializer`.
pub const TOPOLOGY_MULTILANG_SERIALIZER: &str = "topology.multilang.serializer";
/// Storm's `topology.subprocess.timeout.secs`.
pub const TOPOLOGY_SUBPROCESS_TIMEOUT_SECS: &str = "topology.subprocess.timeout.secs";
/// Storm's `topology.shellbolt.max.pending`.
pub const TOPOLOGY_SHELLBOLT_MAX_PENDING: &str = "topology.shellbolt.max.pending";

const WHOLE_NUMBER_KEYS: &[&str] = &[
    TOPOLOGY_WORKERS,
    TOPOLOGY_ACKER_EXECUTORS,
    TOPOLOGY_STMGRS,
    TOPOLOGY_MAX_SPOUT_PENDING,
    TOPOLOGY_MESSAGE_TIMEOUT_SECS,
    TOPOLOGY_SUBPROCESS_TIMEOUT_SECS,
    TOPOLOGY_SHELLBOLT_MAX_PENDING,
    TOPOLOGY_TICK_TUPLE_FREQ_MS,
];
const BOOL_KEYS: &[&str] = &[
    TOPOLOGY_DEBUG,
    TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS,
    TOPOLOGY_ACKING,
];

/// Builds a [`Config`] from Flux config entries (topology-wide or one component's).
#[derive(Default)]
pub(crate) struct ConfigBuilder {
    config: Config,
    /// `topology.environment`, for the shell subprocesses.
    env: Vec<(String, String)>,
}

impl ConfigBuilder {
    /// Sets `key` to `value`, checking the Storm keys with a meaning; a wrong value is a
    /// problem at `at`.
    pub fn set(&mut self, key: &str, value: &Node, at: Location, problems: &mut Vec<Problem>) {
        let Some(text) = value.config_string() else {
            return;
        };
        let wrong = |expected: &str| {
            Problem::new(
                at.clone(),
                format!(
                    "config {key} must be {expected}, not {} ({text})",
                    value.kind()
                ),
            )
        };
        if WHOLE_NUMBER_KEYS.contains(&key) && whole_number(value).is_none() {
            problems.push(wrong("a whole number"));
            return;
        }
        if BOOL_KEYS.contains(&key) && boolean(value).is_none() {
            problems.push(wrong("true or false"));
            return;
        }
        match key {
            TOPOLOGY_TICK_TUPLE_FREQ_SECS => match number(value) {
                Some(secs) if secs >= 0.0 => {
                    if !self.config.contains_key(TOPOLOGY_TICK_TUPLE_FREQ_MS) {
                        self.config
                            .set(TOPOLOGY_TICK_TUPLE_FREQ_MS, (secs * 1000.0).round() as u64);
                    }
                }
                _ => {
                    problems.push(wrong("a number of seconds"));
                    return;
                }
            },
            TOPOLOGY_TICK_TUPLE_FREQ_MS => {
                // an explicit ms value wins over one derived from secs
            }
            TOPOLOGY_RELIABILITY_MODE => {
                if let Err(e) = text.parse::<ReliabilityMode>() {
                    problems.push(Problem::new(at, format!("config {key}: {e}")));
                    return;
                }
            }
            TOPOLOGY_MULTILANG_SERIALIZER => {
                if let Err(e) = heron_multilang::Serializer::from_name(Some(&text)) {
                    problems.push(Problem::new(at, format!("config {key}: {e}")));
                    return;
                }
            }
            TOPOLOGY_ENVIRONMENT => {
                let Some(entries) = value.as_map() else {
                    problems.push(wrong("a mapping of variable names to values"));
                    return;
                };
                self.env = entries
                    .iter()
                    .filter_map(|(k, v)| Some((k.name.clone(), v.scalar_text()?)))
                    .collect();
            }
            _ => {}
        }
        self.config.set(key, text);
    }

    /// The configuration of a component (no topology-wide defaults).
    pub fn component(self) -> Config {
        self.config
    }

    /// The topology configuration, with `topology.workers` and `topology.acker.executors`
    /// translated (see the module docs), and the `topology.environment` variables.
    pub fn topology(mut self) -> (Config, Vec<(String, String)>) {
        let c = &mut self.config;
        if let (Some(workers), false) =
            (c.get_u64(TOPOLOGY_WORKERS), c.contains_key(TOPOLOGY_STMGRS))
        {
            c.set_num_stmgrs(u32::try_from(workers.max(1)).unwrap_or(u32::MAX));
        }
        if !c.contains_key(TOPOLOGY_RELIABILITY_MODE) && !c.contains_key(TOPOLOGY_ACKING) {
            let mode = match c.get_u64(TOPOLOGY_ACKER_EXECUTORS) {
                Some(0) => ReliabilityMode::AtMostOnce,
                _ => ReliabilityMode::AtLeastOnce,
            };
            c.set_reliability_mode(mode);
        }
        (self.config, self.env)
    }
}

fn whole_number(v: &Node) -> Option<u64> {
    match &v.value {
        Value::Int(i) => u64::try_from(*i).ok(),
        Value::Str(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn number(v: &Node) -> Option<f64> {
    match &v.value {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        Value::Str(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn boolean(v: &Node) -> Option<bool> {
    match &v.value {
        Value::Bool(b) => Some(*b),
        Value::Str(s) => s.trim().to_ascii_lowercase().parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::yaml;

    type Env = Vec<(String, String)>;

    fn build(text: &str) -> Result<(Config, Env), Vec<Problem>> {
        let f = Path::new("t.yaml");
        let doc = yaml::parse(f, text).unwrap();
        let mut b = ConfigBuilder::default();
        let mut problems = Vec::new();
        for (k, v) in doc.as_map().unwrap() {
            b.set(&k.name, v, Location::new(f, k.line, k.col), &mut problems);
        }
        if problems.is_empty() {
            Ok(b.topology())
        } else {
            Err(problems)
        }
    }

    #[test]
    fn values_become_heron_strings() {
        let (c, _) =
            build("a: 1\nb: true\nc: 0.5\nd: text\ne: [x, y]\nf: {k: 1}\ng: null\n").unwrap();
        assert_eq!(c.get("a"), Some("1"));
        assert_eq!(c.get("b"), Some("true"));
        assert_eq!(c.get("c"), Some("0.5"));
        assert_eq!(c.get("d"), Some("text"));
        assert_eq!(c.get("e"), Some(r#"["x","y"]"#));
        assert_eq!(c.get("f"), Some(r#"{"k":1}"#));
        assert_eq!(c.get("g"), None);
    }

    #[test]
    fn workers_become_stmgrs_unless_set() {
        let (c, _) = build("topology.workers: 3\n").unwrap();
        assert_eq!(c.num_stmgrs(), 3);
        assert_eq!(c.get("topology.workers"), Some("3"));
        let (c, _) = build("topology.workers: 3\ntopology.stmgrs: 2\n").unwrap();
        assert_eq!(c.num_stmgrs(), 2);
    }

    #[test]
    fn ackers_decide_reliability() {
        let mode = |t: &str| build(t).unwrap().0.reliability_mode();
        assert_eq!(
            mode("topology.acker.executors: 0\n"),
            ReliabilityMode::AtMostOnce
        );
        assert_eq!(
            mode("topology.acker.executors: 2\n"),
            ReliabilityMode::AtLeastOnce
        );
        assert_eq!(mode("x: 1\n"), ReliabilityMode::AtLeastOnce);
        assert_eq!(
            mode("topology.acker.executors: 0\ntopology.reliability.mode: EFFECTIVELY_ONCE\n"),
            ReliabilityMode::EffectivelyOnce
        );
        assert_eq!(
            mode("topology.acker.executors: 4\ntopology.reliability.mode: ATMOST_ONCE\n"),
            ReliabilityMode::AtMostOnce
        );
        assert_eq!(
            mode("topology.acking: false\n"),
            ReliabilityMode::AtMostOnce
        );
    }

    #[test]
    fn tick_secs_become_ms_and_environment_is_kept() {
        let (c, env) =
            build("topology.tick.tuple.freq.secs: 2\ntopology.environment: {A: x, B: 2}\n")
                .unwrap();
        assert_eq!(c.tick_tuple_freq_ms(), Some(2000));
        assert_eq!(c.get("topology.environment"), Some(r#"{"A":"x","B":2}"#));
        assert_eq!(
            env,
            [
                ("A".to_owned(), "x".to_owned()),
                ("B".to_owned(), "2".to_owned())
            ]
        );
        let (c, _) =
            build("topology.tick.tuple.freq.ms: 300\ntopology.tick.tuple.freq.secs: 2\n").unwrap();
        assert_eq!(c.tick_tuple_freq_ms(), Some(300));
    }

    #[test]
    fn wrong_values_are_reported_with_their_lines() {
        let errs = build(
            "topology.workers: many\ntopology.debug: 3\ntopology.reliability.mode: SOMETIMES\ntopology.multilang.serializer: org.apache.storm.multilang.ProtoSerializer\ntopology.environment: [a]\n",
        )
        .unwrap_err();
        let lines: Vec<usize> = errs.iter().map(|p| p.location.line).collect();
        assert_eq!(lines, [1, 2, 3, 4, 5]);
        assert!(
            errs[0]
                .message
                .contains("topology.workers must be a whole number"),
            "{}",
            errs[0]
        );
        assert!(errs[2].message.contains("SOMETIMES"), "{}", errs[2]);
        assert!(errs[3].message.contains("ProtoSerializer"), "{}", errs[3]);
        let (c, _) = build("topology.multilang.serializer: msgpack\n").unwrap();
        assert_eq!(c.get(TOPOLOGY_MULTILANG_SERIALIZER), Some("msgpack"));
    }
}
