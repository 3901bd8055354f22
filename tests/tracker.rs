//! The tracker's REST API against a running WordCount (real processes): every endpoint, its
//! JSON shape and values, and 4xx answers for bad requests.

mod support;
#[path = "../statemgr/tests/support/mod.rs"]
mod zk;

use heron_statemgr::StateManagerSpec;
use heron_tracker::Cluster;
use serde_json::Value;
use std::net::SocketAddr;
use std::time::Duration;
use support::http::get;
use support::{example, fresh_example, wait_for, TestEnv};

const Q: &str = "cluster=local&environ=default&topology=WordCount";

fn start_tracker(env: &TestEnv) -> SocketAddr {
    support::local_tracker(env).addr
}

fn ok(addr: SocketAddr, path: &str) -> Value {
    let got = get(addr, path);
    assert_eq!(got.status, 200, "GET {path}: {}", got.body);
    got.json()
}

/// The sum over instances of one metric of `/topologies/metrics` (interval -1: all).
fn total(addr: SocketAddr, component: &str, metric: &str) -> f64 {
    total_in(addr, Q, component, metric)
}

fn total_in(addr: SocketAddr, q: &str, component: &str, metric: &str) -> f64 {
    let m = ok(
        addr,
        &format!("/topologies/metrics?{q}&component={component}&metricname={metric}&interval=-1"),
    );
    m["metrics"][metric]
        .as_object()
        .map(|o| {
            o.values()
                .filter_map(|v| v.as_str().and_then(|s| s.parse::<f64>().ok()))
                .sum()
        })
        .unwrap_or(0.0)
}

