//! The streamlet graph: [`Builder`] records stages as [`Streamlet`] methods are called, and
//! [`Builder::build`] compiles every stage to one spout or bolt of a [`TopologyBuilder`].

use std::any::Any;
use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::Arc;

use heron_api::config::OUTPUT_LINGER_MS;
use heron_api::window::{WindowConfig, WindowedBolt};
use heron_api::{
    Bolt, BoltDeclarer, Config, Grouping, HeronTopology, Spout, TopologyBuilder, TopologyError,
};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::ops::{
    ElementGrouping, FnSink, KeyHash, KeyOf, KeyedTo, LogSink, Outlet, Sink, SinkBolt, Step,
    StepFn, SupplierSpout, TransformBolt, Transformer,
};
use crate::tumbling::TumblingReduceBolt;
use crate::window_ops::{JoinBolt, JoinFn, JoinType, KeyValue, KeyedWindow, ReduceBolt};

/// An element type: serializable (see [`element`](crate::element)) and sendable.
pub trait Element: Serialize + DeserializeOwned + Send + 'static {}
impl<T: Serialize + DeserializeOwned + Send + 'static> Element for T {}

/// A key type.
pub trait Key: Element + Hash + Eq + Clone {}
impl<T: Element + Hash + Eq + Clone> Key for T {}

/// A component factory, once the stage's outlets are known.
type MakeWith<C> = Box<dyn Fn(Vec<Outlet>) -> Arc<dyn Fn() -> Box<C> + Send + Sync>>;

/// A factory of components for the outlets the stage gets at build.
fn with_outlets<C: ?Sized + 'static>(
    make: impl Fn(&[Outlet]) -> Box<C> + Send + Sync + 'static,
) -> MakeWith<C> {
    let make = Arc::new(make);
    Box::new(move |outlets| {
        let make = make.clone();
        Arc::new(move || make(&outlets))
    })
}

/// Makes a stage's component.
enum Make {
    Spout(MakeWith<dyn Spout>),
    Bolt(MakeWith<dyn Bolt>),
    Windowed(MakeWith<dyn WindowedBolt>, WindowConfig),
    /// A bolt that windows by itself, as these windows say (checked like a windowed bolt's).
    Checked(MakeWith<dyn Bolt>, WindowConfig),
}

/// How a stage reads one of its inputs.
enum Read {
    /// Round robin.
    Shuffle,
    /// By the hash of a key the producer computes (a [`KeyHash`] of its element type), which
    /// picks the consumer task and emits direct to it; from a user's spout, which cannot, by
    /// the same hash and choice in a custom grouping.
    Keyed(Arc<dyn Any + Send + Sync>, Grouping),
    /// By a partitioner over the element.
    Partitioned(heron_api::Grouping),
}

struct Input {
    from: usize,
    read: Read,
}

struct Stage {
    op: &'static str,
    /// A user's spout: it emits its own streams, not our outlets.
    user_spout: bool,
    name: Option<String>,
    partitions: u32,
    make: Make,
    inputs: Vec<Input>,
}

#[derive(Default)]
struct Graph {
    stages: Vec<Stage>,
}

/// Builds a topology from streamlets (Heron's Streamlet `Builder`).
///
/// ```
/// use heron_api::window::{Length, WindowConfig};
/// use heron_api::Config;
/// use heron_streamlet::Builder;
///
/// let b = Builder::new();
/// b.new_source(|| "the quick brown fox".to_string())
///     .flat_map(|s: String| s.split(' ').map(str::to_owned).collect::<Vec<_>>())
///     .count_by_key_and_window(|w: &String| w.clone(), WindowConfig::tumbling(Length::count(1000)))
///     .log();
/// let topology = b.build("StreamletWordCount", Config::new()).unwrap();
/// assert_eq!(topology.to_proto().spouts.len(), 1);
/// assert_eq!(topology.to_proto().bolts.len(), 3);
/// ```
#[derive(Default)]
pub struct Builder {
    graph: Rc<RefCell<Graph>>,
}

