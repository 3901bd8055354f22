//! The metrics published to the tmaster, as time series (pure, in memory).
//!
//! Publishers send `heron.proto.tmanager.PublishMetrics`. The store keeps, per component →
//! instance → metric name, a ring of [`BUCKET_SECS`]-second buckets covering
//! [`RETENTION_SECS`] (Heron keeps 60-s buckets; ours are short so that a page moves while
//! you watch) and a ring of [`MINUTE_SECS`]-second buckets covering [`LONG_RETENTION_SECS`]
//! (for the 3-hour window of the tracker's page), plus the stmgrs' registration summary and
//! the latest exceptions. A range that starts before the fine ring's oldest bucket is
//! answered from the minute ring. A value is
//! put in the bucket of its arrival time. How a bucket folds its values depends on the
//! metric ([`Aggregation::of`]): counts add up, latencies average, gauges keep the last.
//!
//! [`MetricsStore`] is a cheap handle (`Clone` shares the store): the tmaster's event loop
//! publishes into it and the stats HTTP server ([`crate::stats`]) reads from it. Each call
//! takes the lock once, for one message or one query.

use heron_proto::tmanager::{PublishMetrics, TmanagerExceptionLog};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

/// Heron's bound on stored exceptions (`heron.tmanager.metrics.collector.maximum.exception`).
pub const MAX_EXCEPTIONS: usize = 256;
/// Width of one bucket, in seconds.
pub const BUCKET_SECS: i64 = 1;
/// How far back buckets are kept, in seconds.
pub const RETENTION_SECS: i64 = 30 * 60;
/// Width of one bucket of the coarse ring, in seconds.
pub const MINUTE_SECS: i64 = 60;
/// How far back the coarse ring keeps buckets, in seconds (a little over 3 hours).
pub const LONG_RETENTION_SECS: i64 = 3 * 3600 + 10 * 60;

/// How the values of one bucket (and of a range of buckets) fold into one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregation {
    /// Counts: the sum.
    Sum,
    /// Latencies: the mean.
    Avg,
    /// Gauges: the last value.
    Last,
}

