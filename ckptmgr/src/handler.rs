//! The checkpoint manager's request logic, synchronous and free of sockets: one request
//! packet in, one [`Reply`] out. The server ([`crate::server`]) only moves packets.

use crate::storage::{CheckpointKey, Storage};
use heron_proto::ckptmgr::{
    CleanStatefulCheckpointRequest, CleanStatefulCheckpointResponse, GetInstanceStateRequest,
    GetInstanceStateResponse, InstanceStateCheckpoint, RegisterStMgrRequest, RegisterStMgrResponse,
    RegisterTManagerRequest, RegisterTManagerResponse, SaveInstanceStateRequest,
    SaveInstanceStateResponse,
};
use heron_proto::system::{Instance, Status, StatusCode};
use heron_proto::{status, CodecError, Message, Name, Packet};
use tracing::{debug, info, warn};

/// What to do after a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Send this response (it carries the request's REQID).
    Respond(Packet),
    /// Close the connection: the packet was not a request the checkpoint manager handles,
    /// or it did not decode. The string says why.
    Close(String),
}

/// Answers the requests of one topology's stream managers and tmaster from a [`Storage`].
///
/// ```
/// use heron_ckptmgr::{Handler, LocalFsStorage, Reply};
/// use heron_proto::ckptmgr::{RegisterTManagerRequest, RegisterTManagerResponse};
/// use heron_proto::{is_ok, Packet, ReqId};
///
/// let dir = tempfile::tempdir().unwrap();
/// let handler = Handler::new("T", "T-1", LocalFsStorage::new(dir.path()));
/// let request = RegisterTManagerRequest { topology_name: "T".into(), topology_id: "T-1".into() };
/// let reqid = ReqId::random();
/// let Reply::Respond(packet) = handler.handle(&Packet::from_message(reqid, &request)) else {
///     panic!("closed")
/// };
/// assert_eq!(packet.reqid, reqid);
/// assert!(is_ok(&packet.decode::<RegisterTManagerResponse>().unwrap().status));
/// ```
#[derive(Debug)]
pub struct Handler<S> {
    topology_name: String,
    topology_id: String,
    storage: S,
}

impl<S: Storage> Handler<S> {
    /// A handler for topology `topology_name` (id `topology_id`) over `storage`.
    pub fn new(
        topology_name: impl Into<String>,
        topology_id: impl Into<String>,
        storage: S,
    ) -> Handler<S> {
        Handler {
            topology_name: topology_name.into(),
            topology_id: topology_id.into(),
            storage,
        }
    }

    /// The storage.
    pub fn storage(&self) -> &S {
        &self.storage
    }

    /// Answers one request packet. Storage I/O happens here, so this may block.
    pub fn handle(&self, packet: &Packet) -> Reply {
        match self.dispatch(packet) {
            Ok(Some(reply)) => Reply::Respond(reply),
            Ok(None) => Reply::Close(format!(
                "a {} is not a checkpoint manager request",
                packet.type_name()
            )),
            Err(e) => Reply::Close(e.to_string()),
        }
    }

    /// The response packet, `None` for a type not handled here.
    fn dispatch(&self, packet: &Packet) -> Result<Option<Packet>, CodecError> {
        let reqid = packet.reqid;
        let name = packet.type_name();
        Ok(Some(if name == SaveInstanceStateRequest::full_name() {
            Packet::from_message(reqid, &self.save(packet.decode()?))
        } else if name == GetInstanceStateRequest::full_name() {
            Packet::from_message(reqid, &self.get(packet.decode()?))
        } else if name == CleanStatefulCheckpointRequest::full_name() {
            Packet::from_message(reqid, &self.clean(packet.decode()?))
        } else if name == RegisterStMgrRequest::full_name() {
            let req: RegisterStMgrRequest = packet.decode()?;
            let status =
                self.check_ids("stmgr", &req.stmgr_id, &req.topology_name, &req.topology_id);
            Packet::from_message(reqid, &RegisterStMgrResponse { status })
        } else if name == RegisterTManagerRequest::full_name() {
            let req: RegisterTManagerRequest = packet.decode()?;
            let status = self.check_ids("tmaster", "", &req.topology_name, &req.topology_id);
            Packet::from_message(reqid, &RegisterTManagerResponse { status })
        } else {
            return Ok(None);
        }))
    }

