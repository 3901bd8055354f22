//! The KafkaSpout's connection: a librdkafka consumer with manually assigned partitions, and
//! per partition the offsets state machine.

use crate::{
    assign_round_robin, FirstPollOffsetStrategy, KafkaError, KafkaRecord, KafkaSpoutConfig,
    PartitionOffsets, ProcessingGuarantee, Retry, RetrySchedule, TopicFilter, TopicPartition,
};
use heron_api::{SpoutOutputCollector, Value, Values};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a metadata or offset request to the brokers may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// A due retry that did not arrive this long after seeking back to it is sought again.
const RETRY_RESEEK: Duration = Duration::from_secs(1);

/// Bits of a message id that hold the offset; the partition slot is above them.
const OFFSET_BITS: u32 = 48;

/// What the spout knows of its task.
#[derive(Clone, Debug)]
pub(crate) struct TaskInfo {
    pub index: usize,
    pub tasks: usize,
    pub task_id: i32,
    pub topology_id: String,
    pub guarantee: ProcessingGuarantee,
}

/// The message id of `offset` in partition slot `slot`: one integer, no allocation.
pub(crate) fn pack(slot: usize, offset: i64) -> i64 {
    debug_assert!((0..1 << OFFSET_BITS).contains(&offset));
    ((slot as i64) << OFFSET_BITS) | offset
}

/// The slot and offset of a message id.
pub(crate) fn unpack(id: i64) -> (usize, i64) {
    ((id >> OFFSET_BITS) as usize, id & ((1 << OFFSET_BITS) - 1))
}

struct Slot {
    tp: TopicPartition,
    offsets: PartitionOffsets,
    /// The next offset the consumer returns for this partition.
    next: i64,
    /// Where the partition started when assigned (a restore with no saved offset goes back
    /// here).
    start: i64,
    paused: bool,
    /// When the reader last sought back to a due retry that has not come yet.
    retry_seek: Option<Instant>,
}

pub(crate) struct Reader {
    config: Arc<KafkaSpoutConfig>,
    task: TaskInfo,
    consumer: BaseConsumer,
    slots: Vec<Slot>,
    retry: RetrySchedule,
    last_commit: Instant,
    metadata: String,
    batch: Vec<(usize, i64, Option<Values>)>,
}

/// The commit metadata Storm writes (`CommitMetadataManager`): which topology committed.
fn commit_metadata(task: &TaskInfo) -> String {
    serde_json::json!({
        "topologyId": task.topology_id,
        "taskId": task.task_id,
        "threadName": "heron-executor",
    })
    .to_string()
}

fn committed_by(metadata: Option<&str>, topology_id: &str) -> bool {
    metadata
        .and_then(|m| serde_json::from_str::<serde_json::Value>(m).ok())
        .and_then(|v| v.get("topologyId")?.as_str().map(|t| t == topology_id))
        .unwrap_or(false)
}

/// Where a partition starts: the pure rule of [`FirstPollOffsetStrategy`].
pub(crate) fn start_offset(
    strategy: FirstPollOffsetStrategy,
    committed: Option<i64>,
    ours: bool,
    low: i64,
    high: i64,
) -> i64 {
    use FirstPollOffsetStrategy as S;
    let resume = match strategy {
        S::Earliest | S::Latest => committed.filter(|_| ours),
        S::UncommittedEarliest | S::UncommittedLatest => committed,
    };
    match (resume, strategy) {
        (Some(c), _) => c.clamp(low, high),
        (None, S::Earliest | S::UncommittedEarliest) => low,
        (None, S::Latest | S::UncommittedLatest) => high,
    }
}

