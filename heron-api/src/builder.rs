//! Building a topology: components, their parallelism, subscriptions and configuration.

use std::collections::HashSet;
use std::sync::Arc;

use crate::config::{
    TOPOLOGY_DEBUG, TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS, TOPOLOGY_MAX_SPOUT_PENDING,
    TOPOLOGY_MESSAGE_TIMEOUT_SECS, TOPOLOGY_RELIABILITY_MODE, TOPOLOGY_STMGRS,
    TOPOLOGY_TICK_TUPLE_FREQ_MS,
};
use crate::tuple::DEFAULT_STREAM_ID;
use crate::window::{
    WindowConfig, WindowedBolt, WindowedBoltAdapter, WATERMARK_FIELD, WATERMARK_STREAM_ID,
};
use crate::{
    BasicBolt, BasicBoltAdapter, Bolt, Config, CustomStreamGrouping, Fields, Grouping,
    HeronTopology, InputDecl, OutputFieldsDeclarer, Spout, StreamDecl, TopologyError,
};

pub(crate) type SpoutFactory = Arc<dyn Fn() -> Box<dyn Spout> + Send + Sync>;
pub(crate) type BoltFactory = Arc<dyn Fn() -> Box<dyn Bolt> + Send + Sync>;

#[derive(Clone)]
pub(crate) enum Kind {
    Spout(SpoutFactory),
    Bolt(BoltFactory),
}

/// One component as the builder knows it.
#[derive(Clone)]
pub(crate) struct ComponentDef {
    pub name: String,
    pub kind: Kind,
    pub parallelism: u32,
    pub config: Config,
    pub inputs: Vec<InputDecl>,
    pub outputs: Vec<StreamDecl>,
    pub class_name: &'static str,
    /// A windowed bolt's windows (checked against the topology's settings at build).
    pub window: Option<WindowConfig>,
}

impl ComponentDef {
    pub fn is_spout(&self) -> bool {
        matches!(self.kind, Kind::Spout(_))
    }
}

/// Builds a [`HeronTopology`] (Storm's and Heron's `TopologyBuilder`).
///
/// Components are given as factories: every task of a component calls it once in its own
/// process, so a component needs neither `Clone` nor serialization. The builder also calls
/// each factory once to learn the declared streams.
///
/// ```
/// use heron_api::{values, Bolt, Config, Fields, OutputCollector, OutputFieldsDeclarer, Spout,
///                 SpoutOutputCollector, TopologyBuilder, Tuple};
///
/// struct Words;
/// impl Spout for Words {
///     fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) { d.declare(Fields::new(["word"])); }
///     fn next_tuple(&mut self, c: &mut SpoutOutputCollector) { c.emit(values!["hello"]); }
/// }
/// struct Count;
/// impl Bolt for Count {
///     fn execute(&mut self, t: &Tuple, c: &mut OutputCollector) { c.ack(t); }
/// }
///
/// let mut builder = TopologyBuilder::new();
/// builder.set_spout("words", || Words, 2);
/// builder.set_bolt("count", || Count, 3).fields_grouping("words", Fields::new(["word"]));
/// let topology = builder.build("word-count", Config::new()).unwrap();
/// assert_eq!(topology.name(), "word-count");
/// assert_eq!(topology.to_proto().bolts[0].inputs.len(), 1);
/// ```
#[derive(Default)]
pub struct TopologyBuilder {
    components: Vec<ComponentDef>,
}

/// Configures a spout added with [`TopologyBuilder::set_spout`].
pub struct SpoutDeclarer<'a> {
    def: &'a mut ComponentDef,
}

/// Configures a bolt added with [`TopologyBuilder::set_bolt`]: its subscriptions (one
/// method per grouping, each with a `_stream` variant) and configuration.
pub struct BoltDeclarer<'a> {
    def: &'a mut ComponentDef,
}

