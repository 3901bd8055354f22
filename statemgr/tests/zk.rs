//! The ZooKeeper state manager against a real ZooKeeper server (see `support` for where the
//! server comes from).

mod support;

use heron_proto::system::ExecutionState;
use heron_statemgr::{
    from_config, NodeEvent, NodeWatch, StateDir, StateError, StateManager, StateManagerExt,
    StateManagerSpec, ZkConfig, ZkStateManager, KEY_CLASS, KEY_CONNECTION_STRING, KEY_ROOT_PATH,
};
use heron_testkit::wait_for;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use support::{ctx, WAIT};

macro_rules! ctx_or_skip {
    () => {
        match ctx() {
            Some(c) => c,
            None => return,
        }
    };
}

fn next(w: &NodeWatch) -> NodeEvent {
    w.recv_timeout(WAIT)
        .unwrap_or_else(|e| panic!("no watch event within {WAIT:?}: {e}"))
}

fn all_bytes() -> Vec<u8> {
    (0..=255u8).chain((0..=255u8).rev()).collect()
}

#[test]
fn set_get_list_delete_round_trip() {
    let c = ctx_or_skip!();
    let sm = c.open();
    assert_eq!(sm.get(StateDir::PackingPlans, "wc").unwrap(), None);
    assert!(sm.list(StateDir::PackingPlans).unwrap().is_empty());

    // byte-for-byte: every byte value, an empty value, a large value
    let big: Vec<u8> = (0..700_000u32).map(|i| (i * 7 + i / 13) as u8).collect();
    sm.set(StateDir::PackingPlans, "wc", &all_bytes()).unwrap();
    sm.set(StateDir::PackingPlans, "empty", b"").unwrap();
    sm.set(StateDir::PackingPlans, "big", &big).unwrap();
    sm.set(StateDir::PackingPlans, "a-first", b"x").unwrap();
    assert_eq!(
        sm.get(StateDir::PackingPlans, "wc").unwrap().unwrap(),
        all_bytes()
    );
    assert_eq!(
        sm.get(StateDir::PackingPlans, "empty").unwrap(),
        Some(vec![])
    );
    assert_eq!(sm.get(StateDir::PackingPlans, "big").unwrap().unwrap(), big);
    assert_eq!(
        sm.list(StateDir::PackingPlans).unwrap(),
        vec!["a-first", "big", "empty", "wc"]
    );
    assert!(sm.list(StateDir::PPlans).unwrap().is_empty());

    // overwrite; seen by another session
    sm.set(StateDir::PackingPlans, "wc", b"v2").unwrap();
    let other = c.open();
    assert_eq!(
        other.get(StateDir::PackingPlans, "wc").unwrap().unwrap(),
        b"v2"
    );

    sm.delete(StateDir::PackingPlans, "wc").unwrap();
    sm.delete(StateDir::PackingPlans, "wc").unwrap(); // missing is fine
    assert_eq!(other.get(StateDir::PackingPlans, "wc").unwrap(), None);
    assert_eq!(
        other.list(StateDir::PackingPlans).unwrap(),
        vec!["a-first", "big", "empty"]
    );

    assert!(matches!(
        sm.set(StateDir::Topologies, "a/b", b""),
        Err(StateError::InvalidName(_))
    ));
    assert_eq!(
        sm.describe(),
        format!("zk://{}{}", c.server.connect, c.root)
    );
}

#[test]
fn typed_protos_round_trip() {
    let c = ctx_or_skip!();
    let sm = c.open();
    let es = ExecutionState {
        topology_name: "wc".into(),
        topology_id: "wc-1".into(),
        submission_time: Some(5),
        submission_user: Some("me".into()),
        cluster: "local".into(),
        environ: "default".into(),
        role: "me".into(),
        release_state: None,
    };
    sm.set_proto(StateDir::ExecutionState, "wc", &es).unwrap();
    assert_eq!(c.open().get_execution_state("wc").unwrap(), Some(es));
    sm.set(StateDir::Topologies, "wc", b"\xff\xff\xff").unwrap();
    assert!(matches!(
        sm.get_topology("wc"),
        Err(StateError::Corrupted { .. })
    ));
}

