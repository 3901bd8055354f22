use std::path::Path;

use super::*;
use crate::include;
use crate::model::FluxGrouping;
use crate::subst::Substitutions;

const SPOUT: &str = "org.apache.storm.flux.wrappers.spouts.FluxShellSpout";
const BOLT: &str = "org.apache.storm.flux.wrappers.bolts.FluxShellBolt";

fn check(text: &str) -> Result<FluxTopology, Vec<Problem>> {
    let none = |_: &str| None;
    let s = Substitutions {
        properties: None,
        env_filter: false,
        env: &none,
    };
    let mut problems = Vec::new();
    let m = include::from_text(Path::new("t.yaml"), text, &s, &mut problems);
    let r = m.map(interpret);
    let t = match r {
        Some(Ok(t)) => Some(t),
        Some(Err(mut p)) => {
            problems.append(&mut p);
            None
        }
        None => None,
    };
    crate::error::sort(&mut problems);
    match t {
        Some(t) if problems.is_empty() => Ok(t),
        _ => Err(problems),
    }
}

/// (line, message) of every problem.
fn errors(text: &str) -> Vec<(usize, String)> {
    check(text)
        .expect_err("expected problems")
        .into_iter()
        .map(|p| (p.location.line, p.message))
        .collect()
}

fn one_error(text: &str) -> (usize, usize, String) {
    let errs = check(text).expect_err("expected a problem");
    assert_eq!(errs.len(), 1, "{errs:#?}");
    let p = &errs[0];
    (p.location.line, p.location.column, p.message.clone())
}

/// A valid word count; `{streams}` is appended.
fn wc(extra_bolt: &str, streams: &str) -> String {
    format!(
        "name: wc
spouts:
  - id: sentences
    className: {SPOUT}
    constructorArgs: [[python3, spout.py], [sentence]]
bolts:
  - id: split
    className: {BOLT}
    constructorArgs: [[python3, split.py], [word]]
    parallelism: 2
{extra_bolt}streams:
  - from: sentences
    to: split
    grouping: {{type: SHUFFLE}}
{streams}"
    )
}

#[test]
fn a_valid_file_loads() {
    let t = check(&wc("", "")).unwrap();
    assert_eq!(t.name(), "wc");
    let split = t.component("split").unwrap();
    assert_eq!(split.command, ["python3", "split.py"]);
    assert_eq!(split.parallelism, 2);
    assert_eq!(split.streams[0].fields, ["word"]);
    assert_eq!(split.location.line, 7);
    assert_eq!(t.streams()[0].grouping, FluxGrouping::Shuffle);
    assert_eq!(t.streams()[0].stream_id, "default");
    assert_eq!(t.streams()[0].location.line, 12);
}

#[test]
fn missing_name() {
    let text = wc("", "").replace("name: wc\n", "");
    let (line, _, msg) = one_error(&text);
    assert_eq!(line, 0);
    assert!(msg.contains("missing `name`"), "{msg}");
}

#[test]
fn every_java_thing_is_named_with_its_line() {
    let text = format!(
        "name: wc
components:
  - id: zk
    className: org.apache.storm.kafka.ZkHosts
spouts:
  - id: kafka
    className: org.apache.storm.kafka.KafkaSpout
    constructorArgs: [{{ref: zk}}]
bolts:
  - id: count
    className: org.apache.storm.starter.CountBolt
    parallelism: 2
    numTasks: 4
  - id: split
    className: {BOLT}
    constructorArgs: [[python3, split.py], [word]]
    properties:
      - {{name: x, value: 1}}
streams:
  - from: kafka
    to: count
    grouping: {{type: SHUFFLE}}
"
    );
    let errs = errors(&text);
    let lines: Vec<usize> = errs.iter().map(|e| e.0).collect();
    assert_eq!(lines, [3, 7, 11, 13, 17], "{errs:#?}");
    assert!(
        errs[0]
            .1
            .contains("component \"zk\" is the Java object org.apache.storm.kafka.ZkHosts"),
        "{}",
        errs[0].1
    );
    assert!(
        errs[1]
            .1
            .contains("spout \"kafka\" is the Java class org.apache.storm.kafka.KafkaSpout"),
        "{}",
        errs[1].1
    );
    assert!(
        errs[2].1.contains("bolt \"count\" is the Java class"),
        "{}",
        errs[2].1
    );
    assert!(
        errs[3].1.contains("numTasks 4 but parallelism 2"),
        "{}",
        errs[3].1
    );
    assert!(errs[4].1.contains("`properties`"), "{}", errs[4].1);
}

