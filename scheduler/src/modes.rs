//! Submit refuses topologies that ask for a mode or option heron-rs does not run, so a user
//! never gets weaker guarantees than the ones they configured.

use crate::SchedulerError;
use heron_proto::api;

/// The config key that picks the reliability mode.
const RELIABILITY_MODE: &str = "topology.reliability.mode";

/// Seconds between checkpoints.
const INTERVAL: &str = "topology.stateful.checkpoint.interval.seconds";
/// The checkpoint storage.
const STORAGE_CLASS: &str = "heron.statefulstorage.classname";
/// The one storage heron-rs has.
const LOCAL_FS_STORAGE: &str = "org.apache.heron.statefulstorage.localfs.LocalFileSystemStorage";

/// The last value of `key` in the topology config.
fn config<'t>(topology: &'t api::Topology, key: &str) -> Option<&'t str> {
    heron_proto::config_value(topology, key)
}

/// Checks the topology's configured modes: packet limits it can have
/// ([`PacketLimits`](crate::limits::PacketLimits)), a known reliability mode and, for
/// `EFFECTIVELY_ONCE`, a whole positive checkpoint interval and a storage heron-rs has.
pub fn check_supported(topology: &api::Topology) -> Result<(), SchedulerError> {
    let refuse = |reason: String| SchedulerError::Unsupported {
        name: topology.name.clone(),
        reason,
    };
    crate::limits::PacketLimits::from_config(|k| config(topology, k)).map_err(refuse)?;
    crate::pinning::CpuPinning::from_config(|k| config(topology, k)).map_err(refuse)?;
    if tls_enabled(topology)? && !auth_required(topology)? {
        return Err(refuse(format!(
            "{} needs authentication on: {}=false with TLS is not a mode heron-rs runs",
            heron_auth::TLS_KEY,
            heron_auth::REQUIRED_KEY
        )));
    }
    match config(topology, RELIABILITY_MODE) {
        None | Some("ATMOST_ONCE") | Some("ATLEAST_ONCE") => Ok(()),
        Some("EFFECTIVELY_ONCE") => {
            if let Some(v) = config(topology, INTERVAL) {
                if !v.trim().parse::<u64>().is_ok_and(|n| n > 0) {
                    return Err(refuse(format!(
                        "{INTERVAL} must be a whole number of seconds above 0, not {v:?}"
                    )));
                }
            }
            match config(topology, STORAGE_CLASS) {
                None => Ok(()),
                Some(c) if c == LOCAL_FS_STORAGE => Ok(()),
                Some(c) => Err(refuse(format!(
                    "{STORAGE_CLASS} {c:?} is not available; heron-rs stores checkpoints with \
                     {LOCAL_FS_STORAGE} only"
                ))),
            }
        }
        Some(other) => Err(SchedulerError::Unsupported {
            name: topology.name.clone(),
            reason: format!(
                "unknown {RELIABILITY_MODE} {other:?} (expected ATMOST_ONCE, ATLEAST_ONCE or \
                 EFFECTIVELY_ONCE)"
            ),
        }),
    }
}

/// `true` unless the topology sets `heron-rs.auth.required=false`
/// ([`heron_auth::REQUIRED_KEY`]); a value other than true or false is refused.
pub fn auth_required(topology: &api::Topology) -> Result<bool, SchedulerError> {
    heron_auth::required(config(topology, heron_auth::REQUIRED_KEY)).map_err(|reason| {
        SchedulerError::Unsupported {
            name: topology.name.clone(),
            reason,
        }
    })
}

/// `true` when the topology sets `heron-rs.tls.enabled=true` ([`heron_auth::TLS_KEY`]); a
/// value other than true or false is refused.
pub fn tls_enabled(topology: &api::Topology) -> Result<bool, SchedulerError> {
    heron_auth::tls_enabled(config(topology, heron_auth::TLS_KEY)).map_err(|reason| {
        SchedulerError::Unsupported {
            name: topology.name.clone(),
            reason,
        }
    })
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

    fn with(mut t: api::Topology, key: &str, value: &str) -> api::Topology {
        t.topology_config
            .as_mut()
            .unwrap()
            .kvs
            .push(api::config::KeyValue {
                key: key.to_string(),
                value: Some(value.to_string()),
                ..Default::default()
            });
        t
    }

    #[test]
    fn unknown_modes_are_refused_with_the_reason() {
        let e = check_supported(&topology(Some("SOMETIMES"))).unwrap_err();
        assert!(e.to_string().contains("\"SOMETIMES\""), "{e}");
    }

    #[test]
    fn effectively_once_needs_a_whole_interval_and_the_local_storage() {
        let eo = topology(Some("EFFECTIVELY_ONCE"));
        check_supported(&eo).unwrap();
        check_supported(&with(eo.clone(), INTERVAL, "10")).unwrap();
        check_supported(&with(eo.clone(), STORAGE_CLASS, LOCAL_FS_STORAGE)).unwrap();
        for bad in ["0", "-1", "1.5", "soon"] {
            let e = check_supported(&with(eo.clone(), INTERVAL, bad)).unwrap_err();
            assert!(e.to_string().contains(INTERVAL), "{e}");
        }
        let hdfs = "org.apache.heron.statefulstorage.hdfs.HDFSStorage";
        let e = check_supported(&with(eo, STORAGE_CLASS, hdfs)).unwrap_err();
        assert!(e.to_string().contains("HDFSStorage"), "{e}");
    }
}
