//! The KafkaSpout: reads its share of the partitions and emits one tuple per record.
//!
//! The decisions (what to commit, when to retry, which task reads what) are the synchronous
//! state machines of [`offsets`](crate::PartitionOffsets), [`retry`](crate::RetrySchedule)
//! and [`assign`](crate::assign_round_robin); this file is the I/O around them.

use crate::reader::{Reader, TaskInfo};
use crate::{KafkaSpoutConfig, ProcessingGuarantee, TopicPartition};
use heron_api::{
    MessageId, OutputFieldsDeclarer, ReliabilityMode, Spout, SpoutOutputCollector, State, Stateful,
    TopologyContext, TwoPhaseStateful,
};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The state key prefix of a partition's next offset in an effectively-once checkpoint:
/// `kafka-offset/<topic>/<partition>`.
pub const OFFSET_STATE_PREFIX: &str = "kafka-offset/";

/// A spout that reads Kafka topics (Storm's `KafkaSpout` with manual partition assignment).
///
/// Each task reads its round-robin share of the partitions
/// ([`assign_round_robin`](crate::assign_round_robin)); when the parallelism changes
/// (`heron update --component-parallelism`) the tasks restart with the new plan and take
/// their new shares, resuming from the committed offsets. What is committed when follows the
/// [`ProcessingGuarantee`]. The connection is made on the first `next_tuple`; while the
/// brokers cannot be reached or a topic is missing the spout emits nothing, logs, reports the
/// error and tries again.
///
/// ```no_run
/// use heron_api::{Config, ReliabilityMode, TopologyBuilder};
/// use heron_kafka::{KafkaSpout, KafkaSpoutConfig};
///
/// let conf = KafkaSpoutConfig::builder("127.0.0.1:9092", ["sentences"])
///     .group_id("word-count")
///     .build()
///     .unwrap();
/// let mut builder = TopologyBuilder::new();
/// builder.set_spout("kafka-spout", move || KafkaSpout::new(conf.clone()), 2);
/// let mut c = Config::new();
/// c.set_reliability_mode(ReliabilityMode::AtLeastOnce);
/// # drop(builder);
/// ```
pub struct KafkaSpout {
    config: Arc<KafkaSpoutConfig>,
    task: Option<TaskInfo>,
    reader: Option<Reader>,
    /// Why the spout refuses to run (a guarantee that does not fit the topology).
    refused: Option<String>,
    reported_refusal: bool,
    next_connect: Instant,
    connect_failures: u32,
    last_error: Option<String>,
    /// Effectively once: the offsets of the checkpoint restored, until the reader uses them.
    restored: Option<BTreeMap<TopicPartition, i64>>,
    /// Effectively once: the offsets saved per checkpoint, committed on `post_save`.
    saved: VecDeque<(String, Vec<(TopicPartition, i64)>)>,
}

impl KafkaSpout {
    /// A spout with these options.
    pub fn new(config: KafkaSpoutConfig) -> KafkaSpout {
        KafkaSpout {
            config: Arc::new(config),
            task: None,
            reader: None,
            refused: None,
            reported_refusal: false,
            next_connect: Instant::now(),
            connect_failures: 0,
            last_error: None,
            restored: None,
            saved: VecDeque::new(),
        }
    }

    /// The partitions this task reads (empty until it connected).
    pub fn assigned(&self) -> Vec<TopicPartition> {
        self.reader
            .as_ref()
            .map(Reader::assigned)
            .unwrap_or_default()
    }

    fn connect(&mut self, collector: &mut SpoutOutputCollector) {
        let Some(task) = &self.task else { return };
        let now = Instant::now();
        if now < self.next_connect {
            return;
        }
        match Reader::connect(self.config.clone(), task, self.restored.as_ref()) {
            Ok(r) => {
                tracing::info!(
                    task = task.task_id,
                    partitions = ?r.assigned().iter().map(ToString::to_string).collect::<Vec<_>>(),
                    "KafkaSpout reading"
                );
                self.reader = Some(r);
                self.connect_failures = 0;
                self.last_error = None;
            }
            Err(e) => {
                self.connect_failures += 1;
                let wait = Duration::from_millis(100)
                    .saturating_mul(1 << self.connect_failures.min(6))
                    .min(Duration::from_secs(5));
                self.next_connect = now + wait;
                let msg = format!("KafkaSpout cannot start reading: {e}");
                if self.last_error.as_deref() != Some(&msg) {
                    tracing::warn!(task = task.task_id, "{msg} (retrying)");
                    collector.report_error(&msg);
                    self.last_error = Some(msg);
                }
            }
        }
    }
}

/// The guarantee the spout runs with in a topology of `mode`, or why it cannot.
fn guarantee_for(
    asked: Option<ProcessingGuarantee>,
    mode: ReliabilityMode,
) -> Result<ProcessingGuarantee, String> {
    use ProcessingGuarantee as G;
    use ReliabilityMode as M;
    let g = asked.unwrap_or(match mode {
        M::AtMostOnce => G::AtMostOnce,
        M::AtLeastOnce => G::AtLeastOnce,
        M::EffectivelyOnce => G::EffectivelyOnce,
    });
    match (g, mode) {
        (G::AtMostOnce, M::AtMostOnce | M::AtLeastOnce)
        | (G::AtLeastOnce, M::AtLeastOnce)
        | (G::EffectivelyOnce, M::EffectivelyOnce) => Ok(g),
        _ => Err(format!(
            "KafkaSpout: processing guarantee {g:?} does not work in a {} topology \
             (AtLeastOnce needs ATLEAST_ONCE acking, EffectivelyOnce needs EFFECTIVELY_ONCE \
             checkpoints, AtMostOnce runs in ATMOST_ONCE or ATLEAST_ONCE)",
            mode.as_str()
        )),
    }
}