#[test]
fn topology_source_and_factory_are_refused() {
    let text = wc("", "").replace(
        "    parallelism: 2\n",
        "    parallelism: 2\n    factory: make\n",
    ) + "topologySource:\n  className: x.Y\n";
    let errs = errors(&text);
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert_eq!(errs[0].0, 11);
    assert!(errs[0].1.contains("`factory`"), "{}", errs[0].1);
    assert_eq!(errs[1].0, 16);
    assert!(errs[1].1.contains("topologySource"), "{}", errs[1].1);
}

#[test]
fn unknown_and_custom_groupings() {
    let (line, col, msg) = one_error(&wc(
        "",
        "  - from: sentences\n    to: split\n    grouping: {type: PARTIAL_KEY, streamId: x}\n",
    ));
    assert_eq!((line, col), (17, 22));
    assert!(
        msg.contains("unknown grouping type \"PARTIAL_KEY\""),
        "{msg}"
    );
    assert!(msg.contains("LOCAL_OR_SHUFFLE"), "{msg}");
    let (line, _, msg) = one_error(&wc(
        "",
        "  - from: sentences\n    to: split\n    grouping:\n      type: CUSTOM\n      customClass: {className: my.Grouping}\n",
    ));
    assert_eq!(line, 18);
    assert!(
        msg.contains("CUSTOM grouping (customClass my.Grouping)"),
        "{msg}"
    );
}

#[test]
fn streams_from_or_to_unknown_components_or_to_a_spout() {
    let errs = errors(&wc(
        "",
        "  - from: nowhere\n    to: split\n    grouping: {type: ALL}\n  - from: split\n    to: ghost\n    grouping: {type: ALL}\n  - from: split\n    to: sentences\n    grouping: {type: ALL}\n",
    ));
    assert_eq!(errs.len(), 3, "{errs:#?}");
    assert_eq!(errs[0].0, 15);
    assert!(errs[0].1.contains("stream from unknown component \"nowhere\" (the spouts and bolts are: sentences, split)"), "{}", errs[0].1);
    assert_eq!(errs[1].0, 19);
    assert!(
        errs[1].1.contains("stream to unknown component \"ghost\""),
        "{}",
        errs[1].1
    );
    assert_eq!(errs[2].0, 22);
    assert!(errs[2].1.contains("which is a spout"), "{}", errs[2].1);
}

const COUNT: &str = "  - id: count
    className: org.apache.storm.flux.wrappers.bolts.FluxShellBolt
    constructorArgs:
      - [python3, count.py]
    configMethods:
      - name: setDefaultStream
        args:
          - [word, count]
      - name: setNamedStream
        args: [totals, [total]]
      - name: addComponentConfig
        args: [my.list, [a, b]]
      - name: addComponentConfig
        args: [topology.tick.tuple.freq.secs, 5]
      - name: setEnv
        args:
          - {PYTHONUNBUFFERED: 1}
";

#[test]
fn fields_and_stream_ids_are_checked_against_the_source() {
    let errs = errors(&wc(
        COUNT,
        "  - from: split\n    to: count\n    grouping:\n      type: FIELDS\n      args: [word, letter]\n  - from: count\n    to: split\n    grouping: {type: SHUFFLE, streamId: errors}\n",
    ));
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert_eq!(errs[0].0, 36);
    assert!(errs[0].1.contains("FIELDS grouping on \"letter\", which is not a field of stream \"default\" of \"split\" (its fields: word)"), "{}", errs[0].1);
    assert_eq!(errs[1].0, 39);
    assert!(
        errs[1].1.contains(
            "bolt \"count\" declares no stream \"errors\" (it declares: default, totals)"
        ),
        "{}",
        errs[1].1
    );
}

