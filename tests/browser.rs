//! The tracker's web page in headless Debian `chromium` against running WordCounts: each view
//! (topology, component, log) renders real figures that move, the slow bolt's capacity and
//! back pressure, errors, and the controls. Leaves screenshots of each view under the target
//! directory and prints their paths.
//!
//! Without chromium the test fails when `CI=true` (CI installs it) and is skipped otherwise.

mod support;

#[path = "browser/cdp.rs"]
mod cdp;

use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;
use support::{
    local_tracker, submit_slow_bolt, submit_word_count, topology_secret, wait_for, TestEnv,
};

fn target_dir() -> PathBuf {
    // target/<profile>/deps/<test> -> target/
    let exe = std::env::current_exe().expect("test exe");
    exe.ancestors().nth(3).expect("target dir").to_path_buf()
}

fn summary(b: &mut cdp::Browser) -> Value {
    let text = b.eval("document.getElementById('summary').textContent");
    serde_json::from_str(text.as_str().unwrap_or("{}")).unwrap_or(Value::Null)
}

fn emitted(s: &Value) -> f64 {
    s["charts"]
        .as_object()
        .map(|c| {
            c.values()
                .map(|v| v["totals"]["emit"].as_f64().unwrap_or(0.0))
                .sum()
        })
        .unwrap_or(0.0)
}

/// Debian's chromium; `None` (the test is skipped) only outside CI, where its absence fails.
fn chromium_or_skip() -> Option<PathBuf> {
    let found = cdp::chromium();
    if found.is_none() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("chromium is not installed; .ci/run installs Debian's chromium package");
        }
        eprintln!("SKIPPED: chromium is not installed (apt-get install chromium)");
    }
    found
}

fn screenshot(b: &mut cdp::Browser, name: &str) {
    let png = b.screenshot();
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    let path = target_dir().join(name);
    std::fs::write(&path, &png).expect("write the screenshot");
    eprintln!("screenshot: {}", path.display());
}

