//! The KafkaSpout's options: Storm's `KafkaSpoutConfig`, checked when built.

use crate::{Backoff, DefaultRecordTranslator, KafkaError, RecordTranslator};
use std::sync::Arc;
use std::time::Duration;

/// Where a task starts reading a partition when it is first assigned (Storm's
/// `FirstPollOffsetStrategy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FirstPollOffsetStrategy {
    /// The beginning of the partition, unless this topology committed an offset (then there).
    Earliest,
    /// The end of the partition, unless this topology committed an offset (then there).
    Latest,
    /// The group's committed offset, else the beginning (Storm's default).
    #[default]
    UncommittedEarliest,
    /// The group's committed offset, else the end.
    UncommittedLatest,
}

impl std::str::FromStr for FirstPollOffsetStrategy {
    type Err = KafkaError;
    fn from_str(s: &str) -> Result<Self, KafkaError> {
        Ok(match s.to_ascii_uppercase().as_str() {
            "EARLIEST" => FirstPollOffsetStrategy::Earliest,
            "LATEST" => FirstPollOffsetStrategy::Latest,
            "UNCOMMITTED_EARLIEST" => FirstPollOffsetStrategy::UncommittedEarliest,
            "UNCOMMITTED_LATEST" => FirstPollOffsetStrategy::UncommittedLatest,
            _ => {
                return Err(KafkaError::Config(format!(
                    "unknown first-poll offset strategy {s:?} (EARLIEST, LATEST, \
                     UNCOMMITTED_EARLIEST or UNCOMMITTED_LATEST)"
                )))
            }
        })
    }
}

/// When the spout commits a record's offset (Storm's `ProcessingGuarantee`, with Heron's
/// effectively-once).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessingGuarantee {
    /// Offsets are committed before their records are emitted; nothing is retried. Needs an
    /// `ATMOST_ONCE` topology.
    AtMostOnce,
    /// A record's offset is committed once it and every record before it in its partition
    /// were acknowledged; failed records are emitted again after a backoff. Needs an
    /// `ATLEAST_ONCE` topology.
    AtLeastOnce,
    /// The read offsets are the spout's checkpointed state; commits to the broker follow
    /// globally consistent checkpoints, for monitoring only. Needs an `EFFECTIVELY_ONCE`
    /// topology.
    EffectivelyOnce,
}

/// Which topics the spout reads.
#[derive(Clone, Debug)]
pub enum TopicFilter {
    /// These topics.
    Names(Vec<String>),
    /// Every topic whose whole name matches this regular expression.
    Pattern(regex::Regex),
}

impl TopicFilter {
    /// `true` when the spout reads `topic`.
    pub fn matches(&self, topic: &str) -> bool {
        match self {
            TopicFilter::Names(n) => n.iter().any(|t| t == topic),
            TopicFilter::Pattern(p) => p.is_match(topic),
        }
    }
}

/// The KafkaSpout's options; see [`KafkaSpoutConfig::builder`].
#[derive(Clone)]
pub struct KafkaSpoutConfig {
    pub(crate) brokers: String,
    pub(crate) topics: TopicFilter,
    pub(crate) group_id: String,
    pub(crate) first_poll: FirstPollOffsetStrategy,
    pub(crate) guarantee: Option<ProcessingGuarantee>,
    pub(crate) max_uncommitted_offsets: usize,
    pub(crate) backoff: Backoff,
    pub(crate) commit_period: Duration,
    pub(crate) max_per_call: usize,
    pub(crate) translator: Arc<dyn RecordTranslator>,
    pub(crate) properties: Vec<(String, String)>,
}

impl std::fmt::Debug for KafkaSpoutConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaSpoutConfig")
            .field("brokers", &self.brokers)
            .field("topics", &self.topics)
            .field("group_id", &self.group_id)
            .field("first_poll", &self.first_poll)
            .field("guarantee", &self.guarantee)
            .field("max_uncommitted_offsets", &self.max_uncommitted_offsets)
            .field("commit_period", &self.commit_period)
            .finish_non_exhaustive()
    }
}