#[test]
fn create_twice_is_already_exists() {
    let c = ctx_or_skip!();
    let sm = c.open();
    let other = c.open();
    for ephemeral in [false, true] {
        let dir = if ephemeral {
            StateDir::TManagers
        } else {
            StateDir::Topologies
        };
        sm.create(dir, "wc", b"first", ephemeral).unwrap();
        for who in [&sm, &other] {
            match who.create(dir, "wc", b"second", ephemeral) {
                Err(StateError::AlreadyExists { dir: d, topology }) => {
                    assert_eq!(d, dir.name());
                    assert_eq!(topology, "wc");
                }
                r => panic!("create twice ({dir:?}): {r:?}"),
            }
        }
        assert_eq!(sm.get(dir, "wc").unwrap().unwrap(), b"first");
    }
}

#[test]
fn ephemeral_node_goes_with_its_session_persistent_stays() {
    let c = ctx_or_skip!();
    let observer = c.open();
    let tmaster = c.open();
    tmaster
        .create(StateDir::TManagers, "wc", b"host:1234", true)
        .unwrap();
    tmaster
        .create(StateDir::PPlans, "wc", b"plan", false)
        .unwrap();
    assert_eq!(
        observer.get(StateDir::TManagers, "wc").unwrap().unwrap(),
        b"host:1234"
    );

    let t = Instant::now();
    drop(tmaster);
    assert!(
        t.elapsed() < Duration::from_secs(6),
        "drop took {:?}",
        t.elapsed()
    );
    // the session is closed on drop, so the node is gone right away (not after 30 s)
    wait_for(WAIT, "the ephemeral node to go", || {
        observer.get(StateDir::TManagers, "wc").unwrap().is_none()
    });
    assert_eq!(
        observer.get(StateDir::PPlans, "wc").unwrap().unwrap(),
        b"plan"
    );
    // a new tmaster can register now
    observer
        .create(StateDir::TManagers, "wc", b"host:5678", true)
        .unwrap();
}

#[test]
fn watch_reports_changes_and_deletion_by_another_client() {
    let c = ctx_or_skip!();
    let watcher = c.open();
    let writer = c.open();
    let w = watcher.watch(StateDir::PPlans, "wc").unwrap();
    assert_eq!(next(&w), NodeEvent::Changed(None));

    writer.set(StateDir::PPlans, "wc", &all_bytes()).unwrap();
    assert_eq!(next(&w), NodeEvent::Changed(Some(all_bytes())));
    writer.set(StateDir::PPlans, "wc", b"v2").unwrap();
    assert_eq!(next(&w), NodeEvent::Changed(Some(b"v2".to_vec())));
    writer.delete(StateDir::PPlans, "wc").unwrap();
    assert_eq!(next(&w), NodeEvent::Changed(None));
    // re-armed after the deletion: a re-creation is seen too
    writer.create(StateDir::PPlans, "wc", b"v3", false).unwrap();
    assert_eq!(next(&w), NodeEvent::Changed(Some(b"v3".to_vec())));
    // nothing else happened
    assert!(w.recv_timeout(Duration::from_millis(300)).is_err());

    // a watch on an existing node starts with its value
    let w2 = writer.watch(StateDir::PPlans, "wc").unwrap();
    assert_eq!(next(&w2), NodeEvent::Changed(Some(b"v3".to_vec())));
}

#[test]
fn watch_ends_with_session_lost_when_the_manager_is_dropped() {
    let c = ctx_or_skip!();
    let sm = c.open();
    let w = sm.watch(StateDir::TManagers, "wc").unwrap();
    assert_eq!(next(&w), NodeEvent::Changed(None));
    let dropped_watch = sm.watch(StateDir::PPlans, "wc").unwrap();
    drop(dropped_watch); // cancelled: must not keep the session open
    let t = Instant::now();
    drop(sm);
    assert!(
        t.elapsed() < Duration::from_secs(6),
        "drop took {:?}",
        t.elapsed()
    );
    assert_eq!(next(&w), NodeEvent::SessionLost);
    assert!(w.recv_timeout(Duration::from_secs(2)).is_err()); // disconnected
}

