//! The spouts and bolts a streamlet graph compiles to: a source spout, one bolt per
//! element-wise operation, windowed bolts for the windowed ones, and the outlets through which
//! each stage sends its elements (a plain stream, and a keyed stream per keyed consumer).

use std::any::Any;
use std::borrow::Cow;
use std::sync::Arc;

use heron_api::{
    Bolt, Fields, OutputCollector, OutputFieldsDeclarer, Spout, SpoutOutputCollector,
    TopologyContext, Tuple, Value,
};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::element::{decode_into, encode_into, from_value_ref, from_values_ref, to_value};

/// The field that carries the element.
pub const ELEMENT_FIELD: &str = "element";

/// A key function, hashed (what a keyed consumer is routed by).
pub(crate) type KeyHash<T> = Arc<dyn Fn(&T) -> i64 + Send + Sync>;

/// A key extractor that lends the key when the element holds it (a [`KeyValue`]'s key) and
/// makes it otherwise (a user's key function): routing and lookups need no copy of a key the
/// element already has.
///
/// [`KeyValue`]: crate::KeyValue
pub(crate) type KeyOf<T, K> = Arc<dyn for<'a> Fn(&'a T) -> Cow<'a, K> + Send + Sync>;

/// One stream a stage emits on. A keyed one is a direct stream to one consumer: it names the
/// consumer (whose tasks the producer chooses among) and carries the consumer's key hash,
/// type-erased (a [`KeyHash<T>`] of the stage's element type).
#[derive(Clone)]
pub(crate) struct Outlet {
    pub stream: String,
    pub key: Option<KeyedTo>,
}

/// The consumer of a keyed outlet and its key hash.
#[derive(Clone)]
pub(crate) struct KeyedTo {
    pub consumer: String,
    pub hash: Arc<dyn Any + Send + Sync>,
}

/// The index among `n` tasks (ascending task ids) of an element whose key hashes to `hash`:
/// the one rule every producer of a keyed input follows, a stage emitting direct and a user
/// spout's custom grouping alike, so a key reaches the same task from every input.
///
/// The hash scaled to `0..n` by a multiply and a shift (the high half of `hash × n`) rather
/// than a remainder: a 64-bit division is the dearest instruction on a keyed emit's path. The
/// key hasher mixes every input bit into the high ones, which this reads.
#[inline]
pub(crate) fn key_partition(hash: i64, n: usize) -> usize {
    ((u128::from(hash as u64) * n.max(1) as u128) >> 64) as usize
}

/// Where a stage's emits go: a bolt's collector, or a window's.
pub(crate) trait Emits {
    /// Emits borrowed values (encoded before this returns).
    fn emit_on(&mut self, stream: &str, anchors: &[&Tuple], values: &[Value]);
    /// Emits borrowed values on direct `stream` to consumer task `task`.
    fn emit_direct_on(&mut self, stream: &str, task: i32, anchors: &[&Tuple], values: &[Value]);
    fn error(&mut self, message: &str);
}

impl Emits for OutputCollector<'_> {
    fn emit_on(&mut self, stream: &str, anchors: &[&Tuple], values: &[Value]) {
        self.emit_ref(stream, anchors, values);
    }
    fn emit_direct_on(&mut self, stream: &str, task: i32, anchors: &[&Tuple], values: &[Value]) {
        self.emit_direct_ref(task, stream, anchors, values);
    }
    fn error(&mut self, message: &str) {
        self.report_error(message);
    }
}

impl Emits for heron_api::window::WindowCollector<'_, '_> {
    fn emit_on(&mut self, stream: &str, anchors: &[&Tuple], values: &[Value]) {
        // once per window result, not per tuple
        self.emit_stream_anchored_to(stream, anchors, values.to_vec());
    }
    fn emit_direct_on(&mut self, stream: &str, task: i32, anchors: &[&Tuple], values: &[Value]) {
        self.emit_direct_anchored_to(task, stream, anchors, values.to_vec());
    }
    fn error(&mut self, message: &str) {
        self.report_error(message);
    }
}

/// How a stage sends its elements: the plain stream (if anyone reads it) and the keyed ones.
pub(crate) struct Out<T> {
    plain: Option<String>,
    keyed: Vec<KeyedOut<T>>,
    /// The tuple being emitted, `[element]`, reused (its buffers too) for every emit.
    scratch: [Value; 1],
}

