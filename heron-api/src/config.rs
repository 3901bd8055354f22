//! Topology and component configuration (Heron's `topology.*` keys).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use heron_proto::api;

mod check;

/// `ATMOST_ONCE`, `ATLEAST_ONCE` or `EFFECTIVELY_ONCE`.
pub const TOPOLOGY_RELIABILITY_MODE: &str = "topology.reliability.mode";
/// Legacy: `true` means `ATLEAST_ONCE`.
pub const TOPOLOGY_ACKING: &str = "topology.acking";
/// Seconds before an un-acked spout tuple fails (default 30).
pub const TOPOLOGY_MESSAGE_TIMEOUT_SECS: &str = "topology.message.timeout.secs";
/// Most un-acked tuples per spout task (default 100; only with acking).
pub const TOPOLOGY_MAX_SPOUT_PENDING: &str = "topology.max.spout.pending";
/// Whether spout tuples time out (default true).
pub const TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS: &str = "topology.enable.message.timeouts";
/// The number of stream managers, i.e. containers (default 1).
pub const TOPOLOGY_STMGRS: &str = "topology.stmgrs";
/// A component's parallelism (number of tasks).
pub const TOPOLOGY_COMPONENT_PARALLELISM: &str = "topology.component.parallelism";
/// Log every emit (default false).
pub const TOPOLOGY_DEBUG: &str = "topology.debug";
/// Milliseconds between tick tuples (unset: none).
pub const TOPOLOGY_TICK_TUPLE_FREQ_MS: &str = "topology.tick.tuple.freq.ms";
/// The tuple serializer class (Heron's; unused by heron-rs).
pub const TOPOLOGY_SERIALIZER_CLASSNAME: &str = "topology.serializer.classname";
/// Seconds between checkpoints in `EFFECTIVELY_ONCE` mode.
pub const TOPOLOGY_STATEFUL_CHECKPOINT_INTERVAL_SECONDS: &str =
    "topology.stateful.checkpoint.interval.seconds";
/// Start stateful topologies from a clean state (default false).
pub const TOPOLOGY_STATEFUL_START_CLEAN: &str = "topology.stateful.start.clean";
/// Drop tuples instead of applying back pressure (default false).
pub const TOPOLOGY_DROPTUPLES_UPON_BACKPRESSURE: &str = "topology.droptuples.upon.backpressure";
/// CPU requested per container.
pub const TOPOLOGY_CONTAINER_CPU_REQUESTED: &str = "topology.container.cpu";
/// RAM (bytes) requested per container.
pub const TOPOLOGY_CONTAINER_RAM_REQUESTED: &str = "topology.container.ram";
/// Disk (bytes) requested per container.
pub const TOPOLOGY_CONTAINER_DISK_REQUESTED: &str = "topology.container.disk";
/// Hint for the largest CPU of a container.
pub const TOPOLOGY_CONTAINER_MAX_CPU_HINT: &str = "topology.container.max.cpu.hint";
/// Hint for the largest RAM of a container.
pub const TOPOLOGY_CONTAINER_MAX_RAM_HINT: &str = "topology.container.max.ram.hint";
/// Hint for the largest disk of a container.
pub const TOPOLOGY_CONTAINER_MAX_DISK_HINT: &str = "topology.container.max.disk.hint";
/// Padding added to containers, in percent (default 10).
pub const TOPOLOGY_CONTAINER_PADDING_PERCENTAGE: &str = "topology.container.padding.percentage";
/// RAM padding per container.
pub const TOPOLOGY_CONTAINER_RAM_PADDING: &str = "topology.container.ram.padding";
/// CPU padding per container.
pub const TOPOLOGY_CONTAINER_CPU_PADDING: &str = "topology.container.cpu.padding";
/// Most instances per container (default 10).
pub const TOPOLOGY_CONTAINER_MAX_NUM_INSTANCES: &str = "topology.container.max.instances";
/// Per-component RAM: `comp1:bytes,comp2:bytes`.
pub const TOPOLOGY_COMPONENT_RAMMAP: &str = "topology.component.rammap";
/// Per-component CPU: `comp1:cpu,comp2:cpu`.
pub const TOPOLOGY_COMPONENT_CPUMAP: &str = "topology.component.cpumap";
/// Per-component disk: `comp1:bytes,comp2:bytes`.
pub const TOPOLOGY_COMPONENT_DISKMAP: &str = "topology.component.diskmap";
/// Stream manager RAM.
pub const TOPOLOGY_STMGR_RAM: &str = "topology.stmgr.ram";
/// Read rate limit of a component's output, bytes per second.
pub const TOPOLOGY_COMPONENT_OUTPUT_BPS: &str = "topology.component.output.bps";
/// Sorting strategy of the first-fit-decreasing packer (default `RAM_FIRST`).
pub const TOPOLOGY_PACKING_FFD_SORTING_STRATEGY: &str = "topology.packing.ffd.sorting.strategy";
/// Seconds to wait after deactivating during an update.
pub const TOPOLOGY_UPDATE_DEACTIVATE_WAIT_SECS: &str = "topology.update.deactivate.wait.secs";
/// Seconds to wait before reactivating during an update.
pub const TOPOLOGY_UPDATE_REACTIVATE_WAIT_SECS: &str = "topology.update.reactivate.wait.secs";
/// Environment variables for the topology's processes.
pub const TOPOLOGY_ENVIRONMENT: &str = "topology.environment";

