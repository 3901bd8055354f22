//! Whole topologies as real processes through the local scheduler and the `heron` CLI.

mod support;

use heron_proto::codec::{encode_raw, ReqId};
use heron_statemgr::{LocalFsStateManager, StateDir, StateManager, StateManagerExt};
use heron_testkit::Wait;
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;
use support::{
    connect_as_member, counter, example, heron_python, processes_mentioning, role_pids,
    submit_with_out_dir, thread_policies, wait_for, TestEnv,
};

const WORDS_PER_SPOUT: u64 = 20_000;
const MARKS_PER_SPOUT: u64 = 10;
const SPOUTS: u64 = 2;

/// The routing_check spout's multiset (same formula as the topology).
fn word_at(i: u64) -> &'static str {
    const VOCAB: &[&str] = &[
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
        "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra",
        "tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu", "one", "two", "three",
        "four",
    ];
    VOCAB[((i * 7 + i / 3) % VOCAB.len() as u64) as usize]
}

#[derive(Debug, Clone)]
struct Report {
    task: i64,
    total: u64,
    misrouted: u64,
    seen: BTreeMap<String, u64>,
}

fn reports(dir: &Path, component: &str) -> Vec<Report> {
    let mut out = Vec::new();
    for p in heron_testkit::files(dir, &format!("{component}-"), ".json") {
        let Ok(text) = std::fs::read_to_string(p) else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let seen = v["seen"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| !k.starts_with("__"))
                    .map(|(k, n)| (k.clone(), n.as_u64().unwrap_or(0)))
                    .collect()
            })
            .unwrap_or_default();
        out.push(Report {
            task: v["task"].as_i64().unwrap_or(-1),
            total: v["total"].as_u64().unwrap_or(0),
            misrouted: v["misrouted"].as_u64().unwrap_or(0),
            seen,
        });
    }
    out.sort_by_key(|r| r.task);
    out
}

fn total(dir: &Path, component: &str) -> u64 {
    reports(dir, component).iter().map(|r| r.total).sum()
}

fn assert_no_process_left(env: &TestEnv, what: &str) {
    let home = env.home().to_string_lossy().to_string();
    let left = wait_for(Duration::from_secs(10), "processes to exit", || {
        let p = processes_mentioning(&home);
        p.is_empty().then_some(p)
    });
    assert!(left.is_empty(), "{what}: processes left: {left:?}");
}

