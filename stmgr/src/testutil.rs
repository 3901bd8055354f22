//! Builders for physical plans and tuples, for the unit tests: thin wrappers of
//! `heron_testkit::plan` under the names the stream manager's tests use.

use heron_proto::api::{self, InputStream, OutputStream};
use heron_proto::system::PhysicalPlan;
use heron_testkit::plan::{self as kit, PlanBuilder, TopologyBuilder};

pub(crate) use crate::bench_api::instance;
pub(crate) use heron_testkit::plan::{str_value, tuple};

pub(crate) const TOPOLOGY: &str = "wc";
pub(crate) const TOPOLOGY_ID: &str = "wc-1";

pub(crate) fn output(component: &str, stream: &str, fields: &[&str]) -> OutputStream {
    kit::output(component, stream, fields)
}

pub(crate) fn input(component: &str, stream: &str, g: api::Grouping) -> InputStream {
    kit::input(component, stream, g)
}

pub(crate) fn fields_input(component: &str, stream: &str, fields: &[&str]) -> InputStream {
    kit::fields_input(component, stream, fields)
}

pub(crate) fn local_or_shuffle_input(component: &str, stream: &str) -> InputStream {
    let mut i = input(component, stream, api::Grouping::Shuffle);
    i.custom_grouping_object = Some(bytes::Bytes::from_static(b"heron-rs:local-or-shuffle"));
    i
}

/// A physical plan of topology [`TOPOLOGY`] under construction.
pub(crate) struct Plan(pub PhysicalPlan);

impl Plan {
    pub fn new() -> Plan {
        Plan(PlanBuilder::new(TopologyBuilder::new(TOPOLOGY_ID, TOPOLOGY).build()).build())
    }

    fn with(self, f: impl FnOnce(PlanBuilder) -> PlanBuilder) -> Plan {
        Plan(f(PlanBuilder::from(self.0)).build())
    }

    pub fn spout(self, name: &str, outputs: Vec<OutputStream>) -> Plan {
        self.with(|p| p.topology(|t| t.spout(name, outputs)))
    }

    pub fn bolt(self, name: &str, inputs: Vec<InputStream>, outputs: Vec<OutputStream>) -> Plan {
        self.with(|p| p.topology(|t| t.bolt(name, inputs, outputs)))
    }

    pub fn stmgr(self, id: &str, port: i32) -> Plan {
        let port = u16::try_from(port).expect("a TCP port");
        self.with(|p| p.stmgr(id, port))
    }

    pub fn instance(self, stmgr: &str, component: &str, task: i32) -> Plan {
        self.with(|p| p.with_instance(instance(stmgr, component, task)))
    }

    pub fn build(self) -> PhysicalPlan {
        self.0
    }
}

/// Spout 1 and bolt 3 (consuming the spout by `g`, emitting nothing) on stmgr-1, spout 2 on
/// stmgr-2, with `config` as the topology config.
pub(crate) fn two_spouts_one_bolt(g: api::Grouping, config: &[(&str, &str)]) -> PhysicalPlan {
    let p = Plan::new()
        .spout("spout", vec![output("spout", "default", &["word"])])
        .bolt("bolt", vec![input("spout", "default", g)], vec![])
        .stmgr("stmgr-1", 6001)
        .stmgr("stmgr-2", 6002)
        .instance("stmgr-1", "spout", 1)
        .instance("stmgr-2", "spout", 2)
        .instance("stmgr-1", "bolt", 3)
        .build();
    with_config(p, config)
}

/// `pplan` with `kvs` as its topology config.
pub(crate) fn with_config(mut pplan: PhysicalPlan, kvs: &[(&str, &str)]) -> PhysicalPlan {
    pplan.topology.topology_config = Some(api::Config {
        kvs: kvs.iter().map(|(k, v)| kit::kv(k, v)).collect(),
    });
    pplan
}
