//! One fixture per kind of bad input (`tests/fixtures/errors/`): the message names the file,
//! the line (and column) and what is wrong.

use std::path::{Path, PathBuf};

use heron_flux::{load, FluxError, LoadOptions};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/errors")
        .join(name)
}

fn load_err(name: &str, options: &LoadOptions) -> FluxError {
    match load(&fixture(name), options) {
        Ok(t) => panic!("{name} loaded: {t:?}"),
        Err(e) => e,
    }
}

/// Every problem of `name` as (line, column, message); the text names the file on every line.
fn problems(name: &str, options: &LoadOptions) -> Vec<(usize, usize, String)> {
    let e = load_err(name, options);
    let text = e.to_string();
    let file = fixture(name).display().to_string();
    for line in text.lines() {
        assert!(line.starts_with(&file), "{line}");
    }
    e.problems()
        .iter()
        .map(|p| (p.location.line, p.location.column, p.message.clone()))
        .collect()
}

/// The only problem of `name`.
fn only(name: &str) -> (usize, usize, String) {
    let mut all = problems(name, &LoadOptions::default());
    assert_eq!(all.len(), 1, "{all:#?}");
    all.remove(0)
}

#[test]
fn yaml_syntax_error_has_line_and_column() {
    let (line, col, msg) = only("syntax.yaml");
    assert_eq!((line, col), (6, 19)); // the second `:`
    assert_eq!(
        msg,
        "YAML syntax error: mapping values are not allowed in this context"
    );
    let text = load_err("syntax.yaml", &LoadOptions::default()).to_string();
    assert!(
        text.ends_with(
            "syntax.yaml:6:19: YAML syntax error: mapping values are not allowed in this context"
        ),
        "{text}"
    );
}

#[test]
fn unknown_grouping_type() {
    let (line, col, msg) = only("unknown_grouping.yaml");
    assert_eq!((line, col), (14, 13));
    assert_eq!(msg, "unknown grouping type \"PARTIAL_KEY\" (expected one of SHUFFLE, FIELDS, ALL, GLOBAL, NONE, LOCAL_OR_SHUFFLE, DIRECT)");
}

#[test]
fn stream_from_an_unknown_component() {
    let (line, col, msg) = only("unknown_component.yaml");
    assert_eq!((line, col), (11, 11));
    assert_eq!(
        msg,
        "stream from unknown component \"sentence\" (the spouts and bolts are: sentences, split)"
    );
}

#[test]
fn stream_to_a_spout() {
    let (line, _, msg) = only("to_spout.yaml");
    assert_eq!(line, 12);
    assert_eq!(
        msg,
        "stream to \"sentences\", which is a spout: only bolts subscribe to streams"
    );
}

#[test]
fn fields_that_the_source_stream_lacks() {
    let (line, _, msg) = only("bad_fields.yaml");
    assert_eq!(line, 15);
    assert_eq!(msg, "FIELDS grouping on \"word\", which is not a field of stream \"default\" of \"sentences\" (its fields: sentence)");
}

#[test]
fn a_stream_id_the_source_does_not_declare() {
    let (line, _, msg) = only("undeclared_stream.yaml");
    assert_eq!(line, 18);
    assert_eq!(
        msg,
        "spout \"sentences\" declares no stream \"warnings\" (it declares: default, errors)"
    );
}

#[test]
fn missing_name() {
    let (line, _, msg) = only("missing_name.yaml");
    assert_eq!(line, 0);
    assert_eq!(
        msg,
        "missing `name`: a Flux file must name its topology (`name: my-topology`)"
    );
}

#[test]
fn undefined_property_without_and_with_a_filter() {
    let all = problems("undefined_property.yaml", &LoadOptions::default());
    assert_eq!(all.len(), 2, "{all:#?}");
    assert_eq!((all[0].0, all[0].1), (3, 21));
    assert_eq!(
        all[0].2,
        "undefined property ${workers}: no --filter properties file was given"
    );
    assert_eq!(all[1].0, 8);
    let options = LoadOptions {
        filter: Some(fixture("undefined_property.properties")),
        env_filter: false,
    };
    let all = problems("undefined_property.yaml", &options);
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!((all[0].0, all[0].1), (8, 18));
    assert!(
        all[0]
            .2
            .starts_with("undefined property ${spout.parallelism}: ")
            && all[0]
                .2
                .ends_with("undefined_property.properties has no key \"spout.parallelism\""),
        "{}",
        all[0].2
    );
}

