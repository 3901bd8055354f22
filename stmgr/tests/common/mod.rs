//! Helpers for the stream manager's integration tests: free ports, a blocking Heron-protocol
//! peer (fake instances and fake stream managers), a fake tmaster, plans and tuples.
#![allow(dead_code)]

use bytes::{Bytes, BytesMut};
use heron_proto::api::{self, Topology};
use heron_proto::codec::encode_message;
use heron_proto::stmgr::{
    NewInstanceAssignmentMessage, NewPhysicalPlanMessage, RegisterInstanceRequest,
    RegisterInstanceResponse,
};
use heron_proto::system::{
    HeronDataTuple, HeronDataTupleSet, HeronTupleSet, Instance, PhysicalPlan, StatusCode,
};
use heron_proto::tmanager::{
    StMgrHeartbeatRequest, StMgrHeartbeatResponse, StMgrRegisterRequest, StMgrRegisterResponse,
    TManagerLocation,
};
use heron_proto::{status, HeronCodec, Message, Name, Packet, ReqId};
use heron_statemgr::{LocalFsStateManager, StateDir, StateManagerExt};
pub use heron_stmgr::bench_api::instance;
use heron_stmgr::StmgrConfig;
use heron_testkit::plan::{self, PlanBuilder, TopologyBuilder};
use heron_testkit::wait_for;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const TOPOLOGY: &str = "it";
pub const TOPOLOGY_ID: &str = "it-1";
pub const MAX_PACKET: usize = 1 << 20;
/// The longest any single expected thing may take.
pub const STEP: Duration = Duration::from_secs(10);

/// Logs to the test output when `RUST_LOG` is set.
pub fn init_logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

pub use heron_testkit::free_port;

/// Runs `f` on its own thread and fails the test if it takes longer than `limit`.
pub fn with_timeout(limit: Duration, f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    let body = std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(limit) {
        Ok(()) => body.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            // the body panicked: re-raise its panic
            if let Err(p) = body.join() {
                std::panic::resume_unwind(p);
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("test did not finish within {limit:?}"),
    }
}

/// A stream manager configuration for the tests.
pub fn stmgr_config(
    root: &Path,
    id: &str,
    data_port: u16,
    local_port: u16,
    instances: &[&Instance],
) -> StmgrConfig {
    StmgrConfig {
        topology_name: TOPOLOGY.into(),
        topology_id: TOPOLOGY_ID.into(),
        state_manager: heron_statemgr::StateManagerSpec::Local(root.to_path_buf()),
        stmgr_id: id.into(),
        host: "127.0.0.1".into(),
        data_port,
        local_data_port: local_port,
        instance_ids: instances.iter().map(|i| i.instance_id.clone()).collect(),
        max_packet_size: MAX_PACKET,
        ckptmgr_port: None,
        shell_port: None,
        auth: None,
        tls: None,
    }
}

/// Runs a stream manager on a thread of its own (it runs until the test process exits).
pub fn start_stmgr(config: StmgrConfig) {
    std::thread::spawn(move || {
        if let Err(e) = heron_stmgr::run(config) {
            panic!("stream manager failed: {e}");
        }
    });
}

/// Points the topology's tmaster location at `port`.
pub fn write_location(root: &Path, port: u16) {
    let loc = TManagerLocation {
        topology_name: TOPOLOGY.into(),
        topology_id: TOPOLOGY_ID.into(),
        host: "127.0.0.1".into(),
        controller_port: 1,
        server_port: i32::from(port),
        stats_port: None,
    };
    LocalFsStateManager::new(root)
        .set_proto(StateDir::TManagers, TOPOLOGY, &loc)
        .unwrap();
}

/// A test peer's socket: TCP, or a stream manager's local data socket.
pub enum Conn {
    Tcp(TcpStream),
    Local(UnixStream),
}

impl Conn {
    pub fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        match self {
            Conn::Tcp(s) => s.set_read_timeout(t),
            Conn::Local(s) => s.set_read_timeout(t),
        }
    }

    pub fn shutdown(&self, how: Shutdown) -> std::io::Result<()> {
        match self {
            Conn::Tcp(s) => s.shutdown(how),
            Conn::Local(s) => s.shutdown(how),
        }
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.read(buf),
            Conn::Local(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.write(buf),
            Conn::Local(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Conn::Tcp(s) => s.flush(),
            Conn::Local(s) => s.flush(),
        }
    }
}

/// One end of a Heron-protocol connection, blocking.
pub struct Peer {
    pub stream: Conn,
    buf: BytesMut,
    codec: HeronCodec,
}

/// What a read found.
#[derive(Debug)]
pub enum Read1 {
    Packet(Packet),
    Closed,
    Nothing,
}

impl Peer {
    pub fn new(stream: TcpStream) -> Peer {
        stream.set_nodelay(true).unwrap();
        Peer::over(Conn::Tcp(stream))
    }

    pub fn over(stream: Conn) -> Peer {
        Peer {
            stream,
            buf: BytesMut::new(),
            codec: HeronCodec::new(0),
        }
    }

    /// Connects to the local data socket of the stream manager whose instance server is on
    /// `port`, retrying while it is not bound yet.
    pub fn connect_local(port: u16) -> Peer {
        let addr = heron_flow::local_socket::address(port).unwrap();
        let stream = wait_for(STEP, &format!("the local socket of port {port}"), || {
            UnixStream::connect_addr(&addr).ok()
        });
        Peer::over(Conn::Local(stream))
    }

    /// Connects to 127.0.0.1:`port`, retrying while nothing listens there yet.
    pub fn connect(port: u16) -> Peer {
        let stream = wait_for(STEP, &format!("a listener on port {port}"), || {
            TcpStream::connect(("127.0.0.1", port)).ok()
        });
        Peer::new(stream)
    }

    pub fn send<M: Message + Name>(&mut self, msg: &M) -> ReqId {
        let reqid = ReqId::random();
        let mut buf = BytesMut::new();
        encode_message(&mut buf, &reqid, msg);
        self.stream.write_all(&buf).unwrap();
        reqid
    }

    /// Answers request `to` with `msg` (its REQID echoed).
    pub fn reply<M: Message + Name>(&mut self, to: &Packet, msg: &M) {
        let mut buf = BytesMut::new();
        encode_message(&mut buf, &to.reqid, msg);
        self.stream.write_all(&buf).unwrap();
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    /// The next packet, the end of the connection, or nothing within `wait`.
    pub fn read(&mut self, wait: Duration) -> Read1 {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(p) = self.codec.decode_packet(&mut self.buf).unwrap() {
                return Read1::Packet(p);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Read1::Nothing;
            }
            self.stream.set_read_timeout(Some(left)).unwrap();
            let mut chunk = [0u8; 64 * 1024];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Read1::Closed,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Read1::Nothing
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Read1::Closed, // reset
            }
        }
    }

    /// The next packet; fails the test if none comes within [`STEP`].
    pub fn recv(&mut self) -> Packet {
        match self.read(STEP) {
            Read1::Packet(p) => p,
            other => panic!("expected a packet, got {other:?}"),
        }
    }

    /// The next packet, decoded as an `M`.
    pub fn recv_msg<M: Message + Name + Default>(&mut self) -> M {
        let p = self.recv();
        p.decode()
            .unwrap_or_else(|e| panic!("expected a {}: {e}", M::full_name()))
    }

    /// Fails the test unless the other side closes the connection within [`STEP`] (after
    /// any packets it sends first).
    pub fn expect_closed(&mut self) -> Vec<Packet> {
        let mut before = Vec::new();
        loop {
            match self.read(STEP) {
                Read1::Closed => return before,
                Read1::Packet(p) => before.push(p),
                Read1::Nothing => panic!("the connection was not closed"),
            }
        }
    }
}