/// One emit of a spout stage: the stream, the consumer task of a keyed one, and the values.
type SpoutEmit<'a> = (&'a str, Option<i32>, Vec<Value>);

/// A keyed outlet, ready: its direct stream, the consumer's key hash and the consumer's tasks
/// (ascending).
struct KeyedOut<T> {
    stream: String,
    hash: KeyHash<T>,
    tasks: Vec<i32>,
}

impl<T> KeyedOut<T> {
    /// The consumer task of `element`; `None` when the consumer has no tasks in this context.
    #[inline]
    fn task(&self, element: &T) -> Option<i32> {
        let i = key_partition((self.hash)(element), self.tasks.len());
        self.tasks.get(i).copied()
    }

    fn no_tasks(&self) -> String {
        format!("stream {}: the keyed consumer has no tasks", self.stream)
    }
}

impl<T: Serialize + 'static> Out<T> {
    /// The outlets of the emitting task, with their consumers' tasks from `ctx`.
    pub fn new(outlets: &[Outlet], ctx: &TopologyContext) -> Out<T> {
        let mut out = Out {
            plain: None,
            keyed: Vec::new(),
            scratch: [Value::Null],
        };
        for o in outlets {
            match &o.key {
                None => out.plain = Some(o.stream.clone()),
                Some(k) => {
                    let hash = k
                        .hash
                        .clone()
                        .downcast::<KeyHash<T>>()
                        .expect("a keyed consumer's key takes its producer's element");
                    out.keyed.push(KeyedOut {
                        stream: o.stream.clone(),
                        hash: (*hash).clone(),
                        tasks: ctx.component_tasks(&k.consumer).to_vec(),
                    });
                }
            }
        }
        out
    }

    /// The streams to declare: a keyed outlet is a direct stream (the producer picks the
    /// consumer task by the key's hash, [`key_partition`]).
    pub fn declare(outlets: &[Outlet], d: &mut OutputFieldsDeclarer) {
        for o in outlets {
            match o.key {
                None => d.declare_stream(&o.stream, Fields::new([ELEMENT_FIELD])),
                Some(_) => d.declare_direct_stream(&o.stream, Fields::new([ELEMENT_FIELD])),
            }
        }
    }

    /// Sends `element` on every outlet, anchored to `anchors`: encoded once into the reused
    /// scratch tuple, which each outlet's emit copies into its batch.
    pub fn emit(&mut self, c: &mut impl Emits, anchors: &[&Tuple], element: &T) {
        if let Err(e) = encode_into(element, &mut self.scratch[0]) {
            return c.error(&e.to_string());
        }
        for k in &self.keyed {
            match k.task(element) {
                Some(task) => c.emit_direct_on(&k.stream, task, anchors, &self.scratch),
                None => c.error(&k.no_tasks()),
            }
        }
        if let Some(stream) = &self.plain {
            c.emit_on(stream, anchors, &self.scratch);
        }
    }

    /// What a spout sends for `element` on each outlet.
    fn values(&self, element: &T) -> Result<Vec<SpoutEmit<'_>>, String> {
        let v = to_value(element).map_err(|e| e.to_string())?;
        let mut out = Vec::with_capacity(self.keyed.len() + 1);
        for k in &self.keyed {
            let task = k.task(element).ok_or_else(|| k.no_tasks())?;
            out.push((k.stream.as_str(), Some(task), vec![v.clone()]));
        }
        if let Some(s) = &self.plain {
            out.push((s.as_str(), None, vec![v]));
        }
        Ok(out)
    }
}

/// The element of an input tuple.
///
/// A stage's tuples carry it in their `element` field; a spout source's tuples are the
/// element themselves ([`from_values`]).
pub(crate) fn element<T: DeserializeOwned>(t: &Tuple) -> Result<T, String> {
    let decoded = if t.fields().iter().next() == Some(ELEMENT_FIELD) {
        let v = t
            .get(0)
            .ok_or_else(|| format!("a tuple from {} has no element", t.source_component()))?;
        from_value_ref(v)
    } else {
        from_values_ref(t.values())
    };
    decoded.map_err(|e| format!("a tuple from {}: {e}", t.source_component()))
}

/// The element of a bolt's input; when it has none, the error is reported and the tuple
/// failed.
pub(crate) fn element_or_fail<T: DeserializeOwned>(
    input: &Tuple,
    c: &mut OutputCollector,
) -> Option<T> {
    match element(input) {
        Ok(e) => Some(e),
        Err(err) => {
            c.report_error(&err);
            c.fail(input);
            None
        }
    }
}

