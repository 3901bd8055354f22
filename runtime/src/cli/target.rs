//! `cluster[/role[/env]]`, and the cluster's configuration with `--config-property` on top.

use super::ClusterArgs;
use crate::cluster::{default_config_path, ClusterConfig};
use anyhow::{bail, Context};
use heron_scheduler::{default_role, DEFAULT_ENVIRON};
use heron_statemgr::StateManagerSpec;

/// Where a command goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Cluster (`local`, `localzk`, ...).
    pub cluster: String,
    /// Role (the user by default).
    pub role: String,
    /// Environ (`default`).
    pub environ: String,
}

/// Parses `cluster[/role[/env]]` (names only; whether the cluster exists is checked when its
/// configuration is loaded).
pub fn parse_target(spec: &str) -> anyhow::Result<Target> {
    let parts: Vec<&str> = spec.split('/').collect();
    if parts.len() > 3 {
        bail!("bad cluster spec {spec:?}: expected cluster[/role[/env]], e.g. local/alice/default");
    }
    let cluster = parts[0];
    if cluster.is_empty() {
        bail!("bad cluster spec {spec:?}: the cluster is empty (e.g. local)");
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
        cluster: part(0, "cluster", String::new())?,
        role: part(1, "role", default_role())?,
        environ: part(2, "environ", DEFAULT_ENVIRON.to_string())?,
    })
}

/// A command's target with its cluster configuration resolved.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// Cluster, role, environ.
    pub target: Target,
    /// The cluster's keys.
    pub config: ClusterConfig,
    /// The state manager they name.
    pub state_manager: StateManagerSpec,
}

/// Parses the target and loads its cluster configuration.
pub fn resolve(args: &ClusterArgs) -> anyhow::Result<Resolved> {
    let target = parse_target(&args.cluster)?;
    let path = args.config_path.clone().unwrap_or_else(default_config_path);
    let config = ClusterConfig::load(&target.cluster, &path, &args.config_property)?;
    let state_manager = config
        .state_manager()
        .with_context(|| format!("configuring the state manager of {}", target.cluster))?;
    Ok(Resolved {
        target,
        config,
        state_manager,
    })
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
        let t = parse_target("localzk/bob").unwrap();
        assert_eq!(
            (t.cluster.as_str(), t.role.as_str(), t.environ.as_str()),
            ("localzk", "bob", "default")
        );
        let t = parse_target("local").unwrap();
        assert_eq!(t.role, default_role());
        let err = |s: &str| parse_target(s).unwrap_err().to_string();
        assert!(err("").contains("cluster is empty"));
        assert!(err("local/a/b/c").contains("expected cluster[/role[/env]]"));
        assert!(
            err("local/../x").contains("bad role"),
            "{}",
            err("local/../x")
        );
        assert!(err("local//x").contains("bad role"));
        assert!(err("local/a/").contains("bad environ"));
        assert!(err("..").contains("bad cluster"));
    }

    #[test]
    fn resolve_overrides_and_unknown_clusters() {
        let args = |cluster: &str, props: &[&str]| ClusterArgs {
            config_property: props.iter().map(|s| s.to_string()).collect(),
            config_path: Some("/nonexistent-heron-conf".into()),
            verbose: false,
            cluster: cluster.into(),
        };
        let r = resolve(&args(
            "localzk",
            &["heron.statemgr.connection.string=127.0.0.1:3000"],
        ))
        .unwrap();
        assert_eq!(r.state_manager.to_string(), "zk://127.0.0.1:3000/heron");
        let r = resolve(&args("local", &["heron.statemgr.root.path=/tmp/s"])).unwrap();
        assert_eq!(r.state_manager.to_string(), "local:/tmp/s");
        let e = resolve(&args("aurora", &[])).unwrap_err().to_string();
        assert!(e.contains("unknown cluster \"aurora\""), "{e}");
    }
}