/// Connects an instance to the stream manager at `port` and registers it.
pub fn register(port: u16, instance: &Instance) -> (Peer, RegisterInstanceResponse) {
    register_on(Peer::connect(port), instance)
}

/// Registers an instance on a connected peer.
pub fn register_on(mut peer: Peer, instance: &Instance) -> (Peer, RegisterInstanceResponse) {
    let reqid = peer.send(&RegisterInstanceRequest {
        instance: instance.clone(),
        topology_name: TOPOLOGY.into(),
        topology_id: TOPOLOGY_ID.into(),
    });
    let p = peer.recv();
    assert_eq!(p.reqid, reqid);
    let resp: RegisterInstanceResponse = p.decode().unwrap();
    (peer, resp)
}

/// Registers instances (all first: the stream manager waits for all of them), then waits
/// until each has the physical plan.
pub fn register_all(instances: &[(u16, &Instance)]) -> Vec<(Peer, PhysicalPlan)> {
    let registered: Vec<(Peer, RegisterInstanceResponse)> = instances
        .iter()
        .map(|(port, i)| register(*port, i))
        .collect();
    registered
        .into_iter()
        .map(|(mut peer, resp)| {
            assert_eq!(resp.status.status, StatusCode::Ok as i32, "{resp:?}");
            let plan = match resp.pplan {
                Some(p) => p,
                None => peer.recv_msg::<NewInstanceAssignmentMessage>().pplan,
            };
            (peer, plan)
        })
        .collect()
}

