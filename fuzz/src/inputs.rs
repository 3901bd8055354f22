//! Input that is not a daemon's socket: multi-lang messages from a subprocess, Flux files,
//! checkpointed state, Streamlet elements in tuples, and HTTP requests to the tracker over
//! state nodes.

use std::io::BufReader;
use std::time::{Duration, Instant};

use heron_api::window::{
    Length, Window, WindowCollector, WindowConfig, WindowedBolt, WindowedBoltAdapter,
    WINDOW_STATE_KEY,
};
use heron_api::{
    values, Bolt, Emitter, Fields, OutputCollector, OutputFieldsDeclarer, ReliabilityMode, State,
    Stateful, TopologyContext, Tuple,
};
use heron_multilang::{Incoming, Serializer};
use heron_streamlet::element::{decode_into, from_value_ref, to_value, BINARY_TAG};
use heron_streamlet::{KeyValue, KeyedWindow};

/// Target `multilang`: one byte (bit 0: msgpack instead of JSON; the rest: the read buffer's
/// size, so messages straddle refills), then what a shell component writes on its stdout.
pub fn multilang(data: &[u8]) {
    let Some((&choice, rest)) = data.split_first() else {
        return;
    };
    let serializer = if choice & 1 == 0 {
        Serializer::Json
    } else {
        Serializer::Msgpack
    };
    let mut reader = BufReader::with_capacity(1 + usize::from(choice >> 1), rest);
    // every message read moves on; an error ends the stream, as the host then kills the process
    for _ in 0..rest.len() + 1 {
        if serializer.read::<Incoming>(&mut reader).is_err() {
            break;
        }
    }
}

/// Target `flux`: `data` as a Flux file, loaded (substitutions, includes, validation) and,
/// when valid, built into a topology.
pub fn flux(data: &[u8]) {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let file = dir.path().join("topology.yaml");
    if std::fs::write(&file, data).is_err() {
        return;
    }
    let options = heron_flux::LoadOptions {
        filter: None,
        env_filter: true,
    };
    if let Ok(t) = heron_flux::load(&file, &options) {
        let _ = t.build_in(dir.path());
    }
}

/// Emits each window's size: the windows are what is fuzzed.
pub(crate) struct Quiet;

impl WindowedBolt for Quiet {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["n"]));
    }
    fn execute(&mut self, w: &Window<'_>, c: &mut WindowCollector<'_, '_>) {
        c.emit(values![w.tuples().len() as i64]);
    }
}

pub(crate) fn window_configs() -> [WindowConfig; 4] {
    let ms = |n| Length::duration(Duration::from_millis(n));
    [
        WindowConfig::sliding(ms(20), ms(10)).with_timestamp_field("ts"),
        WindowConfig::tumbling(ms(25))
            .with_timestamp_field("ts")
            .with_late_tuple_stream("late", ["n", "ts", "k"]),
        WindowConfig::session(Duration::from_millis(12), Fields::new(["k"]))
            .with_timestamp_field("ts"),
        WindowConfig::sliding(Length::count(7), Length::count(3)),
    ]
}

/// A windowed bolt of `config` restored from `state` (none: a clean start), prepared, with
/// its emitter; `Err` when it refuses the state.
pub(crate) fn windowed(
    config: WindowConfig,
    state: Option<&State>,
) -> Result<(WindowedBoltAdapter<Quiet>, Emitter), String> {
    let mut bolt = WindowedBoltAdapter::new(Quiet, config);
    if let Some(s) = state {
        bolt.try_init_state(s)?;
    }
    let mut d = OutputFieldsDeclarer::new();
    bolt.declare_output_fields(&mut d);
    let emitter = Emitter::new("w", 3, ReliabilityMode::EffectivelyOnce, &d.into_streams());
    bolt.prepare(&TopologyContext::builder("t", "w", 3).build());
    Ok((bolt, emitter))
}

/// Feeds `(n, ts)` tuples (key `n % 2`) to a windowed bolt.
pub(crate) fn feed(
    bolt: &mut WindowedBoltAdapter<Quiet>,
    emitter: &mut Emitter,
    tuples: &[(i64, i64)],
) {
    let fields = Fields::new(["n", "ts", "k"]);
    for &(n, ts) in tuples {
        let t = Tuple::new("src", "default", 1, fields.clone(), values![n, ts, n % 2]);
        bolt.execute(&t, &mut OutputCollector::new(emitter));
    }
}

/// Restores `state` into windowed bolts of every kind; those that take it go on working.
fn restore_windows(state: &State) {
    for config in window_configs() {
        let Ok((mut bolt, mut emitter)) = windowed(config, Some(state)) else {
            continue;
        };
        feed(&mut bolt, &mut emitter, &[(1, 5), (2, 1_000), (3, -7)]);
        for w in [50, i64::MAX] {
            bolt.on_watermark(w, &mut OutputCollector::new(&mut emitter));
        }
        let _ = bolt.poll_async(&mut OutputCollector::new(&mut emitter), Instant::now());
        let mut saved = State::new();
        bolt.pre_save("1-1", &mut saved);
    }
}

