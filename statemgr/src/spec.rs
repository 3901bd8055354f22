//! [`StateManagerSpec`]: which state manager to open, as one short string for command lines.

use crate::zk::{check_connect, check_root};
use crate::{
    LocalFsStateManager, StateError, StateManager, ZkConfig, ZkStateManager, DEFAULT_ZK_ROOT,
    DEFAULT_ZK_TIMEOUT,
};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

const LOCAL: &str = "local:";
const ZK: &str = "zk://";
const EXPECTED: &str = "expected local:/path or zk://host:port[,host:port...][/root]";

/// Which state manager to open, as one short string for command lines (`Display` and
/// `FromStr` round-trip):
///
/// * `local:/abs/path` — [`LocalFsStateManager`] rooted at the path.
/// * `zk://host:port[,host:port...][/root][?key=ms&...]` — [`ZkStateManager`]; the root
///   defaults to `/heron`; optional `session_timeout_ms`, `connect_timeout_ms` and
///   `operation_timeout_ms` (default 30000 each; `Display` writes only those that differ).
///
/// Parse errors are [`StateError::BadSpec`], naming the spec and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateManagerSpec {
    /// The local file system, rooted at an absolute path.
    Local(PathBuf),
    /// A ZooKeeper ensemble.
    ZooKeeper(ZkConfig),
}

impl StateManagerSpec {
    /// Heron's default for the `local` cluster: `local:~/.herondata/repository/state/local`.
    pub fn default_local() -> StateManagerSpec {
        StateManagerSpec::Local(crate::default_local_root("local"))
    }

    /// Opens the state manager (connecting to ZooKeeper, which can take up to its connect
    /// timeout).
    pub fn open(&self) -> Result<Arc<dyn StateManager>, StateError> {
        Ok(match self {
            StateManagerSpec::Local(root) => Arc::new(LocalFsStateManager::new(root.clone())),
            StateManagerSpec::ZooKeeper(config) => {
                Arc::new(ZkStateManager::connect(config.clone())?)
            }
        })
    }
}

const TIMEOUT_KEYS: [&str; 3] = [
    "session_timeout_ms",
    "connect_timeout_ms",
    "operation_timeout_ms",
];

fn timeouts(c: &ZkConfig) -> [Duration; 3] {
    [c.session_timeout, c.connect_timeout, c.operation_timeout]
}

impl fmt::Display for StateManagerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateManagerSpec::Local(root) => write!(f, "{LOCAL}{}", root.display()),
            StateManagerSpec::ZooKeeper(c) => {
                write!(f, "{ZK}{}{}", c.connect, c.root)?;
                let mut sep = '?';
                for (key, d) in TIMEOUT_KEYS.iter().zip(timeouts(c)) {
                    if d != DEFAULT_ZK_TIMEOUT {
                        write!(f, "{sep}{key}={}", d.as_millis())?;
                        sep = '&';
                    }
                }
                Ok(())
            }
        }
    }
}

impl FromStr for StateManagerSpec {
    type Err = StateError;