fn number(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// The topology view of a running WordCount: facts, the per-component table with figures
/// that change between loads, graph, uPlot charts, physical plan and configuration; then
/// deactivate from the page (refused without the token, done with it) stops the spouts.
#[test]
fn tracker_page_in_headless_chromium() {
    let Some(chromium) = chromium_or_skip() else {
        return;
    };
    let mut env = TestEnv::new();
    submit_word_count(&mut env, &[]);
    let tracker = local_tracker(&env);
    let url = format!(
        "{}?cluster=local&environ=default&topology=WordCount&window=60",
        tracker.url()
    );

    let mut b = cdp::Browser::start(&chromium);
    b.navigate(&url);
    let first = wait_for(Duration::from_secs(60), "the page to draw metrics", || {
        let s = summary(&mut b);
        (s["updates"].as_u64().unwrap_or(0) >= 1
            && emitted(&s) > 0.0
            && number(&s["table"]["split"]["executed"]) > 0.0)
            .then_some(s)
    });
    assert_eq!(first["view"], "topology");

    // The graph: every component and every edge with its grouping.
    let mut components: Vec<String> = first["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    components.sort();
    assert_eq!(components, ["count", "sentence", "split"]);
    let nodes = b.eval("Array.from(document.querySelectorAll('#graph .node')).map(n => n.dataset.component).sort().join(',')");
    assert_eq!(nodes, "count,sentence,split");
    let edges = b.eval("Array.from(document.querySelectorAll('#graph path.edge')).map(e => e.dataset.from + '->' + e.dataset.to + ':' + e.dataset.grouping).sort().join(',')");
    assert_eq!(edges, "sentence->split:SHUFFLE,split->count:FIELDS");
    let containers = b.eval("document.querySelectorAll('#containers .container').length");
    assert_eq!(containers, 2);
    let instances = b.eval("document.querySelectorAll('#containers li[data-instance]').length");
    assert_eq!(instances, 6);
    // Facts and tables.
    assert_eq!(first["facts"]["status"], "Running");
    assert_eq!(number(&first["facts"]["containers"]), 2.0);
    assert_eq!(number(&first["facts"]["instances"]), 6.0);
    let status = b.eval("document.querySelector('#facts [data-fact=status]').textContent");
    assert_eq!(status, "Running");
    let rows = b.eval("Array.from(document.querySelectorAll('#components-table tr[data-component]')).map(r => r.dataset.component).sort().join(',')");
    assert_eq!(rows, "count,sentence,split");
    let cell = b.eval("document.querySelector('#components-table tr[data-component=split] td[data-field=executed]').textContent");
    assert!(
        cell.as_str()
            .is_some_and(|t| t.chars().any(|c| c.is_ascii_digit())),
        "split's executed cell: {cell}"
    );
    let pplan = b.eval("document.querySelectorAll('#pplan-table tr[data-instance]').length");
    assert_eq!(pplan, 6);
    let config = b.eval("document.querySelectorAll('#config-table tr').length");
    assert!(config.as_u64().unwrap_or(0) > 5, "config rows: {config}");
    // uPlot charts: a rates and a latencies chart per component, drawn on canvases.
    let charts = b.eval("document.querySelectorAll('.chart[data-kind] canvas').length");
    assert!(
        charts.as_u64().unwrap_or(0) >= 6,
        "chart canvases: {charts}"
    );
    let axes = b.eval("document.querySelectorAll('.chart .u-axis').length");
    assert!(axes.as_u64().unwrap_or(0) >= 12, "chart axes: {axes}");

    // The figures change between loads.
    let before = number(&first["table"]["count"]["executed"]);
    let updates = first["updates"].as_u64().unwrap();
    let later = wait_for(Duration::from_secs(60), "the figures to change", || {
        let s = summary(&mut b);
        (s["updates"].as_u64().unwrap_or(0) > updates + 1
            && number(&s["table"]["count"]["executed"]) != before
            && emitted(&s) != emitted(&first))
        .then_some(s)
    });
    assert!(
        later["errors"].as_array().is_none_or(|e| e.is_empty()),
        "page errors: {}",
        later["errors"]
    );
    screenshot(&mut b, "tracker-page.png");

    // Deactivate from the page: refused without the token, done with it.
    b.eval("window.confirm = () => true; document.querySelector('button[data-action=deactivate]').click(); 1");
    let refused = wait_for(Duration::from_secs(60), "the refusal", || {
        let s = summary(&mut b);
        (s["control"]["ok"] == false).then_some(s)
    });
    let message = b.eval("document.querySelector('#control-result.failed').textContent");
    assert!(
        message
            .as_str()
            .is_some_and(|m| m.contains("requires authentication")),
        "{message} {}",
        refused["control"]
    );
    let token = topology_secret(&env, "WordCount").bearer_token();
    b.eval(&format!(
        "const t = document.getElementById('token'); t.value = '{token}'; \
         t.dispatchEvent(new Event('input')); \
         document.querySelector('button[data-action=deactivate]').click(); 1"
    ));
    wait_for(Duration::from_secs(60), "the page to deactivate", || {
        let s = summary(&mut b);
        (s["control"]["ok"] == true).then_some(())
    });
    let paused = wait_for(Duration::from_secs(60), "the spouts to stop", || {
        let s = summary(&mut b);
        let emits = spout_emits_lately(&s);
        (s["facts"]["status"] == "Paused" && emits == Some(0.0)).then_some(s)
    });
    assert_eq!(paused["facts"]["status"], "Paused");
    screenshot(&mut b, "tracker-page-deactivated.png");

    // Console errors or uncaught exceptions during the whole run fail the test.
    b.eval("1");
    assert!(b.errors.is_empty(), "console errors: {:#?}", b.errors);
}

/// The spouts' emits in the newest complete second of the page's rate chart.
fn spout_emits_lately(s: &Value) -> Option<f64> {
    s["charts"]["sentence"]["latest"]["emit"].as_f64()
}

/// A WordCount whose `count` bolt spends 1 ms on each word: the page shows its capacity
/// close to 1 and split's lower, marks it (and only it) as causing back pressure, lists its
/// reported errors; its component view has a row per task with CPU, memory and restarts;
/// the log view shows an instance's log through the container's shell.
#[test]
fn tracker_page_views_of_a_slow_bolt() {
    let Some(chromium) = chromium_or_skip() else {
        return;
    };
    let mut env = TestEnv::new();
    submit_word_count(
        &mut env,
        &["--slow-count-us", "1000", "--error-every", "2000"],
    );
    let tracker = local_tracker(&env);
    let base = format!(
        "{}?cluster=local&environ=default&topology=WordCount&window=60",
        tracker.url()
    );
    let mut b = cdp::Browser::start(&chromium);
    b.navigate(&base);
    let s = wait_for(
        Duration::from_secs(120),
        "count's capacity near 1 (0.8 or more), split's lower, count marked",
        || {
            let s = summary(&mut b);
            let count = number(&s["table"]["count"]["capacity"]);
            ((0.8..=1.1).contains(&count)
                && number(&s["table"]["split"]["capacity"]) < 0.5
                && s["backpressureCauses"] == serde_json::json!(["count"]))
            .then_some(s)
        },
    );
    // (the spouts may show 0 emitted this minute: count works through a backlog, they wait)
    assert_eq!(
        s["table"]["sentence"]["capacity"],
        Value::Null,
        "a spout has no capacity"
    );
    let marked = b.eval("Array.from(document.querySelectorAll('#components-table tr.bp-cause')).map(r => r.dataset.component).join(',')");
    assert_eq!(marked, "count");
    let node = b.eval("Array.from(document.querySelectorAll('#graph .node.bp-cause')).map(n => n.dataset.component).join(',')");
    assert_eq!(node, "count");
    // at 0.8 or more the capacity cell is red
    wait_for(
        Duration::from_secs(30),
        "count's capacity cell in red",
        || {
            let high = b.eval("document.querySelector('#components-table tr[data-component=count] td[data-field=capacity]').classList.contains('capacity-high')");
            (high == true).then_some(())
        },
    );
    wait_for(Duration::from_secs(60), "the reported errors", || {
        let rows = b.eval("Array.from(document.querySelectorAll('#errors tr.error-row')).map(r => r.textContent).join('\\n')");
        let text = rows.as_str().unwrap_or("").to_string();
        (text.contains("a sample error") && text.contains("count") && text.contains("127.0.0.1"))
            .then_some(())
    });
    screenshot(&mut b, "tracker-page-slow-bolt.png");

    // The component view: a row per task with process figures and a log link.
    b.navigate(&format!("{base}&component=count"));
    let c = wait_for(Duration::from_secs(60), "count's tasks", || {
        let s = summary(&mut b);
        let rows = s["instances"].as_object()?;
        (s["view"] == "component"
            && rows.len() == 2
            && rows.values().all(|r| {
                number(&r["cpu_percent"]) > 0.0
                    && number(&r["memory_mb"]) > 0.0
                    && number(&r["capacity"]) > 0.5
            }))
        .then_some(s)
    });
    for (id, r) in c["instances"].as_object().unwrap() {
        assert!(id.contains("_count_"), "{id}");
        assert_eq!(number(&r["restarts"]), 0.0);
    }
    let rows = b.eval("document.querySelectorAll('#instances-table tr[data-instance]').length");
    assert_eq!(rows, 2);
    let host = b.eval("document.querySelector('#instances-table td[data-field=host]').textContent");
    assert_eq!(host, "127.0.0.1");
    screenshot(&mut b, "tracker-page-component.png");

    // The log view of one task, through its container's shell.
    let href = b.eval("document.querySelector('#instances-table a.log-link').getAttribute('href')");
    let href = href.as_str().expect("a log link").to_string();
    b.navigate(&format!(
        "{}{}",
        tracker.url(),
        href.trim_start_matches('/')
    ));
    let log = wait_for(Duration::from_secs(30), "the log lines", || {
        let s = summary(&mut b);
        (s["view"] == "log" && s["log"]["lines"].as_u64().unwrap_or(0) > 0).then_some(s)
    });
    assert!(
        log["log"]["size"].as_u64().unwrap_or(0) > 0,
        "{}",
        log["log"]
    );
    let text = b.eval("document.getElementById('log').textContent");
    assert!(
        text.as_str().is_some_and(|t| t.lines().count() > 0),
        "log text: {text}"
    );
    screenshot(&mut b, "tracker-page-log.png");
    b.eval("1");
    assert!(b.errors.is_empty(), "console errors: {:#?}", b.errors);
}

/// The page marks the component that causes back pressure (the slow bolt of `slow_bolt`) with
/// the class `bp-cause` and a label, on its graph node, its chart and its instances' rows,
/// apart from the spouts it throttles (class `backpressure`).
#[test]
fn tracker_page_marks_the_component_causing_back_pressure() {
    let Some(chromium) = chromium_or_skip() else {
        return;
    };
    let mut env = TestEnv::new();
    submit_slow_bolt(
        &mut env,
        "SlowBolt",
        &[
            "--rate",
            "20000",
            "--slow-rate",
            "1000",
            "--slow-secs",
            "600",
        ],
    );
    let tracker = local_tracker(&env);
    let url = format!(
        "{}?cluster=local&environ=default&topology=SlowBolt",
        tracker.url()
    );
    let mut b = cdp::Browser::start(&chromium);
    b.navigate(&url);
    let s = wait_for(
        Duration::from_secs(90),
        "the page to mark the slow bolt",
        || {
            let s = summary(&mut b);
            let causes = s["backpressureCauses"].as_array()?;
            causes.iter().any(|c| c == "slow").then_some(s)
        },
    );
    assert_eq!(s["backpressureCauses"], serde_json::json!(["slow"]), "{s}");
    let marked = b.eval("Array.from(document.querySelectorAll('#graph .node.bp-cause')).map(n => n.dataset.component).join(',')");
    assert_eq!(marked, "slow");
    let label = b.eval("document.querySelector('#graph .node.bp-cause text.bp-label').textContent");
    assert_eq!(label, "causes back pressure");
    let chart = b.eval("document.querySelector('.chart.bp-cause h3').textContent");
    assert!(
        chart
            .as_str()
            .is_some_and(|t| t.contains("causes back pressure")),
        "chart heading: {chart}"
    );
    let rows = b.eval("Array.from(document.querySelectorAll('#containers li.bp-cause')).map(l => l.dataset.instance).join(',')");
    assert!(
        rows.as_str()
            .is_some_and(|r| !r.is_empty() && r.split(',').all(|i| i.contains("_slow_"))),
        "rows of the slow bolt's instances: {rows}"
    );
    // the spouts are not marked as the cause
    let spout = b.eval("document.querySelector('#graph .node[data-component=\"source\"]').classList.contains('bp-cause')");
    assert_eq!(spout, false);
    let png = b.screenshot();
    let path = target_dir().join("tracker-page-backpressure.png");
    std::fs::write(&path, &png).expect("write the screenshot");
    eprintln!("screenshot: {}", path.display());
    b.eval("1");
    assert!(b.errors.is_empty(), "console errors: {:#?}", b.errors);
}