/// A stream of elements of type `T` (Heron's `Streamlet`); each method adds a stage.
pub struct Streamlet<T> {
    graph: Rc<RefCell<Graph>>,
    id: usize,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for Streamlet<T> {
    fn clone(&self) -> Self {
        Streamlet {
            graph: self.graph.clone(),
            id: self.id,
            _t: PhantomData,
        }
    }
}

/// A fixed, fast hash of a key: the same in every process of one build (a key's tuples must
/// reach the same task from every producer), no random seed.
pub(crate) fn hash_key<K: Hash>(k: &K) -> i64 {
    let mut h = KeyHasher::default();
    k.hash(&mut h);
    h.finish() as i64
}

/// The hasher of keys: eight bytes at a time, each folded in with a rotate, xor and multiply
/// (FxHash's step), finished with a multiply-xorshift so every bit of the result depends on
/// the input (partitions are the hash modulo the task count; the stages' own key maps use it
/// too). Fixed: no random seed, the same in every process of one build.
pub(crate) struct KeyHasher(u64);

impl Default for KeyHasher {
    fn default() -> Self {
        KeyHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl KeyHasher {
    #[inline]
    fn fold(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for KeyHasher {
    #[inline]
    fn finish(&self) -> u64 {
        let x = self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x ^ (x >> 29)
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.fold(u64::from_le_bytes(w.try_into().expect("8 bytes")));
        }
        let rest = words.remainder();
        let n = rest.len();
        // the last 1-7 bytes in at most two reads (overlapping when n < 8), which with n
        // determine them; n itself keeps "a" and "a\0" apart
        let last = match n {
            0 => return,
            4.. => {
                let lo = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes"));
                let hi = u32::from_le_bytes(rest[n - 4..].try_into().expect("4 bytes"));
                u64::from(lo) | (u64::from(hi) << 32)
            }
            _ => {
                u64::from(rest[0]) | (u64::from(rest[n / 2]) << 8) | (u64::from(rest[n - 1]) << 16)
            }
        };
        self.fold(last ^ ((n as u64) << 59));
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.fold(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.fold(i);
    }

    #[inline]
    fn write_i64(&mut self, i: i64) {
        self.fold(i as u64);
    }
}

impl Builder {
    /// An empty graph.
    pub fn new() -> Builder {
        Builder::default()
    }

    fn add<T>(&self, op: &'static str, make: Make, inputs: Vec<Input>) -> Streamlet<T> {
        let mut g = self.graph.borrow_mut();
        g.stages.push(Stage {
            op,
            user_spout: false,
            name: None,
            partitions: 1,
            make,
            inputs,
        });
        Streamlet {
            graph: self.graph.clone(),
            id: g.stages.len() - 1,
            _t: PhantomData,
        }
    }

    /// A source calling `supplier` for each element (Heron's `newSource`).
    pub fn new_source<T: Element>(
        &self,
        supplier: impl Fn() -> T + Send + Sync + 'static,
    ) -> Streamlet<T> {
        let supplier: Arc<dyn Fn() -> T + Send + Sync> = Arc::new(supplier);
        let make = Make::Spout(with_outlets(move |outlets| {
            Box::new(SupplierSpout {
                supplier: supplier.clone(),
                outlets: outlets.to_vec(),
                out: None,
                tracked: false,
                next_id: 0,
            }) as Box<dyn Spout>
        }));
        self.add("source", make, Vec::new())
    }

    /// A source from a spout: each tuple of its default stream is an element (its one value,
    /// or the tuple of its values: [`from_values`](crate::element::from_values)); the spout
    /// keeps its own reliability (message ids, replays).
    pub fn new_source_spout<T: Element, S: Spout + 'static>(
        &self,
        spout: impl Fn() -> S + Send + Sync + 'static,
    ) -> Streamlet<T> {
        let make = Make::Spout(with_outlets(move |_| Box::new(spout()) as Box<dyn Spout>));
        let src: Streamlet<T> = self.add("spout", make, Vec::new());
        src.stage_mut(|s| s.user_spout = true);
        src
    }

    /// Compiles the graph: one spout or bolt per stage, named by
    /// [`set_name`](Streamlet::set_name) (else `<operation><index>`), with
    /// [`set_num_partitions`](Streamlet::set_num_partitions) tasks (default 1).
    pub fn build(self, name: &str, config: Config) -> Result<HeronTopology, TopologyError> {
        let g = self.graph.borrow();
        let names: Vec<String> = g
            .stages
            .iter()
            .enumerate()
            .map(|(i, s)| {
                s.name
                    .clone()
                    .unwrap_or_else(|| format!("{}{}", s.op, i + 1))
            })
            .collect();
        // every stage's outlets: a plain stream if some consumer shuffles or partitions, a
        // keyed stream per keyed consumer input
        let mut outlets: Vec<Vec<Outlet>> = vec![Vec::new(); g.stages.len()];
        let mut streams: Vec<Vec<String>> = Vec::new();
        for (c, stage) in g.stages.iter().enumerate() {
            let mut mine = Vec::new();
            for (side, input) in stage.inputs.iter().enumerate() {
                let from_user_spout = g.stages[input.from].user_spout;
                let stream = match &input.read {
                    Read::Keyed(..) if from_user_spout => heron_api::DEFAULT_STREAM_ID.to_owned(),
                    Read::Keyed(key, _) => {
                        let stream = format!("to-{}-{side}", names[c]);
                        outlets[input.from].push(Outlet {
                            stream: stream.clone(),
                            key: Some(KeyedTo {
                                consumer: names[c].clone(),
                                hash: key.clone(),
                            }),
                        });
                        stream
                    }
                    Read::Shuffle | Read::Partitioned(_) => {
                        let o = &mut outlets[input.from];
                        if !o.iter().any(|o| o.key.is_none()) {
                            o.push(Outlet {
                                stream: heron_api::DEFAULT_STREAM_ID.to_owned(),
                                key: None,
                            });
                        }
                        heron_api::DEFAULT_STREAM_ID.to_owned()
                    }
                };
                mine.push(stream);
            }
            streams.push(mine);
        }
        let mut b = TopologyBuilder::new();
        for (i, stage) in g.stages.iter().enumerate() {
            let name = &names[i];
            let outs = std::mem::take(&mut outlets[i]);
            let p = stage.partitions;
            let mut declarer = match &stage.make {
                Make::Spout(make) => {
                    let f = make(outs);
                    b.set_spout(name, move || f(), p);
                    continue;
                }
                Make::Bolt(make) => {
                    let f = make(outs);
                    b.set_bolt(name, move || f(), p)
                }
                Make::Windowed(make, windows) => {
                    let f = make(outs);
                    let d = b.set_windowed_bolt(name, move || f(), windows.clone(), p);
                    linger_results(d, &config)
                }
                Make::Checked(make, windows) => {
                    windows
                        .check(&config)
                        .map_err(|reason| TopologyError::InvalidWindow {
                            component: name.clone(),
                            reason,
                        })?;
                    let f = make(outs);
                    linger_results(b.set_bolt(name, move || f(), p), &config)
                }
            };
            for (input, stream) in stage.inputs.iter().zip(&streams[i]) {
                let from = &names[input.from];
                let grouping = match &input.read {
                    Read::Shuffle => Grouping::Shuffle,
                    Read::Keyed(_, by_element) if g.stages[input.from].user_spout => {
                        by_element.clone()
                    }
                    Read::Keyed(..) => Grouping::Direct,
                    Read::Partitioned(g) => g.clone(),
                };
                declarer.grouping(from, stream, grouping);
            }
        }
        drop(g);
        b.build(name, config)
    }
}

/// How long a windowed stage holds its results before sending them, unless the topology's
/// configuration sets [`OUTPUT_LINGER_MS`] itself: each window close emits a burst (a result
/// per key), and bursts sent as they come cost a write, a stream manager's round and a wake-up
/// of the next stage each. Held this long, the bursts of several windows travel together.
/// Set the topology's `heron-rs.output.linger.ms` (0: send at once) to choose otherwise.
pub const WINDOW_RESULTS_LINGER_MS: f64 = 5.0;

/// Gives a windowed stage's component [`WINDOW_RESULTS_LINGER_MS`] when the topology does not
/// choose a linger itself.
fn linger_results<'b>(mut d: BoltDeclarer<'b>, config: &Config) -> BoltDeclarer<'b> {
    if config.get(OUTPUT_LINGER_MS).is_none() {
        d.add_configuration(OUTPUT_LINGER_MS, WINDOW_RESULTS_LINGER_MS);
    }
    d
}

impl<T: Element> Streamlet<T> {
    fn builder(&self) -> Builder {
        Builder {
            graph: self.graph.clone(),
        }
    }

