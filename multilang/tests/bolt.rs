//! ShellBolt against real pystorm bolts in real subprocesses.

mod common;

use std::time::{Duration, Instant};

use common::*;
use heron_api::{Config, Fields, GroupingKind, Value};
use heron_multilang::{PinState, ShellBolt};

fn bolt(py: &str, script_name: &str, fields: &[&str]) -> ShellBolt {
    ShellBolt::new(script(py, script_name))
        .working_dir(scripts_dir())
        .output_fields(Fields::new(fields.iter().copied()))
}

#[test]
fn split_bolt_emits_anchored_words_and_acks_the_input() {
    let Some(py) = python() else { return };
    let mut h = BoltHarness::new(bolt(&py, "split_bolt.py", &["word"]), Config::new());
    let t = h.input("the cow jumped");
    h.execute(&t);
    h.wait_for("3 words and an ack", LONG, |s, _| {
        s.emitted.len() == 3 && s.acked.len() == 1
    });
    let words: Vec<_> = h.seen.emitted.iter().map(|o| o.values[0].clone()).collect();
    assert_eq!(
        words,
        vec![
            Value::from("the"),
            Value::from("cow"),
            Value::from("jumped")
        ]
    );
    for o in &h.seen.emitted {
        assert_eq!(o.roots, t.roots().to_vec(), "anchored to the input's tree");
    }
    assert_eq!(h.seen.acked, vec![t.key()]);
    assert!(
        h.seen.failed.is_empty() && h.seen.errors.is_empty(),
        "{:?}",
        h.seen
    );
    // the pid file is where the handshake said
    let pid = h.bolt.subprocess_pid().expect("running");
    assert!(std::path::Path::new("pids/shell-2")
        .join(pid.to_string())
        .exists());
}

#[test]
fn count_bolt_counts_across_many_inputs_beyond_max_pending() {
    let Some(py) = python() else { return };
    let mut conf = Config::new();
    conf.set("topology.shellbolt.max.pending", 3);
    let mut h = BoltHarness::new(bolt(&py, "count_bolt.py", &["word", "count"]), conf);
    for i in 0..20 {
        let t = h.input(if i % 2 == 0 { "a" } else { "b" });
        h.execute(&t);
        assert!(
            h.bolt.pending_tuples() <= 3,
            "bounded by topology.shellbolt.max.pending"
        );
    }
    h.wait_for("20 counts", LONG, |s, _| {
        s.emitted.len() == 20 && s.acked.len() == 20
    });
    let last_a = h
        .seen
        .emitted
        .iter()
        .rev()
        .find(|o| o.values[0] == Value::from("a"))
        .unwrap();
    assert_eq!(last_a.values[1], Value::Int(10));
}

#[test]
fn a_raising_bolt_reports_the_error_fails_the_tuple_and_is_restarted() {
    let Some(py) = python() else { return };
    let mut h = BoltHarness::new(bolt(&py, "raising_bolt.py", &["w"]), Config::new());
    let boom = h.input("boom");
    h.execute(&boom);
    h.wait_for("the error, the fail and a restart", LONG, |s, b| {
        s.failed.contains(&boom.key())
            && s.errors.iter().any(|e| e.contains("asked to explode"))
            && b.restarts() == 1
    });
    assert_eq!(h.seen.failed, vec![boom.key()], "failed once, not twice");
    assert!(
        h.seen.errors.iter().any(|e| e.contains("exit status 1")),
        "{:?}",
        h.seen.errors
    );
    // the restarted subprocess works
    h.wait_for("the restart", LONG, |_, b| b.subprocess_pid().is_some());
    let ok = h.input("fine");
    h.execute(&ok);
    h.wait_for("the restarted bolt's echo", LONG, |s, _| {
        s.acked.contains(&ok.key())
    });
    assert_eq!(
        h.seen.emitted.last().unwrap().values,
        vec![Value::from("fine")]
    );
}

#[test]
fn kill_9_of_the_python_process_fails_pending_tuples_and_restarts_it() {
    let Some(py) = python() else { return };
    let mut h = BoltHarness::new(bolt(&py, "hang_bolt.py", &["w"]), Config::new());
    let pid = h.bolt.subprocess_pid().expect("running");
    // the pid comes from the pid file the subprocess wrote in pidDir
    let listed: Vec<String> = std::fs::read_dir("pids/shell-2")
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(listed.contains(&pid.to_string()), "{listed:?}");
    let stuck = h.input("hang");
    h.execute(&stuck);
    kill9(pid);
    h.wait_for("the fail and a restart", LONG, |s, b| {
        s.failed.contains(&stuck.key()) && b.restarts() == 1
    });
    assert!(
        h.seen
            .errors
            .iter()
            .any(|e| e.contains("signal 9") || e.contains("end of file")),
        "{:?}",
        h.seen.errors
    );
    h.wait_for("a new subprocess", LONG, |_, b| {
        b.subprocess_pid().is_some_and(|p| p != pid)
    });
    assert!(!alive(pid));
    let ok = h.input("after");
    h.execute(&ok);
    h.wait_for("the echo", LONG, |s, _| s.acked.contains(&ok.key()));
}

