//! The tmaster over real TCP: location node, registration, plan push, heartbeats,
//! re-registration, and exit when the location node goes away.

mod common;

use common::*;
use heron_proto::stmgr::NewPhysicalPlanMessage;
use heron_proto::system::{PhysicalPlan, StatusCode};
use heron_proto::tmanager::{MetricDatum, PublishMetrics, TManagerLocation};
use heron_proto::ReqId;
use heron_statemgr::{StateDir, StateManager, StateManagerExt};
use heron_tmaster::TmasterError;

fn check_plan(f: &Fixture, plan: &PhysicalPlan, ports: [i32; 2]) {
    assert_eq!(plan.topology, f.topology);
    let stmgrs: Vec<_> = plan
        .stmgrs
        .iter()
        .map(|s| (s.id.as_str(), s.data_port))
        .collect();
    assert_eq!(stmgrs, vec![("stmgr-1", ports[0]), ("stmgr-2", ports[1])]);
    let mut expected = f.instances(1);
    expected.extend(f.instances(2));
    expected.sort_by_key(|i| i.info.task_id);
    assert_eq!(plan.instances, expected);
    assert_eq!(
        plan.instances
            .iter()
            .map(|i| i.info.task_id)
            .collect::<Vec<_>>(),
        vec![1, 2, 3, 4]
    );
}

#[test]
fn registers_pushes_the_plan_and_answers_heartbeats() {
    let f = Fixture::new(2);
    let tmaster = f.start();

    let location = f.state.get_tmanager_location(NAME).unwrap().unwrap();
    assert_eq!(
        location,
        TManagerLocation {
            topology_name: NAME.into(),
            topology_id: ID.into(),
            host: "127.0.0.1".into(),
            controller_port: i32::from(f.config.controller_port),
            server_port: i32::from(f.config.server_port),
            stats_port: Some(i32::from(f.config.stats_port)),
        }
    );

    let mut s1 = Client::connect(f.config.server_port);
    let r = s1.register(&f.register_request(1, 5001));
    assert_eq!(status_of(&r), StatusCode::Ok);
    assert_eq!(r.pplan, None);
    assert_eq!(s1.heartbeat(), StatusCode::Ok);
    assert!(
        f.state.get_physical_plan(NAME).unwrap().is_none(),
        "no plan while stmgr-2 is absent"
    );

    let mut s2 = Client::connect(f.config.server_port);
    let r = s2.register(&f.register_request(2, 5002));
    assert_eq!(status_of(&r), StatusCode::Ok);
    let pushed1 = s1.recv_as::<NewPhysicalPlanMessage>().new_pplan;
    let pushed2 = s2.recv_as::<NewPhysicalPlanMessage>().new_pplan;
    assert_eq!(pushed1, pushed2);
    check_plan(&f, &pushed1, [5001, 5002]);
    assert_eq!(
        f.state.get_physical_plan(NAME).unwrap(),
        Some(pushed1.clone())
    );
    assert_eq!(s2.heartbeat(), StatusCode::Ok);

    // A heartbeat on a connection that never registered is refused; metrics are accepted
    // silently and the connection keeps working.
    let mut other = Client::connect(f.config.server_port);
    other.send(
        &ReqId::ZERO,
        &PublishMetrics {
            metrics: vec![MetricDatum {
                component_name: "word".into(),
                instance_id: "container_1_word_3".into(),
                name: "__emit-count/default".into(),
                value: "12".into(),
                timestamp: 1,
            }],
            exceptions: vec![],
        },
    );
    assert_eq!(other.heartbeat(), StatusCode::Notok);

    // stmgr-1 again while the first is alive and heartbeating: duplicate.
    let r = other.register(&f.register_request(1, 6001));
    assert_eq!(status_of(&r), StatusCode::DuplicateStrmgr);

    // stmgr-1 goes away and comes back on another port: the plan is rebuilt with the new
    // port and pushed to both; the response carries the previous plan.
    drop(s1);
    let mut s1 = Client::connect(f.config.server_port);
    let r = wait_for(TIMEOUT, "the disconnect to be noticed", || {
        let r = s1.register(&f.register_request(1, 6001));
        (status_of(&r) != StatusCode::DuplicateStrmgr).then_some(r)
    });
    assert_eq!(status_of(&r), StatusCode::Ok);
    assert_eq!(r.pplan.as_ref(), Some(&pushed1));
    let again1 = s1.recv_as::<NewPhysicalPlanMessage>().new_pplan;
    let again2 = s2.recv_as::<NewPhysicalPlanMessage>().new_pplan;
    assert_eq!(again1, again2);
    check_plan(&f, &again1, [6001, 5002]);
    assert_eq!(f.state.get_physical_plan(NAME).unwrap(), Some(again1));

    // Deleting the location node (as `heron kill` does) stops the tmaster.
    f.state.delete(StateDir::TManagers, NAME).unwrap();
    assert!(matches!(join(tmaster), Err(TmasterError::LocationLost(n)) if n == NAME));
}

#[test]
fn a_changed_packing_plan_deletes_the_pplan_and_stops() {
    let f = Fixture::new(2);
    let tmaster = f.start();
    let mut s1 = Client::connect(f.config.server_port);
    let mut s2 = Client::connect(f.config.server_port);
    assert_eq!(
        status_of(&s1.register(&f.register_request(1, 1))),
        StatusCode::Ok
    );
    assert_eq!(
        status_of(&s2.register(&f.register_request(2, 2))),
        StatusCode::Ok
    );
    s1.recv_as::<NewPhysicalPlanMessage>();
    assert!(f.state.get_physical_plan(NAME).unwrap().is_some());

    let smaller = heron_packer::round_robin(&topology(1), ID).unwrap();
    f.state
        .set_proto(StateDir::PackingPlans, NAME, &smaller)
        .unwrap();
    assert!(matches!(
        join(tmaster),
        Err(TmasterError::PackingPlanChanged(_))
    ));
    assert!(f.state.get_physical_plan(NAME).unwrap().is_none());
    // It withdrew its location on the way out.
    assert!(f.state.get_tmanager_location(NAME).unwrap().is_none());
}

#[test]
fn keeps_a_previous_plan_of_the_same_topology() {
    let f = Fixture::new(2);
    // A plan left by an earlier tmaster, with the topology PAUSED.
    let mut old = f.topology.clone();
    old.state = 2;
    let mut instances = f.instances(1);
    instances.extend(f.instances(2));
    instances.sort_by_key(|i| i.info.task_id);
    let previous = PhysicalPlan {
        topology: old.clone(),
        stmgrs: vec![],
        instances,
    };
    f.state
        .set_proto(StateDir::PPlans, NAME, &previous)
        .unwrap();
    let tmaster = f.start();
    let mut s1 = Client::connect(f.config.server_port);
    let r = s1.register(&f.register_request(1, 7001));
    assert_eq!(r.pplan.as_ref(), Some(&previous));
    let mut s2 = Client::connect(f.config.server_port);
    s2.register(&f.register_request(2, 7002));
    let plan = s2.recv_as::<NewPhysicalPlanMessage>().new_pplan;
    assert_eq!(plan.topology, old, "the stored topology state is kept");
    assert_eq!(plan.instances, previous.instances);
    assert_eq!(plan.stmgrs.len(), 2);
    f.state.delete(StateDir::TManagers, NAME).unwrap();
    assert!(join(tmaster).is_err());
}
