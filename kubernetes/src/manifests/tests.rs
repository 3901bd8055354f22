use super::*;
use heron_proto::system::{ContainerPlan, Resource};

const GIB: i64 = 1 << 30;

fn plan(containers: i32) -> PackingPlan {
    PackingPlan {
        id: "t".into(),
        container_plans: (1..=containers)
            .map(|id| ContainerPlan {
                id,
                instance_plans: Vec::new(),
                required_resource: Resource {
                    cpu: f64::from(id) + 0.5,
                    ram: i64::from(id) * GIB,
                    disk: GIB,
                },
                scheduled_resource: None,
            })
            .collect(),
    }
}

fn build(name: &str, containers: i32, secret: bool) -> Manifests {
    let topology = Topology {
        name: name.into(),
        id: format!("{name}-1"),
        ..Topology::default()
    };
    let settings = Kubernetes::from_config(&BTreeMap::new()).unwrap();
    let args: Vec<String> = [
        "heron-role",
        "executor",
        "--shard",
        "0",
        "--topology-name",
        name,
        "--host",
        "auto",
        "--",
        "it's",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    Manifests::build(&ManifestInput {
        topology: &topology,
        plan: &plan(containers),
        settings: &settings,
        executor_args: args,
        secret: secret.then(|| b"00ff\n".to_vec()),
    })
    .unwrap()
}

fn container(set: &StatefulSet) -> &Container {
    &set.spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap()
        .containers[0]
}

#[test]
fn heron_shape_names_replicas_shards_and_resources() {
    let m = build("Word_Count", 3, true);
    assert_eq!(m.service.metadata.name.as_deref(), Some("word-count"));
    assert_eq!(
        m.service.spec.as_ref().unwrap().cluster_ip.as_deref(),
        Some("None"),
        "headless"
    );
    assert_eq!(
        m.manager.metadata.name.as_deref(),
        Some("word-count-manager")
    );
    assert_eq!(m.manager.spec.as_ref().unwrap().replicas, Some(1));
    assert_eq!(m.executors.spec.as_ref().unwrap().replicas, Some(3));
    assert_eq!(
        m.executors.spec.as_ref().unwrap().service_name.as_deref(),
        Some("word-count")
    );
    let manager = container(&m.manager).command.as_ref().unwrap()[2].clone();
    let executors = container(&m.executors).command.as_ref().unwrap()[2].clone();
    assert!(manager.contains(" --shard 0 "), "{manager}");
    assert!(
        executors.contains(r#" --shard "$((${POD_NAME##*-} + 1))" "#),
        "{executors}"
    );
    assert!(
        executors.contains("--fixed-ports -- 'it'\\''s'"),
        "{executors}"
    );
    // the largest container's resources
    let res = container(&m.executors).resources.as_ref().unwrap();
    let limits = res.limits.as_ref().unwrap();
    assert_eq!(limits["cpu"].0, "3500m");
    assert_eq!(limits["memory"].0, (3 * GIB).to_string());
    let env = container(&m.executors).env.as_ref().unwrap();
    assert_eq!(env[0].name, "HOST");
    assert_eq!(
        env[0]
            .value_from
            .as_ref()
            .unwrap()
            .field_ref
            .as_ref()
            .unwrap()
            .field_path,
        "status.podIP"
    );
    let secret = m.secret.as_ref().unwrap();
    assert_eq!(secret.data.as_ref().unwrap()["secret"].0, b"00ff\n");
    let mount = &container(&m.manager).volume_mounts.as_ref().unwrap()[0];
    assert_eq!(mount.mount_path, AUTH_DIR);
    // without authentication: no Secret, no volume
    let plain = build("w", 1, false);
    assert!(plain.secret.is_none());
    assert!(container(&plain.manager).volume_mounts.is_none());
}

#[test]
fn yaml_round_trips_through_the_typed_objects() {
    let m = build("WordCount", 2, true);
    let text = m.to_yaml().unwrap();
    assert_eq!(text.matches("\n---").count() + 1, 4, "{text}");
    let back = Manifests::from_yaml(&text).unwrap();
    assert_eq!(back, m);
    assert_eq!(back.to_yaml().unwrap(), text);
    assert!(Manifests::from_yaml("---\nkind: Pod\n").is_err());
}

#[test]
fn names_that_make_no_object_are_refused() {
    for bad in ["", "-a", "a-", "a b", &"x".repeat(41), "ünïcode"] {
        assert!(object_name(bad).is_err(), "{bad:?}");
    }
}