    fn from_str(spec: &str) -> Result<StateManagerSpec, StateError> {
        let bad = |reason: String| StateError::BadSpec {
            spec: spec.to_string(),
            reason,
        };
        if let Some(path) = spec.strip_prefix(LOCAL) {
            if path.is_empty() {
                return Err(bad("missing path after local:".into()));
            }
            let path = PathBuf::from(path);
            if !path.is_absolute() {
                return Err(bad(format!("{} is not an absolute path", path.display())));
            }
            return Ok(StateManagerSpec::Local(path));
        }
        let Some(rest) = spec.strip_prefix(ZK) else {
            return Err(bad(EXPECTED.into()));
        };
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        let (connect, root) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, DEFAULT_ZK_ROOT),
        };
        check_connect(connect).map_err(|r| bad(format!("servers {connect:?}: {r}")))?;
        check_root(root).map_err(|r| bad(format!("root {root:?}: {r}")))?;
        let mut config = ZkConfig::new(connect, root);
        for pair in query.into_iter().flat_map(|q| q.split('&')) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| bad(format!("option {pair:?} is not key=value")))?;
            let ms = value
                .parse::<u64>()
                .ok()
                .filter(|ms| *ms > 0)
                .ok_or_else(|| bad(format!("{key}={value:?} is not a positive number of ms")))?;
            let d = Duration::from_millis(ms);
            match key {
                "session_timeout_ms" => config.session_timeout = d,
                "connect_timeout_ms" => config.connect_timeout = d,
                "operation_timeout_ms" => config.operation_timeout = d,
                _ => {
                    return Err(bad(format!(
                        "unknown option {key:?} (known: {})",
                        TIMEOUT_KEYS.join(", ")
                    )))
                }
            }
        }
        Ok(StateManagerSpec::ZooKeeper(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<StateManagerSpec, StateError> {
        s.parse()
    }

    #[test]
    fn local_round_trip() {
        let s = parse("local:/tmp/state").unwrap();
        assert_eq!(s, StateManagerSpec::Local("/tmp/state".into()));
        assert_eq!(s.to_string(), "local:/tmp/state");
        assert!(StateManagerSpec::default_local()
            .to_string()
            .ends_with("/.herondata/repository/state/local"));
    }

    #[test]
    fn zk_round_trip_and_defaults() {
        let s = parse("zk://127.0.0.1:2181/heron").unwrap();
        assert_eq!(
            s,
            StateManagerSpec::ZooKeeper(ZkConfig::new("127.0.0.1:2181", "/heron"))
        );
        assert_eq!(s.to_string(), "zk://127.0.0.1:2181/heron");

        let s = parse("zk://a:1,b:2").unwrap();
        assert_eq!(s.to_string(), "zk://a:1,b:2/heron");

        let s = parse("zk://zk1:2181/").unwrap();
        assert_eq!(s.to_string(), "zk://zk1:2181/");

        let s = parse("zk://h:2181/x/y?session_timeout_ms=4000&operation_timeout_ms=500").unwrap();
        let StateManagerSpec::ZooKeeper(c) = &s else {
            panic!("{s:?}")
        };
        assert_eq!(c.root, "/x/y");
        assert_eq!(c.session_timeout, Duration::from_millis(4000));
        assert_eq!(c.connect_timeout, DEFAULT_ZK_TIMEOUT);
        assert_eq!(c.operation_timeout, Duration::from_millis(500));
        assert_eq!(
            s.to_string(),
            "zk://h:2181/x/y?session_timeout_ms=4000&operation_timeout_ms=500"
        );
        assert_eq!(parse(&s.to_string()).unwrap(), s);
    }

    #[test]
    fn bad_specs_name_the_problem() {
        for (spec, needle) in [
            ("", "expected local:"),
            ("file:/x", "expected local:"),
            ("zk:/h:2181", "expected local:"),
            ("local:", "missing path"),
            ("local:relative/dir", "not an absolute path"),
            ("zk://", "servers \"\""),
            ("zk:///heron", "servers \"\""),
            ("zk://h:port/heron", "bad port in \"h:port\""),
            ("zk://h:0/heron", "bad port"),
            ("zk://h:99999", "bad port"),
            ("zk://a:1,,b:2", "bad host"),
            ("zk://h:1/heron/", "empty path component"),
            ("zk://h:1//heron", "empty path component"),
            ("zk://h:1/a/../b", "\"..\""),
            ("zk://h:1/heron?session_timeout_ms", "not key=value"),
            ("zk://h:1/heron?session_timeout_ms=0", "positive number"),
            ("zk://h:1/heron?session_timeout_ms=abc", "positive number"),
            ("zk://h:1/heron?colour=3", "unknown option \"colour\""),
        ] {
            match parse(spec) {
                Err(e @ StateError::BadSpec { .. }) => {
                    let msg = e.to_string();
                    assert!(msg.contains(&format!("{spec:?}")), "{msg}");
                    assert!(msg.contains(needle), "{spec}: {msg} lacks {needle}");
                }
                other => panic!("{spec}: {other:?}"),
            }
        }
    }

    #[test]
    fn open_local() {
        let d = tempfile::tempdir().unwrap();
        let spec = StateManagerSpec::Local(d.path().join("s"));
        let sm = spec.open().unwrap();
        sm.set(crate::StateDir::Topologies, "t", b"x").unwrap();
        assert_eq!(sm.describe(), spec.to_string());
    }
}
