//! Choosing a state manager from Heron-style configuration (`statemgr.yaml` keys).
//! The keys are documented on [`from_config`].

use crate::{default_local_root, home_dir, StateError, StateManager, StateManagerSpec, ZkConfig};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The state manager class key.
pub const KEY_CLASS: &str = "heron.class.state.manager";
/// The ZooKeeper connection string key.
pub const KEY_CONNECTION_STRING: &str = "heron.statemgr.connection.string";
/// The root path key.
pub const KEY_ROOT_PATH: &str = "heron.statemgr.root.path";
/// The ZooKeeper session timeout key (milliseconds).
pub const KEY_ZK_SESSION_TIMEOUT_MS: &str = "heron.statemgr.zookeeper.session.timeout.ms";
/// The ZooKeeper connection timeout key (milliseconds).
pub const KEY_ZK_CONNECTION_TIMEOUT_MS: &str = "heron.statemgr.zookeeper.connection.timeout.ms";
/// The cluster key.
pub const KEY_CLUSTER: &str = "heron.config.cluster";
/// Heron's ZooKeeper state manager class.
pub const CLASS_ZOOKEEPER: &str = "org.apache.heron.statemgr.zookeeper.curator.CuratorStateManager";
/// Heron's local file-system state manager class.
pub const CLASS_LOCAL_FS: &str = "org.apache.heron.statemgr.localfs.LocalFileSystemStateManager";

/// Opens the state manager that Heron-style configuration (a `statemgr.yaml` flattened into
/// a map) asks for:
///
/// | key | meaning |
/// |---|---|
/// | `heron.class.state.manager` | [`CLASS_ZOOKEEPER`] or [`CLASS_LOCAL_FS`] (the `com.twitter.heron.` spellings too); absent: local FS |
/// | `heron.statemgr.connection.string` | ZooKeeper servers, `host:port[,host:port...]`; required for ZooKeeper |
/// | `heron.statemgr.root.path` | ZooKeeper: default `/heron`. Local: default `~/.herondata/repository/state/<cluster>`; `~`, `${HOME}` and `${CLUSTER}` are expanded |
/// | `heron.statemgr.zookeeper.session.timeout.ms` | default 30000 |
/// | `heron.statemgr.zookeeper.connection.timeout.ms` | default 30000 |
/// | `heron.config.cluster` | the cluster, for `${CLUSTER}` and the local default; default `local` |
///
/// Other `heron.statemgr.*` keys (retry count and interval, `is.initialize.tree`, tunnelling)
/// are ignored: the client reconnects by itself within the session timeout, and parents are
/// always created as needed.
pub fn from_config(map: &BTreeMap<String, String>) -> Result<Arc<dyn StateManager>, StateError> {
    StateManagerSpec::from_config(map)?.open()
}

fn bad(key: &str, value: &str, reason: impl Into<String>) -> StateError {
    StateError::Config {
        key: key.to_string(),
        value: value.to_string(),
        reason: reason.into(),
    }
}

fn get<'a>(map: &'a BTreeMap<String, String>, key: &str) -> Option<&'a str> {
    map.get(key).map(|v| v.trim()).filter(|v| !v.is_empty())
}

fn millis(map: &BTreeMap<String, String>, key: &str) -> Result<Option<Duration>, StateError> {
    match get(map, key) {
        None => Ok(None),
        Some(v) => match v.parse::<u64>() {
            Ok(ms) if ms > 0 => Ok(Some(Duration::from_millis(ms))),
            _ => Err(bad(key, v, "expected a positive number of milliseconds")),
        },
    }
}

enum Class {
    ZooKeeper,
    LocalFs,
}

fn class(map: &BTreeMap<String, String>) -> Result<Class, StateError> {
    let Some(name) = get(map, KEY_CLASS) else {
        return Ok(Class::LocalFs);
    };
    let short = name
        .strip_prefix("org.apache.heron.")
        .or_else(|| name.strip_prefix("com.twitter.heron."));
    match short {
        Some("statemgr.zookeeper.curator.CuratorStateManager") => Ok(Class::ZooKeeper),
        Some("statemgr.localfs.LocalFileSystemStateManager") => Ok(Class::LocalFs),
        _ => Err(bad(
            KEY_CLASS,
            name,
            format!("unknown state manager class; expected {CLASS_ZOOKEEPER} or {CLASS_LOCAL_FS}"),
        )),
    }
}

/// Expands `~`, `${HOME}` and `${CLUSTER}` in a local root path.
fn expand_local(raw: &str, cluster: &str) -> Result<PathBuf, StateError> {
    let home = home_dir().display().to_string();
    let mut s = match raw.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("{home}{rest}"),
        _ => raw.to_string(),
    };
    s = s.replace("${HOME}", &home).replace("${CLUSTER}", cluster);
    if let Some(i) = s.find("${") {
        return Err(bad(
            KEY_ROOT_PATH,
            raw,
            format!(
                "unknown variable at {:?} (known: ${{HOME}}, ${{CLUSTER}})",
                &s[i..]
            ),
        ));
    }
    let path = PathBuf::from(s);
    if !path.is_absolute() {
        return Err(bad(KEY_ROOT_PATH, raw, "must be an absolute path"));
    }
    Ok(path)
}