    fn stage_mut<R>(&self, f: impl FnOnce(&mut Stage) -> R) -> R {
        f(&mut self.graph.borrow_mut().stages[self.id])
    }

    /// Names this stage's component (unique in the topology).
    pub fn set_name(self, name: &str) -> Self {
        self.stage_mut(|s| s.name = Some(name.to_owned()));
        self
    }

    /// This stage's number of tasks.
    pub fn set_num_partitions(self, n: u32) -> Self {
        self.stage_mut(|s| s.partitions = n);
        self
    }

    fn step_from<B: Element>(
        &self,
        op: &'static str,
        inputs: Vec<Input>,
        step: impl Fn(T, &mut dyn FnMut(&B)) + Send + Sync + 'static,
    ) -> Streamlet<B> {
        let step: Step<T, B> = Arc::new(step);
        let make = Make::Bolt(with_outlets(move |outlets| {
            Box::new(TransformBolt {
                transformer: Box::new(StepFn(step.clone())),
                outlets: outlets.to_vec(),
                out: None,
            }) as Box<dyn Bolt>
        }));
        self.builder().add(op, make, inputs)
    }

    fn step<B: Element>(
        &self,
        op: &'static str,
        step: impl Fn(T, &mut dyn FnMut(&B)) + Send + Sync + 'static,
    ) -> Streamlet<B> {
        let inputs = vec![Input {
            from: self.id,
            read: Read::Shuffle,
        }];
        self.step_from(op, inputs, step)
    }