impl KafkaSpoutConfig {
    /// Options for reading `topics` from the brokers `brokers` (`host:port[,host:port…]`),
    /// with Storm's defaults: group `heron-kafka-spout`, `UNCOMMITTED_EARLIEST`, the
    /// guarantee of the topology's reliability mode, at most 10 000 000 uncommitted offsets
    /// per partition, a commit every 30 s, Storm's retry backoff and
    /// [`DefaultRecordTranslator`].
    ///
    /// ```
    /// use heron_kafka::{FirstPollOffsetStrategy, KafkaSpoutConfig, ProcessingGuarantee};
    /// use std::time::Duration;
    ///
    /// let conf = KafkaSpoutConfig::builder("127.0.0.1:9092", ["sentences"])
    ///     .group_id("word-count")
    ///     .first_poll(FirstPollOffsetStrategy::Earliest)
    ///     .guarantee(ProcessingGuarantee::AtLeastOnce)
    ///     .commit_period(Duration::from_secs(2))
    ///     .build()
    ///     .unwrap();
    /// # drop(conf);
    /// assert!(KafkaSpoutConfig::builder("", ["t"]).build().is_err());
    /// ```
    pub fn builder<S: Into<String>>(
        brokers: impl Into<String>,
        topics: impl IntoIterator<Item = S>,
    ) -> KafkaSpoutConfigBuilder {
        KafkaSpoutConfigBuilder::new(
            brokers.into(),
            Topics::Names(topics.into_iter().map(Into::into).collect()),
        )
    }

    /// Options for reading every topic whose name matches the regular expression `pattern`
    /// (the whole name), found when the task starts.
    pub fn builder_pattern(
        brokers: impl Into<String>,
        pattern: impl Into<String>,
    ) -> KafkaSpoutConfigBuilder {
        KafkaSpoutConfigBuilder::new(brokers.into(), Topics::Pattern(pattern.into()))
    }

    /// The consumer group the offsets are committed under.
    pub fn group_id(&self) -> &str {
        &self.group_id
    }
}

enum Topics {
    Names(Vec<String>),
    Pattern(String),
}

/// Builds a [`KafkaSpoutConfig`]; [`build`](Self::build) checks it.
pub struct KafkaSpoutConfigBuilder {
    brokers: String,
    topics: Topics,
    conf: KafkaSpoutConfig,
}

impl KafkaSpoutConfigBuilder {
    fn new(brokers: String, topics: Topics) -> KafkaSpoutConfigBuilder {
        KafkaSpoutConfigBuilder {
            brokers: brokers.clone(),
            topics,
            conf: KafkaSpoutConfig {
                brokers,
                topics: TopicFilter::Names(Vec::new()),
                group_id: "heron-kafka-spout".into(),
                first_poll: FirstPollOffsetStrategy::default(),
                guarantee: None,
                max_uncommitted_offsets: 10_000_000,
                backoff: Backoff::default(),
                commit_period: Duration::from_secs(30),
                max_per_call: 64,
                translator: Arc::new(DefaultRecordTranslator),
                properties: Vec::new(),
            },
        }
    }

    /// The consumer group offsets are committed under (Kafka's `group.id`).
    pub fn group_id(mut self, group: impl Into<String>) -> Self {
        self.conf.group_id = group.into();
        self
    }

    /// Where a partition is first read from.
    pub fn first_poll(mut self, s: FirstPollOffsetStrategy) -> Self {
        self.conf.first_poll = s;
        self
    }

    /// The processing guarantee; by default the topology's reliability mode decides
    /// (`ATMOST_ONCE` → at most once, and so on). One that does not fit the topology's mode
    /// is refused when the spout opens.
    pub fn guarantee(mut self, g: ProcessingGuarantee) -> Self {
        self.conf.guarantee = Some(g);
        self
    }

    /// Per partition, how many emitted offsets may wait for their commit before the spout
    /// stops reading that partition (at-least-once only).
    pub fn max_uncommitted_offsets(mut self, n: usize) -> Self {
        self.conf.max_uncommitted_offsets = n;
        self
    }

    /// The retry backoff for failed records (at-least-once only).
    pub fn retry(mut self, b: Backoff) -> Self {
        self.conf.backoff = b;
        self
    }

    /// How often acknowledged offsets are committed (Storm's `offsetCommitPeriodMs`).
    pub fn commit_period(mut self, d: Duration) -> Self {
        self.conf.commit_period = d;
        self
    }

