//! The KafkaBolt: writes tuples as records.

use crate::held::{HeldOutput, HeldRecord, Released, SINK_ID_HEADER};
use crate::KafkaError;
use heron_api::{
    AsyncWaker, Bolt, OutputCollector, ReliabilityMode, State, Stateful, TopologyContext, Tuple,
    TwoPhaseStateful, Value,
};
use rdkafka::config::ClientConfig;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::ClientContext;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Which topic a tuple goes to (Storm's `KafkaTopicSelector`).
#[derive(Clone, Debug)]
pub enum TopicSelector {
    /// Always this topic (`DefaultTopicSelector`).
    Fixed(String),
    /// The topic named by this string field of the tuple (`FieldNameTopicSelector`); a tuple
    /// without it is logged, skipped and acknowledged, as in Storm.
    Field(String),
}

/// The KafkaBolt's options; see [`KafkaBoltConfig::builder`].
#[derive(Clone, Debug)]
pub struct KafkaBoltConfig {
    brokers: String,
    topic: TopicSelector,
    key_field: Option<String>,
    value_field: String,
    fire_and_forget: bool,
    properties: Vec<(String, String)>,
}

impl KafkaBoltConfig {
    /// Writes to `topic` on `brokers`, with Storm's `FieldNameBasedTupleToKafkaMapper`
    /// defaults (the key from field `key`, the value from field `message`; a missing field
    /// gives no key or no value), 5 ms linger, the idempotent producer, and a tuple acked when
    /// the broker acknowledged its record.
    ///
    /// ```
    /// use heron_kafka::{KafkaBoltConfig, TopicSelector};
    ///
    /// let conf = KafkaBoltConfig::builder("127.0.0.1:9092", TopicSelector::Fixed("counts".into()))
    ///     .key_field("word")
    ///     .value_field("count")
    ///     .property("linger.ms", "20")
    ///     .build()
    ///     .unwrap();
    /// # drop(conf);
    /// ```
    pub fn builder(brokers: impl Into<String>, topic: TopicSelector) -> KafkaBoltConfigBuilder {
        KafkaBoltConfigBuilder(KafkaBoltConfig {
            brokers: brokers.into(),
            topic,
            key_field: Some("key".into()),
            value_field: "message".into(),
            fire_and_forget: false,
            properties: Vec::new(),
        })
    }
}

/// Builds a [`KafkaBoltConfig`].
pub struct KafkaBoltConfigBuilder(KafkaBoltConfig);

impl KafkaBoltConfigBuilder {
    /// The field the record key comes from.
    pub fn key_field(mut self, f: impl Into<String>) -> Self {
        self.0.key_field = Some(f.into());
        self
    }

    /// Records get no key.
    pub fn no_key(mut self) -> Self {
        self.0.key_field = None;
        self
    }

    /// The field the record value comes from.
    pub fn value_field(mut self, f: impl Into<String>) -> Self {
        self.0.value_field = f.into();
        self
    }

    /// Acknowledge a tuple as soon as its record is handed to the producer (Storm's
    /// `setFireAndForget(true)`), not when the broker acknowledged it.
    pub fn fire_and_forget(mut self, yes: bool) -> Self {
        self.0.fire_and_forget = yes;
        self
    }

    /// A librdkafka producer property: `linger.ms`, `batch.num.messages`, `batch.size`,
    /// `compression.type`, `acks`, …
    pub fn property(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.0.properties.push((key.into(), value.into()));
        self
    }

    /// The checked options.
    ///
    /// # Errors
    /// [`KafkaError::Config`]: no brokers, an empty topic or field name.
    pub fn build(self) -> Result<KafkaBoltConfig, KafkaError> {
        let c = self.0;
        let bad = |m: &str| Err(KafkaError::Config(format!("KafkaBolt: {m}")));
        if c.brokers.trim().is_empty() {
            return bad("no brokers given (host:port[,host:port…])");
        }
        match &c.topic {
            TopicSelector::Fixed(t) | TopicSelector::Field(t) if t.trim().is_empty() => {
                return bad("the topic (or topic field) is empty")
            }
            _ => {}
        }
        if c.value_field.is_empty() || c.key_field.as_deref() == Some("") {
            return bad("a key or value field name is empty");
        }
        Ok(c)
    }
}

/// A value as record bytes: strings and bytes as they are (borrowed), numbers and booleans
/// in decimal text, null as absent.
fn value_bytes(v: Option<&Value>) -> Option<Cow<'_, [u8]>> {
    match v? {
        Value::Null => None,
        Value::Str(s) => Some(Cow::Borrowed(s.as_bytes())),
        Value::Bytes(b) => Some(Cow::Borrowed(b)),
        other => Some(Cow::Owned(other.to_string().into_bytes())),
    }
}

