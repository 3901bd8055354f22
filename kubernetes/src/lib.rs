//! Heron's Kubernetes scheduler (`org.apache.heron.scheduler.kubernetes.KubernetesScheduler`)
//! for heron-rs: a topology's objects in Heron's shape ([`Manifests`]: a headless Service,
//! StatefulSets `<name>-manager` and `<name>-executors`), printed by `heron submit kubernetes
//! --dry-run` or created, scaled and deleted through the Kubernetes API ([`api`], the `kube`
//! client) when the cluster names `heron.kubernetes.scheduler.uri` (for example `kubectl
//! proxy`'s `http://127.0.0.1:8001`, as with Heron).
//!
//! Cluster keys: `heron.executor.docker.image` (the image; it holds the topology binary),
//! `heron-rs.kubernetes.binary` (the binary's path in the image, `/usr/local/bin/topology`
//! by default), `heron-rs.kubernetes.namespace` (`default`) and
//! `heron.kubernetes.scheduler.uri`. The state manager must be one the pods reach
//! (ZooKeeper): the submitting machine writes the topology's state there and the pods read
//! it.

pub mod api;
mod manifests;
mod scheduler;
pub mod yaml;

pub use manifests::{object_name, ManifestInput, Manifests, AUTH_DIR, CONTAINER, PORTS, WORK_DIR};
pub use scheduler::{check_supported, dry_run, kill, restart, update, KubernetesLauncher};

use std::collections::BTreeMap;

/// The image key (Heron's).
pub const KEY_IMAGE: &str = "heron.executor.docker.image";
/// The binary's path in the image.
pub const KEY_BINARY: &str = "heron-rs.kubernetes.binary";
/// The namespace of the objects.
pub const KEY_NAMESPACE: &str = "heron-rs.kubernetes.namespace";
/// The Kubernetes API's address (Heron's key).
pub const KEY_URI: &str = "heron.kubernetes.scheduler.uri";

/// Why a topology cannot go to Kubernetes.
#[derive(Debug, thiserror::Error)]
pub enum KubernetesError {
    /// The topology's name makes no object name.
    #[error(
        "topology name {0:?} makes no Kubernetes object name: lower-cased, with '_' and '.' \
         as '-', it must be 1 to 40 letters, digits and '-', starting and ending with a \
         letter or digit"
    )]
    Name(String),
    /// A cluster key holds a value that cannot be used.
    #[error("{key}={value}: {reason}")]
    Setting {
        /// The key.
        key: &'static str,
        /// Its value.
        value: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// Objects could not be read back.
    #[error("manifests: {0}")]
    Manifest(String),
    /// An object does not serialize.
    #[error("manifests: {0}")]
    Json(#[from] serde_json::Error),
    /// YAML in or out.
    #[error(transparent)]
    Yaml(#[from] yaml::YamlError),
    /// No API address is configured.
    #[error(
        "the cluster names no Kubernetes API ({KEY_URI}); use `heron submit kubernetes \
         --dry-run` to print the objects instead"
    )]
    NoApi,
    /// The Kubernetes API refused or failed a request.
    #[error("Kubernetes API at {uri}: {reason}")]
    Api {
        /// The API address.
        uri: String,
        /// What failed.
        reason: String,
    },
}

/// A cluster's Kubernetes settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Kubernetes {
    /// The image of every pod.
    pub image: String,
    /// The topology binary's path in the image.
    pub binary: String,
    /// The namespace.
    pub namespace: String,
    /// The API's address, if any.
    pub uri: Option<String>,
    /// Cores of the manager's pod.
    pub manager_cpu: f64,
    /// Bytes of memory of the manager's pod.
    pub manager_ram: i64,
}

impl Kubernetes {
    /// The settings in a cluster's keys.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// let k = heron_kubernetes::Kubernetes::from_config(&BTreeMap::new()).unwrap();
    /// assert_eq!((k.namespace.as_str(), k.uri), ("default", None));
    /// let bad = BTreeMap::from([("heron-rs.kubernetes.namespace".to_string(), "Not_A_Name".to_string())]);
    /// assert!(heron_kubernetes::Kubernetes::from_config(&bad).is_err());
    /// ```
    pub fn from_config(values: &BTreeMap<String, String>) -> Result<Kubernetes, KubernetesError> {
        let get = |k: &str| {
            values
                .get(k)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let namespace = get(KEY_NAMESPACE).unwrap_or_else(|| "default".to_string());
        let dns_label = !namespace.is_empty()
            && namespace.len() <= 63
            && namespace
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !dns_label {
            return Err(KubernetesError::Setting {
                key: KEY_NAMESPACE,
                value: namespace,
                reason: "expected a namespace name (lower-case letters, digits and '-')",
            });
        }
        let binary = get(KEY_BINARY).unwrap_or_else(|| "/usr/local/bin/topology".to_string());
        if !binary.starts_with('/') {
            return Err(KubernetesError::Setting {
                key: KEY_BINARY,
                value: binary,
                reason: "expected an absolute path in the image",
            });
        }
        Ok(Kubernetes {
            image: get(KEY_IMAGE).unwrap_or_else(|| "heron-rs/topology:latest".to_string()),
            binary,
            namespace,
            uri: get(KEY_URI),
            manager_cpu: 1.0,
            manager_ram: 1 << 30,
        })
    }
}
