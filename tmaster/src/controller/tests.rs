use super::*;
use heron_proto::api::{Bolt, Component, Spout, Topology};

fn plan(state: TopologyState) -> PhysicalPlan {
    let comp = |name: &str| Component {
        name: name.into(),
        ..Component::default()
    };
    PhysicalPlan {
        topology: Topology {
            id: "T-1".into(),
            name: "T".into(),
            state: state as i32,
            spouts: vec![Spout {
                comp: comp("spout"),
                ..Spout::default()
            }],
            bolts: vec![Bolt {
                comp: comp("bolt"),
                ..Bolt::default()
            }],
            ..Topology::default()
        },
        ..PhysicalPlan::default()
    }
}

fn q(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn activate_and_deactivate_flip_the_state() {
    let id = q(&[("topologyid", "T-1")]);
    let running = plan(TopologyState::Running);
    let cmd = parse("/deactivate", &id, "T-1").unwrap();
    let paused = apply(&running, &cmd).unwrap();
    assert_eq!(paused.topology.state, TopologyState::Paused as i32);
    let again = apply(&paused, &cmd).unwrap_err();
    assert_eq!(again.code, StatusCode::TopologyAlreadyDeactive);
    assert_eq!(again.http, 400);

    let cmd = parse("/activate", &id, "T-1").unwrap();
    let back = apply(&paused, &cmd).unwrap();
    assert_eq!(back.topology.state, TopologyState::Running as i32);
    let refused = apply(&back, &cmd).unwrap_err();
    assert_eq!(refused.code, StatusCode::TopologyAlreadyActive);
    assert!(
        refused.to_string().contains("TOPOLOGY_ALREADY_ACTIVE"),
        "{refused}"
    );
}

#[test]
fn the_topology_id_is_checked() {
    let e = parse("/activate", &q(&[]), "T-1").unwrap_err();
    assert!(e.message.contains("missing topologyid"), "{e}");
    let e = parse("/activate", &q(&[("topologyid", "T-2")]), "T-1").unwrap_err();
    assert_eq!(e.code, StatusCode::InvalidTopologyName);
    assert!(e.message.contains("T-2"), "{e}");
    let e = parse("/kill", &q(&[("topologyid", "T-1")]), "T-1").unwrap_err();
    assert_eq!(e.http, 404);
}

#[test]
fn runtime_config_goes_to_the_topology_or_a_component() {
    let cmd = parse(
        "/runtime_config/update",
        &q(&[
            ("topologyid", "T-1"),
            ("runtime-config", "topology.debug:true"),
            ("runtime-config", "bolt:rate:5"),
            ("runtime-config", "_topology_:x:y:z"),
        ]),
        "T-1",
    )
    .unwrap();
    let p = apply(&plan(TopologyState::Running), &cmd).unwrap();
    let kvs: Vec<(String, Option<String>)> = p
        .topology
        .topology_config
        .unwrap()
        .kvs
        .into_iter()
        .map(|kv| (kv.key, kv.value))
        .collect();
    assert_eq!(
        kvs,
        [
            (
                "topology.debug:runtime".to_string(),
                Some("true".to_string())
            ),
            ("x:runtime".to_string(), Some("y:z".to_string())),
        ]
    );
    let bolt = &p.topology.bolts[0].comp.config.kvs;
    assert_eq!(bolt[0].key, "rate:runtime");
    assert_eq!(bolt[0].value.as_deref(), Some("5"));

    let unknown = parse(
        "/runtime_config/update",
        &q(&[("topologyid", "T-1"), ("runtime-config", "nope:k:v")]),
        "T-1",
    )
    .unwrap();
    assert!(apply(&plan(TopologyState::Running), &unknown).is_err());
    for bad in ["novalue", ":k:v"] {
        assert!(parse(
            "/runtime_config/update",
            &q(&[("topologyid", "T-1"), ("runtime-config", bad)]),
            "T-1"
        )
        .is_err());
    }
    assert!(parse(
        "/runtime_config/update",
        &q(&[("topologyid", "T-1")]),
        "T-1"
    )
    .is_err());
}
