//! Unit tests of round-robin packing.

use crate::*;
use heron_proto::api::{config::KeyValue, Bolt, Component, Config, Spout, Topology};
use heron_proto::system::{PackingPlan, Resource};
use std::collections::HashMap;

fn kvs(pairs: &[(&str, &str)]) -> Config {
    Config {
        kvs: pairs
            .iter()
            .map(|(k, v)| KeyValue {
                key: k.to_string(),
                value: Some(v.to_string()),
                serialized_value: None,
                r#type: Some(1),
            })
            .collect(),
    }
}

fn comp(name: &str, parallelism: u32) -> Component {
    Component {
        name: name.to_string(),
        class_name: None,
        config: kvs(&[(keys::COMPONENT_PARALLELISM, &parallelism.to_string())]),
        serialized_object: None,
        spec: None,
        cpp_class_info: None,
    }
}

/// A topology with spouts and bolts `(name, parallelism)` and topology config `conf`.
fn topo(spouts: &[(&str, u32)], bolts: &[(&str, u32)], conf: &[(&str, &str)]) -> Topology {
    Topology {
        id: "t-1".into(),
        name: "t".into(),
        spouts: spouts
            .iter()
            .map(|(n, p)| Spout {
                comp: comp(n, *p),
                outputs: vec![],
            })
            .collect(),
        bolts: bolts
            .iter()
            .map(|(n, p)| Bolt {
                comp: comp(n, *p),
                inputs: vec![],
                outputs: vec![],
            })
            .collect(),
        state: 1,
        topology_config: Some(kvs(conf)),
    }
}

/// `(container, component, task, index)` for every instance, in plan order.
fn layout(plan: &PackingPlan) -> Vec<(i32, String, i32, i32)> {
    plan.container_plans
        .iter()
        .flat_map(|c| {
            c.instance_plans
                .iter()
                .map(move |i| (c.id, i.component_name.clone(), i.task_id, i.component_index))
        })
        .collect()
}

#[test]
fn deals_round_robin_with_global_task_ids_and_component_indexes() {
    // No rammap: every component has RAM 0 for ordering, so name order: bolt "a", spout "b".
    let t = topo(&[("b", 3)], &[("a", 2)], &[(keys::STMGRS, "2")]);
    let plan = round_robin(&t, "t-1").unwrap();
    assert_eq!(plan.id, "t-1");
    assert_eq!(
        layout(&plan),
        vec![
            (1, "a".into(), 1, 0),
            (1, "b".into(), 3, 0),
            (1, "b".into(), 5, 2),
            (2, "a".into(), 2, 1),
            (2, "b".into(), 4, 1),
        ]
    );
    assert_eq!(
        plan.container_plans
            .iter()
            .map(|c| c.id)
            .collect::<Vec<_>>(),
        vec![1, 2]
    );
}

#[test]
fn defaults_to_one_container_and_parallelism_one() {
    let mut t = topo(&[("s", 1)], &[("b", 1)], &[]);
    t.topology_config = None;
    t.bolts[0].comp.config.kvs.clear();
    let plan = round_robin(&t, "p").unwrap();
    assert_eq!(plan.container_plans.len(), 1);
    assert_eq!(
        layout(&plan),
        vec![(1, "b".into(), 1, 0), (1, "s".into(), 2, 0)]
    );
}

#[test]
fn container_count_errors_name_the_numbers() {
    let t = topo(&[("s", 2)], &[("b", 1)], &[(keys::STMGRS, "4")]);
    let err = round_robin(&t, "p").unwrap_err();
    assert_eq!(
        err,
        PackingError::TooManyContainers {
            containers: 4,
            instances: 3
        }
    );
    assert!(err.to_string().contains('4') && err.to_string().contains('3'));

    let t = topo(&[("s", 2)], &[], &[(keys::STMGRS, "0")]);
    assert_eq!(
        round_robin(&t, "p").unwrap_err(),
        PackingError::TooFewContainers { containers: 0 }
    );
    let t = topo(&[("s", 2)], &[], &[(keys::STMGRS, "-3")]);
    assert_eq!(
        round_robin(&t, "p").unwrap_err(),
        PackingError::TooFewContainers { containers: -3 }
    );
    let t = topo(&[("s", 2)], &[], &[(keys::STMGRS, "two")]);
    assert!(matches!(
        round_robin(&t, "p").unwrap_err(),
        PackingError::BadConfig { key, .. } if key == keys::STMGRS
    ));
    // Exactly as many containers as instances is fine.
    let t = topo(&[("s", 2)], &[("b", 1)], &[(keys::STMGRS, "3")]);
    assert_eq!(round_robin(&t, "p").unwrap().container_plans.len(), 3);
}

