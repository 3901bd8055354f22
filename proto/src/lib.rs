//! Heron's wire protocol: the proto2 messages and the packet framing.
//!
//! This crate is the only place where Heron's protocol is defined; no runtime crate
//! re-implements it. It depends on nothing of heron-rs.
//!
//! * [`api`], [`system`], [`stmgr`], [`tmanager`], [`scheduler`], [`ckptmgr`]: the messages of
//!   Heron's `heron.proto.*` packages (TManager generation, Heron >= 0.20.3), with Heron's
//!   message names and field numbers. Every message implements [`prost::Name`], so its fully
//!   qualified type name (what goes on the wire) is `M::full_name()`.
//!   `bytes` fields are [`bytes::Bytes`], so decoding a frame slices it without copying.
//! * [`codec`]: Heron's packet framing as a `tokio_util` codec.
//! * [`tuple`]: the tuple wire format (tuple sets, data and control tuples) read and written
//!   in place on the hot path.
//!
//! Required proto2 fields are plain (non-`Option`) fields and prost always writes them, so
//! Heron's own decoders accept what we send.

pub mod codec;
#[doc(hidden)]
pub mod fuzz;
pub mod grouping;
pub mod keys;
pub mod short_utf8;
pub mod small_copy;
pub mod tuple;

#[allow(missing_docs, clippy::all, clippy::pedantic)]
mod generated {
    pub mod heron {
        pub mod proto {
            pub mod api {
                include!(concat!(env!("OUT_DIR"), "/heron.proto.api.rs"));
            }
            pub mod system {
                include!(concat!(env!("OUT_DIR"), "/heron.proto.system.rs"));
            }
            pub mod stmgr {
                include!(concat!(env!("OUT_DIR"), "/heron.proto.stmgr.rs"));
            }
            pub mod tmanager {
                include!(concat!(env!("OUT_DIR"), "/heron.proto.tmanager.rs"));
            }
            pub mod scheduler {
                include!(concat!(env!("OUT_DIR"), "/heron.proto.scheduler.rs"));
            }
            pub mod ckptmgr {
                include!(concat!(env!("OUT_DIR"), "/heron.proto.ckptmgr.rs"));
            }
        }
    }
}

pub use generated::heron::proto::{api, ckptmgr, scheduler, stmgr, system, tmanager};

pub use bytes;
pub use codec::{CodecError, HeronCodec, Packet, ReqId};
pub use prost;
pub use prost::{Message, Name};

/// Builds a [`system::Status`] with a code and an optional message.
pub fn status(code: system::StatusCode, message: impl Into<Option<String>>) -> system::Status {
    system::Status {
        status: code as i32,
        message: message.into(),
    }
}

/// `true` when `status` says OK.
pub fn is_ok(status: &system::Status) -> bool {
    status.status == system::StatusCode::Ok as i32
}

/// The value of `key` in the topology's config: the last entry for it wins, as in Heron.
///
/// ```
/// use heron_proto::api::{config::KeyValue, Config, Topology};
/// let kv = |k: &str, v: &str| KeyValue { key: k.into(), value: Some(v.into()), ..Default::default() };
/// let t = Topology {
///     topology_config: Some(Config { kvs: vec![kv("a", "1"), kv("a", "2")] }),
///     ..Default::default()
/// };
/// assert_eq!(heron_proto::config_value(&t, "a"), Some("2"));
/// assert_eq!(heron_proto::config_value(&t, "b"), None);
/// ```
pub fn config_value<'t>(topology: &'t api::Topology, key: &str) -> Option<&'t str> {
    topology
        .topology_config
        .as_ref()
        .and_then(|c| kv_value(c, key))
}

/// The value of `key` in `config` (a topology's or a component's): the last entry for it wins.
///
/// ```
/// use heron_proto::api::{config::KeyValue, Config};
/// let kv = |k: &str, v: &str| KeyValue { key: k.into(), value: Some(v.into()), ..Default::default() };
/// let c = Config { kvs: vec![kv("a", "1"), kv("a", "2")] };
/// assert_eq!(heron_proto::kv_value(&c, "a"), Some("2"));
/// ```
pub fn kv_value<'c>(config: &'c api::Config, key: &str) -> Option<&'c str> {
    config
        .kvs
        .iter()
        .filter(|kv| kv.key == key)
        .filter_map(|kv| kv.value.as_deref())
        .next_back()
}