/// A record's parts, borrowed from the tuple (or a held record) they come from.
struct RecordRef<'a> {
    topic: &'a str,
    key: Option<Cow<'a, [u8]>>,
    value: Option<Cow<'a, [u8]>>,
}

impl RecordRef<'_> {
    fn to_held(&self) -> HeldRecord {
        HeldRecord {
            topic: self.topic.to_string(),
            key: self.key.as_deref().map(<[u8]>::to_vec),
            value: self.value.as_deref().map(<[u8]>::to_vec),
        }
    }
}

impl<'a> From<&'a HeldRecord> for RecordRef<'a> {
    fn from(r: &'a HeldRecord) -> RecordRef<'a> {
        RecordRef {
            topic: &r.topic,
            key: r.key.as_deref().map(Cow::Borrowed),
            value: r.value.as_deref().map(Cow::Borrowed),
        }
    }
}

/// Delivery reports from the producer's thread, for the executor.
#[derive(Default)]
struct Deliveries {
    done: Mutex<Vec<(usize, Result<(), String>)>>,
    waker: OnceLock<AsyncWaker>,
}

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, id: usize) {
        let r = result.as_ref().map(|_| ()).map_err(|(e, _)| e.to_string());
        self.done
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((id, r));
        if let Some(w) = self.waker.get() {
            w.wake();
        }
    }
}

/// What a record in flight was for.
enum Pending {
    /// A tuple to ack or fail.
    Tuple(Tuple),
    /// An effectively-once record: sent again until delivered.
    Released(Released),
}

/// A bolt that writes each tuple as a Kafka record (Storm's `KafkaBolt`).
///
/// In `ATLEAST_ONCE` a tuple is acked when the broker acknowledged its record and failed when
/// the record could not be delivered. In `EFFECTIVELY_ONCE` the output is aligned with
/// checkpoints ([`HeldOutput`]): records are held until the checkpoint covering them is
/// globally consistent, then produced with the idempotent producer, each with a
/// `heron-sink-id` header that a restore reproduces exactly.
///
/// ```no_run
/// use heron_api::TopologyBuilder;
/// use heron_kafka::{KafkaBolt, KafkaBoltConfig, TopicSelector};
///
/// let conf = KafkaBoltConfig::builder("127.0.0.1:9092", TopicSelector::Fixed("counts".into()))
///     .key_field("word")
///     .value_field("count")
///     .build()
///     .unwrap();
/// let mut builder = TopologyBuilder::new();
/// builder.set_bolt("kafka-bolt", move || KafkaBolt::new(conf.clone()), 2);
/// ```
pub struct KafkaBolt {
    config: KafkaBoltConfig,
    producer: Option<ThreadedProducer<Deliveries>>,
    in_flight: HashMap<usize, Pending>,
    next_id: usize,
    mode: ReliabilityMode,
    held: HeldOutput,
    /// Effectively once: released records the producer's queue did not take yet.
    backlog: Vec<Released>,
    failed_to_start: Option<String>,
}