    /// Each element through `f`.
    pub fn map<B: Element>(&self, f: impl Fn(T) -> B + Send + Sync + 'static) -> Streamlet<B> {
        self.step("map", move |t, emit| emit(&f(t)))
    }

    /// The elements `f` keeps.
    pub fn filter(&self, f: impl Fn(&T) -> bool + Send + Sync + 'static) -> Streamlet<T> {
        self.step("filter", move |t, emit| {
            if f(&t) {
                emit(&t)
            }
        })
    }

    /// Every element of what `f` returns for each element.
    pub fn flat_map<B: Element, I: IntoIterator<Item = B>>(
        &self,
        f: impl Fn(T) -> I + Send + Sync + 'static,
    ) -> Streamlet<B> {
        self.step("flatmap", move |t, emit| {
            f(t).into_iter().for_each(|b| emit(&b))
        })
    }

    /// `(key, value)` pairs, partitioned by key downstream of keyed operations.
    pub fn key_by<K: Key, V: Element>(
        &self,
        key: impl Fn(&T) -> K + Send + Sync + 'static,
        value: impl Fn(T) -> V + Send + Sync + 'static,
    ) -> Streamlet<KeyValue<K, V>> {
        self.step("keyby", move |t, emit| {
            emit(&KeyValue {
                key: key(&t),
                value: value(t),
            })
        })
    }