#[test]
fn session_expiry_is_reported_to_watches_and_calls() {
    let c = ctx_or_skip!();
    let observer = c.open();
    // The tmaster reaches the server through a proxy that we cut for longer than its session
    // timeout (4 s, the server's minimum with tickTime=2000): a real expiry.
    let proxy = support::proxy::Proxy::start(&c.server.connect);
    let mut config = c.config();
    config.connect = proxy.addr.to_string();
    config.session_timeout = Duration::from_secs(4);
    let tmaster = ZkStateManager::connect(config).unwrap();
    tmaster
        .create(StateDir::TManagers, "wc", b"loc", true)
        .unwrap();
    let own = tmaster.watch(StateDir::TManagers, "wc").unwrap();
    assert_eq!(next(&own), NodeEvent::Changed(Some(b"loc".to_vec())));
    let seen = observer.watch(StateDir::TManagers, "wc").unwrap();
    assert_eq!(next(&seen), NodeEvent::Changed(Some(b"loc".to_vec())));
    assert!(tmaster.is_session_live());

    let cut_at = Instant::now();
    proxy.cut();

    // the server expires the session: others see the ephemeral node go
    assert_eq!(next(&seen), NodeEvent::Changed(None));
    assert_eq!(observer.get(StateDir::TManagers, "wc").unwrap(), None);
    // the owner's watch ends with SessionLost (it cannot see its node go while cut off)
    assert_eq!(next(&own), NodeEvent::SessionLost);
    assert!(own.recv_timeout(Duration::from_secs(2)).is_err());
    eprintln!("session lost {:?} after the cut", cut_at.elapsed());
    assert!(!tmaster.is_session_live());

    // healing the network does not bring the session back: calls fail clearly
    proxy.heal();
    match tmaster.get(StateDir::TManagers, "wc") {
        Err(e @ StateError::SessionExpired { .. }) => {
            assert!(e.to_string().contains("ephemeral nodes are gone"), "{e}")
        }
        r => panic!("get after expiry: {r:?}"),
    }
    // a new session (the restarted tmaster) can register again
    let restarted = c.open();
    restarted
        .create(StateDir::TManagers, "wc", b"loc2", true)
        .unwrap();
    assert_eq!(next(&seen), NodeEvent::Changed(Some(b"loc2".to_vec())));
}

#[test]
fn short_disconnection_keeps_session_ephemeral_node_and_watch() {
    let c = ctx_or_skip!();
    let observer = c.open();
    let proxy = support::proxy::Proxy::start(&c.server.connect);
    let mut config = c.config();
    config.connect = proxy.addr.to_string();
    config.session_timeout = Duration::from_secs(10);
    let tmaster = ZkStateManager::connect(config).unwrap();
    tmaster
        .create(StateDir::TManagers, "wc", b"loc", true)
        .unwrap();
    let w = tmaster.watch(StateDir::PPlans, "wc").unwrap();
    assert_eq!(next(&w), NodeEvent::Changed(None));

    proxy.cut();
    observer.set(StateDir::PPlans, "wc", b"during").unwrap();
    std::thread::sleep(Duration::from_secs(1));
    proxy.heal();

    // the change made while cut off is delivered after the reconnection
    assert_eq!(next(&w), NodeEvent::Changed(Some(b"during".to_vec())));
    assert!(tmaster.is_session_live());
    assert_eq!(
        tmaster.get(StateDir::TManagers, "wc").unwrap().unwrap(),
        b"loc"
    );
    assert_eq!(
        observer.get(StateDir::TManagers, "wc").unwrap().unwrap(),
        b"loc"
    );
}

