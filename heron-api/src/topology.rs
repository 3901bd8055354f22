//! A built topology: what `define` serializes and what every process instantiates from.

use std::fmt;

use heron_proto::api;

use crate::builder::{ComponentDef, Kind};
use crate::config::TOPOLOGY_COMPONENT_PARALLELISM;
use crate::grouping::{CUSTOM_MARKER, LOCAL_OR_SHUFFLE_MARKER};
use crate::{Bolt, Config, CustomStreamGrouping, Grouping, InputDecl, Spout, StreamDecl};

/// A validated topology, made by [`TopologyBuilder::build`](crate::TopologyBuilder::build).
///
/// It converts to Heron's `Topology` proto ([`to_proto`](Self::to_proto)) and creates the
/// spouts and bolts of a task ([`create_spout`](Self::create_spout),
/// [`create_bolt`](Self::create_bolt)).
///
/// ```
/// # use heron_api::*;
/// # struct S;
/// # impl Spout for S {
/// #     fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) { d.declare(Fields::new(["x"])); }
/// #     fn next_tuple(&mut self, _: &mut SpoutOutputCollector) {}
/// # }
/// let mut b = TopologyBuilder::new();
/// b.set_spout("s", || S, 2);
/// let t = b.build("t", Config::new()).unwrap();
/// assert!(t.create_spout("s").is_some());
/// assert!(t.create_bolt("s").is_none());
/// assert_eq!(t.parallelism("s"), Some(2));
/// let proto = t.to_proto();
/// assert_eq!(proto.spouts[0].outputs[0].schema.keys[0].key, "x");
/// ```
#[derive(Clone)]
pub struct HeronTopology {
    name: String,
    config: Config,
    components: Vec<ComponentDef>,
}

impl HeronTopology {
    pub(crate) fn new(name: String, config: Config, components: Vec<ComponentDef>) -> Self {
        HeronTopology {
            name,
            config,
            components,
        }
    }

    fn component(&self, name: &str) -> Option<&ComponentDef> {
        self.components.iter().find(|c| c.name == name)
    }

    /// The topology name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The topology-wide configuration (with Heron's defaults filled in).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The topology-wide configuration, mutably (e.g. for command-line overrides).
    pub fn config_mut(&mut self) -> &mut Config {
        &mut self.config
    }

    /// The names of every component, spouts and bolts, in the order they were added.
    pub fn component_names(&self) -> impl Iterator<Item = &str> {
        self.components.iter().map(|c| c.name.as_str())
    }

    /// The names of the spouts.
    pub fn spout_names(&self) -> impl Iterator<Item = &str> {
        self.components
            .iter()
            .filter(|c| c.is_spout())
            .map(|c| c.name.as_str())
    }

    /// The names of the bolts.
    pub fn bolt_names(&self) -> impl Iterator<Item = &str> {
        self.components
            .iter()
            .filter(|c| !c.is_spout())
            .map(|c| c.name.as_str())
    }

    /// `true` when `name` is a spout.
    pub fn is_spout(&self, name: &str) -> bool {
        self.component(name).is_some_and(ComponentDef::is_spout)
    }

    /// The parallelism (number of tasks) of `name`.
    pub fn parallelism(&self, name: &str) -> Option<u32> {
        self.component(name).map(|c| c.parallelism)
    }

    /// Sets the parallelism of `name`; `false` if there is no such component or `n` is 0.
    pub fn set_parallelism(&mut self, name: &str, n: u32) -> bool {
        match self.components.iter_mut().find(|c| c.name == name) {
            Some(c) if n > 0 => {
                c.parallelism = n;
                true
            }
            _ => false,
        }
    }

    /// The component's own configuration (without the topology's).
    pub fn component_config(&self, name: &str) -> Option<&Config> {
        self.component(name).map(|c| &c.config)
    }

    /// The streams `name` declares.
    pub fn outputs(&self, name: &str) -> Option<&[StreamDecl]> {
        self.component(name).map(|c| c.outputs.as_slice())
    }

    /// The subscriptions of bolt `name` (empty for spouts).
    pub fn inputs(&self, name: &str) -> Option<&[InputDecl]> {
        self.component(name).map(|c| c.inputs.as_slice())
    }

