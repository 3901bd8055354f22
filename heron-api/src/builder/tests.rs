use heron_proto::{api, system};

use super::*;
use crate::{
    values, OutputCollector, ReliabilityMode, SpoutOutputCollector, TopologyContext, Tuple, Value,
};

#[derive(Clone)]
struct S {
    streams: Vec<(&'static str, Vec<&'static str>, bool)>,
}
impl Spout for S {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        for (id, fields, direct) in &self.streams {
            if *direct {
                d.declare_direct_stream(id, Fields::new(fields.iter().copied()));
            } else {
                d.declare_stream(id, Fields::new(fields.iter().copied()));
            }
        }
    }
    fn next_tuple(&mut self, c: &mut SpoutOutputCollector) {
        c.emit(values!["x", 1]);
    }
}

fn spout() -> S {
    S {
        streams: vec![
            ("default", vec!["word", "n"], false),
            ("direct", vec!["word"], true),
        ],
    }
}

struct B;
impl Bolt for B {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["out"]));
    }
    fn execute(&mut self, _: &Tuple, _: &mut OutputCollector) {}
}

fn base() -> TopologyBuilder {
    let mut b = TopologyBuilder::new();
    b.set_spout("spout", spout, 2);
    b
}

fn err(b: TopologyBuilder) -> TopologyError {
    b.build("topo", Config::new()).expect_err("must be refused")
}

#[test]
fn topology_name_errors() {
    assert_eq!(
        base().build("", Config::new()).unwrap_err(),
        TopologyError::EmptyTopologyName
    );
    let e = base().build("a b", Config::new()).unwrap_err();
    assert_eq!(e, TopologyError::InvalidTopologyName("a b".into()));
    assert!(e.to_string().contains("\"a b\""));
    assert!(base().build("Word-Count_1.0", Config::new()).is_ok());
}

#[test]
fn no_spouts() {
    let mut b = TopologyBuilder::new();
    b.set_bolt("b", || B, 1);
    assert_eq!(err(b), TopologyError::NoSpouts("topo".into()));
}

#[test]
fn component_name_errors() {
    for bad in ["", "a/b", "__sys", "sp ace"] {
        let mut b = base();
        b.set_bolt(bad, || B, 1);
        match err(b) {
            TopologyError::InvalidComponentName { name, .. } => assert_eq!(name, bad),
            other => panic!("{bad:?}: {other}"),
        }
    }
}

#[test]
fn duplicate_component() {
    let mut b = base();
    b.set_bolt("spout", || B, 1);
    let e = err(b);
    assert_eq!(e, TopologyError::DuplicateComponent("spout".into()));
    assert!(e.to_string().contains("spout"));
}

#[test]
fn zero_parallelism() {
    let mut b = base();
    b.set_bolt("b", || B, 0);
    assert_eq!(err(b), TopologyError::ZeroParallelism("b".into()));
}

#[test]
fn duplicate_stream_and_field_and_bad_stream_name() {
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "s",
        || S {
            streams: vec![("x", vec!["a"], false), ("x", vec!["b"], false)],
        },
        1,
    );
    assert_eq!(
        err(b),
        TopologyError::DuplicateStream {
            component: "s".into(),
            stream: "x".into()
        }
    );
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "s",
        || S {
            streams: vec![("x", vec!["a", "a"], false)],
        },
        1,
    );
    assert!(matches!(err(b), TopologyError::DuplicateField { field, .. } if field == "a"));
    let mut b = TopologyBuilder::new();
    b.set_spout(
        "s",
        || S {
            streams: vec![("__tick", vec!["a"], false)],
        },
        1,
    );
    assert!(
        matches!(err(b), TopologyError::InvalidStreamName { stream, .. } if stream == "__tick")
    );
}

#[test]
fn unknown_source() {
    let mut b = base();
    b.set_bolt("b", || B, 1).shuffle_grouping("nope");
    let e = err(b);
    assert_eq!(
        e,
        TopologyError::UnknownSource {
            component: "b".into(),
            source_component: "nope".into()
        }
    );
    assert!(e.to_string().contains("\"nope\""));
}

#[test]
fn unknown_stream() {
    let mut b = base();
    b.set_bolt("b", || B, 1)
        .shuffle_grouping_stream("spout", "missing");
    let e = err(b);
    assert!(matches!(&e, TopologyError::UnknownStream { stream, .. } if stream == "missing"));
    assert!(e.to_string().contains("missing") && e.to_string().contains("spout"));
}

