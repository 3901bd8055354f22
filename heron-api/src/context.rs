//! What a running task knows about itself and its topology.

use std::collections::HashMap;

use heron_proto::{api, system};

use crate::{AsyncWaker, Config, ContextError, Fields, CUSTOM_MARKER, LOCAL_OR_SHUFFLE_MARKER};

/// How a subscription splits a stream among the consumer's tasks: the plain-data view of a
/// [`Grouping`](crate::Grouping) as the physical plan carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupingKind {
    /// Round robin over the consumer's tasks.
    Shuffle,
    /// Shuffle, preferring the consumer's tasks in the emitter's container.
    LocalOrShuffle,
    /// Equal values of these fields go to the same task (empty for none).
    Fields(Fields),
    /// Every task.
    All,
    /// The lowest task id (Storm's global grouping).
    Global,
    /// No preference (treated as shuffle).
    None,
    /// The emitter picks the task.
    Direct,
    /// A user-defined grouping run by the emitting instance.
    Custom,
}

/// One subscription: `consumer` reads `stream` of `source` with `grouping`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subscription {
    /// The producing component.
    pub source: String,
    /// The stream id.
    pub stream: String,
    /// The consuming bolt.
    pub consumer: String,
    /// How the stream is split among the consumer's tasks.
    pub grouping: GroupingKind,
}

/// A task's view of the topology: its ids, the tasks of every component, the configuration
/// and the declared streams. The runtime builds it from the physical plan.
///
/// ```
/// use heron_api::{Config, Fields, TopologyContext};
/// let ctx = TopologyContext::builder("word-count", "split", 3)
///     .component_tasks("spout", [1, 2])
///     .component_tasks("split", [4, 3])
///     .stream("split", "default", Fields::new(["word"]))
///     .build();
/// assert_eq!(ctx.task_id(), 3);
/// assert_eq!(ctx.this_component_tasks(), &[3, 4]);
/// assert_eq!(ctx.component_index(), 0);
/// assert_eq!(ctx.task_component(2), Some("spout"));
/// assert_eq!(ctx.output_fields("default").unwrap().len(), 1);
/// ```
#[derive(Clone, Debug)]
pub struct TopologyContext {
    topology_name: String,
    topology_id: String,
    component_id: String,
    task_id: i32,
    component_index: i32,
    component_tasks: HashMap<String, Vec<i32>>,
    task_components: HashMap<i32, String>,
    streams: HashMap<String, HashMap<String, Fields>>,
    config: Config,
    topology_config: Config,
    subscriptions: Vec<Subscription>,
    async_waker: Option<AsyncWaker>,
}

/// Builds a [`TopologyContext`] by hand, for tests of components.
#[derive(Clone, Debug)]
pub struct TopologyContextBuilder {
    ctx: TopologyContext,
    component_index: Option<i32>,
}

impl TopologyContextBuilder {
    /// Sets the tasks of `component`.
    pub fn component_tasks(
        mut self,
        component: &str,
        tasks: impl IntoIterator<Item = i32>,
    ) -> Self {
        let mut tasks: Vec<i32> = tasks.into_iter().collect();
        tasks.sort_unstable();
        for &t in &tasks {
            self.ctx.task_components.insert(t, component.to_owned());
        }
        self.ctx.component_tasks.insert(component.to_owned(), tasks);
        self
    }

    /// Declares `stream` of `component` with `fields`.
    pub fn stream(mut self, component: &str, stream: &str, fields: Fields) -> Self {
        self.ctx
            .streams
            .entry(component.to_owned())
            .or_default()
            .insert(stream.to_owned(), fields);
        self
    }

    /// Adds a subscription: `consumer` reads `stream` of `source` with `grouping`.
    pub fn subscription(
        mut self,
        consumer: &str,
        source: &str,
        stream: &str,
        grouping: GroupingKind,
    ) -> Self {
        self.ctx.subscriptions.push(Subscription {
            source: source.to_owned(),
            stream: stream.to_owned(),
            consumer: consumer.to_owned(),
            grouping,
        });
        self
    }

    /// Sets the wake handle for output produced outside `execute` (see [`AsyncWaker`]).
    pub fn async_waker(mut self, waker: AsyncWaker) -> Self {
        self.ctx.async_waker = Some(waker);
        self
    }

    /// Sets the (merged) configuration.
    pub fn config(mut self, config: Config) -> Self {
        self.ctx.topology_config = config.clone();
        self.ctx.config = config;
        self
    }

