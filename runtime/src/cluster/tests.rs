use super::*;
use heron_statemgr::ZkConfig;

fn props(p: &[&str]) -> Vec<String> {
    p.iter().map(|s| s.to_string()).collect()
}

#[test]
fn flat_yaml() {
    let text = "# Heron statemgr.yaml\n---\n\
        heron.class.state.manager: org.apache.heron.statemgr.zookeeper.curator.CuratorStateManager\n\
        heron.statemgr.connection.string:  \"127.0.0.1:2181\"   # the ensemble\n\
        heron.statemgr.root.path: '/heron # not a comment'\n\
        heron.statemgr.zookeeper.is.initialize.tree: True\n\
        empty:\n\
        tilde: ~\n\n";
    let m = parse_flat_yaml(text).unwrap();
    assert_eq!(m["heron.statemgr.connection.string"], "127.0.0.1:2181");
    assert_eq!(m["heron.statemgr.root.path"], "/heron # not a comment");
    assert_eq!(m["heron.statemgr.zookeeper.is.initialize.tree"], "True");
    assert_eq!(m["empty"], "");
    assert_eq!(m["tilde"], "");
    assert_eq!(m.len(), 6);

    for (bad, line, needle) in [
        ("a: 1\nsinks:\n  - file-sink\n", 3, "nested"),
        ("a: {x: 1}\n", 1, "flow"),
        ("just text\n", 1, "key: value"),
        ("a: \"open\n", 1, "unterminated"),
        ("a: |\n", 1, "multi-line"),
        ("a: 'x' y\n", 1, "after the quoted"),
    ] {
        let e = parse_flat_yaml(bad).unwrap_err();
        assert_eq!(e.line, line, "{bad:?}: {e}");
        assert!(e.to_string().contains(needle), "{bad:?}: {e}");
    }
}

#[test]
fn builtin_clusters() {
    let none = std::path::Path::new("/nonexistent-heron-conf");
    let local = ClusterConfig::load("local", none, &[]).unwrap();
    assert_eq!(
        local.state_manager().unwrap(),
        StateManagerSpec::Local(heron_statemgr::default_local_root("local"))
    );
    let zk = ClusterConfig::load("localzk", none, &[]).unwrap();
    assert_eq!(
        zk.state_manager().unwrap(),
        StateManagerSpec::ZooKeeper(ZkConfig::new("127.0.0.1:2181", "/heron"))
    );
    let zk = ClusterConfig::load(
        "localzk",
        none,
        &props(&[
            "heron.statemgr.connection.string=127.0.0.1:12345",
            "heron.statemgr.root.path=/t1",
        ]),
    )
    .unwrap();
    assert_eq!(
        zk.state_manager().unwrap().to_string(),
        "zk://127.0.0.1:12345/t1"
    );
    let e = ClusterConfig::load("aurora", none, &[]).unwrap_err();
    assert!(e.to_string().contains("unknown cluster \"aurora\""), "{e}");
    let e = ClusterConfig::load("local", none, &props(&["novalue"])).unwrap_err();
    assert!(e.to_string().contains("KEY=VALUE"), "{e}");
}

#[test]
fn daemons_bind_loopback_unless_a_host_is_configured() {
    let none = std::path::Path::new("/nonexistent-heron-conf");
    let host = |props_: &[&str]| {
        ClusterConfig::load("local", none, &props(props_))
            .unwrap()
            .host()
    };
    assert_eq!(host(&[]).unwrap(), "127.0.0.1");
    assert_eq!(host(&["heron-rs.host=10.1.2.3"]).unwrap(), "10.1.2.3");
    assert_eq!(host(&["heron-rs.host=::1"]).unwrap(), "::1");
    for bad in ["0.0.0.0", "::", "node-1", ""] {
        let e = host(&[&format!("heron-rs.host={bad}")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("heron-rs.host") && e.contains("wildcard"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn cluster_directories_override_and_define_clusters() {
    let conf = tempfile::tempdir().unwrap();
    let dir = conf.path().join("localzk");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("statemgr.yaml"),
        "heron.statemgr.connection.string: \"10.0.0.1:2181\"\n\
         heron.statemgr.zookeeper.session.timeout.ms: 15000\n",
    )
    .unwrap();
    std::fs::write(dir.join("override.yaml"), "heron.statemgr.root.path: /o\n").unwrap();
    let c = ClusterConfig::load("localzk", conf.path(), &[]).unwrap();
    assert_eq!(
        c.state_manager().unwrap().to_string(),
        "zk://10.0.0.1:2181/o?session_timeout_ms=15000"
    );
    // the command line wins over the files
    let c = ClusterConfig::load(
        "localzk",
        conf.path(),
        &props(&["heron.statemgr.root.path=/cli"]),
    )
    .unwrap();
    assert!(c.state_manager().unwrap().to_string().contains("/cli"));

    // a new cluster from files only; a scheduler other than local is refused
    let dir = conf.path().join("mine");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("statemgr.yaml"),
        format!("heron.class.state.manager: {CLASS_LOCAL_FS}\nheron.statemgr.root.path: /st/${{CLUSTER}}\n"),
    )
    .unwrap();
    let c = ClusterConfig::load("mine", conf.path(), &[]).unwrap();
    assert_eq!(
        c.state_manager().unwrap(),
        StateManagerSpec::Local("/st/mine".into())
    );
    std::fs::write(
        dir.join("scheduler.yaml"),
        "heron.class.scheduler: org.apache.heron.scheduler.aurora.AuroraScheduler\n",
    )
    .unwrap();
    let e = ClusterConfig::load("mine", conf.path(), &[]).unwrap_err();
    assert!(e.to_string().contains("AuroraScheduler"), "{e}");
    assert_eq!(c.scheduler().unwrap(), SchedulerKind::Local);
    std::fs::write(
        dir.join("scheduler.yaml"),
        "heron.class.scheduler: org.apache.heron.scheduler.slurm.SlurmScheduler\n\
         heron-rs.host: auto\n",
    )
    .unwrap();
    let c = ClusterConfig::load("mine", conf.path(), &[]).unwrap();
    assert_eq!(c.scheduler().unwrap(), SchedulerKind::Slurm);
    assert_eq!(c.host().unwrap(), "auto");
    // Heron's launcher key must name the same scheduler's launcher
    let with_launcher = |l: &str| {
        ClusterConfig::load(
            "mine",
            conf.path(),
            &[format!(
                "heron.class.launcher=org.apache.heron.scheduler.{l}"
            )],
        )
    };
    assert!(with_launcher("slurm.SlurmLauncher").is_ok());
    let e = with_launcher("local.LocalLauncher")
        .unwrap_err()
        .to_string();
    assert!(e.contains("heron.class.launcher"), "{e}");
    std::fs::write(dir.join("scheduler.yaml"), "sinks:\n  - x\n").unwrap();
    let e = ClusterConfig::load("mine", conf.path(), &[]).unwrap_err();
    assert!(e.to_string().contains("scheduler.yaml: line 2"), "{e}");
}