/// heron-rs: how long a bolt may hold small output that carries no acks or fails before
/// sending it, in milliseconds (fractions allowed; 0 or unset: sent at the end of every input
/// batch, as Heron does). Flink's buffer timeout, Kafka's `linger.ms`; set per component for
/// bolts that emit in bursts (a window's results at each close).
pub const OUTPUT_LINGER_MS: &str = "heron-rs.output.linger.ms";
/// The longest [`OUTPUT_LINGER_MS`] taken: longer would look like a stuck topology.
pub const MAX_OUTPUT_LINGER: Duration = Duration::from_secs(1);

/// Heron's default message timeout, seconds.
pub const DEFAULT_MESSAGE_TIMEOUT_SECS: u64 = 30;
/// Heron's default max spout pending.
pub const DEFAULT_MAX_SPOUT_PENDING: u64 = 100;

/// The delivery guarantee of a topology (`topology.reliability.mode`).
///
/// ```
/// use heron_api::ReliabilityMode;
/// assert_eq!("ATLEAST_ONCE".parse::<ReliabilityMode>(), Ok(ReliabilityMode::AtLeastOnce));
/// assert_eq!(ReliabilityMode::AtMostOnce.as_str(), "ATMOST_ONCE");
/// assert_eq!(ReliabilityMode::default(), ReliabilityMode::AtMostOnce);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ReliabilityMode {
    /// No tracking; a spout's message ids are acked as soon as they are emitted (default).
    #[default]
    AtMostOnce,
    /// XOR acking; spouts get `ack`/`fail` per tuple tree and timeouts.
    AtLeastOnce,
    /// Checkpointed state; no per-tuple tracking.
    EffectivelyOnce,
}

impl ReliabilityMode {
    /// Heron's name: `ATMOST_ONCE`, `ATLEAST_ONCE` or `EFFECTIVELY_ONCE`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ReliabilityMode::AtMostOnce => "ATMOST_ONCE",
            ReliabilityMode::AtLeastOnce => "ATLEAST_ONCE",
            ReliabilityMode::EffectivelyOnce => "EFFECTIVELY_ONCE",
        }
    }

    /// `true` for `ATLEAST_ONCE`, the only mode with per-tuple acking.
    pub fn is_acking(&self) -> bool {
        *self == ReliabilityMode::AtLeastOnce
    }

    /// `true` for `EFFECTIVELY_ONCE`: state is checkpointed and restored, nothing is acked.
    ///
    /// ```
    /// use heron_api::ReliabilityMode;
    /// assert!(ReliabilityMode::EffectivelyOnce.is_effectively_once());
    /// assert!(!ReliabilityMode::EffectivelyOnce.is_acking());
    /// ```
    pub fn is_effectively_once(&self) -> bool {
        *self == ReliabilityMode::EffectivelyOnce
    }
}

impl fmt::Display for ReliabilityMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown reliability mode name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown reliability mode {0:?} (expected ATMOST_ONCE, ATLEAST_ONCE or EFFECTIVELY_ONCE)")]
pub struct ParseReliabilityModeError(pub String);

