//! The real daemon over real TCP: Heron packets in, Heron packets out, bad input survived.

use heron_ckptmgr::{CkptmgrConfig, Server};
use heron_proto::bytes::{Bytes, BytesMut};
use heron_proto::ckptmgr::{
    CleanStatefulCheckpointRequest, CleanStatefulCheckpointResponse, GetInstanceStateRequest,
    GetInstanceStateResponse, InstanceStateCheckpoint, RegisterStMgrRequest, RegisterStMgrResponse,
    RegisterTManagerRequest, RegisterTManagerResponse, SaveInstanceStateRequest,
    SaveInstanceStateResponse,
};
use heron_proto::system::{Instance, InstanceInfo};
use heron_proto::{is_ok, HeronCodec, Message, Name, Packet, ReqId};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

/// Starts the daemon on a free port, serving `root`, on a background thread.
fn start(root: &Path) -> SocketAddr {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let server = Server::bind(CkptmgrConfig {
        topology_name: "T".into(),
        topology_id: "T-1".into(),
        ckptmgr_id: "ckptmgr-1".into(),
        port: 0,
        root: root.to_path_buf(),
        max_packet_size: heron_ckptmgr::MAX_PACKET_SIZE,
        auth: None,
    })
    .unwrap();
    let addr = server.local_addr();
    std::thread::spawn(move || server.serve().unwrap());
    addr
}

/// A blocking client speaking Heron packets.
struct Client {
    stream: TcpStream,
    buf: BytesMut,
    codec: HeronCodec,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        Client {
            stream,
            buf: BytesMut::new(),
            codec: HeronCodec::default(),
        }
    }

    /// The next packet, `None` when the server closed the connection.
    fn read_packet(&mut self) -> Option<Packet> {
        loop {
            if let Some(p) = self.codec.decode_packet(&mut self.buf).unwrap() {
                return Some(p);
            }
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk) {
                Ok(0) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return None,
                Err(e) => panic!("read: {e}"),
            }
        }
    }

    fn request<R: Message + Name, M: Message + Name + Default>(&mut self, req: &R) -> M {
        let reqid = ReqId::random();
        let mut out = BytesMut::new();
        Packet::from_message(reqid, req).encode_into(&mut out);
        self.stream.write_all(&out).unwrap();
        let p = self.read_packet().expect("a response");
        assert_eq!(p.reqid, reqid, "the response echoes the REQID");
        p.decode().unwrap()
    }

    /// `true` once the server has closed this connection.
    fn closed_by_server(&mut self) -> bool {
        self.read_packet().is_none()
    }
}

fn instance(component: &str, task: i32) -> Instance {
    Instance {
        instance_id: format!("container_1_{component}_{task}"),
        stmgr_id: "stmgr-1".into(),
        info: InstanceInfo {
            task_id: task,
            component_index: 0,
            component_name: component.into(),
            ..Default::default()
        },
    }
}

fn save(ckpt: &str, task: i32, state: Vec<u8>) -> SaveInstanceStateRequest {
    SaveInstanceStateRequest {
        instance: instance("word", task),
        checkpoint: InstanceStateCheckpoint {
            checkpoint_id: ckpt.into(),
            state: Some(Bytes::from(state)),
            state_location: None,
        },
    }
}

fn get(ckpt: &str, task: i32) -> GetInstanceStateRequest {
    GetInstanceStateRequest {
        instance: instance("word", task),
        checkpoint_id: ckpt.into(),
    }
}

