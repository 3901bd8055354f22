//! Cluster configuration the Heron way: a cluster is a directory of YAML files under the
//! config path (`~/.heron/conf/<cluster>/`), flattened into one key → value map with Heron's
//! keys, then `--config-property KEY=VALUE` overrides on top.
//!
//! Two clusters exist without any file:
//!
//! | cluster | scheduler | state manager |
//! |---|---|---|
//! | `local` | local | local file system at `~/.herondata/repository/state/local` |
//! | `localzk` | local | ZooKeeper at `127.0.0.1:2181`, root `/heron` |
//!
//! Files in `<config path>/<cluster>/` override those defaults (and define other clusters).
//! Read, in this order: `scheduler.yaml`, `statemgr.yaml`, `packing.yaml`, `client.yaml`,
//! `heron_internals.yaml`, `override.yaml` — the flat `key: value` files of Heron's cluster
//! directories; the nested ones (`metrics_sinks.yaml`, ...) are not read. The state manager
//! comes from `heron.class.state.manager`, `heron.statemgr.connection.string`,
//! `heron.statemgr.root.path` and the ZooKeeper timeouts (see
//! [`heron_statemgr::from_config`]); `heron.class.scheduler`, when set, names Heron's local,
//! Slurm or Kubernetes scheduler ([`SchedulerKind`]).

mod yaml;

pub use yaml::{parse_flat_yaml, YamlError};

use heron_statemgr::{
    StateManagerSpec, CLASS_LOCAL_FS, CLASS_ZOOKEEPER, KEY_CLASS, KEY_CLUSTER,
    KEY_CONNECTION_STRING, KEY_ROOT_PATH,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The scheduler class key.
pub const KEY_SCHEDULER_CLASS: &str = "heron.class.scheduler";
/// The launcher class key (Heron names both; heron-rs checks they agree).
pub const KEY_LAUNCHER_CLASS: &str = "heron.class.launcher";
/// The address a topology's daemons bind and advertise (default `127.0.0.1`).
pub const KEY_HOST: &str = "heron-rs.host";
/// Heron's local scheduler class.
pub const CLASS_LOCAL_SCHEDULER: &str = "org.apache.heron.scheduler.local.LocalScheduler";
/// Heron's Slurm scheduler class.
pub const CLASS_SLURM_SCHEDULER: &str = "org.apache.heron.scheduler.slurm.SlurmScheduler";
/// Heron's Kubernetes scheduler class.
pub const CLASS_KUBERNETES_SCHEDULER: &str =
    "org.apache.heron.scheduler.kubernetes.KubernetesScheduler";

/// The schedulers a cluster can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedulerKind {
    /// Processes on this machine ([`CLASS_LOCAL_SCHEDULER`]).
    Local,
    /// A Slurm job per topology ([`CLASS_SLURM_SCHEDULER`], see `heron-slurm`).
    Slurm,
    /// StatefulSets per topology ([`CLASS_KUBERNETES_SCHEDULER`], see `heron-kubernetes`).
    Kubernetes,
}
/// The built-in cluster on the local file system.
pub const LOCAL: &str = "local";
/// The built-in cluster on a ZooKeeper at 127.0.0.1:2181.
pub const LOCALZK: &str = "localzk";
/// Files read from a cluster directory, in order (later ones win).
pub const CLUSTER_FILES: [&str; 6] = [
    "scheduler.yaml",
    "statemgr.yaml",
    "packing.yaml",
    "client.yaml",
    "heron_internals.yaml",
    "override.yaml",
];

/// Why a cluster's configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// Neither built in nor a directory under the config path.
    #[error(
        "unknown cluster {cluster:?}: the built-in clusters are \"local\" and \"localzk\", and \
         {} does not exist",
        dir.display()
    )]
    Unknown {
        /// The cluster.
        cluster: String,
        /// Where its files would be.
        dir: PathBuf,
    },
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A file is not flat YAML.
    #[error("{}: {source}", path.display())]
    Yaml {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: YamlError,
    },
    /// A `--config-property` is not `KEY=VALUE`.
    #[error("bad --config-property {0:?}: expected KEY=VALUE")]
    Property(String),
    /// A key holds a value heron-rs cannot use.
    #[error("cluster {cluster:?}: {key}={value}: {reason}")]
    Value {
        /// The cluster.
        cluster: String,
        /// The key.
        key: &'static str,
        /// Its value.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The scheduler is not the local one.
    #[error(
        "cluster {cluster:?} asks for scheduler {class:?}; the schedulers available are \
         {CLASS_LOCAL_SCHEDULER}, {CLASS_SLURM_SCHEDULER} and {CLASS_KUBERNETES_SCHEDULER}"
    )]
    Scheduler {
        /// The cluster.
        cluster: String,
        /// The class asked for.
        class: String,
    },
    /// The state manager keys are wrong.
    #[error("cluster {cluster:?}: {source}")]
    StateManager {
        /// The cluster.
        cluster: String,
        /// The error.
        #[source]
        source: heron_statemgr::StateError,
    },
}

/// A cluster's resolved configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterConfig {
    /// The cluster's name.
    pub cluster: String,
    /// Every key, after defaults, files and overrides.
    pub values: BTreeMap<String, String>,
}

