//! A fake stream manager over real TCP, and small spouts and bolts for the tests.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use heron_api::HeronTopology;
use heron_instance::{InstanceConfig, InstanceError, RunOptions};
use heron_proto::api::TopologyState;
use heron_proto::codec::{encode_message, HeronCodec, Packet, ReqId};
use heron_proto::stmgr::{RegisterInstanceRequest, RegisterInstanceResponse};
use heron_proto::system::{HeronTupleSet, PhysicalPlan, StatusCode};
use heron_proto::{Message, Name};
use heron_testkit::plan::{self, PlanBuilder};
#[allow(unused_imports)] // not every test binary waits with it
pub use heron_testkit::{wait_for, Wait};

pub const TIMEOUT: Duration = Duration::from_secs(10);

pub struct FakeStmgr {
    pub stream: TcpStream,
    buf: BytesMut,
    codec: HeronCodec,
}

pub fn listen() -> (TcpListener, u16) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

impl FakeStmgr {
    pub fn accept(listener: &TcpListener) -> FakeStmgr {
        listener.set_nonblocking(true).unwrap();
        let accepted = Wait::new("the instance to connect")
            .timeout(TIMEOUT)
            .every(Duration::from_millis(5))
            .until(|| match listener.accept() {
                Ok((stream, _)) => Some(stream),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => None,
                Err(e) => panic!("accept: {e}"),
            });
        accepted.set_nonblocking(false).unwrap();
        FakeStmgr {
            stream: accepted,
            buf: BytesMut::new(),
            codec: HeronCodec::new(0),
        }
    }

    /// The next packet, or `None` if none arrives within `timeout`. Panics if the connection
    /// closes.
    pub fn try_read(&mut self, timeout: Duration) -> Option<Packet> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(p) = self.codec.decode_packet(&mut self.buf).unwrap() {
                return Some(p);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            self.stream
                .set_read_timeout(Some((deadline - now).max(Duration::from_millis(1))))
                .unwrap();
            let mut chunk = [0u8; 65536];
            match self.stream.read(&mut chunk) {
                Ok(0) => panic!("the instance closed the connection"),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => panic!("read: {e}"),
            }
        }
    }

    pub fn read(&mut self) -> Packet {
        self.try_read(TIMEOUT).expect("a packet within the timeout")
    }

    /// `true` when the instance closes the connection within `timeout`.
    pub fn wait_closed(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut chunk = [0u8; 65536];
        while Instant::now() < deadline {
            self.stream
                .set_read_timeout(Some(Duration::from_millis(50)))
                .unwrap();
            match self.stream.read(&mut chunk) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return true,
            }
        }
        false
    }

    pub fn send<M: Message + Name>(&mut self, msg: &M) {
        self.send_with(&ReqId::ZERO, msg);
    }

    pub fn send_with<M: Message + Name>(&mut self, reqid: &ReqId, msg: &M) {
        let mut out = BytesMut::new();
        encode_message(&mut out, reqid, msg);
        self.stream.write_all(&out).unwrap();
    }

    /// Reads the registration request and answers with `status` and `pplan`.
    pub fn register(
        &mut self,
        status: StatusCode,
        pplan: Option<PhysicalPlan>,
    ) -> RegisterInstanceRequest {
        let p = self.read();
        let req: RegisterInstanceRequest = p.decode().expect("a RegisterInstanceRequest");
        assert!(!p.reqid.is_zero(), "a request carries a REQID");
        let response = RegisterInstanceResponse {
            status: heron_proto::status(status, Some("test".to_string())),
            pplan,
        };
        self.send_with(&p.reqid, &response);
        req
    }

    /// Reads `HeronTupleSet`s until `done` says enough or the timeout passes.
    pub fn collect(
        &mut self,
        timeout: Duration,
        mut done: impl FnMut(&[HeronTupleSet]) -> bool,
    ) -> Vec<HeronTupleSet> {
        let deadline = Instant::now() + timeout;
        let mut sets = Vec::new();
        while !done(&sets) {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            if let Some(p) = self.try_read(deadline - now) {
                sets.push(
                    p.decode::<HeronTupleSet>()
                        .expect("instances send HeronTupleSets"),
                );
            }
        }
        sets
    }
}

pub fn data_count(sets: &[HeronTupleSet]) -> usize {
    sets.iter()
        .filter_map(|s| s.data.as_ref())
        .map(|d| d.tuples.len())
        .sum()
}

/// A plan of `topology` in `state` with one stream manager (`stmgr-1`) and the instances
/// `(task, component, component index)`.
pub fn pplan(
    topology: &HeronTopology,
    instances: &[(i32, &str, i32)],
    state: TopologyState,
) -> PhysicalPlan {
    let mut t = topology.to_proto();
    t.id = format!("{}-id", t.name);
    t.state = state as i32;
    let stmgr = PlanBuilder::new(t).stmgr("stmgr-1", 1);
    instances
        .iter()
        .fold(stmgr, |p, &(task, comp, index)| {
            p.with_instance(plan::instance("stmgr-1", comp, task, index))
        })
        .build()
}

pub fn instance_config(
    port: u16,
    comp: &str,
    task: i32,
    metrics: Option<PathBuf>,
) -> InstanceConfig {
    InstanceConfig {
        topology_name: "test".into(),
        topology_id: "test-id".into(),
        instance_id: format!("container_1_{comp}_{task}"),
        component_name: comp.into(),
        task_id: task,
        component_index: 0,
        stmgr_id: "stmgr-1".into(),
        stmgr_port: port,
        metrics_dir: metrics,
        max_packet_size: heron_instance::MAX_PACKET_SIZE,
        auth: None,
    }
}

pub fn fast_options() -> RunOptions {
    RunOptions {
        connect_timeout: Duration::from_secs(5),
        connect_retry_interval: Duration::from_millis(50),
        register_timeout: Duration::from_secs(5),
        metrics_interval: Duration::from_millis(50),
        ..RunOptions::default()
    }
}

/// Runs the instance on its own thread; the receiver gets its result.
pub fn spawn_instance(
    topology: HeronTopology,
    config: InstanceConfig,
    options: RunOptions,
) -> mpsc::Receiver<Result<(), InstanceError>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let r = heron_instance::run_with_options(config, &topology, options);
        let _ = tx.send(r);
    });
    rx
}

/// Shared record of what a component saw.
pub type Log = Arc<Mutex<Vec<String>>>;

pub fn log_contains(log: &Log, entry: &str) -> bool {
    log.lock().unwrap().iter().any(|e| e == entry)
}
