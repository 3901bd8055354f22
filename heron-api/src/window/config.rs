//! How a windowed bolt windows its input: Storm's `BaseWindowedBolt` options
//! (`withWindow`, `withTumblingWindow`, `withTimestampField`, `withLag`,
//! `withWatermarkInterval`, `withLateTupleStream`) plus session windows, checked against the
//! topology's reliability settings when the topology is built.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::count::Length;
use crate::{Config, Fields, Tuple};

/// Storm's component config keys, written for every windowed bolt (visible in the plan).
pub mod keys {
    /// Window length in tuples.
    pub const LENGTH_COUNT: &str = "topology.bolts.window.length.count";
    /// Window length in milliseconds.
    pub const LENGTH_DURATION_MS: &str = "topology.bolts.window.length.duration.ms";
    /// Slide in tuples.
    pub const SLIDE_COUNT: &str = "topology.bolts.window.sliding.interval.count";
    /// Slide in milliseconds.
    pub const SLIDE_DURATION_MS: &str = "topology.bolts.window.sliding.interval.duration.ms";
    /// The event-time field.
    pub const TIMESTAMP_FIELD: &str = "topology.bolts.tuple.timestamp.field.name";
    /// The allowed out-of-orderness (ms).
    pub const LAG_MS: &str = "topology.bolts.tuple.timestamp.max.lag.ms";
    /// How often a source emits watermarks (ms).
    pub const WATERMARK_INTERVAL_MS: &str = "topology.bolts.watermark.event.interval.ms";
    /// The stream late tuples go to.
    pub const LATE_TUPLE_STREAM: &str = "topology.bolts.late.tuple.stream";
    /// Session gap (ms): heron-rs only.
    pub const SESSION_GAP_MS: &str = "heron-rs.window.session.gap.ms";
    /// `true` when the bolt windows by event time: heron-rs only (an extractor has no field
    /// name to record).
    pub const EVENT_TIME: &str = "heron-rs.window.event.time";
}

/// A function giving a tuple's event time.
pub(crate) type Extractor = Arc<dyn Fn(&Tuple) -> Option<i64> + Send + Sync>;

/// Where a tuple's event time comes from.
#[derive(Clone)]
pub(crate) enum TimeSource {
    /// Arrival at the bolt (the default).
    Processing,
    /// An integer field, milliseconds since the epoch.
    Field(String),
    /// A function of the tuple.
    Extractor(Extractor),
}

/// The shape of the windows.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Shape {
    /// Sliding (tumbling when `slide == length`).
    Sliding { length: Length, slide: Length },
    /// Per key (the values of `key`), closed `gap` after the key's last tuple.
    Session { gap: Duration, key: Fields },
}

/// A windowed bolt's configuration (Storm's `BaseWindowedBolt` builders).
///
/// ```
/// use std::time::Duration;
/// use heron_api::window::{Length, WindowConfig};
///
/// // sliding: the last 10 s every 5 s, by the tuples' "ts" field, 2 s out of order allowed
/// let w = WindowConfig::sliding(Length::duration(Duration::from_secs(10)), Length::duration(Duration::from_secs(5)))
///     .with_timestamp_field("ts")
///     .with_lag(Duration::from_secs(2))
///     .with_late_tuple_stream("late", ["ts", "key", "value"]);
/// assert!(w.is_event_time());
/// // Storm's count windows (processing time): the last 100 tuples every 10
/// let c = WindowConfig::sliding(Length::count(100), Length::count(10));
/// assert!(!c.is_event_time());
/// ```
#[derive(Clone)]
pub struct WindowConfig {
    pub(crate) shape: Shape,
    pub(crate) time: TimeSource,
    pub(crate) lag: Duration,
    pub(crate) watermark_interval: Duration,
    pub(crate) late: Option<(String, Fields)>,
}

impl fmt::Debug for WindowConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let time = match &self.time {
            TimeSource::Processing => "processing time".to_owned(),
            TimeSource::Field(n) => format!("event time from field {n:?}"),
            TimeSource::Extractor(_) => "event time from an extractor".to_owned(),
        };
        f.debug_struct("WindowConfig")
            .field("shape", &self.shape)
            .field("time", &time)
            .field("lag", &self.lag)
            .field("late", &self.late)
            .finish()
    }
}