#[test]
fn config_methods_and_one_argument_constructor() {
    let t = check(&wc(
        COUNT,
        "  - from: split\n    to: count\n    grouping: {type: FIELDS, args: [word]}\n  - from: count\n    to: split\n    grouping: {type: LOCAL_OR_SHUFFLE, streamId: totals}\n",
    ))
    .unwrap();
    let count = t.component("count").unwrap();
    assert_eq!(count.command, ["python3", "count.py"]);
    let streams: Vec<(&str, Vec<String>)> = count
        .streams
        .iter()
        .map(|s| (s.id.as_str(), s.fields.clone()))
        .collect();
    assert_eq!(
        streams,
        [
            ("default", vec!["word".to_owned(), "count".to_owned()]),
            ("totals", vec!["total".to_owned()])
        ]
    );
    assert_eq!(count.config.get("my.list"), Some(r#"["a","b"]"#));
    assert_eq!(count.config.tick_tuple_freq_ms(), Some(5000));
    assert_eq!(count.env, [("PYTHONUNBUFFERED".to_owned(), "1".to_owned())]);
    assert_eq!(t.streams()[2].grouping, FluxGrouping::LocalOrShuffle);
    assert_eq!(
        t.streams()[1].grouping,
        FluxGrouping::Fields(vec!["word".into()])
    );
}

#[test]
fn bad_constructor_args_and_config_methods() {
    let errs = errors(&wc(
        "  - id: b1
    className: org.apache.storm.flux.wrappers.bolts.FluxShellBolt
    constructorArgs: [[python3, b.py], [x], [y]]
  - id: b2
    className: org.apache.storm.flux.wrappers.bolts.FluxShellBolt
    constructorArgs: [[python3, b.py]]
    configMethods:
      - {name: setNamedStream, args: [[x]]}
      - {name: changeChildCWD, args: [false]}
  - id: b3
    className: org.apache.storm.flux.wrappers.spouts.FluxShellSpout
    constructorArgs: [[python3, b.py]]
",
        "",
    ));
    let lines: Vec<usize> = errs.iter().map(|e| e.0).collect();
    assert_eq!(lines, [13, 18, 19, 21], "{errs:#?}");
    assert!(errs[0].1.contains("FluxShellBolt takes constructorArgs [[command, args...]] or [[command, args...], [output fields...]]; got 3"), "{}", errs[0].1);
    assert!(
        errs[1]
            .1
            .contains("setNamedStream takes args [stream id, [field, ...]]"),
        "{}",
        errs[1].1
    );
    assert!(
        errs[2]
            .1
            .contains("unknown configMethod \"changeChildCWD\""),
        "{}",
        errs[2].1
    );
    assert!(errs[3].1.contains("which is not a bolt"), "{}", errs[3].1);
}

#[test]
fn duplicate_ids_and_subscriptions() {
    let errs = errors(&wc(
        "  - id: sentences\n    className: org.apache.storm.flux.wrappers.bolts.FluxShellBolt\n    constructorArgs: [[x]]\n",
        "  - from: sentences\n    to: split\n    grouping: {type: GLOBAL}\n",
    ));
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert_eq!(errs[0].0, 11);
    assert!(
        errs[0]
            .1
            .contains("duplicate id \"sentences\": already used by the spout at t.yaml:3:5"),
        "{}",
        errs[0].1
    );
    assert_eq!(errs[1].0, 18);
    assert!(
        errs[1]
            .1
            .contains("already subscribes to stream \"default\" of \"sentences\" (at t.yaml:15:5)"),
        "{}",
        errs[1].1
    );
}

#[test]
fn direct_streams() {
    let t = check(&wc(
        COUNT,
        "  - from: split\n    to: count\n    grouping: {type: DIRECT}\n",
    ))
    .unwrap();
    assert!(t.component("split").unwrap().streams[0].direct);
    assert!(!t.component("sentences").unwrap().streams[0].direct);
    let (line, _, msg) = one_error(&wc(
        COUNT,
        "  - from: sentences\n    to: count\n    grouping: {type: DIRECT}\n",
    ));
    assert_eq!(line, 29);
    assert!(
        msg.contains("every subscription to it must be DIRECT (this one is SHUFFLE)"),
        "{msg}"
    );
}

#[test]
fn unknown_keys_and_no_spouts() {
    let errs = errors("name: wc\nbolts: []\nspoutz: []\n");
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert_eq!(errs[0].0, 0);
    assert!(errs[0].1.contains("no `spouts`"), "{}", errs[0].1);
    assert_eq!(errs[1].0, 3);
    assert!(
        errs[1].1.contains("unknown top-level key \"spoutz\""),
        "{}",
        errs[1].1
    );
    let (line, _, msg) =
        one_error(&wc("", "").replace("    parallelism: 2\n", "    paralelism: 2\n"));
    assert_eq!(line, 10);
    assert!(
        msg.contains("bolt \"split\": unknown key \"paralelism\""),
        "{msg}"
    );
}

#[test]
fn invalid_names() {
    let (line, _, msg) = one_error(&wc("", "").replace("name: wc", "name: word count"));
    assert_eq!(line, 1);
    assert!(
        msg.contains("invalid topology name \"word count\""),
        "{msg}"
    );
}