#[test]
fn tracker_api_against_word_count() {
    let mut env = TestEnv::new();
    let submitted = env.submit(
        "WordCount",
        &example("word_count"),
        &["--containers", "2", "--parallelism", "2"],
    );
    assert!(submitted.status.success(), "submit failed");
    let said = String::from_utf8_lossy(&submitted.stdout).to_string();
    assert!(
        said.lines().any(|l| l.contains("tracker:")
            && l.contains(
                "http://127.0.0.1:8888/?cluster=local&environ=default&topology=WordCount"
            )),
        "submit output: {said}"
    );
    let addr = start_tracker(&env);

    assert_eq!(ok(addr, "/health"), Value::from("ok"));
    assert_eq!(ok(addr, "/clusters"), serde_json::json!(["local"]));
    let tops = ok(addr, "/topologies");
    assert_eq!(
        tops["local"]["tester"]["default"],
        serde_json::json!(["WordCount"]),
        "{tops}"
    );

    // Metrics flow: the emit count grows between two calls.
    let emit = "__emit-count/default";
    let first = wait_for(Duration::from_secs(60), "spout emit counts", || {
        let t = total(addr, "sentence", emit);
        (t > 0.0).then_some(t)
    });
    let second = wait_for(Duration::from_secs(30), "growing emit counts", || {
        let t = total(addr, "sentence", emit);
        (t > first).then_some(t)
    });
    assert!(second > first);
    wait_for(Duration::from_secs(30), "executed counts", || {
        (total(addr, "count", "__execute-count/default") > 0.0).then_some(())
    });

    let states = ok(addr, "/topologies/states");
    let st = &states["local"]["default"]["WordCount"];
    assert_eq!(st["status"], "Running", "{states}");
    assert_eq!(st["has_physical_plan"], true);

    let logical = ok(addr, &format!("/topologies/logicalplan?{Q}"));
    assert!(logical["spouts"]["sentence"]["outputs"][0]["stream_name"] == "default");
    let split_in = &logical["bolts"]["split"]["inputs"][0];
    assert_eq!(split_in["component_name"], "sentence");
    assert_eq!(split_in["grouping"], "SHUFFLE");
    assert_eq!(logical["bolts"]["count"]["inputs"][0]["grouping"], "FIELDS");
    assert_eq!(logical["stages"], 3);

    let physical = ok(addr, &format!("/topologies/physicalplan?{Q}"));
    let instances = physical["instances"].as_object().expect("instances");
    assert_eq!(instances.len(), 6, "{physical}");
    for (component, n) in [("sentence", 2), ("split", 2), ("count", 2)] {
        let ids = physical["spouts"][component]
            .as_array()
            .or(physical["bolts"][component].as_array())
            .unwrap_or_else(|| panic!("{component} in {physical}"));
        assert_eq!(ids.len(), n);
        for id in ids {
            let i = &instances[id.as_str().unwrap()];
            assert_eq!(i["name"], component);
        }
    }
    assert_eq!(physical["stmgrs"].as_object().unwrap().len(), 2);
    let listed: usize = physical["stmgrs"]
        .as_object()
        .unwrap()
        .values()
        .map(|s| s["instance_ids"].as_array().unwrap().len())
        .sum();
    assert_eq!(listed, 6);

    let packing = ok(addr, &format!("/topologies/packingplan?{Q}"));
    let planned: usize = packing["container_plans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["instances"].as_array().unwrap().len())
        .sum();
    assert_eq!(planned, 6, "{packing}");

    let exec = ok(addr, &format!("/topologies/executionstate?{Q}"));
    assert_eq!(exec["jobname"], "WordCount");
    assert_eq!(exec["cluster"], "local");
    assert_eq!(exec["role"], "tester");
    assert_eq!(exec["has_tmanager_location"], true);

    let config = ok(addr, &format!("/topologies/config?{Q}"));
    assert!(
        config.is_object() && !config.as_object().unwrap().is_empty(),
        "{config}"
    );
    // The local scheduler runs no scheduler service, so it writes no `schedulers` node: the
    // tracker says so with nulls (Heron's shape), not an invented endpoint.
    let sched = ok(addr, &format!("/topologies/schedulerlocation?{Q}"));
    assert_eq!(
        sched,
        serde_json::json!({"name": "WordCount", "http_endpoint": null, "job_page_link": null})
    );
    // A scheduler that does write one (as Heron's service schedulers do) is shown as written.
    {
        use heron_statemgr::{StateDir, StateManager, StateManagerExt};
        let state = heron_statemgr::LocalFsStateManager::new(env.state_root());
        let location = heron_proto::scheduler::SchedulerLocation {
            topology_name: "WordCount".into(),
            http_endpoint: "127.0.0.1:4646".into(),
            job_page_link: vec!["http://jobs.example/WordCount".into()],
        };
        state
            .set_proto(StateDir::Schedulers, "WordCount", &location)
            .unwrap();
        let sched = wait_for(Duration::from_secs(10), "the scheduler location", || {
            let s = ok(addr, &format!("/topologies/schedulerlocation?{Q}"));
            (!s["http_endpoint"].is_null()).then_some(s)
        });
        assert_eq!(sched["name"], "WordCount", "{sched}");
        assert_eq!(sched["http_endpoint"], "127.0.0.1:4646", "{sched}");
        assert_eq!(
            sched["job_page_link"], "http://jobs.example/WordCount",
            "{sched}"
        );
        state.delete(StateDir::Schedulers, "WordCount").unwrap();
    }
    let meta = ok(addr, &format!("/topologies/metadata?{Q}"));
    assert_eq!(meta["instances"], 6);
    let runtime = ok(addr, &format!("/topologies/runtimestate?{Q}"));
    for s in ["stmgr-1", "stmgr-2"] {
        assert_eq!(runtime["stmgrs"][s]["is_registered"], true, "{runtime}");
    }
    let info = ok(addr, &format!("/topologies/info?{Q}"));
    assert_eq!(info["name"], "WordCount");
    assert!(info["id"].as_str().unwrap().starts_with("WordCount"));
    assert_eq!(
        info["physical_plan"]["instances"]
            .as_object()
            .unwrap()
            .len(),
        6
    );
    assert!(info["tmanager_location"]["stats_port"].as_i64().unwrap() > 0);

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let tl = ok(
        addr,
        &format!(
            "/topologies/metrics/timeline?{Q}&component=sentence&metricname={emit}&starttime={}&endtime={}",
            now - 300,
            now + 5
        ),
    );
    let per_instance = tl["timeline"][emit].as_object().expect("timeline");
    assert_eq!(per_instance.len(), 2, "{tl}");
    let points = per_instance.values().next().unwrap().as_object().unwrap();
    assert!(!points.is_empty());
    assert!(points.values().all(Value::is_number));

    let stmgr = ok(
        addr,
        &format!("/topologies/metrics?{Q}&component=__stmgr__&metricname=__tuples_from_instances"),
    );
    assert_eq!(
        stmgr["metrics"]["__tuples_from_instances"]
            .as_object()
            .unwrap()
            .len(),
        2
    );

    assert!(ok(addr, &format!("/topologies/exceptions?{Q}")).is_array());
    assert!(ok(
        addr,
        &format!("/topologies/exceptionsummary?{Q}&component=count")
    )
    .is_array());

    let prom = get(addr, "/metrics");
    assert_eq!(prom.status, 200);
    assert!(prom.content_type.starts_with("text/plain"));
    assert!(
        prom.body.lines().any(|l| l.starts_with("heron_emit_count{")
            && l.contains("topology=\"WordCount\"")
            && l.contains("component=\"sentence\"")),
        "{}",
        prom.body
    );

    // Bad requests are 4xx with a JSON message, never 5xx.
    for (path, status) in [
        ("/topologies/logicalplan".to_string(), 400),
        (
            "/topologies/physicalplan?cluster=local&environ=default".into(),
            400,
        ),
        (
            "/topologies/info?cluster=local&environ=default&topology=Nope".into(),
            404,
        ),
        (
            "/topologies/config?cluster=nowhere&environ=default&topology=WordCount".into(),
            404,
        ),
        (format!("/topologies/metrics?{Q}"), 400),
        (
            format!("/topologies/metrics?{Q}&component=nope&metricname=x"),
            404,
        ),
        (
            format!("/topologies/metrics?{Q}&component=count&interval=soon"),
            400,
        ),
        (
            format!("/topologies/metrics/timeline?{Q}&component=count&metricname=x"),
            400,
        ),
        ("/topologies/metrics/timeline".into(), 400),
        ("/topologies/exceptions".into(), 400),
        ("/topologies/runtimestate?cluster=local".into(), 400),
        ("/no/such/path".into(), 404),
    ] {
        let got = get(addr, &path);
        assert_eq!(got.status, status, "GET {path}: {}", got.body);
        assert!(
            got.json()["message"].is_string(),
            "GET {path}: {}",
            got.body
        );
    }

    // The page and its script are served.
    let page = get(addr, "/");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("<html"));
    assert_eq!(get(addr, "/ui/app.js").status, 200);

    // `heron list local` shows it running.
    let list = env
        .heron()
        .args(["list", "local"])
        .output()
        .expect("heron list");
    let text = String::from_utf8_lossy(&list.stdout).to_string();
    assert!(
        list.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&list.stderr)
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("WordCount") && l.contains("running")),
        "{text}"
    );

    assert!(env.kill("WordCount").status.success());
    let gone = get(addr, &format!("/topologies/info?{Q}"));
    assert_eq!(gone.status, 404, "{}", gone.body);
}

