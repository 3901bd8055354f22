//! The latest metric values and exceptions published to the tmaster (pure, in memory).
//!
//! Metrics managers send `heron.proto.tmanager.PublishMetrics`; this keeps, per component →
//! instance → metric name, the value with the newest timestamp, and the latest exceptions.
//! The stats endpoint (a later issue) reads from here.

use heron_proto::tmanager::{PublishMetrics, TmanagerExceptionLog};
use std::collections::{BTreeMap, VecDeque};

/// Heron's bound on stored exceptions (`heron.tmanager.metrics.collector.maximum.exception`).
pub const MAX_EXCEPTIONS: usize = 256;

/// One stored metric value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricValue {
    /// The value as published (Heron sends numbers as strings).
    pub value: String,
    /// The publisher's timestamp.
    pub timestamp: i64,
}

/// Metric name → value.
pub type InstanceMetrics = BTreeMap<String, MetricValue>;

/// The metrics store.
#[derive(Debug, Default)]
pub struct MetricsStore {
    values: BTreeMap<String, BTreeMap<String, InstanceMetrics>>,
    exceptions: VecDeque<TmanagerExceptionLog>,
}

impl MetricsStore {
    /// An empty store.
    pub fn new() -> MetricsStore {
        MetricsStore::default()
    }

    /// Records a `PublishMetrics` message. A value replaces the stored one unless the stored
    /// one has a newer timestamp. An exception replaces the stored one of the same component,
    /// instance and stack trace; beyond [`MAX_EXCEPTIONS`] the oldest go.
    pub fn publish(&mut self, msg: PublishMetrics) {
        for m in msg.metrics {
            let slot = self
                .values
                .entry(m.component_name)
                .or_default()
                .entry(m.instance_id)
                .or_default()
                .entry(m.name);
            let new = MetricValue {
                value: m.value,
                timestamp: m.timestamp,
            };
            match slot {
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(new);
                }
                std::collections::btree_map::Entry::Occupied(mut o) => {
                    if o.get().timestamp <= new.timestamp {
                        o.insert(new);
                    }
                }
            }
        }
        for e in msg.exceptions {
            self.exceptions.retain(|x| {
                !(x.component_name == e.component_name
                    && x.instance_id == e.instance_id
                    && x.stacktrace == e.stacktrace)
            });
            self.exceptions.push_back(e);
            while self.exceptions.len() > MAX_EXCEPTIONS {
                self.exceptions.pop_front();
            }
        }
    }

    /// One metric of one instance.
    pub fn get(&self, component: &str, instance: &str, metric: &str) -> Option<&MetricValue> {
        self.values.get(component)?.get(instance)?.get(metric)
    }

    /// Every instance of a component, with its metrics.
    pub fn component(&self, component: &str) -> Option<&BTreeMap<String, InstanceMetrics>> {
        self.values.get(component)
    }

    /// The stored exceptions, oldest first.
    pub fn exceptions(&self) -> impl Iterator<Item = &TmanagerExceptionLog> {
        self.exceptions.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heron_proto::tmanager::MetricDatum;

    fn datum(comp: &str, inst: &str, name: &str, value: &str, ts: i64) -> MetricDatum {
        MetricDatum {
            component_name: comp.into(),
            instance_id: inst.into(),
            name: name.into(),
            value: value.into(),
            timestamp: ts,
        }
    }

    fn exception(inst: &str, trace: &str, count: i32) -> TmanagerExceptionLog {
        TmanagerExceptionLog {
            component_name: "c".into(),
            hostname: "h".into(),
            instance_id: inst.into(),
            stacktrace: trace.into(),
            lasttime: "1".into(),
            firsttime: "0".into(),
            count,
            logging: None,
        }
    }

    #[test]
    fn keeps_the_newest_value_per_metric() {
        let mut s = MetricsStore::new();
        s.publish(PublishMetrics {
            metrics: vec![
                datum("word", "i1", "__emit-count/default", "5", 10),
                datum("word", "i2", "__emit-count/default", "7", 10),
            ],
            exceptions: vec![],
        });
        s.publish(PublishMetrics {
            metrics: vec![
                datum("word", "i1", "__emit-count/default", "9", 20),
                datum("word", "i2", "__emit-count/default", "1", 5),
            ],
            exceptions: vec![],
        });
        assert_eq!(
            s.get("word", "i1", "__emit-count/default").unwrap().value,
            "9"
        );
        assert_eq!(
            s.get("word", "i2", "__emit-count/default").unwrap().value,
            "7"
        );
        assert_eq!(s.component("word").unwrap().len(), 2);
        assert!(s.get("word", "i3", "__emit-count/default").is_none());
    }

    #[test]
    fn exceptions_are_deduplicated_and_bounded() {
        let mut s = MetricsStore::new();
        s.publish(PublishMetrics {
            metrics: vec![],
            exceptions: vec![exception("i1", "boom", 1), exception("i1", "boom", 3)],
        });
        assert_eq!(s.exceptions().map(|e| e.count).collect::<Vec<_>>(), vec![3]);
        let many = (0..MAX_EXCEPTIONS + 10)
            .map(|n| exception("i2", &format!("t{n}"), 1))
            .collect();
        s.publish(PublishMetrics {
            metrics: vec![],
            exceptions: many,
        });
        assert_eq!(s.exceptions().count(), MAX_EXCEPTIONS);
        assert_eq!(
            s.exceptions().last().unwrap().stacktrace,
            format!("t{}", MAX_EXCEPTIONS + 9)
        );
    }
}