impl KafkaBolt {
    /// A bolt with these options.
    pub fn new(config: KafkaBoltConfig) -> KafkaBolt {
        KafkaBolt {
            config,
            producer: None,
            in_flight: HashMap::new(),
            next_id: 0,
            mode: ReliabilityMode::AtMostOnce,
            held: HeldOutput::new(0),
            backlog: Vec::new(),
            failed_to_start: None,
        }
    }

    fn record_of<'a>(&'a self, t: &'a Tuple) -> Option<RecordRef<'a>> {
        let topic = match &self.config.topic {
            TopicSelector::Fixed(t) => t.as_str(),
            TopicSelector::Field(f) => t.get_str_by_field(f)?,
        };
        let key = self
            .config
            .key_field
            .as_deref()
            .and_then(|f| value_bytes(t.get_by_field(f)));
        let value = value_bytes(t.get_by_field(&self.config.value_field));
        Some(RecordRef { topic, key, value })
    }

    /// Hands a record to the producer under delivery id `id`; `false` when its queue is
    /// full (or it is not running).
    fn send(
        producer: Option<&ThreadedProducer<Deliveries>>,
        id: usize,
        r: &RecordRef<'_>,
        sink_id: Option<&str>,
    ) -> bool {
        let Some(p) = producer else {
            return false;
        };
        let mut rec = BaseRecord::with_opaque_to(r.topic, id);
        if let Some(k) = &r.key {
            rec = rec.key(k.as_ref());
        }
        if let Some(v) = &r.value {
            rec = rec.payload(v.as_ref());
        }
        if let Some(s) = sink_id {
            rec = rec.headers(OwnedHeaders::new().insert(Header {
                key: SINK_ID_HEADER,
                value: Some(s),
            }));
        }
        match p.send(rec) {
            Ok(()) => true,
            Err((e, _)) => {
                tracing::debug!("KafkaBolt: producer refused a record: {e}");
                false
            }
        }
    }

    /// Records `pending` as in flight under the id just used.
    fn sent(&mut self, pending: Pending) {
        self.in_flight.insert(self.next_id, pending);
        self.next_id = self.next_id.wrapping_add(1);
    }

    /// Effectively once: sends released records, keeping what the queue does not take.
    fn send_released(&mut self, mut released: Vec<Released>) {
        released.append(&mut self.backlog);
        for r in released {
            let rec = RecordRef::from(&r.record);
            if Self::send(self.producer.as_ref(), self.next_id, &rec, Some(&r.sink_id)) {
                self.sent(Pending::Released(r));
            } else {
                self.backlog.push(r);
            }
        }
    }
}

impl Bolt for KafkaBolt {
    fn prepare(&mut self, ctx: &TopologyContext) {
        self.mode = ctx.config().reliability_mode();
        self.held = HeldOutput::new(ctx.task_id());
        let deliveries = Deliveries::default();
        if let Some(w) = ctx.async_waker() {
            let _ = deliveries.waker.set(w.clone());
        }
        let mut cc = ClientConfig::new();
        cc.set("bootstrap.servers", &self.config.brokers)
            .set("client.id", format!("heron-kafka-bolt-{}", ctx.task_id()))
            .set("enable.idempotence", "true")
            .set("linger.ms", "5");
        for (k, v) in &self.config.properties {
            cc.set(k, v);
        }
        match cc.create_with_context(deliveries) {
            Ok(p) => self.producer = Some(p),
            Err(e) => {
                let msg = format!("KafkaBolt cannot create its producer: {e}");
                tracing::error!("{msg}");
                self.failed_to_start = Some(msg);
            }
        }
    }

    fn execute(&mut self, input: &Tuple, collector: &mut OutputCollector) {
        if input.is_tick_tuple() {
            return;
        }
        if let Some(msg) = self.failed_to_start.take() {
            collector.report_error(&msg);
        }
        let Some(record) = self.record_of(input) else {
            tracing::warn!("KafkaBolt: tuple has no topic field, skipping it");
            collector.ack(input);
            return;
        };
        if self.mode == ReliabilityMode::EffectivelyOnce {
            let held = record.to_held();
            self.held.hold(held);
            return;
        }
        if !Self::send(self.producer.as_ref(), self.next_id, &record, None) {
            collector.fail(input);
            return;
        }
        self.sent(Pending::Tuple(input.without_values()));
        if self.config.fire_and_forget {
            collector.ack(input);
        }
    }