#[test]
fn unknown_and_empty_grouping_fields() {
    let mut b = base();
    b.set_bolt("b", || B, 1)
        .fields_grouping("spout", Fields::new(["word", "nope"]));
    let e = err(b);
    assert!(matches!(&e, TopologyError::UnknownGroupingField { field, .. } if field == "nope"));
    assert!(e.to_string().contains("\"nope\""));
    let mut b = base();
    b.set_bolt("b", || B, 1)
        .fields_grouping("spout", Fields::empty());
    assert!(matches!(err(b), TopologyError::EmptyGroupingFields { .. }));
}

#[test]
fn direct_grouping_rules() {
    let mut b = base();
    b.set_bolt("b", || B, 1).direct_grouping("spout");
    assert_eq!(
        err(b),
        TopologyError::DirectGroupingOnNonDirectStream {
            component: "b".into(),
            source_component: "spout".into(),
            stream: "default".into()
        }
    );
    let mut b = base();
    b.set_bolt("b", || B, 1)
        .shuffle_grouping_stream("spout", "direct");
    assert!(matches!(
        err(b),
        TopologyError::DirectStreamNeedsDirectGrouping { .. }
    ));
    let mut b = base();
    b.set_bolt("b", || B, 1)
        .direct_grouping_stream("spout", "direct");
    assert!(b.build("t", Config::new()).is_ok());
}

#[test]
fn duplicate_input() {
    let mut b = base();
    b.set_bolt("b", || B, 1)
        .shuffle_grouping("spout")
        .all_grouping("spout");
    assert!(matches!(err(b), TopologyError::DuplicateInput { .. }));
}

#[derive(Clone)]
struct G;
impl CustomStreamGrouping for G {
    fn choose_tasks(&mut self, _: &[Value]) -> Vec<i32> {
        vec![]
    }
}

fn full() -> HeronTopology {
    let mut b = base();
    b.set_bolt("shuffle", || B, 3)
        .shuffle_grouping("spout")
        .add_configuration("my.key", 5);
    b.set_bolt("fields", || B, 1)
        .fields_grouping("spout", ["n"]);
    b.set_bolt("all", || B, 1)
        .all_grouping_stream("shuffle", "default");
    b.set_bolt("global", || B, 1).global_grouping("spout");
    b.set_bolt("none", || B, 1).none_grouping("spout");
    b.set_bolt("direct", || B, 1)
        .direct_grouping_stream("spout", "direct");
    b.set_bolt("local", || B, 1)
        .local_or_shuffle_grouping("spout");
    b.set_bolt("custom", || B, 1)
        .custom_grouping("spout", "default", G);
    let mut conf = Config::new();
    conf.set(crate::config::TOPOLOGY_ACKING, true);
    b.build("full", conf).unwrap()
}