    /// OK when a registering peer names this topology, NOTOK saying what differs otherwise.
    fn check_ids(&self, peer: &str, peer_id: &str, name: &str, id: &str) -> Status {
        if name == self.topology_name && id == self.topology_id {
            info!(peer, peer_id, "registered");
            return status(StatusCode::Ok, None);
        }
        let message = format!(
            "this checkpoint manager serves topology {} ({}), not {name} ({id})",
            self.topology_name, self.topology_id
        );
        warn!(peer, peer_id, "registration refused: {message}");
        status(StatusCode::Notok, message)
    }

    fn key(&self, instance: &Instance, checkpoint_id: &str) -> CheckpointKey {
        CheckpointKey::new(
            self.topology_name.as_str(),
            checkpoint_id,
            instance.info.component_name.as_str(),
            instance.info.task_id,
        )
    }

    fn save(&self, req: SaveInstanceStateRequest) -> SaveInstanceStateResponse {
        let checkpoint_id = req.checkpoint.checkpoint_id.clone();
        let key = self.key(&req.instance, &checkpoint_id);
        let status = match self.storage.store(&key, &req.checkpoint.encode_to_vec()) {
            Ok(()) => {
                debug!(%key, "saved");
                status(StatusCode::Ok, None)
            }
            Err(e) => {
                warn!(%key, error = %e, "cannot save instance state");
                status(StatusCode::Notok, format!("cannot save {key}: {e}"))
            }
        };
        SaveInstanceStateResponse {
            status,
            instance: req.instance,
            checkpoint_id,
        }
    }

    fn get(&self, req: GetInstanceStateRequest) -> GetInstanceStateResponse {
        let respond = |status, checkpoint| GetInstanceStateResponse {
            status,
            instance: req.instance.clone(),
            checkpoint_id: req.checkpoint_id.clone(),
            checkpoint,
        };
        if req.checkpoint_id.is_empty() {
            // Heron's "no checkpoint yet": a clean start with empty state.
            let empty = InstanceStateCheckpoint {
                checkpoint_id: String::new(),
                state: Some(Default::default()),
                state_location: None,
            };
            return respond(status(StatusCode::Ok, None), Some(empty));
        }
        let key = self.key(&req.instance, &req.checkpoint_id);
        match self.restore(&key) {
            Ok(checkpoint) => {
                debug!(%key, "restored");
                respond(status(StatusCode::Ok, None), Some(checkpoint))
            }
            Err(e) => {
                warn!(%key, error = %e, "cannot restore instance state");
                respond(status(StatusCode::Notok, e), None)
            }
        }
    }

    /// The stored checkpoint of `key`, checked to decode and to carry `key`'s id.
    fn restore(&self, key: &CheckpointKey) -> Result<InstanceStateCheckpoint, String> {
        let bytes = self.storage.restore(key).map_err(|e| e.to_string())?;
        let checkpoint = InstanceStateCheckpoint::decode(&bytes[..]).map_err(|e| {
            format!("corrupt saved state of {key}: not an InstanceStateCheckpoint: {e}")
        })?;
        if checkpoint.checkpoint_id != key.checkpoint_id {
            return Err(format!(
                "corrupt saved state of {key}: it holds checkpoint {:?}",
                checkpoint.checkpoint_id
            ));
        }
        Ok(checkpoint)
    }

    fn clean(&self, req: CleanStatefulCheckpointRequest) -> CleanStatefulCheckpointResponse {
        let all = req.clean_all_checkpoints.unwrap_or(false);
        let oldest = req.oldest_checkpoint_preserved.as_deref();
        match self.storage.dispose(&self.topology_name, oldest, all) {
            Ok(removed) => {
                info!(?oldest, all, removed = ?removed, "checkpoints cleaned");
                CleanStatefulCheckpointResponse {
                    status: status(StatusCode::Ok, None),
                    cleaned_checkpoint_ids: removed,
                }
            }
            Err(e) => {
                warn!(?oldest, all, error = %e, "cannot clean checkpoints");
                CleanStatefulCheckpointResponse {
                    status: status(StatusCode::Notok, e.to_string()),
                    cleaned_checkpoint_ids: Vec::new(),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