    /// A new instance of spout `name`.
    pub fn create_spout(&self, name: &str) -> Option<Box<dyn Spout>> {
        match &self.component(name)?.kind {
            Kind::Spout(f) => Some(f()),
            Kind::Bolt(_) => None,
        }
    }

    /// A new instance of bolt `name`.
    pub fn create_bolt(&self, name: &str) -> Option<Box<dyn Bolt>> {
        match &self.component(name)?.kind {
            Kind::Bolt(f) => Some(f()),
            Kind::Spout(_) => None,
        }
    }

    /// Fresh (unprepared) custom groupings of every subscription to a stream of `source`:
    /// `(consumer, stream, grouping)`.
    pub fn custom_groupings_from(
        &self,
        source: &str,
    ) -> Vec<(String, String, Box<dyn CustomStreamGrouping>)> {
        let mut out = Vec::new();
        for c in &self.components {
            for input in &c.inputs {
                if let (true, Grouping::Custom(factory)) = (input.source == source, &input.grouping)
                {
                    out.push((c.name.clone(), input.stream.clone(), factory()));
                }
            }
        }
        out
    }

    /// Heron's `Topology` proto: id empty, state `RUNNING`, every component's configuration
    /// with `topology.component.parallelism`, output schemas and input groupings.
    pub fn to_proto(&self) -> api::Topology {
        let mut topology = api::Topology {
            id: String::new(),
            name: self.name.clone(),
            spouts: Vec::new(),
            bolts: Vec::new(),
            state: api::TopologyState::Running as i32,
            topology_config: Some(self.config.to_proto()),
        };
        for c in &self.components {
            let mut config = c.config.clone();
            config.set(TOPOLOGY_COMPONENT_PARALLELISM, c.parallelism);
            let comp = api::Component {
                name: c.name.clone(),
                class_name: Some(c.class_name.to_owned()),
                config: config.to_proto(),
                serialized_object: None,
                spec: None,
                cpp_class_info: None,
            };
            let outputs = c.outputs.iter().map(|s| output_proto(&c.name, s)).collect();
            match c.kind {
                Kind::Spout(_) => topology.spouts.push(api::Spout { comp, outputs }),
                Kind::Bolt(_) => topology.bolts.push(api::Bolt {
                    comp,
                    inputs: c.inputs.iter().map(input_proto).collect(),
                    outputs,
                }),
            }
        }
        topology
    }
}

fn schema(fields: &crate::Fields) -> api::StreamSchema {
    api::StreamSchema {
        keys: fields
            .iter()
            .map(|f| api::stream_schema::KeyType {
                key: f.to_owned(),
                r#type: api::Type::Object as i32,
            })
            .collect(),
    }
}

fn output_proto(component: &str, s: &StreamDecl) -> api::OutputStream {
    api::OutputStream {
        stream: api::StreamId {
            id: s.id.clone(),
            component_name: component.to_owned(),
        },
        schema: schema(&s.fields),
    }
}

fn input_proto(input: &InputDecl) -> api::InputStream {
    let (grouping_fields, marker) = match &input.grouping {
        Grouping::Fields(f) => (Some(schema(f)), None),
        Grouping::LocalOrShuffle => (None, Some(LOCAL_OR_SHUFFLE_MARKER)),
        Grouping::Custom(_) => (None, Some(CUSTOM_MARKER)),
        _ => (None, None),
    };
    api::InputStream {
        stream: api::StreamId {
            id: input.stream.clone(),
            component_name: input.source.clone(),
        },
        gtype: input.grouping.proto_type() as i32,
        grouping_fields,
        custom_grouping_object: marker.map(bytes::Bytes::from_static),
        r#type: None,
    }
}

impl fmt::Debug for HeronTopology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("HeronTopology");
        s.field("name", &self.name).field("config", &self.config);
        for c in &self.components {
            s.field(
                &c.name,
                &format_args!(
                    "{} x{} outputs={:?} inputs={:?}",
                    if c.is_spout() { "spout" } else { "bolt" },
                    c.parallelism,
                    c.outputs.iter().map(|o| &o.id).collect::<Vec<_>>(),
                    c.inputs
                ),
            );
        }
        s.finish()
    }
}