/// Target `state`: `data` as an encoded task state (what a checkpoint manager hands back on
/// restore) and as a windowed bolt's window snapshot, restored into windowed bolts.
pub fn state(data: &[u8]) {
    if let Ok(s) = State::decode(data) {
        assert_eq!(State::decode(&s.encode()).as_ref(), Ok(&s), "re-encoding");
        restore_windows(&s);
    }
    let mut s = State::new();
    s.put(WINDOW_STATE_KEY, data.to_vec());
    restore_windows(&s);
}

/// The state nodes the tracker reads, all written with the fuzzed bytes (the tmaster's
/// location is left out: the tracker would connect to it).
const NODES: [&str; 6] = [
    "topologies",
    "pplans",
    "packingplans",
    "executionstate",
    "statefulcheckpoints",
    "schedulers",
];

/// Target `tracker`: the first line is a request's path and query, the rest the bytes of
/// topology `wc`'s state nodes; the request goes through the tracker's routes.
pub fn tracker(data: &[u8]) {
    let split = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
    let (uri, node) = (&data[..split], data.get(split + 1..).unwrap_or_default());
    let Ok(uri) = std::str::from_utf8(uri) else {
        return;
    };
    let Ok(request) = axum::http::Request::get(uri).body(axum::body::Body::empty()) else {
        return;
    };
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    for n in NODES {
        let d = dir.path().join(n);
        if std::fs::create_dir_all(&d).is_err() || std::fs::write(d.join("wc"), node).is_err() {
            return;
        }
    }
    let spec = heron_statemgr::StateManagerSpec::Local(dir.path().to_path_buf());
    let mut router = heron_tracker::router(vec![heron_tracker::Cluster::new("local", spec)]);
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    rt.block_on(async {
        use tower_service::Service;
        let Ok(response) = router.call(request).await;
        let _ = axum::body::to_bytes(response.into_body(), 1 << 24).await;
    });
}

/// A Streamlet element of several shapes: text, integers of each width, options, sequences,
/// maps and an enum.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
enum Shape {
    Empty,
    Word(String),
    Pair(u16, i32),
    Named { key: Option<String>, seq: Vec<u64> },
}

/// The element types the target decodes `data` as.
type Word = KeyValue<String, (i64, i64)>;
type Result_ = KeyValue<KeyedWindow<String>, Vec<Option<Shape>>>;
type Mixed = (
    char,
    bool,
    i8,
    u128,
    std::collections::BTreeMap<String, Shape>,
);

/// Target `element`: `data` as a tuple value carrying a Streamlet element (the binary
/// encoding after its tag byte), decoded as three element types, whole and in place over the
/// last one; whatever decodes encodes back to bytes that decode to the same element.
pub fn element(data: &[u8]) {
    let value = heron_api::Value::Bytes([&[BINARY_TAG][..], data].concat());
    fn check<T>(value: &heron_api::Value, place: &mut T)
    where
        T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
    {
        let fresh = from_value_ref::<T>(value);
        let in_place = decode_into(value, place);
        assert_eq!(fresh.is_ok(), in_place.is_ok(), "in place and fresh agree");
        if let Ok(e) = fresh {
            assert_eq!(&e, place, "in place and fresh decode the same");
            let again = from_value_ref::<T>(&to_value(&e).expect("encodes")).expect("decodes");
            assert_eq!(again, e, "re-encoding");
        }
    }
    check::<Word>(&value, &mut KeyValue::new(String::new(), (0, 0)));
    let window = heron_streamlet::WindowInfo {
        start_ms: None,
        end_ms: None,
        count: 0,
    };
    let key = KeyedWindow {
        key: String::new(),
        window,
    };
    check::<Result_>(&value, &mut KeyValue::new(key, Vec::new()));
    check::<Mixed>(&value, &mut ('a', false, 0, 0, Default::default()));
}

/// Seeds of target `element`: encodings of each element type (tag byte dropped).
pub fn element_seeds() -> Vec<Vec<u8>> {
    let body = |v: heron_api::Value| match v {
        heron_api::Value::Bytes(b) => b[1..].to_vec(),
        other => panic!("not a binary element: {other:?}"),
    };
    let word: Word = KeyValue::new("word".into(), (1, 1_796_000_000_123_456_789));
    let result: Result_ = KeyValue::new(
        KeyedWindow {
            key: "k".into(),
            window: heron_streamlet::WindowInfo {
                start_ms: Some(1000),
                end_ms: Some(2000),
                count: 3,
            },
        },
        vec![
            None,
            Some(Shape::Empty),
            Some(Shape::Word("w".into())),
            Some(Shape::Pair(300, -5)),
            Some(Shape::Named {
                key: Some("n".into()),
                seq: vec![0, u64::MAX],
            }),
        ],
    );
    let mixed: Mixed = (
        'é',
        true,
        -3,
        u128::MAX,
        [("a".to_string(), Shape::Empty)].into(),
    );
    vec![
        body(to_value(&word).expect("encodes")),
        body(to_value(&result).expect("encodes")),
        body(to_value(&mixed).expect("encodes")),
    ]
}
