//! Start-up failures: they are reported, not hung on.

mod common;

use common::*;
use heron_statemgr::{StateDir, StateManager, StateManagerExt};
use heron_tmaster::TmasterError;

#[test]
fn refuses_a_topology_of_another_id() {
    let f = Fixture::new(2);
    let mut config = f.config.clone();
    config.topology_id = "wc-other".into();
    let err = heron_tmaster::run_with_options(config, f.options()).unwrap_err();
    assert!(
        matches!(&err, TmasterError::InvalidTopology(m) if m.contains("wc-other")),
        "{err}"
    );
    assert!(f.state.get_tmanager_location(NAME).unwrap().is_none());
}

#[test]
fn gives_up_without_a_packing_plan() {
    let f = Fixture::new(2);
    f.state.delete(StateDir::PackingPlans, NAME).unwrap();
    let err = heron_tmaster::run_with_options(f.config.clone(), f.options()).unwrap_err();
    assert!(
        matches!(err, TmasterError::MissingPackingPlan { attempts: 3, .. }),
        "{err}"
    );
}

#[test]
fn waits_for_a_late_packing_plan() {
    let f = Fixture::new(2);
    f.state.delete(StateDir::PackingPlans, NAME).unwrap();
    let mut options = f.options();
    options.packing_plan_attempts = 200;
    let config = f.config.clone();
    let tmaster = std::thread::spawn(move || heron_tmaster::run_with_options(config, options));
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(f.state.get_tmanager_location(NAME).unwrap().is_none());
    f.state
        .set_proto(StateDir::PackingPlans, NAME, &f.plan)
        .unwrap();
    wait_for(TIMEOUT, "the location node", || {
        f.state.get_tmanager_location(NAME).unwrap().is_some()
    });
    f.state.delete(StateDir::TManagers, NAME).unwrap();
    assert!(matches!(join(tmaster), Err(TmasterError::LocationLost(_))));
}

#[test]
fn reports_a_busy_server_port() {
    let f = Fixture::new(2);
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut config = f.config.clone();
    config.server_port = busy.local_addr().unwrap().port();
    let err = heron_tmaster::run_with_options(config, f.options()).unwrap_err();
    assert!(matches!(err, TmasterError::Bind { .. }), "{err}");
}

#[test]
fn refuses_duplicate_component_names() {
    let f = Fixture::new(2);
    let mut t = f.topology.clone();
    t.bolts[0].comp.name = "word".into();
    f.state.set_proto(StateDir::Topologies, NAME, &t).unwrap();
    let err = heron_tmaster::run_with_options(f.config.clone(), f.options()).unwrap_err();
    assert!(
        matches!(&err, TmasterError::InvalidTopology(m) if m.contains("\"word\" is used twice")),
        "{err}"
    );
}