/// [`element_or_fail`] into `slot`: decoded over its previous element, reusing its buffers,
/// when the tuple carries a stage's element. `false` (the error reported, the tuple failed and
/// the slot emptied) when it has none.
pub(crate) fn element_into_or_fail<T: DeserializeOwned>(
    input: &Tuple,
    c: &mut OutputCollector,
    slot: &mut Option<T>,
) -> bool {
    let staged = input.fields().iter().next() == Some(ELEMENT_FIELD);
    let decoded = match (slot.as_mut(), staged, input.get(0)) {
        (Some(place), true, Some(v)) => decode_into(v, place)
            .map_err(|e| format!("a tuple from {}: {e}", input.source_component())),
        _ => element(input).map(|e| *slot = Some(e)),
    };
    match decoded {
        Ok(()) => true,
        Err(err) => {
            *slot = None;
            c.report_error(&err);
            c.fail(input);
            false
        }
    }
}

/// A source: calls the supplier for each element. In ATLEAST_ONCE its elements carry message
/// ids, so their trees are tracked (acked, failed, timed out), though a failed one is not
/// replayed: a supplier has no position to go back to (a spout source with its own replay is
/// the way to at-least-once sources).
pub(crate) struct SupplierSpout<T> {
    pub supplier: Arc<dyn Fn() -> T + Send + Sync>,
    pub outlets: Vec<Outlet>,
    pub out: Option<Out<T>>,
    pub tracked: bool,
    pub next_id: i64,
}

impl<T: Serialize + Send + 'static> Spout for SupplierSpout<T> {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        Out::<T>::declare(&self.outlets, d);
    }

    fn open(&mut self, ctx: &TopologyContext) {
        self.out = Some(Out::new(&self.outlets, ctx));
        self.tracked = ctx.config().reliability_mode().is_acking();
    }

    fn next_tuple(&mut self, c: &mut SpoutOutputCollector) {
        let Some(out) = &self.out else { return };
        let element = (self.supplier)();
        let sends = match out.values(&element) {
            Ok(s) => s,
            Err(e) => return c.report_error(&e),
        };
        let id = self.tracked.then(|| {
            self.next_id += 1;
            Value::Int(self.next_id)
        });
        for (stream, task, values) in sends {
            match task {
                Some(task) => c.emit_direct(task, stream, values, id.clone()),
                None => c.emit_stream(stream, values, id.clone()),
            }
        }
    }
}

/// What an element-wise stage does with one input element.
pub(crate) type Step<A, B> = Arc<dyn Fn(A, &mut dyn FnMut(&B)) + Send + Sync>;

/// map, filter, flat_map, union, clone, repartition and spout decoding: a function from one
/// element to any number of elements, run as a [`Transformer`].
pub(crate) struct StepFn<A, B>(pub Step<A, B>);

impl<A, B> Transformer<A, B> for StepFn<A, B> {
    fn transform(&mut self, element: A, emit: &mut dyn FnMut(&B)) {
        (self.0)(element, emit)
    }
}

/// A user-supplied element transformer with a life cycle (Heron's `SerializableTransformer`).
///
/// A splitter into `(word, 1)` pairs that reuses one pair for every word it emits:
///
/// ```
/// use heron_streamlet::{Builder, KeyValue, Transformer};
///
/// #[derive(Default)]
/// struct Words(KeyValue<String, i64>);
///
/// impl Transformer<String, KeyValue<String, i64>> for Words {
///     fn transform(&mut self, line: String, emit: &mut dyn FnMut(&KeyValue<String, i64>)) {
///         for w in line.split_whitespace() {
///             self.0.key.clear();
///             self.0.key.push_str(w);
///             self.0.value = 1;
///             emit(&self.0);
///         }
///     }
/// }
///
/// let mut seen = Vec::new();
/// Words::default().transform("a b".into(), &mut |kv| seen.push(kv.key.clone()));
/// assert_eq!(seen, ["a", "b"]);
/// let b = Builder::new();
/// b.new_source(|| "to be".to_string()).transform(Words::default).log();
/// assert!(b.build("Words", heron_api::Config::new()).is_ok());
/// ```
pub trait Transformer<A, B>: Send {
    /// Called once before any element.
    fn setup(&mut self, _ctx: &TopologyContext) {}
    /// Transforms one element, emitting any number through `emit`. `emit` takes a reference
    /// and encodes the element before it returns, so a transformer may emit one element it
    /// keeps and overwrites (no allocation per element emitted).
    fn transform(&mut self, element: A, emit: &mut dyn FnMut(&B));
    /// Called when the task stops.
    fn cleanup(&mut self) {}
}