impl FromStr for ReliabilityMode {
    type Err = ParseReliabilityModeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_uppercase().as_str() {
            "ATMOST_ONCE" => Ok(ReliabilityMode::AtMostOnce),
            "ATLEAST_ONCE" => Ok(ReliabilityMode::AtLeastOnce),
            "EFFECTIVELY_ONCE" => Ok(ReliabilityMode::EffectivelyOnce),
            _ => Err(ParseReliabilityModeError(s.to_owned())),
        }
    }
}

/// A topology's or a component's configuration: string keys to string values, with typed
/// accessors for Heron's `topology.*` keys that apply Heron's defaults.
///
/// ```
/// use heron_api::{Config, ReliabilityMode};
/// let mut conf = Config::new();
/// conf.set_reliability_mode(ReliabilityMode::AtLeastOnce)
///     .set_message_timeout_secs(10)
///     .set("my.key", "v");
/// assert_eq!(conf.get("topology.reliability.mode"), Some("ATLEAST_ONCE"));
/// assert_eq!(conf.message_timeout_secs(), 10);
/// assert_eq!(conf.max_spout_pending(), 100); // Heron's default
/// assert_eq!(conf.get("my.key"), Some("v"));
/// let back = Config::from_proto(&conf.to_proto());
/// assert_eq!(back, conf);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    map: BTreeMap<String, String>,
}

impl Config {
    /// An empty configuration (every typed getter returns Heron's default).
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` to `value`.
    pub fn set(&mut self, key: impl Into<String>, value: impl ToString) -> &mut Self {
        self.map.insert(key.into(), value.to_string());
        self
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.map.get(key).map(String::as_str)
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        self.map.remove(key)
    }

    /// `true` when `key` is set.
    pub fn contains_key(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    /// `key` parsed as a boolean (`true`/`false`, any case).
    pub fn get_bool(&self, key: &str) -> Option<bool> {
        self.get(key)
            .and_then(|v| v.trim().to_ascii_lowercase().parse().ok())
    }

    /// `key` parsed as an unsigned integer.
    pub fn get_u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(|v| v.trim().parse().ok())
    }

    /// `key` parsed as a signed integer.
    pub fn get_i64(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(|v| v.trim().parse().ok())
    }

    /// `key` parsed as a float.
    pub fn get_f64(&self, key: &str) -> Option<f64> {
        self.get(key).and_then(|v| v.trim().parse().ok())
    }

    /// All entries, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.map.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// `true` when nothing is set.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Sets every entry of `other` here (its values win).
    pub fn merge(&mut self, other: &Config) -> &mut Self {
        for (k, v) in &other.map {
            self.map.insert(k.clone(), v.clone());
        }
        self
    }

    /// Sets `topology.reliability.mode`.
    pub fn set_reliability_mode(&mut self, mode: ReliabilityMode) -> &mut Self {
        self.set(TOPOLOGY_RELIABILITY_MODE, mode.as_str())
    }

    /// `topology.reliability.mode`; when unset, `topology.acking=true` means `ATLEAST_ONCE`;
    /// default `ATMOST_ONCE`. An unparsable value counts as unset.
    pub fn reliability_mode(&self) -> ReliabilityMode {
        if let Some(mode) = self
            .get(TOPOLOGY_RELIABILITY_MODE)
            .and_then(|v| v.parse().ok())
        {
            return mode;
        }
        if self.get_bool(TOPOLOGY_ACKING) == Some(true) {
            ReliabilityMode::AtLeastOnce
        } else {
            ReliabilityMode::AtMostOnce
        }
    }

    /// Sets `topology.message.timeout.secs`.
    pub fn set_message_timeout_secs(&mut self, secs: u64) -> &mut Self {
        self.set(TOPOLOGY_MESSAGE_TIMEOUT_SECS, secs)
    }

    /// `topology.message.timeout.secs` (default 30).
    pub fn message_timeout_secs(&self) -> u64 {
        self.get_u64(TOPOLOGY_MESSAGE_TIMEOUT_SECS)
            .unwrap_or(DEFAULT_MESSAGE_TIMEOUT_SECS)
    }

    /// Sets `topology.max.spout.pending`.
    pub fn set_max_spout_pending(&mut self, n: u64) -> &mut Self {
        self.set(TOPOLOGY_MAX_SPOUT_PENDING, n)
    }

    /// `topology.max.spout.pending` (default 100; only enforced with acking).
    pub fn max_spout_pending(&self) -> u64 {
        self.get_u64(TOPOLOGY_MAX_SPOUT_PENDING)
            .unwrap_or(DEFAULT_MAX_SPOUT_PENDING)
    }

    /// Sets `topology.enable.message.timeouts`.
    pub fn set_enable_message_timeouts(&mut self, enable: bool) -> &mut Self {
        self.set(TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS, enable)
    }

    /// `topology.enable.message.timeouts` (default true).
    pub fn enable_message_timeouts(&self) -> bool {
        self.get_bool(TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS)
            .unwrap_or(true)
    }

    /// Sets `topology.stmgrs`, the number of containers.
    pub fn set_num_stmgrs(&mut self, n: u32) -> &mut Self {
        self.set(TOPOLOGY_STMGRS, n)
    }

    /// `topology.stmgrs` (default 1).
    pub fn num_stmgrs(&self) -> u32 {
        self.get_u64(TOPOLOGY_STMGRS)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(1)
    }

    /// Sets `topology.component.parallelism`.
    pub fn set_component_parallelism(&mut self, n: u32) -> &mut Self {
        self.set(TOPOLOGY_COMPONENT_PARALLELISM, n)
    }

    /// `topology.component.parallelism` (default 1).
    pub fn component_parallelism(&self) -> u32 {
        self.get_u64(TOPOLOGY_COMPONENT_PARALLELISM)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(1)
    }

    /// Sets `topology.debug`.
    pub fn set_debug(&mut self, debug: bool) -> &mut Self {
        self.set(TOPOLOGY_DEBUG, debug)
    }

    /// `topology.debug` (default false).
    pub fn debug(&self) -> bool {
        self.get_bool(TOPOLOGY_DEBUG).unwrap_or(false)
    }

    /// Sets `topology.tick.tuple.freq.ms`.
    pub fn set_tick_tuple_freq_ms(&mut self, ms: u64) -> &mut Self {
        self.set(TOPOLOGY_TICK_TUPLE_FREQ_MS, ms)
    }

    /// `topology.tick.tuple.freq.ms` (unset: no tick tuples; 0 counts as unset).
    pub fn tick_tuple_freq_ms(&self) -> Option<u64> {
        self.get_u64(TOPOLOGY_TICK_TUPLE_FREQ_MS)
            .filter(|&ms| ms > 0)
    }

    /// Sets [`OUTPUT_LINGER_MS`].
    ///
    /// ```
    /// use heron_api::Config;
    /// use std::time::Duration;
    /// let mut c = Config::new();
    /// assert_eq!(c.output_linger(), Duration::ZERO);
    /// c.set_output_linger_ms(2.5);
    /// assert_eq!(c.output_linger(), Duration::from_micros(2500));
    /// ```
    pub fn set_output_linger_ms(&mut self, ms: f64) -> &mut Self {
        self.set(OUTPUT_LINGER_MS, ms)
    }

