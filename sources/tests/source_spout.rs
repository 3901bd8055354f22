//! SourceSpout: tuples out, offsets in its state, exact resumption from an encoded state.

use std::path::{Path, PathBuf};

use heron_api::{
    Emitter, OutputFieldsDeclarer, ReliabilityMode, Spout, SpoutOutputCollector, State,
    TopologyContext, Value,
};
use heron_sources::{
    FileSource, Offsets, Source, SourceSpout, DEFAULT_MAX_PER_CALL, LINE_FIELD, OFFSETS_PREFIX,
};

const COMPONENT: &str = "lines";

/// The context of task `index` of `parallelism` (task ids from 1).
fn ctx(index: usize, parallelism: usize) -> TopologyContext {
    let tasks = (1..=parallelism as i32).collect::<Vec<_>>();
    TopologyContext::builder("t", COMPONENT, tasks[index])
        .component_tasks(COMPONENT, tasks)
        .build()
}

fn emitter_for(spout: &SourceSpout<FileSource>) -> Emitter {
    let mut d = OutputFieldsDeclarer::new();
    spout.declare_output_fields(&mut d);
    Emitter::new(
        COMPONENT,
        1,
        ReliabilityMode::EffectivelyOnce,
        &d.into_streams(),
    )
}

/// One `next_tuple` call: the lines it emitted.
fn step(spout: &mut SourceSpout<FileSource>, emitter: &mut Emitter) -> Vec<String> {
    spout.next_tuple(&mut SpoutOutputCollector::new(emitter));
    let mut out = Vec::new();
    for set in emitter.take_output() {
        let data = set.data.expect("only data sets: nothing is acked");
        assert_eq!(data.stream.id, "default");
        for t in data.tuples {
            assert!(t.roots.is_empty(), "unanchored");
            assert_eq!(t.values.len(), 1);
            match Value::decode(&t.values[0]).unwrap() {
                Value::Str(s) => out.push(s),
                other => panic!("a line is a string, not {other:?}"),
            }
        }
    }
    assert!(emitter.take_immediate_acks().is_empty());
    out
}

/// Calls `next_tuple` until the spout is exhausted.
fn drain(spout: &mut SourceSpout<FileSource>, emitter: &mut Emitter) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let got = step(spout, emitter);
        if got.is_empty() {
            assert!(spout.exhausted());
            return out;
        }
        out.extend(got);
    }
}

fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path
}

fn numbered(n: usize) -> String {
    (0..n).map(|i| format!("line {i}\n")).collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn declares_one_line_field_on_the_default_stream() {
    let spout = SourceSpout::files(Vec::<PathBuf>::new());
    let mut d = OutputFieldsDeclarer::new();
    spout.declare_output_fields(&mut d);
    let streams = d.into_streams();
    assert_eq!(streams.len(), 1);
    assert_eq!(streams[0].id, "default");
    assert_eq!(streams[0].fields.len(), 1);
    assert_eq!(streams[0].fields.get(0), Some(LINE_FIELD));
}

#[test]
fn tasks_of_one_component_emit_every_line_once() {
    let dir = tempfile::tempdir().unwrap();
    let one = [write(dir.path(), "one.txt", &numbered(3000))];
    let three: Vec<PathBuf> = (0..3)
        .map(|i| write(dir.path(), &format!("{i}.txt"), &numbered(10 + i)))
        .collect();
    for paths in [&one[..], &three[..]] {
        let mut want: Vec<String> = Vec::new();
        for p in paths {
            let text = std::fs::read_to_string(p).unwrap();
            want.extend(text.lines().map(str::to_owned));
        }
        for parallelism in 1..=4 {
            let mut got = Vec::new();
            for index in 0..parallelism {
                let mut spout = SourceSpout::files(paths.to_vec());
                let mut emitter = emitter_for(&spout);
                spout.open(&ctx(index, parallelism));
                let first = step(&mut spout, &mut emitter);
                assert!(first.len() <= DEFAULT_MAX_PER_CALL);
                got.extend(first);
                got.extend(drain(&mut spout, &mut emitter));
                let c = spout.counters();
                assert_eq!(c.emitted as usize, emitter.counters().emitted as usize);
            }
            assert_eq!(sorted(got), sorted(want.clone()), "{parallelism} tasks");
        }
    }
}

/// Emits some batches, saves (encoding the state), emits the rest. A fresh spout restored
/// from the bytes emits exactly the rest, whether the state comes before or after `open`;
/// the first spout rolled back does too.
#[test]
fn restoring_an_encoded_state_resumes_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let paths = vec![
        write(dir.path(), "a.txt", &numbered(25)),
        write(dir.path(), "b.txt", "\n\nlast line, no newline"),
        write(dir.path(), "c.txt", &numbered(7)),
    ];
    for (index, parallelism) in [(0, 1), (1, 2), (2, 5)] {
        for batches in 0..12 {
            let mut spout = SourceSpout::files(paths.clone()).max_per_call(4);
            let mut emitter = emitter_for(&spout);
            spout.stateful().unwrap().init_state(&State::new());
            spout.open(&ctx(index, parallelism));
            let mut before = Vec::new();
            for _ in 0..batches {
                before.extend(step(&mut spout, &mut emitter));
            }
            let mut state = State::new();
            spout.stateful().unwrap().pre_save("ckpt-1", &mut state);
            assert!(state.iter().all(|(k, _)| k.starts_with(OFFSETS_PREFIX)));
            let bytes = state.encode();
            let rest = drain(&mut spout, &mut emitter);
            let all = [before.clone(), rest.clone()].concat();

            let restored = State::decode(&bytes).unwrap();
            // a restarted task: state first, then open (as Heron orders them)
            let mut early = SourceSpout::files(paths.clone());
            let mut e2 = emitter_for(&early);
            early.stateful().unwrap().init_state(&restored);
            early.open(&ctx(index, parallelism));
            assert_eq!(
                drain(&mut early, &mut e2),
                rest,
                "{batches} batches, task {index}"
            );
            // open first, then the state
            let mut late = SourceSpout::files(paths.clone());
            let mut e3 = emitter_for(&late);
            late.open(&ctx(index, parallelism));
            late.stateful().unwrap().init_state(&restored);
            assert_eq!(drain(&mut late, &mut e3), rest);
            // the same spout rolled back
            spout.stateful().unwrap().init_state(&restored);
            assert_eq!(drain(&mut spout, &mut emitter), rest);
            // and to a clean start: everything again
            spout.stateful().unwrap().init_state(&State::new());
            assert_eq!(drain(&mut spout, &mut emitter), all);
            let c = spout.counters();
            assert_eq!(c.restores, 3);
            assert_eq!(c.saves, 1);
            assert_eq!(c.emitted as usize, all.len() + rest.len() + all.len());
        }
    }
}