impl StateManagerSpec {
    /// The spec that Heron-style configuration describes (see [`from_config`] for the keys).
    pub fn from_config(map: &BTreeMap<String, String>) -> Result<StateManagerSpec, StateError> {
        let cluster = get(map, KEY_CLUSTER).unwrap_or("local");
        match class(map)? {
            Class::LocalFs => Ok(StateManagerSpec::Local(match get(map, KEY_ROOT_PATH) {
                Some(raw) => expand_local(raw, cluster)?,
                None => default_local_root(cluster),
            })),
            Class::ZooKeeper => {
                let connect = get(map, KEY_CONNECTION_STRING).ok_or_else(|| {
                    bad(
                        KEY_CONNECTION_STRING,
                        "",
                        format!("required by {CLASS_ZOOKEEPER}; e.g. 127.0.0.1:2181"),
                    )
                })?;
                let root = get(map, KEY_ROOT_PATH).unwrap_or(crate::DEFAULT_ZK_ROOT);
                let mut config = ZkConfig::new(connect, root);
                if let Some(d) = millis(map, KEY_ZK_SESSION_TIMEOUT_MS)? {
                    config.session_timeout = d;
                }
                if let Some(d) = millis(map, KEY_ZK_CONNECTION_TIMEOUT_MS)? {
                    config.connect_timeout = d;
                }
                config.validate()?;
                Ok(StateManagerSpec::ZooKeeper(config))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn spec(pairs: &[(&str, &str)]) -> Result<StateManagerSpec, StateError> {
        StateManagerSpec::from_config(&map(pairs))
    }

    #[test]
    fn zookeeper_from_heron_keys() {
        let s = spec(&[
            (KEY_CLASS, CLASS_ZOOKEEPER),
            (KEY_CONNECTION_STRING, " 10.0.0.1:2181,10.0.0.2:2181 "),
            (KEY_ROOT_PATH, "/heronroot"),
            (KEY_ZK_SESSION_TIMEOUT_MS, "20000"),
        ])
        .unwrap();
        let mut want = ZkConfig::new("10.0.0.1:2181,10.0.0.2:2181", "/heronroot");
        want.session_timeout = Duration::from_secs(20);
        assert_eq!(s, StateManagerSpec::ZooKeeper(want));

        let s = spec(&[
            (
                KEY_CLASS,
                "com.twitter.heron.statemgr.zookeeper.curator.CuratorStateManager",
            ),
            (KEY_CONNECTION_STRING, "zk:2181"),
        ])
        .unwrap();
        assert_eq!(s.to_string(), "zk://zk:2181/heron");
    }

    #[test]
    fn local_from_heron_keys() {
        let home = home_dir();
        assert_eq!(
            spec(&[]).unwrap(),
            StateManagerSpec::Local(default_local_root("local"))
        );
        assert_eq!(
            spec(&[
                (KEY_CLASS, CLASS_LOCAL_FS),
                (
                    KEY_ROOT_PATH,
                    "${HOME}/.herondata/repository/state/${CLUSTER}"
                ),
                (KEY_CLUSTER, "c1"),
            ])
            .unwrap(),
            StateManagerSpec::Local(home.join(".herondata/repository/state/c1"))
        );
        assert_eq!(
            spec(&[(KEY_ROOT_PATH, "~/st")]).unwrap(),
            StateManagerSpec::Local(home.join("st"))
        );
        // the connection string is ignored by the local backend
        assert_eq!(
            spec(&[
                (KEY_CLASS, CLASS_LOCAL_FS),
                (KEY_CONNECTION_STRING, "x:1"),
                (KEY_ROOT_PATH, "/s")
            ])
            .unwrap(),
            StateManagerSpec::Local("/s".into())
        );
    }

    #[test]
    fn bad_config_names_key_and_value() {
        for (pairs, key, needle) in [
            (
                vec![(KEY_CLASS, "org.example.MyStateManager")],
                KEY_CLASS,
                "org.example.MyStateManager",
            ),
            (
                vec![(KEY_CLASS, CLASS_ZOOKEEPER)],
                KEY_CONNECTION_STRING,
                "required",
            ),
            (
                vec![(KEY_CLASS, CLASS_ZOOKEEPER), (KEY_CONNECTION_STRING, "h:x")],
                KEY_CONNECTION_STRING,
                "bad port",
            ),
            (
                vec![
                    (KEY_CLASS, CLASS_ZOOKEEPER),
                    (KEY_CONNECTION_STRING, "h:1"),
                    (KEY_ROOT_PATH, "heron"),
                ],
                KEY_ROOT_PATH,
                "must start with '/'",
            ),
            (
                vec![
                    (KEY_CLASS, CLASS_ZOOKEEPER),
                    (KEY_CONNECTION_STRING, "h:1"),
                    (KEY_ZK_SESSION_TIMEOUT_MS, "30s"),
                ],
                KEY_ZK_SESSION_TIMEOUT_MS,
                "\"30s\"",
            ),
            (
                vec![
                    (KEY_CLASS, CLASS_ZOOKEEPER),
                    (KEY_CONNECTION_STRING, "h:1"),
                    (KEY_ZK_CONNECTION_TIMEOUT_MS, "0"),
                ],
                KEY_ZK_CONNECTION_TIMEOUT_MS,
                "positive",
            ),
            (
                vec![(KEY_ROOT_PATH, "state/local")],
                KEY_ROOT_PATH,
                "absolute",
            ),
            (
                vec![(KEY_ROOT_PATH, "/x/${ROLE}")],
                KEY_ROOT_PATH,
                "${ROLE}",
            ),
        ] {
            match spec(&pairs) {
                Err(e @ StateError::Config { .. }) => {
                    let msg = e.to_string();
                    assert!(msg.contains(key), "{msg} lacks {key}");
                    assert!(msg.contains(needle), "{msg} lacks {needle}");
                }
                other => panic!("{pairs:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn from_config_opens_local() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("st");
        let sm = from_config(&map(&[(KEY_ROOT_PATH, root.to_str().unwrap())])).unwrap();
        sm.set(crate::StateDir::PPlans, "t", b"p").unwrap();
        assert_eq!(std::fs::read(root.join("pplans/t")).unwrap(), b"p");
    }
}