impl TopologyBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    fn add(
        &mut self,
        name: &str,
        kind: Kind,
        outputs: Vec<StreamDecl>,
        parallelism: u32,
        class_name: &'static str,
    ) -> &mut ComponentDef {
        self.components.push(ComponentDef {
            name: name.to_owned(),
            kind,
            parallelism,
            config: Config::new(),
            inputs: Vec::new(),
            outputs,
            class_name,
            window: None,
        });
        self.components.last_mut().expect("just pushed")
    }

    /// Adds a spout with `parallelism` tasks, each made by `factory`.
    pub fn set_spout<S, F>(&mut self, name: &str, factory: F, parallelism: u32) -> SpoutDeclarer<'_>
    where
        S: Spout + 'static,
        F: Fn() -> S + Send + Sync + 'static,
    {
        let mut d = OutputFieldsDeclarer::new();
        factory().declare_output_fields(&mut d);
        let f: crate::builder::SpoutFactory = Arc::new(move || Box::new(factory()));
        let def = self.add(
            name,
            Kind::Spout(f),
            d.into_streams(),
            parallelism,
            std::any::type_name::<S>(),
        );
        SpoutDeclarer { def }
    }

    /// Adds a bolt made by `make` (called once here to learn its streams), recorded under
    /// `class_name`.
    fn add_bolt<B: Bolt + 'static>(
        &mut self,
        name: &str,
        make: impl Fn() -> B + Send + Sync + 'static,
        parallelism: u32,
        class_name: &'static str,
    ) -> &mut ComponentDef {
        let mut d = OutputFieldsDeclarer::new();
        make().declare_output_fields(&mut d);
        let f: BoltFactory = Arc::new(move || Box::new(make()));
        self.add(
            name,
            Kind::Bolt(f),
            d.into_streams(),
            parallelism,
            class_name,
        )
    }

    /// Adds a bolt with `parallelism` tasks, each made by `factory`.
    pub fn set_bolt<B, F>(&mut self, name: &str, factory: F, parallelism: u32) -> BoltDeclarer<'_>
    where
        B: Bolt + 'static,
        F: Fn() -> B + Send + Sync + 'static,
    {
        let def = self.add_bolt(name, factory, parallelism, std::any::type_name::<B>());
        BoltDeclarer { def }
    }

    /// Adds a [`BasicBolt`] (auto-anchoring, auto-acking) with `parallelism` tasks.
    pub fn set_basic_bolt<B, F>(
        &mut self,
        name: &str,
        factory: F,
        parallelism: u32,
    ) -> BoltDeclarer<'_>
    where
        B: BasicBolt + 'static,
        F: Fn() -> B + Send + Sync + 'static,
    {
        let make = move || BasicBoltAdapter::new(factory());
        let def = self.add_bolt(name, make, parallelism, std::any::type_name::<B>());
        BoltDeclarer { def }
    }

    /// Adds a [`WindowedBolt`] with `parallelism` tasks, windowed as `windows` says (Storm's
    /// `BaseWindowedBolt` options become its component configuration). The windows are
    /// checked against the topology's settings by [`build`](Self::build).
    pub fn set_windowed_bolt<B, F>(
        &mut self,
        name: &str,
        factory: F,
        windows: WindowConfig,
        parallelism: u32,
    ) -> BoltDeclarer<'_>
    where
        B: WindowedBolt + 'static,
        F: Fn() -> B + Send + Sync + 'static,
    {
        let w = windows.clone();
        let make = move || WindowedBoltAdapter::new(factory(), w.clone());
        let def = self.add_bolt(name, make, parallelism, std::any::type_name::<B>());
        for (k, v) in windows.keys() {
            def.config.set(k, v);
        }
        def.window = Some(windows);
        BoltDeclarer { def }
    }

    /// Validates the topology and builds it. `config` is the topology-wide configuration;
    /// Heron's defaults are written into it for the keys that are not set.
    pub fn build(mut self, name: &str, config: Config) -> Result<HeronTopology, TopologyError> {
        validate(name, &self.components)?;
        config.check()?;
        for c in &self.components {
            if let Some(w) = &c.window {
                let mut effective = config.clone();
                for (k, v) in c.config.iter() {
                    effective.set(k, v);
                }
                w.check(&effective)
                    .map_err(|reason| TopologyError::InvalidWindow {
                        component: c.name.clone(),
                        reason,
                    })?;
            }
        }
        if self
            .components
            .iter()
            .any(|c| c.window.as_ref().is_some_and(WindowConfig::is_event_time))
        {
            wire_watermarks(&mut self.components);
        }
        let mut config = config;
        let mode = config.reliability_mode();
        let defaults: [(&str, String); 6] = [
            (TOPOLOGY_RELIABILITY_MODE, mode.as_str().to_owned()),
            (
                TOPOLOGY_MESSAGE_TIMEOUT_SECS,
                config.message_timeout_secs().to_string(),
            ),
            (
                TOPOLOGY_MAX_SPOUT_PENDING,
                config.max_spout_pending().to_string(),
            ),
            (
                TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS,
                config.enable_message_timeouts().to_string(),
            ),
            (TOPOLOGY_STMGRS, config.num_stmgrs().to_string()),
            (TOPOLOGY_DEBUG, config.debug().to_string()),
        ];
        for (k, v) in defaults {
            if config.get(k).is_none_or(|old| old != v) {
                config.set(k, v);
            }
        }
        Ok(HeronTopology::new(name.to_owned(), config, self.components))
    }
}