#[test]
fn word_count_example_prints_a_tracker_url_that_works() {
    use std::io::{BufRead, BufReader};
    let env = TestEnv::new();
    let mut child = std::process::Command::new(example("word_count"))
        .args(["--duration", "15s"])
        .env("HOME", env.home())
        .env("USER", "tester")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run the example");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let url = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(90))
            .expect("the example printed a tracker URL");
        if let Some(u) = line.strip_prefix("tracker: ") {
            break u.to_string();
        }
    };
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (host_port, path) = rest.split_once('/').expect("a path");
    let addr: SocketAddr = host_port.parse().expect("host:port");
    let page = get(addr, &format!("/{path}"));
    assert_eq!(page.status, 200);
    assert!(page.body.contains("<html"));
    let states = ok(addr, "/topologies/states");
    assert_eq!(
        states["local"]["default"]["WordCount"]["status"], "Running",
        "{states}"
    );
    wait_for(
        Duration::from_secs(30),
        "metrics through the example's tracker",
        || (total(addr, "sentence", "__emit-count/default") > 0.0).then_some(()),
    );
    let status = child.wait().expect("the example exits");
    assert!(status.success());
}

#[test]
fn a_failed_submit_names_its_step() {
    let env = TestEnv::new();
    let out = env
        .heron()
        .args(["submit", "local", "/bin/false"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run heron submit");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("submit failed at step [1/5] defining the topology"),
        "{err}"
    );
}

/// Kills the `localzk` topology when dropped.
struct KillZk<'a>(&'a TestEnv);

