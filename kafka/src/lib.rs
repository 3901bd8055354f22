//! heron-kafka: Kafka in and out for heron-rs topologies.
//!
//! * [`KafkaSpout`] (Storm's `storm-kafka-client` KafkaSpout, with manual partition
//!   assignment): topics or a topic pattern; partitions spread over the spout's tasks
//!   ([`assign_round_robin`]), each read by exactly one task and reassigned when the
//!   parallelism changes; a [`RecordTranslator`] to tuples (default fields
//!   `topic, partition, offset, key, value`); Storm's [`FirstPollOffsetStrategy`]; and the
//!   [`ProcessingGuarantee`]s: at most once (commit before emit), at least once (a record's
//!   offset is committed when it and every offset before it were acknowledged, failed
//!   records retried with [`Backoff`], `max_uncommitted_offsets` bounding how far ahead a
//!   partition is read) and effectively once (offsets are checkpointed state; commits to the
//!   broker follow consistent checkpoints, for monitoring).
//! * [`KafkaBolt`]: one record per tuple (key and value from fields, a fixed or per-tuple
//!   topic); a tuple is acked when the broker acknowledged its record, failed otherwise. In
//!   an effectively-once topology its output is checkpoint-aligned ([`HeldOutput`]).
//!
//! The client is librdkafka (the `rdkafka` crate, built from its bundled source), so only a
//! topology that uses this crate builds it.
//!
//! ```no_run
//! use heron_api::{Config, Fields, ReliabilityMode, TopologyBuilder};
//! use heron_kafka::{KafkaBolt, KafkaBoltConfig, KafkaSpout, KafkaSpoutConfig, TopicSelector};
//!
//! let spout = KafkaSpoutConfig::builder("127.0.0.1:9092", ["in"]).group_id("copy").build()?;
//! let bolt = KafkaBoltConfig::builder("127.0.0.1:9092", TopicSelector::Fixed("out".into()))
//!     .value_field("value")
//!     .build()?;
//! let mut builder = TopologyBuilder::new();
//! builder.set_spout("kafka-spout", move || KafkaSpout::new(spout.clone()), 2);
//! builder
//!     .set_bolt("kafka-bolt", move || KafkaBolt::new(bolt.clone()), 2)
//!     .shuffle_grouping("kafka-spout");
//! let mut conf = Config::new();
//! conf.set_reliability_mode(ReliabilityMode::AtLeastOnce);
//! let topology = builder.build("copy", conf)?;
//! # drop(topology);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod admin;
mod assign;
mod bolt;
mod config;
mod held;
mod offsets;
mod reader;
mod retry;
mod spout;
mod translator;

pub use admin::{create_topic, group_progress, PartitionProgress};
pub use assign::{assign_round_robin, TopicPartition};
pub use bolt::{KafkaBolt, KafkaBoltConfig, KafkaBoltConfigBuilder, TopicSelector};
pub use config::{
    FirstPollOffsetStrategy, KafkaSpoutConfig, KafkaSpoutConfigBuilder, ProcessingGuarantee,
    TopicFilter,
};
pub use held::{HeldOutput, HeldRecord, Released, HELD_STATE_PREFIX, SINK_ID_HEADER};
pub use offsets::PartitionOffsets;
pub use retry::{Backoff, RecordKey, Retry, RetrySchedule};
pub use spout::{KafkaSpout, OFFSET_STATE_PREFIX};
pub use translator::{DefaultRecordTranslator, FnRecordTranslator, KafkaRecord, RecordTranslator};

/// What can go wrong configuring or talking to Kafka.
#[derive(Debug, thiserror::Error)]
pub enum KafkaError {
    /// An option is missing or wrong; the message names it.
    #[error("{0}")]
    Config(String),
    /// The client or a broker refused a request.
    #[error("kafka: {0}")]
    Client(#[from] rdkafka::error::KafkaError),
}
