//! Publishes this container's metrics to the tmaster, as Heron's per-container metrics
//! manager does: every [`PUBLISH_INTERVAL`] one `PublishMetrics` message on a connection to
//! the tmaster's server port (location read from the state manager; a new connection when the
//! location changes or a write fails).
//!
//! What it publishes, as deltas since the previous message (the tmaster adds them up):
//! * for each instance of the container, from the counters file it writes about once a second
//!   (`metrics/<instance id>` in the working directory, docs/internals.md): `__emit-count`,
//!   `__execute-count`, `__ack-count`, `__fail-count` per stream (falling back to the totals on
//!   stream `default` for files without per-stream lines), and the latencies
//!   `__complete-latency`, `__execute-latency`, `__process-latency` per stream: the file has
//!   their cumulative sums and counts (`sum:<name> NS`, `count:<name> N`), and what is sent is
//!   the average over the interval, delta sum / delta count, in ns (nothing when no value came
//!   in the interval), and for bolts the time spent executing, delta sum, as
//!   `__execute-time-ns/<stream>`;
//! * for the stream manager itself (component `__stmgr__`, instance = stmgr id), from the
//!   samples the event loop hands over ([`StmgrSample`]): tuples from and to instances, to
//!   stream managers, tuple sets from stream managers, lost tuples, bytes from and to
//!   instances and stream managers (`__server/__bytes_{from,to}_{workers,stmgrs}`), the time
//!   its spouts spent throttled by back pressure (`__server/__time_spent_back_pressure_throttled`),
//!   the time it initiated back pressure (`__server/__time_spent_back_pressure_initiated`) and
//!   per local instance the time that instance's connection was over the high watermark, i.e.
//!   the instance caused back pressure (`__time_spent_back_pressure_by_compid/<instance id>`),
//!   all in ms.
//!
//! * for each instance, its process's CPU time (`__cpu-time-ms`, as a delta) and its gauges
//!   (`gauge:<metric>` lines: `__memory-rss-kb`, `__restarts`, `__uptime-secs`) as they are;
//!
//! * the errors its instances' user code reported (`<instance id>.exceptions` next to the
//!   counters files) as `TmanagerExceptionLog`s (the tmaster folds repeats).
//!
//! It runs on its own thread with blocking I/O, off the event loop.

use bytes::BytesMut;
use heron_proto::codec::encode_message;
use heron_proto::tmanager::{MetricDatum, PublishMetrics, TManagerLocation, TmanagerExceptionLog};
use heron_proto::ReqId;
use heron_statemgr::{StateManager, StateManagerExt, StateManagerSpec};
use std::collections::HashMap;
use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tracing::{debug, info, warn};

/// How often metrics go to the tmaster.
pub const PUBLISH_INTERVAL: Duration = Duration::from_secs(1);

/// The stream manager's own cumulative counters, sampled by the event loop.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StmgrSample {
    /// Data tuples received from local instances.
    pub tuples_from_instances: u64,
    /// Tuples written to local instances.
    pub tuples_to_instances: u64,
    /// Tuples written to other stream managers.
    pub tuples_to_stmgrs: u64,
    /// Tuple sets received from other stream managers.
    pub sets_from_stmgrs: u64,
    /// Tuples lost (no consumer connected, too large, or before the plan).
    pub lost_tuples: u64,
    /// Bytes (whole packets) read from local instances.
    pub bytes_from_instances: u64,
    /// Bytes written to local instances.
    pub bytes_to_instances: u64,
    /// Bytes read from other stream managers.
    pub bytes_from_stmgrs: u64,
    /// Bytes written to other stream managers.
    pub bytes_to_stmgrs: u64,
    /// Time spent in back pressure.
    pub back_pressure: BackPressureMs,
    /// `EFFECTIVELY_ONCE`: data tuples dropped during restores (Heron's
    /// `__dropped_during_restore`), instance states saved and stored, restores, alignments.
    pub stateful: crate::core::StatefulCounters,
}

/// Cumulative milliseconds of back pressure.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackPressureMs {
    /// Local spouts were not read.
    pub throttled: u64,
    /// This stream manager announced back pressure (one of its connections was slow).
    pub initiated: u64,
    /// Per local instance: its connection was slow (it caused back pressure).
    pub by_instance: Vec<(String, u64)>,
}