#[test]
fn every_grouping_routes_correctly_across_two_containers() {
    let mut env = TestEnv::new();
    let words = WORDS_PER_SPOUT.to_string();
    let marks = MARKS_PER_SPOUT.to_string();
    let out_dir = submit_with_out_dir(
        &mut env,
        "RoutingCheck",
        &example("routing_check"),
        "results",
        &[
            "--containers",
            "2",
            "--words-per-spout",
            &words,
            "--marks-per-spout",
            &marks,
        ],
    );

    let emitted_words = SPOUTS * WORDS_PER_SPOUT;
    let emitted_marks = SPOUTS * MARKS_PER_SPOUT;
    let done = || {
        total(&out_dir, "count") >= emitted_words
            && total(&out_dir, "direct") >= emitted_words
            && total(&out_dir, "custom") >= emitted_words
            && total(&out_dir, "local") >= emitted_words
            && total(&out_dir, "lowest") >= emitted_marks
            && reports(&out_dir, "everyone").len() == 2
            && reports(&out_dir, "everyone")
                .iter()
                .all(|r| r.total >= emitted_marks)
    };
    let finished = Wait::new("every tuple to be processed")
        .timeout(Duration::from_secs(120))
        .every(Duration::from_millis(100))
        .try_until(done);
    if finished.is_err() {
        env.dump_logs("RoutingCheck");
        for c in ["count", "direct", "custom", "local", "lowest", "everyone"] {
            eprintln!(
                "{c}: {:?}",
                reports(&out_dir, c)
                    .iter()
                    .map(|r| (r.task, r.total))
                    .collect::<Vec<_>>()
            );
        }
        panic!("the topology did not process every tuple within 120 s");
    }
    // Let stragglers (duplicates, if any) arrive before checking exact counts.
    std::thread::sleep(Duration::from_millis(500));

    // Stream managers and instances run every thread under SCHED_BATCH (runtime/src/sched.rs);
    // the tmaster keeps the default policy.
    const SCHED_OTHER: i64 = 0;
    const SCHED_BATCH: i64 = 3;
    for (role, want) in [
        ("stmgr", SCHED_BATCH),
        ("instance", SCHED_BATCH),
        ("tmaster", SCHED_OTHER),
    ] {
        let pids = role_pids(&env, role);
        assert!(!pids.is_empty(), "no {role} process");
        for pid in pids {
            let policies = thread_policies(pid);
            assert!(
                !policies.is_empty() && policies.iter().all(|&p| p == want),
                "{role} {pid}: thread policies {policies:?}, want all {want}"
            );
        }
    }

    // Fields grouping: the counts add up to what was emitted, word by word, and every word
    // was counted by exactly one task.
    let counts = reports(&out_dir, "count");
    assert_eq!(counts.len(), 3, "three count tasks report");
    let mut expected: HashMap<&str, u64> = HashMap::new();
    for i in 0..WORDS_PER_SPOUT {
        *expected.entry(word_at(i)).or_default() += SPOUTS;
    }
    let mut owner: HashMap<String, i64> = HashMap::new();
    let mut summed: HashMap<String, u64> = HashMap::new();
    for r in &counts {
        for (w, n) in &r.seen {
            if let Some(other) = owner.insert(w.clone(), r.task) {
                panic!("word {w:?} counted by tasks {other} and {}", r.task);
            }
            summed.insert(w.clone(), *n);
        }
    }
    assert_eq!(counts.iter().map(|r| r.total).sum::<u64>(), emitted_words);
    for (w, n) in &expected {
        assert_eq!(summed.get(*w), Some(n), "count of {w:?}");
    }
    assert!(
        counts.iter().filter(|r| r.total > 0).count() >= 2,
        "fields grouping spread words over tasks: {counts:?}"
    );

    // All grouping: every task got every mark.
    for r in reports(&out_dir, "everyone") {
        assert_eq!(r.total, emitted_marks, "all grouping, task {}", r.task);
    }
    // Global grouping: the lowest task got every mark, the other none.
    let lowest = reports(&out_dir, "lowest");
    assert_eq!(lowest.len(), 2);
    assert_eq!(
        lowest[0].total, emitted_marks,
        "lowest task {}",
        lowest[0].task
    );
    assert_eq!(lowest[1].total, 0, "non-lowest task {}", lowest[1].task);
    // Direct grouping: every tuple reached the task it named, and both tasks got some.
    let direct = reports(&out_dir, "direct");
    assert_eq!(direct.iter().map(|r| r.total).sum::<u64>(), emitted_words);
    for r in &direct {
        assert_eq!(
            r.misrouted, 0,
            "direct task {} got tuples meant for another",
            r.task
        );
        assert_eq!(r.total, emitted_words / 2, "direct task {}", r.task);
    }
    // Custom grouping: the user's choice was honoured.
    let custom = reports(&out_dir, "custom");
    assert_eq!(custom.iter().map(|r| r.total).sum::<u64>(), emitted_words);
    for r in &custom {
        assert_eq!(r.misrouted, 0, "custom task {}", r.task);
    }
    // Local-or-shuffle: nothing lost or duplicated.
    assert_eq!(total(&out_dir, "local"), emitted_words);

    // The state nodes parse with Heron's own protobuf definitions.
    let py = heron_python();
    let check = std::process::Command::new(&py)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_state.py"))
        .arg(env.state_root())
        .arg("RoutingCheck")
        .output()
        .expect("run check_state.py");
    assert!(
        check.status.success(),
        "heronpy could not parse our state: {}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&check.stdout).expect("json summary");
    assert_eq!(summary["instances"], 17);
    assert_eq!(summary["containers"], 2);
    eprintln!("heronpy parsed: {summary}");

    // Kill: every process goes, every node goes.
    let killed = env.kill("RoutingCheck");
    assert!(
        killed.status.success(),
        "kill failed: {}",
        String::from_utf8_lossy(&killed.stderr)
    );
    assert_no_process_left(&env, "after heron kill");
    let state = LocalFsStateManager::new(env.state_root());
    for dir in StateDir::ALL {
        assert!(
            state.get(dir, "RoutingCheck").unwrap().is_none(),
            "{} node left after kill",
            dir.name()
        );
    }
}

/// A daemon connection of the bad-input test: TCP, or a stream manager's local socket.
trait Conn: Read + Write {
    fn set_timeout(&self, t: Duration);
    fn close_write(&self);
}

impl Conn for TcpStream {
    fn set_timeout(&self, t: Duration) {
        self.set_read_timeout(Some(t)).unwrap();
    }
    fn close_write(&self) {
        let _ = self.shutdown(std::net::Shutdown::Write);
    }
}

impl Conn for UnixStream {
    fn set_timeout(&self, t: Duration) {
        self.set_read_timeout(Some(t)).unwrap();
    }
    fn close_write(&self) {
        let _ = self.shutdown(std::net::Shutdown::Write);
    }
}

/// Sends `bytes` on `s` (connected to `port`) and checks that the daemon closes the
/// connection. With `half_close` we end our side after writing: a daemon can only tell a
/// truncated packet from a slow peer at EOF. Without it the daemon must close on the bytes
/// alone.
fn assert_closed_after(mut s: impl Conn, port: i32, bytes: &[u8], half_close: bool, what: &str) {
    s.set_timeout(Duration::from_secs(30));
    let _ = s.write_all(bytes);
    if half_close {
        s.close_write();
    }
    let mut buf = [0u8; 256];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => continue, // an error status first is fine
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return,
            Err(e) => panic!("{what} on port {port}: connection not closed ({e})"),
        }
    }
}

