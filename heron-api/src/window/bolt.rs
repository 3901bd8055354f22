//! [`WindowedBolt`] and the adapter that runs it as an ordinary [`Bolt`]: it holds input
//! tuples in the window machinery, fires windows on the watermark (event time) or the clock
//! (processing time), anchors what the window emits to the window's tuples, and acks tuples
//! when they leave every window (Storm's `WindowedBoltExecutor`).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::aligned::{AlignedWindows, Inserted, Span};
use super::config::{Shape, TimeSource, WindowConfig};
use super::count::{CountWindows, Length};
use super::session::SessionWindows;
use super::watermark::WATERMARK_STREAM_ID;
use crate::{
    Bolt, Fields, OutputCollector, OutputFieldsDeclarer, Stateful, TopologyContext, Tuple, Values,
};

mod checkpoint;

/// A bolt that processes windows of tuples instead of single tuples (Storm's
/// `IWindowedBolt`). Add it with [`TopologyBuilder::set_windowed_bolt`](crate::TopologyBuilder::set_windowed_bolt).
///
/// ```
/// use std::time::Duration;
/// use heron_api::window::{Length, Window, WindowCollector, WindowConfig, WindowedBolt};
/// use heron_api::{values, Config, Fields, OutputFieldsDeclarer, TopologyBuilder};
/// # use heron_api::{Spout, SpoutOutputCollector};
/// # struct Numbers;
/// # impl Spout for Numbers {
/// #     fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) { d.declare(Fields::new(["n"])); }
/// #     fn next_tuple(&mut self, c: &mut SpoutOutputCollector) { c.emit(values![1i64]); }
/// # }
///
/// /// The sum of each 10-tuple window, every 5 tuples.
/// struct Sum;
/// impl WindowedBolt for Sum {
///     fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
///         d.declare(Fields::new(["sum"]));
///     }
///     fn execute(&mut self, w: &Window<'_>, c: &mut WindowCollector<'_, '_>) {
///         let sum: i64 = w.tuples().iter().filter_map(|t| t.get_i64(0)).sum();
///         c.emit(values![sum]);
///     }
/// }
///
/// let mut b = TopologyBuilder::new();
/// b.set_spout("numbers", || Numbers, 1);
/// b.set_windowed_bolt("sum", || Sum, WindowConfig::sliding(Length::count(10), Length::count(5)), 1)
///     .shuffle_grouping("numbers");
/// assert!(b.build("sums", Config::new()).is_ok());
/// ```
pub trait WindowedBolt: Send {
    /// Declares the output streams (the late-tuple stream, if any, is declared for you).
    fn declare_output_fields(&self, _d: &mut OutputFieldsDeclarer) {}

    /// Called once in the task's process before any window.
    fn prepare(&mut self, _ctx: &TopologyContext) {}

    /// Processes one window. Emits through `collector` are anchored to the window's tuples.
    fn execute(&mut self, window: &Window<'_>, collector: &mut WindowCollector<'_, '_>);

    /// Called when the task stops (not guaranteed on kill -9).
    fn cleanup(&mut self) {}

    /// In `EFFECTIVELY_ONCE`, state of the bolt's own beside its pending windows (which the
    /// runtime checkpoints whatever this returns): `Some(self)` to have it checkpointed too.
    /// Its keys may not be [`WINDOW_STATE_KEY`](super::WINDOW_STATE_KEY).
    fn stateful(&mut self) -> Option<&mut dyn Stateful> {
        None
    }
}

impl<B: WindowedBolt + ?Sized> WindowedBolt for Box<B> {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        (**self).declare_output_fields(d)
    }
    fn prepare(&mut self, ctx: &TopologyContext) {
        (**self).prepare(ctx)
    }
    fn execute(&mut self, window: &Window<'_>, collector: &mut WindowCollector<'_, '_>) {
        (**self).execute(window, collector)
    }
    fn cleanup(&mut self) {
        (**self).cleanup()
    }
    fn stateful(&mut self) -> Option<&mut dyn Stateful> {
        (**self).stateful()
    }
}

/// One window of tuples (Storm's `TupleWindow`).
#[derive(Debug)]
pub struct Window<'w> {
    tuples: &'w [&'w Tuple],
    new: &'w [&'w Tuple],
    expired: &'w [Tuple],
    span: Option<Span>,
}