    /// [`OUTPUT_LINGER_MS`] as a duration, at most [`MAX_OUTPUT_LINGER`]; zero when unset,
    /// zero, negative or not a number.
    pub fn output_linger(&self) -> Duration {
        let ms = self
            .get_f64(OUTPUT_LINGER_MS)
            .filter(|ms| ms.is_finite() && *ms > 0.0)
            .unwrap_or(0.0);
        Duration::from_secs_f64(ms.min(MAX_OUTPUT_LINGER.as_secs_f64() * 1e3) / 1e3)
    }

    /// Sets `topology.container.cpu`.
    pub fn set_container_cpu_requested(&mut self, cpu: f64) -> &mut Self {
        self.set(TOPOLOGY_CONTAINER_CPU_REQUESTED, cpu)
    }

    /// Sets `topology.container.ram` (bytes).
    pub fn set_container_ram_requested(&mut self, bytes: u64) -> &mut Self {
        self.set(TOPOLOGY_CONTAINER_RAM_REQUESTED, bytes)
    }

    /// Sets `topology.container.disk` (bytes).
    pub fn set_container_disk_requested(&mut self, bytes: u64) -> &mut Self {
        self.set(TOPOLOGY_CONTAINER_DISK_REQUESTED, bytes)
    }

    /// Adds `component:bytes` to `topology.component.rammap`.
    ///
    /// ```
    /// # use heron_api::Config;
    /// let mut c = Config::new();
    /// c.set_component_ram("a", 1024).set_component_ram("b", 2048);
    /// assert_eq!(c.get("topology.component.rammap"), Some("a:1024,b:2048"));
    /// ```
    pub fn set_component_ram(&mut self, component: &str, bytes: u64) -> &mut Self {
        self.append_map(TOPOLOGY_COMPONENT_RAMMAP, component, &bytes.to_string())
    }

