use super::*;
use crate::{LocalFsStorage, StorageError};
use heron_proto::bytes::Bytes;
use heron_proto::is_ok;
use heron_proto::system::InstanceInfo;
use heron_proto::ReqId;
use std::sync::Mutex;

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

fn respond<M: Message + Name + Default, R: Message + Name>(
    h: &Handler<impl Storage>,
    req: &R,
) -> M {
    let reqid = ReqId::random();
    match h.handle(&Packet::from_message(reqid, req)) {
        Reply::Respond(p) => {
            assert_eq!(p.reqid, reqid, "the REQID is echoed");
            p.decode::<M>().unwrap()
        }
        Reply::Close(why) => panic!("closed: {why}"),
    }
}

fn save(ckpt: &str, component: &str, task: i32, state: &'static [u8]) -> SaveInstanceStateRequest {
    SaveInstanceStateRequest {
        instance: instance(component, task),
        checkpoint: InstanceStateCheckpoint {
            checkpoint_id: ckpt.into(),
            state: Some(Bytes::from_static(state)),
            state_location: None,
        },
    }
}

fn get(ckpt: &str, component: &str, task: i32) -> GetInstanceStateRequest {
    GetInstanceStateRequest {
        instance: instance(component, task),
        checkpoint_id: ckpt.into(),
    }
}

fn handler() -> (tempfile::TempDir, Handler<LocalFsStorage>) {
    let dir = tempfile::tempdir().unwrap();
    let h = Handler::new("T", "T-1", LocalFsStorage::new(dir.path()));
    (dir, h)
}

#[test]
fn saved_state_comes_back() {
    let (_dir, h) = handler();
    let r: SaveInstanceStateResponse = respond(&h, &save("0-1", "word", 3, b"count=7"));
    assert!(is_ok(&r.status), "{:?}", r.status);
    assert_eq!(r.checkpoint_id, "0-1");
    assert_eq!(r.instance, instance("word", 3));

    let r: GetInstanceStateResponse = respond(&h, &get("0-1", "word", 3));
    assert!(is_ok(&r.status), "{:?}", r.status);
    assert_eq!(
        (r.checkpoint_id.as_str(), r.instance),
        ("0-1", instance("word", 3))
    );
    let ckpt = r.checkpoint.unwrap();
    assert_eq!(ckpt.checkpoint_id, "0-1");
    assert_eq!(ckpt.state.as_deref(), Some(&b"count=7"[..]));
}

#[test]
fn missing_state_is_notok_and_an_empty_id_is_a_clean_start() {
    let (_dir, h) = handler();
    let r: GetInstanceStateResponse = respond(&h, &get("0-1", "word", 3));
    assert!(!is_ok(&r.status));
    assert!(r.status.message.unwrap().contains("no saved state"));
    assert_eq!(r.checkpoint, None);

    let r: GetInstanceStateResponse = respond(&h, &get("", "word", 3));
    assert!(is_ok(&r.status));
    let ckpt = r.checkpoint.unwrap();
    assert_eq!(ckpt.checkpoint_id, "");
    assert_eq!(ckpt.state.as_deref(), Some(&b""[..]));
}

#[test]
fn a_file_of_another_checkpoint_or_undecodable_bytes_are_corrupt() {
    let (dir, h) = handler();
    let _: SaveInstanceStateResponse = respond(&h, &save("0-1", "word", 3, b"x"));
    // A file copied into the wrong checkpoint directory.
    let from = dir.path().join("T/0-1/word/3");
    std::fs::create_dir_all(dir.path().join("T/0-2/word")).unwrap();
    std::fs::copy(&from, dir.path().join("T/0-2/word/3")).unwrap();
    let r: GetInstanceStateResponse = respond(&h, &get("0-2", "word", 3));
    assert!(!is_ok(&r.status));
    assert!(r
        .status
        .message
        .unwrap()
        .contains("holds checkpoint \"0-1\""));
    // A well-framed file that is not a checkpoint proto.
    let key = CheckpointKey::new("T", "0-3", "word", 3);
    h.storage().store(&key, &[0xff, 0xff, 0xff]).unwrap();
    let r: GetInstanceStateResponse = respond(&h, &get("0-3", "word", 3));
    assert!(r.status.message.unwrap().contains("corrupt"));
}

