//! Back pressure in the core: watermarks, notices to and from peers, spout read pauses.

use super::*;
use crate::backpressure::plan::{drain_time, watermarks};
use heron_proto::stmgr::StopBackPressureMessage;

fn running() -> H {
    let mut h = H::running(api::Grouping::Shuffle);
    h.core
        .on_stmgr_client_up("stmgr-2", h.attempt, PEER_OUT, "peer".into(), h.now);
    h.hello(PEER_IN, "stmgr-2");
    h.round(true);
    h
}

fn pauses(out: &[Out]) -> Vec<(ConnId, bool)> {
    out.iter()
        .filter_map(|o| match o {
            Out::Pause(c, p) => Some((*c, *p)),
            _ => None,
        })
        .collect()
}

fn notices(out: &[Out], conn: ConnId) -> Vec<String> {
    frames_to(out, conn)
        .iter()
        .map(|p| p.type_name().to_string())
        .collect()
}

#[test]
fn a_slow_local_bolt_stops_local_spouts_and_tells_the_peers() {
    let mut h = running();
    let high = crate::backpressure::DEFAULT_HIGH_WATERMARK;
    h.core.on_backlog(BOLT, high - 1);
    assert!(pauses(&h.round(true)).is_empty());
    h.core.on_backlog(SPOUT, high * 2); // a spout's backlog is watched too (acks)
    assert_eq!(pauses(&h.round(true)), vec![(SPOUT, true)]);
    h.core.on_backlog(SPOUT, 0);
    assert_eq!(pauses(&h.round(true)), vec![(SPOUT, false)]);
    h.core.on_backlog(BOLT, high);
    let out = h.round(true);
    assert_eq!(pauses(&out), vec![(SPOUT, true)], "only the spout stops");
    assert_eq!(notices(&out, PEER_OUT), vec![START_BACK_PRESSURE]);
    assert!(h.core.spouts_throttled());
    assert!(h.core.initiating_back_pressure());
    let slow = h.core.slow_instances();
    assert_eq!(slow.len(), 1, "{slow:?}");
    assert!(slow[0].contains("bolt"), "the bolt causes it: {slow:?}");
    assert!(
        h.core
            .next_deadline()
            .is_some_and(|d| d <= h.now + crate::backpressure::MIN_BACKLOG_POLL),
        "slow connections are sampled again within the millisecond their backlog takes to \
         drain through the band between the watermarks"
    );
    h.core.on_backlog(BOLT, high / 2 - 1);
    let out = h.round(true);
    assert_eq!(pauses(&out), vec![(SPOUT, false)]);
    assert_eq!(notices(&out, PEER_OUT), vec![STOP_BACK_PRESSURE]);
    assert!(h.core.slow_instances().is_empty());
    assert!(!h.core.initiating_back_pressure());
}

#[test]
fn a_slowly_draining_bolt_is_slow_at_its_drain_time_not_at_the_byte_watermark() {
    use crate::backpressure::drain::{LOW_FRACTION, MIN_HIGH};
    let mut h = running();
    // the bolt's connection writes 10 KB per ms (10 MB/s) with a backlog waiting
    let mut written = 0u64;
    for _ in 0..60 {
        h.now += Duration::from_millis(1);
        written += 10_000;
        h.core.on_timer(h.now);
        h.core.on_writes(BOLT, written, 1_000);
    }
    assert!(pauses(&h.round(true)).is_empty());
    // 5 ms of 10 MB/s is 50 KB: the least high watermark, 64 KB, applies (the byte one is 1 MB)
    h.core.on_writes(BOLT, written, MIN_HIGH);
    assert_eq!(pauses(&h.round(true)), vec![(SPOUT, true)]);
    let low = (MIN_HIGH as f64 * LOW_FRACTION) as usize;
    h.core.on_writes(BOLT, written, low);
    assert!(pauses(&h.round(true)).is_empty(), "between the watermarks");
    h.core.on_writes(BOLT, written, low - 1);
    assert_eq!(pauses(&h.round(true)), vec![(SPOUT, false)]);
}

#[test]
fn a_peer_notice_stops_local_spouts_until_it_stops_or_goes() {
    let mut h = running();
    let start = StartBackPressureMessage {
        topology_name: TOPOLOGY.into(),
        topology_id: TOPOLOGY_ID.into(),
        stmgr: "stmgr-2".into(),
        message_id: "1".into(),
    };
    h.send(PEER_IN, &start);
    let out = h.round(true);
    assert_eq!(pauses(&out), vec![(SPOUT, true)]);
    assert!(
        notices(&out, PEER_OUT).is_empty(),
        "not our own back pressure"
    );
    let stop = StopBackPressureMessage {
        topology_name: TOPOLOGY.into(),
        topology_id: TOPOLOGY_ID.into(),
        stmgr: "stmgr-2".into(),
        message_id: "2".into(),
    };
    h.send(PEER_IN, &stop);
    assert_eq!(pauses(&h.round(true)), vec![(SPOUT, false)]);
    // a peer that announces and then disconnects releases the spouts too
    h.send(PEER_IN, &start);
    h.round(true);
    h.core.on_closed(PEER_IN, h.now);
    assert_eq!(pauses(&h.round(true)), vec![(SPOUT, false)]);
}

