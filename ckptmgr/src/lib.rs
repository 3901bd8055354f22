//! The checkpoint manager (Heron's `ckptmgr`): one per container of an `EFFECTIVELY_ONCE`
//! topology, `ckptmgr-<container>`. It keeps the state each task saves at a checkpoint and
//! hands it back on restore.
//!
//! Its clients speak Heron packets (`heron.proto.ckptmgr`) to `127.0.0.1:<port>`:
//!
//! | request | from | response |
//! |---|---|---|
//! | `RegisterStMgrRequest` | stmgr | `RegisterStMgrResponse` (NOTOK for another topology) |
//! | `RegisterTManagerRequest` | tmaster | `RegisterTManagerResponse` (NOTOK likewise) |
//! | `SaveInstanceStateRequest` | stmgr | `SaveInstanceStateResponse` |
//! | `GetInstanceStateRequest` | stmgr | `GetInstanceStateResponse`: NOTOK if missing or corrupt; an empty checkpoint id is a clean start (OK, empty state) |
//! | `CleanStatefulCheckpointRequest` | tmaster | `CleanStatefulCheckpointResponse` with the removed ids |
//!
//! Layout: [`storage`] (the [`Storage`] trait and [`CheckpointKey`]), [`localfs`] (Heron's
//! `<root>/<topology>/<checkpoint_id>/<component>/<task_id>` layout, atomic durable writes),
//! [`frame`] (the checked frame around every stored file), [`handler`] (the synchronous
//! request logic: a packet in, a [`Reply`] out) and `server` (sockets only: [`Server`],
//! [`run`]). The stored bytes are the serialized `InstanceStateCheckpoint` of the request.
//!
//! ```
//! use heron_ckptmgr::{CkptmgrConfig, Server};
//! let dir = tempfile::tempdir().unwrap();
//! let server = Server::bind(CkptmgrConfig {
//!     topology_name: "T".into(),
//!     topology_id: "T-1".into(),
//!     ckptmgr_id: "ckptmgr-0".into(),
//!     port: 0,
//!     root: dir.path().into(),
//!     max_packet_size: heron_ckptmgr::MAX_PACKET_SIZE,
//!     auth: None,
//! })
//! .unwrap();
//! assert!(server.local_addr().port() > 0);
//! // `server.serve()` would now answer requests forever.
//! ```

mod config;
pub mod frame;
pub mod handler;
pub mod localfs;
mod server;
pub mod storage;

pub use config::{
    storage_root, CkptmgrConfig, CkptmgrError, DEFAULT_LOCALFS_ROOT, LOCALFS_CLASSNAME,
    LOCALFS_ROOT_PATH_KEY, MAX_PACKET_SIZE, STORAGE_CLASSNAME_KEY,
};
pub use handler::{Handler, Reply};
pub use localfs::LocalFsStorage;
pub use server::{run, Server};
pub use storage::{CheckpointKey, Storage, StorageError};