impl<'w> Window<'w> {
    /// Every tuple in the window (timestamp order in event time, arrival order otherwise).
    pub fn tuples(&self) -> &'w [&'w Tuple] {
        self.tuples
    }

    /// The tuples that were not in the previous window.
    pub fn new_tuples(&self) -> &'w [&'w Tuple] {
        self.new
    }

    /// The tuples that left since the previous window.
    pub fn expired_tuples(&self) -> &'w [Tuple] {
        self.expired
    }

    /// The window's first millisecond (event or processing time, since the epoch), for
    /// windows measured in time.
    pub fn start_ms(&self) -> Option<i64> {
        self.span.map(|s| s.start)
    }

    /// The first millisecond after the window.
    pub fn end_ms(&self) -> Option<i64> {
        self.span.map(|s| s.end)
    }
}

/// Emits for a window: anchored to every tuple in it (Storm's windowed output collector).
pub struct WindowCollector<'c, 'e> {
    out: &'c mut OutputCollector<'e>,
    anchors: &'c [&'c Tuple],
}

impl WindowCollector<'_, '_> {
    /// Emits `values` on the default stream, anchored to the window's tuples.
    pub fn emit(&mut self, values: Values) {
        self.out.emit_anchored(self.anchors, values);
    }

    /// Emits `values` on `stream`, anchored to the window's tuples.
    pub fn emit_stream(&mut self, stream: &str, values: Values) {
        self.out.emit_stream(stream, self.anchors, values);
    }

    /// Emits `values` on the default stream anchored to `tuples` only (say, the window's
    /// tuples of one key), not to the whole window.
    pub fn emit_anchored_to(&mut self, tuples: &[&Tuple], values: Values) {
        self.out.emit_anchored(tuples, values);
    }

    /// Emits `values` on `stream` anchored to `tuples` only.
    pub fn emit_stream_anchored_to(&mut self, stream: &str, tuples: &[&Tuple], values: Values) {
        self.out.emit_stream(stream, tuples, values);
    }

    /// Emits `values` on direct `stream` to consumer task `task`, anchored to `tuples` only.
    pub fn emit_direct_anchored_to(
        &mut self,
        task: i32,
        stream: &str,
        tuples: &[&Tuple],
        values: Values,
    ) {
        self.out.emit_direct(task, stream, tuples, values);
    }

    /// Emits `values` on `stream` with no anchor (its loss replays nothing).
    pub fn emit_unanchored(&mut self, stream: &str, values: Values) {
        self.out.emit_stream(stream, &[], values);
    }

    /// Reports an error (shown by the tracker).
    pub fn report_error(&mut self, message: &str) {
        self.out.report_error(message);
    }
}

enum Machine {
    Count(CountWindows<Tuple>),
    Aligned(AlignedWindows<Tuple>),
    Session {
        windows: SessionWindows<String, Tuple>,
        key: Fields,
    },
}

impl Machine {
    /// Empty windows as `config` says.
    fn new(config: &WindowConfig) -> Machine {
        match &config.shape {
            Shape::Sliding { length, slide } => match (length.as_ms(), slide.as_ms()) {
                (Some(len), Some(sl)) => Machine::Aligned(AlignedWindows::new(len, sl)),
                _ => Machine::Count(CountWindows::new(*length, *slide)),
            },
            Shape::Session { gap, key } => Machine::Session {
                windows: SessionWindows::new(session_gap_ms(*gap)),
                key: key.clone(),
            },
        }
    }
}

fn session_gap_ms(gap: Duration) -> i64 {
    Length::Duration(gap).as_ms().unwrap_or(1).max(1)
}

/// Runs a [`WindowedBolt`] as a [`Bolt`] ([`TopologyBuilder::set_windowed_bolt`](crate::TopologyBuilder::set_windowed_bolt) uses it).
pub struct WindowedBoltAdapter<B> {
    bolt: B,
    config: WindowConfig,
    machine: Option<Machine>,
    /// Tuples acked since the last window fired: its successor's expired tuples.
    expired: Vec<Tuple>,
    /// Processing time: the epoch milliseconds at `clock_base`.
    clock_base: (Instant, i64),
    late_dropped: u64,
    /// Processing time: wakes the runtime for a poll when a first tuple needs a timer.
    waker: Option<crate::AsyncWaker>,
    timer_set: bool,
}

