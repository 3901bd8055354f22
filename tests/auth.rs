//! Authentication on the real daemons (`heron_auth`). A running `ledger` topology (ATLEAST_ONCE,
//! two containers) is approached from outside, with the real processes' ids from its physical
//! plan but without its secret: as a stream manager saying hello to the other one, as an
//! instance registering with its stream manager, as a stream manager registering with the
//! tmaster, with a wrong secret, and on the controller without (or with a wrong) bearer token.
//! Each is refused and logged with the peer's address; the real links stay up (no daemon or
//! instance restarts), every message id is still acked, and the CLI, which reads the token from
//! the secret `heron submit` wrote, still controls the topology.
//!
//! A topology with `heron-rs.auth.required=false` has no secret and talks plain Heron; a value
//! other than true/false is refused at submit.

mod support;

use heron_proto::codec::{encode_message, ReqId};
use heron_proto::stmgr::{RegisterInstanceRequest, StrMgrHelloRequest};
use heron_proto::system::PhysicalPlan;
use heron_proto::tmanager::StMgrRegisterRequest;
use heron_statemgr::{LocalFsStateManager, StateDir, StateManagerExt};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};
use support::{
    acked_ids, assert_ledger_config_refused, assert_ok, fresh_example, role_pids, submit_ledger,
    topology_secret, wait_for, TestEnv,
};

/// Ids of the attacked run: 24 000 at 400 a second per spout task, about 30 s, so the attacks
/// (a few seconds) happen while tuples flow.
const IDS: u64 = 24_000;

/// Encodes one Heron packet.
fn packet<M: prost::Name>(msg: &M) -> Vec<u8> {
    let mut out = heron_proto::bytes::BytesMut::new();
    encode_message(&mut out, &ReqId::random(), msg);
    out.to_vec()
}

/// Connects to 127.0.0.1:`port` without the handshake, sends `bytes`, and returns everything
/// the daemon sent before it closed the connection (panics if it is still open after 20 s).
fn sent_without_secret(port: u16, bytes: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let _ = s.write_all(bytes);
    let end = Instant::now() + Duration::from_secs(20);
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while Instant::now() < end {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return got,
            Err(_) => {}
        }
    }
    panic!("port {port} kept an unauthenticated connection open for 20 s");
}

/// The daemon answered nothing but its challenge before closing: the Heron message never
/// reached it.
#[track_caller]
fn assert_refused(port: u16, bytes: &[u8], what: &str) {
    let got = sent_without_secret(port, bytes);
    assert_eq!(
        got.len(),
        heron_auth::handshake::CHALLENGE_LEN,
        "{what}: expected only the handshake challenge back, got {} bytes",
        got.len()
    );
    assert!(got.starts_with(heron_auth::handshake::MAGIC), "{what}");
}

/// POSTs to the controller with an optional bearer token; the HTTP status.
fn controller_post(port: u16, path: &str, token: Option<&str>) -> u16 {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to the controller");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status from the controller: {text:?}"))
}

fn log_of(env: &TestEnv, name: &str, process: &str) -> String {
    let dir = env.working_dir(name).expect("working dir");
    std::fs::read_to_string(heron_scheduler::layout::log_file(&dir, process)).unwrap_or_default()
}

