//! A topology's Kubernetes objects, in Heron's shape, as typed `k8s-openapi` objects:
//!
//! * a headless Service `<name>` (no cluster IP) over every pod of the topology, so each pod
//!   has a DNS name and the named ports are declared;
//! * a StatefulSet `<name>-manager` with 1 replica: container 0 (the tmaster);
//! * a StatefulSet `<name>-executors` with one replica per stream manager container: pod
//!   ordinal `k` runs container `k + 1`;
//! * when the topology wants authentication (the default), a Secret `<name>-auth` with the
//!   topology's secret, mounted where each executor reads it.
//!
//! `<name>` is the topology's name lower-cased, `_` and `.` made `-` (`WordCount` →
//! `wordcount`). Each pod runs the topology binary of the image as the `executor` role with
//! `--host auto` (so `HOST`, set from the pod's IP, is the address it binds and advertises)
//! and `--fixed-ports` (Heron's ports, named in the Service and the containers). Both
//! StatefulSets start their pods in parallel, as Heron's do. Resources are the packing
//! plan's: the largest container's for the executors.

use crate::{Kubernetes, KubernetesError};
use heron_proto::api::Topology;
use heron_proto::system::PackingPlan;
use heron_scheduler::executor::{
    FIXED_CKPTMGR, FIXED_CONTROLLER, FIXED_LOCAL_DATA, FIXED_SERVER, FIXED_SHELL, FIXED_STATS,
};
use heron_scheduler::shell::quote;
use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EnvVar, EnvVarSource, ObjectFieldSelector, PodSpec, PodTemplateSpec,
    ResourceRequirements, Secret, SecretVolumeSource, Service, ServicePort, ServiceSpec, Volume,
    VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::ByteString;
use serde_json::Value;
use std::collections::BTreeMap;

/// The working directory of the executor in every pod.
pub const WORK_DIR: &str = "/var/heron/topology";
/// Where the topology's Secret is mounted (the executor reads `auth/secret` there).
pub const AUTH_DIR: &str = "/var/heron/topology/auth";
/// The container's name in every pod.
pub const CONTAINER: &str = "executor";

/// The named ports of every pod (name, port): the tmaster's or a stream manager's server,
/// the tmaster's controller and stats, the shell, the instances' server and a checkpoint
/// manager.
pub const PORTS: [(&str, u16); 6] = [
    ("server", FIXED_SERVER),
    ("tmanager-ctl", FIXED_CONTROLLER),
    ("tmanager-stats", FIXED_STATS),
    ("shell", FIXED_SHELL),
    ("local-data", FIXED_LOCAL_DATA),
    ("ckptmgr", FIXED_CKPTMGR),
];

/// What the objects are made from.
#[derive(Clone, Debug)]
pub struct ManifestInput<'a> {
    /// The topology (its name and id).
    pub topology: &'a Topology,
    /// Its packing plan.
    pub plan: &'a PackingPlan,
    /// The cluster's Kubernetes settings.
    pub settings: &'a Kubernetes,
    /// The executor's arguments for container 0 (after the binary: `heron-role executor
    /// --shard 0 ...`), as every scheduler runs them.
    pub executor_args: Vec<String>,
    /// The topology's secret file (when it wants authentication).
    pub secret: Option<Vec<u8>>,
}

/// The objects of one topology.
#[derive(Clone, Debug, PartialEq)]
pub struct Manifests {
    /// The headless Service.
    pub service: Service,
    /// `<name>-manager`.
    pub manager: StatefulSet,
    /// `<name>-executors`.
    pub executors: StatefulSet,
    /// `<name>-auth`, when the topology wants authentication.
    pub secret: Option<Secret>,
}