impl Reader {
    /// Connects, finds this task's partitions and where each starts, and assigns them.
    pub fn connect(
        config: Arc<KafkaSpoutConfig>,
        task: &TaskInfo,
        restored: Option<&BTreeMap<TopicPartition, i64>>,
    ) -> Result<Reader, KafkaError> {
        let mut cc = ClientConfig::new();
        cc.set("bootstrap.servers", &config.brokers)
            .set("group.id", &config.group_id)
            .set("client.id", format!("heron-kafka-spout-{}", task.task_id))
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("enable.partition.eof", "false");
        for (k, v) in &config.properties {
            cc.set(k, v);
        }
        let consumer: BaseConsumer = cc.create()?;
        let md = consumer.fetch_metadata(None, REQUEST_TIMEOUT)?;
        let mut all = Vec::new();
        for t in md.topics() {
            if config.topics.matches(t.name()) && !t.name().starts_with("__") {
                all.extend(
                    t.partitions()
                        .iter()
                        .map(|p| TopicPartition::new(t.name(), p.id())),
                );
            }
        }
        if let TopicFilter::Names(names) = &config.topics {
            for n in names {
                if !all.iter().any(|tp| &tp.topic == n) {
                    return Err(KafkaError::Config(format!(
                        "topic {n:?} does not exist on {}",
                        config.brokers
                    )));
                }
            }
        }
        let mine = assign_round_robin(&all, task.index, task.tasks);
        let mut tpl = TopicPartitionList::new();
        for tp in &mine {
            tpl.add_partition(&tp.topic, tp.partition);
        }
        let committed = if mine.is_empty() {
            TopicPartitionList::new()
        } else {
            consumer.committed_offsets(tpl, REQUEST_TIMEOUT)?
        };
        let mut slots = Vec::new();
        let mut assignment = TopicPartitionList::new();
        for tp in mine {
            let (low, high) =
                consumer.fetch_watermarks(&tp.topic, tp.partition, REQUEST_TIMEOUT)?;
            let (c, meta) = committed
                .find_partition(&tp.topic, tp.partition)
                .map(|e| match e.offset() {
                    Offset::Offset(o) if o >= 0 => (Some(o), Some(e.metadata().to_string())),
                    _ => (None, None),
                })
                .unwrap_or((None, None));
            let ours = committed_by(meta.as_deref(), &task.topology_id);
            let start = start_offset(config.first_poll, c, ours, low, high);
            let begin = restored.and_then(|r| r.get(&tp).copied()).unwrap_or(start);
            assignment.add_partition_offset(&tp.topic, tp.partition, Offset::Offset(begin))?;
            slots.push(Slot {
                offsets: PartitionOffsets::new(begin),
                next: begin,
                start,
                paused: false,
                retry_seek: None,
                tp,
            });
        }
        consumer.assign(&assignment)?;
        Ok(Reader {
            metadata: commit_metadata(task),
            retry: RetrySchedule::new(config.backoff),
            config,
            task: task.clone(),
            consumer,
            slots,
            last_commit: Instant::now(),
            batch: Vec::new(),
        })
    }

    pub fn assigned(&self) -> Vec<TopicPartition> {
        self.slots.iter().map(|s| s.tp.clone()).collect()
    }

    fn seek(&mut self, slot: usize, offset: i64) {
        let s = &mut self.slots[slot];
        if let Err(e) = self.consumer.seek(
            &s.tp.topic,
            s.tp.partition,
            Offset::Offset(offset),
            REQUEST_TIMEOUT,
        ) {
            tracing::warn!(partition = %s.tp, offset, "KafkaSpout: seek failed: {e}");
            return;
        }
        s.next = offset;
    }

    fn set_paused(&mut self, slot: usize, paused: bool) {
        let s = &mut self.slots[slot];
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition(&s.tp.topic, s.tp.partition);
        let r = if paused {
            self.consumer.pause(&tpl)
        } else {
            self.consumer.resume(&tpl)
        };
        match r {
            Ok(()) => s.paused = paused,
            Err(e) => tracing::warn!(partition = %s.tp, "KafkaSpout: pause/resume failed: {e}"),
        }
    }