    /// The elements of `self` and `other` in one streamlet.
    pub fn union(&self, other: &Streamlet<T>) -> Streamlet<T> {
        let inputs = vec![
            Input {
                from: self.id,
                read: Read::Shuffle,
            },
            Input {
                from: other.id,
                read: Read::Shuffle,
            },
        ];
        self.step_from("union", inputs, |t, emit| emit(&t))
    }

    /// `n` streamlets, each with every element of this one (each its own stage).
    pub fn clone_into(&self, n: usize) -> Vec<Streamlet<T>> {
        (0..n)
            .map(|_| self.step("clone", |t, emit| emit(&t)))
            .collect()
    }

    /// The elements spread over `partitions` tasks as `partitioner` says (the task indices,
    /// `0..partitions`, that get each element).
    pub fn repartition(
        &self,
        partitions: u32,
        partitioner: impl Fn(&T, usize) -> Vec<usize> + Send + Sync + 'static,
    ) -> Streamlet<T> {
        let grouping = Grouping::custom(ElementGrouping::<T>::new(Arc::new(partitioner)));
        let inputs = vec![Input {
            from: self.id,
            read: Read::Partitioned(grouping),
        }];
        self.step_from("repartition", inputs, |t, emit| emit(&t))
            .set_num_partitions(partitions)
    }

    /// Each element through a [`Transformer`] made per task by `factory`.
    pub fn transform<B: Element, X: Transformer<T, B> + 'static>(
        &self,
        factory: impl Fn() -> X + Send + Sync + 'static,
    ) -> Streamlet<B> {
        let make = Make::Bolt(with_outlets(move |outlets| {
            Box::new(TransformBolt {
                transformer: Box::new(factory()),
                outlets: outlets.to_vec(),
                out: None,
            }) as Box<dyn Bolt>
        }));
        let inputs = vec![Input {
            from: self.id,
            read: Read::Shuffle,
        }];
        self.builder().add("transform", make, inputs)
    }

    /// The input of a stage partitioned by `hash`, a key's hash ([`hash_key`]) made in one call:
    /// the key function inlined in it, not called through a pointer of its own.
    fn keyed_input(&self, hash: KeyHash<T>) -> Input {
        let by_element = Grouping::custom(ElementGrouping::by_key(hash.clone()));
        Input {
            from: self.id,
            read: Read::Keyed(Arc::new(hash), by_element),
        }
    }

    /// Per window and key, the values reduced with `reduce` (Heron's
    /// `reduceByKeyAndWindow`); elements are partitioned by key.
    pub fn reduce_by_key_and_window<K: Key, V: Element>(
        &self,
        key: impl Fn(&T) -> K + Send + Sync + 'static,
        value: impl Fn(&T) -> V + Send + Sync + 'static,
        windows: WindowConfig,
        reduce: impl Fn(V, V) -> V + Send + Sync + 'static,
    ) -> Streamlet<KeyValue<KeyedWindow<K>, V>> {
        let (key, value, reduce) = (Arc::new(key), Arc::new(value), Arc::new(reduce));
        self.reduce_keyed(
            lent(move |t: &T| Cow::Owned(key(t))),
            move |t: &T| value(t),
            windows,
            move |a, b| reduce(a, b),
        )
    }

