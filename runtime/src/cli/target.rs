//! `cluster[/role[/env]]` and `--config-property KEY=VALUE`, as Heron's CLI takes them.

use anyhow::{bail, Context};
use heron_scheduler::{default_role, DEFAULT_ENVIRON, LOCAL_CLUSTER};
use std::path::PathBuf;

/// Where a command goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Cluster (`local`).
    pub cluster: String,
    /// Role (the user by default).
    pub role: String,
    /// Environ (`default`).
    pub environ: String,
}

/// Parses `cluster[/role[/env]]`; only the `local` cluster exists.
pub fn parse_target(spec: &str) -> anyhow::Result<Target> {
    let parts: Vec<&str> = spec.split('/').collect();
    if parts.len() > 3 {
        bail!("bad cluster spec {spec:?}: expected cluster[/role[/env]], e.g. local/alice/default");
    }
    let cluster = parts[0];
    if cluster.is_empty() {
        bail!("bad cluster spec {spec:?}: the cluster is empty (e.g. local)");
    }
    if cluster != LOCAL_CLUSTER {
        bail!("unknown cluster {cluster:?}: the only cluster is \"local\"");
    }
    let part = |i: usize, what: &str, default: String| -> anyhow::Result<String> {
        match parts.get(i) {
            None => Ok(default),
            Some(v) if heron_statemgr::validate_name(v).is_ok() => Ok(v.to_string()),
            Some(v) => bail!(
                "bad {what} {v:?} in cluster spec {spec:?}: use letters, digits, '-', '_' and '.'"
            ),
        }
    };
    Ok(Target {
        cluster: cluster.to_string(),
        role: part(1, "role", default_role())?,
        environ: part(2, "environ", DEFAULT_ENVIRON.to_string())?,
    })
}

/// `--config-property` values the local cluster understands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfigOverrides {
    /// `heron.statemgr.root.path`: the local state root.
    pub state_root: Option<PathBuf>,
    /// Keys given but not used here.
    pub ignored: Vec<String>,
}

/// The state-root key (Heron's name).
pub const STATE_ROOT_KEY: &str = "heron.statemgr.root.path";

/// Parses `KEY=VALUE` pairs.
pub fn parse_config_properties(props: &[String]) -> anyhow::Result<ConfigOverrides> {
    let mut out = ConfigOverrides::default();
    for p in props {
        let (key, value) = p
            .split_once('=')
            .with_context(|| format!("bad --config-property {p:?}: expected KEY=VALUE"))?;
        let key = key.trim();
        if key.is_empty() {
            bail!("bad --config-property {p:?}: the key is empty");
        }
        match key {
            STATE_ROOT_KEY => out.state_root = Some(PathBuf::from(value)),
            _ => out.ignored.push(key.to_string()),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_specs() {
        let t = parse_target("local/alice/staging").unwrap();
        assert_eq!(
            (t.cluster.as_str(), t.role.as_str(), t.environ.as_str()),
            ("local", "alice", "staging")
        );
        let t = parse_target("local/bob").unwrap();
        assert_eq!((t.role.as_str(), t.environ.as_str()), ("bob", "default"));
        let t = parse_target("local").unwrap();
        assert_eq!(t.role, default_role());
        let err = |s: &str| parse_target(s).unwrap_err().to_string();
        assert!(
            err("aurora").contains("unknown cluster \"aurora\""),
            "{}",
            err("aurora")
        );
        assert!(err("").contains("cluster is empty"));
        assert!(err("local/a/b/c").contains("expected cluster[/role[/env]]"));
        assert!(
            err("local/../x").contains("bad role"),
            "{}",
            err("local/../x")
        );
        assert!(err("local//x").contains("bad role"));
        assert!(err("local/a/").contains("bad environ"));
    }

    #[test]
    fn config_properties() {
        let c = parse_config_properties(&[
            "heron.statemgr.root.path=/tmp/s".into(),
            "topology.debug=true".into(),
        ])
        .unwrap();
        assert_eq!(c.state_root, Some(PathBuf::from("/tmp/s")));
        assert_eq!(c.ignored, ["topology.debug"]);
        assert!(parse_config_properties(&["novalue".into()]).is_err());
        assert!(parse_config_properties(&["=x".into()]).is_err());
    }
}