macro_rules! common_declarer_methods {
    () => {
        /// Sets a configuration key for this component (overrides the topology's).
        pub fn add_configuration(&mut self, key: &str, value: impl ToString) -> &mut Self {
            self.def.config.set(key, value);
            self
        }

        /// Sets every key of `config` for this component.
        pub fn add_configurations(&mut self, config: &Config) -> &mut Self {
            self.def.config.merge(config);
            self
        }

        /// Sets `topology.debug` for this component.
        pub fn set_debug(&mut self, debug: bool) -> &mut Self {
            self.def.config.set_debug(debug);
            self
        }
    };
}

impl SpoutDeclarer<'_> {
    common_declarer_methods!();

    /// Sets `topology.max.spout.pending` for this spout.
    pub fn set_max_spout_pending(&mut self, n: u64) -> &mut Self {
        self.def.config.set_max_spout_pending(n);
        self
    }
}

impl BoltDeclarer<'_> {
    common_declarer_methods!();

    /// Sets `topology.tick.tuple.freq.ms` for this bolt.
    pub fn set_tick_tuple_freq_ms(&mut self, ms: u64) -> &mut Self {
        self.def.config.set(TOPOLOGY_TICK_TUPLE_FREQ_MS, ms);
        self
    }

    /// Subscribes to `stream` of `component` with `grouping`.
    pub fn grouping(&mut self, component: &str, stream: &str, grouping: Grouping) -> &mut Self {
        self.def.inputs.push(InputDecl {
            source: component.to_owned(),
            stream: stream.to_owned(),
            grouping,
        });
        self
    }

    /// Shuffle grouping on the `default` stream of `component`.
    pub fn shuffle_grouping(&mut self, component: &str) -> &mut Self {
        self.grouping(component, DEFAULT_STREAM_ID, Grouping::Shuffle)
    }

    /// Shuffle grouping on `stream` of `component`.
    pub fn shuffle_grouping_stream(&mut self, component: &str, stream: &str) -> &mut Self {
        self.grouping(component, stream, Grouping::Shuffle)
    }

    /// Fields grouping on the `default` stream of `component`.
    pub fn fields_grouping(&mut self, component: &str, fields: impl Into<Fields>) -> &mut Self {
        self.grouping(
            component,
            DEFAULT_STREAM_ID,
            Grouping::Fields(fields.into()),
        )
    }

    /// Fields grouping on `stream` of `component`.
    pub fn fields_grouping_stream(
        &mut self,
        component: &str,
        stream: &str,
        fields: impl Into<Fields>,
    ) -> &mut Self {
        self.grouping(component, stream, Grouping::Fields(fields.into()))
    }

    /// All grouping (broadcast) on the `default` stream of `component`.
    pub fn all_grouping(&mut self, component: &str) -> &mut Self {
        self.grouping(component, DEFAULT_STREAM_ID, Grouping::All)
    }

    /// All grouping (broadcast) on `stream` of `component`.
    pub fn all_grouping_stream(&mut self, component: &str, stream: &str) -> &mut Self {
        self.grouping(component, stream, Grouping::All)
    }

    /// Global grouping (lowest task id) on the `default` stream of `component`.
    pub fn global_grouping(&mut self, component: &str) -> &mut Self {
        self.grouping(component, DEFAULT_STREAM_ID, Grouping::Global)
    }

    /// Global grouping (lowest task id) on `stream` of `component`.
    pub fn global_grouping_stream(&mut self, component: &str, stream: &str) -> &mut Self {
        self.grouping(component, stream, Grouping::Global)
    }

    /// None grouping (as shuffle) on the `default` stream of `component`.
    pub fn none_grouping(&mut self, component: &str) -> &mut Self {
        self.grouping(component, DEFAULT_STREAM_ID, Grouping::None)
    }

    /// None grouping (as shuffle) on `stream` of `component`.
    pub fn none_grouping_stream(&mut self, component: &str, stream: &str) -> &mut Self {
        self.grouping(component, stream, Grouping::None)
    }

    /// Direct grouping on the (direct) `default` stream of `component`.
    pub fn direct_grouping(&mut self, component: &str) -> &mut Self {
        self.grouping(component, DEFAULT_STREAM_ID, Grouping::Direct)
    }

    /// Direct grouping on direct `stream` of `component`.
    pub fn direct_grouping_stream(&mut self, component: &str, stream: &str) -> &mut Self {
        self.grouping(component, stream, Grouping::Direct)
    }

    /// Local-or-shuffle grouping on the `default` stream of `component`.
    pub fn local_or_shuffle_grouping(&mut self, component: &str) -> &mut Self {
        self.grouping(component, DEFAULT_STREAM_ID, Grouping::LocalOrShuffle)
    }

    /// Local-or-shuffle grouping on `stream` of `component`.
    pub fn local_or_shuffle_grouping_stream(&mut self, component: &str, stream: &str) -> &mut Self {
        self.grouping(component, stream, Grouping::LocalOrShuffle)
    }

    /// Custom grouping on `stream` of `component`; each emitting task gets a clone of
    /// `grouping`.
    pub fn custom_grouping<G>(&mut self, component: &str, stream: &str, grouping: G) -> &mut Self
    where
        G: CustomStreamGrouping + Clone + 'static,
    {
        self.grouping(component, stream, Grouping::custom(grouping))
    }
}