impl Aggregation {
    /// Heron's aggregation for a metric name (metrics_sinks.yaml): counts and time spent in
    /// back pressure add up, latencies average, anything else keeps the last value.
    pub fn of(name: &str) -> Aggregation {
        // `<metric>/<stream>`, or a stream manager's `__server/<metric>`
        let name = name.strip_prefix("__server/").unwrap_or(name);
        let base = name.split('/').next().unwrap_or(name);
        if base.contains("latency") {
            Aggregation::Avg
        } else if base.ends_with("-count")
            || base.ends_with("-ms")
            || base.ends_with("-ns")
            || name.contains("time_spent_back_pressure")
            || base.contains("tuples")
            || base.contains("bytes")
        {
            Aggregation::Sum
        } else {
            Aggregation::Last
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Bucket {
    start: i64,
    sum: f64,
    count: u32,
    last: f64,
}

/// The buckets of one metric of one instance.
#[derive(Debug)]
struct Series {
    agg: Aggregation,
    buckets: VecDeque<Bucket>,
    /// The same values in [`MINUTE_SECS`] buckets, kept [`LONG_RETENTION_SECS`].
    minutes: VecDeque<Bucket>,
    /// When the first value arrived (unix s).
    first: i64,
    /// Sum of every value ever received (counters), their mean (latencies), or the last
    /// value (gauges).
    total: f64,
    /// How many values were received.
    received: u64,
}

impl Series {
    fn new(agg: Aggregation, now: i64) -> Series {
        Series {
            agg,
            buckets: VecDeque::new(),
            minutes: VecDeque::new(),
            first: now,
            total: 0.0,
            received: 0,
        }
    }

    fn add(&mut self, at: i64, v: f64) {
        add_to_ring(&mut self.buckets, BUCKET_SECS, RETENTION_SECS, at, v);
        add_to_ring(&mut self.minutes, MINUTE_SECS, LONG_RETENTION_SECS, at, v);
        self.received += 1;
        self.total = match self.agg {
            Aggregation::Sum => self.total + v,
            Aggregation::Avg => self.total + (v - self.total) / self.received as f64,
            Aggregation::Last => v,
        };
    }

    fn fold<'a>(&self, it: impl Iterator<Item = &'a Bucket>) -> Option<f64> {
        let (mut sum, mut count, mut last) = (0.0, 0u32, None);
        for b in it {
            sum += b.sum;
            count += b.count;
            last = Some(b.last);
        }
        last?;
        Some(match self.agg {
            Aggregation::Sum => sum,
            Aggregation::Avg => sum / f64::from(count.max(1)),
            Aggregation::Last => last.unwrap_or(0.0),
        })
    }

    fn in_range(&self, range: Range) -> impl Iterator<Item = &Bucket> {
        self.buckets
            .iter()
            .filter(move |b| range.is_none_or(|(s, e)| b.start >= s && b.start <= e))
    }

    /// The folded value over `range`: from the fine ring when it reaches back far enough,
    /// else from the minute ring (whose buckets overlapping the range count whole).
    fn over(&self, range: Range) -> Option<f64> {
        let Some((start, end)) = range else {
            return Some(self.total);
        };
        let fine_from = self.buckets.front().map_or(i64::MAX, |b| b.start);
        if start >= fine_from || self.first >= fine_from {
            return self.fold(self.in_range(range));
        }
        let from = start - start.rem_euclid(MINUTE_SECS);
        self.fold(
            self.minutes
                .iter()
                .filter(|b| b.start >= from && b.start <= end),
        )
    }
}

/// Puts `v` (arrived at `at`) in the `width`-second bucket of `ring`, dropping buckets older
/// than `keep` seconds. A late value for an older bucket is folded into the newest one.
fn add_to_ring(ring: &mut VecDeque<Bucket>, width: i64, keep: i64, at: i64, v: f64) {
    let start = at - at.rem_euclid(width);
    match ring.back_mut() {
        Some(b) if b.start >= start => {
            b.sum += v;
            b.count += 1;
            if b.start == start {
                b.last = v;
            }
        }
        _ => ring.push_back(Bucket {
            start,
            sum: v,
            count: 1,
            last: v,
        }),
    }
    while ring.front().is_some_and(|b| b.start < start - keep) {
        ring.pop_front();
    }
}

/// A closed range of unix seconds; `None` is everything.
pub type Range = Option<(i64, i64)>;

/// Query results: metric → instance → value.
pub type Values = BTreeMap<String, BTreeMap<String, f64>>;
/// Query results: metric → instance → bucket start (unix s) → value.
pub type Timeline = BTreeMap<String, BTreeMap<String, BTreeMap<i64, f64>>>;

#[derive(Debug, Default)]
struct Inner {
    series: BTreeMap<String, BTreeMap<String, BTreeMap<String, Series>>>,
    exceptions: VecDeque<TmanagerExceptionLog>,
    registered: Vec<String>,
    absent: Vec<String>,
}

/// The metrics store (a shared handle).
#[derive(Clone, Debug, Default)]
pub struct MetricsStore {
    inner: Arc<Mutex<Inner>>,
}

/// Unix time in seconds.
pub fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl MetricsStore {
    /// An empty store.
    pub fn new() -> MetricsStore {
        MetricsStore::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a `PublishMetrics` message that arrived now.
    pub fn publish(&mut self, msg: PublishMetrics) {
        self.publish_at(msg, now_secs());
    }

    /// Records a `PublishMetrics` message that arrived at `now` (unix s). Values that do not
    /// parse as numbers are ignored. An exception replaces the stored one of the same
    /// component, instance and stack trace; beyond [`MAX_EXCEPTIONS`] the oldest go.
    pub fn publish_at(&self, msg: PublishMetrics, now: i64) {
        let mut inner = self.lock();
        for m in msg.metrics {
            let Ok(v) = m.value.trim().parse::<f64>() else {
                continue;
            };
            let agg = Aggregation::of(&m.name);
            inner
                .series
                .entry(m.component_name)
                .or_default()
                .entry(m.instance_id)
                .or_default()
                .entry(m.name)
                .or_insert_with(|| Series::new(agg, now))
                .add(now, v);
        }
        for e in msg.exceptions {
            inner.exceptions.retain(|x| {
                !(x.component_name == e.component_name
                    && x.instance_id == e.instance_id
                    && x.stacktrace == e.stacktrace)
            });
            inner.exceptions.push_back(e);
            while inner.exceptions.len() > MAX_EXCEPTIONS {
                inner.exceptions.pop_front();
            }
        }
    }

    /// Records which stream managers are registered and which are absent.
    pub fn set_registration(&self, registered: Vec<String>, absent: Vec<String>) {
        let mut inner = self.lock();
        inner.registered = registered;
        inner.absent = absent;
    }

    /// The registered and the absent stream managers.
    pub fn registration(&self) -> (Vec<String>, Vec<String>) {
        let inner = self.lock();
        (inner.registered.clone(), inner.absent.clone())
    }

    /// The components that published anything.
    pub fn components(&self) -> Vec<String> {
        self.lock().series.keys().cloned().collect()
    }

    /// Folds the buckets in `range` per metric and instance of `component`; `instances` and
    /// `metrics` empty mean all. With `range == None` counters give their total since the
    /// tmaster started (not only what is still in the ring) and latencies the mean of every
    /// value received.
    pub fn values(
        &self,
        component: &str,
        instances: &[String],
        metrics: &[String],
        range: Range,
    ) -> Values {
        let inner = self.lock();
        let mut out = Values::new();
        for (inst, per_metric) in selected(&inner, component, instances) {
            for (name, series) in per_metric {
                if !metrics.is_empty() && !metrics.contains(name) {
                    continue;
                }
                if let Some(v) = series.over(range) {
                    out.entry(name.clone()).or_default().insert(inst.clone(), v);
                }
            }
        }
        out
    }

    /// Every bucket in `range` per metric and instance of `component`.
    pub fn timeline(
        &self,
        component: &str,
        instances: &[String],
        metrics: &[String],
        range: Range,
    ) -> Timeline {
        let inner = self.lock();
        let mut out = Timeline::new();
        for (inst, per_metric) in selected(&inner, component, instances) {
            for (name, series) in per_metric {
                if !metrics.is_empty() && !metrics.contains(name) {
                    continue;
                }
                let points: BTreeMap<i64, f64> = series
                    .in_range(range)
                    .filter_map(|b| Some((b.start, series.fold(std::iter::once(b))?)))
                    .collect();
                out.entry(name.clone())
                    .or_default()
                    .insert(inst.clone(), points);
            }
        }
        out
    }

    /// The stored exceptions of `component` (all components if empty) and `instances` (all if
    /// empty), oldest first.
    pub fn exceptions(&self, component: &str, instances: &[String]) -> Vec<TmanagerExceptionLog> {
        self.lock()
            .exceptions
            .iter()
            .filter(|e| component.is_empty() || e.component_name == component)
            .filter(|e| instances.is_empty() || instances.contains(&e.instance_id))
            .cloned()
            .collect()
    }
}

fn selected<'a>(
    inner: &'a Inner,
    component: &str,
    instances: &'a [String],
) -> impl Iterator<Item = (&'a String, &'a BTreeMap<String, Series>)> {
    inner
        .series
        .get(component)
        .into_iter()
        .flatten()
        .filter(move |(i, _)| instances.is_empty() || instances.contains(i))
}

#[cfg(test)]
mod tests;
