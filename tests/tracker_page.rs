//! The REST endpoints behind the tracker's page, against a running WordCount whose `count`
//! bolt is deliberately slow (real processes): the per-window summary with Storm's capacity
//! and back pressure attributed to the slow bolt alone, the per-task component table with
//! process figures, a container's log files through its shell (Heron's `filedata` and
//! `filestats`), the reported errors, and the controls with and without the token.

mod support;

use serde_json::Value;
use std::net::SocketAddr;
use std::time::Duration;
use support::http::{get, post};
use support::{local_tracker, submit_word_count, topology_secret, wait_for, TestEnv};

const Q: &str = "cluster=local&environ=default&topology=WordCount";

fn ok(addr: SocketAddr, path: &str) -> Value {
    let got = get(addr, path);
    assert_eq!(got.status, 200, "GET {path}: {}", got.body);
    got.json()
}

/// The spouts' emits over the last `secs` seconds, summed over tasks.
fn recent_emits(addr: SocketAddr, secs: u32) -> f64 {
    let m = ok(
        addr,
        &format!(
            "/topologies/metrics?{Q}&component=sentence&metricname=__emit-count/default&interval={secs}"
        ),
    );
    m["metrics"]["__emit-count/default"]
        .as_object()
        .map(|o| {
            o.values()
                .filter_map(|v| v.as_str()?.parse::<f64>().ok())
                .sum()
        })
        .unwrap_or(0.0)
}