    /// The stage of a keyed reduce. The functions are concrete types, so a tumbling reduce's
    /// per-element key, value and reduce calls are inlined into its bolt (the bench's count
    /// stage made three indirect calls per word before); windowed reduces holding elements
    /// take them boxed.
    fn reduce_keyed<K: Key, V: Element>(
        &self,
        key: impl for<'a> Fn(&'a T) -> Cow<'a, K> + Clone + Send + Sync + 'static,
        value: impl Fn(&T) -> V + Clone + Send + Sync + 'static,
        windows: WindowConfig,
        reduce: impl Fn(V, V) -> V + Clone + Send + Sync + 'static,
    ) -> Streamlet<KeyValue<KeyedWindow<K>, V>> {
        let hashed = key.clone();
        let input = self.keyed_input(Arc::new(move |t| hash_key(hashed(t).as_ref())));
        let make = match windows.tumbling_length() {
            // tumbling in processing time: reduced as tuples arrive
            Some(length) => Make::Checked(
                with_outlets(move |outlets| {
                    Box::new(TumblingReduceBolt {
                        key: key.clone(),
                        value: value.clone(),
                        reduce: reduce.clone(),
                        length,
                        outlets: outlets.to_vec(),
                        out: None,
                        state: None,
                        slot: None,
                        result: None,
                    }) as Box<dyn Bolt>
                }),
                windows,
            ),
            None => {
                let key: KeyOf<T, K> = Arc::new(key);
                let value: Arc<dyn Fn(&T) -> V + Send + Sync> = Arc::new(value);
                let reduce: Arc<dyn Fn(V, V) -> V + Send + Sync> = Arc::new(reduce);
                Make::Windowed(
                    with_outlets(move |outlets| {
                        Box::new(ReduceBolt {
                            key: owned(key.clone()),
                            value: value.clone(),
                            reduce: reduce.clone(),
                            outlets: outlets.to_vec(),
                            out: None,
                        }) as Box<dyn WindowedBolt>
                    }),
                    windows,
                )
            }
        };
        self.builder().add("reduce", make, vec![input])
    }

    /// Per window and key, how many elements (Heron's `countByKeyAndWindow`).
    pub fn count_by_key_and_window<K: Key>(
        &self,
        key: impl Fn(&T) -> K + Send + Sync + 'static,
        windows: WindowConfig,
    ) -> Streamlet<KeyValue<KeyedWindow<K>, i64>> {
        self.reduce_by_key_and_window(key, |_| 1i64, windows, |a, b| a + b)
    }

    /// Elements of `self` and `other` whose keys are equal within a window, paired by `join`
    /// (`None` for the missing side of an outer join).
    pub fn join<R: Element, K: Key, O: Element>(
        &self,
        other: &Streamlet<R>,
        this_key: impl Fn(&T) -> K + Send + Sync + 'static,
        other_key: impl Fn(&R) -> K + Send + Sync + 'static,
        windows: WindowConfig,
        kind: JoinType,
        join: impl Fn(Option<&T>, Option<&R>) -> O + Send + Sync + 'static,
    ) -> Streamlet<KeyValue<KeyedWindow<K>, O>> {
        let left_key: Arc<dyn Fn(&T) -> K + Send + Sync> = Arc::new(this_key);
        let right_key: Arc<dyn Fn(&R) -> K + Send + Sync> = Arc::new(other_key);
        let join: JoinFn<T, R, O> = Arc::new(join);
        let (left, right) = (left_key.clone(), right_key.clone());
        let inputs = vec![
            self.keyed_input(Arc::new(move |t| hash_key(&left(t)))),
            other.keyed_input(Arc::new(move |t| hash_key(&right(t)))),
        ];
        let make = Make::Windowed(
            with_outlets(move |outlets| {
                Box::new(JoinBolt {
                    left_key: left_key.clone(),
                    right_key: right_key.clone(),
                    join: join.clone(),
                    kind,
                    outlets: outlets.to_vec(),
                    out: None,
                }) as Box<dyn WindowedBolt>
            }),
            windows,
        );
        self.builder().add("join", make, inputs)
    }