    /// At most this many records emitted per `next_tuple` call.
    pub fn max_per_call(mut self, n: usize) -> Self {
        self.conf.max_per_call = n;
        self
    }

    /// How records become tuples.
    pub fn translator(mut self, t: impl RecordTranslator + 'static) -> Self {
        self.conf.translator = Arc::new(t);
        self
    }

    /// A librdkafka consumer property (`fetch.min.bytes`, `security.protocol`, …).
    /// `enable.auto.commit`, `group.id` and `bootstrap.servers` are the spout's own and are
    /// refused.
    pub fn property(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.conf.properties.push((key.into(), value.into()));
        self
    }

    /// The checked options.
    ///
    /// # Errors
    /// [`KafkaError::Config`] naming the option: no brokers, no topics, a bad pattern, a
    /// zero limit, or a property the spout sets itself.
    pub fn build(self) -> Result<KafkaSpoutConfig, KafkaError> {
        let mut c = self.conf;
        let bad = |m: String| Err(KafkaError::Config(m));
        if self.brokers.trim().is_empty() {
            return bad("KafkaSpout: no brokers given (host:port[,host:port…])".into());
        }
        c.topics = match self.topics {
            Topics::Names(n) if n.is_empty() || n.iter().any(|t| t.trim().is_empty()) => {
                return bad(format!(
                    "KafkaSpout: topics must be non-empty names, got {n:?}"
                ))
            }
            Topics::Names(n) => TopicFilter::Names(n),
            Topics::Pattern(p) => match regex::Regex::new(&format!("^(?:{p})$")) {
                Ok(r) => TopicFilter::Pattern(r),
                Err(e) => return bad(format!("KafkaSpout: topic pattern {p:?}: {e}")),
            },
        };
        if c.group_id.trim().is_empty() {
            return bad("KafkaSpout: the group id is empty".into());
        }
        if c.max_uncommitted_offsets == 0 || c.max_per_call == 0 {
            return bad("KafkaSpout: max_uncommitted_offsets and max_per_call must be ≥ 1".into());
        }
        if c.commit_period.is_zero() {
            return bad("KafkaSpout: the commit period must be longer than 0".into());
        }
        for (k, _) in &c.properties {
            if matches!(
                k.as_str(),
                "enable.auto.commit"
                    | "group.id"
                    | "bootstrap.servers"
                    | "enable.auto.offset.store"
            ) {
                return bad(format!(
                    "KafkaSpout: property {k:?} is set by the spout itself (commits follow \
                     the processing guarantee; use group_id and the brokers argument)"
                ));
            }
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_it_cannot_honour() {
        let err = |b: KafkaSpoutConfigBuilder| b.build().unwrap_err().to_string();
        assert!(err(KafkaSpoutConfig::builder("b:1", Vec::<String>::new())).contains("topics"));
        assert!(err(KafkaSpoutConfig::builder_pattern("b:1", "(")).contains("pattern"));
        assert!(
            err(KafkaSpoutConfig::builder("b:1", ["t"]).property("enable.auto.commit", "true"))
                .contains("enable.auto.commit")
        );
        assert!(
            err(KafkaSpoutConfig::builder("b:1", ["t"]).max_uncommitted_offsets(0))
                .contains("max_uncommitted")
        );
        assert!(err(KafkaSpoutConfig::builder("b:1", ["t"]).group_id(" ")).contains("group"));
    }

    #[test]
    fn a_pattern_matches_whole_names() {
        let c = KafkaSpoutConfig::builder_pattern("b:1", "logs-[0-9]+")
            .build()
            .unwrap();
        assert!(c.topics.matches("logs-12"));
        assert!(!c.topics.matches("xlogs-12"));
        assert!(!c.topics.matches("logs-12x"));
    }

    #[test]
    fn strategies_parse_by_storms_names() {
        assert_eq!(
            "uncommitted_latest"
                .parse::<FirstPollOffsetStrategy>()
                .unwrap(),
            FirstPollOffsetStrategy::UncommittedLatest
        );
        assert!("TIMESTAMP".parse::<FirstPollOffsetStrategy>().is_err());
    }
}