    /// Adds `component:cpu` to `topology.component.cpumap`.
    pub fn set_component_cpu(&mut self, component: &str, cpu: f64) -> &mut Self {
        self.append_map(TOPOLOGY_COMPONENT_CPUMAP, component, &cpu.to_string())
    }

    /// Adds `component:bytes` to `topology.component.diskmap`.
    pub fn set_component_disk(&mut self, component: &str, bytes: u64) -> &mut Self {
        self.append_map(TOPOLOGY_COMPONENT_DISKMAP, component, &bytes.to_string())
    }

    fn append_map(&mut self, key: &str, component: &str, value: &str) -> &mut Self {
        let mut entries: Vec<String> = self
            .get(key)
            .unwrap_or("")
            .split(',')
            .filter(|e| !e.is_empty() && e.split(':').next() != Some(component))
            .map(str::to_owned)
            .collect();
        entries.push(format!("{component}:{value}"));
        self.set(key, entries.join(","))
    }

    /// The proto form: every entry as a `STRING_VALUE` key-value.
    pub fn to_proto(&self) -> api::Config {
        api::Config {
            kvs: self
                .map
                .iter()
                .map(|(k, v)| api::config::KeyValue {
                    key: k.clone(),
                    value: Some(v.clone()),
                    serialized_value: None,
                    r#type: Some(api::ConfigValueType::StringValue as i32),
                })
                .collect(),
        }
    }

    /// Reads the string entries of a proto config (serialized values are skipped).
    pub fn from_proto(proto: &api::Config) -> Config {
        let mut conf = Config::new();
        for kv in &proto.kvs {
            let is_string = kv
                .r#type
                .is_none_or(|t| t == api::ConfigValueType::StringValue as i32);
            if let (true, Some(v)) = (is_string, &kv.value) {
                conf.map.insert(kv.key.clone(), v.clone());
            }
        }
        conf
    }
}