/// A topology: one spout emitting `[word]` on `default`, one bolt subscribing with `g`
/// (grouped by `word` for FIELDS).
pub fn topology(spout: &str, bolt: &str, g: api::Grouping) -> Topology {
    let input = match g {
        api::Grouping::Fields => plan::fields_input(spout, "default", &["word"]),
        g => plan::input(spout, "default", g),
    };
    TopologyBuilder::new(TOPOLOGY_ID, TOPOLOGY)
        .spout(spout, vec![plan::output(spout, "default", &["word"])])
        .bolt(bolt, vec![input], vec![])
        .build()
}

#[allow(unused_imports)] // not every test binary uses it
pub use heron_testkit::plan::stmgr as stmgr_record;

/// The smallest relay: spout task 1 and bolt task 2 (shuffle grouping) under `stmgr-1` with
/// data port `data`; returns (spout, bolt, plan).
pub fn relay_plan(data: u16) -> (Instance, Instance, PhysicalPlan) {
    let spout = instance("stmgr-1", "spout", 1);
    let bolt = instance("stmgr-1", "bolt", 2);
    let plan = PlanBuilder::new(topology("spout", "bolt", api::Grouping::Shuffle))
        .stmgr("stmgr-1", data)
        .with_instance(spout.clone())
        .with_instance(bolt.clone())
        .build();
    (spout, bolt, plan)
}

/// A stream manager of [`relay_plan`] on a thread, its fake tmaster and its state root.
pub struct Relay {
    pub root: tempfile::TempDir,
    pub data: u16,
    /// The instance server's port (and the local socket's name).
    pub local: u16,
    pub spout: Instance,
    pub bolt: Instance,
    pub plan: PhysicalPlan,
    pub tmaster: FakeTmaster,
}

impl Relay {
    /// Starts the stream manager with `config` applied to its configuration (the secret, ...).
    pub fn start(config: impl FnOnce(&mut StmgrConfig)) -> Relay {
        let root = tempfile::tempdir().unwrap();
        let (data, local) = (free_port(), free_port());
        let (spout, bolt, plan) = relay_plan(data);
        let tmaster = FakeTmaster::start(plan.clone());
        write_location(root.path(), tmaster.port);
        let mut c = stmgr_config(root.path(), "stmgr-1", data, local, &[&spout, &bolt]);
        config(&mut c);
        start_stmgr(c);
        Relay {
            root,
            data,
            local,
            spout,
            bolt,
            plan,
            tmaster,
        }
    }
}

/// The spout sends ten tuples tagged `tag`; the bolt must get all ten.
pub fn assert_relay(spout: &mut Peer, bolt: &mut Peer, tag: &str) {
    let sent: Vec<String> = (0..10).map(|i| format!("{tag}-{i}")).collect();
    spout.send(&words("spout", 1, &sent));
    let mut got = 0;
    let deadline = Instant::now() + STEP;
    while got < 10 {
        assert!(
            Instant::now() < deadline,
            "{tag}: the relay stopped ({got} of 10)"
        );
        if let Read1::Packet(p) = bolt.read(Duration::from_millis(100)) {
            let set: heron_proto::system::HeronTupleSet2 = p.decode().unwrap();
            got += set.data.unwrap().tuples.len();
        }
    }
    assert_eq!(got, 10, "{tag}");
}

/// A string value in the documented tuple-value encoding (tag 4).
pub fn str_value(s: &str) -> Bytes {
    plan::str_value(s).into()
}

/// A data tuple set of one-field tuples from task `src` of `component`.
pub fn words(component: &str, src: i32, words: &[String]) -> HeronTupleSet {
    HeronTupleSet {
        data: Some(HeronDataTupleSet {
            stream: plan::stream_id(component, "default"),
            tuples: words
                .iter()
                .map(|w| HeronDataTuple {
                    key: 0,
                    roots: vec![],
                    values: vec![str_value(w)],
                    dest_task_ids: vec![],
                })
                .collect(),
        }),
        control: None,
        src_task_id: src,
    }
}

/// What a fake tmaster saw.
#[derive(Debug)]
pub enum TmEvent {
    Registered(StMgrRegisterRequest),
    Disconnected,
}

/// A tmaster that accepts every stream manager and answers with a fixed plan.
pub struct FakeTmaster {
    pub port: u16,
    pub events: mpsc::Receiver<TmEvent>,
    /// Every other packet a stream manager sent (stateful reports, metrics).
    pub messages: mpsc::Receiver<Packet>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
    plan: Arc<Mutex<PhysicalPlan>>,
}