impl<B: WindowedBolt> WindowedBoltAdapter<B> {
    /// `bolt` windowed as `config` says.
    pub fn new(bolt: B, config: WindowConfig) -> Self {
        let epoch_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        WindowedBoltAdapter {
            bolt,
            config,
            machine: None,
            expired: Vec::new(),
            clock_base: (Instant::now(), epoch_ms),
            late_dropped: 0,
            waker: None,
            timer_set: false,
        }
    }

    /// Late tuples dropped because no late-tuple stream is configured.
    pub fn late_dropped(&self) -> u64 {
        self.late_dropped
    }

    fn now_ms(&self, now: Instant) -> i64 {
        let (at, ms) = self.clock_base;
        let since = now.saturating_duration_since(at).as_millis();
        ms.saturating_add(i64::try_from(since).unwrap_or(i64::MAX))
    }

    fn late(&mut self, t: Tuple, c: &mut OutputCollector) {
        match &self.config.late {
            Some((stream, _)) => c.emit_stream(stream, &[&t], t.values().to_vec()),
            None => {
                self.late_dropped = self.late_dropped.saturating_add(1);
                tracing::info!(
                    source = t.source_component(),
                    dropped = self.late_dropped,
                    "a late tuple: every window it belongs to has closed; dropped"
                );
            }
        }
        c.ack(&t);
    }

    /// Fires whatever is due at `now_ms` (the watermark in event time, the clock otherwise).
    fn fire_due(&mut self, now_ms: i64, c: &mut OutputCollector) {
        let Self {
            bolt,
            machine,
            expired,
            ..
        } = self;
        match machine {
            Some(Machine::Count(w)) => {
                let due = w.next_timer().is_some_and(|t| t <= now_ms);
                if due {
                    fire_count(bolt, w, now_ms, c);
                }
            }
            Some(Machine::Aligned(w)) => loop {
                let due = w.next_due(now_ms);
                for t in w.take_expired() {
                    c.ack(&t);
                    expired.push(t);
                }
                let Some(span) = due else { break };
                let gone = std::mem::take(expired);
                let fired = w.fire(span);
                let window = Window {
                    tuples: &fired.items,
                    new: &fired.new,
                    expired: &gone,
                    span: Some(span),
                };
                bolt.execute(
                    &window,
                    &mut WindowCollector {
                        out: c,
                        anchors: &fired.items,
                    },
                );
            },
            Some(Machine::Session { windows, .. }) => {
                while let Some((_, span, items)) = windows.next_due(now_ms) {
                    let refs: Vec<&Tuple> = items.iter().collect();
                    let window = Window {
                        tuples: &refs,
                        new: &refs,
                        expired: &[],
                        span: Some(span),
                    };
                    bolt.execute(
                        &window,
                        &mut WindowCollector {
                            out: c,
                            anchors: &refs,
                        },
                    );
                    for t in &items {
                        c.ack(t);
                    }
                }
            }
            None => {}
        }
    }

    /// When the clock next has something to fire (processing time only).
    fn next_deadline(&self, now: Instant) -> Option<Instant> {
        if self.config.is_event_time() {
            return None;
        }
        let at_ms = match self.machine.as_ref()? {
            Machine::Count(w) => w.next_timer()?,
            Machine::Aligned(w) => w.next_end()?,
            Machine::Session { windows, .. } => windows.next_end()?,
        };
        let wait = at_ms.saturating_sub(self.now_ms(now)).max(0);
        // a deadline past what an Instant holds is as good as a day away (asked again then)
        let wait = Duration::from_millis(u64::try_from(wait).unwrap_or(u64::MAX));
        Some(
            now.checked_add(wait)
                .unwrap_or(now + Duration::from_secs(86_400)),
        )
    }
}

fn fire_count<B: WindowedBolt>(
    bolt: &mut B,
    w: &mut CountWindows<Tuple>,
    now_ms: i64,
    c: &mut OutputCollector,
) {
    let fired = w.fire(now_ms);
    if !fired.items.is_empty() || !fired.expired.is_empty() {
        let window = Window {
            tuples: &fired.items,
            new: &fired.new,
            expired: &fired.expired,
            span: None,
        };
        bolt.execute(
            &window,
            &mut WindowCollector {
                out: c,
                anchors: &fired.items,
            },
        );
    }
    for t in &fired.expired {
        c.ack(t);
    }
}

