//! Publishes this container's metrics to the tmaster, as Heron's per-container metrics
//! manager does: every [`PUBLISH_INTERVAL`] one `PublishMetrics` message on a connection to
//! the tmaster's server port (location read from the state manager; a new connection when the
//! location changes or a write fails).
//!
//! What it publishes, as deltas since the previous message (the tmaster adds them up):
//! * for each instance of the container, from the counters file it writes about once a second
//!   (`metrics/<instance id>` in the working directory, docs/internals.md): `__emit-count`,
//!   `__execute-count`, `__ack-count`, `__fail-count` on stream `default` (the counters file has
//!   no per-stream split yet);
//! * for the stream manager itself (component `__stmgr__`, instance = stmgr id), from the
//!   samples the event loop hands over ([`StmgrSample`]): tuples from and to instances, to
//!   stream managers, tuple sets from stream managers, lost tuples, and the time its spouts
//!   spent throttled by back pressure (`__server/__time_spent_back_pressure_throttled`).
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
    /// Milliseconds during which local spouts were not read because of back pressure.
    pub back_pressure_ms: u64,
}

/// The stream manager's metric of time spent with its spouts throttled, in ms.
pub const BACK_PRESSURE_METRIC: &str = "__server/__time_spent_back_pressure_throttled";

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

/// An instance's cumulative metrics from its counters file: the per-stream `__emit-count/*`
/// and `__execute-count/*` lines when it has them, else its totals on stream `default`; acks
/// and fails from the totals (on `default`).
pub fn instance_metrics(counters: &HashMap<String, u64>) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = counters
        .iter()
        .filter(|(k, _)| k.starts_with("__"))
        .map(|(k, v)| (k.clone(), *v))
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

struct Publisher {
    config: PublisherConfig,
    slot: SampleSlot,
    state: Option<Arc<dyn StateManager>>,
    conn: Option<(TManagerLocation, TcpStream)>,
    /// Last cumulative value per (instance, metric), to send deltas.
    last: HashMap<(String, String), u64>,
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
        }
        let s = *self.slot.lock().unwrap_or_else(|e| e.into_inner());
        let stmgr = self.config.stmgr_id.clone();
        for (name, now) in [
            ("__tuples_from_instances", s.tuples_from_instances),
            ("__tuples_to_instances", s.tuples_to_instances),
            ("__tuples_to_stmgrs", s.tuples_to_stmgrs),
            ("__tuple_sets_from_stmgrs", s.sets_from_stmgrs),
            ("__lost_tuples", s.lost_tuples),
            (BACK_PRESSURE_METRIC, s.back_pressure_ms),
        ] {
            let d = self.delta(&stmgr, name, now);
            metrics.push(datum("__stmgr__", &stmgr, name, d));
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
            stream
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