    /// Polls what the consumer has and emits it; commits when the period is up.
    pub fn next_tuple(&mut self, collector: &mut SpoutOutputCollector, now: Instant) {
        let at_least_once = self.task.guarantee == ProcessingGuarantee::AtLeastOnce;
        if at_least_once {
            self.before_poll(now);
        }
        self.batch.clear();
        while self.batch.len() < self.config.max_per_call {
            let m = match self.consumer.poll(Duration::ZERO) {
                None => break,
                Some(Ok(m)) => m,
                Some(Err(e)) => {
                    tracing::warn!("KafkaSpout: poll: {e}");
                    break;
                }
            };
            // a task reads a few partitions: a scan, no key to allocate per record
            let Some(slot) = self
                .slots
                .iter()
                .position(|s| s.tp.partition == m.partition() && s.tp.topic == m.topic())
            else {
                continue;
            };
            let offset = m.offset();
            if self.slots[slot].paused {
                continue; // fetched before the pause; read again after it
            }
            self.slots[slot].next = offset + 1;
            if at_least_once {
                let s = &self.slots[slot];
                if s.offsets.is_done_or_in_flight(offset) {
                    if !self.retry.take_if_due((slot, offset), now) {
                        continue; // done, in flight, or a retry not due yet
                    }
                } else if s.offsets.uncommitted() >= self.config.max_uncommitted_offsets {
                    // too far ahead of the commits: read this record again later
                    self.seek(slot, offset);
                    self.set_paused(slot, true);
                    continue;
                }
            }
            let record = KafkaRecord {
                topic: m.topic(),
                partition: m.partition(),
                offset,
                key: m.key(),
                value: m.payload(),
                timestamp: m.timestamp().to_millis(),
            };
            let values = self.config.translator.translate(&record);
            if at_least_once {
                // counted at once, so max_uncommitted_offsets holds within this batch too
                self.slots[slot].offsets.emitted(offset);
            }
            self.batch.push((slot, offset, values));
        }
        if self.batch.is_empty() {
            if at_least_once {
                self.maybe_commit(now);
            }
            return;
        }
        if self.task.guarantee == ProcessingGuarantee::AtMostOnce && !self.commit_batch() {
            return;
        }
        let translator = self.config.translator.clone();
        let stream = translator.stream();
        for (slot, offset, values) in self.batch.drain(..) {
            match (self.task.guarantee, values) {
                (ProcessingGuarantee::AtLeastOnce, Some(v)) => {
                    collector.emit_stream(stream, v, Some(Value::Int(pack(slot, offset))));
                }
                // a record the translator skips counts as processed
                (ProcessingGuarantee::AtLeastOnce, None) => self.slots[slot].offsets.acked(offset),
                (_, Some(v)) => collector.emit_stream(stream, v, None),
                (_, None) => {}
            }
        }
        if at_least_once {
            self.maybe_commit(now);
        }
    }

    /// At least once: resume partitions with room again, and seek back to due retries.
    fn before_poll(&mut self, now: Instant) {
        for slot in 0..self.slots.len() {
            let due = self.retry.first_due(slot, now);
            let s = &self.slots[slot];
            if s.paused
                && (s.offsets.uncommitted() < self.config.max_uncommitted_offsets || due.is_some())
            {
                self.set_paused(slot, false);
            }
            if let Some(o) = due {
                // seek back to it; again if a second went by and it still did not come
                let stale = self.slots[slot]
                    .retry_seek
                    .is_some_and(|at| now.duration_since(at) >= RETRY_RESEEK);
                if o < self.slots[slot].next || stale {
                    tracing::info!(partition = %self.slots[slot].tp, offset = o, "KafkaSpout: reading again from a failed record");
                    self.seek(slot, o);
                    self.slots[slot].retry_seek = Some(now);
                }
            } else {
                self.slots[slot].retry_seek = None;
            }
        }
    }

    /// At most once: commits the batch's offsets before it is emitted. On failure nothing
    /// is emitted and the partitions are read again from the batch's first offsets.
    fn commit_batch(&mut self) -> bool {
        let mut first: BTreeMap<usize, i64> = BTreeMap::new();
        let mut last: BTreeMap<usize, i64> = BTreeMap::new();
        for (slot, offset, _) in &self.batch {
            first.entry(*slot).or_insert(*offset);
            last.insert(*slot, offset + 1);
        }
        let positions: Vec<(TopicPartition, i64)> = last
            .iter()
            .map(|(&slot, &o)| (self.slots[slot].tp.clone(), o))
            .collect();
        if self.send_commit(&positions, true) {
            return true;
        }
        self.batch.clear();
        for (slot, o) in first {
            self.seek(slot, o);
        }
        false
    }

    fn maybe_commit(&mut self, now: Instant) {
        if now.duration_since(self.last_commit) >= self.config.commit_period {
            self.last_commit = now;
            self.commit(false);
        }
    }