/// The `topology.*` keys as associated constants too, as in Heron's `Config.TOPOLOGY_*`:
/// `Config::TOPOLOGY_STMGRS` is [`TOPOLOGY_STMGRS`].
///
/// ```
/// use heron_api::Config;
/// assert_eq!(Config::TOPOLOGY_STMGRS, "topology.stmgrs");
/// assert_eq!(Config::TOPOLOGY_TICK_TUPLE_FREQ_MS, "topology.tick.tuple.freq.ms");
/// ```
impl Config {
    /// `topology.reliability.mode` (see [`config::TOPOLOGY_RELIABILITY_MODE`](crate::config::TOPOLOGY_RELIABILITY_MODE)).
    pub const TOPOLOGY_RELIABILITY_MODE: &'static str = TOPOLOGY_RELIABILITY_MODE;
    /// `topology.acking` (see [`config::TOPOLOGY_ACKING`](crate::config::TOPOLOGY_ACKING)).
    pub const TOPOLOGY_ACKING: &'static str = TOPOLOGY_ACKING;
    /// `topology.message.timeout.secs` (see [`config::TOPOLOGY_MESSAGE_TIMEOUT_SECS`](crate::config::TOPOLOGY_MESSAGE_TIMEOUT_SECS)).
    pub const TOPOLOGY_MESSAGE_TIMEOUT_SECS: &'static str = TOPOLOGY_MESSAGE_TIMEOUT_SECS;
    /// `topology.max.spout.pending` (see [`config::TOPOLOGY_MAX_SPOUT_PENDING`](crate::config::TOPOLOGY_MAX_SPOUT_PENDING)).
    pub const TOPOLOGY_MAX_SPOUT_PENDING: &'static str = TOPOLOGY_MAX_SPOUT_PENDING;
    /// `topology.enable.message.timeouts` (see [`config::TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS`](crate::config::TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS)).
    pub const TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS: &'static str = TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS;
    /// `topology.stmgrs` (see [`config::TOPOLOGY_STMGRS`](crate::config::TOPOLOGY_STMGRS)).
    pub const TOPOLOGY_STMGRS: &'static str = TOPOLOGY_STMGRS;
    /// `topology.component.parallelism` (see [`config::TOPOLOGY_COMPONENT_PARALLELISM`](crate::config::TOPOLOGY_COMPONENT_PARALLELISM)).
    pub const TOPOLOGY_COMPONENT_PARALLELISM: &'static str = TOPOLOGY_COMPONENT_PARALLELISM;
    /// `topology.debug` (see [`config::TOPOLOGY_DEBUG`](crate::config::TOPOLOGY_DEBUG)).
    pub const TOPOLOGY_DEBUG: &'static str = TOPOLOGY_DEBUG;
    /// `topology.tick.tuple.freq.ms` (see [`config::TOPOLOGY_TICK_TUPLE_FREQ_MS`](crate::config::TOPOLOGY_TICK_TUPLE_FREQ_MS)).
    pub const TOPOLOGY_TICK_TUPLE_FREQ_MS: &'static str = TOPOLOGY_TICK_TUPLE_FREQ_MS;
    /// `topology.serializer.classname` (see [`config::TOPOLOGY_SERIALIZER_CLASSNAME`](crate::config::TOPOLOGY_SERIALIZER_CLASSNAME)).
    pub const TOPOLOGY_SERIALIZER_CLASSNAME: &'static str = TOPOLOGY_SERIALIZER_CLASSNAME;
    /// `topology.stateful.checkpoint.interval.seconds` (see [`config::TOPOLOGY_STATEFUL_CHECKPOINT_INTERVAL_SECONDS`](crate::config::TOPOLOGY_STATEFUL_CHECKPOINT_INTERVAL_SECONDS)).
    pub const TOPOLOGY_STATEFUL_CHECKPOINT_INTERVAL_SECONDS: &'static str =
        TOPOLOGY_STATEFUL_CHECKPOINT_INTERVAL_SECONDS;
    /// `topology.stateful.start.clean` (see [`config::TOPOLOGY_STATEFUL_START_CLEAN`](crate::config::TOPOLOGY_STATEFUL_START_CLEAN)).
    pub const TOPOLOGY_STATEFUL_START_CLEAN: &'static str = TOPOLOGY_STATEFUL_START_CLEAN;
    /// `topology.droptuples.upon.backpressure` (see [`config::TOPOLOGY_DROPTUPLES_UPON_BACKPRESSURE`](crate::config::TOPOLOGY_DROPTUPLES_UPON_BACKPRESSURE)).
    pub const TOPOLOGY_DROPTUPLES_UPON_BACKPRESSURE: &'static str =
        TOPOLOGY_DROPTUPLES_UPON_BACKPRESSURE;
    /// `topology.container.cpu` (see [`config::TOPOLOGY_CONTAINER_CPU_REQUESTED`](crate::config::TOPOLOGY_CONTAINER_CPU_REQUESTED)).
    pub const TOPOLOGY_CONTAINER_CPU_REQUESTED: &'static str = TOPOLOGY_CONTAINER_CPU_REQUESTED;
    /// `topology.container.ram` (see [`config::TOPOLOGY_CONTAINER_RAM_REQUESTED`](crate::config::TOPOLOGY_CONTAINER_RAM_REQUESTED)).
    pub const TOPOLOGY_CONTAINER_RAM_REQUESTED: &'static str = TOPOLOGY_CONTAINER_RAM_REQUESTED;
    /// `topology.container.disk` (see [`config::TOPOLOGY_CONTAINER_DISK_REQUESTED`](crate::config::TOPOLOGY_CONTAINER_DISK_REQUESTED)).
    pub const TOPOLOGY_CONTAINER_DISK_REQUESTED: &'static str = TOPOLOGY_CONTAINER_DISK_REQUESTED;
    /// `topology.container.max.cpu.hint` (see [`config::TOPOLOGY_CONTAINER_MAX_CPU_HINT`](crate::config::TOPOLOGY_CONTAINER_MAX_CPU_HINT)).
    pub const TOPOLOGY_CONTAINER_MAX_CPU_HINT: &'static str = TOPOLOGY_CONTAINER_MAX_CPU_HINT;
    /// `topology.container.max.ram.hint` (see [`config::TOPOLOGY_CONTAINER_MAX_RAM_HINT`](crate::config::TOPOLOGY_CONTAINER_MAX_RAM_HINT)).
    pub const TOPOLOGY_CONTAINER_MAX_RAM_HINT: &'static str = TOPOLOGY_CONTAINER_MAX_RAM_HINT;
    /// `topology.container.max.disk.hint` (see [`config::TOPOLOGY_CONTAINER_MAX_DISK_HINT`](crate::config::TOPOLOGY_CONTAINER_MAX_DISK_HINT)).
    pub const TOPOLOGY_CONTAINER_MAX_DISK_HINT: &'static str = TOPOLOGY_CONTAINER_MAX_DISK_HINT;
    /// `topology.container.padding.percentage` (see [`config::TOPOLOGY_CONTAINER_PADDING_PERCENTAGE`](crate::config::TOPOLOGY_CONTAINER_PADDING_PERCENTAGE)).
    pub const TOPOLOGY_CONTAINER_PADDING_PERCENTAGE: &'static str =
        TOPOLOGY_CONTAINER_PADDING_PERCENTAGE;
    /// `topology.container.ram.padding` (see [`config::TOPOLOGY_CONTAINER_RAM_PADDING`](crate::config::TOPOLOGY_CONTAINER_RAM_PADDING)).
    pub const TOPOLOGY_CONTAINER_RAM_PADDING: &'static str = TOPOLOGY_CONTAINER_RAM_PADDING;
    /// `topology.container.cpu.padding` (see [`config::TOPOLOGY_CONTAINER_CPU_PADDING`](crate::config::TOPOLOGY_CONTAINER_CPU_PADDING)).
    pub const TOPOLOGY_CONTAINER_CPU_PADDING: &'static str = TOPOLOGY_CONTAINER_CPU_PADDING;
    /// `topology.container.max.instances` (see [`config::TOPOLOGY_CONTAINER_MAX_NUM_INSTANCES`](crate::config::TOPOLOGY_CONTAINER_MAX_NUM_INSTANCES)).
    pub const TOPOLOGY_CONTAINER_MAX_NUM_INSTANCES: &'static str =
        TOPOLOGY_CONTAINER_MAX_NUM_INSTANCES;
    /// `topology.component.rammap` (see [`config::TOPOLOGY_COMPONENT_RAMMAP`](crate::config::TOPOLOGY_COMPONENT_RAMMAP)).
    pub const TOPOLOGY_COMPONENT_RAMMAP: &'static str = TOPOLOGY_COMPONENT_RAMMAP;
    /// `topology.component.cpumap` (see [`config::TOPOLOGY_COMPONENT_CPUMAP`](crate::config::TOPOLOGY_COMPONENT_CPUMAP)).
    pub const TOPOLOGY_COMPONENT_CPUMAP: &'static str = TOPOLOGY_COMPONENT_CPUMAP;
    /// `topology.component.diskmap` (see [`config::TOPOLOGY_COMPONENT_DISKMAP`](crate::config::TOPOLOGY_COMPONENT_DISKMAP)).
    pub const TOPOLOGY_COMPONENT_DISKMAP: &'static str = TOPOLOGY_COMPONENT_DISKMAP;
    /// `topology.stmgr.ram` (see [`config::TOPOLOGY_STMGR_RAM`](crate::config::TOPOLOGY_STMGR_RAM)).
    pub const TOPOLOGY_STMGR_RAM: &'static str = TOPOLOGY_STMGR_RAM;
    /// `topology.component.output.bps` (see [`config::TOPOLOGY_COMPONENT_OUTPUT_BPS`](crate::config::TOPOLOGY_COMPONENT_OUTPUT_BPS)).
    pub const TOPOLOGY_COMPONENT_OUTPUT_BPS: &'static str = TOPOLOGY_COMPONENT_OUTPUT_BPS;
    /// `topology.packing.ffd.sorting.strategy` (see [`config::TOPOLOGY_PACKING_FFD_SORTING_STRATEGY`](crate::config::TOPOLOGY_PACKING_FFD_SORTING_STRATEGY)).
    pub const TOPOLOGY_PACKING_FFD_SORTING_STRATEGY: &'static str =
        TOPOLOGY_PACKING_FFD_SORTING_STRATEGY;
    /// `topology.update.deactivate.wait.secs` (see [`config::TOPOLOGY_UPDATE_DEACTIVATE_WAIT_SECS`](crate::config::TOPOLOGY_UPDATE_DEACTIVATE_WAIT_SECS)).
    pub const TOPOLOGY_UPDATE_DEACTIVATE_WAIT_SECS: &'static str =
        TOPOLOGY_UPDATE_DEACTIVATE_WAIT_SECS;
    /// `topology.update.reactivate.wait.secs` (see [`config::TOPOLOGY_UPDATE_REACTIVATE_WAIT_SECS`](crate::config::TOPOLOGY_UPDATE_REACTIVATE_WAIT_SECS)).
    pub const TOPOLOGY_UPDATE_REACTIVATE_WAIT_SECS: &'static str =
        TOPOLOGY_UPDATE_REACTIVATE_WAIT_SECS;
    /// `topology.environment` (see [`config::TOPOLOGY_ENVIRONMENT`](crate::config::TOPOLOGY_ENVIRONMENT)).
    pub const TOPOLOGY_ENVIRONMENT: &'static str = TOPOLOGY_ENVIRONMENT;
}

