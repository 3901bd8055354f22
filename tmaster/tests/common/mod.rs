//! Shared helpers of the tmaster integration tests: a state root with a topology and a
//! packing plan, a tmaster on a thread, and a blocking fake stream manager.
#![allow(dead_code)]

use bytes::BytesMut;
use heron_proto::api::Topology;
use heron_proto::codec::encode_message;
use heron_proto::system::{Instance, InstanceInfo, PackingPlan, StMgr, StMgrStats, StatusCode};
use heron_proto::tmanager::{
    StMgrHeartbeatRequest, StMgrHeartbeatResponse, StMgrRegisterRequest, StMgrRegisterResponse,
};
use heron_proto::{HeronCodec, Message, Name, Packet, ReqId};
use heron_statemgr::{LocalFsStateManager, StateDir, StateManagerExt};
use heron_testkit::plan::TopologyBuilder;
pub use heron_testkit::wait_for;
use heron_tmaster::{TmasterConfig, TmasterError, TmasterOptions};
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long any single wait may take before the test fails.
pub const TIMEOUT: Duration = Duration::from_secs(10);

pub const NAME: &str = "wc";
pub const ID: &str = "wc-0001";

pub fn init_logging() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "heron_tmaster=debug".into()),
        )
        .with_test_writer()
        .try_init();
}

pub use heron_testkit::free_port;

/// Spout `word` ×2, bolt `count` ×2, over `containers` containers.
pub fn topology(containers: u32) -> Topology {
    TopologyBuilder::new(ID, NAME)
        .spout("word", vec![])
        .bolt("count", vec![], vec![])
        .parallelism("word", 2)
        .parallelism("count", 2)
        .stmgrs(containers)
        .build()
}

/// A state root holding the topology and its round-robin packing plan.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub state: LocalFsStateManager,
    pub topology: Topology,
    pub plan: PackingPlan,
    pub config: TmasterConfig,
}

impl Fixture {
    pub fn new(containers: u32) -> Fixture {
        init_logging();
        let dir = tempfile::tempdir().unwrap();
        let state = LocalFsStateManager::new(dir.path().join("state"));
        let topology = topology(containers);
        let plan = heron_packer::round_robin(&topology, ID).unwrap();
        state
            .set_proto(StateDir::Topologies, NAME, &topology)
            .unwrap();
        state
            .set_proto(StateDir::PackingPlans, NAME, &plan)
            .unwrap();
        let config = TmasterConfig {
            topology_name: NAME.into(),
            topology_id: ID.into(),
            state_manager: heron_statemgr::StateManagerSpec::Local(state.root().to_path_buf()),
            host: "127.0.0.1".into(),
            server_port: free_port(),
            controller_port: free_port(),
            stats_port: free_port(),
            ckptmgr_port: None,
            auth: None,
            tls: None,
        };
        Fixture {
            dir,
            state,
            topology,
            plan,
            config,
        }
    }

    /// The instances container `c` reports, as its stmgr would.
    pub fn instances(&self, c: i32) -> Vec<Instance> {
        let cp = self
            .plan
            .container_plans
            .iter()
            .find(|p| p.id == c)
            .unwrap();
        cp.instance_plans
            .iter()
            .map(|i| Instance {
                instance_id: heron_packer::instance_id(c, &i.component_name, i.task_id),
                stmgr_id: heron_packer::stmgr_id(c),
                info: InstanceInfo {
                    task_id: i.task_id,
                    component_index: i.component_index,
                    component_name: i.component_name.clone(),
                    params: vec![],
                    remote_debugger_port: None,
                },
            })
            .collect()
    }

    pub fn register_request(&self, c: i32, data_port: i32) -> StMgrRegisterRequest {
        StMgrRegisterRequest {
            stmgr: StMgr {
                id: heron_packer::stmgr_id(c),
                host_name: "127.0.0.1".into(),
                data_port,
                local_endpoint: "/unused".into(),
                cwd: None,
                pid: None,
                shell_port: None,
                local_data_port: Some(data_port + 1),
            },
            instances: self.instances(c),
        }
    }