#[test]
fn delete_topology_removes_every_node() {
    let c = ctx_or_skip!();
    let sm = c.open();
    for dir in StateDir::ALL {
        if dir == StateDir::TManagers {
            sm.create(dir, "wc", b"loc", true).unwrap();
        } else {
            sm.set(dir, "wc", dir.name().as_bytes()).unwrap();
        }
        sm.set(dir, "other", b"keep").unwrap_or_else(|e| {
            // TManagers holds only ephemeral nodes in Heron, but set works there too
            panic!("{dir:?}: {e}")
        });
    }
    for dir in StateDir::ALL {
        assert_eq!(sm.list(dir).unwrap(), vec!["other", "wc"], "{dir:?}");
    }
    sm.delete_topology("wc").unwrap();
    for dir in StateDir::ALL {
        assert_eq!(sm.get(dir, "wc").unwrap(), None, "{dir:?}");
        assert_eq!(sm.list(dir).unwrap(), vec!["other"], "{dir:?}");
    }
    sm.delete_topology("wc").unwrap(); // again: nothing to do
}

#[tokio::test(flavor = "current_thread")]
async fn works_when_called_inside_a_tokio_runtime() {
    let c = ctx_or_skip!();
    // All of these block the (only) runtime thread; the ZooKeeper client runs on its own
    // thread, so they must neither panic nor deadlock.
    let sm = c.open();
    sm.set(StateDir::PPlans, "wc", b"p").unwrap();
    assert_eq!(sm.get(StateDir::PPlans, "wc").unwrap().unwrap(), b"p");
    let w = sm.watch(StateDir::PPlans, "wc").unwrap();
    assert_eq!(next(&w), NodeEvent::Changed(Some(b"p".to_vec())));
    sm.delete(StateDir::PPlans, "wc").unwrap();
    assert_eq!(next(&w), NodeEvent::Changed(None));
    // and from a spawned task
    let sm = std::sync::Arc::new(sm);
    let sm2 = sm.clone();
    tokio::spawn(async move { sm2.set(StateDir::PPlans, "wc", b"q").unwrap() })
        .await
        .unwrap();
    assert_eq!(next(&w), NodeEvent::Changed(Some(b"q".to_vec())));
    drop(sm);
    assert_eq!(next(&w), NodeEvent::SessionLost);
}

#[test]
fn spec_and_config_open_zookeeper() {
    let c = ctx_or_skip!();
    let spec: StateManagerSpec = format!("zk://{}{}", c.server.connect, c.root)
        .parse()
        .unwrap();
    let sm = spec.open().unwrap();
    assert_eq!(sm.describe(), spec.to_string());
    sm.set(StateDir::Schedulers, "wc", b"sched").unwrap();

    let map: BTreeMap<String, String> = [
        (
            KEY_CLASS,
            "org.apache.heron.statemgr.zookeeper.curator.CuratorStateManager",
        ),
        (KEY_CONNECTION_STRING, c.server.connect.as_str()),
        (KEY_ROOT_PATH, c.root.as_str()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let from_cfg = from_config(&map).unwrap();
    assert_eq!(
        from_cfg.get(StateDir::Schedulers, "wc").unwrap().unwrap(),
        b"sched"
    );
}

#[test]
fn connecting_to_no_server_fails_in_time() {
    // no fixture: a port nothing listens on
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut config = ZkConfig::new(format!("127.0.0.1:{port}"), "/heron");
    config.connect_timeout = Duration::from_secs(2);
    let t = Instant::now();
    match ZkStateManager::connect(config) {
        Err(e @ StateError::Connect { .. }) => {
            assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}")
        }
        r => panic!("connect to nothing: {r:?}"),
    }
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());

    match ZkStateManager::connect(ZkConfig::new("h:1", "heron")) {
        Err(e @ StateError::Config { .. }) => assert!(e.to_string().contains("root.path"), "{e}"),
        r => panic!("bad root: {r:?}"),
    }
}