#[test]
fn bad_parallelism_and_duplicate_names_are_errors() {
    let mut t = topo(&[("s", 1)], &[], &[]);
    t.spouts[0].comp.config = kvs(&[(keys::COMPONENT_PARALLELISM, "0")]);
    assert_eq!(
        round_robin(&t, "p").unwrap_err(),
        PackingError::InvalidParallelism {
            component: "s".into(),
            parallelism: 0
        }
    );
    let t = topo(&[("x", 1)], &[("x", 1)], &[]);
    assert_eq!(
        round_robin(&t, "p").unwrap_err(),
        PackingError::DuplicateComponent("x".into())
    );
}

#[test]
fn default_resources_and_padding() {
    // 5 instances over 2 containers: the largest has 3.
    let t = topo(&[("s", 2)], &[("b", 3)], &[(keys::STMGRS, "2")]);
    let plan = round_robin(&t, "p").unwrap();
    for c in &plan.container_plans {
        for i in &c.instance_plans {
            assert_eq!(
                i.resource,
                Resource {
                    cpu: 1.0,
                    ram: GIB,
                    disk: GIB
                }
            );
        }
        // Every container gets the size of the largest (3 instances) plus padding.
        assert_eq!(
            c.required_resource,
            Resource {
                cpu: 3.0 + 1.0,
                ram: 3 * GIB + 2 * GIB,
                disk: 3 * GIB + 12 * GIB
            }
        );
        assert_eq!(c.scheduled_resource, None);
    }
}

#[test]
fn resource_maps_override_and_order_components() {
    let conf = [
        (keys::STMGRS, "2"),
        (keys::COMPONENT_RAMMAP, "small:134217728, big:2147483648"),
        (keys::COMPONENT_CPUMAP, "big:0.5"),
        (keys::COMPONENT_DISKMAP, "small:2147483648"),
        (keys::CONTAINER_RAM_PADDING, "1073741824"),
        (keys::CONTAINER_CPU_PADDING, "2"),
    ];
    let t = topo(&[("small", 2)], &[("big", 2), ("plain", 1)], &conf);
    let plan = round_robin(&t, "p").unwrap();
    // RAM descending: big (2 GiB), small (128 MiB), plain (unset = 0).
    assert_eq!(
        layout(&plan),
        vec![
            (1, "big".into(), 1, 0),
            (1, "small".into(), 3, 0),
            (1, "plain".into(), 5, 0),
            (2, "big".into(), 2, 1),
            (2, "small".into(), 4, 1),
        ]
    );
    let c1 = &plan.container_plans[0];
    let res = |task: i32| {
        c1.instance_plans
            .iter()
            .find(|i| i.task_id == task)
            .unwrap()
            .resource
    };
    assert_eq!(
        res(1),
        Resource {
            cpu: 0.5,
            ram: 2 * GIB,
            disk: GIB
        }
    );
    assert_eq!(
        res(3),
        Resource {
            cpu: 1.0,
            ram: 128 * MIB,
            disk: 2 * GIB
        }
    );
    assert_eq!(
        res(5),
        Resource {
            cpu: 1.0,
            ram: GIB,
            disk: GIB
        }
    );
    // Container 1 is the largest in every dimension; CPU 0.5+1+1+2 = 4.5 rounds to 5.
    let expected = Resource {
        cpu: 5.0,
        ram: 2 * GIB + 128 * MIB + GIB + GIB,
        disk: GIB + 2 * GIB + GIB + 12 * GIB,
    };
    for c in &plan.container_plans {
        assert_eq!(c.required_resource, expected);
    }
}