impl Drop for KillZk<'_> {
    fn drop(&mut self) {
        let _ = self.0.heron_in("kill", "localzk", &[], &["WordCount"]);
    }
}

#[test]
fn tracker_serves_local_and_zookeeper_clusters() {
    let Some(ctx) = zk::ctx() else {
        return;
    };
    let env = TestEnv::new();
    let conf = env.home().join(".heron/conf/localzk");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(
        conf.join("statemgr.yaml"),
        format!(
            "heron.statemgr.connection.string: \"{}\"\nheron.statemgr.root.path: {}\n",
            ctx.server.connect, ctx.root
        ),
    )
    .unwrap();
    let binary = example("word_count");
    let out = env.heron_in(
        "submit",
        "localzk",
        &[],
        &[
            binary.to_str().unwrap(),
            "--containers",
            "2",
            "--parallelism",
            "2",
        ],
    );
    let _kill = KillZk(&env);
    support::assert_ok(&out, "heron submit localzk");
    let clusters = vec![
        Cluster::new("local", StateManagerSpec::Local(env.state_root())),
        Cluster::new("localzk", StateManagerSpec::ZooKeeper(ctx.config())),
    ];
    let addr = heron_tracker::spawn_background("127.0.0.1:0".parse().unwrap(), clusters)
        .expect("start the tracker")
        .addr;
    assert_eq!(
        ok(addr, "/clusters"),
        serde_json::json!(["local", "localzk"])
    );
    let tops = ok(addr, "/topologies?cluster=localzk");
    assert_eq!(
        tops["localzk"]["tester"]["default"],
        serde_json::json!(["WordCount"]),
        "{tops}"
    );
    let q = "cluster=localzk&environ=default&topology=WordCount";
    let physical = wait_for(Duration::from_secs(60), "the physical plan", || {
        let got = get(addr, &format!("/topologies/physicalplan?{q}"));
        (got.status == 200).then(|| got.json())
    });
    assert_eq!(physical["instances"].as_object().unwrap().len(), 6);
    wait_for(Duration::from_secs(60), "metrics through ZooKeeper", || {
        (total_in(addr, q, "sentence", "__emit-count/default") > 0.0).then_some(())
    });
    // The same name in the local cluster is another (absent) topology.
    let local = get(
        addr,
        &Q.replace("cluster=local", "/topologies/info?cluster=local"),
    );
    assert_eq!(local.status, 404, "{}", local.body);
}

