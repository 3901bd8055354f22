//! Builders for topologies, physical plans and data tuples, as the tests of the daemons need
//! them.
//!
//! ```
//! use heron_proto::api::Grouping;
//! use heron_testkit::plan::{input, output, PlanBuilder, TopologyBuilder};
//!
//! let topology = TopologyBuilder::new("wc-1", "wc")
//!     .spout("word", vec![output("word", "default", &["word"])])
//!     .bolt("count", vec![input("word", "default", Grouping::Shuffle)], vec![])
//!     .parallelism("word", 2)
//!     .stmgrs(2)
//!     .build();
//! let plan = PlanBuilder::new(topology)
//!     .stmgr("stmgr-1", 6000)
//!     .instance("stmgr-1", "word", 1)
//!     .build();
//! assert_eq!(plan.instances[0].instance_id, "container_1_word_1");
//! ```

use heron_packer::keys;
use heron_proto::api::{
    self, config::KeyValue, stream_schema::KeyType, Bolt, Component, Config, Grouping, InputStream,
    OutputStream, Spout, StreamId, StreamSchema, Topology, TopologyState,
};
use heron_proto::system::{HeronDataTuple, Instance, InstanceInfo, PhysicalPlan, StMgr};
use heron_proto::Message;

/// A string config entry (`type` 1, as Heron's Java side writes them).
pub fn kv(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(value.into()),
        serialized_value: None,
        r#type: Some(1),
    }
}

/// Stream `stream` of `component`.
pub fn stream_id(component: &str, stream: &str) -> StreamId {
    StreamId {
        id: stream.into(),
        component_name: component.into(),
    }
}

/// A schema of `Object` fields.
pub fn schema(fields: &[&str]) -> StreamSchema {
    let key = |f: &&str| KeyType {
        key: f.to_string(),
        r#type: api::Type::Object as i32,
    };
    StreamSchema {
        keys: fields.iter().map(key).collect(),
    }
}

/// Output stream `stream` of `component` with the given fields.
pub fn output(component: &str, stream: &str, fields: &[&str]) -> OutputStream {
    OutputStream {
        stream: stream_id(component, stream),
        schema: schema(fields),
    }
}

/// A subscription to `stream` of `component` with grouping `g` (no grouping fields).
pub fn input(component: &str, stream: &str, g: Grouping) -> InputStream {
    InputStream {
        stream: stream_id(component, stream),
        gtype: g as i32,
        grouping_fields: None,
        custom_grouping_object: None,
        r#type: None,
    }
}

/// A FIELDS subscription to `stream` of `component`, grouped by `fields`.
pub fn fields_input(component: &str, stream: &str, fields: &[&str]) -> InputStream {
    InputStream {
        grouping_fields: Some(schema(fields)),
        ..input(component, stream, Grouping::Fields)
    }
}

/// A topology under construction; see the [module example](self).
#[derive(Debug, Clone)]
#[must_use]
pub struct TopologyBuilder(Topology);

impl TopologyBuilder {
    /// A running topology `name` with id `id` and no components.
    pub fn new(id: &str, name: &str) -> TopologyBuilder {
        TopologyBuilder(Topology {
            id: id.into(),
            name: name.into(),
            state: TopologyState::Running as i32,
            ..Topology::default()
        })
    }

    /// Adds spout `name`.
    pub fn spout(mut self, name: &str, outputs: Vec<OutputStream>) -> TopologyBuilder {
        let comp = named(name);
        self.0.spouts.push(Spout { comp, outputs });
        self
    }

    /// Adds bolt `name`.
    pub fn bolt(
        mut self,
        name: &str,
        inputs: Vec<InputStream>,
        outputs: Vec<OutputStream>,
    ) -> TopologyBuilder {
        let comp = named(name);
        self.0.bolts.push(Bolt {
            comp,
            inputs,
            outputs,
        });
        self
    }

    /// Sets the parallelism config of the spout or bolt `component` (added before).
    ///
    /// # Panics
    /// If there is no such component.
    pub fn parallelism(mut self, component: &str, n: u32) -> TopologyBuilder {
        let t = &mut self.0;
        let comp = t
            .spouts
            .iter_mut()
            .map(|s| &mut s.comp)
            .chain(t.bolts.iter_mut().map(|b| &mut b.comp))
            .find(|c| c.name == component)
            .unwrap_or_else(|| panic!("no component {component} in the topology"));
        comp.config
            .kvs
            .push(kv(keys::COMPONENT_PARALLELISM, &n.to_string()));
        self
    }

    /// Adds a topology config entry.
    pub fn config(mut self, key: &str, value: &str) -> TopologyBuilder {
        let config = self.0.topology_config.get_or_insert_with(Config::default);
        config.kvs.push(kv(key, value));
        self
    }

    /// Asks for `n` containers (stream managers).
    pub fn stmgrs(self, n: u32) -> TopologyBuilder {
        self.config(keys::STMGRS, &n.to_string())
    }

    /// Sets the topology state.
    pub fn state(mut self, state: TopologyState) -> TopologyBuilder {
        self.0.state = state as i32;
        self
    }

    /// The topology.
    pub fn build(self) -> Topology {
        self.0
    }
}

impl From<Topology> for TopologyBuilder {
    /// Goes on building `topology`.
    fn from(topology: Topology) -> TopologyBuilder {
        TopologyBuilder(topology)
    }
}