/// Letters, digits, '-', '_' and '.'.
pub(crate) fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Event time: every component declares the watermark stream and every edge carries it
/// (an ALL subscription next to each existing one), so watermarks reach every task in-band.
fn wire_watermarks(comps: &mut [ComponentDef]) {
    for c in comps.iter_mut() {
        if !c.outputs.iter().any(|o| o.id == WATERMARK_STREAM_ID) {
            c.outputs.push(StreamDecl {
                id: WATERMARK_STREAM_ID.to_owned(),
                fields: Fields::new([WATERMARK_FIELD]),
                direct: false,
            });
        }
        let mut sources: Vec<String> = c
            .inputs
            .iter()
            .filter(|i| i.stream != WATERMARK_STREAM_ID)
            .map(|i| i.source.clone())
            .collect();
        sources.sort();
        sources.dedup();
        for source in sources {
            let wired = c
                .inputs
                .iter()
                .any(|i| i.source == source && i.stream == WATERMARK_STREAM_ID);
            if !wired {
                c.inputs.push(InputDecl {
                    source,
                    stream: WATERMARK_STREAM_ID.to_owned(),
                    grouping: Grouping::All,
                });
            }
        }
    }
}

fn validate(name: &str, comps: &[ComponentDef]) -> Result<(), TopologyError> {
    if name.is_empty() {
        return Err(TopologyError::EmptyTopologyName);
    }
    if !is_valid_name(name) {
        return Err(TopologyError::InvalidTopologyName(name.to_owned()));
    }
    let mut seen = HashSet::new();
    for c in comps {
        let reason = if c.name.is_empty() {
            Some("it is empty")
        } else if !is_valid_name(&c.name) {
            Some("use only letters, digits, '-', '_' and '.'")
        } else if c.name.starts_with("__") {
            Some("names starting with \"__\" are reserved for the system")
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(TopologyError::InvalidComponentName {
                name: c.name.clone(),
                reason,
            });
        }
        if !seen.insert(c.name.as_str()) {
            return Err(TopologyError::DuplicateComponent(c.name.clone()));
        }
        if c.parallelism == 0 {
            return Err(TopologyError::ZeroParallelism(c.name.clone()));
        }
        let mut streams = HashSet::new();
        for s in &c.outputs {
            if !is_valid_name(&s.id) || s.id.starts_with("__") {
                return Err(TopologyError::InvalidStreamName {
                    component: c.name.clone(),
                    stream: s.id.clone(),
                });
            }
            if !streams.insert(s.id.as_str()) {
                return Err(TopologyError::DuplicateStream {
                    component: c.name.clone(),
                    stream: s.id.clone(),
                });
            }
            let mut fields = HashSet::new();
            for f in s.fields.iter() {
                if !fields.insert(f) {
                    return Err(TopologyError::DuplicateField {
                        component: c.name.clone(),
                        stream: s.id.clone(),
                        field: f.to_owned(),
                    });
                }
            }
        }
    }
    if !comps.iter().any(ComponentDef::is_spout) {
        return Err(TopologyError::NoSpouts(name.to_owned()));
    }
    for c in comps {
        let mut inputs = HashSet::new();
        for input in &c.inputs {
            validate_input(c, input, comps)?;
            if !inputs.insert((input.source.as_str(), input.stream.as_str())) {
                return Err(TopologyError::DuplicateInput {
                    component: c.name.clone(),
                    source_component: input.source.clone(),
                    stream: input.stream.clone(),
                });
            }
        }
    }
    Ok(())
}

