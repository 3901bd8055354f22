//! `heron-rs.local.cpu.pinning=core` on the local scheduler: each container's stream manager
//! and instances run on one CPU of their own (container 0, the tmaster's, is not pinned), a
//! restarted instance keeps its container's CPU, the acked `ledger` topology runs pinned and
//! loses nothing, and a pinning heron-rs does not have is refused at submit.

mod support;

use std::time::Duration;
use support::{
    acked_ids, arg_of, assert_ok, fresh_example, role_pids, submit_with_out_dir, wait_for, TestEnv,
};

const NAME: &str = "Ledger";
const IDS: u64 = 3_000;

/// The CPUs `pid` may run on, as `/proc/<pid>/status` lists them (`0`, `0-1`, `0,2`).
fn cpus_of(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Stream manager id → the CPU lists of that container's stream manager and instances.
fn cpus_by_container(env: &TestEnv) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut by = std::collections::BTreeMap::<String, Vec<String>>::new();
    for role in ["stmgr", "instance"] {
        for pid in role_pids(env, role) {
            if let Some(id) = arg_of(pid, "--stmgr-id") {
                by.entry(id).or_default().push(cpus_of(pid));
            }
        }
    }
    by
}

#[test]
fn containers_run_pinned_and_a_restarted_instance_keeps_its_cpu() {
    let mut env = TestEnv::new();
    let out = submit_with_out_dir(
        &mut env,
        NAME,
        &fresh_example("ledger"),
        "ledger",
        &[
            "--ids",
            &IDS.to_string(),
            "--rate",
            "1000",
            "--containers",
            "2",
            "--config",
            "heron-rs.local.cpu.pinning=core",
        ],
    );
    // 2 containers × (stmgr + spout, relay and sink tasks) are up
    let by = wait_for(
        Duration::from_secs(60),
        "every process of both containers",
        || {
            let by = cpus_by_container(&env);
            (by.len() == 2 && by.values().map(Vec::len).sum::<usize>() >= 2 + 6).then_some(by)
        },
    );
    let ours = cpus_of(std::process::id() as i32);
    let mut container_cpus = Vec::new();
    for (stmgr, cpus) in &by {
        assert!(cpus.iter().all(|c| c == &cpus[0]), "{stmgr}: {cpus:?}");
        assert!(
            cpus[0].parse::<usize>().is_ok(),
            "{stmgr} on one CPU, not {:?}",
            cpus[0]
        );
        container_cpus.push(cpus[0].clone());
    }
    // two CPUs or more: the two containers get different ones
    let allowed = heron_scheduler::pinning::allowed_cpus().unwrap();
    if allowed.len() >= 2 {
        assert_ne!(container_cpus[0], container_cpus[1], "{by:?}");
    }
    for pid in role_pids(&env, "tmaster") {
        assert_eq!(cpus_of(pid), ours, "the tmaster's container is not pinned");
    }

    // traffic flows pinned, acked
    wait_for(Duration::from_secs(60), "half the ids acked", || {
        (acked_ids(&out).len() as u64 >= IDS / 2).then_some(())
    });

    // a killed instance comes back on its container's CPU (it inherits the executor's)
    let before = role_pids(&env, "instance");
    let victim = before[0];
    let stmgr = arg_of(victim, "--stmgr-id").unwrap();
    let cpu = cpus_of(victim);
    // SAFETY: signalling a process this test started.
    assert_eq!(unsafe { libc::kill(victim, libc::SIGKILL) }, 0);
    let back = wait_for(
        Duration::from_secs(30),
        "the killed instance to restart",
        || {
            let now = role_pids(&env, "instance");
            let fresh: Vec<i32> = now
                .iter()
                .copied()
                .filter(|p| !before.contains(p))
                .collect();
            (now.len() == before.len() && !now.contains(&victim) && fresh.len() == 1)
                .then(|| fresh[0])
        },
    );
    assert_eq!(arg_of(back, "--stmgr-id").as_deref(), Some(stmgr.as_str()));
    assert_eq!(
        cpus_of(back),
        cpu,
        "the restarted instance (pid {back}) of {stmgr}"
    );

    wait_for(Duration::from_secs(90), "every id acked", || {
        (acked_ids(&out).len() as u64 == IDS).then_some(())
    });
}

#[test]
fn a_pinning_heron_rs_does_not_have_is_refused() {
    let mut env = TestEnv::new();
    let out = env.submit(
        NAME,
        &fresh_example("ledger"),
        &["--config", "heron-rs.local.cpu.pinning=numa"],
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("heron-rs.local.cpu.pinning") && stderr.contains("numa"),
        "{stderr}"
    );
    // nothing started
    assert!(role_pids(&env, "executor").is_empty());
}

/// The cluster's config (`--config-property`, or `~/.heron/conf/<cluster>/*.yaml`) pins a
/// topology whose own config does not say; the topology's config wins where it does.
#[test]
fn the_cluster_config_pins_unless_the_topology_says_otherwise() {
    let env = TestEnv::new();
    let ours = cpus_of(std::process::id() as i32);
    for topology_says in [None, Some("none")] {
        let out = env.home().join("ledger");
        std::fs::create_dir_all(&out).unwrap();
        let mut args = vec![
            fresh_example("ledger").to_str().unwrap().to_string(),
            "--out-dir".to_string(),
            out.to_str().unwrap().to_string(),
            "--ids".to_string(),
            "100".to_string(),
            "--containers".to_string(),
            "1".to_string(),
        ];
        if let Some(v) = topology_says {
            args.extend([
                "--config".to_string(),
                format!("heron-rs.local.cpu.pinning={v}"),
            ]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let submitted = env.heron_in(
            "submit",
            "local",
            &["--config-property=heron-rs.local.cpu.pinning=core".to_string()],
            &args,
        );
        assert_ok(&submitted, "heron submit with the cluster's pinning");
        let stmgr = wait_for(Duration::from_secs(60), "the stream manager", || {
            role_pids(&env, "stmgr").first().copied()
        });
        let cpus = cpus_of(stmgr);
        match topology_says {
            None => assert!(cpus.parse::<usize>().is_ok(), "pinned, not on {cpus:?}"),
            Some(_) => assert_eq!(cpus, ours, "the topology's own config wins"),
        }
        assert_ok(&env.heron_in("kill", "local", &[], &[NAME]), "heron kill");
        wait_for(
            Duration::from_secs(30),
            "the stream manager to stop",
            || role_pids(&env, "stmgr").is_empty().then_some(()),
        );
    }
}