#[test]
fn save_get_corrupt_clean_over_tcp() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path());
    let mut tm = Client::connect(addr);
    let mut sm = Client::connect(addr);

    let r: RegisterTManagerResponse = tm.request(&RegisterTManagerRequest {
        topology_name: "T".into(),
        topology_id: "T-1".into(),
    });
    assert!(is_ok(&r.status));
    let r: RegisterStMgrResponse = sm.request(&RegisterStMgrRequest {
        topology_name: "T".into(),
        topology_id: "T-0".into(),
        stmgr_id: "stmgr-1".into(),
        physical_plan: Default::default(),
    });
    assert!(!is_ok(&r.status), "another topology id is refused");
    let r: RegisterStMgrResponse = sm.request(&RegisterStMgrRequest {
        topology_name: "T".into(),
        topology_id: "T-1".into(),
        stmgr_id: "stmgr-1".into(),
        physical_plan: Default::default(),
    });
    assert!(is_ok(&r.status));

    // Save two checkpoints of two tasks; one state is bigger than a socket buffer.
    let big: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    for ckpt in ["0-100", "0-101"] {
        let r: SaveInstanceStateResponse = sm.request(&save(ckpt, 1, big.clone()));
        assert!(is_ok(&r.status), "{:?}", r.status);
        assert_eq!(
            (r.checkpoint_id.as_str(), r.instance.info.task_id),
            (ckpt, 1)
        );
        let r: SaveInstanceStateResponse = sm.request(&save(ckpt, 2, ckpt.as_bytes().to_vec()));
        assert!(is_ok(&r.status));
    }
    assert!(dir.path().join("T/0-101/word/2").is_file());

    let r: GetInstanceStateResponse = sm.request(&get("0-101", 1));
    assert!(is_ok(&r.status));
    assert_eq!(
        r.checkpoint.unwrap().state.unwrap(),
        Bytes::from(big.clone())
    );
    let r: GetInstanceStateResponse = sm.request(&get("0-100", 2));
    assert_eq!(r.checkpoint.unwrap().state.as_deref(), Some(&b"0-100"[..]));

    let r: GetInstanceStateResponse = sm.request(&get("0-999", 1));
    assert!(!is_ok(&r.status), "missing");
    assert!(r.checkpoint.is_none());

    let r: GetInstanceStateResponse = sm.request(&get("", 1));
    assert!(is_ok(&r.status), "a clean start");
    assert_eq!(r.checkpoint.unwrap().state.as_deref(), Some(&b""[..]));

    // Damage a file on disk: truncated, then one flipped bit.
    let file = dir.path().join("T/0-101/word/1");
    let good = std::fs::read(&file).unwrap();
    std::fs::write(&file, &good[..good.len() / 2]).unwrap();
    let r: GetInstanceStateResponse = sm.request(&get("0-101", 1));
    assert!(!is_ok(&r.status), "truncated");
    assert!(r.status.message.unwrap().contains("corrupt"));
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x10;
    std::fs::write(&file, &flipped).unwrap();
    let r: GetInstanceStateResponse = sm.request(&get("0-101", 1));
    assert!(!is_ok(&r.status), "bit flip");
    assert!(r.status.message.unwrap().contains("checksum"));

    // The tmaster cleans what is older than the oldest kept checkpoint, then everything.
    let r: CleanStatefulCheckpointResponse = tm.request(&CleanStatefulCheckpointRequest {
        oldest_checkpoint_preserved: Some("0-101".into()),
        clean_all_checkpoints: Some(false),
    });
    assert!(is_ok(&r.status));
    assert_eq!(r.cleaned_checkpoint_ids, ["0-100"]);
    assert!(!dir.path().join("T/0-100").exists());
    let r: GetInstanceStateResponse = sm.request(&get("0-101", 2));
    assert!(is_ok(&r.status), "the preserved checkpoint stays");
    let r: CleanStatefulCheckpointResponse = tm.request(&CleanStatefulCheckpointRequest {
        oldest_checkpoint_preserved: None,
        clean_all_checkpoints: Some(true),
    });
    assert_eq!(r.cleaned_checkpoint_ids, ["0-101"]);
    assert!(!dir.path().join("T").exists());
}

#[test]
fn bad_input_closes_only_its_connection() {
    let dir = tempfile::tempdir().unwrap();
    let addr = start(dir.path());
    let mut bystander = Client::connect(addr);
    let _: GetInstanceStateResponse = bystander.request(&get("", 1));

    // Garbage bytes: a size, then a type-name length that does not fit.
    let mut garbage = Client::connect(addr);
    garbage
        .stream
        .write_all(b"\x00\x00\x00\x30\x7f\xff\xff\xffnot a packet at all, just bytes....")
        .unwrap();
    assert!(garbage.closed_by_server());

    // A well-framed packet whose payload does not decode as its type.
    let mut undecodable = Client::connect(addr);
    let mut out = BytesMut::new();
    heron_proto::codec::encode_raw(
        &mut out,
        &SaveInstanceStateRequest::full_name(),
        &ReqId::random(),
        &[0x0a, 0xff, 0xff],
    );
    undecodable.stream.write_all(&out).unwrap();
    assert!(undecodable.closed_by_server());

    // A message the checkpoint manager does not handle.
    let mut confused = Client::connect(addr);
    let mut out = BytesMut::new();
    Packet::from_message(ReqId::random(), &RegisterStMgrResponse::default()).encode_into(&mut out);
    confused.stream.write_all(&out).unwrap();
    assert!(confused.closed_by_server());

    // Oversized: announced beyond the 10 MiB limit.
    let mut huge = Client::connect(addr);
    huge.stream.write_all(&u32::MAX.to_be_bytes()).unwrap();
    assert!(huge.closed_by_server());

    // A peer that disconnects in the middle of a packet.
    let mut half = Client::connect(addr);
    half.stream.write_all(&[0, 0, 1, 0, 0, 0]).unwrap();
    drop(half);

    // The daemon goes on: the old connection and a new one both work.
    let r: SaveInstanceStateResponse = bystander.request(&save("0-1", 1, b"s".to_vec()));
    assert!(is_ok(&r.status));
    let mut fresh = Client::connect(addr);
    let r: GetInstanceStateResponse = fresh.request(&get("0-1", 1));
    assert!(is_ok(&r.status));
    assert_eq!(r.checkpoint.unwrap().state.as_deref(), Some(&b"s"[..]));
}

#[test]
fn a_busy_port_is_a_bind_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let err = heron_ckptmgr::run(CkptmgrConfig {
        topology_name: "T".into(),
        topology_id: "T-1".into(),
        ckptmgr_id: "ckptmgr-1".into(),
        port: taken.local_addr().unwrap().port(),
        root: "/nonexistent".into(),
        max_packet_size: heron_ckptmgr::MAX_PACKET_SIZE,
        auth: None,
    })
    .unwrap_err();
    assert!(err.to_string().contains("cannot listen"), "{err}");
}
