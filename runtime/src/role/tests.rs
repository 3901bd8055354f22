use super::*;
use heron_proto::system::{ContainerPlan, InstancePlan, PackingPlan, Resource};
use heron_scheduler::executor::{container_processes, ContainerPorts, ExecutorConfig};

fn parse(args: &[String]) -> Result<Role, clap::Error> {
    RoleCli::try_parse_from(args).map(|c| c.role)
}

fn strs(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

fn executor_config(shard: i32) -> ExecutorConfig {
    ExecutorConfig {
        shard,
        topology_name: "T".into(),
        topology_id: "T-1".into(),
        state_manager: StateManagerSpec::Local("/state".into()),
        cluster: "local".into(),
        role: "u".into(),
        environ: "default".into(),
        user_args: strs("--containers 2 -- x"),
        binary: "/bin/t".into(),
        working_dir: "/wd".into(),
        host: "127.0.0.1".into(),
        fixed_ports: false,
    }
}

fn plan() -> PackingPlan {
    let r = Resource {
        cpu: 1.0,
        ram: 1,
        disk: 1,
    };
    PackingPlan {
        id: "T-1".into(),
        container_plans: vec![ContainerPlan {
            id: 1,
            instance_plans: vec![
                InstancePlan {
                    component_name: "word".into(),
                    task_id: 1,
                    component_index: 0,
                    resource: r,
                },
                InstancePlan {
                    component_name: "count".into(),
                    task_id: 2,
                    component_index: 0,
                    resource: r,
                },
            ],
            required_resource: r,
            scheduled_resource: None,
        }],
    }
}

/// The executor's command lines (the scheduler writes them) parse here: the two sides agree.
#[test]
fn what_the_executor_starts_parses_as_roles() {
    let tm_ports = ContainerPorts::Tmaster {
        server: 7001,
        controller: 7002,
        stats: 7003,
        ckptmgr: None,
    };
    let secret = std::path::Path::new("/wd/auth/secret");
    let tm = &container_processes(&executor_config(0), &plan(), tm_ports, Some(secret)).unwrap()[0];
    let role = parse(&tm.args[1..]).unwrap();
    assert_eq!(role.process_name(), "tmaster");
    assert_eq!(role.user_args(), strs("--containers 2 -- x"));
    let Role::Tmaster {
        ids,
        server_port,
        controller_port,
        stats_port,
        state_manager,
        host,
        ckptmgr_port,
        auth_secret_file,
        ..
    } = role
    else {
        panic!("not tmaster")
    };
    assert_eq!(ckptmgr_port, None, "not stateful");
    assert_eq!(auth_secret_file.as_deref(), Some(secret));
    assert_eq!(
        (ids.topology_name.as_str(), ids.topology_id.as_str()),
        ("T", "T-1")
    );
    assert_eq!(
        (server_port, controller_port, stats_port),
        (7001, 7002, 7003)
    );
    assert_eq!(
        (state_manager.to_string(), host),
        ("local:/state".to_string(), "127.0.0.1".to_string())
    );

    let sm_ports = ContainerPorts::Stmgr {
        data: 7101,
        local_data: 7102,
        shell: 7105,
        ckptmgr: None,
    };
    let specs = container_processes(&executor_config(1), &plan(), sm_ports, Some(secret)).unwrap();
    for spec in &specs {
        let role = parse(&spec.args[1..]).unwrap();
        let (Role::Stmgr {
            auth_secret_file, ..
        }
        | Role::Instance {
            auth_secret_file, ..
        }) = role
        else {
            panic!("{} is neither a stmgr nor an instance", spec.name)
        };
        assert_eq!(auth_secret_file.as_deref(), Some(secret), "{}", spec.name);
    }
    let Role::Stmgr {
        stmgr_id,
        data_port,
        local_data_port,
        instance_ids,
        ckptmgr_port,
        ..
    } = parse(&specs[0].args[1..]).unwrap()
    else {
        panic!("not stmgr")
    };
    assert_eq!(ckptmgr_port, None, "not stateful");
    assert_eq!(stmgr_id, "stmgr-1");
    assert_eq!((data_port, local_data_port), (7101, 7102));
    assert_eq!(instance_ids, ["container_1_word_1", "container_1_count_2"]);

    let inst = parse(&specs[2].args[1..]).unwrap();
    assert_eq!(inst.process_name(), "container_1_count_2");
    let Role::Instance {
        component_name,
        task_id,
        component_index,
        stmgr_id,
        stmgr_port,
        ..
    } = inst
    else {
        panic!("not instance")
    };
    assert_eq!(
        (component_name.as_str(), task_id, component_index),
        ("count", 2, 0)
    );
    assert_eq!((stmgr_id.as_str(), stmgr_port), ("stmgr-1", 7102));
}

/// In `EFFECTIVELY_ONCE` mode every container's checkpoint manager parses as the ckptmgr role,
/// and the tmaster and stream manager get its port.
#[test]
fn stateful_containers_run_a_checkpoint_manager_role() {
    let tm_ports = ContainerPorts::Tmaster {
        server: 7001,
        controller: 7002,
        stats: 7003,
        ckptmgr: Some(7004),
    };
    let specs = container_processes(&executor_config(0), &plan(), tm_ports, None).unwrap();
    let Role::Tmaster { ckptmgr_port, .. } = parse(&specs[0].args[1..]).unwrap() else {
        panic!("not tmaster")
    };
    assert_eq!(ckptmgr_port, Some(7004));
    let ckpt = parse(&specs[1].args[1..]).unwrap();
    assert_eq!(ckpt.process_name(), "ckptmgr-0");
    assert!(!ckpt.is_data_path());
    assert_eq!(ckpt.user_args(), strs("--containers 2 -- x"));
    let Role::Ckptmgr {
        ids,
        ckptmgr_id,
        port,
        ..
    } = ckpt
    else {
        panic!("not ckptmgr")
    };
    assert_eq!(
        (ids.topology_name.as_str(), ids.topology_id.as_str()),
        ("T", "T-1")
    );
    assert_eq!((ckptmgr_id.as_str(), port), ("ckptmgr-0", 7004));

    let sm_ports = ContainerPorts::Stmgr {
        data: 7101,
        local_data: 7102,
        shell: 7105,
        ckptmgr: Some(7103),
    };
    let specs = container_processes(&executor_config(1), &plan(), sm_ports, None).unwrap();
    let Role::Stmgr { ckptmgr_port, .. } = parse(&specs[0].args[1..]).unwrap() else {
        panic!("not stmgr")
    };
    assert_eq!(ckptmgr_port, Some(7103));
    let Role::Ckptmgr {
        ckptmgr_id, port, ..
    } = parse(&specs[1].args[1..]).unwrap()
    else {
        panic!("not ckptmgr")
    };
    assert_eq!((ckptmgr_id.as_str(), port), ("ckptmgr-1", 7103));
}

#[test]
fn the_checkpoint_managers_storage_comes_from_the_topology_config() {
    let ids = || TopologyIds {
        topology_name: "T".into(),
        topology_id: "T-1".into(),
    };
    let home = Some(PathBuf::from("/home/u"));
    let mut conf = heron_api::Config::new();
    let c = ckptmgr_config(ids(), "ckptmgr-1".into(), 9, &conf, home.clone()).unwrap();
    assert_eq!(c.root, PathBuf::from("/home/u/.herondata/checkpoints"));
    assert_eq!((c.ckptmgr_id.as_str(), c.port), ("ckptmgr-1", 9));
    conf.set("heron.statefulstorage.localfs.root.path", "/data/ckpt");
    let c = ckptmgr_config(ids(), "ckptmgr-1".into(), 9, &conf, None).unwrap();
    assert_eq!(c.root, PathBuf::from("/data/ckpt"));
    conf.set(
        "heron.statefulstorage.classname",
        "org.apache.heron.statefulstorage.hdfs.HDFSStorage",
    );
    let e = ckptmgr_config(ids(), "ckptmgr-1".into(), 9, &conf, home).unwrap_err();
    assert!(matches!(e, RoleError::Ckptmgr(_)));
    assert!(e.to_string().contains("HDFSStorage"), "{e}");
}

#[test]
fn executor_and_define_flags() {
    let role = parse(&strs(
        "executor --shard 2 --topology-name T --topology-id T-1 --state-manager local:/s \
         --cluster local --role alice --environ default -- a b",
    ))
    .unwrap();
    assert_eq!(role.process_name(), "executor-2");
    assert_eq!(role.user_args(), ["a", "b"]);
    let role = parse(&strs(
        "tmaster --topology-name T --topology-id I --state-manager zk://127.0.0.1:2181/heron \
         --server-port 1 --controller-port 2 --stats-port 3",
    ))
    .unwrap();
    let Role::Tmaster { state_manager, .. } = role else {
        panic!("not tmaster")
    };
    assert_eq!(state_manager.to_string(), "zk://127.0.0.1:2181/heron");
    assert!(parse(&strs(
        "tmaster --topology-name T --topology-id I --state-manager /no/scheme \
         --server-port 1 --controller-port 2 --stats-port 3"
    ))
    .is_err());
    let role = parse(&strs("define --output /tmp/x")).unwrap();
    assert_eq!(role.process_name(), "define");
    assert!(role.user_args().is_empty());
}

#[test]
fn bad_role_lines_are_errors() {
    assert!(parse(&strs("conductor --x 1")).is_err(), "unknown role");
    assert!(parse(&strs("define")).is_err(), "missing --output");
    assert!(parse(&strs(
        "executor --shard x --topology-name T --topology-id I --state-manager local:/s --role u"
    ))
    .is_err());
    assert!(
        parse(&strs(
            "stmgr --topology-name T --topology-id I --state-manager local:/s --stmgr-id s \
                          --data-port 70000 --local-data-port 1 --instance-ids a"
        ))
        .is_err(),
        "port range"
    );
    assert!(parse(&strs(
        "tmaster --topology-name T --topology-id I --state-manager local:/s --server-port 1 \
                          --controller-port 2 --stats-port 3 user-arg-without-dashes"
    ))
    .is_err());
    let ok = |r: Result<HeronTopology, TopologyError>| r;
    let code = run_role(&[OsString::from("define")], |_| {
        ok(Err(TopologyError::EmptyTopologyName))
    });
    assert_eq!(code, EXIT_BAD_TOPOLOGY, "bad flags exit 2");
}

#[test]
fn a_topology_that_does_not_build_exits_2() {
    let out = std::env::temp_dir().join(format!("heron-define-{}", std::process::id()));
    let args: Vec<OsString> = ["define", "--output", out.to_str().unwrap(), "--", "x"]
        .iter()
        .map(OsString::from)
        .collect();
    let code = run_role(&args, |user_args| {
        assert_eq!(user_args, ["x"]);
        Err(TopologyError::NoSpouts("T".into()))
    });
    assert_eq!(code, EXIT_BAD_TOPOLOGY);
    assert!(!out.exists());
}