#[test]
fn a_hung_bolt_is_restarted_within_the_timeout_plus_a_second() {
    let Some(py) = python() else { return };
    let mut conf = Config::new();
    conf.set("topology.subprocess.timeout.secs", 2);
    let mut h = BoltHarness::new(bolt(&py, "hang_bolt.py", &["w"]), conf);
    let warm = h.input("warm");
    h.execute(&warm);
    h.wait_for("the warm-up echo", LONG, |s, _| {
        s.acked.contains(&warm.key())
    });
    let stuck = h.input("hang");
    let start = Instant::now();
    h.execute(&stuck);
    h.wait_for("the hang detected", LONG, |s, _| {
        s.failed.contains(&stuck.key())
    });
    let took = start.elapsed();
    assert!(
        took <= Duration::from_millis(3500),
        "declared hung after {took:?}"
    );
    assert!(
        took >= Duration::from_secs(2),
        "not before the timeout: {took:?}"
    );
    assert!(
        h.seen.errors.iter().any(|e| e.contains("hung")),
        "{:?}",
        h.seen.errors
    );
    h.wait_for("the restart", LONG, |_, b| {
        b.restarts() == 1 && b.subprocess_pid().is_some()
    });
    let ok = h.input("after");
    h.execute(&ok);
    h.wait_for("the echo", LONG, |s, _| s.acked.contains(&ok.key()));
}

#[test]
fn garbage_on_stdout_and_undeclared_streams_are_misbehaviour() {
    let Some(py) = python() else { return };
    let mut h = BoltHarness::new(bolt(&py, "garbage_bolt.py", &["w"]), Config::new());
    let g = h.input("garbage");
    h.execute(&g);
    h.wait_for("the bad JSON report", LONG, |s, b| {
        s.failed.contains(&g.key()) && b.restarts() == 1
    });
    assert!(
        h.seen.errors.iter().any(|e| e.contains("invalid JSON")),
        "{:?}",
        h.seen.errors
    );
    h.wait_for("the restart", LONG, |_, b| b.subprocess_pid().is_some());
    let u = h.input("undeclared");
    h.execute(&u);
    h.wait_for("the undeclared stream report", LONG, |s, b| {
        s.failed.contains(&u.key()) && b.restarts() == 2
    });
    assert!(
        h.seen
            .errors
            .iter()
            .any(|e| e.contains("undeclared stream \"nowhere\"")),
        "{:?}",
        h.seen.errors
    );
    assert!(h.seen.emitted.is_empty(), "nothing reached the emitter");
}

#[test]
fn need_task_ids_is_answered_from_the_plan_for_fields_grouping() {
    let Some(py) = python() else { return };
    let b = ShellBolt::new(script(&py, "task_ids_bolt.py"))
        .working_dir(scripts_dir())
        .output_fields(Fields::new(["word", "tasks"]))
        .named_stream("answers", Fields::new(["word", "tasks"]));
    let mut h = BoltHarness::with_grouping(
        b,
        Config::new(),
        GroupingKind::Fields(Fields::new(["word"])),
    );
    let mut expected = Vec::new();
    for w in ["alpha", "beta", "gamma", "delta"] {
        let t = h.input(w);
        h.execute(&t);
        let answer = heron_multilang::task_ids(
            &h.ctx,
            &mut PinState::default(),
            "default",
            &Fields::new(["word", "tasks"]),
            &[Value::from(w), Value::from("")],
        )
        .unwrap();
        assert!(!answer.pinned);
        expected.push((w, answer.tasks));
    }
    h.wait_for("4 answers", LONG, |s, _| s.on("answers").len() == 4);
    for (o, (w, tasks)) in h.seen.on("answers").iter().zip(&expected) {
        assert_eq!(o.values[0], Value::from(*w));
        assert_eq!(o.values[1], Value::Str(format!("{tasks:?}")), "{w}");
        assert_eq!(tasks.len(), 1);
        assert!([10, 11].contains(&tasks[0]));
    }
    for o in h.seen.on("default") {
        assert!(o.dests.is_empty(), "fields grouping needs no pin: {o:?}");
    }
}