fn bad_inputs() -> Vec<(&'static str, Vec<u8>, bool)> {
    let mut unknown = heron_proto::bytes::BytesMut::new();
    encode_raw(
        &mut unknown,
        "heron.proto.nothing.Unknown",
        &ReqId::ZERO,
        b"\x08\x01",
    );
    let mut good = heron_proto::bytes::BytesMut::new();
    encode_raw(
        &mut good,
        "heron.proto.stmgr.StrMgrHelloRequest",
        &ReqId::random(),
        b"\x0a\x01x",
    );
    let truncated = good[..good.len() - 2].to_vec();
    vec![
        (
            "garbage",
            b"GET / HTTP/1.1\r\nHost: heron\r\n\r\n".to_vec(),
            false,
        ),
        (
            "oversized header",
            vec![0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 5],
            false,
        ),
        ("unknown message type", unknown.to_vec(), false),
        ("truncated packet", truncated, true),
    ]
}

#[test]
fn daemons_survive_bad_input_and_word_count_keeps_flowing() {
    let mut env = TestEnv::new();
    let submitted = env.submit(
        "WordCount",
        &example("word_count"),
        &["--containers", "2", "--parallelism", "2"],
    );
    assert!(submitted.status.success(), "submit failed");
    let state = LocalFsStateManager::new(env.state_root());
    let pplan = wait_for(Duration::from_secs(60), "the physical plan", || {
        state.get_physical_plan("WordCount").ok().flatten()
    });
    let tm = state
        .get_tmanager_location("WordCount")
        .unwrap()
        .expect("tmanager location");
    wait_for(Duration::from_secs(60), "word counts", || {
        (counter(&env, "WordCount", "executed") > 10_000).then_some(())
    });
    let daemons_before = (role_pids(&env, "tmaster"), role_pids(&env, "stmgr"));
    assert_eq!(daemons_before.0.len(), 1, "one tmaster");
    assert_eq!(daemons_before.1.len(), 2, "two stream managers");
    let mut ports = vec![("tmaster server", tm.server_port)];
    for s in &pplan.stmgrs {
        ports.push(("stmgr data", s.data_port));
        ports.push((
            "stmgr instance server",
            s.local_data_port.expect("local data port"),
        ));
    }
    for (daemon, port) in &ports {
        for (what, bytes, half_close) in bad_inputs() {
            // Past the handshake, where the packet decoders are; and without it, where the
            // handshake refuses the same bytes.
            let member = connect_as_member(&env, "WordCount", *port as u16);
            let what = format!("{what} to {daemon}");
            assert_closed_after(member, *port, &bytes, half_close, &what);
            let stranger = TcpStream::connect(("127.0.0.1", *port as u16)).unwrap();
            let unauthenticated = format!("unauthenticated {what}");
            assert_closed_after(stranger, *port, &bytes, half_close, &unauthenticated);
        }
    }
    // The same on the stream managers' local sockets, where their instances are.
    let secret = support::topology_secret(&env, "WordCount");
    for s in &pplan.stmgrs {
        let port = s.local_data_port.expect("local data port");
        let name = heron_flow::local_socket::address(port as u16).unwrap();
        for (what, bytes, half_close) in bad_inputs() {
            let mut member = UnixStream::connect_addr(&name).unwrap();
            member.set_timeout(Duration::from_secs(30));
            heron_auth::connect_blocking(&mut member, &secret).unwrap();
            let what = format!("{what} to the local socket of {}", s.id);
            assert_closed_after(member, port, &bytes, half_close, &what);
            let stranger = UnixStream::connect_addr(&name).unwrap();
            let unauthenticated = format!("unauthenticated {what}");
            assert_closed_after(stranger, port, &bytes, half_close, &unauthenticated);
        }
    }
    // Everyone is still serving: counts keep growing and no daemon restarted.
    let before = counter(&env, "WordCount", "executed");
    wait_for(Duration::from_secs(30), "counts to keep growing", || {
        (counter(&env, "WordCount", "executed") > before + 10_000).then_some(())
    });
    let tm_after = state.get_tmanager_location("WordCount").unwrap().unwrap();
    assert_eq!(tm_after.server_port, tm.server_port, "tmaster kept serving");
    assert_eq!(
        (role_pids(&env, "tmaster"), role_pids(&env, "stmgr")),
        daemons_before,
        "no daemon died or restarted"
    );

    // A second submit of a running topology is refused, and says why.
    let again = env.submit("WordCount", &example("word_count"), &[]);
    assert!(!again.status.success(), "second submit must fail");
    let msg = String::from_utf8_lossy(&again.stderr).to_string()
        + &String::from_utf8_lossy(&again.stdout);
    assert!(msg.contains("already running"), "message was: {msg}");

    assert!(env.kill("WordCount").status.success());
    assert_no_process_left(&env, "after heron kill");
    // Killing an unknown topology is an error that names it.
    let unknown = env.kill("NoSuchTopology");
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("NoSuchTopology"));
}

#[test]
fn word_count_example_runs_prints_status_and_leaves_nothing() {
    let env = TestEnv::new();
    let out = std::process::Command::new(example("word_count"))
        .args(["--duration", "6s"])
        .env("HOME", env.home())
        .env("USER", "tester")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run the example");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "example failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status_lines = stdout.lines().filter(|l| l.contains("executed")).count();
    assert!(status_lines >= 3, "status lines: {stdout}");
    assert!(stdout.contains("summary:"), "{stdout}");
    assert!(stdout.contains("no process left"), "{stdout}");
    assert_no_process_left(&env, "after the example exits");
}