#[test]
fn per_stream_counts_and_every_grouping_in_the_plan() {
    let mut env = TestEnv::new();
    support::submit_with_out_dir(
        &mut env,
        "RoutingCheck",
        &example("routing_check"),
        "routing-out",
        &[
            "--containers",
            "2",
            "--words-per-spout",
            "2000",
            "--marks-per-spout",
            "10",
        ],
    );
    let addr = start_tracker(&env);
    let q = "cluster=local&environ=default&topology=RoutingCheck";
    let logical = ok(addr, &format!("/topologies/logicalplan?{q}"));
    let groupings: Vec<String> = logical["bolts"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|b| b["inputs"].as_array().unwrap().clone())
        .map(|i| {
            format!(
                "{}:{}",
                i["stream_name"].as_str().unwrap(),
                i["grouping"].as_str().unwrap()
            )
        })
        .collect();
    for g in [
        "marks:ALL",
        "marks:LOWEST",
        "direct:DIRECT",
        "default:FIELDS",
    ] {
        assert!(groupings.iter().any(|x| x == g), "{g} in {groupings:?}");
    }
    // The spout's emits are counted per stream.
    for stream in ["default", "marks"] {
        let metric = format!("__emit-count/{stream}");
        wait_for(
            Duration::from_secs(60),
            &format!("{metric} of words"),
            || (total_in(addr, q, "words", &metric) > 0.0).then_some(()),
        );
    }
    wait_for(
        Duration::from_secs(60),
        "marks executed by everyone",
        || (total_in(addr, q, "everyone", "__execute-count/marks") > 0.0).then_some(()),
    );
    assert!(env.kill("RoutingCheck").status.success());
}

/// One metric of `/topologies/metrics` (interval -1: all) per instance.
fn per_instance(addr: SocketAddr, q: &str, component: &str, metric: &str) -> Vec<(String, f64)> {
    let m = ok(
        addr,
        &format!("/topologies/metrics?{q}&component={component}&metricname={metric}&interval=-1"),
    );
    m["metrics"][metric]
        .as_object()
        .map(|o| {
            o.iter()
                .filter_map(|(i, v)| Some((i.clone(), v.as_str()?.parse::<f64>().ok()?)))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn latencies_acks_per_stream_and_stmgr_bytes_of_an_at_least_once_topology() {
    let mut env = TestEnv::new();
    support::submit_with_out_dir(
        &mut env,
        "Ledger",
        &fresh_example("ledger"),
        "ledger-out",
        &["--ids", "10000000", "--rate", "1000"],
    );
    let addr = start_tracker(&env);
    let q = "cluster=local&environ=default&topology=Ledger";
    let positive = |component: &str, metric: &str| {
        let what = format!("{metric} of {component} > 0");
        wait_for(Duration::from_secs(90), &what, || {
            let v = per_instance(addr, q, component, metric);
            v.iter().any(|(_, x)| *x > 0.0).then_some(v)
        })
    };
    // Latencies are in ns (Heron's unit); averages over the instances' intervals.
    let complete = positive("ledger", "__complete-latency/default");
    eprintln!("spout complete latency (ns): {complete:?}");
    for (component, stream) in [
        ("relay", "default"),
        ("sink", "default"),
        ("sink", "copies"),
    ] {
        let execute = positive(component, &format!("__execute-latency/{stream}"));
        let process = positive(component, &format!("__process-latency/{stream}"));
        eprintln!("{component} on {stream}: execute {execute:?}, process {process:?} (ns)");
    }
    // Acks per stream: the spout's trees on `default`, the sink's inputs on both streams.
    positive("ledger", "__ack-count/default");
    let copies = positive("sink", "__ack-count/copies");
    eprintln!("sink acks on stream copies: {copies:?}");
    // The stream managers count bytes both ways, and the counts grow.
    for metric in [
        "__server/__bytes_from_workers",
        "__server/__bytes_to_workers",
        "__server/__bytes_to_stmgrs",
        "__server/__bytes_from_stmgrs",
    ] {
        let first = wait_for(Duration::from_secs(30), metric, || {
            let t = total_in(addr, q, "__stmgr__", metric);
            (t > 0.0).then_some(t)
        });
        let second = wait_for(
            Duration::from_secs(30),
            &format!("{metric} growing"),
            || {
                let t = total_in(addr, q, "__stmgr__", metric);
                (t > first).then_some(t)
            },
        );
        eprintln!("{metric}: {first} then {second}");
    }
    assert!(env.kill("Ledger").status.success());
}