fn validate_input(
    c: &ComponentDef,
    input: &InputDecl,
    comps: &[ComponentDef],
) -> Result<(), TopologyError> {
    let source = comps
        .iter()
        .find(|s| s.name == input.source)
        .ok_or_else(|| TopologyError::UnknownSource {
            component: c.name.clone(),
            source_component: input.source.clone(),
        })?;
    let stream = source
        .outputs
        .iter()
        .find(|s| s.id == input.stream)
        .ok_or_else(|| TopologyError::UnknownStream {
            component: c.name.clone(),
            source_component: input.source.clone(),
            stream: input.stream.clone(),
        })?;
    let is_direct = matches!(input.grouping, Grouping::Direct);
    if is_direct && !stream.direct {
        return Err(TopologyError::DirectGroupingOnNonDirectStream {
            component: c.name.clone(),
            source_component: input.source.clone(),
            stream: input.stream.clone(),
        });
    }
    if !is_direct && stream.direct {
        return Err(TopologyError::DirectStreamNeedsDirectGrouping {
            component: c.name.clone(),
            source_component: input.source.clone(),
            stream: input.stream.clone(),
        });
    }
    if let Grouping::Fields(fields) = &input.grouping {
        if fields.is_empty() {
            return Err(TopologyError::EmptyGroupingFields {
                component: c.name.clone(),
                source_component: input.source.clone(),
                stream: input.stream.clone(),
            });
        }
        if let Some(missing) = fields.iter().find(|f| !stream.fields.contains(f)) {
            return Err(TopologyError::UnknownGroupingField {
                component: c.name.clone(),
                source_component: input.source.clone(),
                stream: input.stream.clone(),
                field: missing.to_owned(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