/// The objects' base name for topology `name`.
///
/// ```
/// assert_eq!(heron_kubernetes::object_name("WordCount").unwrap(), "wordcount");
/// assert_eq!(heron_kubernetes::object_name("my_top.v2").unwrap(), "my-top-v2");
/// assert!(heron_kubernetes::object_name("-x").is_err());
/// ```
pub fn object_name(topology: &str) -> Result<String, KubernetesError> {
    let name: String = topology
        .chars()
        .map(|c| match c {
            '_' | '.' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    // a DNS label, with room for "-executors" and the pod ordinal
    let ok = !name.is_empty()
        && name.len() <= 40
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(name)
    } else {
        Err(KubernetesError::Name(topology.to_string()))
    }
}

fn labels(name: &str, role: Option<&str>) -> BTreeMap<String, String> {
    let mut l = BTreeMap::from([
        ("app".to_string(), "heron".to_string()),
        ("topology".to_string(), name.to_string()),
    ]);
    if let Some(r) = role {
        l.insert("role".to_string(), r.to_string());
    }
    l
}

fn meta(name: String, namespace: &str, labels: BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: Some(namespace.to_string()),
        labels: Some(labels),
        ..ObjectMeta::default()
    }
}

fn field_env(name: &str, path: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: path.to_string(),
                ..ObjectFieldSelector::default()
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    }
}

/// `cpu` cores and `ram` bytes as requests and limits.
fn resources(cpu: f64, ram: i64) -> ResourceRequirements {
    let millis = (cpu.max(0.001) * 1000.0).ceil() as i64;
    let amounts = BTreeMap::from([
        ("cpu".to_string(), Quantity(format!("{millis}m"))),
        ("memory".to_string(), Quantity(ram.max(1).to_string())),
    ]);
    ResourceRequirements {
        limits: Some(amounts.clone()),
        requests: Some(amounts),
        ..ResourceRequirements::default()
    }
}

/// The container's shell command: the executor for `shard` (a shell expression).
fn command(binary: &str, args: &[String], shard: &str) -> Vec<String> {
    let mut line = format!(
        "mkdir -p {WORK_DIR} && cd {WORK_DIR} && exec {}",
        quote(binary)
    );
    let mut next_is_shard = false;
    for arg in args {
        line.push(' ');
        if next_is_shard {
            line.push_str(shard);
        } else {
            line.push_str(&quote(arg));
        }
        next_is_shard = arg == "--shard";
    }
    vec!["sh".to_string(), "-c".to_string(), line]
}