impl WindowConfig {
    fn with_shape(shape: Shape) -> WindowConfig {
        WindowConfig {
            shape,
            time: TimeSource::Processing,
            lag: Duration::ZERO,
            watermark_interval: Duration::from_secs(1),
            late: None,
        }
    }

    /// Windows of `length` every `slide` (Storm's `withWindow(length, slide)`; any mix of
    /// counts and durations).
    pub fn sliding(length: Length, slide: Length) -> WindowConfig {
        WindowConfig::with_shape(Shape::Sliding { length, slide })
    }

    /// Windows of `length` that slide by a tuple (Storm's `withWindow(length)`).
    pub fn sliding_every_tuple(length: Length) -> WindowConfig {
        WindowConfig::sliding(length, Length::Count(1))
    }

    /// Back-to-back windows of `length` (Storm's `withTumblingWindow`).
    pub fn tumbling(length: Length) -> WindowConfig {
        WindowConfig::sliding(length, length)
    }

    /// Session windows per value of `key`: a key's session closes `gap` after its last
    /// tuple; sessions that come within `gap` of each other merge.
    pub fn session(gap: Duration, key: impl Into<Fields>) -> WindowConfig {
        WindowConfig::with_shape(Shape::Session {
            gap,
            key: key.into(),
        })
    }

    /// Event time from the integer field `name` (milliseconds since the epoch).
    pub fn with_timestamp_field(mut self, name: &str) -> WindowConfig {
        self.time = TimeSource::Field(name.to_owned());
        self
    }

    /// Event time from `f` (`None`: the tuple has none, which is an error).
    pub fn with_timestamp_extractor(
        mut self,
        f: impl Fn(&Tuple) -> Option<i64> + Send + Sync + 'static,
    ) -> WindowConfig {
        self.time = TimeSource::Extractor(Arc::new(f));
        self
    }

    /// How far out of order event times may arrive (Storm's `withLag`): a source's
    /// watermark is the largest event time it has read minus this.
    pub fn with_lag(mut self, lag: Duration) -> WindowConfig {
        self.lag = lag;
        self
    }

    /// How often sources emit watermarks when they follow the clock (Storm's
    /// `withWatermarkInterval`, default 1 s).
    pub fn with_watermark_interval(mut self, every: Duration) -> WindowConfig {
        self.watermark_interval = every;
        self
    }

    /// Late tuples go to `stream` (declared by the bolt with `fields`, which must match the
    /// inputs' values) instead of being dropped and counted (Storm's `withLateTupleStream`).
    pub fn with_late_tuple_stream(
        mut self,
        stream: &str,
        fields: impl Into<Fields>,
    ) -> WindowConfig {
        self.late = Some((stream.to_owned(), fields.into()));
        self
    }

    /// Whether windows follow the tuples' event time.
    pub fn is_event_time(&self) -> bool {
        !matches!(self.time, TimeSource::Processing)
    }

    /// The length of back-to-back windows in processing time (tumbling, no event time), for
    /// runtimes that aggregate such windows incrementally; `None` for any other windows.
    ///
    /// ```
    /// use heron_api::window::{Length, WindowConfig};
    ///
    /// assert_eq!(WindowConfig::tumbling(Length::count(5)).tumbling_length(), Some(Length::count(5)));
    /// assert_eq!(WindowConfig::sliding(Length::count(5), Length::count(1)).tumbling_length(), None);
    /// ```
    pub fn tumbling_length(&self) -> Option<Length> {
        match &self.shape {
            Shape::Sliding { length, slide } if length == slide && !self.is_event_time() => {
                Some(*length)
            }
            _ => None,
        }
    }

    /// The lag in milliseconds.
    pub fn lag_ms(&self) -> i64 {
        ms(self.lag)
    }