#[test]
fn duplicate_ids() {
    let (line, _, msg) = only("duplicate_id.yaml");
    assert_eq!(line, 10);
    assert!(
        msg.starts_with("duplicate id \"words\": already used by the spout at "),
        "{msg}"
    );
    assert!(msg.ends_with("duplicate_id.yaml:3:5"), "{msg}");
}

#[test]
fn every_java_component_is_named_with_its_line() {
    let all = problems("java.yaml", &LoadOptions::default());
    let got: Vec<(usize, &str)> = all.iter().map(|(l, _, m)| (*l, m.as_str())).collect();
    let expected: [(usize, &str); 7] = [
        (4, "component \"zkHosts\" is the Java object org.apache.storm.kafka.ZkHosts, which heron-rs cannot create"),
        (9, "spout \"kafka\" is the Java class org.apache.storm.kafka.KafkaSpout, which heron-rs cannot run"),
        (16, "spout \"sentences\" has numTasks 4 but parallelism 2"),
        (21, "bolt \"split\" sets `properties`"),
        (25, "bolt \"count\" is the Java class org.apache.storm.starter.bolt.CountBolt"),
        (26, "bolt \"count\" uses `factory`"),
        (34, "CUSTOM grouping (customClass org.apache.storm.testing.NGrouping) is a Java class"),
    ];
    assert_eq!(got.len(), expected.len(), "{all:#?}");
    for ((line, msg), (want_line, want)) in got.iter().zip(expected) {
        assert_eq!(*line, want_line, "{msg}");
        assert!(
            msg.starts_with(want),
            "{msg}\n  does not start with\n{want}"
        );
    }
}

#[test]
fn classpath_includes_are_refused() {
    let (line, _, msg) = only("resource_include.yaml");
    assert_eq!(line, 3);
    assert!(
        msg.starts_with("`resource: true` includes a Java classpath resource"),
        "{msg}"
    );
}

#[test]
fn topology_source_is_refused() {
    let (line, _, msg) = only("topology_source.yaml");
    assert_eq!(line, 2);
    assert!(
        msg.starts_with("`topologySource` builds the topology with a Java class"),
        "{msg}"
    );
}

#[test]
fn a_missing_file() {
    let e = load_err("no_such.yaml", &LoadOptions::default());
    assert!(
        e.to_string()
            .contains("no_such.yaml: cannot read the Flux file"),
        "{e}"
    );
}

#[test]
fn a_missing_include_names_the_include_line() {
    let dir = tempfile::tempdir().unwrap();
    let main = dir.path().join("main.yaml");
    std::fs::write(
        &main,
        "name: m\nincludes:\n  - file: parts/missing.yaml\nspouts:\n  - id: s\n    className: org.apache.storm.flux.wrappers.spouts.FluxShellSpout\n    constructorArgs: [[python3, s.py], [x]]\n",
    )
    .unwrap();
    let e = load(&main, &LoadOptions::default()).unwrap_err();
    assert_eq!(e.problems().len(), 1, "{e}");
    assert_eq!(e.problems()[0].location.line, 3);
    let want = format!(
        "included file {} does not exist",
        dir.path().join("parts/missing.yaml").display()
    );
    assert_eq!(e.problems()[0].message, want);
}

#[test]
fn problems_in_an_included_file_name_that_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("main.yaml"),
        "name: m\nincludes:\n  - {file: bolts.yaml}\nspouts:\n  - id: s\n    className: org.apache.storm.flux.wrappers.spouts.FluxShellSpout\n    constructorArgs: [[python3, s.py], [x]]\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("bolts.yaml"),
        "includes:\n  - {file: ignored.yaml}\nbolts:\n  - id: b\n    className: com.example.JavaBolt\n",
    )
    .unwrap();
    let e = load(&dir.path().join("main.yaml"), &LoadOptions::default()).unwrap_err();
    assert_eq!(e.problems().len(), 1, "{e}");
    let p = &e.problems()[0];
    assert!(p.location.file.ends_with("bolts.yaml"), "{e}");
    assert_eq!(p.location.line, 5);
    assert!(
        p.message
            .starts_with("bolt \"b\" is the Java class com.example.JavaBolt"),
        "{e}"
    );
}