#[test]
fn proto_conversion() {
    use api::Grouping as P;
    let t = full().to_proto();
    assert_eq!(t.id, "");
    assert_eq!(t.name, "full");
    assert_eq!(t.state, api::TopologyState::Running as i32);
    assert_eq!(t.spouts.len(), 1);
    let spout = &t.spouts[0];
    assert_eq!(spout.comp.name, "spout");
    assert!(spout.comp.class_name.as_deref().unwrap().ends_with("::S"));
    let outs: Vec<(&str, Vec<&str>)> = spout
        .outputs
        .iter()
        .map(|o| {
            assert_eq!(o.stream.component_name, "spout");
            assert!(o
                .schema
                .keys
                .iter()
                .all(|k| k.r#type == api::Type::Object as i32));
            (
                o.stream.id.as_str(),
                o.schema.keys.iter().map(|k| k.key.as_str()).collect(),
            )
        })
        .collect();
    assert_eq!(
        outs,
        vec![("default", vec!["word", "n"]), ("direct", vec!["word"])]
    );
    let conf = Config::from_proto(&spout.comp.config);
    assert_eq!(conf.get("topology.component.parallelism"), Some("2"));

    let bolt = |name: &str| t.bolts.iter().find(|b| b.comp.name == name).unwrap();
    let input = |name: &str| bolt(name).inputs[0].clone();
    let shuffle = bolt("shuffle");
    let c = Config::from_proto(&shuffle.comp.config);
    assert_eq!(c.get("topology.component.parallelism"), Some("3"));
    assert_eq!(c.get("my.key"), Some("5"));
    assert_eq!(shuffle.outputs[0].stream.id, "default");
    assert_eq!(input("shuffle").gtype, P::Shuffle as i32);
    assert_eq!(input("shuffle").custom_grouping_object, None);
    assert_eq!(input("shuffle").stream.component_name, "spout");
    let f = input("fields");
    assert_eq!(f.gtype, P::Fields as i32);
    assert_eq!(f.grouping_fields.unwrap().keys[0].key, "n");
    assert_eq!(input("all").gtype, P::All as i32);
    assert_eq!(input("all").stream.component_name, "shuffle");
    assert_eq!(input("global").gtype, P::Lowest as i32);
    assert_eq!(input("none").gtype, P::None as i32);
    assert_eq!(input("direct").gtype, P::Direct as i32);
    assert_eq!(input("direct").stream.id, "direct");
    let l = input("local");
    assert_eq!(l.gtype, P::Shuffle as i32);
    assert_eq!(
        l.custom_grouping_object.as_deref(),
        Some(&b"heron-rs:local-or-shuffle"[..])
    );
    let c = input("custom");
    assert_eq!(c.gtype, P::Custom as i32);
    assert_eq!(
        c.custom_grouping_object.as_deref(),
        Some(&b"heron-rs:custom"[..])
    );

    let tc = Config::from_proto(t.topology_config.as_ref().unwrap());
    assert_eq!(tc.get("topology.reliability.mode"), Some("ATLEAST_ONCE"));
    assert_eq!(tc.get("topology.message.timeout.secs"), Some("30"));
    assert_eq!(tc.get("topology.max.spout.pending"), Some("100"));
}

#[test]
fn factories_and_lookups() {
    let t = full();
    assert!(t.is_spout("spout"));
    assert!(!t.is_spout("shuffle"));
    assert!(t.create_spout("spout").is_some());
    assert!(t.create_bolt("shuffle").is_some());
    assert!(t.create_bolt("spout").is_none());
    assert!(t.create_spout("nope").is_none());
    assert_eq!(t.outputs("spout").unwrap().len(), 2);
    assert!(t.outputs("spout").unwrap()[1].direct);
    assert_eq!(t.custom_groupings_from("spout").len(), 1);
    assert_eq!(t.custom_groupings_from("spout")[0].0, "custom");
    assert!(t.custom_groupings_from("shuffle").is_empty());
    assert_eq!(t.spout_names().collect::<Vec<_>>(), ["spout"]);
    assert_eq!(t.bolt_names().count(), 8);
    assert_eq!(t.config().reliability_mode(), ReliabilityMode::AtLeastOnce);
}

fn pplan(topology: api::Topology) -> system::PhysicalPlan {
    let inst = |task: i32, comp: &str, index: i32| system::Instance {
        instance_id: format!("container_1_{comp}_{task}"),
        stmgr_id: "stmgr-1".into(),
        info: system::InstanceInfo {
            task_id: task,
            component_index: index,
            component_name: comp.into(),
            params: vec![],
            remote_debugger_port: None,
        },
    };
    system::PhysicalPlan {
        topology,
        stmgrs: vec![],
        instances: vec![
            inst(1, "spout", 0),
            inst(2, "spout", 1),
            inst(5, "shuffle", 2),
            inst(3, "shuffle", 0),
            inst(4, "shuffle", 1),
        ],
    }
}

#[test]
fn context_from_physical_plan() {
    let mut proto = full().to_proto();
    proto.id = "full-123".into();
    let plan = pplan(proto);
    let ctx = TopologyContext::from_physical_plan(&plan, 4).unwrap();
    assert_eq!(ctx.task_id(), 4);
    assert_eq!(ctx.component_id(), "shuffle");
    assert_eq!(ctx.component_index(), 1);
    assert_eq!(ctx.this_component_tasks(), &[3, 4, 5]);
    assert_eq!(ctx.component_tasks("spout"), &[1, 2]);
    assert_eq!(ctx.component_tasks("nope"), &[] as &[i32]);
    assert_eq!(ctx.task_component(2), Some("spout"));
    assert_eq!(ctx.topology_name(), "full");
    assert_eq!(ctx.topology_id(), "full-123");
    assert_eq!(
        ctx.config().get("my.key"),
        Some("5"),
        "component config overlaid"
    );
    assert_eq!(
        ctx.config().get("topology.component.parallelism"),
        Some("3")
    );
    assert_eq!(
        ctx.config().reliability_mode(),
        ReliabilityMode::AtLeastOnce
    );
    assert_eq!(ctx.output_fields("default"), Some(&Fields::new(["out"])));
    assert_eq!(
        ctx.component_output_fields("spout", "default"),
        Some(&Fields::new(["word", "n"]))
    );
    assert_eq!(
        TopologyContext::from_physical_plan(&plan, 99).unwrap_err(),
        crate::ContextError::UnknownTask(99)
    );
}

#[test]
fn runtime_types_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<HeronTopology>();
    send_sync::<TopologyContext>();
    send::<crate::Emitter>();
    send::<Tuple>();
    // The factories really are shareable: build on one thread, instantiate on another.
    let t = full();
    let made = std::thread::scope(|s| s.spawn(|| t.create_bolt("shuffle").is_some()).join());
    assert!(made.unwrap());
}

mod windows {
    use super::*;
    use crate::window::{Length, Window, WindowCollector, WindowConfig, WindowedBolt};
    use std::time::Duration;

    struct Sum;
    impl WindowedBolt for Sum {
        fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
            d.declare(Fields::new(["sum"]));
        }
        fn execute(&mut self, _w: &Window<'_>, _c: &mut WindowCollector<'_, '_>) {}
    }
    struct Sink;
    impl Bolt for Sink {
        fn execute(&mut self, _t: &Tuple, _c: &mut OutputCollector) {}
    }

    fn build(windows: WindowConfig, config: Config) -> Result<HeronTopology, TopologyError> {
        let mut b = TopologyBuilder::new();
        b.set_spout("src", spout, 1);
        b.set_windowed_bolt("win", || Sum, windows, 2)
            .fields_grouping("src", Fields::new(["word"]));
        b.set_bolt("sink", || Sink, 1).global_grouping("win");
        b.build("w", config)
    }

    fn secs(s: u64) -> Length {
        Length::Duration(Duration::from_secs(s))
    }

    #[test]
    fn event_time_wires_the_watermark_stream_along_every_edge() {
        let t = build(
            WindowConfig::tumbling(secs(10)).with_timestamp_field("n"),
            Config::new(),
        )
        .unwrap();
        for c in ["src", "win", "sink"] {
            assert!(
                t.outputs(c)
                    .unwrap()
                    .iter()
                    .any(|o| o.id == WATERMARK_STREAM_ID),
                "{c} declares the watermark stream"
            );
        }
        for (consumer, source) in [("win", "src"), ("sink", "win")] {
            let wm: Vec<_> = t
                .inputs(consumer)
                .unwrap()
                .iter()
                .filter(|i| i.stream == WATERMARK_STREAM_ID)
                .collect();
            assert_eq!(wm.len(), 1, "{consumer}");
            assert_eq!(wm[0].source, source);
            assert!(matches!(wm[0].grouping, Grouping::All));
        }
        // Storm's keys are in the bolt's configuration
        let win = t
            .to_proto()
            .bolts
            .into_iter()
            .find(|b| b.comp.name == "win")
            .unwrap();
        let keys: Vec<String> = win.comp.config.kvs.into_iter().map(|kv| kv.key).collect();
        assert!(keys
            .iter()
            .any(|k| k == "topology.bolts.window.length.duration.ms"));
        assert!(keys
            .iter()
            .any(|k| k == "topology.bolts.tuple.timestamp.field.name"));
    }

    #[test]
    fn processing_time_leaves_the_plan_alone() {
        let t = build(
            WindowConfig::sliding(Length::count(10), Length::count(5)),
            Config::new(),
        )
        .unwrap();
        assert!(t
            .outputs("src")
            .unwrap()
            .iter()
            .all(|o| o.id != WATERMARK_STREAM_ID));
        assert_eq!(t.inputs("win").unwrap().len(), 1);
    }

    #[test]
    fn windows_that_cannot_complete_are_refused_at_build_naming_the_bolt() {
        let mut c = Config::new();
        c.set_reliability_mode(ReliabilityMode::AtLeastOnce);
        c.set(crate::config::TOPOLOGY_MESSAGE_TIMEOUT_SECS, "30");
        let e = build(WindowConfig::sliding(secs(30), secs(10)), c.clone())
            .map(drop)
            .expect_err("refused")
            .to_string();
        assert!(e.contains("\"win\"") && e.contains("timeout"), "{e}");
        let e = build(WindowConfig::tumbling(Length::count(80)), c)
            .map(drop)
            .expect_err("refused")
            .to_string();
        assert!(e.contains("topology.max.spout.pending = 100"), "{e}");
    }
}
