//! Packet size limits come from the topology's config (Heron's keys) and hold on the real
//! daemons: with `heron.streammgr.network.options.maximum.packet.mb: 1` and
//! `heron.tmanager.network.server.options.maximum.packet.mb: 1`, a packet announcing 2 MiB
//! closes that connection at once, one announcing 512 KiB waits for its body, and the
//! topology (the `ledger` test topology) keeps every id acked throughout. A limit heron-rs
//! refuses (0, "unlimited") fails the submit naming the key.

mod support;

use heron_proto::system::PhysicalPlan;
use heron_statemgr::{LocalFsStateManager, StateDir, StateManagerExt};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use support::{
    acked_ids, assert_ledger_config_refused, connect_as_member, submit_ledger, wait_for, TestEnv,
};

const IDS: u64 = 6_000;

/// Sends the start of a packet announcing `size` bytes (its size, a well-formed type name
/// and a little of the rest) on a connection that passed the topology's handshake; whether
/// the daemon closed the connection within `wait`.
fn closed_after_header(mut s: TcpStream, size: u32, wait: Duration) -> bool {
    let name = b"heron.proto.system.HeronTupleSet";
    let mut start = Vec::new();
    start.extend_from_slice(&size.to_be_bytes());
    start.extend_from_slice(&(name.len() as i32).to_be_bytes());
    start.extend_from_slice(name);
    start.extend_from_slice(&[0u8; 64]);
    // A daemon may close as soon as it has read the size: a write that fails then is the
    // close this asks about.
    if let Err(e) = s.write_all(&start) {
        use std::io::ErrorKind::{BrokenPipe, ConnectionReset};
        assert!(matches!(e.kind(), BrokenPipe | ConnectionReset), "{e}");
        return true;
    }
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let end = Instant::now() + wait;
    let mut buf = [0u8; 64];
    while Instant::now() < end {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => {}
        }
    }
    false
}

#[test]
fn configured_packet_limits_close_only_the_offending_connection() {
    let mut env = TestEnv::new();
    let ids = IDS.to_string();
    let out = submit_ledger(
        &mut env,
        &[
            "--ids",
            &ids,
            "--rate",
            "500",
            "--config",
            "heron.streammgr.network.options.maximum.packet.mb=1",
            "--config",
            "heron.tmanager.network.server.options.maximum.packet.mb=1",
        ],
    );
    let state = LocalFsStateManager::new(env.state_root());
    let pplan: PhysicalPlan = wait_for(Duration::from_secs(30), "the physical plan", || {
        state
            .get_proto::<PhysicalPlan>(StateDir::PPlans, "Ledger")
            .ok()
            .flatten()
    });
    let tmaster = state
        .get_tmanager_location("Ledger")
        .ok()
        .flatten()
        .expect("the tmaster location");
    wait_for(Duration::from_secs(30), "ids acked", || {
        (acked_ids(&out).len() > 500).then_some(())
    });
    let over = 2 * 1024 * 1024;
    let under = 512 * 1024;
    let stmgr_port = u16::try_from(pplan.stmgrs[0].data_port).unwrap();
    let tmaster_port = u16::try_from(tmaster.server_port).unwrap();
    for (what, port) in [("stream manager", stmgr_port), ("tmaster", tmaster_port)] {
        assert!(
            closed_after_header(
                connect_as_member(&env, "Ledger", port),
                over,
                Duration::from_secs(5)
            ),
            "the {what} kept a connection announcing a 2 MiB packet over its 1 MiB limit"
        );
        assert!(
            !closed_after_header(
                connect_as_member(&env, "Ledger", port),
                under,
                Duration::from_secs(1)
            ),
            "the {what} closed a connection announcing a 512 KiB packet under its limit"
        );
    }
    // the daemons' own links stayed up: every id gets acked
    wait_for(Duration::from_secs(60), "every id acked", || {
        (acked_ids(&out).len() as u64 == IDS).then_some(())
    });
}

#[test]
fn an_unlimited_packet_size_is_refused_at_submit() {
    let mut env = TestEnv::new();
    let key = "heron.streammgr.network.options.maximum.packet.mb";
    assert_ledger_config_refused(&mut env, key, "0");
}