#[test]
fn bad_names_are_refused_not_written() {
    let (dir, h) = handler();
    let r: SaveInstanceStateResponse = respond(&h, &save("../../escape", "word", 3, b"x"));
    assert!(!is_ok(&r.status));
    assert!(r.status.message.unwrap().contains("invalid checkpoint id"));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn registrations_check_the_topology() {
    let (_dir, h) = handler();
    let tm = |name: &str, id: &str| RegisterTManagerRequest {
        topology_name: name.into(),
        topology_id: id.into(),
    };
    let r: RegisterTManagerResponse = respond(&h, &tm("T", "T-1"));
    assert!(is_ok(&r.status));
    let r: RegisterTManagerResponse = respond(&h, &tm("T", "T-2"));
    assert!(!is_ok(&r.status));
    assert!(r.status.message.unwrap().contains("not T (T-2)"));
    let sm = |name: &str| RegisterStMgrRequest {
        topology_name: name.into(),
        topology_id: "T-1".into(),
        stmgr_id: "stmgr-1".into(),
        physical_plan: Default::default(),
    };
    let r: RegisterStMgrResponse = respond(&h, &sm("T"));
    assert!(is_ok(&r.status));
    let r: RegisterStMgrResponse = respond(&h, &sm("U"));
    assert!(!is_ok(&r.status));
}

#[test]
fn clean_removes_older_checkpoints_or_all() {
    let (dir, h) = handler();
    for ckpt in ["0-1", "0-2", "0-3"] {
        let _: SaveInstanceStateResponse = respond(&h, &save(ckpt, "word", 1, b"s"));
    }
    let clean = |oldest: Option<&str>, all: Option<bool>| CleanStatefulCheckpointRequest {
        oldest_checkpoint_preserved: oldest.map(String::from),
        clean_all_checkpoints: all,
    };
    let r: CleanStatefulCheckpointResponse = respond(&h, &clean(Some("0-3"), None));
    assert!(is_ok(&r.status));
    assert_eq!(r.cleaned_checkpoint_ids, ["0-1", "0-2"]);
    let r: GetInstanceStateResponse = respond(&h, &get("0-3", "word", 1));
    assert!(is_ok(&r.status), "the preserved one stays");
    let r: CleanStatefulCheckpointResponse = respond(&h, &clean(None, Some(true)));
    assert_eq!(r.cleaned_checkpoint_ids, ["0-3"]);
    assert!(!dir.path().join("T").exists());
}

#[test]
fn storage_failures_are_notok() {
    struct Failing(Mutex<u32>);
    impl Storage for Failing {
        fn store(&self, k: &CheckpointKey, _: &[u8]) -> Result<(), StorageError> {
            *self.0.lock().unwrap() += 1;
            Err(StorageError::Io {
                what: "writing",
                path: k.to_string().into(),
                source: std::io::Error::other("disk full"),
            })
        }
        fn restore(&self, k: &CheckpointKey) -> Result<Vec<u8>, StorageError> {
            Err(StorageError::NotFound {
                path: k.to_string().into(),
            })
        }
        fn dispose(&self, _: &str, _: Option<&str>, _: bool) -> Result<Vec<String>, StorageError> {
            Err(StorageError::Io {
                what: "listing",
                path: "/x".into(),
                source: std::io::Error::other("gone"),
            })
        }
    }
    let h = Handler::new("T", "T-1", Failing(Mutex::new(0)));
    let r: SaveInstanceStateResponse = respond(&h, &save("0-1", "word", 1, b"s"));
    assert!(!is_ok(&r.status));
    assert!(r.status.message.unwrap().contains("disk full"));
    assert_eq!(
        (r.checkpoint_id.as_str(), r.instance),
        ("0-1", instance("word", 1))
    );
    let r: CleanStatefulCheckpointResponse = respond(
        &h,
        &CleanStatefulCheckpointRequest {
            oldest_checkpoint_preserved: None,
            clean_all_checkpoints: Some(true),
        },
    );
    assert!(!is_ok(&r.status));
    assert!(r.cleaned_checkpoint_ids.is_empty());
    assert_eq!(*h.storage().0.lock().unwrap(), 1);
}

#[test]
fn other_messages_and_bad_payloads_close_the_connection() {
    let (_dir, h) = handler();
    let other = Packet::from_message(ReqId::ZERO, &RegisterTManagerResponse::default());
    let Reply::Close(why) = h.handle(&other) else {
        panic!("answered a response")
    };
    assert!(why.contains("RegisterTManagerResponse"), "{why}");
    let garbage = Packet::new(
        SaveInstanceStateRequest::full_name(),
        ReqId::random(),
        Bytes::from_static(&[0x0a, 0xff, 0x01]),
    );
    assert!(matches!(h.handle(&garbage), Reply::Close(_)));
}
