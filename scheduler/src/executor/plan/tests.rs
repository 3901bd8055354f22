use super::*;
use heron_proto::system::{ContainerPlan, InstancePlan, Resource};
use std::path::PathBuf;

fn res() -> Resource {
    Resource {
        cpu: 1.0,
        ram: 1,
        disk: 1,
    }
}

fn inst(component: &str, task: i32, index: i32) -> InstancePlan {
    InstancePlan {
        component_name: component.into(),
        task_id: task,
        component_index: index,
        resource: res(),
    }
}

fn plan() -> PackingPlan {
    PackingPlan {
        id: "T-1".into(),
        container_plans: vec![
            ContainerPlan {
                id: 1,
                instance_plans: vec![inst("split", 3, 0), inst("word", 1, 0)],
                required_resource: res(),
                scheduled_resource: None,
            },
            ContainerPlan {
                id: 2,
                instance_plans: vec![inst("word", 2, 1)],
                required_resource: res(),
                scheduled_resource: None,
            },
        ],
    }
}

fn cfg(shard: i32) -> ExecutorConfig {
    ExecutorConfig {
        shard,
        topology_name: "T".into(),
        topology_id: "T-1".into(),
        state_manager: heron_statemgr::StateManagerSpec::Local(PathBuf::from("/state")),
        cluster: "local".into(),
        role: "u".into(),
        environ: "default".into(),
        user_args: vec!["--x".into(), "1".into()],
        binary: PathBuf::from("/bin/topo"),
        working_dir: PathBuf::from("/wd"),
        host: "127.0.0.1".into(),
        fixed_ports: false,
    }
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn shard_zero_runs_the_tmaster() {
    let ports = ContainerPorts::Tmaster {
        server: 1,
        controller: 2,
        stats: 3,
        ckptmgr: None,
    };
    let specs = container_processes(&cfg(0), &plan(), ports, None).unwrap();
    assert_eq!(
        specs,
        vec![ProcessSpec {
            name: "tmaster".into(),
            args: words(
                "heron-role tmaster --topology-name T --topology-id T-1 --state-manager local:/state \
                 --host 127.0.0.1 --server-port 1 --controller-port 2 --stats-port 3 -- --x 1"
            ),
        }]
    );
}

#[test]
fn shard_n_runs_its_stmgr_and_instances() {
    let ports = ContainerPorts::Stmgr {
        data: 10,
        local_data: 11,
        shell: 13,
        ckptmgr: None,
    };
    let specs = container_processes(&cfg(1), &plan(), ports, None).unwrap();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["stmgr-1", "container_1_word_1", "container_1_split_3"]
    );
    assert_eq!(
        specs[0].args,
        words(
            "heron-role stmgr --topology-name T --topology-id T-1 --state-manager local:/state \
             --stmgr-id stmgr-1 --host 127.0.0.1 --data-port 10 --local-data-port 11 \
             --shell-port 13 --instance-ids container_1_word_1,container_1_split_3 -- --x 1"
        )
    );
    assert_eq!(
        specs[2].args,
        words(
            "heron-role instance --topology-name T --topology-id T-1 \
             --instance-id container_1_split_3 --component-name split --task-id 3 \
             --component-index 0 --stmgr-id stmgr-1 --stmgr-port 11 -- --x 1"
        )
    );
    let two = container_processes(&cfg(2), &plan(), ports, None).unwrap();
    assert_eq!(two.len(), 2);
    assert_eq!(two[1].name, "container_2_word_2");
}

#[test]
fn unknown_container_or_wrong_ports_are_errors() {
    let stmgr = ContainerPorts::Stmgr {
        data: 10,
        local_data: 11,
        shell: 13,
        ckptmgr: None,
    };
    let err = container_processes(&cfg(3), &plan(), stmgr, None).unwrap_err();
    assert!(err.to_string().contains("no container 3"), "{err}");
    assert!(container_processes(&cfg(0), &plan(), stmgr, None).is_err());
}

