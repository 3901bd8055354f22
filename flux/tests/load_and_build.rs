//! Loading the fixture Flux files under `tests/fixtures/` and building them into
//! `HeronTopology`s whose components, streams, fields, groupings, parallelism and config are
//! checked.

use std::path::{Path, PathBuf};

use heron_api::{Config, Grouping, HeronTopology, ReliabilityMode};
use heron_flux::{load, ComponentKind, FluxGrouping, FluxTopology, LoadOptions};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn load_ok(name: &str, options: &LoadOptions) -> FluxTopology {
    load(&fixture(name), options).unwrap_or_else(|e| panic!("{name}:\n{e}"))
}

/// (source, stream, grouping) of every subscription of `bolt`.
fn inputs(t: &HeronTopology, bolt: &str) -> Vec<(String, String, String)> {
    t.inputs(bolt)
        .unwrap()
        .iter()
        .map(|i| {
            (
                i.source.clone(),
                i.stream.clone(),
                format!("{:?}", i.grouping),
            )
        })
        .collect()
}

/// (stream, fields, direct) of every output of `component`.
fn outputs(t: &HeronTopology, component: &str) -> Vec<(String, Vec<String>, bool)> {
    t.outputs(component)
        .unwrap()
        .iter()
        .map(|s| (s.id.clone(), s.fields.as_slice().to_vec(), s.direct))
        .collect()
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

fn triple(a: &str, b: &str, c: &str) -> (String, String, String) {
    (a.to_owned(), b.to_owned(), c.to_owned())
}

#[test]
fn pystorm_word_count() {
    let flux = load_ok("pystorm_wc/wordcount.yaml", &LoadOptions::default());
    assert_eq!(flux.name(), "pystorm-word-count");
    assert!(flux.resources_dir().is_absolute());
    assert!(flux.resources_dir().ends_with("pystorm_wc"));
    assert!(flux.resources_dir().join("split_bolt.py").is_file());
    let ids: Vec<(&str, ComponentKind, u32)> = flux
        .components()
        .iter()
        .map(|c| (c.id.as_str(), c.kind, c.parallelism))
        .collect();
    assert_eq!(
        ids,
        [
            ("sentences", ComponentKind::Spout, 1),
            ("split", ComponentKind::Bolt, 2),
            ("count", ComponentKind::Bolt, 2)
        ]
    );
    assert_eq!(
        flux.component("split").unwrap().command,
        ["python3", "split_bolt.py"]
    );
    assert_eq!(flux.streams()[1].name.as_deref(), Some("split --> count"));
    assert_eq!(
        flux.streams()[1].grouping,
        FluxGrouping::Fields(strs(&["word"]))
    );

    let t = flux.build().unwrap();
    assert_eq!(t.name(), "pystorm-word-count");
    assert_eq!(t.spout_names().collect::<Vec<_>>(), ["sentences"]);
    assert_eq!(t.bolt_names().collect::<Vec<_>>(), ["split", "count"]);
    assert_eq!(t.parallelism("split"), Some(2));
    assert_eq!(t.parallelism("count"), Some(2));
    assert_eq!(
        outputs(&t, "sentences"),
        [("default".to_owned(), strs(&["sentence"]), false)]
    );
    assert_eq!(
        outputs(&t, "count"),
        [("default".to_owned(), strs(&["word", "count"]), false)]
    );
    assert_eq!(
        inputs(&t, "split"),
        [triple("sentences", "default", "SHUFFLE")]
    );
    assert_eq!(
        inputs(&t, "count"),
        [triple("split", "default", "Fields([word])")]
    );

    let c = t.config();
    assert_eq!(c.reliability_mode(), ReliabilityMode::AtLeastOnce);
    assert_eq!(c.get("topology.reliability.mode"), Some("ATLEAST_ONCE"));
    assert_eq!(c.num_stmgrs(), 2, "topology.workers 2 → 2 containers");
    assert_eq!(c.max_spout_pending(), 200);
    assert_eq!(c.message_timeout_secs(), 60);
    assert!(!c.debug());
    assert_eq!(c.get("topology.acker.executors"), Some("1"));

    // the proto Heron sees
    let proto = t.to_proto();
    assert_eq!(proto.name, "pystorm-word-count");
    let count = proto.bolts.iter().find(|b| b.comp.name == "count").unwrap();
    let input = &count.inputs[0];
    assert_eq!(input.stream.component_name, "split");
    assert_eq!(input.stream.id, "default");
    assert_eq!(
        input.gtype,
        Grouping::Fields(vec!["word"].into()).proto_type() as i32
    );
    let keys: Vec<&str> = input
        .grouping_fields
        .as_ref()
        .unwrap()
        .keys
        .iter()
        .map(|k| k.key.as_str())
        .collect();
    assert_eq!(keys, ["word"]);
    let comp_conf = Config::from_proto(&count.comp.config);
    assert_eq!(comp_conf.get("topology.component.parallelism"), Some("2"));
    let top_conf = Config::from_proto(proto.topology_config.as_ref().unwrap());
    assert_eq!(top_conf.get("topology.stmgrs"), Some("2"));

    // factories make shell components
    assert!(t.create_spout("sentences").is_some());
    assert!(t.create_bolt("count").is_some());
}

#[test]
fn generated_streamparse_file_loads_and_builds_unmodified() {
    let flux = load_ok("streamparse_wc/src/wordcount.yaml", &LoadOptions::default());
    assert_eq!(flux.name(), "wordcount");
    let commands: Vec<(&str, Vec<String>)> = flux
        .components()
        .iter()
        .map(|c| (c.id.as_str(), c.command.clone()))
        .collect();
    assert_eq!(
        commands,
        [
            (
                "word_spout",
                strs(&["streamparse_run", "-s json spouts.words.WordSpout"])
            ),
            (
                "split_bolt",
                strs(&["streamparse_run", "-s json bolts.split.SplitBolt"])
            ),
            (
                "count_bolt",
                strs(&["streamparse_run", "-s json bolts.count.CountBolt"])
            ),
        ]
    );
    // streamparse_run imports module.Class from its working directory, the resources folder
    for c in flux.components() {
        assert_eq!(c.command[0], "streamparse_run");
        let target = c.command[1].rsplit(' ').next().unwrap();
        let (module, class) = target.rsplit_once('.').unwrap();
        let file = flux.resources_dir().join(module.replace('.', "/") + ".py");
        let source =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(
            source.contains(&format!("class {class}(")),
            "{class} not in {}",
            file.display()
        );
    }
    let spout = flux.component("word_spout").unwrap();
    assert_eq!(spout.config.get("topology.max.spout.pending"), Some("50"));

    let t = flux.build().unwrap();
    assert_eq!(t.parallelism("word_spout"), Some(1));
    assert_eq!(t.parallelism("split_bolt"), Some(2));
    assert_eq!(t.parallelism("count_bolt"), Some(2));
    assert_eq!(
        outputs(&t, "word_spout"),
        [("default".to_owned(), strs(&["sentence"]), false)]
    );
    assert_eq!(
        outputs(&t, "split_bolt"),
        [("default".to_owned(), strs(&["word"]), false)]
    );
    assert_eq!(
        outputs(&t, "count_bolt"),
        [("default".to_owned(), strs(&["word", "count"]), false)]
    );
    assert_eq!(
        inputs(&t, "split_bolt"),
        [triple("word_spout", "default", "SHUFFLE")]
    );
    assert_eq!(
        inputs(&t, "count_bolt"),
        [triple("split_bolt", "default", "Fields([word])")]
    );
    assert_eq!(
        t.component_config("word_spout")
            .unwrap()
            .get("topology.max.spout.pending"),
        Some("50")
    );
    let c = t.config();
    assert_eq!(
        c.reliability_mode(),
        ReliabilityMode::AtLeastOnce,
        "topology.acker.executors: 1"
    );
    assert_eq!(c.num_stmgrs(), 1);
    assert_eq!(c.get("storm.workers.list"), Some("[]"));
    assert_eq!(c.get("sudo_user"), Some(""));
    assert_eq!(c.get("pystorm.log.level"), Some("info"));

    // building in a working directory sets every component's
    let dir = flux.resources_dir().to_path_buf();
    let spec = spout.shell_spec(Some(&dir));
    assert_eq!(spec.working_dir.as_deref(), Some(dir.as_path()));
    assert_eq!(spec.streams.len(), 1);
    assert!(flux.build_in(&dir).is_ok());
}

#[test]
fn includes_with_and_without_override() {
    // cargo runs tests in flux/, so `common/base.yaml` resolves only against main.yaml's folder
    let flux = load_ok("includes/main.yaml", &LoadOptions::default());
    assert_eq!(
        flux.name(),
        "includes-main",
        "main's name wins over the non-override include"
    );
    let c = flux.config();
    assert_eq!(
        c.get("owner"),
        Some("main"),
        "override: false keeps main's value"
    );
    assert_eq!(
        c.get("base.only"),
        Some("yes-base"),
        "override: false adds missing keys"
    );
    assert_eq!(
        c.get("topology.workers"),
        Some("3"),
        "override: true replaces"
    );
    assert_eq!(c.num_stmgrs(), 3);

    let split = flux.component("split").unwrap();
    assert_eq!(split.parallelism, 2);
    assert_eq!(split.command, ["python3", "split_bolt.py"]);
    assert!(split.location.file.ends_with("includes/main.yaml"));
    let count = flux.component("count").unwrap();
    assert_eq!(count.parallelism, 4);
    assert_eq!(count.command, ["python3", "better_count.py"]);
    assert!(count.location.file.ends_with("common/override.yaml"));
    let log = flux.component("log").unwrap();
    assert!(log.location.file.ends_with("common/base.yaml"));
    assert!(log.streams.is_empty());

    let t = flux.build().unwrap();
    assert_eq!(
        t.bolt_names().collect::<Vec<_>>(),
        ["split", "count", "log"]
    );
    assert_eq!(
        inputs(&t, "split"),
        [triple("sentences", "default", "SHUFFLE")]
    );
    assert_eq!(
        inputs(&t, "count"),
        [triple("split", "default", "Fields([word])")]
    );
    assert_eq!(inputs(&t, "log"), [triple("count", "default", "LOWEST")]);
}

#[test]
fn filter_and_env_filter() {
    std::env::set_var("HERON_FLUX_TEST_DATA", "/data/wc");
    let options = LoadOptions {
        filter: Some(fixture("filter/dev.properties")),
        env_filter: true,
    };
    let flux = load_ok("filter/topology.yaml", &options);
    assert_eq!(flux.name(), "filtered-wc");
    assert_eq!(flux.config().get("topology.workers"), Some("3"));
    assert_eq!(flux.config().num_stmgrs(), 3);
    assert_eq!(flux.config().get("data.dir"), Some("/data/wc"));
    assert_eq!(flux.config().get("first.host"), Some("zk1"));
    let spout = flux.component("sentences").unwrap();
    assert_eq!(spout.command, ["/usr/bin/python3", "sentence_spout.py"]);
    assert_eq!(spout.parallelism, 2, "a continued properties line");
    assert_eq!(
        flux.component("split").unwrap().command,
        ["/usr/bin/python3", "split_bolt.py", "--out", "/data/wc/out"]
    );
    assert_eq!(flux.build().unwrap().parallelism("sentences"), Some(2));

    // without --env-filter, each ${ENV-...} is an error naming its line
    let options = LoadOptions {
        env_filter: false,
        ..options
    };
    let e = load(&fixture("filter/topology.yaml"), &options).unwrap_err();
    let lines: Vec<usize> = e.problems().iter().map(|p| p.location.line).collect();
    assert_eq!(lines, [5, 15], "{e}");
    assert!(
        e.problems()[0]
            .message
            .contains("${ENV-HERON_FLUX_TEST_DATA} needs --env-filter"),
        "{e}"
    );
}

#[test]
fn every_grouping_and_named_streams() {
    let flux = load_ok("all_groupings.yaml", &LoadOptions::default());
    let t = flux.build().unwrap();
    assert_eq!(
        outputs(&t, "source"),
        [
            ("default".to_owned(), strs(&["key", "value"]), false),
            ("control".to_owned(), strs(&["command"]), false)
        ]
    );
    assert_eq!(
        outputs(&t, "router"),
        [
            ("default".to_owned(), strs(&["key"]), false),
            ("picked".to_owned(), strs(&["key", "task"]), true)
        ]
    );
    assert!(outputs(&t, "sink").is_empty());
    assert_eq!(
        inputs(&t, "router"),
        [
            triple("source", "default", "SHUFFLE"),
            triple("source", "control", "LOWEST")
        ]
    );
    assert_eq!(
        inputs(&t, "sink"),
        [
            triple("source", "control", "ALL"),
            triple("router", "default", "Fields([key])"),
            triple("source", "default", "LocalOrShuffle"),
            triple("router", "picked", "DIRECT"),
        ]
    );
    assert_eq!(t.parallelism("sink"), Some(4));

    let c = t.config();
    assert_eq!(c.reliability_mode(), ReliabilityMode::AtMostOnce);
    assert_eq!(c.tick_tuple_freq_ms(), Some(10_000));
    assert_eq!(
        c.get("topology.environment"),
        Some(r#"{"PYTHONUNBUFFERED":"1"}"#)
    );
    assert_eq!(c.get("topology.subprocess.timeout.secs"), Some("20"));
    assert_eq!(c.get("topology.shellbolt.max.pending"), Some("50"));
    assert_eq!(c.get("my.list"), Some(r#"["a","b"]"#));
    let sink = t.component_config("sink").unwrap();
    assert_eq!(sink.tick_tuple_freq_ms(), Some(1000));
    assert_eq!(sink.get("sink.tags"), Some(r#"["x","y"]"#));
    // topology.environment reaches every shell subprocess
    for c in flux.components() {
        assert_eq!(
            c.env,
            [("PYTHONUNBUFFERED".to_owned(), "1".to_owned())],
            "{}",
            c.id
        );
    }
}
