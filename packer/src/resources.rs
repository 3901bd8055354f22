//! Resource defaults and the resource part of a packing request.

use crate::config::{self, keys};
use crate::PackingError;
use heron_proto::api::Config;
use std::collections::BTreeMap;

/// One mebibyte. Heron's "MB" and "GB" in sizes are binary (ByteAmount).
pub const MIB: i64 = 1024 * 1024;
/// One gibibyte.
pub const GIB: i64 = 1024 * MIB;
/// RAM of an instance whose component has no `rammap` entry.
pub const DEFAULT_INSTANCE_RAM: i64 = GIB;
/// CPU of an instance whose component has no `cpumap` entry.
pub const DEFAULT_INSTANCE_CPU: f64 = 1.0;
/// Disk of an instance whose component has no `diskmap` entry.
pub const DEFAULT_INSTANCE_DISK: i64 = GIB;
/// RAM added to every container for its stream manager and other daemons.
pub const DEFAULT_CONTAINER_RAM_PADDING: i64 = 2 * GIB;
/// CPU added to every container.
pub const DEFAULT_CONTAINER_CPU_PADDING: f64 = 1.0;
/// Disk added to every container.
pub const DEFAULT_CONTAINER_DISK_PADDING: i64 = 12 * GIB;
/// The least RAM an instance may get.
pub const MIN_RAM_PER_INSTANCE: i64 = 16 * MIB;

/// Resource settings of a topology: per-component overrides, container padding and explicit
/// container sizes. RAM and disk are in bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceConfig {
    /// Per-component instance RAM (`topology.component.rammap`).
    pub ram_map: BTreeMap<String, i64>,
    /// Per-component instance CPU (`topology.component.cpumap`).
    pub cpu_map: BTreeMap<String, f64>,
    /// Per-component instance disk (`topology.component.diskmap`).
    pub disk_map: BTreeMap<String, i64>,
    /// Explicit container RAM (`topology.container.ram`).
    pub container_ram: Option<i64>,
    /// Explicit container CPU (`topology.container.cpu`).
    pub container_cpu: Option<f64>,
    /// Explicit container disk (`topology.container.disk`).
    pub container_disk: Option<i64>,
    /// RAM padding per container (`topology.container.ram.padding`).
    pub ram_padding: i64,
    /// CPU padding per container (`topology.container.cpu.padding`).
    pub cpu_padding: f64,
    /// Disk padding per container (no key in Heron; 12 GiB).
    pub disk_padding: i64,
}

impl Default for ResourceConfig {
    fn default() -> Self {
        ResourceConfig {
            ram_map: BTreeMap::new(),
            cpu_map: BTreeMap::new(),
            disk_map: BTreeMap::new(),
            container_ram: None,
            container_cpu: None,
            container_disk: None,
            ram_padding: DEFAULT_CONTAINER_RAM_PADDING,
            cpu_padding: DEFAULT_CONTAINER_CPU_PADDING,
            disk_padding: DEFAULT_CONTAINER_DISK_PADDING,
        }
    }
}

impl ResourceConfig {
    /// Reads the resource keys of a topology config; absent keys keep their defaults.
    pub fn from_config(topology_config: Option<&Config>) -> Result<ResourceConfig, PackingError> {
        let c = topology_config;
        let d = ResourceConfig::default();
        Ok(ResourceConfig {
            ram_map: config::get_bytes_map(c, keys::COMPONENT_RAMMAP)?,
            cpu_map: config::get_cpu_map(c, keys::COMPONENT_CPUMAP)?,
            disk_map: config::get_bytes_map(c, keys::COMPONENT_DISKMAP)?,
            container_ram: config::get_bytes(c, keys::CONTAINER_RAM)?,
            container_cpu: config::get_cpu(c, keys::CONTAINER_CPU)?,
            container_disk: config::get_bytes(c, keys::CONTAINER_DISK)?,
            ram_padding: config::get_bytes(c, keys::CONTAINER_RAM_PADDING)?
                .unwrap_or(d.ram_padding),
            cpu_padding: config::get_cpu(c, keys::CONTAINER_CPU_PADDING)?.unwrap_or(d.cpu_padding),
            disk_padding: d.disk_padding,
        })
    }
}
