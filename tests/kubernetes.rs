//! `heron submit kubernetes --dry-run`: the WordCount's objects in Heron's shape, printed as
//! YAML and nothing else, validated against the Kubernetes 1.33 schemas (PyPI's
//! `kubernetes-validate`, strict, in the tests' virtualenv) and read back through the typed
//! objects; and the refusals that keep a submit from going wrong.

mod support;

use std::process::Output;
use support::{assert_ok, example, heron_python, TestEnv};

fn cluster(env: &TestEnv, statemgr: &str) {
    let dir = env.home().join(".heron/conf/kubernetes");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("scheduler.yaml"),
        "heron.class.scheduler: org.apache.heron.scheduler.kubernetes.KubernetesScheduler\n\
         heron.executor.docker.image: registry.example/wordcount:1.0\n\
         heron-rs.kubernetes.namespace: streaming\n",
    )
    .unwrap();
    std::fs::write(dir.join("statemgr.yaml"), statemgr).unwrap();
}

const ZK: &str =
    "heron.class.state.manager: org.apache.heron.statemgr.zookeeper.curator.CuratorStateManager\n\
                  heron.statemgr.connection.string: \"zk.streaming.svc:2181\"\n\
                  heron.statemgr.root.path: /heron\n";

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs kubernetes-validate (strict, Kubernetes 1.33) on `yaml`: its exit status and output.
fn validate(env: &TestEnv, yaml: &str) -> (bool, String) {
    let file = env.home().join(format!("objects-{}.yaml", yaml.len()));
    std::fs::write(&file, yaml).unwrap();
    let python = heron_python();
    let tool = python.parent().unwrap().join("kubernetes-validate");
    let out = std::process::Command::new(&tool)
        .args(["-k", "1.33.0", "--strict"])
        .arg(&file)
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", tool.display()));
    (
        out.status.success(),
        format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out)),
    )
}

#[test]
fn dry_run_prints_heron_shaped_objects_that_validate_and_round_trip() {
    let env = TestEnv::new();
    cluster(&env, ZK);
    let binary = example("word_count");
    let out = env.heron_in(
        "submit",
        "kubernetes",
        &["--dry-run".to_string()],
        &[binary.to_str().unwrap()],
    );
    assert_ok(&out, "heron submit kubernetes --dry-run");
    let yaml = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(yaml.starts_with("---\n"), "only YAML on stdout: {yaml}");

    // typed, and back to the same text
    let m = heron_kubernetes::Manifests::from_yaml(&yaml).expect("the objects read back");
    assert_eq!(m.to_yaml().unwrap(), yaml);
    let name = |meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        (meta.name.clone().unwrap(), meta.namespace.clone().unwrap())
    };
    assert_eq!(
        name(&m.service.metadata),
        ("wordcount".into(), "streaming".into())
    );
    assert_eq!(name(&m.manager.metadata).0, "wordcount-manager");
    assert_eq!(name(&m.executors.metadata).0, "wordcount-executors");
    assert_eq!(m.manager.spec.as_ref().unwrap().replicas, Some(1));
    assert_eq!(
        m.executors.spec.as_ref().unwrap().replicas,
        Some(2),
        "one executor pod per stream manager container of the packing plan"
    );
    let pod = m
        .executors
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap();
    let c = &pod.containers[0];
    assert_eq!(c.image.as_deref(), Some("registry.example/wordcount:1.0"));
    let command = &c.command.as_ref().unwrap()[2];
    assert!(
        command.contains("--shard \"$((${POD_NAME##*-} + 1))\""),
        "{command}"
    );
    assert!(command.contains("--host auto --fixed-ports"), "{command}");
    assert!(command.contains("--state-manager zk://zk.streaming.svc:2181/heron"));
    assert!(m.secret.is_some(), "authentication is on by default");
    let ports: Vec<String> = c
        .ports
        .as_ref()
        .unwrap()
        .iter()
        .map(|p| format!("{}={}", p.name.clone().unwrap(), p.container_port))
        .collect();
    assert!(ports.contains(&"server=6001".to_string()), "{ports:?}");

    // the schemas accept it, and would refuse a broken object
    let (ok, report) = validate(&env, &yaml);
    assert!(ok, "kubernetes-validate refused the objects:\n{report}");
    assert_eq!(report.matches("passed").count(), 4, "{report}");
    let broken = yaml.replacen("replicas: 1", "replicas: one", 1);
    let (ok, report) = validate(&env, &broken);
    assert!(!ok && report.contains("replicas"), "{report}");
}

#[test]
fn kubernetes_submits_that_cannot_work_are_refused_before_anything_is_written() {
    let env = TestEnv::new();
    let binary = example("word_count");
    let b = binary.to_str().unwrap();
    // --dry-run is Kubernetes-only
    let out = env.heron_in("submit", "local", &["--dry-run".to_string()], &[b]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--dry-run"), "{}", stderr(&out));
    // no API address
    cluster(&env, ZK);
    let out = env.heron_in("submit", "kubernetes", &[], &[b]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("heron.kubernetes.scheduler.uri"),
        "{}",
        stderr(&out)
    );
    // a state manager the pods cannot reach
    cluster(
        &env,
        "heron.class.state.manager: org.apache.heron.statemgr.localfs.LocalFileSystemStateManager\n",
    );
    let out = env.heron_in(
        "submit",
        "kubernetes",
        &[
            "--config-property".to_string(),
            "heron.kubernetes.scheduler.uri=http://127.0.0.1:1".to_string(),
        ],
        &[b],
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("ZooKeeper"), "{}", stderr(&out));
    assert!(
        !env.state_root().join("topologies").exists()
            || std::fs::read_dir(env.state_root().join("topologies"))
                .unwrap()
                .next()
                .is_none(),
        "nothing written"
    );
}