impl FakeTmaster {
    pub fn start(plan: PhysicalPlan) -> FakeTmaster {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, events) = mpsc::channel();
        let (msg_tx, messages) = mpsc::channel();
        let conns = Arc::new(Mutex::new(Vec::new()));
        let plan = Arc::new(Mutex::new(plan));
        let (c, p) = (Arc::clone(&conns), Arc::clone(&plan));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                c.lock().unwrap().push(stream.try_clone().unwrap());
                let (tx, msg_tx, p) = (tx.clone(), msg_tx.clone(), Arc::clone(&p));
                std::thread::spawn(move || serve_tmaster(Peer::new(stream), tx, msg_tx, p));
            }
        });
        FakeTmaster {
            port,
            events,
            messages,
            conns,
            plan,
        }
    }

    /// The next other packet that is an `M`, decoded (others are skipped); fails the test
    /// after [`STEP`].
    pub fn next_message<M: Message + Name + Default>(&self) -> M {
        let deadline = Instant::now() + STEP;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.messages.recv_timeout(left) {
                Ok(p) if p.is::<M>() => return p.decode().unwrap(),
                Ok(_) => {}
                Err(e) => panic!("no {} came: {e}", M::full_name()),
            }
        }
    }

    /// Sends `msg` (one-way) to every connected stream manager.
    pub fn send_all<M: Message + Name>(&self, msg: &M) {
        let mut buf = BytesMut::new();
        encode_message(&mut buf, &ReqId::ZERO, msg);
        for c in self.conns.lock().unwrap().iter_mut() {
            let _ = c.write_all(&buf);
        }
    }

    /// The next registration; fails the test after [`STEP`].
    pub fn next_registration(&self) -> StMgrRegisterRequest {
        let deadline = Instant::now() + STEP;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(TmEvent::Registered(r)) => return r,
                Ok(TmEvent::Disconnected) => {}
                Err(e) => panic!("no stream manager registered: {e}"),
            }
        }
    }

    /// Sends a new plan to every connected stream manager.
    pub fn push_plan(&self, plan: PhysicalPlan) {
        *self.plan.lock().unwrap() = plan.clone();
        self.send_all(&NewPhysicalPlanMessage { new_pplan: plan });
    }

    /// Drops every connection, as a crashed tmaster would.
    pub fn kick(&self) {
        for c in self.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }
}

fn serve_tmaster(
    mut peer: Peer,
    tx: mpsc::Sender<TmEvent>,
    messages: mpsc::Sender<Packet>,
    plan: Arc<Mutex<PhysicalPlan>>,
) {
    loop {
        let p = match peer.read(Duration::from_secs(3600)) {
            Read1::Packet(p) => p,
            _ => {
                let _ = tx.send(TmEvent::Disconnected);
                return;
            }
        };
        let mut out = BytesMut::new();
        if p.is::<StMgrRegisterRequest>() {
            let req: StMgrRegisterRequest = p.decode().unwrap();
            let _ = tx.send(TmEvent::Registered(req));
            let resp = StMgrRegisterResponse {
                status: status(StatusCode::Ok, None),
                pplan: Some(plan.lock().unwrap().clone()),
            };
            encode_message(&mut out, &p.reqid, &resp);
        } else if p.is::<StMgrHeartbeatRequest>() {
            let resp = StMgrHeartbeatResponse {
                status: status(StatusCode::Ok, None),
            };
            encode_message(&mut out, &p.reqid, &resp);
        } else {
            let _ = messages.send(p);
        }
        if peer.stream.write_all(&out).is_err() {
            let _ = tx.send(TmEvent::Disconnected);
            return;
        }
    }
}

/// A tuple set from spout task 1 (on stmgr-2) to bolt task 2, of `words`, tagged `txid`.
#[allow(dead_code)] // not every test binary uses it
pub fn from_spout(txid: Option<i64>, words: &[&str]) -> heron_proto::stmgr::TupleStreamMessage {
    use heron_proto::system::{HeronDataTupleSet2, HeronTupleSet2};
    let set = HeronTupleSet2 {
        data: Some(HeronDataTupleSet2 {
            stream: api::StreamId {
                id: "default".into(),
                component_name: "spout".into(),
            },
            tuples: words
                .iter()
                .map(|w| Bytes::from(heron_testkit::plan::tuple(&[&str_value(w)], &[])))
                .collect(),
        }),
        control: None,
        src_task_id: 1,
    };
    heron_proto::stmgr::TupleStreamMessage {
        task_id: 2,
        set: set.encode_to_vec().into(),
        src_task_id: 1,
        num_tuples: words.len() as i32,
        restore_txid: txid,
    }
}

/// Says hello on `peer` as stream manager `stmgr` of `topology` (this test topology's id) and
/// returns the answer.
#[allow(dead_code)] // not every test binary uses it
pub fn say_hello(
    peer: &mut Peer,
    topology: &str,
    stmgr: &str,
) -> heron_proto::stmgr::StrMgrHelloResponse {
    peer.send(&heron_proto::stmgr::StrMgrHelloRequest {
        topology_name: topology.into(),
        topology_id: TOPOLOGY_ID.into(),
        stmgr: stmgr.into(),
    });
    peer.recv_msg()
}