/// Every element-wise stage: a [`Transformer`] per task; what it emits is anchored to the
/// input, which is then acked.
pub(crate) struct TransformBolt<A, B> {
    pub transformer: Box<dyn Transformer<A, B>>,
    pub outlets: Vec<Outlet>,
    pub out: Option<Out<B>>,
}

impl<A: DeserializeOwned + 'static, B: Serialize + 'static> Bolt for TransformBolt<A, B> {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        Out::<B>::declare(&self.outlets, d);
    }

    fn prepare(&mut self, ctx: &TopologyContext) {
        self.out = Some(Out::new(&self.outlets, ctx));
        self.transformer.setup(ctx);
    }

    fn execute(&mut self, input: &Tuple, c: &mut OutputCollector) {
        let Some(a) = element_or_fail::<A>(input, c) else {
            return;
        };
        let out = self.out.as_mut().expect("prepared");
        self.transformer
            .transform(a, &mut |b| out.emit(c, &[input], b));
        c.ack(input);
    }

    fn cleanup(&mut self) {
        self.transformer.cleanup();
    }
}

/// A user-supplied destination for elements (Heron's `Sink`).
pub trait Sink<T>: Send {
    /// Called once before any element.
    fn setup(&mut self, _ctx: &TopologyContext) {}
    /// Takes one element.
    fn put(&mut self, element: T);
    /// Called when the task stops.
    fn cleanup(&mut self) {}
}

/// `to_sink`, `consume` and `log`: the end of a streamlet.
pub(crate) struct SinkBolt<T> {
    pub sink: Box<dyn Sink<T>>,
}

impl<T: DeserializeOwned + 'static> Bolt for SinkBolt<T> {
    fn prepare(&mut self, ctx: &TopologyContext) {
        self.sink.setup(ctx);
    }

    fn execute(&mut self, input: &Tuple, c: &mut OutputCollector) {
        if let Some(t) = element_or_fail(input, c) {
            self.sink.put(t);
            c.ack(input);
        }
    }

    fn cleanup(&mut self) {
        self.sink.cleanup();
    }
}

/// `consume`: a function per element.
pub(crate) struct FnSink<T>(pub Arc<dyn Fn(T) + Send + Sync>);

impl<T> Sink<T> for FnSink<T> {
    fn put(&mut self, element: T) {
        (self.0)(element)
    }
}

/// `log`: each element at INFO.
pub(crate) struct LogSink(pub String);

impl<T: std::fmt::Debug> Sink<T> for LogSink {
    fn put(&mut self, element: T) {
        tracing::info!(streamlet = %self.0, "{element:?}");
    }
}

/// The partitions (indices) that get an element, of so many.
pub(crate) type Partitioner<T> = Arc<dyn Fn(&T, usize) -> Vec<usize> + Send + Sync>;

/// Routes each tuple to the consumer tasks a partitioner picks from its element: a
/// repartitioned stream, or a keyed consumer of a user's spout (which cannot add the key
/// field itself). The tuple is a stage's `[element]` or a spout's values
/// ([`from_values_ref`] reads both).
pub(crate) struct ElementGrouping<T> {
    pub partitioner: Partitioner<T>,
    pub tasks: Vec<i32>,
}

impl<T> ElementGrouping<T> {
    pub fn new(partitioner: Partitioner<T>) -> ElementGrouping<T> {
        ElementGrouping {
            partitioner,
            tasks: Vec::new(),
        }
    }

    /// By the key hash: one task per element, the one a stage emitting to the same consumer
    /// picks ([`key_partition`]).
    pub fn by_key(hash: KeyHash<T>) -> ElementGrouping<T>
    where
        T: 'static,
    {
        ElementGrouping::new(Arc::new(move |e: &T, n: usize| {
            vec![key_partition(hash(e), n)]
        }))
    }
}

impl<T> Clone for ElementGrouping<T> {
    fn clone(&self) -> Self {
        ElementGrouping {
            partitioner: self.partitioner.clone(),
            tasks: self.tasks.clone(),
        }
    }
}

