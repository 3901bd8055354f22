//! The tracker's web page in headless Debian `chromium` against a running WordCount: it loads
//! without console errors, its graph shows every component and edge, and its charts move.
//! Leaves a screenshot under the target directory and prints its path.
//!
//! Without chromium the test fails when `CI=true` (CI installs it) and is skipped otherwise.

mod support;

#[path = "browser/cdp.rs"]
mod cdp;

use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;
use support::{example, local_tracker, submit_slow_bolt, wait_for, TestEnv};

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

#[test]
fn tracker_page_in_headless_chromium() {
    let Some(chromium) = chromium_or_skip() else {
        return;
    };
    let mut env = TestEnv::new();
    let submitted = env.submit(
        "WordCount",
        &example("word_count"),
        &["--containers", "2", "--parallelism", "2"],
    );
    assert!(submitted.status.success(), "submit failed");
    let tracker = local_tracker(&env);
    let url = format!(
        "{}?cluster=local&environ=default&topology=WordCount",
        tracker.url()
    );

    let mut b = cdp::Browser::start(&chromium);
    b.navigate(&url);
    let first = wait_for(Duration::from_secs(60), "the page to draw metrics", || {
        let s = summary(&mut b);
        (s["updates"].as_u64().unwrap_or(0) >= 1 && emitted(&s) > 0.0).then_some(s)
    });

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
    let charts = b.eval("document.querySelectorAll('.chart polyline').length");
    assert!(charts.as_u64().unwrap_or(0) >= 3, "chart lines: {charts}");

    // The charts move: the page's emit totals change between refreshes.
    let before = emitted(&first);
    let updates = first["updates"].as_u64().unwrap();
    let later = wait_for(Duration::from_secs(60), "the charts to change", || {
        let s = summary(&mut b);
        (s["updates"].as_u64().unwrap_or(0) > updates + 1 && emitted(&s) != before).then_some(s)
    });
    assert_ne!(emitted(&later), before);
    assert!(
        later["errors"].as_array().is_none_or(|e| e.is_empty()),
        "page errors: {}",
        later["errors"]
    );

    let png = b.screenshot();
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    let path = target_dir().join("tracker-page.png");
    std::fs::write(&path, &png).expect("write the screenshot");
    println!("screenshot: {}", path.display());
    eprintln!("screenshot: {}", path.display());

    // Console errors or uncaught exceptions during the whole run fail the test.
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