fn named(name: &str) -> Component {
    Component {
        name: name.into(),
        ..Component::default()
    }
}

/// The record of stream manager `id` on 127.0.0.1 with data port `data_port`.
pub fn stmgr(id: &str, data_port: u16) -> StMgr {
    StMgr {
        id: id.into(),
        host_name: "127.0.0.1".into(),
        data_port: i32::from(data_port),
        local_endpoint: "/unused".into(),
        ..StMgr::default()
    }
}

/// Instance `task` of `component` (component index `index`) under stream manager `stmgr`;
/// its id is `container_<c>_<component>_<task>` where `stmgr` is `stmgr-<c>`.
pub fn instance(stmgr: &str, component: &str, task: i32, index: i32) -> Instance {
    let info = InstanceInfo {
        task_id: task,
        component_index: index,
        component_name: component.into(),
        params: vec![],
        remote_debugger_port: None,
    };
    let container = stmgr.strip_prefix("stmgr-").unwrap_or(stmgr);
    Instance {
        instance_id: format!("container_{container}_{component}_{task}"),
        stmgr_id: stmgr.into(),
        info,
    }
}

/// A physical plan under construction; see the [module example](self).
#[derive(Debug, Clone)]
#[must_use]
pub struct PlanBuilder(PhysicalPlan);

impl PlanBuilder {
    /// A plan of `topology` with no stream managers and no instances.
    pub fn new(topology: Topology) -> PlanBuilder {
        PlanBuilder(PhysicalPlan {
            topology,
            ..PhysicalPlan::default()
        })
    }

    /// Adds stream manager `id` ([`stmgr`]).
    pub fn stmgr(mut self, id: &str, data_port: u16) -> PlanBuilder {
        self.0.stmgrs.push(stmgr(id, data_port));
        self
    }

    /// Adds instance `task` of `component` (index 0) under `stmgr` ([`instance`]).
    pub fn instance(self, stmgr: &str, component: &str, task: i32) -> PlanBuilder {
        self.with_instance(instance(stmgr, component, task, 0))
    }

    /// Adds `instance` as it is.
    pub fn with_instance(mut self, instance: Instance) -> PlanBuilder {
        self.0.instances.push(instance);
        self
    }

    /// Changes the topology with a [`TopologyBuilder`].
    pub fn topology(mut self, f: impl FnOnce(TopologyBuilder) -> TopologyBuilder) -> PlanBuilder {
        let t = std::mem::take(&mut self.0.topology);
        self.0.topology = f(TopologyBuilder(t)).build();
        self
    }

    /// The plan.
    pub fn build(self) -> PhysicalPlan {
        self.0
    }
}

impl From<PhysicalPlan> for PlanBuilder {
    /// Goes on building `plan`.
    fn from(plan: PhysicalPlan) -> PlanBuilder {
        PlanBuilder(plan)
    }
}

/// A string value in the documented tuple-value encoding (tag 4, then the UTF-8 bytes).
pub fn str_value(s: &str) -> Vec<u8> {
    [&[4u8][..], s.as_bytes()].concat()
}

/// An encoded `HeronDataTuple` with `values` (already encoded) and explicit destinations
/// `dest` (empty: routed by grouping).
pub fn tuple(values: &[&[u8]], dest: &[i32]) -> Vec<u8> {
    let values = values.iter().copied().map(bytes::Bytes::copy_from_slice);
    let mut t = HeronDataTuple {
        dest_task_ids: dest.to_vec(),
        ..HeronDataTuple::default()
    };
    t.values.extend(values);
    t.encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallelism_and_stmgrs_are_config_entries() {
        let t = TopologyBuilder::new("id", "t")
            .spout("s", vec![])
            .bolt("b", vec![input("s", "default", Grouping::Shuffle)], vec![])
            .parallelism("b", 3)
            .stmgrs(2)
            .build();
        assert_eq!(
            t.bolts[0].comp.config.kvs,
            vec![kv(keys::COMPONENT_PARALLELISM, "3")]
        );
        assert!(t.spouts[0].comp.config.kvs.is_empty());
        assert_eq!(t.topology_config.unwrap().kvs, vec![kv(keys::STMGRS, "2")]);
        assert_eq!(t.state, TopologyState::Running as i32);
    }

    #[test]
    #[should_panic(expected = "no component nope")]
    fn parallelism_of_an_unknown_component_panics() {
        let _ = TopologyBuilder::new("id", "t").parallelism("nope", 1);
    }

    #[test]
    fn fields_input_carries_its_fields() {
        let i = fields_input("s", "default", &["word"]);
        assert_eq!(i.gtype, Grouping::Fields as i32);
        assert_eq!(i.grouping_fields, Some(schema(&["word"])));
    }

    #[test]
    fn instance_ids_follow_the_container() {
        let i = instance("stmgr-3", "count", 7, 1);
        assert_eq!(i.instance_id, "container_3_count_7");
        assert_eq!(i.info.component_index, 1);
    }

    #[test]
    fn tuples_decode_back() {
        let bytes = tuple(&[&str_value("hi")], &[4]);
        let t = HeronDataTuple::decode(bytes.as_slice()).unwrap();
        assert_eq!(t.values, vec![bytes::Bytes::from_static(b"\x04hi")]);
        assert_eq!(t.dest_task_ids, vec![4]);
        assert_eq!(t.key, 0);
    }
}
