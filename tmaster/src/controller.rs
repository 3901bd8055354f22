//! The controller's decisions (pure): what `/activate`, `/deactivate` and
//! `/runtime_config/update` do to the physical plan, and how each answer maps to HTTP.
//!
//! Heron's semantics: every request names the topology id (`topologyid=<id>`); activate flips
//! the plan's topology state PAUSED → RUNNING and deactivate RUNNING → PAUSED (anything else is
//! `TOPOLOGY_ALREADY_ACTIVE` / `TOPOLOGY_ALREADY_DEACTIVE`); a runtime config update stores
//! `<key>:runtime = <value>` in the topology's config (`[_topology_:]key:value` or
//! `key:value`) or in a component's (`component:key:value`). The tmaster then writes the new
//! plan and pushes it to every stream manager.

use heron_proto::api::config::KeyValue;
use heron_proto::api::{Config, ConfigValueType, TopologyState};
use heron_proto::system::{PhysicalPlan, StatusCode};

/// The pseudo component that names the topology itself in a runtime config.
pub const TOPOLOGY_COMPONENT: &str = "_topology_";

/// A controller request, parsed from its path and query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `/activate`.
    Activate,
    /// `/deactivate`.
    Deactivate,
    /// `/runtime_config/update` with its `runtime-config` values, as `(component, key, value)`
    /// (component `_topology_` for the topology).
    UpdateConfig(Vec<(String, String, String)>),
}

/// Why a request is refused: Heron's status code, the HTTP status, a message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{} ({}): {message}", code.as_str_name(), http)]
pub struct Refusal {
    /// Heron's status code.
    pub code: StatusCode,
    /// The HTTP status.
    pub http: u16,
    /// What is wrong.
    pub message: String,
}

fn refuse(code: StatusCode, http: u16, message: impl Into<String>) -> Refusal {
    Refusal {
        code,
        http,
        message: message.into(),
    }
}

/// Parses a request: `path` and its `query` pairs (already percent-decoded). Checks the
/// `topologyid` against `topology_id`.
pub fn parse(
    path: &str,
    query: &[(String, String)],
    topology_id: &str,
) -> Result<Command, Refusal> {
    let command = match path {
        "/activate" => Command::Activate,
        "/deactivate" => Command::Deactivate,
        "/runtime_config/update" => {
            let mut updates = Vec::new();
            for (_, v) in query.iter().filter(|(k, _)| k == "runtime-config") {
                updates.push(parse_runtime_config(v)?);
            }
            if updates.is_empty() {
                return Err(refuse(
                    StatusCode::Notok,
                    400,
                    "no runtime-config=[component:]key:value argument",
                ));
            }
            Command::UpdateConfig(updates)
        }
        other => {
            return Err(refuse(
                StatusCode::NotYetImplemented,
                404,
                format!("unknown controller path {other:?}"),
            ))
        }
    };
    let given = query
        .iter()
        .find(|(k, _)| k == "topologyid")
        .map(|(_, v)| v.as_str());
    match given {
        None => Err(refuse(
            StatusCode::Notok,
            400,
            "missing topologyid argument",
        )),
        Some(id) if id != topology_id => Err(refuse(
            StatusCode::InvalidTopologyName,
            400,
            format!("wrong topology id {id:?}: this tmaster runs {topology_id:?}"),
        )),
        Some(_) => Ok(command),
    }
}

/// `[component:]key:value` → `(component, key, value)`; no component means the topology.
fn parse_runtime_config(raw: &str) -> Result<(String, String, String), Refusal> {
    let parts: Vec<&str> = raw.splitn(3, ':').collect();
    let bad = || {
        refuse(
            StatusCode::Notok,
            400,
            format!("bad runtime-config {raw:?}: expected [component:]key:value"),
        )
    };
    let (comp, key, value) = match parts.as_slice() {
        [key, value] => (TOPOLOGY_COMPONENT, *key, *value),
        [comp, key, value] => (*comp, *key, *value),
        _ => return Err(bad()),
    };
    if comp.is_empty() || key.is_empty() {
        return Err(bad());
    }
    Ok((comp.to_string(), key.to_string(), value.to_string()))
}

/// Applies `command` to the current plan; returns the plan to write and push.
pub fn apply(pplan: &PhysicalPlan, command: &Command) -> Result<PhysicalPlan, Refusal> {
    let mut plan = pplan.clone();
    let state = TopologyState::try_from(plan.topology.state).unwrap_or(TopologyState::Running);
    match command {
        Command::Activate => {
            if state != TopologyState::Paused {
                return Err(refuse(
                    StatusCode::TopologyAlreadyActive,
                    400,
                    "the topology is already active",
                ));
            }
            plan.topology.state = TopologyState::Running as i32;
        }
        Command::Deactivate => {
            if state != TopologyState::Running {
                return Err(refuse(
                    StatusCode::TopologyAlreadyDeactive,
                    400,
                    "the topology is already deactivated",
                ));
            }
            plan.topology.state = TopologyState::Paused as i32;
        }
        Command::UpdateConfig(updates) => {
            for (comp, key, value) in updates {
                let config = config_of(&mut plan, comp).ok_or_else(|| {
                    refuse(
                        StatusCode::Notok,
                        400,
                        format!("no component {comp:?} in the topology"),
                    )
                })?;
                set_runtime(config, key, value);
            }
        }
    }
    Ok(plan)
}

fn config_of<'a>(plan: &'a mut PhysicalPlan, comp: &str) -> Option<&'a mut Config> {
    let t = &mut plan.topology;
    if comp == TOPOLOGY_COMPONENT {
        return Some(t.topology_config.get_or_insert_with(Config::default));
    }
    if let Some(s) = t.spouts.iter_mut().find(|s| s.comp.name == comp) {
        return Some(&mut s.comp.config);
    }
    t.bolts
        .iter_mut()
        .find(|b| b.comp.name == comp)
        .map(|b| &mut b.comp.config)
}

fn set_runtime(config: &mut Config, key: &str, value: &str) {
    let key = format!("{key}:runtime");
    match config.kvs.iter_mut().find(|kv| kv.key == key) {
        Some(kv) => kv.value = Some(value.to_string()),
        None => config.kvs.push(KeyValue {
            key,
            value: Some(value.to_string()),
            r#type: Some(ConfigValueType::StringValue as i32),
            ..KeyValue::default()
        }),
    }
}

#[cfg(test)]
mod tests;