#[test]
fn picked_ports_are_distinct_and_nonzero() {
    match ContainerPorts::pick(0, false).unwrap() {
        ContainerPorts::Tmaster {
            server,
            controller,
            stats,
            ckptmgr: None,
        } => {
            assert!(server > 0 && controller > 0 && stats > 0);
            assert!(server != controller && controller != stats && server != stats);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        ContainerPorts::pick(4, false).unwrap(),
        ContainerPorts::Stmgr { ckptmgr: None, .. }
    ));
    match ContainerPorts::pick(0, true).unwrap() {
        ContainerPorts::Tmaster {
            server,
            controller,
            stats,
            ckptmgr: Some(c),
        } => {
            let mut all = vec![server, controller, stats, c];
            all.sort();
            all.dedup();
            assert_eq!(all.len(), 4, "distinct");
        }
        other => panic!("{other:?}"),
    }
    match ContainerPorts::pick(1, true).unwrap() {
        ContainerPorts::Stmgr {
            data,
            local_data,
            shell,
            ckptmgr: Some(c),
        } => {
            let mut all = vec![data, local_data, shell, c];
            all.sort();
            all.dedup();
            assert_eq!(all.len(), 4, "distinct ports");
        }
        other => panic!("{other:?}"),
    }
}

fn topology(mode: Option<&str>) -> api::Topology {
    let kvs = mode
        .map(|m| api::config::KeyValue {
            key: "topology.reliability.mode".into(),
            value: Some(m.into()),
            ..Default::default()
        })
        .into_iter()
        .collect();
    api::Topology {
        name: "T".into(),
        topology_config: Some(api::Config { kvs }),
        ..Default::default()
    }
}

#[test]
fn only_effectively_once_topologies_are_stateful() {
    assert!(is_effectively_once(&topology(Some("EFFECTIVELY_ONCE"))));
    for mode in [None, Some("ATLEAST_ONCE"), Some("ATMOST_ONCE")] {
        assert!(!is_effectively_once(&topology(mode)), "{mode:?}");
    }
    assert!(!is_effectively_once(&api::Topology::default()));
}

#[test]
fn effectively_once_containers_run_a_checkpoint_manager() {
    let ports = ContainerPorts::Tmaster {
        server: 1,
        controller: 2,
        stats: 3,
        ckptmgr: Some(4),
    };
    let specs = container_processes(&cfg(0), &plan(), ports, None).unwrap();
    assert_eq!(
        specs,
        vec![
            ProcessSpec {
                name: "tmaster".into(),
                args: words(
                    "heron-role tmaster --topology-name T --topology-id T-1 \
                     --state-manager local:/state --host 127.0.0.1 --server-port 1 \
                     --controller-port 2 --stats-port 3 --ckptmgr-port 4 -- --x 1"
                ),
            },
            ProcessSpec {
                name: "ckptmgr-0".into(),
                args: words(
                    "heron-role ckptmgr --topology-name T --topology-id T-1 \
                     --ckptmgr-id ckptmgr-0 --port 4 -- --x 1"
                ),
            },
        ]
    );

    let ports = ContainerPorts::Stmgr {
        data: 10,
        local_data: 11,
        shell: 13,
        ckptmgr: Some(12),
    };
    let specs = container_processes(&cfg(1), &plan(), ports, None).unwrap();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "stmgr-1",
            "ckptmgr-1",
            "container_1_word_1",
            "container_1_split_3"
        ]
    );
    assert_eq!(
        specs[0].args,
        words(
            "heron-role stmgr --topology-name T --topology-id T-1 --state-manager local:/state \
             --stmgr-id stmgr-1 --host 127.0.0.1 --data-port 10 --local-data-port 11 \
             --shell-port 13 --instance-ids container_1_word_1,container_1_split_3 --ckptmgr-port 12 -- --x 1"
        )
    );
    assert_eq!(
        specs[1].args,
        words(
            "heron-role ckptmgr --topology-name T --topology-id T-1 \
             --ckptmgr-id ckptmgr-1 --port 12 -- --x 1"
        )
    );
    assert!(
        specs[2..]
            .iter()
            .all(|s| !s.args.iter().any(|a| a.contains("ckptmgr"))),
        "instances do not talk to the checkpoint manager"
    );
}