    /// The component configuration Storm keeps for these settings.
    pub(crate) fn keys(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let mut put = |count_key, ms_key, l: Length| match l {
            Length::Count(n) => out.push((count_key, n.to_string())),
            Length::Duration(d) => out.push((ms_key, ms(d).to_string())),
        };
        match &self.shape {
            Shape::Sliding { length, slide } => {
                put(keys::LENGTH_COUNT, keys::LENGTH_DURATION_MS, *length);
                put(keys::SLIDE_COUNT, keys::SLIDE_DURATION_MS, *slide);
            }
            Shape::Session { gap, .. } => out.push((keys::SESSION_GAP_MS, ms(*gap).to_string())),
        }
        if let TimeSource::Field(f) = &self.time {
            out.push((keys::TIMESTAMP_FIELD, f.clone()));
        }
        if self.is_event_time() {
            out.push((keys::EVENT_TIME, "true".to_owned()));
            out.push((keys::LAG_MS, self.lag_ms().to_string()));
            out.push((
                keys::WATERMARK_INTERVAL_MS,
                ms(self.watermark_interval).to_string(),
            ));
        }
        if let Some((s, _)) = &self.late {
            out.push((keys::LATE_TUPLE_STREAM, s.clone()));
        }
        out
    }

    /// Why these windows cannot run in a topology configured with `topology` (checked when
    /// the topology is built): impossible sizes, event time over counts, and, in
    /// ATLEAST_ONCE, windows whose tuples cannot all be acked within
    /// `topology.message.timeout.secs` or fit in `topology.max.spout.pending` (Storm's
    /// checks).
    pub fn check(&self, topology: &Config) -> Result<(), String> {
        match &self.shape {
            Shape::Sliding { length, slide } => {
                for (what, l) in [("length", length), ("slide", slide)] {
                    match l {
                        Length::Count(0) => return Err(format!("a window {what} of 0 tuples")),
                        Length::Duration(d) if ms(*d) == 0 => {
                            return Err(format!("a window {what} under 1 ms"))
                        }
                        _ => {}
                    }
                }
                if let (Some(len), Some(sl)) = (length.as_ms(), slide.as_ms()) {
                    if sl > len {
                        return Err(format!(
                            "a slide of {sl} ms is longer than the window ({len} ms): \
                             windows with gaps between them are not supported"
                        ));
                    }
                }
                if self.is_event_time() && (length.as_ms().is_none() || slide.as_ms().is_none()) {
                    return Err(
                        "event-time windows are measured in time: a count length or \
                                slide works in processing time only"
                            .to_owned(),
                    );
                }
            }
            Shape::Session { gap, key } => {
                if ms(*gap) == 0 {
                    return Err("a session gap under 1 ms".to_owned());
                }
                if key.is_empty() {
                    return Err("session windows need at least one key field".to_owned());
                }
            }
        }
        // EFFECTIVELY_ONCE checkpoints the pending windows (see `snapshot`): no limit applies
        let mode = topology.reliability_mode();
        if !mode.is_acking() {
            return Ok(());
        }
        let (mut time_ms, mut count) = (0i64, 0u64);
        let mut add = |l: Length| match l {
            Length::Count(n) => count = count.saturating_add(n),
            Length::Duration(d) => time_ms = time_ms.saturating_add(ms(d)),
        };
        match &self.shape {
            Shape::Sliding { length, slide } => {
                add(*length);
                add(*slide);
            }
            Shape::Session { gap, .. } => add(Length::Duration(*gap)),
        }
        if self.is_event_time() {
            time_ms = time_ms.saturating_add(self.lag_ms());
        }
        let timeout_ms = i64::try_from(topology.message_timeout_secs())
            .unwrap_or(i64::MAX)
            .saturating_mul(1000);
        if topology.enable_message_timeouts() && time_ms > timeout_ms {
            return Err(format!(
                "in ATLEAST_ONCE a window's tuples are acked when they leave it: length + slide \
                 (+ lag) = {time_ms} ms is longer than topology.message.timeout.secs = {} s, so \
                 they would time out and be replayed",
                topology.message_timeout_secs()
            ));
        }
        let pending = topology.max_spout_pending();
        if pending > 0 && count > pending {
            return Err(format!(
                "in ATLEAST_ONCE a window's tuples are acked when they leave it: length + slide \
                 = {count} tuples is more than topology.max.spout.pending = {pending}, so the \
                 spouts would stop before a window fills"
            ));
        }
        Ok(())
    }
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