/// The stream manager's metric of time spent with its spouts throttled, in ms.
pub const BACK_PRESSURE_METRIC: &str = "__server/__time_spent_back_pressure_throttled";
/// Time this stream manager initiated back pressure, in ms.
pub const BACK_PRESSURE_INITIATED: &str = "__server/__time_spent_back_pressure_initiated";
/// Prefix of the per-instance time spent causing back pressure, in ms (+ instance id).
pub const BACK_PRESSURE_BY_COMPID: &str = "__time_spent_back_pressure_by_compid/";

/// The back-pressure clocks of a stream manager.
#[derive(Debug)]
pub struct BackPressureTimes {
    throttled: TimeSpent,
    initiated: TimeSpent,
    by_instance: Vec<(String, TimeSpent)>,
}

impl BackPressureTimes {
    /// Clocks for the container's `instances`, starting at `now`.
    pub fn new(instances: &[String], now: std::time::Instant) -> BackPressureTimes {
        BackPressureTimes {
            throttled: TimeSpent::new(now),
            initiated: TimeSpent::new(now),
            by_instance: instances
                .iter()
                .map(|i| (i.clone(), TimeSpent::new(now)))
                .collect(),
        }
    }

    /// Samples at `now`: whether spouts are throttled, whether this stream manager initiates
    /// back pressure, and which local instances are slow.
    pub fn sample(
        &mut self,
        now: std::time::Instant,
        throttled: bool,
        initiated: bool,
        slow: &[&str],
    ) -> BackPressureMs {
        BackPressureMs {
            throttled: self.throttled.sample(now, throttled),
            initiated: self.initiated.sample(now, initiated),
            by_instance: self
                .by_instance
                .iter_mut()
                .map(|(id, t)| {
                    let ms = t.sample(now, slow.contains(&id.as_str()));
                    (id.clone(), ms)
                })
                .collect(),
        }
    }
}

/// Adds up the time during which a condition held, from samples.
#[derive(Debug)]
pub struct TimeSpent {
    last: std::time::Instant,
    total: Duration,
}

impl TimeSpent {
    /// Starts counting at `now`.
    pub fn new(now: std::time::Instant) -> TimeSpent {
        TimeSpent {
            last: now,
            total: Duration::ZERO,
        }
    }

    /// Samples the condition at `now`: the time since the last sample counts if it holds.
    /// Returns the total in ms.
    pub fn sample(&mut self, now: std::time::Instant, holds: bool) -> u64 {
        if holds {
            self.total += now.saturating_duration_since(self.last);
        }
        self.last = now;
        self.total.as_millis() as u64
    }
}

/// Where the event loop leaves its latest sample.
pub type SampleSlot = Arc<Mutex<StmgrSample>>;

/// What the publisher needs to know.
#[derive(Clone, Debug)]
pub struct PublisherConfig {
    /// The topology.
    pub topology_name: String,
    /// `stmgr-<container>`.
    pub stmgr_id: String,
    /// The container's instances.
    pub instance_ids: Vec<String>,
    /// Where the instances write their counters files.
    pub counters_dir: PathBuf,
    /// The state manager holding `tmanagers/<topology>`.
    pub state_manager: StateManagerSpec,
    /// This host, for exception records.
    pub hostname: String,
    /// The topology's secret, proven on each connection to the tmaster.
    pub auth: Option<heron_auth::Secret>,
    /// TLS to the tmaster (`heron-rs.tls.enabled`).
    pub tls: Option<heron_auth::Tls>,
}

/// Starts the publisher thread; the event loop updates the returned slot.
pub fn spawn(config: PublisherConfig) -> SampleSlot {
    let slot = SampleSlot::default();
    let theirs = slot.clone();
    let spawned = std::thread::Builder::new()
        .name("metrics-publisher".into())
        .spawn(move || Publisher::new(config, theirs).run());
    if let Err(e) = spawned {
        warn!(error = %e, "cannot start the metrics publisher; publishing no metrics");
    }
    slot
}