#[test]
fn late_joiners_get_the_current_state() {
    let mut h = running();
    let high = crate::backpressure::DEFAULT_HIGH_WATERMARK;
    h.core.on_backlog(BOLT, high);
    h.round(true);
    // the spout reconnects: its new connection is paused at once
    h.register(7, "spout", 1);
    let out = h.round(true);
    assert!(pauses(&out).contains(&(7, true)));
    // the link to stmgr-2 comes back: it hears that we announce
    h.core.on_closed(PEER_OUT, h.now);
    h.round(true);
    h.now += RECONNECT_INTERVAL;
    h.core.on_timer(h.now);
    let attempt = h
        .round(true)
        .iter()
        .find_map(|o| match o {
            Out::Connect(_, _, a) => Some(*a),
            _ => None,
        })
        .expect("reconnect");
    h.core
        .on_stmgr_client_up("stmgr-2", attempt, 11, "peer".into(), h.now);
    assert_eq!(notices(&h.round(true), 11), vec![START_BACK_PRESSURE]);
}

#[test]
fn watermarks_come_from_the_topology_config() {
    let p = plan_with(api::Grouping::All);
    assert_eq!(
        watermarks(&p),
        (1 << 20, 512 << 10),
        "our defaults (Heron: 100 / 50 MB)"
    );
    let p = with_config(
        p,
        &[
            ("heron.streammgr.network.backpressure.highwatermark.mb", "3"),
            (
                "heron.streammgr.network.backpressure.lowwatermark.mb",
                "0.25",
            ),
        ],
    );
    assert_eq!(watermarks(&p), (3 << 20, 256 << 10));
    assert_eq!(drain_time(&p), crate::backpressure::DEFAULT_DRAIN_TIME);
    let p = with_config(p, &[("heron-rs.backpressure.drain.ms", "2.5")]);
    assert_eq!(drain_time(&p), Duration::from_micros(2500));
    let p = with_config(p, &[("heron-rs.backpressure.drain.ms", "0")]);
    assert_eq!(drain_time(&p), Duration::ZERO, "off");
    let p = with_config(p, &[("heron-rs.backpressure.drain.ms", "soon")]);
    assert_eq!(drain_time(&p), crate::backpressure::DEFAULT_DRAIN_TIME);
}

/// Selective mode: spout 1 ("spout" → "bolt", tasks 3 here and 4 on stmgr-2) and, on
/// stmgr-2, spout 2 ("other" → "sink", task 5).
fn selective() -> H {
    let p = Plan::new()
        .spout("spout", vec![output("spout", "default", &["word"])])
        .spout("other", vec![output("other", "default", &["word"])])
        .bolt(
            "bolt",
            vec![input("spout", "default", api::Grouping::Shuffle)],
            vec![],
        )
        .bolt(
            "sink",
            vec![input("other", "default", api::Grouping::Shuffle)],
            vec![],
        )
        .stmgr("stmgr-1", 6001)
        .stmgr("stmgr-2", 6002)
        .instance("stmgr-1", "spout", 1)
        .instance("stmgr-2", "other", 2)
        .instance("stmgr-1", "bolt", 3)
        .instance("stmgr-2", "bolt", 4)
        .instance("stmgr-2", "sink", 5)
        .build();
    let p = with_config(p, &[("heron-rs.backpressure.selective", "true")]);
    let mut h = H::with_peer(p);
    h.round(true);
    h
}

fn start_naming(message_id: &str) -> StartBackPressureMessage {
    StartBackPressureMessage {
        topology_name: TOPOLOGY.into(),
        topology_id: TOPOLOGY_ID.into(),
        stmgr: "stmgr-2".into(),
        message_id: message_id.into(),
    }
}

#[test]
fn selective_notices_name_the_slow_component_and_stop_only_its_upstream_spouts() {
    let mut h = selective();
    h.core
        .on_backlog(BOLT, crate::backpressure::DEFAULT_HIGH_WATERMARK);
    let out = h.round(true);
    assert_eq!(pauses(&out), vec![(SPOUT, true)], "spout feeds bolt");
    let f = frames_to(&out, PEER_OUT);
    let m: StartBackPressureMessage = f[0].decode().unwrap();
    assert_eq!(m.message_id, "heron-rs-selective:bolt");
    h.core.on_backlog(BOLT, 0);
    assert_eq!(pauses(&h.round(true)), vec![(SPOUT, false)]);

    // stmgr-2's sink is slow: our spout does not feed it and keeps going
    h.send(PEER_IN, &start_naming("heron-rs-selective:sink"));
    assert!(pauses(&h.round(true)).is_empty());
    assert!(!h.core.spouts_throttled());
    // a notice naming our spout's bolt stops it
    h.send(PEER_IN, &start_naming("heron-rs-selective:sink,bolt"));
    assert_eq!(pauses(&h.round(true)), vec![(SPOUT, true)]);
    // a plain (Heron) notice means the whole topology
    h.send(PEER_IN, &start_naming("heron-rs-selective:sink"));
    assert_eq!(pauses(&h.round(true)), vec![(SPOUT, false)]);
    h.send(PEER_IN, &start_naming("12345"));
    assert_eq!(pauses(&h.round(true)), vec![(SPOUT, true)]);
}

#[test]
fn a_slow_peer_link_is_slow_for_every_component_that_peer_runs() {
    let mut h = selective();
    h.core
        .on_backlog(PEER_OUT, crate::backpressure::DEFAULT_HIGH_WATERMARK);
    let out = h.round(true);
    assert_eq!(pauses(&out), vec![(SPOUT, true)], "stmgr-2 runs bolt 4");
    let m: StartBackPressureMessage = frames_to(&out, PEER_OUT)[0].decode().unwrap();
    assert_eq!(m.message_id, "heron-rs-selective:bolt,other,sink");
}
