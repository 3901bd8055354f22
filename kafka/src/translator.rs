//! Records to tuples: Storm's `RecordTranslator`.

use heron_api::{Fields, Value, Values};
use std::sync::Arc;

/// One Kafka record as the spout read it.
#[derive(Clone, Copy, Debug)]
pub struct KafkaRecord<'a> {
    /// The topic.
    pub topic: &'a str,
    /// The partition.
    pub partition: i32,
    /// The record's offset in its partition.
    pub offset: i64,
    /// The key, if the record has one.
    pub key: Option<&'a [u8]>,
    /// The value, if the record has one (a tombstone has none).
    pub value: Option<&'a [u8]>,
    /// The record's timestamp (ms since the epoch), if it has one.
    pub timestamp: Option<i64>,
}

/// Turns records into tuples of one stream.
///
/// A record the translator returns `None` for is not emitted and counts as processed (Storm's
/// `emitNullTuples = false`).
pub trait RecordTranslator: Send + Sync {
    /// The fields of the tuples.
    fn fields(&self) -> Fields;
    /// The stream the tuples go to.
    fn stream(&self) -> &str {
        heron_api::DEFAULT_STREAM_ID
    }
    /// The tuple for `record`, or `None` to skip it.
    fn translate(&self, record: &KafkaRecord<'_>) -> Option<Values>;
}

/// Bytes as a string when they are UTF-8, as bytes otherwise; `Null` when absent.
fn text_or_bytes(b: Option<&[u8]>) -> Value {
    match b {
        None => Value::Null,
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) => Value::Str(s.to_string()),
            Err(_) => Value::Bytes(b.to_vec()),
        },
    }
}

/// Storm's `DefaultRecordTranslator`: fields `topic, partition, offset, key, value` on the
/// default stream; key and value are strings when they are UTF-8, bytes otherwise, null when
/// absent.
///
/// ```
/// use heron_kafka::{DefaultRecordTranslator, KafkaRecord, RecordTranslator};
/// use heron_api::Value;
///
/// let r = KafkaRecord { topic: "t", partition: 1, offset: 7, key: None,
///                       value: Some(b"hello"), timestamp: None };
/// let v = DefaultRecordTranslator.translate(&r).unwrap();
/// assert_eq!(v[2], Value::Int(7));
/// assert_eq!(v[4], Value::Str("hello".into()));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultRecordTranslator;

impl RecordTranslator for DefaultRecordTranslator {
    fn fields(&self) -> Fields {
        Fields::new(["topic", "partition", "offset", "key", "value"])
    }

    fn translate(&self, r: &KafkaRecord<'_>) -> Option<Values> {
        Some(vec![
            Value::Str(r.topic.to_string()),
            Value::Int(i64::from(r.partition)),
            Value::Int(r.offset),
            text_or_bytes(r.key),
            text_or_bytes(r.value),
        ])
    }
}

/// The function of a [`FnRecordTranslator`].
type TranslateFn = dyn Fn(&KafkaRecord<'_>) -> Option<Values> + Send + Sync;

/// A translator from a function and the fields it produces (Storm's
/// `SimpleRecordTranslator`).
///
/// ```
/// use heron_kafka::{FnRecordTranslator, KafkaRecord, RecordTranslator};
/// use heron_api::{Fields, Value};
///
/// let t = FnRecordTranslator::new(Fields::new(["sentence"]), |r: &KafkaRecord<'_>| {
///     Some(vec![Value::Str(String::from_utf8_lossy(r.value?).into_owned())])
/// });
/// let r = KafkaRecord { topic: "t", partition: 0, offset: 0, key: None,
///                       value: Some(b"a b"), timestamp: None };
/// assert_eq!(t.translate(&r).unwrap()[0], Value::Str("a b".into()));
/// ```
#[derive(Clone)]
pub struct FnRecordTranslator {
    fields: Fields,
    stream: String,
    f: Arc<TranslateFn>,
}

impl FnRecordTranslator {
    /// Tuples with `fields` on the default stream, made by `f`.
    pub fn new(
        fields: Fields,
        f: impl Fn(&KafkaRecord<'_>) -> Option<Values> + Send + Sync + 'static,
    ) -> FnRecordTranslator {
        FnRecordTranslator {
            fields,
            stream: heron_api::DEFAULT_STREAM_ID.to_string(),
            f: Arc::new(f),
        }
    }

    /// Emits on `stream` instead of the default stream.
    pub fn on_stream(mut self, stream: impl Into<String>) -> FnRecordTranslator {
        self.stream = stream.into();
        self
    }
}

impl RecordTranslator for FnRecordTranslator {
    fn fields(&self) -> Fields {
        self.fields.clone()
    }

    fn stream(&self) -> &str {
        &self.stream
    }

    fn translate(&self, record: &KafkaRecord<'_>) -> Option<Values> {
        (self.f)(record)
    }
}
