//! The chaos run (`examples/chaos.rs`) as CI runs it: an ATLEAST_ONCE word count with a
//! message-id ledger for 2 minutes, a random tmaster, stream manager or instance killed with
//! SIGKILL every 5 s, then drained. No id may be lost and no process may panic; every role
//! must have been killed and come back. `HERONRS_CHAOS_DURATION` (e.g. `10m`) runs it longer.

mod support;

use std::process::Command;
use std::time::Duration;
use support::{fresh_example, TestEnv};

#[test]
fn a_chaos_run_loses_no_id_and_nothing_panics() {
    let env = TestEnv::new();
    let duration = std::env::var("HERONRS_CHAOS_DURATION").unwrap_or_else(|_| "2m".into());
    let report = env.home().join("chaos.json");
    let stdout = support::run_to_success(
        &env,
        Command::new(fresh_example("chaos"))
            .args([
                "--duration",
                &duration,
                "--kill-every",
                "5s",
                "--seed",
                "16",
            ])
            .args(["--json".as_ref(), report.as_os_str()]),
        "the chaos run",
        Duration::from_secs(60 * 60),
    );
    println!("{stdout}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("the report")).unwrap();
    assert_eq!(r["lost"], 0, "{r}");
    assert_eq!(r["panics"], serde_json::json!({}), "{r}");
    assert_eq!(r["acked"], r["ids"], "{r}");
    for role in ["tmaster", "stmgr", "instance"] {
        let kills = r["roles"][role]["kills"].as_u64().unwrap_or(0);
        assert!(kills >= 3, "{role} killed and back only {kills} times: {r}");
        assert_eq!(r["roles"][role]["missed"], 0, "{role}: {r}");
    }
    // the kills cost something: a tree was replayed, or a spout re-emitted after a restart
    let redone = r["replayed"].as_u64().unwrap_or(0) + r["reemitted"].as_u64().unwrap_or(0);
    assert!(redone > 0, "nothing was replayed: {r}");
}