impl<T: DeserializeOwned + 'static> heron_api::CustomStreamGrouping for ElementGrouping<T> {
    fn prepare(&mut self, _ctx: &TopologyContext, _stream: &str, target_tasks: &[i32]) {
        self.tasks = target_tasks.to_vec();
    }

    fn choose_tasks(&mut self, values: &[Value]) -> Vec<i32> {
        let Ok(element) = from_values_ref::<T>(values) else {
            return Vec::new();
        };
        (self.partitioner)(&element, self.tasks.len())
            .into_iter()
            .filter_map(|i| self.tasks.get(i).copied())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heron_api::{CustomStreamGrouping, Emitter, ReliabilityMode, StreamDecl};

    fn pair_key() -> KeyHash<(String, i64)> {
        Arc::new(|e: &(String, i64)| crate::graph::hash_key(&e.0))
    }

    #[test]
    fn a_key_partition_is_in_range_and_splits_the_hash_space_in_order() {
        for n in 1..=9usize {
            // the hash space, as unsigned, in n equal slices: 0 first, all ones last
            assert_eq!(key_partition(0, n), 0);
            assert_eq!(key_partition(-1, n), n - 1);
            assert_eq!(
                key_partition(i64::MIN, n),
                n / 2,
                "the middle of the space, n = {n}"
            );
            let mut h = 0x9E37_79B9_7F4A_7C15u64;
            for _ in 0..1000 {
                h = h.rotate_left(13).wrapping_mul(0x517c_c1b7_2722_0a95) ^ 0x2545;
                let i = key_partition(h as i64, n);
                assert!(i < n, "{h:#x} over {n}: {i}");
                assert_eq!(i as u128, u128::from(h) * n as u128 / (1u128 << 64));
            }
        }
        assert_eq!(key_partition(12345, 0), 0, "no tasks: the first slot");
    }

    #[test]
    fn a_key_reaches_the_same_task_from_a_stage_and_from_a_spout_source() {
        let tasks = [3, 5, 9, 12];
        let ctx = TopologyContext::builder("t", "split", 1)
            .component_tasks("count", tasks.to_vec())
            .build();
        let out: Out<(String, i64)> = Out::new(
            &[Outlet {
                stream: "to-count-0".into(),
                key: Some(KeyedTo {
                    consumer: "count".into(),
                    hash: Arc::new(pair_key()),
                }),
            }],
            &ctx,
        );
        let mut spout_side = ElementGrouping::by_key(pair_key());
        spout_side.prepare(&ctx, "default", &tasks);
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..500 {
            let e = (format!("w{i}"), i);
            let stage = out.keyed[0].task(&e).expect("count has tasks");
            let values = from_element_values(&e);
            assert_eq!(spout_side.choose_tasks(&values), vec![stage], "{e:?}");
            seen.insert(stage);
        }
        assert_eq!(seen.len(), tasks.len(), "every task gets keys");
    }

    /// The values a user spout would emit for `e` (its fields, one value each).
    fn from_element_values(e: &(String, i64)) -> Vec<Value> {
        vec![Value::from(e.0.as_str()), Value::Int(e.1)]
    }

    #[test]
    fn a_keyed_emit_is_direct_to_the_keys_task_with_the_element_alone() {
        let ctx = TopologyContext::builder("t", "split", 1)
            .component_tasks("count", vec![7, 8])
            .build();
        let outlets = [Outlet {
            stream: "to-count-0".into(),
            key: Some(KeyedTo {
                consumer: "count".into(),
                hash: Arc::new(pair_key()),
            }),
        }];
        let mut d = OutputFieldsDeclarer::new();
        Out::<(String, i64)>::declare(&outlets, &mut d);
        let streams: Vec<StreamDecl> = d.into_streams();
        assert!(streams[0].direct);
        let mut em = Emitter::new("split", 1, ReliabilityMode::AtMostOnce, &streams);
        let mut out: Out<(String, i64)> = Out::new(&outlets, &ctx);
        let e = ("w".to_string(), 1);
        out.emit(&mut OutputCollector::new(&mut em), &[], &e);
        let sets = em.take_output();
        let t = &sets[0].data.as_ref().unwrap().tuples[0];
        assert_eq!(t.values.len(), 1, "no key field");
        let want = [7, 8][key_partition(pair_key()(&e), 2)];
        assert_eq!(t.dest_task_ids, vec![want]);
    }
}
