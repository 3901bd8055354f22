//! Reading the packer's keys out of Heron's `Config` protos.

use crate::PackingError;
use heron_proto::api::Config;
use std::collections::BTreeMap;

/// The config keys the packer reads (Heron's names).
pub mod keys {
    /// Topology config: number of containers (stream managers). Default 1.
    pub const STMGRS: &str = "topology.stmgrs";
    /// Component config: number of instances of the component. Default 1.
    pub const COMPONENT_PARALLELISM: &str = "topology.component.parallelism";
    /// Topology config: per-component instance RAM in bytes, `"comp:bytes,comp:bytes"`.
    pub const COMPONENT_RAMMAP: &str = "topology.component.rammap";
    /// Topology config: per-component instance CPU, `"comp:cpus,comp:cpus"`.
    pub const COMPONENT_CPUMAP: &str = "topology.component.cpumap";
    /// Topology config: per-component instance disk in bytes, `"comp:bytes,comp:bytes"`.
    pub const COMPONENT_DISKMAP: &str = "topology.component.diskmap";
    /// Topology config: explicit container RAM in bytes.
    pub const CONTAINER_RAM: &str = "topology.container.ram";
    /// Topology config: explicit container CPU.
    pub const CONTAINER_CPU: &str = "topology.container.cpu";
    /// Topology config: explicit container disk in bytes.
    pub const CONTAINER_DISK: &str = "topology.container.disk";
    /// Topology config: RAM added to every container, in bytes. Default 2 GiB.
    pub const CONTAINER_RAM_PADDING: &str = "topology.container.ram.padding";
    /// Topology config: CPU added to every container. Default 1.0.
    pub const CONTAINER_CPU_PADDING: &str = "topology.container.cpu.padding";
}

/// The string value of `key` in `config`; the last entry wins. Entries that carry only a
/// serialized (Java/Python) value are not readable here and count as absent.
pub(crate) fn get<'a>(config: Option<&'a Config>, key: &str) -> Option<&'a str> {
    config?
        .kvs
        .iter()
        .rev()
        .find(|kv| kv.key == key && kv.value.is_some())
        .and_then(|kv| kv.value.as_deref())
}

fn bad(key: &str, value: &str, reason: impl Into<String>) -> PackingError {
    PackingError::BadConfig {
        key: key.to_string(),
        value: value.to_string(),
        reason: reason.into(),
    }
}

/// An integer value (any sign; the caller checks the range).
pub(crate) fn get_i64(config: Option<&Config>, key: &str) -> Result<Option<i64>, PackingError> {
    get(config, key)
        .map(|v| {
            v.trim()
                .parse::<i64>()
                .map_err(|_| bad(key, v, "not an integer"))
        })
        .transpose()
}

/// A byte count: a non-negative integer.
pub(crate) fn get_bytes(config: Option<&Config>, key: &str) -> Result<Option<i64>, PackingError> {
    match get_i64(config, key)? {
        Some(b) if b < 0 => Err(bad(key, &b.to_string(), "a byte count cannot be negative")),
        other => Ok(other),
    }
}

/// A non-negative, finite CPU amount.
pub(crate) fn get_cpu(config: Option<&Config>, key: &str) -> Result<Option<f64>, PackingError> {
    get(config, key).map(|v| parse_cpu(key, v)).transpose()
}

fn parse_cpu(key: &str, v: &str) -> Result<f64, PackingError> {
    match v.trim().parse::<f64>() {
        Ok(c) if c.is_finite() && c >= 0.0 => Ok(c),
        _ => Err(bad(key, v, "not a non-negative number")),
    }
}

/// A `"comp:value,comp:value"` map. Blank entries are skipped; a component named twice keeps
/// its last value.
fn get_map<T>(
    config: Option<&Config>,
    key: &str,
    parse: impl Fn(&str) -> Result<T, PackingError>,
) -> Result<BTreeMap<String, T>, PackingError> {
    let mut map = BTreeMap::new();
    let Some(v) = get(config, key) else {
        return Ok(map);
    };
    for entry in v.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let Some((comp, value)) = entry.rsplit_once(':') else {
            return Err(bad(
                key,
                v,
                format!("entry {entry:?} is not component:value"),
            ));
        };
        let comp = comp.trim();
        if comp.is_empty() {
            return Err(bad(
                key,
                v,
                format!("entry {entry:?} has no component name"),
            ));
        }
        map.insert(comp.to_string(), parse(value.trim())?);
    }
    Ok(map)
}

/// A map of byte counts (`rammap`, `diskmap`).
pub(crate) fn get_bytes_map(
    config: Option<&Config>,
    key: &str,
) -> Result<BTreeMap<String, i64>, PackingError> {
    let whole = get(config, key).unwrap_or_default();
    get_map(config, key, |v| match v.parse::<i64>() {
        Ok(b) if b >= 0 => Ok(b),
        _ => Err(bad(key, whole, format!("{v:?} is not a byte count"))),
    })
}

/// A map of CPU amounts (`cpumap`).
pub(crate) fn get_cpu_map(
    config: Option<&Config>,
    key: &str,
) -> Result<BTreeMap<String, f64>, PackingError> {
    get_map(config, key, |v| parse_cpu(key, v))
}
