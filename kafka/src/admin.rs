//! Small admin helpers: create a topic, and watch a consumer group's progress.

use crate::KafkaError;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(10);

/// Creates `topic` with `partitions` partitions (replication 1); an existing topic is
/// left as it is.
///
/// # Errors
/// The brokers cannot be reached or refuse the topic.
pub fn create_topic(brokers: &str, topic: &str, partitions: i32) -> Result<(), KafkaError> {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()?;
    let new = NewTopic::new(topic, partitions, TopicReplication::Fixed(1));
    let opts = AdminOptions::new().operation_timeout(Some(TIMEOUT));
    let results = futures::executor::block_on(admin.create_topics([&new], &opts))?;
    for r in results {
        match r {
            Ok(_) => {}
            Err((_, rdkafka::types::RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((t, code)) => {
                return Err(KafkaError::Config(format!("creating topic {t}: {code}")))
            }
        }
    }
    Ok(())
}

/// Where a consumer group stands on one partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionProgress {
    /// The partition.
    pub partition: i32,
    /// The group's committed offset (where it resumes), if it committed one.
    pub committed: Option<i64>,
    /// The partition's first offset.
    pub low: i64,
    /// The partition's end (the offset the next record gets).
    pub high: i64,
}

impl PartitionProgress {
    /// Records between the committed offset (or the start) and the end.
    pub fn lag(&self) -> i64 {
        self.high - self.committed.unwrap_or(self.low).max(self.low)
    }
}

/// The committed offsets of `group` on every partition of `topic`, with each partition's
/// bounds.
///
/// # Errors
/// The brokers cannot be reached, or `topic` does not exist.
pub fn group_progress(
    brokers: &str,
    group: &str,
    topic: &str,
) -> Result<Vec<PartitionProgress>, KafkaError> {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()?;
    let md = c.fetch_metadata(Some(topic), TIMEOUT)?;
    let Some(t) = md
        .topics()
        .iter()
        .find(|t| t.name() == topic && !t.partitions().is_empty())
    else {
        return Err(KafkaError::Config(format!(
            "topic {topic:?} does not exist"
        )));
    };
    let mut tpl = TopicPartitionList::new();
    for p in t.partitions() {
        tpl.add_partition(topic, p.id());
    }
    let committed = c.committed_offsets(tpl, TIMEOUT)?;
    let mut out = Vec::new();
    for p in t.partitions() {
        let (low, high) = c.fetch_watermarks(topic, p.id(), TIMEOUT)?;
        let committed = committed
            .find_partition(topic, p.id())
            .and_then(|e| match e.offset() {
                Offset::Offset(o) if o >= 0 => Some(o),
                _ => None,
            });
        out.push(PartitionProgress {
            partition: p.id(),
            committed,
            low,
            high,
        });
    }
    out.sort_by_key(|p| p.partition);
    Ok(out)
}