impl Spout for KafkaSpout {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        let t = &self.config.translator;
        d.declare_stream(t.stream(), t.fields());
    }

    fn open(&mut self, ctx: &TopologyContext) {
        let mut tasks = ctx.this_component_tasks().to_vec();
        tasks.sort_unstable();
        let index = tasks.iter().position(|&t| t == ctx.task_id()).unwrap_or(0);
        match guarantee_for(self.config.guarantee, ctx.config().reliability_mode()) {
            Ok(guarantee) => {
                self.task = Some(TaskInfo {
                    index,
                    tasks: tasks.len().max(1),
                    task_id: ctx.task_id(),
                    topology_id: ctx.topology_id().to_string(),
                    guarantee,
                })
            }
            Err(e) => {
                tracing::error!("{e}");
                self.refused = Some(e);
            }
        }
    }

    fn next_tuple(&mut self, collector: &mut SpoutOutputCollector) {
        if let Some(why) = &self.refused {
            if !self.reported_refusal {
                collector.report_error(why);
                self.reported_refusal = true;
            }
            return;
        }
        if self.reader.is_none() {
            self.connect(collector);
        }
        if let Some(r) = &mut self.reader {
            self.restored = None;
            r.next_tuple(collector, Instant::now());
        }
    }

    fn ack(&mut self, msg_id: MessageId) {
        if let (Some(r), MessageId::Int(id)) = (&mut self.reader, msg_id) {
            r.ack(id);
        }
    }

    fn fail(&mut self, msg_id: MessageId) {
        if let (Some(r), MessageId::Int(id)) = (&mut self.reader, msg_id) {
            r.fail(id, Instant::now());
        }
    }

    fn deactivate(&mut self) {
        if let Some(r) = &mut self.reader {
            r.commit(true);
        }
    }

    fn close(&mut self) {
        if let Some(r) = &mut self.reader {
            r.commit(true);
        }
    }

    fn stateful(&mut self) -> Option<&mut dyn Stateful> {
        Some(self)
    }
}

impl Stateful for KafkaSpout {
    fn init_state(&mut self, state: &State) {
        let restored: BTreeMap<TopicPartition, i64> = state
            .iter_prefix(OFFSET_STATE_PREFIX)
            .filter_map(|(k, v)| {
                let rest = k.strip_prefix(OFFSET_STATE_PREFIX)?;
                let (topic, partition) = rest.rsplit_once('/')?;
                Some((
                    TopicPartition::new(topic, partition.parse().ok()?),
                    v.as_i64()?,
                ))
            })
            .collect();
        if let Some(r) = &mut self.reader {
            r.rewind(&restored);
        }
        self.restored = Some(restored);
    }

    fn pre_save(&mut self, checkpoint_id: &str, state: &mut State) {
        state.remove_prefix(OFFSET_STATE_PREFIX);
        let positions = match &self.reader {
            Some(r) => r.positions(),
            // not reading yet: keep what the restored checkpoint said
            None => self
                .restored
                .as_ref()
                .map(|m| m.iter().map(|(tp, o)| (tp.clone(), *o)).collect())
                .unwrap_or_default(),
        };
        for (tp, offset) in &positions {
            state.put(
                format!("{OFFSET_STATE_PREFIX}{}/{}", tp.topic, tp.partition),
                *offset,
            );
        }
        self.saved.push_back((checkpoint_id.to_string(), positions));
        while self.saved.len() > 16 {
            self.saved.pop_front();
        }
    }

    fn two_phase(&mut self) -> Option<&mut dyn TwoPhaseStateful> {
        Some(self)
    }
}

impl TwoPhaseStateful for KafkaSpout {
    fn post_save(&mut self, checkpoint_id: &str) {
        let Some(i) = self.saved.iter().position(|(id, _)| id == checkpoint_id) else {
            return;
        };
        let (_, positions) = self.saved.remove(i).expect("found above");
        self.saved.drain(..i); // older ones were superseded
        if let Some(r) = &mut self.reader {
            r.commit_positions(&positions);
        }
    }

    fn pre_restore(&mut self, _checkpoint_id: &str) {
        self.saved.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guarantee_must_fit_the_topology() {
        use ProcessingGuarantee as G;
        use ReliabilityMode as M;
        assert_eq!(guarantee_for(None, M::AtLeastOnce), Ok(G::AtLeastOnce));
        assert_eq!(
            guarantee_for(None, M::EffectivelyOnce),
            Ok(G::EffectivelyOnce)
        );
        assert_eq!(
            guarantee_for(Some(G::AtMostOnce), M::AtLeastOnce),
            Ok(G::AtMostOnce)
        );
        let e = guarantee_for(Some(G::AtLeastOnce), M::AtMostOnce).unwrap_err();
        assert!(e.contains("ATMOST_ONCE"), "{e}");
        assert!(guarantee_for(Some(G::EffectivelyOnce), M::AtLeastOnce).is_err());
        assert!(guarantee_for(Some(G::AtLeastOnce), M::EffectivelyOnce).is_err());
    }
}