    /// Sets the topology id (default: the name).
    pub fn topology_id(mut self, id: &str) -> Self {
        self.ctx.topology_id = id.to_owned();
        self
    }

    /// Sets the component index (default: the position of the task among its component's).
    pub fn component_index(mut self, index: i32) -> Self {
        self.component_index = Some(index);
        self
    }

    /// The context.
    pub fn build(mut self) -> TopologyContext {
        let task = self.ctx.task_id;
        let comp = self.ctx.component_id.clone();
        let tasks = self.ctx.component_tasks.entry(comp.clone()).or_default();
        if !tasks.contains(&task) {
            tasks.push(task);
            tasks.sort_unstable();
        }
        self.ctx.task_components.insert(task, comp);
        self.ctx.component_index = self
            .component_index
            .unwrap_or_else(|| tasks.iter().position(|&t| t == task).unwrap_or(0) as i32);
        self.ctx
    }
}

impl TopologyContext {
    /// Starts a hand-built context for task `task_id` of `component`.
    pub fn builder(topology_name: &str, component: &str, task_id: i32) -> TopologyContextBuilder {
        TopologyContextBuilder {
            ctx: TopologyContext {
                topology_name: topology_name.to_owned(),
                topology_id: topology_name.to_owned(),
                component_id: component.to_owned(),
                task_id,
                component_index: 0,
                component_tasks: HashMap::new(),
                task_components: HashMap::new(),
                streams: HashMap::new(),
                config: Config::new(),
                topology_config: Config::new(),
                subscriptions: Vec::new(),
                async_waker: None,
            },
            component_index: None,
        }
    }

    /// The context of task `task_id` in a physical plan. The configuration is the
    /// topology's overlaid with the task's component's.
    pub fn from_physical_plan(
        pplan: &system::PhysicalPlan,
        task_id: i32,
    ) -> Result<TopologyContext, ContextError> {
        let me = pplan
            .instances
            .iter()
            .find(|i| i.info.task_id == task_id)
            .ok_or(ContextError::UnknownTask(task_id))?;
        let topology = &pplan.topology;
        let mut component_tasks: HashMap<String, Vec<i32>> = HashMap::new();
        let mut task_components = HashMap::new();
        for inst in &pplan.instances {
            component_tasks
                .entry(inst.info.component_name.clone())
                .or_default()
                .push(inst.info.task_id);
            task_components.insert(inst.info.task_id, inst.info.component_name.clone());
        }
        for tasks in component_tasks.values_mut() {
            tasks.sort_unstable();
        }
        let mut streams: HashMap<String, HashMap<String, Fields>> = HashMap::new();
        let mut add_outputs = |comp: &api::Component, outputs: &[api::OutputStream]| {
            let entry = streams.entry(comp.name.clone()).or_default();
            for out in outputs {
                let fields = Fields::new(out.schema.keys.iter().map(|k| k.key.clone()));
                entry.insert(out.stream.id.clone(), fields);
            }
        };
        let mut component_config = None;
        for s in &topology.spouts {
            add_outputs(&s.comp, &s.outputs);
            if s.comp.name == me.info.component_name {
                component_config = Some(&s.comp.config);
            }
        }
        let mut subscriptions = Vec::new();
        for b in &topology.bolts {
            for input in &b.inputs {
                subscriptions.push(Subscription {
                    source: input.stream.component_name.clone(),
                    stream: input.stream.id.clone(),
                    consumer: b.comp.name.clone(),
                    grouping: grouping_kind(input),
                });
            }
        }
        for b in &topology.bolts {
            add_outputs(&b.comp, &b.outputs);
            if b.comp.name == me.info.component_name {
                component_config = Some(&b.comp.config);
            }
        }
        let component_config = component_config
            .ok_or_else(|| ContextError::UnknownComponent(me.info.component_name.clone()))?;
        let topology_config = topology
            .topology_config
            .as_ref()
            .map(Config::from_proto)
            .unwrap_or_default();
        let mut config = topology_config.clone();
        config.merge(&Config::from_proto(component_config));
        Ok(TopologyContext {
            topology_name: topology.name.clone(),
            topology_id: topology.id.clone(),
            component_id: me.info.component_name.clone(),
            task_id,
            component_index: me.info.component_index,
            component_tasks,
            task_components,
            streams,
            config,
            topology_config,
            subscriptions,
            async_waker: None,
        })
    }