    fn has_async_output(&self) -> bool {
        true
    }

    fn poll_async(&mut self, collector: &mut OutputCollector, now: Instant) -> Option<Instant> {
        let done = match &self.producer {
            Some(p) => {
                std::mem::take(&mut *p.context().done.lock().unwrap_or_else(|e| e.into_inner()))
            }
            None => Vec::new(),
        };
        let mut resend = Vec::new();
        for (id, result) in done {
            match (self.in_flight.remove(&id), result) {
                (Some(Pending::Tuple(t)), Ok(())) if !self.config.fire_and_forget => {
                    collector.ack(&t)
                }
                (Some(Pending::Tuple(t)), Err(e)) if !self.config.fire_and_forget => {
                    tracing::warn!("KafkaBolt: record not delivered, failing its tuple: {e}");
                    collector.fail(&t);
                }
                (Some(Pending::Released(r)), Err(e)) => {
                    tracing::warn!(
                        sink_id = r.sink_id,
                        "KafkaBolt: record not delivered, sending it again: {e}"
                    );
                    resend.push(r);
                }
                _ => {}
            }
        }
        if !resend.is_empty() || !self.backlog.is_empty() {
            self.send_released(resend);
        }
        // a timer only while something waits for the queue; deliveries wake the task
        (!self.backlog.is_empty()).then(|| now + Duration::from_millis(10))
    }

    fn cleanup(&mut self) {
        if let Some(p) = &self.producer {
            let _ = p.flush(Duration::from_secs(5));
        }
    }

    fn stateful(&mut self) -> Option<&mut dyn Stateful> {
        Some(self)
    }
}

impl Stateful for KafkaBolt {
    fn init_state(&mut self, state: &State) {
        let again = self.held.restore(state);
        self.send_released(again);
    }

    fn pre_save(&mut self, checkpoint_id: &str, state: &mut State) {
        self.held.checkpoint(checkpoint_id, state);
    }

    fn two_phase(&mut self) -> Option<&mut dyn TwoPhaseStateful> {
        Some(self)
    }
}

impl TwoPhaseStateful for KafkaBolt {
    fn post_save(&mut self, checkpoint_id: &str) {
        let out = self.held.consistent(checkpoint_id);
        self.send_released(out);
    }

    fn pre_restore(&mut self, _checkpoint_id: &str) {
        self.held.rolled_back();
        self.backlog.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_become_record_bytes() {
        fn value_bytes(v: Option<&Value>) -> Option<Vec<u8>> {
            super::value_bytes(v).map(Cow::into_owned)
        }
        assert_eq!(value_bytes(Some(&Value::Int(42))), Some(b"42".to_vec()));
        assert_eq!(
            value_bytes(Some(&Value::Str("w".into()))),
            Some(b"w".to_vec())
        );
        assert_eq!(
            value_bytes(Some(&Value::Bytes(vec![0, 1]))),
            Some(vec![0, 1])
        );
        assert_eq!(value_bytes(Some(&Value::Null)), None);
        assert_eq!(value_bytes(None), None);
    }

    #[test]
    fn bad_options_are_refused() {
        let b = |t: TopicSelector| KafkaBoltConfig::builder("b:1", t);
        assert!(b(TopicSelector::Fixed("".into())).build().is_err());
        assert!(b(TopicSelector::Field("t".into()))
            .value_field("")
            .build()
            .is_err());
        assert!(
            KafkaBoltConfig::builder(" ", TopicSelector::Fixed("t".into()))
                .build()
                .is_err()
        );
        assert!(b(TopicSelector::Fixed("t".into())).build().is_ok());
    }
}