impl<K: Into<String>, V: ToString> FromIterator<(K, V)> for Config {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut c = Config::new();
        for (k, v) in iter {
            c.set(k, v);
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heron_defaults() {
        let c = Config::new();
        assert_eq!(c.reliability_mode(), ReliabilityMode::AtMostOnce);
        assert_eq!(c.message_timeout_secs(), 30);
        assert_eq!(c.max_spout_pending(), 100);
        assert!(c.enable_message_timeouts());
        assert_eq!(c.num_stmgrs(), 1);
        assert_eq!(c.component_parallelism(), 1);
        assert!(!c.debug());
        assert_eq!(c.tick_tuple_freq_ms(), None);
    }

    #[test]
    fn output_linger_in_milliseconds_capped() {
        let mut c = Config::new();
        c.set(OUTPUT_LINGER_MS, " 0.5 ");
        assert_eq!(c.output_linger(), Duration::from_micros(500));
        c.set(OUTPUT_LINGER_MS, "60000");
        assert_eq!(c.output_linger(), MAX_OUTPUT_LINGER);
        for bad in ["-1", "soon", "NaN", "inf", "0"] {
            c.set(OUTPUT_LINGER_MS, bad);
            assert_eq!(c.output_linger(), Duration::ZERO, "{bad}");
        }
    }

    #[test]
    fn legacy_acking_and_explicit_mode() {
        let mut c = Config::new();
        c.set(TOPOLOGY_ACKING, "true");
        assert_eq!(c.reliability_mode(), ReliabilityMode::AtLeastOnce);
        c.set_reliability_mode(ReliabilityMode::EffectivelyOnce);
        assert_eq!(c.reliability_mode(), ReliabilityMode::EffectivelyOnce);
        c.set(TOPOLOGY_RELIABILITY_MODE, "bogus");
        assert_eq!(c.reliability_mode(), ReliabilityMode::AtLeastOnce);
        assert!("bogus".parse::<ReliabilityMode>().is_err());
    }

    #[test]
    fn typed_setters_use_heron_keys() {
        let mut c = Config::new();
        c.set_max_spout_pending(7)
            .set_enable_message_timeouts(false)
            .set_num_stmgrs(3)
            .set_debug(true)
            .set_tick_tuple_freq_ms(500)
            .set_component_ram("a", 1)
            .set_component_ram("a", 2);
        assert_eq!(c.get("topology.max.spout.pending"), Some("7"));
        assert_eq!(c.get("topology.enable.message.timeouts"), Some("false"));
        assert_eq!(c.get("topology.stmgrs"), Some("3"));
        assert_eq!(c.get("topology.debug"), Some("true"));
        assert_eq!(c.tick_tuple_freq_ms(), Some(500));
        assert_eq!(c.get("topology.component.rammap"), Some("a:2"));
        assert!(!c.enable_message_timeouts());
        assert_eq!(c.num_stmgrs(), 3);
    }

    #[test]
    fn proto_round_trip_skips_serialized_values() {
        let c: Config = [("a", "1"), ("b", "x")].into_iter().collect();
        let mut p = c.to_proto();
        assert_eq!(p.kvs.len(), 2);
        assert_eq!(
            p.kvs[0].r#type,
            Some(api::ConfigValueType::StringValue as i32)
        );
        p.kvs.push(api::config::KeyValue {
            key: "java".into(),
            value: None,
            serialized_value: Some(vec![1, 2].into()),
            r#type: Some(api::ConfigValueType::JavaSerializedValue as i32),
        });
        assert_eq!(Config::from_proto(&p), c);
    }
}