impl<B: WindowedBolt> Bolt for WindowedBoltAdapter<B> {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        self.bolt.declare_output_fields(d);
        if let Some((stream, fields)) = &self.config.late {
            d.declare_stream(stream, fields.clone());
        }
    }

    fn prepare(&mut self, ctx: &TopologyContext) {
        // a restore before prepare has set the machine already
        if self.machine.is_none() {
            self.machine = Some(Machine::new(&self.config));
        }
        self.waker = ctx.async_waker().cloned();
        self.bolt.prepare(ctx);
    }

    fn execute(&mut self, input: &Tuple, c: &mut OutputCollector) {
        if input.source_stream() == WATERMARK_STREAM_ID {
            return; // the runtime turns these into on_watermark calls
        }
        // the clock only where it decides: processing time, and count windows' arrival times
        let clocked =
            !self.config.is_event_time() || matches!(self.machine, Some(Machine::Count(_)));
        let now_ms = if clocked {
            self.now_ms(Instant::now())
        } else {
            0
        };
        let ts = match &self.config.time {
            TimeSource::Processing => Some(now_ms),
            TimeSource::Field(f) => input.get_i64_by_field(f),
            TimeSource::Extractor(e) => e(input),
        };
        let Some(ts) = ts else {
            let why = match &self.config.time {
                TimeSource::Field(f) => format!("no integer field {f:?}"),
                _ => "no timestamp from the extractor".to_owned(),
            };
            c.report_error(&format!(
                "a tuple from {} stream {} has no event time ({why}): failed",
                input.source_component(),
                input.source_stream(),
            ));
            c.fail(input);
            return;
        };
        let held = input.clone();
        let late = match &mut self.machine {
            Some(Machine::Count(w)) => {
                if w.insert(now_ms, held) {
                    fire_count(&mut self.bolt, w, now_ms, c);
                }
                None
            }
            Some(Machine::Aligned(w)) => match w.insert(ts, held) {
                Inserted::Held => None,
                Inserted::Late(t) => Some(t),
            },
            Some(Machine::Session { windows, key }) => {
                let k = session_key(input, key);
                match windows.insert(k, ts, held) {
                    Inserted::Held => None,
                    Inserted::Late(t) => Some(t),
                }
            }
            None => {
                c.report_error("windowed bolt executed before prepare");
                c.fail(input);
                None
            }
        };
        if let Some(t) = late {
            self.late(t, c);
        }
        if !self.config.is_event_time() && !self.timer_set {
            // a timer may be due now: the runtime polls soon and learns when
            if let Some(w) = &self.waker {
                w.wake();
                self.timer_set = true;
            }
        }
    }

    fn on_watermark(&mut self, watermark: i64, c: &mut OutputCollector) {
        if self.config.is_event_time() {
            self.fire_due(watermark, c);
        }
    }

    fn has_async_output(&self) -> bool {
        // processing time needs the clock, except where a count slide fires the windows
        let count_slide = matches!(
            self.config.shape,
            Shape::Sliding {
                slide: Length::Count(_),
                ..
            }
        );
        !self.config.is_event_time() && !count_slide
    }

    fn poll_async(&mut self, c: &mut OutputCollector, now: Instant) -> Option<Instant> {
        if !self.config.is_event_time() {
            let now_ms = self.now_ms(now);
            self.fire_due(now_ms, c);
        }
        let next = self.next_deadline(now);
        self.timer_set = next.is_some();
        next
    }

    fn cleanup(&mut self) {
        self.bolt.cleanup();
    }

    fn stateful(&mut self) -> Option<&mut dyn Stateful> {
        Some(self)
    }
}

/// A session key: the key fields' values, typed (so `1` and `"1"` differ).
fn session_key(t: &Tuple, key: &Fields) -> String {
    let mut k = String::new();
    for f in key.iter() {
        k.push_str(&format!("{:?}\u{1f}", t.get_by_field(f)));
    }
    k
}