    /// Options with fast state watching.
    pub fn options(&self) -> TmasterOptions {
        TmasterOptions {
            state_watch_interval: Duration::from_millis(100),
            packing_plan_retry_interval: Duration::from_millis(50),
            packing_plan_attempts: 3,
            ..TmasterOptions::default()
        }
    }

    /// Runs the tmaster on a thread and waits for its location node.
    pub fn start(&self) -> JoinHandle<Result<(), TmasterError>> {
        let (config, options) = (self.config.clone(), self.options());
        let handle = std::thread::spawn(move || heron_tmaster::run_with_options(config, options));
        wait_for(TIMEOUT, "the location node", || {
            self.state.get_tmanager_location(NAME).unwrap().is_some()
        });
        handle
    }
}

/// Waits for the tmaster thread to return.
pub fn join(handle: JoinHandle<Result<(), TmasterError>>) -> Result<(), TmasterError> {
    wait_for(TIMEOUT, "the tmaster to stop", || handle.is_finished());
    handle.join().unwrap()
}

/// A blocking client speaking Heron's framing, as a stream manager would.
pub struct Client {
    stream: TcpStream,
    buf: BytesMut,
    codec: HeronCodec,
}

impl Client {
    pub fn connect(port: u16) -> Client {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        Client {
            stream,
            buf: BytesMut::new(),
            codec: HeronCodec::new(0),
        }
    }

    pub fn send<M: Message + Name>(&mut self, reqid: &ReqId, msg: &M) {
        let mut buf = BytesMut::new();
        encode_message(&mut buf, reqid, msg);
        self.send_raw(&buf);
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    /// Closes our sending side (the server sees end of stream).
    pub fn shutdown_write(&mut self) {
        self.stream.shutdown(Shutdown::Write).unwrap();
    }

    /// The next packet; fails the test on timeout or a closed connection.
    pub fn recv(&mut self) -> Packet {
        loop {
            if let Some(p) = self.codec.decode_packet(&mut self.buf).unwrap() {
                return p;
            }
            let mut chunk = [0u8; 8192];
            let n = self.stream.read(&mut chunk).expect("read a packet in time");
            assert!(n > 0, "connection closed while waiting for a packet");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// The next packet, decoded as an `M`.
    pub fn recv_as<M: Message + Name + Default>(&mut self) -> M {
        let p = self.recv();
        p.decode::<M>()
            .unwrap_or_else(|e| panic!("expected {}: {e}", M::full_name()))
    }

    /// Sends a request and returns the response, checking the echoed REQID.
    pub fn request<Req: Message + Name, Resp: Message + Name + Default>(
        &mut self,
        msg: &Req,
    ) -> Resp {
        let reqid = ReqId::random();
        self.send(&reqid, msg);
        let p = self.recv();
        assert_eq!(p.reqid, reqid, "the response echoes the request id");
        p.decode::<Resp>().unwrap()
    }

    pub fn register(&mut self, req: &StMgrRegisterRequest) -> StMgrRegisterResponse {
        self.request(req)
    }

    pub fn heartbeat(&mut self) -> StatusCode {
        let r: StMgrHeartbeatResponse = self.request(&StMgrHeartbeatRequest {
            heartbeat_time: 1,
            stats: StMgrStats {},
        });
        StatusCode::try_from(r.status.status).unwrap()
    }

    /// Asserts that the server closes the connection (without sending anything first).
    pub fn expect_closed(&mut self) {
        let mut chunk = [0u8; 64];
        match self.stream.read(&mut chunk) {
            Ok(0) => {}
            Ok(n) => panic!("expected a closed connection, got {n} bytes"),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
            Err(e) => panic!("expected a closed connection, got {e}"),
        }
    }
}

pub fn status_of(r: &StMgrRegisterResponse) -> StatusCode {
    StatusCode::try_from(r.status.status).unwrap()
}
