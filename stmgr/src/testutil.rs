//! Builders for physical plans and tuples, for the unit tests.

use heron_proto::api::{
    self, stream_schema::KeyType, Bolt, Component, InputStream, OutputStream, Spout, StreamId,
    StreamSchema, Topology,
};
use heron_proto::system::{HeronDataTuple, PhysicalPlan, StMgr};
use heron_proto::Message;

pub(crate) use crate::bench_api::instance;

pub(crate) const TOPOLOGY: &str = "wc";
pub(crate) const TOPOLOGY_ID: &str = "wc-1";

pub(crate) fn output(component: &str, stream: &str, fields: &[&str]) -> OutputStream {
    OutputStream {
        stream: StreamId {
            id: stream.into(),
            component_name: component.into(),
        },
        schema: StreamSchema {
            keys: fields
                .iter()
                .map(|f| KeyType {
                    key: f.to_string(),
                    r#type: api::Type::Object as i32,
                })
                .collect(),
        },
    }
}

pub(crate) fn input(component: &str, stream: &str, g: api::Grouping) -> InputStream {
    InputStream {
        stream: StreamId {
            id: stream.into(),
            component_name: component.into(),
        },
        gtype: g as i32,
        grouping_fields: None,
        custom_grouping_object: None,
        r#type: None,
    }
}

pub(crate) fn fields_input(component: &str, stream: &str, fields: &[&str]) -> InputStream {
    let mut i = input(component, stream, api::Grouping::Fields);
    i.grouping_fields = Some(output(component, stream, fields).schema);
    i
}

pub(crate) fn local_or_shuffle_input(component: &str, stream: &str) -> InputStream {
    let mut i = input(component, stream, api::Grouping::Shuffle);
    i.custom_grouping_object = Some(bytes::Bytes::from_static(b"heron-rs:local-or-shuffle"));
    i
}

fn component(name: &str) -> Component {
    Component {
        name: name.into(),
        ..Default::default()
    }
}

/// A physical plan under construction.
pub(crate) struct Plan(pub PhysicalPlan);

impl Plan {
    pub fn new() -> Plan {
        Plan(PhysicalPlan {
            topology: Topology {
                id: TOPOLOGY_ID.into(),
                name: TOPOLOGY.into(),
                state: api::TopologyState::Running as i32,
                ..Default::default()
            },
            ..Default::default()
        })
    }

    pub fn spout(mut self, name: &str, outputs: Vec<OutputStream>) -> Plan {
        self.0.topology.spouts.push(Spout {
            comp: component(name),
            outputs,
        });
        self
    }

    pub fn bolt(
        mut self,
        name: &str,
        inputs: Vec<InputStream>,
        outputs: Vec<OutputStream>,
    ) -> Plan {
        self.0.topology.bolts.push(Bolt {
            comp: component(name),
            inputs,
            outputs,
        });
        self
    }

    pub fn stmgr(mut self, id: &str, port: i32) -> Plan {
        self.0.stmgrs.push(StMgr {
            id: id.into(),
            host_name: "127.0.0.1".into(),
            data_port: port,
            local_endpoint: "/unused".into(),
            ..Default::default()
        });
        self
    }

    pub fn instance(mut self, stmgr: &str, component: &str, task: i32) -> Plan {
        self.0.instances.push(instance(stmgr, component, task));
        self
    }

    pub fn build(self) -> PhysicalPlan {
        self.0
    }
}

/// An encoded `HeronDataTuple`.
pub(crate) fn tuple(values: &[&[u8]], dest: &[i32]) -> Vec<u8> {
    HeronDataTuple {
        key: 0,
        roots: vec![],
        values: values
            .iter()
            .map(|v| bytes::Bytes::copy_from_slice(v))
            .collect(),
        dest_task_ids: dest.to_vec(),
    }
    .encode_to_vec()
}

/// A string value in the documented tuple-value encoding (tag 4).
pub(crate) fn str_value(s: &str) -> Vec<u8> {
    let mut v = vec![4u8];
    v.extend_from_slice(s.as_bytes());
    v
}

/// `pplan` with `kvs` as its topology config.
pub(crate) fn with_config(mut pplan: PhysicalPlan, kvs: &[(&str, &str)]) -> PhysicalPlan {
    pplan.topology.topology_config = Some(api::Config {
        kvs: kvs
            .iter()
            .map(|(k, v)| api::config::KeyValue {
                key: k.to_string(),
                value: Some(v.to_string()),
                ..Default::default()
            })
            .collect(),
    });
    pplan
}
