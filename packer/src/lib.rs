//! Heron's packing: which instance of which component runs in which container, and with what
//! resources.
//!
//! The input is a logical [`Topology`](heron_proto::api::Topology) proto, the output a
//! [`PackingPlan`](heron_proto::system::PackingPlan) proto, the value the submitter stores in
//! `packingplans/<topology>` and every daemon reads back. Packing is pure and synchronous.
//!
//! * [`round_robin`]: Heron's default RoundRobinPacking (see [`round_robin`] for the rules).
//! * [`repack`]: a round-robin repack with new component parallelisms (`heron update`).
//! * [`PackingRequest`]: the packer's input read from the topology's config, adjustable before
//!   packing with [`pack`].
//! * [`instance_id`], [`stmgr_id`]: Heron's process ids.
//!
//! This crate depends only on `heron-proto` (and `thiserror`).

mod config;
mod error;
mod ids;
mod request;
mod resources;
mod round_robin;

pub use config::keys;
pub use error::PackingError;
pub use ids::{container_instance_ids, instance_id, stmgr_id};
pub use request::{ComponentRequest, PackingRequest};
pub use resources::{
    ResourceConfig, DEFAULT_CONTAINER_CPU_PADDING, DEFAULT_CONTAINER_DISK_PADDING,
    DEFAULT_CONTAINER_RAM_PADDING, DEFAULT_INSTANCE_CPU, DEFAULT_INSTANCE_DISK,
    DEFAULT_INSTANCE_RAM, GIB, MIB, MIN_RAM_PER_INSTANCE,
};
pub use round_robin::{pack, repack, round_robin};

#[cfg(test)]
mod tests;
