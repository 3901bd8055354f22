//! Unit tests of the registration state machine and plan building.

use super::*;
use heron_proto::api::Topology;
use heron_proto::system::{InstanceInfo, StatusCode};

const TIMEOUT: Duration = Duration::from_secs(60);

fn topology() -> Topology {
    Topology {
        id: "wc-1".into(),
        name: "wc".into(),
        spouts: vec![],
        bolts: vec![],
        state: 1,
        topology_config: None,
    }
}

fn stmgr(id: &str, port: i32) -> StMgr {
    StMgr {
        id: id.into(),
        host_name: "127.0.0.1".into(),
        data_port: port,
        local_endpoint: "/unused".into(),
        cwd: None,
        pid: None,
        shell_port: None,
        local_data_port: Some(port + 1),
    }
}

fn instance(container: i32, comp: &str, task: i32, index: i32) -> Instance {
    Instance {
        instance_id: format!("container_{container}_{comp}_{task}"),
        stmgr_id: format!("stmgr-{container}"),
        info: InstanceInfo {
            task_id: task,
            component_index: index,
            component_name: comp.into(),
            params: vec![],
            remote_debugger_port: None,
        },
    }
}

/// stmgr-1 holds tasks 1 and 3, stmgr-2 holds tasks 2 and 4 (reported out of order).
fn request(container: i32, port: i32) -> StMgrRegisterRequest {
    let instances = match container {
        1 => vec![instance(1, "word", 3, 1), instance(1, "count", 1, 0)],
        _ => vec![instance(2, "word", 4, 0), instance(2, "count", 2, 1)],
    };
    StMgrRegisterRequest {
        stmgr: stmgr(&format!("stmgr-{container}"), port),
        instances,
    }
}

fn registry() -> Registry {
    Registry::new(
        topology(),
        ["stmgr-1".to_string(), "stmgr-2".to_string()],
        4,
        None,
        TIMEOUT,
    )
}

fn code(o: &RegisterOutcome) -> StatusCode {
    StatusCode::try_from(o.response.status.status).unwrap()
}

fn published(o: RegisterOutcome) -> Publish {
    match o.plan {
        PlanStep::Publish(p) => p,
        other => panic!("expected a plan to publish, got {other:?}"),
    }
}

#[test]
fn unknown_stmgr_id_is_invalid_and_not_recorded() {
    let mut r = registry();
    let t = Instant::now();
    let mut req = request(1, 100);
    req.stmgr.id = "stmgr-9".into();
    let o = r.register(7, req, t);
    assert_eq!(code(&o), StatusCode::InvalidStmgr);
    assert_eq!(o.plan, PlanStep::Waiting);
    assert!(r.registered().is_empty());
    assert_eq!(r.absent(), vec!["stmgr-1", "stmgr-2"]);
    // The refused connection holds no registration.
    assert_eq!(r.heartbeat(7, t), StatusCode::Notok);
}

#[test]
fn plan_is_built_only_when_every_stmgr_is_present() {
    let mut r = registry();
    let t = Instant::now();
    let o = r.register(1, request(1, 100), t);
    assert_eq!(code(&o), StatusCode::Ok);
    assert_eq!(o.response.pplan, None);
    assert_eq!(o.plan, PlanStep::Waiting);
    assert!(r.pplan().is_none());
    assert_eq!(r.absent(), vec!["stmgr-2"]);

    let o = r.register(2, request(2, 200), t);
    assert_eq!(code(&o), StatusCode::Ok);
    // The response carries the plan that existed before this registration: none.
    assert_eq!(o.response.pplan, None);
    let p = published(o);
    assert_eq!(p.recipients, vec![1, 2]);
    assert_eq!(p.pplan.topology, topology());
    assert_eq!(
        p.pplan
            .stmgrs
            .iter()
            .map(|s| s.id.as_str())
            .collect::<Vec<_>>(),
        vec!["stmgr-1", "stmgr-2"]
    );
    assert_eq!(
        p.pplan
            .instances
            .iter()
            .map(|i| i.info.task_id)
            .collect::<Vec<_>>(),
        vec![1, 2, 3, 4]
    );
    assert_eq!(r.pplan(), Some(&p.pplan));
    assert!(r.absent().is_empty());
}

#[test]
fn plan_does_not_depend_on_registration_order() {
    let t = Instant::now();
    let mut a = registry();
    a.register(1, request(1, 100), t);
    let pa = published(a.register(2, request(2, 200), t));
    let mut b = registry();
    b.register(5, request(2, 200), t);
    let pb = published(b.register(6, request(1, 100), t));
    assert_eq!(pa.pplan, pb.pplan);
    assert_eq!(pb.recipients, vec![6, 5], "recipients in stmgr-id order");
}