#[test]
fn page_endpoints_against_a_word_count_with_a_slow_bolt() {
    let mut env = TestEnv::new();
    submit_word_count(
        &mut env,
        &["--slow-count-us", "1000", "--error-every", "2000"],
    );
    let addr = local_tracker(&env).addr;

    // The summary: the slow bolt's capacity is close to 1, the others' lower (once back
    // pressure holds the spouts: split runs flat out for the first seconds); it alone is
    // attributed back pressure.
    let s = wait_for(
        Duration::from_secs(90),
        "count's capacity near 1, split's lower, back pressure attributed to count",
        || {
            let s = ok(addr, &format!("/topologies/summary?{Q}"));
            let cap = |c: &str| s["components"][c]["windows"]["60"]["capacity"].as_f64();
            (cap("count")? > 0.7
                && cap("count")? <= 1.1
                && cap("split")? < 0.5
                && s["backpressure_causes"] == serde_json::json!(["count"]))
            .then_some(s)
        },
    );
    assert_eq!(s["status"], "Running");
    assert_eq!(s["containers"], 2);
    assert_eq!(s["instances"], 6);
    assert_eq!(
        s["windows"],
        serde_json::json!(["60", "600", "10800", "all"])
    );
    let minute = |c: &str| s["components"][c]["windows"]["60"].clone();
    let split = minute("split");
    assert!(split["capacity"].as_f64().unwrap() < 0.5, "split: {split}");
    assert!(split["executed"].as_f64().unwrap() > 0.0);
    assert!(split["execute_latency_ms"].as_f64().is_some());
    let count = minute("count");
    let latency = count["execute_latency_ms"].as_f64().unwrap();
    assert!(
        (0.9..5.0).contains(&latency),
        "count spends 1 ms a word: {count}"
    );
    let sentence = minute("sentence");
    assert!(sentence["emitted"].as_f64().unwrap() > 0.0);
    assert_eq!(sentence["capacity"], Value::Null, "a spout has no capacity");
    // split's words go to one count task each: transferred = emitted
    assert_eq!(split["transferred"], split["emitted"]);
    assert_eq!(s["components"]["count"]["backpressure_cause"], true);
    assert_eq!(s["components"]["split"]["backpressure_cause"], false);
    assert!(
        count["backpressure_ms"].as_f64().unwrap() > 6_000.0,
        "{count}"
    );
    // the longer windows hold at least the minute's counts
    let ten = &s["components"]["split"]["windows"]["600"];
    assert!(ten["executed"].as_f64().unwrap() >= split["executed"].as_f64().unwrap());
    let all = &s["components"]["split"]["windows"]["all"];
    assert!(all["executed"].as_f64().unwrap() >= ten["executed"].as_f64().unwrap());
    // figures change between two loads (count works through split's backlog steadily)
    let first = s["components"]["count"]["windows"]["all"]["executed"].clone();
    wait_for(Duration::from_secs(20), "the summary to move", || {
        let later = ok(addr, &format!("/topologies/summary?{Q}"));
        (later["components"]["count"]["windows"]["all"]["executed"] != first).then_some(())
    });

    // The component table: a row per task with its container, host and process figures.
    let c = wait_for(Duration::from_secs(30), "count's process figures", || {
        let c = ok(addr, &format!("/topologies/component?{Q}&component=count"));
        let rows = c["instances"].as_array()?;
        rows.iter()
            .all(|r| r["cpu_percent"].as_f64().is_some_and(|p| p > 0.0))
            .then_some(c)
    });
    let rows = c["instances"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert!(
        rows.iter().any(|r| r["backpressure_cause"] == true),
        "a count task is attributed back pressure: {rows:?}"
    );
    for r in rows {
        assert_eq!(r["host"], "127.0.0.1");
        assert!(r["memory_mb"].as_f64().unwrap() > 0.5, "{r}");
        assert_eq!(r["restarts"], 0.0);
        assert!(
            r["windows"]["60"]["capacity"].as_f64().unwrap() > 0.5,
            "{r}"
        );
        // A count task is a cause when it held back pressure in the minute: both are slow,
        // but once one has stopped the spouts the other may drain without reaching the mark.
        let held = r["windows"]["60"]["backpressure_ms"].as_f64().unwrap();
        assert_eq!(r["backpressure_cause"], held > 0.0, "{r}");
        let id = r["id"].as_str().unwrap();
        assert_eq!(r["logfile"], format!("log-files/{id}.log"));
    }
    let missing = get(addr, &format!("/topologies/component?{Q}&component=nope"));
    assert_eq!(missing.status, 404);

    // Logs through the container's shell (Heron's paths).
    let container = rows[0]["container"].as_str().unwrap().to_string();
    let logfile = rows[0]["logfile"].as_str().unwrap().to_string();
    let page = ok(
        addr,
        &format!("/topologies/container/filedata?{Q}&container={container}&path={logfile}&offset=-1&length=4096"),
    );
    assert!(page["size"].as_u64().unwrap() > 0, "{page}");
    assert!(page["data"].as_str().unwrap().lines().count() > 0, "{page}");
    let head = ok(
        addr,
        &format!("/topologies/container/filedata?{Q}&container={container}&path={logfile}&offset=0&length=10"),
    );
    assert_eq!(
        (head["offset"].as_u64(), head["length"].as_u64()),
        (Some(0), Some(10))
    );
    let files = ok(
        addr,
        &format!("/topologies/container/filestats?{Q}&container={container}&path=log-files"),
    );
    let names: Vec<&str> = files["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["name"].as_str())
        .collect();
    assert!(
        names.contains(&logfile.trim_start_matches("log-files/")),
        "{names:?}"
    );
    let secret = get(
        addr,
        &format!("/topologies/container/filedata?{Q}&container={container}&path=auth/secret"),
    );
    assert_eq!(
        secret.status, 403,
        "the shell serves logs only: {}",
        secret.body
    );
    let escape = get(
        addr,
        &format!("/topologies/container/filedata?{Q}&container={container}&path=log-files/../auth/secret"),
    );
    assert_eq!(escape.status, 403, "{}", escape.body);

    // Errors the bolt reported, with task and host.
    let errors = wait_for(Duration::from_secs(30), "count's reported errors", || {
        let e = ok(addr, &format!("/topologies/exceptions?{Q}&component=count"));
        (!e.as_array()?.is_empty()).then_some(e)
    });
    let e = &errors[0];
    assert!(
        e["stacktrace"].as_str().unwrap().contains("a sample error"),
        "{e}"
    );
    assert_eq!(e["hostname"], "127.0.0.1");
    assert!(e["instance_id"].as_str().unwrap().contains("_count_"));
}

/// The controls deactivate and activate a running WordCount through the heron CLI, only with
/// the topology's token (the spouts stop emitting and start again), restart a container (its
/// tasks count a restart), scale a component and kill the topology.
#[test]
fn controls_need_the_token_and_act_through_the_cli() {
    let mut env = TestEnv::new();
    submit_word_count(&mut env, &[]);
    let addr = local_tracker(&env).addr;
    wait_for(Duration::from_secs(60), "the spouts to emit", || {
        (recent_emits(addr, 5) > 0.0).then_some(())
    });
    let refused = post(addr, &format!("/topologies/deactivate?{Q}"), None);
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert!(
        refused.body.contains("requires authentication"),
        "{}",
        refused.body
    );
    let wrong = post(addr, &format!("/topologies/deactivate?{Q}"), Some("00"));
    assert_eq!(wrong.status, 401, "{}", wrong.body);
    let bad = post(addr, &format!("/topologies/restart?{Q}&container=x"), None);
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(recent_emits(addr, 5) > 0.0, "still emitting after refusals");
    let token = topology_secret(&env, "WordCount").bearer_token();
    let printed = env.heron_in("token", "local", &[], &["WordCount"]);
    assert!(printed.status.success(), "heron token: {printed:?}");
    assert_eq!(String::from_utf8_lossy(&printed.stdout).trim(), token);
    let done = post(addr, &format!("/topologies/deactivate?{Q}"), Some(&token));
    assert_eq!(done.status, 200, "{}", done.body);
    assert!(done.body.contains("deactivated"), "{}", done.body);
    wait_for(
        Duration::from_secs(30),
        "the spouts to stop emitting",
        || (recent_emits(addr, 3) == 0.0).then_some(()),
    );
    let paused = ok(addr, &format!("/topologies/summary?{Q}"));
    assert_eq!(paused["status"], "Paused");
    let again = post(addr, &format!("/topologies/activate?{Q}"), Some(&token));
    assert_eq!(again.status, 200, "{}", again.body);
    wait_for(Duration::from_secs(30), "the spouts to emit again", || {
        (recent_emits(addr, 3) > 0.0).then_some(())
    });

    // Restart container 1: its tasks' processes start again, counted as restarts.
    let restarted = post(
        addr,
        &format!("/topologies/restart?{Q}&container=1"),
        Some(&token),
    );
    assert_eq!(restarted.status, 200, "{}", restarted.body);
    assert!(
        restarted.body.contains("restarted container 1"),
        "{}",
        restarted.body
    );
    wait_for(
        Duration::from_secs(60),
        "container 1's tasks to count a restart",
        || {
            let c = ok(addr, &format!("/topologies/component?{Q}&component=split"));
            let rows = c["instances"].as_array()?.clone();
            let restarts = |container: &str| -> Vec<f64> {
                rows.iter()
                    .filter(|r| r["container"] == container)
                    .filter_map(|r| r["restarts"].as_f64())
                    .collect()
            };
            (restarts("1") == [1.0] && restarts("2") == [0.0]).then_some(())
        },
    );

    // Scale split to 3 tasks (a new packing plan), then kill: both through the CLI.
    let scaled = post(
        addr,
        &format!("/topologies/update?{Q}&component_parallelism=split:3"),
        Some(&token),
    );
    assert_eq!(scaled.status, 200, "{}", scaled.body);
    wait_for(Duration::from_secs(90), "split to run 3 tasks", || {
        let s = get(addr, &format!("/topologies/summary?{Q}"));
        (s.status == 200 && s.json()["components"]["split"]["parallelism"] == 3).then_some(())
    });
    let unscaled = post(
        addr,
        &format!("/topologies/update?{Q}&component_parallelism=split:0"),
        Some(&token),
    );
    assert_eq!(unscaled.status, 400, "{}", unscaled.body);
    let killed = post(addr, &format!("/topologies/kill?{Q}"), Some(&token));
    assert_eq!(killed.status, 200, "{}", killed.body);
    let states = ok(addr, "/topologies/states");
    assert!(
        states["local"]
            .get("default")
            .is_none_or(|e| e.get("WordCount").is_none()),
        "{states}"
    );
}