    /// Every element to a [`Sink`] made per task by `factory`. The returned stage (which
    /// emits nothing) takes [`set_name`](Self::set_name) and
    /// [`set_num_partitions`](Self::set_num_partitions).
    pub fn to_sink<S: Sink<T> + 'static>(
        &self,
        factory: impl Fn() -> S + Send + Sync + 'static,
    ) -> Streamlet<()> {
        let factory = Arc::new(factory);
        self.sink_stage(
            "sink",
            Arc::new(move || Box::new(factory()) as Box<dyn Sink<T>>),
        )
    }

    /// Every element to `f` (see [`to_sink`](Self::to_sink)).
    pub fn consume(&self, f: impl Fn(T) + Send + Sync + 'static) -> Streamlet<()> {
        let f: Arc<dyn Fn(T) + Send + Sync> = Arc::new(f);
        self.sink_stage(
            "consume",
            Arc::new(move || Box::new(FnSink(f.clone())) as Box<dyn Sink<T>>),
        )
    }

    /// Every element to the log at INFO (see [`to_sink`](Self::to_sink)).
    pub fn log(&self) -> Streamlet<()>
    where
        T: Debug,
    {
        let id = self.id;
        self.sink_stage(
            "log",
            Arc::new(move || Box::new(LogSink(format!("stage {id}"))) as Box<dyn Sink<T>>),
        )
    }

    fn sink_stage(
        &self,
        op: &'static str,
        sink: Arc<dyn Fn() -> Box<dyn Sink<T>> + Send + Sync>,
    ) -> Streamlet<()> {
        let make = Make::Bolt(with_outlets(move |_| {
            Box::new(SinkBolt { sink: sink() }) as Box<dyn Bolt>
        }));
        let inputs = vec![Input {
            from: self.id,
            read: Read::Shuffle,
        }];
        self.builder().add(op, make, inputs)
    }
}

/// A key extractor that makes its keys (what windowed bolts holding elements use).
fn owned<T: 'static, K: Key>(key: KeyOf<T, K>) -> Arc<dyn Fn(&T) -> K + Send + Sync> {
    Arc::new(move |t| key(t).into_owned())
}

/// A pair's own key, lent.
fn pair_key<K: Key, V>(kv: &KeyValue<K, V>) -> Cow<'_, K> {
    Cow::Borrowed(&kv.key)
}

/// `key` as a function whose key may borrow from the element (a closure's signature is taken
/// from the bound of the function it is passed to).
fn lent<T, K: Clone, F: for<'a> Fn(&'a T) -> Cow<'a, K>>(key: F) -> F {
    key
}

/// Streamlets of key-value pairs (Heron's `KVStreamlet`): keyed operations by the pairs' own
/// keys, read in place (routing and window lookups copy no key per element).
impl<K: Key, V: Element + Clone> Streamlet<KeyValue<K, V>> {
    /// Per window and key, the pairs' values reduced with `reduce`: the
    /// [`reduce_by_key_and_window`](Self::reduce_by_key_and_window) of a keyed stream.
    ///
    /// ```
    /// use heron_api::window::{Length, WindowConfig};
    /// use heron_api::Config;
    /// use heron_streamlet::{Builder, KeyValue};
    ///
    /// let b = Builder::new();
    /// b.new_source(|| "to be or not to be".to_string())
    ///     .flat_map(|s: String| {
    ///         s.split(' ').map(|w| KeyValue::new(w.to_owned(), 1i64)).collect::<Vec<_>>()
    ///     })
    ///     .reduce_by_window(WindowConfig::tumbling(Length::count(100)), |a, b| a + b)
    ///     .log();
    /// assert_eq!(b.build("KvWordCount", Config::new()).unwrap().to_proto().bolts.len(), 3);
    /// ```
    pub fn reduce_by_window(
        &self,
        windows: WindowConfig,
        reduce: impl Fn(V, V) -> V + Send + Sync + 'static,
    ) -> Streamlet<KeyValue<KeyedWindow<K>, V>> {
        let reduce = Arc::new(reduce);
        self.reduce_keyed(
            pair_key::<K, V>,
            |kv: &KeyValue<K, V>| kv.value.clone(),
            windows,
            move |a, b| reduce(a, b),
        )
    }

    /// Per window and key, how many pairs: the
    /// [`count_by_key_and_window`](Self::count_by_key_and_window) of a keyed stream.
    pub fn count_by_window(
        &self,
        windows: WindowConfig,
    ) -> Streamlet<KeyValue<KeyedWindow<K>, i64>> {
        self.reduce_keyed(
            pair_key::<K, V>,
            |_: &KeyValue<K, V>| 1i64,
            windows,
            |a, b| a + b,
        )
    }
}