#[test]
fn impostors_without_the_secret_are_refused_and_the_topology_loses_nothing() {
    let mut env = TestEnv::new();
    let ids = IDS.to_string();
    let out = submit_ledger(&mut env, &["--ids", &ids, "--rate", "400"]);
    let state = LocalFsStateManager::new(env.state_root());
    let pplan: PhysicalPlan = wait_for(Duration::from_secs(60), "the physical plan", || {
        state
            .get_proto::<PhysicalPlan>(StateDir::PPlans, "Ledger")
            .ok()
            .flatten()
            .filter(|p| p.stmgrs.len() == 2)
    });
    let tm = state
        .get_tmanager_location("Ledger")
        .unwrap()
        .expect("tmaster location");
    wait_for(Duration::from_secs(60), "ids acked", || {
        (acked_ids(&out).len() > 300).then_some(())
    });

    // The secret is the owner's alone.
    let dir = env.working_dir("Ledger").unwrap();
    let file = heron_scheduler::layout::secret_file(&dir);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600, "{}", file.display());
    assert_eq!(mode(file.parent().unwrap()), 0o700);

    let pids_before = (
        role_pids(&env, "tmaster"),
        role_pids(&env, "stmgr"),
        role_pids(&env, "instance"),
    );
    assert_eq!(pids_before.1.len(), 2, "two stream managers");

    // A stream manager hello naming the real peer stmgr-2, sent to stmgr-1.
    let (victim, peer) = (&pplan.stmgrs[0], &pplan.stmgrs[1]);
    let hello = StrMgrHelloRequest {
        topology_name: "Ledger".into(),
        topology_id: pplan.topology.id.clone(),
        stmgr: peer.id.clone(),
    };
    let data_port = u16::try_from(victim.data_port).unwrap();
    assert_refused(
        data_port,
        &packet(&hello),
        "a stmgr hello with a real peer's id",
    );

    // A registration copying a real instance of stmgr-1, sent to its instance server.
    let real = pplan
        .instances
        .iter()
        .find(|i| i.stmgr_id == victim.id)
        .expect("an instance of stmgr-1")
        .clone();
    let register = RegisterInstanceRequest {
        instance: real,
        topology_name: "Ledger".into(),
        topology_id: pplan.topology.id.clone(),
    };
    let local_port = u16::try_from(victim.local_data_port.expect("local data port")).unwrap();
    assert_refused(
        local_port,
        &packet(&register),
        "an instance with a real task id",
    );

    // A stream manager registering with the tmaster as stmgr-2.
    let as_stmgr = StMgrRegisterRequest {
        stmgr: peer.clone(),
        instances: Vec::new(),
    };
    let server_port = u16::try_from(tm.server_port).unwrap();
    assert_refused(
        server_port,
        &packet(&as_stmgr),
        "a stmgr registering with the tmaster",
    );

    // The handshake itself with a wrong secret fails on every server.
    let wrong = heron_auth::Secret::generate();
    for port in [data_port, local_port, server_port] {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let e = heron_auth::connect_std(&mut s, &wrong);
        assert!(e.is_err(), "port {port} accepted a wrong secret");
    }
    // ... and on the local data socket, on which the container's own instances connect
    let local_socket = heron_flow::local_socket::address(local_port).unwrap();
    let mut s = std::os::unix::net::UnixStream::connect_addr(&local_socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let e = heron_auth::connect_blocking(&mut s, &wrong);
    assert!(e.is_err(), "the local socket accepted a wrong secret");
    let instance_log = log_of(&env, "Ledger", &register.instance.instance_id);
    assert!(
        instance_log.contains("transport=\"local socket\""),
        "{} did not connect on the local socket:\n{instance_log}",
        register.instance.instance_id
    );

    // The controller wants the token.
    let ctl = u16::try_from(tm.controller_port).unwrap();
    let path = format!("/deactivate?topologyid={}", pplan.topology.id);
    assert_eq!(controller_post(ctl, &path, None), 401, "no token");
    let wrong_token = wrong.bearer_token();
    assert_eq!(
        controller_post(ctl, &path, Some(&wrong_token)),
        401,
        "wrong token"
    );

    // Refusals are logged with the peer's address.
    for (process, what) in [("stmgr-1", "stream manager"), ("tmaster", "tmaster")] {
        let log = log_of(&env, "Ledger", process);
        assert!(
            log.contains("authentication failed") && log.contains("127.0.0.1:"),
            "the {what} log does not show the refusals:\n{log}"
        );
    }
    let log = log_of(&env, "Ledger", "tmaster");
    assert!(
        log.contains("refusing a controller request with no bearer token")
            && log.contains("wrong bearer token"),
        "{log}"
    );

    // Strangers that connect and say nothing hold at most MAX_PENDING_HANDSHAKES slots (each
    // for the handshake timeout at most); one more is closed at once, unanswered.
    let silent: Vec<TcpStream> = (0..heron_auth::MAX_PENDING_HANDSHAKES)
        .map(|_| {
            let mut s = TcpStream::connect(("127.0.0.1", data_port)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut challenge = [0u8; heron_auth::handshake::CHALLENGE_LEN];
            s.read_exact(&mut challenge)
                .expect("a challenge while slots are free");
            s
        })
        .collect();
    let extra = sent_without_secret(data_port, &[]);
    assert!(
        extra.is_empty(),
        "a connection over the handshake bound got {extra:?}"
    );
    drop(silent);
    // Their slots come back as they close; members get in again.
    wait_for(
        Duration::from_secs(15),
        "a member connection after the strangers left",
        || {
            let mut s = TcpStream::connect(("127.0.0.1", data_port)).ok()?;
            heron_auth::connect_std(&mut s, &topology_secret(&env, "Ledger")).ok()
        },
    );

    let acked_during = acked_ids(&out).len() as u64;
    assert!(
        acked_during < IDS,
        "the run ended before the attacks did; make it longer"
    );

    // Nothing of the topology noticed: every id is acked, no process restarted.
    wait_for(Duration::from_secs(120), "every id acked", || {
        (acked_ids(&out).len() as u64 == IDS).then_some(())
    });
    assert_eq!(
        (
            role_pids(&env, "tmaster"),
            role_pids(&env, "stmgr"),
            role_pids(&env, "instance")
        ),
        pids_before,
        "a daemon or instance died or restarted"
    );

    // The CLI reads the token from the secret submit wrote.
    for verb in ["deactivate", "activate"] {
        let done = env.heron_in(verb, "local", &[], &["Ledger"]);
        assert_ok(&done, &format!("heron {verb}"));
    }
    // The right token on a raw request works too (the topology is active: 400, not 401).
    let token = topology_secret(&env, "Ledger").bearer_token();
    let activate = format!("/activate?topologyid={}", pplan.topology.id);
    assert_eq!(controller_post(ctl, &activate, Some(&token)), 400);

    assert_ok(&env.kill("Ledger"), "heron kill");
    assert!(!file.exists(), "kill leaves the secret behind");
}

#[test]
fn auth_can_be_turned_off_for_plain_heron_clients_and_a_bad_value_is_refused() {
    let mut env = TestEnv::new();
    let out = submit_ledger(
        &mut env,
        &[
            "--ids",
            "500",
            "--rate",
            "300",
            "--config",
            "heron-rs.auth.required=false",
        ],
    );
    let dir = env.working_dir("Ledger").unwrap();
    assert!(!heron_scheduler::layout::secret_file(&dir).exists());
    wait_for(Duration::from_secs(120), "every id acked", || {
        (acked_ids(&out).len() == 500).then_some(())
    });
    // A plain Heron register request to the tmaster is read and answered (a response
    // packet, not a challenge).
    let state = LocalFsStateManager::new(env.state_root());
    let tm = state.get_tmanager_location("Ledger").unwrap().unwrap();
    let mut s = TcpStream::connect(("127.0.0.1", tm.server_port as u16)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let request = StMgrRegisterRequest {
        stmgr: heron_proto::system::StMgr {
            id: "stmgr-99".into(),
            host_name: "127.0.0.1".into(),
            data_port: 1,
            local_endpoint: String::new(),
            cwd: None,
            pid: None,
            shell_port: None,
            local_data_port: None,
        },
        instances: Vec::new(),
    };
    s.write_all(&packet(&request)).unwrap();
    let mut head = [0u8; 8];
    s.read_exact(&mut head).expect("an answer from the tmaster");
    assert_ne!(
        &head,
        heron_auth::handshake::MAGIC,
        "a challenge with auth off"
    );
    let done = env.heron_in("deactivate", "local", &[], &["Ledger"]);
    assert_ok(&done, "heron deactivate without a secret");
    assert_ok(&env.kill("Ledger"), "heron kill");

    assert_ledger_config_refused(&mut env, heron_auth::REQUIRED_KEY, "maybe");
}

#[test]
fn daemons_bind_the_configured_host_and_nothing_else() {
    // 127.0.0.2 is loopback too, but a listener bound there is not reachable on 127.0.0.1:
    // that tells "binds the configured address" from "binds every address".
    let env = TestEnv::new();
    let out = env.home().join("ledger");
    std::fs::create_dir_all(&out).unwrap();
    let submitted = env.heron_in(
        "submit",
        "local",
        &["--config-property=heron-rs.host=127.0.0.2".to_string()],
        &[
            fresh_example("ledger").to_str().unwrap(),
            "--out-dir",
            out.to_str().unwrap(),
            "--ids",
            "400",
            "--rate",
            "200",
        ],
    );
    assert_ok(&submitted, "heron submit with heron-rs.host");
    wait_for(Duration::from_secs(120), "every id acked", || {
        (acked_ids(&out).len() == 400).then_some(())
    });
    let state = LocalFsStateManager::new(env.state_root());
    let tm = state.get_tmanager_location("Ledger").unwrap().unwrap();
    let pplan = state.get_physical_plan("Ledger").unwrap().unwrap();
    assert_eq!(tm.host, "127.0.0.2");
    let stats = tm.stats_port.expect("a stats port");
    let mut ports = vec![tm.server_port, tm.controller_port, stats];
    for s in &pplan.stmgrs {
        assert_eq!(s.host_name, "127.0.0.2", "{s:?}");
        ports.push(s.data_port);
    }
    for port in ports {
        let port = u16::try_from(port).unwrap();
        assert!(TcpStream::connect(("127.0.0.2", port)).is_ok(), "{port}");
        assert!(
            TcpStream::connect(("127.0.0.1", port)).is_err(),
            "port {port} is also open on 127.0.0.1"
        );
    }
    // A wildcard is refused: it would be advertised to the other daemons as well.
    let refused = env.heron_in(
        "submit",
        "local",
        &["--config-property=heron-rs.host=0.0.0.0".to_string()],
        &[
            fresh_example("ledger").to_str().unwrap(),
            "--out-dir",
            out.to_str().unwrap(),
        ],
    );
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("heron-rs.host"));
    assert_ok(
        &env.heron_in("kill", "local", &[], &["Ledger"]),
        "heron kill",
    );
}

#[test]
fn with_tls_the_links_between_daemons_are_encrypted_and_nothing_is_lost() {
    let mut env = TestEnv::new();
    let out = submit_ledger(
        &mut env,
        &[
            "--ids",
            "4000",
            "--rate",
            "400",
            "--config",
            "heron-rs.tls.enabled=true",
        ],
    );
    // Every id crosses the stream managers' TLS links and is acked.
    wait_for(Duration::from_secs(120), "every id acked", || {
        (acked_ids(&out).len() == 4000).then_some(())
    });
    let dir = env.working_dir("Ledger").unwrap();
    let auth_dir = heron_scheduler::layout::secret_file(&dir)
        .parent()
        .unwrap()
        .to_path_buf();
    let key = auth_dir.join("tls-key.der");
    let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", key.display());
    let tls = heron_auth::Tls::load(&auth_dir).unwrap();
    let secret = topology_secret(&env, "Ledger");

    let state = LocalFsStateManager::new(env.state_root());
    let tm = state.get_tmanager_location("Ledger").unwrap().unwrap();
    let pplan = state.get_physical_plan("Ledger").unwrap().unwrap();
    let stmgr = &pplan.stmgrs[0];
    let tls_ports = [
        u16::try_from(stmgr.data_port).unwrap(),
        u16::try_from(tm.server_port).unwrap(),
    ];
    for port in tls_ports {
        // In plain TCP nothing of ours answers: no challenge, the connection is closed.
        let got = sent_without_secret(port, &[0u8; 64]);
        assert!(
            !got.starts_with(heron_auth::handshake::MAGIC),
            "port {port} spoke plain TCP"
        );
        // With the topology's CA and secret, TLS and then the handshake pass.
        let tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
        heron_auth::dial_std(tcp, Some(&tls), Some(&secret))
            .unwrap_or_else(|e| panic!("TLS to port {port}: {e}"));
        // Another topology's certificate authority does not vouch for the server.
        let other = tempfile::tempdir().unwrap();
        heron_auth::Tls::create(other.path()).unwrap();
        let stranger = heron_auth::Tls::load(other.path()).unwrap();
        let tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
        assert!(heron_auth::dial_std(tcp, Some(&stranger), Some(&secret)).is_err());
    }
    // The mesh is TLS only: no local mesh socket beside it (heron_flow::local_socket).
    for s in &pplan.stmgrs {
        let port = u16::try_from(s.data_port).unwrap();
        let addr = heron_flow::local_socket::mesh_address(&s.host_name, port).unwrap();
        assert!(
            std::os::unix::net::UnixStream::connect_addr(&addr).is_err(),
            "{} has a local mesh socket beside its TLS port",
            s.id
        );
    }
    // The instance server stays on plain loopback.
    let local = u16::try_from(stmgr.local_data_port.unwrap()).unwrap();
    drop(support::connect_as_member(&env, "Ledger", local));
    assert_ok(&env.kill("Ledger"), "heron kill");
    assert!(!auth_dir.exists(), "kill leaves the TLS key behind");
}