impl ClusterConfig {
    /// Resolves `cluster`: built-in defaults, then the files in `<config_path>/<cluster>/`,
    /// then `overrides` (`KEY=VALUE` strings).
    pub fn load(
        cluster: &str,
        config_path: &Path,
        overrides: &[String],
    ) -> Result<ClusterConfig, ClusterError> {
        let mut values = builtin(cluster).unwrap_or_default();
        let dir = config_path.join(cluster);
        if dir.is_dir() {
            for file in CLUSTER_FILES {
                let path = dir.join(file);
                let text = match std::fs::read_to_string(&path) {
                    Ok(t) => t,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(source) => return Err(ClusterError::Read { path, source }),
                };
                let pairs =
                    parse_flat_yaml(&text).map_err(|source| ClusterError::Yaml { path, source })?;
                values.extend(pairs);
            }
        } else if builtin(cluster).is_none() {
            return Err(ClusterError::Unknown {
                cluster: cluster.to_string(),
                dir,
            });
        }
        for p in overrides {
            let (k, v) = p
                .split_once('=')
                .filter(|(k, _)| !k.trim().is_empty())
                .ok_or_else(|| ClusterError::Property(p.clone()))?;
            values.insert(k.trim().to_string(), v.trim().to_string());
        }
        values.insert(KEY_CLUSTER.to_string(), cluster.to_string());
        let config = ClusterConfig {
            cluster: cluster.to_string(),
            values,
        };
        config.scheduler()?;
        Ok(config)
    }

    /// The scheduler `heron.class.scheduler` names (Heron's class names; the local one when
    /// unset).
    pub fn scheduler<'a>(&'a self) -> Result<SchedulerKind, ClusterError> {
        let Some(class) = self.values.get(KEY_SCHEDULER_CLASS) else {
            return Ok(SchedulerKind::Local);
        };
        let short = |c: &'a str| {
            c.strip_prefix("org.apache.heron.")
                .or_else(|| c.strip_prefix("com.twitter.heron."))
        };
        let (kind, launcher) = match short(class) {
            Some("scheduler.local.LocalScheduler") => (SchedulerKind::Local, "LocalLauncher"),
            Some("scheduler.slurm.SlurmScheduler") => (SchedulerKind::Slurm, "SlurmLauncher"),
            Some("scheduler.kubernetes.KubernetesScheduler") => {
                (SchedulerKind::Kubernetes, "KubernetesLauncher")
            }
            _ => {
                return Err(ClusterError::Scheduler {
                    cluster: self.cluster.clone(),
                    class: class.clone(),
                })
            }
        };
        // Heron's scheduler.yaml names the scheduler's launcher too: it must be the same one
        if let Some(l) = self.values.get(KEY_LAUNCHER_CLASS) {
            if short(l).and_then(|s| s.rsplit('.').next()) != Some(launcher) {
                return Err(ClusterError::Value {
                    cluster: self.cluster.clone(),
                    key: KEY_LAUNCHER_CLASS,
                    value: l.clone(),
                    reason: "the launcher must be the one of heron.class.scheduler's scheduler",
                });
            }
        }
        Ok(kind)
    }

    /// The address the topology's daemons bind and advertise ([`KEY_HOST`]): an IP address
    /// of this machine, `127.0.0.1` unless configured, or `auto`: each container's own
    /// address, found where it runs (see [`heron_scheduler::host`]). A wildcard (`0.0.0.0`,
    /// `::`) is refused: the same address is what the other daemons connect to.
    pub fn host(&self) -> Result<String, ClusterError> {
        let Some(v) = self.values.get(KEY_HOST) else {
            return Ok("127.0.0.1".to_string());
        };
        if v == heron_scheduler::host::AUTO {
            return Ok(v.clone());
        }
        match v.parse::<std::net::IpAddr>() {
            Ok(ip) if !ip.is_unspecified() => Ok(ip.to_string()),
            _ => Err(ClusterError::Value {
                cluster: self.cluster.clone(),
                key: KEY_HOST,
                value: v.clone(),
                reason: "expected an IP address of this machine other than a wildcard (the \
                         daemons bind it and tell each other to connect to it), or auto",
            }),
        }
    }

    /// The state manager the configuration names.
    pub fn state_manager(&self) -> Result<StateManagerSpec, ClusterError> {
        StateManagerSpec::from_config(&self.values).map_err(|source| ClusterError::StateManager {
            cluster: self.cluster.clone(),
            source,
        })
    }
}

/// `~/.heron/conf`, Heron's default config path.
pub fn default_config_path() -> PathBuf {
    heron_statemgr::home_dir().join(".heron").join("conf")
}

fn builtin(cluster: &str) -> Option<BTreeMap<String, String>> {
    let pairs: &[(&str, &str)] = match cluster {
        LOCAL => &[
            (KEY_SCHEDULER_CLASS, CLASS_LOCAL_SCHEDULER),
            (KEY_CLASS, CLASS_LOCAL_FS),
            (
                KEY_ROOT_PATH,
                "${HOME}/.herondata/repository/state/${CLUSTER}",
            ),
        ],
        LOCALZK => &[
            (KEY_SCHEDULER_CLASS, CLASS_LOCAL_SCHEDULER),
            (KEY_CLASS, CLASS_ZOOKEEPER),
            (KEY_CONNECTION_STRING, "127.0.0.1:2181"),
            (KEY_ROOT_PATH, "/heron"),
        ],
        _ => return None,
    };
    Some(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

#[cfg(test)]
mod tests;