    /// Every subscription of the topology (each bolt's inputs).
    pub fn subscriptions(&self) -> &[Subscription] {
        &self.subscriptions
    }

    /// The subscriptions to `stream` of `component`: who consumes it and how.
    pub fn stream_targets<'a>(
        &'a self,
        component: &'a str,
        stream: &'a str,
    ) -> impl Iterator<Item = &'a Subscription> + 'a {
        self.subscriptions
            .iter()
            .filter(move |s| s.source == component && s.stream == stream)
    }

    /// The subscriptions of bolt `component` (its inputs).
    pub fn component_inputs<'a>(
        &'a self,
        component: &'a str,
    ) -> impl Iterator<Item = &'a Subscription> + 'a {
        self.subscriptions
            .iter()
            .filter(move |s| s.consumer == component)
    }

    /// The streams `component` declares, with their fields (in no particular order).
    pub fn component_streams<'a>(
        &'a self,
        component: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a Fields)> + 'a {
        self.streams
            .get(component)
            .into_iter()
            .flat_map(|m| m.iter().map(|(k, v)| (k.as_str(), v)))
    }

    /// The wake handle for output a bolt produces outside `execute`, when the runtime
    /// supports it (see [`AsyncWaker`] and [`Bolt::poll_async`](crate::Bolt::poll_async)).
    pub fn async_waker(&self) -> Option<&AsyncWaker> {
        self.async_waker.as_ref()
    }

    /// Sets the wake handle (the runtime does this before `prepare`).
    pub fn set_async_waker(&mut self, waker: AsyncWaker) {
        self.async_waker = Some(waker);
    }

    /// This task's id.
    pub fn task_id(&self) -> i32 {
        self.task_id
    }

    /// This task's component.
    pub fn component_id(&self) -> &str {
        &self.component_id
    }

    /// This task's index among its component's tasks (0-based).
    pub fn component_index(&self) -> i32 {
        self.component_index
    }

    /// The tasks of this task's component, sorted.
    pub fn this_component_tasks(&self) -> &[i32] {
        self.component_tasks(&self.component_id)
    }

    /// The tasks of `component`, sorted (empty if unknown).
    pub fn component_tasks(&self, component: &str) -> &[i32] {
        self.component_tasks
            .get(component)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The component a task belongs to.
    pub fn task_component(&self, task: i32) -> Option<&str> {
        self.task_components.get(&task).map(String::as_str)
    }

    /// Every component of the topology that has tasks.
    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.component_tasks.keys().map(String::as_str)
    }

    /// The topology name.
    pub fn topology_name(&self) -> &str {
        &self.topology_name
    }

    /// The topology id.
    pub fn topology_id(&self) -> &str {
        &self.topology_id
    }

    /// The configuration: the topology's overlaid with this component's.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The topology-wide configuration alone.
    pub fn topology_config(&self) -> &Config {
        &self.topology_config
    }

    /// The fields of this component's output `stream`.
    pub fn output_fields(&self, stream: &str) -> Option<&Fields> {
        self.component_output_fields(&self.component_id, stream)
    }

    /// The fields of `stream` of any `component`.
    pub fn component_output_fields(&self, component: &str, stream: &str) -> Option<&Fields> {
        self.streams.get(component)?.get(stream)
    }
}

fn grouping_kind(input: &api::InputStream) -> GroupingKind {
    use api::Grouping as G;
    let marker = input.custom_grouping_object.as_deref();
    match api::Grouping::try_from(input.gtype) {
        Ok(G::Shuffle) if marker == Some(LOCAL_OR_SHUFFLE_MARKER) => GroupingKind::LocalOrShuffle,
        Ok(G::Shuffle) => GroupingKind::Shuffle,
        Ok(G::Fields) => GroupingKind::Fields(Fields::new(
            input
                .grouping_fields
                .iter()
                .flat_map(|s| s.keys.iter().map(|k| k.key.clone())),
        )),
        Ok(G::All) => GroupingKind::All,
        Ok(G::Lowest) => GroupingKind::Global,
        Ok(G::None) => GroupingKind::None,
        Ok(G::Direct) => GroupingKind::Direct,
        Ok(G::Custom) if marker == Some(CUSTOM_MARKER) => GroupingKind::Custom,
        _ => GroupingKind::Custom,
    }
}
