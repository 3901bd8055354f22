//! Submit refuses topologies that ask for a mode heron-rs does not run, so a user never gets
//! weaker guarantees than the ones they configured.

use crate::SchedulerError;
use heron_proto::api;

/// The config key that picks the reliability mode.
const RELIABILITY_MODE: &str = "topology.reliability.mode";

/// Checks the topology's configured modes. `EFFECTIVELY_ONCE` is refused until the
/// checkpoint machinery runs it: accepting it would silently run the topology at most once.
pub(crate) fn check_supported(topology: &api::Topology) -> Result<(), SchedulerError> {
    let mode = topology
        .topology_config
        .iter()
        .flat_map(|c| &c.kvs)
        .find(|kv| kv.key == RELIABILITY_MODE)
        .and_then(|kv| kv.value.as_deref());
    match mode {
        None | Some("ATMOST_ONCE") | Some("ATLEAST_ONCE") => Ok(()),
        Some("EFFECTIVELY_ONCE") => Err(SchedulerError::Unsupported {
            name: topology.name.clone(),
            reason: "topology.reliability.mode EFFECTIVELY_ONCE needs stateful checkpoints, \
                     which this heron-rs build does not run yet; use ATLEAST_ONCE or ATMOST_ONCE"
                .to_string(),
        }),
        Some(other) => Err(SchedulerError::Unsupported {
            name: topology.name.clone(),
            reason: format!(
                "unknown {RELIABILITY_MODE} {other:?} (expected ATMOST_ONCE, ATLEAST_ONCE or \
                 EFFECTIVELY_ONCE)"
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topology(mode: Option<&str>) -> api::Topology {
        let kvs = mode
            .map(|m| api::config::KeyValue {
                key: RELIABILITY_MODE.to_string(),
                value: Some(m.to_string()),
                ..Default::default()
            })
            .into_iter()
            .collect();
        api::Topology {
            name: "T".into(),
            topology_config: Some(api::Config { kvs }),
            ..Default::default()
        }
    }

    #[test]
    fn at_most_and_at_least_once_are_accepted() {
        for mode in [None, Some("ATMOST_ONCE"), Some("ATLEAST_ONCE")] {
            check_supported(&topology(mode)).unwrap();
        }
    }

    #[test]
    fn effectively_once_and_unknown_modes_are_refused_with_the_reason() {
        let e = check_supported(&topology(Some("EFFECTIVELY_ONCE"))).unwrap_err();
        assert!(
            e.to_string()
                .contains("EFFECTIVELY_ONCE needs stateful checkpoints"),
            "{e}"
        );
        let e = check_supported(&topology(Some("SOMETIMES"))).unwrap_err();
        assert!(e.to_string().contains("\"SOMETIMES\""), "{e}");
    }
}