    /// At least once: commits every partition's acknowledged prefix.
    pub fn commit(&mut self, sync: bool) {
        if self.task.guarantee != ProcessingGuarantee::AtLeastOnce {
            return;
        }
        let points: Vec<(usize, i64)> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some((i, s.offsets.commit_point()?)))
            .collect();
        if points.is_empty() {
            return;
        }
        let positions: Vec<(TopicPartition, i64)> = points
            .iter()
            .map(|&(i, o)| (self.slots[i].tp.clone(), o))
            .collect();
        if self.send_commit(&positions, sync) {
            for (i, o) in points {
                self.slots[i].offsets.committed(o);
                self.retry.forget_below(i, o);
            }
        }
    }

    fn send_commit(&self, positions: &[(TopicPartition, i64)], sync: bool) -> bool {
        let mut tpl = TopicPartitionList::new();
        for (tp, o) in positions {
            if tpl
                .add_partition_offset(&tp.topic, tp.partition, Offset::Offset(*o))
                .is_err()
            {
                continue;
            }
            if let Some(mut e) = tpl.find_partition(&tp.topic, tp.partition) {
                e.set_metadata(self.metadata.clone());
            }
        }
        let mode = if sync {
            CommitMode::Sync
        } else {
            CommitMode::Async
        };
        match self.consumer.commit(&tpl, mode) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!("KafkaSpout: offset commit failed: {e}");
                false
            }
        }
    }

    /// Effectively once: commits the offsets of a globally consistent checkpoint, so that
    /// the group's progress can be watched (the checkpoint, not the broker, is the truth).
    pub fn commit_positions(&mut self, positions: &[(TopicPartition, i64)]) {
        self.send_commit(positions, false);
    }

    pub fn ack(&mut self, id: i64) {
        let (slot, offset) = unpack(id);
        if let Some(s) = self.slots.get_mut(slot) {
            s.offsets.acked(offset);
            self.retry.acked((slot, offset));
        }
    }

    pub fn fail(&mut self, id: i64, now: Instant) {
        let (slot, offset) = unpack(id);
        let Some(s) = self.slots.get_mut(slot) else {
            return;
        };
        if !s.offsets.is_done_or_in_flight(offset) || offset < s.offsets.committed_offset() {
            return;
        }
        if self.retry.failed((slot, offset), now) == Retry::GiveUp {
            tracing::warn!(partition = %s.tp, offset, "KafkaSpout: record failed too often, skipping it");
            s.offsets.acked(offset);
        }
    }

    /// Effectively once: the next offset of every partition (what a checkpoint saves).
    pub fn positions(&self) -> Vec<(TopicPartition, i64)> {
        self.slots.iter().map(|s| (s.tp.clone(), s.next)).collect()
    }

    /// Effectively once: back to a restored checkpoint's offsets (where it has none for a
    /// partition, to where that partition started).
    pub fn rewind(&mut self, restored: &BTreeMap<TopicPartition, i64>) {
        for slot in 0..self.slots.len() {
            let s = &self.slots[slot];
            let to = restored.get(&s.tp).copied().unwrap_or(s.start);
            self.slots[slot].offsets = PartitionOffsets::new(to);
            self.seek(slot, to);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use FirstPollOffsetStrategy as S;

    #[test]
    fn ids_round_trip() {
        for (slot, off) in [(0, 0), (3, 12345), (1000, (1 << 48) - 1)] {
            assert_eq!(unpack(pack(slot, off)), (slot, off));
        }
    }

    #[test]
    fn first_poll_strategies_follow_storm() {
        // no commit: earliest or latest
        assert_eq!(start_offset(S::Earliest, None, false, 5, 50), 5);
        assert_eq!(start_offset(S::Latest, None, false, 5, 50), 50);
        assert_eq!(start_offset(S::UncommittedEarliest, None, false, 5, 50), 5);
        assert_eq!(start_offset(S::UncommittedLatest, None, false, 5, 50), 50);
        // a commit by another topology: EARLIEST/LATEST ignore it, UNCOMMITTED_* resume
        assert_eq!(start_offset(S::Earliest, Some(20), false, 5, 50), 5);
        assert_eq!(start_offset(S::Latest, Some(20), false, 5, 50), 50);
        assert_eq!(
            start_offset(S::UncommittedEarliest, Some(20), false, 5, 50),
            20
        );
        assert_eq!(
            start_offset(S::UncommittedLatest, Some(20), false, 5, 50),
            20
        );
        // this topology's own commit: everyone resumes
        assert_eq!(start_offset(S::Earliest, Some(20), true, 5, 50), 20);
        assert_eq!(start_offset(S::Latest, Some(20), true, 5, 50), 20);
        // a commit below the log start (records deleted) starts at the log start
        assert_eq!(
            start_offset(S::UncommittedEarliest, Some(2), false, 5, 50),
            5
        );
    }

    #[test]
    fn commit_metadata_names_the_topology() {
        let t = TaskInfo {
            index: 0,
            tasks: 1,
            task_id: 3,
            topology_id: "wc-123".into(),
            guarantee: ProcessingGuarantee::AtLeastOnce,
        };
        let m = commit_metadata(&t);
        assert!(committed_by(Some(&m), "wc-123"));
        assert!(!committed_by(Some(&m), "other"));
        assert!(!committed_by(Some("not json"), "wc-123"));
        assert!(!committed_by(None, "wc-123"));
    }
}