#[test]
fn saved_offsets_are_the_sources_under_the_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "a.txt", "ab\ncd\n");
    let mut spout = SourceSpout::files([&path]).max_per_call(1);
    let mut emitter = emitter_for(&spout);
    spout.open(&ctx(0, 1));
    assert_eq!(step(&mut spout, &mut emitter), ["ab"]);
    let mut state = State::new();
    spout.stateful().unwrap().pre_save("c", &mut state);
    let key = format!("{OFFSETS_PREFIX}file:{}", path.display());
    assert_eq!(state.get_i64(&key), Some(3));
    assert_eq!(state.len(), 1);
    assert_eq!(
        Offsets::from_state(&state, OFFSETS_PREFIX).unwrap(),
        spout.source().unwrap().offsets()
    );
    assert_eq!(spout.counters().emitted_bytes, 2);
}

#[test]
fn state_saved_before_open_is_the_restored_one() {
    let mut spout = SourceSpout::files(["/nonexistent/never-opened.txt"]);
    let mut restored = State::new();
    restored.put(format!("{OFFSETS_PREFIX}file:x"), 12);
    spout.stateful().unwrap().init_state(&restored);
    let mut saved = State::new();
    spout.stateful().unwrap().pre_save("c", &mut saved);
    assert_eq!(saved, restored);
    assert!(!spout.exhausted());
}

#[test]
fn lines_that_are_not_utf8_are_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bin.txt");
    std::fs::write(&path, b"ok\n\xff\xfe\n").unwrap();
    let mut spout = SourceSpout::files([&path]);
    let mut emitter = emitter_for(&spout);
    spout.open(&ctx(0, 1));
    assert_eq!(drain(&mut spout, &mut emitter), ["ok", "\u{fffd}\u{fffd}"]);
}

#[test]
#[should_panic(expected = "cannot build its source")]
fn a_source_that_cannot_be_built_panics_in_open() {
    let mut spout = SourceSpout::files(["/nonexistent/input.txt"]);
    spout.open(&ctx(0, 1));
}

#[test]
#[should_panic(expected = "not offsets")]
fn a_state_that_is_not_offsets_panics() {
    let mut spout = SourceSpout::files(Vec::<PathBuf>::new());
    let mut state = State::new();
    state.put(format!("{OFFSETS_PREFIX}p"), "twelve");
    spout.stateful().unwrap().init_state(&state);
}

#[test]
#[should_panic(expected = "cannot seek")]
fn offsets_that_do_not_fit_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "a.txt", "a\n");
    let mut spout = SourceSpout::files([&path]);
    spout.open(&ctx(0, 1));
    let mut state = State::new();
    state.put(format!("{OFFSETS_PREFIX}file:{}", path.display()), 99);
    spout.stateful().unwrap().init_state(&state);
}