#[test]
fn need_task_ids_on_a_shuffled_stream_is_answered_by_pinning_the_tuple() {
    let Some(py) = python() else { return };
    let b = ShellBolt::new(script(&py, "task_ids_bolt.py"))
        .working_dir(scripts_dir())
        .output_fields(Fields::new(["word", "tasks"]))
        .named_stream("answers", Fields::new(["word", "tasks"]));
    // the sink (tasks 10, 11) reads both streams with SHUFFLE
    let mut h = BoltHarness::new(b, Config::new());
    let words = ["a", "b", "c", "d"];
    let mut inputs = Vec::new();
    for w in words {
        let t = h.input(w);
        h.execute(&t);
        inputs.push(t);
    }
    h.wait_for("4 answers and acks", LONG, |s, _| {
        s.on("answers").len() == 4 && s.acked.len() == 4
    });
    assert!(
        h.seen.errors.is_empty() && h.seen.failed.is_empty(),
        "{:?}",
        h.seen
    );
    assert_eq!(h.bolt.restarts(), 0, "no misbehaviour");
    let answers = h.seen.on("answers");
    let pinned = h.seen.on("default");
    assert_eq!(pinned.len(), 4);
    let mut picks = Vec::new();
    for ((o, a), (w, t)) in pinned.iter().zip(&answers).zip(words.iter().zip(&inputs)) {
        assert_eq!(o.values[0], Value::from(*w));
        assert_eq!(a.values[0], Value::from(*w));
        // the answer is one task of the sink, and the tuple carries exactly that dest id
        assert_eq!(o.dests.len(), 1, "{o:?}");
        let task = o.dests[0];
        assert!([10, 11].contains(&task), "{o:?}");
        assert_eq!(a.values[1], Value::Str(format!("[{task}]")), "{w}");
        assert_eq!(o.roots, t.roots().to_vec(), "anchored as usual");
        // an emit without need_task_ids is not pinned
        assert!(a.dests.is_empty(), "{a:?}");
        picks.push(task);
    }
    // a round robin from index task id (2) % 2 over [10, 11]
    assert_eq!(picks, vec![10, 11, 10, 11]);
}

#[test]
fn msgpack_through_streamparse_run() {
    let Some(py) = python() else { return };
    let runner = std::path::Path::new(&py).with_file_name("streamparse_run");
    let command: Vec<String> = if runner.exists() {
        vec![
            runner.display().to_string(),
            "-s".into(),
            "msgpack".into(),
            "components.UpperBolt".into(),
        ]
    } else {
        vec![
            py.clone(),
            "-m".into(),
            "streamparse.run".into(),
            "-s".into(),
            "msgpack".into(),
            "components.UpperBolt".into(),
        ]
    };
    let b = ShellBolt::new(command)
        .working_dir(scripts_dir())
        .output_fields(Fields::new(["word", "nested"]));
    let mut conf = Config::new();
    conf.set("topology.multilang.serializer", "msgpack");
    let mut h = BoltHarness::new(b, conf);
    let t = h.input("ab");
    h.execute(&t);
    let bytes = h.input(Value::Bytes(b"xy".to_vec()));
    h.execute(&bytes);
    h.wait_for("2 emits and acks", LONG, |s, _| {
        s.emitted.len() == 2 && s.acked.len() == 2
    });
    assert_eq!(h.seen.emitted[0].values[0], Value::from("AB"));
    assert_eq!(
        h.seen.emitted[0].values[1],
        Value::from(r#"{"chars":["a","b"],"len":2}"#),
        "a dict becomes JSON text (keys sorted)"
    );
    assert_eq!(
        h.seen.emitted[1].values[0],
        Value::Bytes(b"XY".to_vec()),
        "msgpack bin stays bytes"
    );
    assert_eq!(h.seen.emitted[0].roots, t.roots().to_vec());
}

#[test]
fn an_unknown_serializer_is_refused_and_reported() {
    let Some(py) = python() else { return };
    let mut conf = Config::new();
    conf.set("topology.multilang.serializer", "protobuf");
    let mut h = BoltHarness::new(bolt(&py, "split_bolt.py", &["word"]), conf);
    let t = h.input("a b");
    h.execute(&t);
    assert!(h.bolt.subprocess_pid().is_none(), "not started");
    assert!(h.seen.failed.contains(&t.key()));
    assert!(
        h.seen
            .errors
            .iter()
            .any(|e| e.contains("unknown multi-lang serializer \"protobuf\"")),
        "{:?}",
        h.seen.errors
    );
}