#[test]
fn explicit_container_sizes_split_what_is_left() {
    let conf = [
        (keys::STMGRS, "1"),
        (keys::COMPONENT_RAMMAP, "a:1073741824"),
        (keys::CONTAINER_RAM, &(6 * GIB).to_string()),
        (keys::CONTAINER_CPU, "5"),
        (keys::CONTAINER_DISK, "999"),
    ];
    let t = topo(&[("a", 1)], &[("b", 2)], &conf);
    let plan = round_robin(&t, "p").unwrap();
    let c = &plan.container_plans[0];
    // 6 GiB - 2 GiB padding - 1 GiB for a = 3 GiB for the two b's.
    let b: Vec<_> = c
        .instance_plans
        .iter()
        .filter(|i| i.component_name == "b")
        .collect();
    assert_eq!(b.len(), 2);
    for i in &b {
        assert_eq!(i.resource.ram, 3 * GIB / 2);
        // 5 - 1 padding = 4 CPUs over 3 instances.
        assert!((i.resource.cpu - 4.0 / 3.0).abs() < 1e-9);
    }
    assert_eq!(
        c.required_resource,
        Resource {
            cpu: 5.0,
            ram: 6 * GIB,
            disk: 999
        }
    );
}

#[test]
fn ram_below_minimum_is_an_error() {
    let t = topo(&[("a", 1)], &[], &[(keys::COMPONENT_RAMMAP, "a:1000")]);
    assert!(matches!(
        round_robin(&t, "p").unwrap_err(),
        PackingError::InsufficientRam { ram: 1000, min, .. } if min == MIN_RAM_PER_INSTANCE
    ));
    // An explicit container too small for its padding leaves nothing for the instances.
    let t = topo(&[("a", 1)], &[], &[(keys::CONTAINER_RAM, &GIB.to_string())]);
    assert!(matches!(
        round_robin(&t, "p").unwrap_err(),
        PackingError::InsufficientRam { .. }
    ));
    let t = topo(&[("a", 1)], &[], &[(keys::COMPONENT_RAMMAP, "a")]);
    assert!(matches!(
        round_robin(&t, "p").unwrap_err(),
        PackingError::BadConfig { key, .. } if key == keys::COMPONENT_RAMMAP
    ));
}

#[test]
fn packing_is_deterministic_whatever_the_declaration_order() {
    let conf = [(keys::STMGRS, "3")];
    let a = topo(&[("s1", 2), ("s2", 3)], &[("b1", 4), ("b2", 1)], &conf);
    let b = topo(&[("s2", 3), ("s1", 2)], &[("b2", 1), ("b1", 4)], &conf);
    let pa = round_robin(&a, "p").unwrap();
    assert_eq!(pa, round_robin(&b, "p").unwrap());
    assert_eq!(pa, round_robin(&a, "p").unwrap());
    // Task ids are 1..=10, each once.
    let mut tasks: Vec<i32> = layout(&pa).iter().map(|l| l.2).collect();
    tasks.sort();
    assert_eq!(tasks, (1..=10).collect::<Vec<_>>());
}

#[test]
fn repack_applies_new_parallelism() {
    let t = topo(&[("s", 1)], &[("b", 1)], &[(keys::STMGRS, "2")]);
    let current = round_robin(&t, "t-1").unwrap();
    let change = HashMap::from([("b".to_string(), 4u32)]);
    let plan = repack(&current, &t, &change, None).unwrap();
    assert_eq!(plan.id, "t-1");
    assert_eq!(plan.container_plans.len(), 2);
    let count = |c: &str| layout(&plan).iter().filter(|l| l.1 == c).count();
    assert_eq!((count("b"), count("s")), (4, 1));
    let plan = repack(&current, &t, &change, Some(5)).unwrap();
    assert_eq!(plan.container_plans.len(), 5);
    let bad = HashMap::from([("nope".to_string(), 2u32)]);
    assert_eq!(
        repack(&current, &t, &bad, None).unwrap_err(),
        PackingError::UnknownComponent("nope".into())
    );
}

#[test]
fn ids_follow_heron() {
    assert_eq!(stmgr_id(3), "stmgr-3");
    assert_eq!(instance_id(2, "word", 7), "container_2_word_7");
    let t = topo(&[("s", 1)], &[("b", 2)], &[(keys::STMGRS, "2")]);
    let plan = round_robin(&t, "p").unwrap();
    assert_eq!(
        container_instance_ids(&plan.container_plans[0]),
        vec!["container_1_b_1", "container_1_s_3"]
    );
}
