//! Fuzzing entry point (`fuzz/`, target `tmaster`): what stream managers send the tmaster,
//! through the same decoding and decision core as the daemon. Not a stable API.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use heron_proto::api::config::KeyValue;
use heron_proto::api::{Config, Topology, TopologyState};
use heron_proto::tmanager::TManagerLocation;

use crate::connection::decode;
use crate::core::Core;
use crate::metrics::MetricsStore;
use crate::registry::ConnId;
use crate::registry::Registry;
use crate::stateful::{StatefulConfig, StatefulController};

/// `data`: one byte of choices (bit 0: an `EFFECTIVELY_ONCE` topology; the others: which of
/// two stream-manager connections each packet comes on), then framed packets.
pub fn stmgr_packets(data: &[u8]) {
    let Some((&choice, frames)) = data.split_first() else {
        return;
    };
    let t0 = Instant::now();
    let mut topology = Topology {
        id: "wc-1".into(),
        name: "wc".into(),
        state: TopologyState::Running as i32,
        ..Topology::default()
    };
    if choice & 1 == 1 {
        topology.topology_config = Some(Config {
            kvs: vec![KeyValue {
                key: "topology.reliability.mode".into(),
                value: Some("EFFECTIVELY_ONCE".into()),
                ..KeyValue::default()
            }],
        });
    }
    let stmgrs = ["stmgr-1".to_string(), "stmgr-2".to_string()];
    let registry = Registry::new(topology, stmgrs, 2, None, Duration::from_secs(60));
    let location = TManagerLocation {
        topology_name: "wc".into(),
        topology_id: "wc-1".into(),
        host: "127.0.0.1".into(),
        controller_port: 1,
        server_port: 2,
        stats_port: None,
    };
    let watch = Duration::from_secs(1);
    let mut core = Core::new(
        location,
        b"pp".to_vec(),
        registry,
        MetricsStore::new(),
        watch,
        t0,
    );
    if choice & 1 == 1 {
        let cfg = StatefulConfig {
            interval: Duration::from_secs(1),
            start_clean: false,
            keep: 5,
        };
        core.set_stateful(StatefulController::new(cfg, None, "pp".into(), 1, t0));
    }
    let peer = SocketAddr::from(([127, 0, 0, 1], 40_000));
    core.on_connected(1, peer);
    core.on_connected(2, peer);
    let mut now = t0;
    for (i, p) in heron_proto::fuzz::packets(frames).into_iter().enumerate() {
        let conn: ConnId = 1 + ConnId::from((choice >> (1 + i % 7)) & 1);
        now += Duration::from_millis(300);
        match decode(&p) {
            Ok(Some(request)) => core.on_request(conn, p.reqid, request, now),
            Ok(None) => {}
            Err(_) => core.on_closed(conn, now),
        }
        core.on_timer(now);
        while core.next_action().is_some() {}
    }
    core.on_timer(now + Duration::from_secs(120));
    while core.next_action().is_some() {}
}

#[cfg(test)]
mod tests {
    #[test]
    fn kept_inputs_run_without_panicking() {
        assert!(heron_proto::fuzz::replay("tmaster", super::stmgr_packets) > 0);
    }
}
