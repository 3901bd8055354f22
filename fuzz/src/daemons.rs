//! The daemons' socket input: the stream manager's core and the checkpoint manager's handler.

use std::time::{Duration, Instant};

use heron_ckptmgr::{Handler, LocalFsStorage};
use heron_proto::codec::{Packet, ReqId};
use heron_proto::fuzz::{packets, MAX_PACKET};
use heron_proto::stmgr::{RegisterInstanceRequest, StrMgrHelloRequest};
use heron_proto::system::PhysicalPlan;
use heron_stmgr::bench_api::{instance as plan_instance, ConnId, Core, CoreConfig, Incoming};
use heron_testkit::plan::{fields_input, output, PlanBuilder, TopologyBuilder};

const SPOUT: ConnId = 1;
const BOLT: ConnId = 2;
const PEER: ConnId = 3;
const NEW_INSTANCE: ConnId = 4;
const NEW_STMGR: ConnId = 5;
/// Which connection a fuzzed packet arrives on: the first byte of its REQID picks.
const CONNS: [ConnId; 5] = [SPOUT, BOLT, PEER, NEW_INSTANCE, NEW_STMGR];

/// The plan: spout task 1 and bolt task 3 here (`stmgr-1`), bolt task 4 on `stmgr-2`, a
/// fields grouping between them, in reliability mode `mode`.
pub(crate) fn plan(mode: &str) -> PhysicalPlan {
    let topology = TopologyBuilder::new("wc-1", "wc")
        .spout("spout", vec![output("spout", "default", &["word"])])
        .bolt(
            "bolt",
            vec![fields_input("spout", "default", &["word"])],
            vec![],
        )
        .config("topology.reliability.mode", mode)
        .build();
    PlanBuilder::new(topology)
        .stmgr("stmgr-1", 6001)
        .stmgr("stmgr-2", 6002)
        .instance("stmgr-1", "spout", 1)
        .instance("stmgr-1", "bolt", 3)
        .instance("stmgr-2", "bolt", 4)
        .build()
}

pub(crate) const MODES: [&str; 3] = ["ATMOST_ONCE", "ATLEAST_ONCE", "EFFECTIVELY_ONCE"];

/// Target `stmgr`: `data` is one byte choosing the reliability mode, then framed packets,
/// each arriving on the connection its REQID's first byte picks: a registered spout or bolt
/// instance, a stream manager that said hello, or new connections of either kind.
pub fn stmgr(data: &[u8]) {
    let Some((&choice, frames)) = data.split_first() else {
        return;
    };
    let mut now = Instant::now();
    let cfg = CoreConfig {
        topology_name: "wc".into(),
        topology_id: "wc-1".into(),
        stmgr_id: "stmgr-1".into(),
        instance_ids: vec!["container_1_spout_1".into(), "container_1_bolt_3".into()],
        max_packet_size: MAX_PACKET,
        batch_bytes: 1 << 15,
    };
    let mut core = Core::new(cfg, now);
    for (conn, component, task) in [(SPOUT, "spout", 1), (BOLT, "bolt", 3)] {
        core.on_connected(conn, Incoming::Instance, format!("fuzz-{conn}"));
        let register = RegisterInstanceRequest {
            instance: plan_instance("stmgr-1", component, task),
            topology_name: "wc".into(),
            topology_id: "wc-1".into(),
        };
        core.on_packet(conn, &Packet::from_message(ReqId::random(), &register), now);
    }
    core.on_pplan(plan(MODES[usize::from(choice) % 3]), now);
    core.on_connected(PEER, Incoming::Stmgr, "fuzz-peer".into());
    let hello = StrMgrHelloRequest {
        topology_name: "wc".into(),
        topology_id: "wc-1".into(),
        stmgr: "stmgr-2".into(),
    };
    core.on_packet(PEER, &Packet::from_message(ReqId::random(), &hello), now);
    core.on_connected(NEW_INSTANCE, Incoming::Instance, "fuzz-new".into());
    core.on_connected(NEW_STMGR, Incoming::Stmgr, "fuzz-new-stmgr".into());
    core.end_round(now, true);
    core.drain_actions().for_each(drop);
    for (i, p) in packets(frames).into_iter().enumerate() {
        let conn = CONNS[usize::from(p.reqid.0[0]) % CONNS.len()];
        now += Duration::from_millis(1);
        core.on_packet(conn, &p, now);
        if i % 4 == 3 {
            core.end_round(now, false);
            core.drain_actions().for_each(drop);
        }
    }
    core.end_round(now, true);
    core.on_timer(now + Duration::from_secs(60));
    core.drain_actions().for_each(drop);
}

/// Target `ckptmgr`: framed packets to the checkpoint manager's handler, over local file
/// system storage in a fresh directory.
pub fn ckptmgr(data: &[u8]) {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let handler = Handler::new("wc", "wc-1", LocalFsStorage::new(dir.path()));
    for p in packets(data) {
        let _ = handler.handle(&p);
    }
}