/// The component name in an instance id `container_<c>_<component>_<task>`.
pub fn component_of(instance_id: &str) -> Option<&str> {
    let rest = instance_id.strip_prefix("container_")?;
    let (_, rest) = rest.split_once('_')?;
    let (component, task) = rest.rsplit_once('_')?;
    task.parse::<u32>().ok()?;
    Some(component)
}

/// Reads the `key value` lines of a counters file.
pub fn read_counters(path: &Path) -> Option<HashMap<String, u64>> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(
        text.lines()
            .filter_map(|l| {
                let (k, v) = l.split_once(' ')?;
                Some((k.to_string(), v.trim().parse().ok()?))
            })
            .collect(),
    )
}

/// Reads an instance's `<instance id>.exceptions` file: `count first last message` lines
/// (message with `\\` and newlines escaped).
pub fn read_exceptions(path: &Path) -> Vec<(i32, String, String, String)> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| {
            let mut parts = l.splitn(4, ' ');
            let count = parts.next()?.parse().ok()?;
            let first = parts.next()?.to_string();
            let last = parts.next()?.to_string();
            Some((count, first, last, unescape(parts.next().unwrap_or(""))))
        })
        .collect()
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match (c, c == '\\') {
            (_, true) => match chars.next() {
                Some('n') => out.push('\n'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

/// (counters-file key, Heron metric name) for instances' totals.
const INSTANCE_METRICS: [(&str, &str); 4] = [
    ("emitted", "__emit-count/default"),
    ("executed", "__execute-count/default"),
    ("acked", "__ack-count/default"),
    ("failed", "__fail-count/default"),
];

/// An instance's cumulative counts from its counters file: the per-stream `__emit-count/*`,
/// `__execute-count/*`, `__ack-count/*` and `__fail-count/*` lines when it has them, else its
/// totals on stream `default`. A bolt's `__execute-count/<stream>` is its executor's count of
/// executed tuples (`count:__execute-latency/<stream>`) when the file has it.
pub fn instance_metrics(counters: &HashMap<String, u64>) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = counters
        .iter()
        .filter(|(k, _)| k.starts_with("__"))
        .map(|(k, v)| {
            // executed as Heron counts it, when `execute` returned (the executor's count of
            // execute latencies), rather than when the gateway handed the tuple over
            let done = k
                .strip_prefix("__execute-count/")
                .and_then(|s| counters.get(&format!("count:{EXECUTE_LATENCY}{s}")));
            (k.clone(), *done.unwrap_or(v))
        })
        .collect();
    for (key, name) in INSTANCE_METRICS {
        let prefix = &name[..name.find('/').map_or(name.len(), |i| i + 1)];
        if out.iter().any(|(k, _)| k.starts_with(prefix)) {
            continue;
        }
        out.push((name.to_string(), counters.get(key).copied().unwrap_or(0)));
    }
    out.sort();
    out
}

/// The gauges of a counters file (`gauge:<metric> N`: memory, restarts, uptime), published
/// as they are, sorted by metric.
pub fn gauges(counters: &HashMap<String, u64>) -> Vec<(&str, u64)> {
    let mut out: Vec<(&str, u64)> = counters
        .iter()
        .filter_map(|(k, &v)| Some((k.strip_prefix("gauge:")?, v)))
        .collect();
    out.sort();
    out
}

/// The latency sums and counts of a counters file (`sum:<metric> NS`, `count:<metric> N`):
/// (metric, sum, count), sorted by metric.
pub fn latency_sums(counters: &HashMap<String, u64>) -> Vec<(String, u64, u64)> {
    let mut out: Vec<(String, u64, u64)> = counters
        .iter()
        .filter_map(|(k, &sum)| {
            let name = k.strip_prefix("sum:")?;
            let count = counters.get(&format!("count:{name}")).copied()?;
            Some((name.to_string(), sum, count))
        })
        .collect();
    out.sort();
    out
}

/// The latency metric whose sum is also published as time spent.
const EXECUTE_LATENCY: &str = "__execute-latency/";
/// Time a bolt task spent in `execute` per interval, ns (+ stream): what the tracker's
/// capacity is made of.
pub const EXECUTE_TIME: &str = "__execute-time-ns/";

/// The sum of the values that came in between two cumulative (sum, count) readings; a
/// reading below the previous one (a restarted instance) counts from zero.
pub fn interval_sum(prev: (u64, u64), now: (u64, u64)) -> u64 {
    if now.0 < prev.0 || now.1 < prev.1 {
        now.0
    } else {
        now.0 - prev.0
    }
}

/// The average of the values that came in between two cumulative (sum, count) readings:
/// delta sum / delta count, rounded; `None` if none came. A reading below the previous one
/// (a restarted instance) counts from zero.
pub fn interval_average(prev: (u64, u64), now: (u64, u64)) -> Option<u64> {
    let prev = if now.0 < prev.0 || now.1 < prev.1 {
        (0, 0)
    } else {
        prev
    };
    let (sum, count) = (now.0 - prev.0, now.1 - prev.1);
    (count > 0).then(|| (sum + count / 2) / count)
}

struct Publisher {
    config: PublisherConfig,
    slot: SampleSlot,
    state: Option<Arc<dyn StateManager>>,
    conn: Option<(TManagerLocation, heron_auth::StdLink)>,
    /// Last cumulative value per (instance, metric), to send deltas.
    last: HashMap<(String, String), u64>,
    /// Last cumulative (sum, count) per (instance, latency metric), to send averages.
    last_sums: HashMap<(String, String), (u64, u64)>,
    buf: BytesMut,
}

impl Publisher {
    fn new(config: PublisherConfig, slot: SampleSlot) -> Publisher {
        Publisher {
            config,
            slot,
            state: None,
            conn: None,
            last: HashMap::new(),
            last_sums: HashMap::new(),
            buf: BytesMut::new(),
        }
    }

    fn run(mut self) {
        loop {
            std::thread::sleep(PUBLISH_INTERVAL);
            let msg = self.collect();
            if let Err(e) = self.send(&msg) {
                debug!(error = %e, "cannot publish metrics to the tmaster; retrying");
                self.conn = None;
            }
        }
    }

    fn delta(&mut self, who: &str, name: &str, now: u64) -> u64 {
        let prev = self
            .last
            .insert((who.to_string(), name.to_string()), now)
            .unwrap_or(0);
        // A restarted instance starts again from zero.
        now.checked_sub(prev).unwrap_or(now)
    }

    fn collect(&mut self) -> PublishMetrics {
        let ts = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        let mut metrics = Vec::new();
        let mut exceptions = Vec::new();
        let datum = |component: &str, instance: &str, name: &str, v: u64| MetricDatum {
            component_name: component.to_string(),
            instance_id: instance.to_string(),
            name: name.to_string(),
            value: v.to_string(),
            timestamp: ts,
        };
        for id in self.config.instance_ids.clone() {
            let Some(component) = component_of(&id) else {
                continue;
            };
            let file = format!("{id}.exceptions");
            for (count, first, last, trace) in read_exceptions(&self.config.counters_dir.join(file))
            {
                exceptions.push(TmanagerExceptionLog {
                    component_name: component.to_string(),
                    hostname: self.config.hostname.clone(),
                    instance_id: id.clone(),
                    stacktrace: trace,
                    lasttime: last,
                    firsttime: first,
                    count,
                    logging: None,
                });
            }
            let Some(counters) = read_counters(&self.config.counters_dir.join(&id)) else {
                continue;
            };
            for (name, now) in instance_metrics(&counters) {
                let d = self.delta(&id, &name, now);
                metrics.push(datum(component, &id, &name, d));
            }
            for (name, v) in gauges(&counters) {
                metrics.push(datum(component, &id, name, v));
            }
            for (name, sum, count) in latency_sums(&counters) {
                let prev = self
                    .last_sums
                    .insert((id.clone(), name.clone()), (sum, count))
                    .unwrap_or((0, 0));
                if let Some(avg) = interval_average(prev, (sum, count)) {
                    metrics.push(datum(component, &id, &name, avg));
                }
                if let Some(stream) = name.strip_prefix(EXECUTE_LATENCY) {
                    let spent = interval_sum(prev, (sum, count));
                    let time = format!("{EXECUTE_TIME}{stream}");
                    metrics.push(datum(component, &id, &time, spent));
                }
            }
        }
        let s = self.slot.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let stmgr = self.config.stmgr_id.clone();
        let by_instance = s
            .back_pressure
            .by_instance
            .iter()
            .map(|(id, ms)| (format!("{BACK_PRESSURE_BY_COMPID}{id}"), *ms));
        for (name, now) in [
            ("__tuples_from_instances", s.tuples_from_instances),
            ("__tuples_to_instances", s.tuples_to_instances),
            ("__tuples_to_stmgrs", s.tuples_to_stmgrs),
            ("__tuple_sets_from_stmgrs", s.sets_from_stmgrs),
            ("__lost_tuples", s.lost_tuples),
            ("__server/__bytes_from_workers", s.bytes_from_instances),
            ("__server/__bytes_to_workers", s.bytes_to_instances),
            ("__server/__bytes_from_stmgrs", s.bytes_from_stmgrs),
            ("__server/__bytes_to_stmgrs", s.bytes_to_stmgrs),
            (BACK_PRESSURE_METRIC, s.back_pressure.throttled),
            (BACK_PRESSURE_INITIATED, s.back_pressure.initiated),
            (
                "__dropped_during_restore",
                s.stateful.dropped_during_restore,
            ),
            ("__stateful_states_saved", s.stateful.states_saved),
            ("__stateful_states_stored", s.stateful.states_stored),
            ("__stateful_restores", s.stateful.restores),
            ("__stateful_alignments", s.stateful.alignments),
        ]
        .map(|(n, v)| (n.to_string(), v))
        .into_iter()
        .chain(by_instance)
        {
            let d = self.delta(&stmgr, &name, now);
            metrics.push(datum("__stmgr__", &stmgr, &name, d));
        }
        PublishMetrics {
            metrics,
            exceptions,
        }
    }

    fn location(&mut self) -> Result<TManagerLocation, String> {
        if self.state.is_none() {
            let spec = &self.config.state_manager;
            self.state = Some(spec.open().map_err(|e| format!("opening {spec}: {e}"))?);
        }
        let state = self.state.as_ref().expect("opened above");
        state
            .get_tmanager_location(&self.config.topology_name)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "no tmaster location yet".to_string())
    }

    fn send(&mut self, msg: &PublishMetrics) -> Result<(), String> {
        let location = self.location()?;
        if self.conn.as_ref().map(|(l, _)| l) != Some(&location) {
            let addr = format!("{}:{}", location.host, location.server_port);
            let stream = TcpStream::connect(&addr).map_err(|e| format!("{addr}: {e}"))?;
            let (tls, auth) = (self.config.tls.as_ref(), self.config.auth.as_ref());
            let stream = heron_auth::dial_std(stream, tls, auth)
                .map_err(|e| format!("{addr}: authentication failed: {e}"))?;
            stream
                .tcp()
                .set_write_timeout(Some(Duration::from_secs(5)))
                .map_err(|e| e.to_string())?;
            info!(%addr, "publishing metrics to the tmaster");
            self.conn = Some((location, stream));
        }
        self.buf.clear();
        encode_message(&mut self.buf, &ReqId::ZERO, msg);
        let (_, stream) = self.conn.as_mut().expect("connected above");
        stream.write_all(&self.buf).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn component_names_come_from_instance_ids() {
        assert_eq!(component_of("container_1_split_3"), Some("split"));
        assert_eq!(component_of("container_12_my_bolt_7"), Some("my_bolt"));
        assert_eq!(component_of("stmgr-1"), None);
        assert_eq!(component_of("container_1_x"), None);
    }

    #[test]
    fn time_spent_counts_only_while_the_condition_holds() {
        let t0 = std::time::Instant::now();
        let mut t = TimeSpent::new(t0);
        assert_eq!(t.sample(t0 + Duration::from_millis(100), false), 0);
        assert_eq!(t.sample(t0 + Duration::from_millis(350), true), 250);
        assert_eq!(t.sample(t0 + Duration::from_millis(400), false), 250);
    }

    #[test]
    fn per_stream_lines_replace_totals() {
        let c: HashMap<String, u64> = [
            ("emitted", 9),
            ("executed", 4),
            ("acked", 3),
            ("failed", 1),
            ("__emit-count/default", 6),
            ("__emit-count/marks", 3),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let m = instance_metrics(&c);
        let names: Vec<(&str, u64)> = m.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(
            names,
            vec![
                ("__ack-count/default", 3),
                ("__emit-count/default", 6),
                ("__emit-count/marks", 3),
                ("__execute-count/default", 4),
                ("__fail-count/default", 1),
            ]
        );
    }

    #[test]
    fn gauges_are_published_as_they_are_and_cpu_time_as_a_count() {
        let c: HashMap<String, u64> = [
            ("gauge:__memory-rss-kb", 7_000),
            ("gauge:__restarts", 2),
            ("__cpu-time-ms", 120),
            ("starts", 3),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(
            gauges(&c),
            vec![("__memory-rss-kb", 7_000), ("__restarts", 2)]
        );
        assert!(instance_metrics(&c).contains(&("__cpu-time-ms".to_string(), 120)));
        let bolt: HashMap<String, u64> = [
            ("__execute-count/default", 900),
            ("count:__execute-latency/default", 700),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(
            instance_metrics(&bolt),
            vec![
                ("__ack-count/default".to_string(), 0),
                ("__emit-count/default".to_string(), 0),
                ("__execute-count/default".to_string(), 700),
                ("__fail-count/default".to_string(), 0),
            ],
            "executed when execute returned, not when handed over"
        );
        assert!(!instance_metrics(&c)
            .iter()
            .any(|(k, _)| k.contains("gauge")));
    }

    #[test]
    fn latencies_are_interval_averages_of_sums_and_counts() {
        let c: HashMap<String, u64> = [
            ("sum:__complete-latency/default", 9_000),
            ("count:__complete-latency/default", 3),
            ("sum:__process-latency/marks", 10),
            ("count:__ack-count/x", 1),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(
            latency_sums(&c),
            vec![("__complete-latency/default".to_string(), 9_000, 3)],
            "a sum without its count is left out"
        );
        assert!(instance_metrics(&c)
            .iter()
            .all(|(k, _)| k.starts_with("__")));
        assert_eq!(interval_average((0, 0), (9_000, 3)), Some(3_000));
        assert_eq!(interval_average((9_000, 3), (19_000, 5)), Some(5_000));
        assert_eq!(
            interval_average((9_000, 3), (9_000, 3)),
            None,
            "no value came"
        );
        assert_eq!(
            interval_average((9_000, 3), (400, 2)),
            Some(200),
            "restarted"
        );
        assert_eq!(interval_average((0, 0), (5, 2)), Some(3), "rounded");
        assert_eq!(interval_sum((9_000, 3), (19_000, 5)), 10_000);
        assert_eq!(interval_sum((9_000, 3), (400, 2)), 400, "restarted");
    }

    #[test]
    fn back_pressure_times_per_instance() {
        let t0 = std::time::Instant::now();
        let ids = ["container_1_a_1".to_string(), "container_1_b_2".to_string()];
        let mut t = BackPressureTimes::new(&ids, t0);
        t.sample(t0 + Duration::from_millis(100), false, false, &[]);
        let ms = t.sample(
            t0 + Duration::from_millis(300),
            true,
            true,
            &["container_1_b_2"],
        );
        assert_eq!((ms.throttled, ms.initiated), (200, 200));
        assert_eq!(
            ms.by_instance,
            vec![(ids[0].clone(), 0), (ids[1].clone(), 200)]
        );
    }

    #[test]
    fn exceptions_files_parse() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.exceptions");
        std::fs::write(&p, "2 10 20 boom\\nat a \\\\ b\nbad\n").unwrap();
        let e = read_exceptions(&p);
        assert_eq!(
            e,
            vec![(2, "10".into(), "20".into(), "boom\nat a \\ b".into())]
        );
        assert!(read_exceptions(&dir.path().join("none")).is_empty());
    }

    #[test]
    fn counters_files_parse() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c");
        std::fs::write(&p, "emitted 5\nexecuted 2\nbad\n").unwrap();
        let c = read_counters(&p).unwrap();
        assert_eq!(c["emitted"], 5);
        assert_eq!(c["executed"], 2);
        assert!(read_counters(&dir.path().join("missing")).is_none());
    }
}