#[test]
fn duplicate_within_timeout_is_refused_and_old_kept() {
    let mut r = registry();
    let t0 = Instant::now();
    r.register(1, request(1, 100), t0);
    // A heartbeat at 50 s keeps the registration fresh at 100 s.
    assert_eq!(r.heartbeat(1, t0 + Duration::from_secs(50)), StatusCode::Ok);
    let o = r.register(2, request(1, 111), t0 + Duration::from_secs(100));
    assert_eq!(code(&o), StatusCode::DuplicateStrmgr);
    assert_eq!(o.replaced, None);
    assert_eq!(r.stmgr_of(1), Some("stmgr-1"));
    assert_eq!(r.stmgr_of(2), None);
    assert_eq!(r.heartbeat(2, t0), StatusCode::Notok);
}

#[test]
fn stale_registration_is_replaced() {
    let mut r = registry();
    let t0 = Instant::now();
    r.register(1, request(1, 100), t0);
    let later = t0 + TIMEOUT + Duration::from_secs(1);
    let o = r.register(2, request(1, 111), later);
    assert_eq!(code(&o), StatusCode::Ok);
    assert_eq!(o.replaced, Some(1));
    assert_eq!(r.stmgr_of(2), Some("stmgr-1"));
    assert_eq!(r.heartbeat(1, later), StatusCode::Notok);
    assert_eq!(r.heartbeat(2, later), StatusCode::Ok);
    // The replaced connection closing does not make the new registration absent.
    assert_eq!(r.disconnect(1), None);
    assert_eq!(r.registered(), vec!["stmgr-1"]);
}

#[test]
fn a_connection_registers_once() {
    let mut r = registry();
    let t = Instant::now();
    r.register(1, request(1, 100), t);
    let o = r.register(1, request(2, 200), t);
    assert_eq!(code(&o), StatusCode::Notok);
    assert_eq!(r.absent(), vec!["stmgr-2"]);
}

#[test]
fn re_registration_refreshes_stmgrs_and_keeps_instances() {
    let mut r = registry();
    let t = Instant::now();
    r.register(1, request(1, 100), t);
    let first = published(r.register(2, request(2, 200), t)).pplan;

    assert_eq!(r.disconnect(1).as_deref(), Some("stmgr-1"));
    assert_eq!(r.absent(), vec!["stmgr-1"]);
    assert_eq!(r.pplan(), Some(&first), "no plan change while absent");

    // It comes back on another port and reports its instances differently: the plan keeps
    // the old instances and takes the new stmgr record.
    let mut req = request(1, 300);
    req.instances.pop();
    let o = r.register(3, req, t);
    assert_eq!(code(&o), StatusCode::Ok);
    assert_eq!(o.response.pplan.as_ref(), Some(&first));
    let p = published(o);
    assert_eq!(p.recipients, vec![3, 2]);
    assert_eq!(p.pplan.instances, first.instances);
    assert_eq!(p.pplan.topology, first.topology);
    assert_eq!(p.pplan.stmgrs[0], stmgr("stmgr-1", 300));
    assert_eq!(p.pplan.stmgrs[1], first.stmgrs[1]);
}

#[test]
fn instance_count_mismatch_publishes_nothing() {
    let mut r = registry();
    let t = Instant::now();
    let mut req = request(1, 100);
    req.instances.pop();
    r.register(1, req, t);
    let o = r.register(2, request(2, 200), t);
    assert_eq!(code(&o), StatusCode::Ok);
    assert_eq!(
        o.plan,
        PlanStep::Invalid(PlanError::InstanceCount {
            expected: 4,
            got: 3
        })
    );
    assert!(r.pplan().is_none());
}

#[test]
fn duplicate_task_ids_publish_nothing() {
    let mut r = registry();
    let t = Instant::now();
    let mut req = request(1, 100);
    req.instances[0].info.task_id = 2;
    r.register(1, req, t);
    let o = r.register(2, request(2, 200), t);
    assert_eq!(o.plan, PlanStep::Invalid(PlanError::DuplicateTask(2)));
}

#[test]
fn previous_plan_from_state_keeps_topology_and_instances() {
    let mut old_topology = topology();
    old_topology.state = 2; // PAUSED
    let previous = PhysicalPlan {
        topology: old_topology.clone(),
        stmgrs: vec![stmgr("stmgr-1", 1), stmgr("stmgr-2", 2)],
        instances: vec![
            instance(1, "a", 1, 0),
            instance(2, "a", 2, 1),
            instance(1, "a", 3, 2),
            instance(2, "a", 4, 3),
        ],
    };
    let mut r = Registry::new(
        topology(),
        ["stmgr-1".to_string(), "stmgr-2".to_string()],
        4,
        Some(previous.clone()),
        TIMEOUT,
    );
    let t = Instant::now();
    let o = r.register(1, request(1, 100), t);
    assert_eq!(o.response.pplan.as_ref(), Some(&previous));
    let p = published(r.register(2, request(2, 200), t)).pplan;
    assert_eq!(p.topology, old_topology);
    assert_eq!(p.instances, previous.instances);
    assert_eq!(p.stmgrs, vec![stmgr("stmgr-1", 100), stmgr("stmgr-2", 200)]);
}

#[test]
fn heartbeat_from_unregistered_connection_is_notok() {
    let mut r = registry();
    assert_eq!(r.heartbeat(42, Instant::now()), StatusCode::Notok);
    assert_eq!(r.disconnect(42), None);
}