impl Manifests {
    /// The objects of a topology.
    pub fn build(input: &ManifestInput<'_>) -> Result<Manifests, KubernetesError> {
        let name = object_name(&input.topology.name)?;
        let ns = input.settings.namespace.as_str();
        let s = input.settings;
        // --fixed-ports before the user arguments
        let mut args = input.executor_args.clone();
        let at = args.iter().position(|a| a == "--").unwrap_or(args.len());
        args.insert(at, "--fixed-ports".to_string());
        let secret_name = format!("{name}-auth");
        let pod = |role: &str, shard: &str, res: ResourceRequirements| PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(labels(&name, Some(role))),
                ..ObjectMeta::default()
            }),
            spec: Some(PodSpec {
                termination_grace_period_seconds: Some(10),
                containers: vec![Container {
                    name: CONTAINER.to_string(),
                    image: Some(s.image.clone()),
                    command: Some(command(&s.binary, &args, shard)),
                    env: Some(vec![
                        field_env("HOST", "status.podIP"),
                        field_env("POD_NAME", "metadata.name"),
                    ]),
                    ports: Some(
                        PORTS
                            .iter()
                            .map(|(n, p)| ContainerPort {
                                name: Some(n.to_string()),
                                container_port: i32::from(*p),
                                ..ContainerPort::default()
                            })
                            .collect(),
                    ),
                    resources: Some(res),
                    volume_mounts: input.secret.as_ref().map(|_| {
                        vec![VolumeMount {
                            name: "auth".to_string(),
                            mount_path: AUTH_DIR.to_string(),
                            read_only: Some(true),
                            ..VolumeMount::default()
                        }]
                    }),
                    ..Container::default()
                }],
                volumes: input.secret.as_ref().map(|_| {
                    vec![Volume {
                        name: "auth".to_string(),
                        secret: Some(SecretVolumeSource {
                            secret_name: Some(secret_name.clone()),
                            default_mode: Some(0o400),
                            ..SecretVolumeSource::default()
                        }),
                        ..Volume::default()
                    }]
                }),
                ..PodSpec::default()
            }),
        };
        let stateful_set = |suffix: &str, replicas: usize, template: PodTemplateSpec| StatefulSet {
            metadata: meta(format!("{name}-{suffix}"), ns, labels(&name, Some(suffix))),
            spec: Some(StatefulSetSpec {
                replicas: Some(replicas as i32),
                service_name: Some(name.clone()),
                pod_management_policy: Some("Parallel".to_string()),
                selector: LabelSelector {
                    match_labels: Some(labels(&name, Some(suffix))),
                    ..LabelSelector::default()
                },
                template,
                ..StatefulSetSpec::default()
            }),
            ..StatefulSet::default()
        };
        let largest = input
            .plan
            .container_plans
            .iter()
            .map(|c| &c.required_resource)
            .fold((0.0f64, 0i64), |(cpu, ram), r| {
                (cpu.max(r.cpu), ram.max(r.ram))
            });
        let manager = stateful_set(
            "manager",
            1,
            pod("manager", "0", resources(s.manager_cpu, s.manager_ram)),
        );
        let executors = stateful_set(
            "executors",
            input.plan.container_plans.len(),
            pod(
                "executors",
                "\"$((${POD_NAME##*-} + 1))\"",
                resources(largest.0, largest.1),
            ),
        );
        let service = Service {
            metadata: meta(name.clone(), ns, labels(&name, None)),
            spec: Some(ServiceSpec {
                cluster_ip: Some("None".to_string()),
                selector: Some(labels(&name, None)),
                ports: Some(
                    PORTS
                        .iter()
                        .map(|(n, p)| ServicePort {
                            name: Some(n.to_string()),
                            port: i32::from(*p),
                            ..ServicePort::default()
                        })
                        .collect(),
                ),
                ..ServiceSpec::default()
            }),
            ..Service::default()
        };
        let secret = input.secret.as_ref().map(|bytes| Secret {
            metadata: meta(secret_name.clone(), ns, labels(&name, None)),
            type_: Some("Opaque".to_string()),
            data: Some(BTreeMap::from([(
                "secret".to_string(),
                ByteString(bytes.clone()),
            )])),
            ..Secret::default()
        });
        Ok(Manifests {
            service,
            manager,
            executors,
            secret,
        })
    }

    /// The objects as JSON values, in the order they are created: Secret, Service, manager,
    /// executors.
    pub fn documents(&self) -> Result<Vec<Value>, KubernetesError> {
        let mut docs = Vec::new();
        if let Some(s) = &self.secret {
            docs.push(serde_json::to_value(s)?);
        }
        docs.push(serde_json::to_value(&self.service)?);
        docs.push(serde_json::to_value(&self.manager)?);
        docs.push(serde_json::to_value(&self.executors)?);
        Ok(docs)
    }

    /// The objects as a stream of YAML documents (what `heron submit kubernetes --dry-run`
    /// prints).
    pub fn to_yaml(&self) -> Result<String, KubernetesError> {
        Ok(crate::yaml::emit(&self.documents()?)?)
    }

    /// Reads [`to_yaml`](Self::to_yaml)'s output back into the typed objects.
    pub fn from_yaml(text: &str) -> Result<Manifests, KubernetesError> {
        let mut service = None;
        let mut secret = None;
        let mut sets: Vec<StatefulSet> = Vec::new();
        for doc in crate::yaml::parse(text)? {
            match doc["kind"].as_str() {
                Some("Service") => service = Some(serde_json::from_value(doc)?),
                Some("Secret") => secret = Some(serde_json::from_value(doc)?),
                Some("StatefulSet") => sets.push(serde_json::from_value(doc)?),
                other => {
                    return Err(KubernetesError::Manifest(format!(
                        "unexpected kind {other:?}"
                    )))
                }
            }
        }
        let take = |suffix: &str, sets: &mut Vec<StatefulSet>| {
            let i = sets.iter().position(|s| {
                s.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.ends_with(&format!("-{suffix}")))
            });
            i.map(|i| sets.remove(i))
                .ok_or_else(|| KubernetesError::Manifest(format!("no {suffix} StatefulSet")))
        };
        Ok(Manifests {
            service: service.ok_or_else(|| KubernetesError::Manifest("no Service".into()))?,
            manager: take("manager", &mut sets)?,
            executors: take("executors", &mut sets)?,
            secret,
        })
    }
}

#[cfg(test)]
mod tests;
