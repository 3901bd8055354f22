//! The collectors user code emits through.

use crate::tuple::DEFAULT_STREAM_ID;
use crate::window::WATERMARK_STREAM_ID;
use crate::{Emitter, MessageId, Tuple, Value, Values};

/// What a spout emits through (Storm's `SpoutOutputCollector`).
///
/// Emitting on an undeclared stream, with the wrong number of values, or `emit` on a direct
/// stream (`emit_direct` on a non-direct one) panics.
///
/// ```
/// use heron_api::{values, Emitter, Fields, ReliabilityMode, SpoutOutputCollector, StreamDecl};
/// let streams = [
///     StreamDecl { id: "default".into(), fields: Fields::new(["n"]), direct: false },
///     StreamDecl { id: "odd".into(), fields: Fields::new(["n"]), direct: false },
/// ];
/// let mut emitter = Emitter::new("numbers", 1, ReliabilityMode::AtLeastOnce, &streams);
/// let mut c = SpoutOutputCollector::new(&mut emitter);
/// c.emit(values![1]);                   // unreliable
/// c.emit_with_id(values![2], 2);        // tracked until acked
/// c.emit_stream("odd", values![3], None);
/// assert_eq!(c.pending_count(), 1);
/// ```
pub struct SpoutOutputCollector<'a> {
    emitter: &'a mut Emitter,
}

impl<'a> SpoutOutputCollector<'a> {
    /// A collector writing to `emitter`.
    pub fn new(emitter: &'a mut Emitter) -> Self {
        SpoutOutputCollector { emitter }
    }

    /// Emits on the `default` stream without a message id (not tracked).
    pub fn emit(&mut self, values: Values) {
        self.emitter
            .emit_spout(DEFAULT_STREAM_ID, None, &values, None)
    }

    /// Emits on the `default` stream with a message id: `ack`/`fail` will be called with it.
    pub fn emit_with_id(&mut self, values: Values, msg_id: impl Into<MessageId>) {
        self.emitter
            .emit_spout(DEFAULT_STREAM_ID, None, &values, Some(msg_id.into()))
    }

    /// Emits on `stream`, with an optional message id.
    pub fn emit_stream(&mut self, stream: &str, values: Values, msg_id: Option<MessageId>) {
        self.emitter.emit_spout(stream, None, &values, msg_id)
    }

    /// Emits on direct `stream` to consumer task `task`, with an optional message id.
    pub fn emit_direct(
        &mut self,
        task: i32,
        stream: &str,
        values: Values,
        msg_id: Option<MessageId>,
    ) {
        self.emitter.emit_spout(stream, Some(task), &values, msg_id)
    }

    /// Sends the event-time watermark `ms` in-band to every downstream task: no tuple with
    /// an event time at or before it should follow (later ones are late). A no-op in a
    /// topology without event-time windows (see [`window`](crate::window)).
    pub fn emit_watermark(&mut self, ms: i64) {
        if self.emitter.declares(WATERMARK_STREAM_ID) {
            self.emitter
                .emit_spout(WATERMARK_STREAM_ID, None, &[Value::Int(ms)], None)
        }
    }

    /// Emits on non-direct `stream`, with an optional message id, *pinned* to `tasks`: the
    /// tuple carries `tasks` as its destination task ids.
    ///
    /// Pinned tasks steer the consumers that read `stream` with SHUFFLE, NONE or
    /// LOCAL_OR_SHUFFLE grouping: such a consumer delivers the tuple to those of `tasks` that
    /// are its own (any of them, local or not: LOCAL_OR_SHUFFLE loses its local preference),
    /// and only when none are does it pick one by its round robin. FIELDS, ALL and GLOBAL
    /// consumers ignore the pins and route as usual, and CUSTOM groupings still add their
    /// choice, so pass the tasks those groupings pick too (as `heron_multilang::task_ids`
    /// does) when `tasks` is meant to be the whole list of receivers. Acking is that of
    /// [`emit_stream`](Self::emit_stream).
    ///
    /// ```
    /// use heron_api::{values, Emitter, Fields, ReliabilityMode, SpoutOutputCollector, StreamDecl};
    /// let streams = [StreamDecl { id: "default".into(), fields: Fields::new(["n"]), direct: false }];
    /// let mut emitter = Emitter::new("numbers", 1, ReliabilityMode::AtLeastOnce, &streams);
    /// // a shuffled consumer with tasks 7 and 8: this tuple goes to task 8
    /// SpoutOutputCollector::new(&mut emitter).emit_pinned("default", values![1], Some(1.into()), &[8]);
    /// let sets = emitter.take_output();
    /// assert_eq!(sets[0].data.as_ref().unwrap().tuples[0].dest_task_ids, vec![8]);
    /// assert_eq!(emitter.in_flight(), 1, "tracked as any emit with a message id");
    /// ```
    ///
    /// # Panics
    /// On a direct stream (use [`emit_direct`](Self::emit_direct)), an undeclared stream or
    /// the wrong number of values.
    pub fn emit_pinned(
        &mut self,
        stream: &str,
        values: Values,
        msg_id: Option<MessageId>,
        tasks: &[i32],
    ) {
        self.emitter
            .emit_spout_pinned(stream, &values, msg_id, tasks)
    }

    /// Reports an error (logged by the runtime).
    pub fn report_error(&mut self, message: &str) {
        self.emitter.report_error(message)
    }

    /// The number of tuples in flight (not yet acked, failed or expired).
    pub fn pending_count(&self) -> usize {
        self.emitter.in_flight()
    }
}

/// What a bolt emits, acks and fails through (Storm's `OutputCollector`).
///
/// ```
/// use heron_api::{values, Emitter, Fields, OutputCollector, ReliabilityMode, StreamDecl, Tuple};
/// let streams = [StreamDecl { id: "default".into(), fields: Fields::new(["w"]), direct: false }];
/// let mut emitter = Emitter::new("split", 2, ReliabilityMode::AtLeastOnce, &streams);
/// let input = Tuple::new("spout", "default", 1, Fields::new(["line"]), values!["a b"]);
/// let mut c = OutputCollector::new(&mut emitter);
/// c.emit_anchored(&[&input], values!["a"]);
/// c.emit(values!["b"]); // unanchored
/// c.ack(&input);
/// assert_eq!(emitter.counters().emitted, 2);
/// assert_eq!(emitter.counters().acked, 1);
/// ```
pub struct OutputCollector<'a> {
    emitter: &'a mut Emitter,
}

impl<'a> OutputCollector<'a> {
    /// A collector writing to `emitter`.
    pub fn new(emitter: &'a mut Emitter) -> Self {
        OutputCollector { emitter }
    }

    pub(crate) fn emitter_mut(&mut self) -> &mut Emitter {
        self.emitter
    }

    /// Emits on the `default` stream, unanchored.
    pub fn emit(&mut self, values: Values) {
        self.emitter
            .emit_bolt(DEFAULT_STREAM_ID, None, &[], &values)
    }

    /// Emits on the `default` stream, anchored to `anchors`.
    pub fn emit_anchored(&mut self, anchors: &[&Tuple], values: Values) {
        self.emitter
            .emit_bolt(DEFAULT_STREAM_ID, None, anchors, &values)
    }

    /// Emits borrowed values on `stream`, anchored to `anchors` (empty: unanchored). The
    /// values are encoded before this returns, so a bolt can build each output tuple in a
    /// buffer it reuses and emit without allocating (see
    /// [`BasicOutputCollector::emit_ref`] for an example).
    #[inline]
    pub fn emit_ref(&mut self, stream: &str, anchors: &[&Tuple], values: &[Value]) {
        self.emitter.emit_bolt(stream, None, anchors, values)
    }

    /// Emits on `stream`, anchored to `anchors` (empty: unanchored).
    pub fn emit_stream(&mut self, stream: &str, anchors: &[&Tuple], values: Values) {
        self.emitter.emit_bolt(stream, None, anchors, &values)
    }

    /// Emits on direct `stream` to consumer task `task`, anchored to `anchors`.
    pub fn emit_direct(&mut self, task: i32, stream: &str, anchors: &[&Tuple], values: Values) {
        self.emitter.emit_bolt(stream, Some(task), anchors, &values)
    }

    /// [`emit_direct`](Self::emit_direct) with borrowed values, encoded before this returns
    /// (as [`emit_ref`](Self::emit_ref)).
    ///
    /// ```
    /// use heron_api::{Emitter, Fields, OutputCollector, ReliabilityMode, StreamDecl, Value};
    /// let streams = [StreamDecl { id: "to-count".into(), fields: Fields::new(["w"]), direct: true }];
    /// let mut emitter = Emitter::new("split", 2, ReliabilityMode::AtMostOnce, &streams);
    /// let word = [Value::from("a")];
    /// OutputCollector::new(&mut emitter).emit_direct_ref(7, "to-count", &[], &word);
    /// let sets = emitter.take_output();
    /// assert_eq!(sets[0].data.as_ref().unwrap().tuples[0].dest_task_ids, vec![7]);
    /// ```
    #[inline]
    pub fn emit_direct_ref(
        &mut self,
        task: i32,
        stream: &str,
        anchors: &[&Tuple],
        values: &[Value],
    ) {
        self.emitter.emit_bolt(stream, Some(task), anchors, values)
    }

    /// Emits on non-direct `stream`, anchored to `anchors` (empty: unanchored), *pinned* to
    /// `tasks`: the tuple carries `tasks` as its destination task ids.
    ///
    /// Pinned tasks steer the consumers that read `stream` with SHUFFLE, NONE or
    /// LOCAL_OR_SHUFFLE grouping: such a consumer delivers the tuple to those of `tasks` that
    /// are its own (any of them, local or not: LOCAL_OR_SHUFFLE loses its local preference),
    /// and only when none are does it pick one by its round robin. FIELDS, ALL and GLOBAL
    /// consumers ignore the pins and route as usual, and CUSTOM groupings still add their
    /// choice, so pass the tasks those groupings pick too (as `heron_multilang::task_ids`
    /// does) when `tasks` is meant to be the whole list of receivers. Anchoring and acking
    /// are those of [`emit_stream`](Self::emit_stream).
    ///
    /// ```
    /// use heron_api::{values, Emitter, Fields, OutputCollector, ReliabilityMode, StreamDecl, Tuple};
    /// let streams = [StreamDecl { id: "default".into(), fields: Fields::new(["w"]), direct: false }];
    /// let mut emitter = Emitter::new("split", 2, ReliabilityMode::AtLeastOnce, &streams);
    /// let input = Tuple::new("spout", "default", 1, Fields::new(["line"]), values!["a"]);
    /// // a shuffled consumer with tasks 10 and 11: this tuple goes to task 11
    /// OutputCollector::new(&mut emitter).emit_pinned("default", &[&input], values!["a"], &[11]);
    /// let sets = emitter.take_output();
    /// assert_eq!(sets[0].data.as_ref().unwrap().tuples[0].dest_task_ids, vec![11]);
    /// ```
    ///
    /// # Panics
    /// On a direct stream (use [`emit_direct`](Self::emit_direct)), an undeclared stream or
    /// the wrong number of values.
    pub fn emit_pinned(&mut self, stream: &str, anchors: &[&Tuple], values: Values, tasks: &[i32]) {
        self.emitter
            .emit_bolt_pinned(stream, anchors, &values, tasks)
    }

    /// Sends the event-time watermark `ms` in-band to every downstream task, unanchored (the
    /// runtime does this for every bolt; see [`window`](crate::window)). A no-op when the
    /// component has no watermark stream.
    pub fn emit_watermark(&mut self, ms: i64) {
        if self.emitter.declares(WATERMARK_STREAM_ID) {
            self.emitter
                .emit_bolt(WATERMARK_STREAM_ID, None, &[], &[Value::Int(ms)])
        }
    }

    /// Acks an input tuple.
    pub fn ack(&mut self, input: &Tuple) {
        self.emitter.ack(input)
    }

    /// Fails an input tuple: its spout's `fail` is called.
    pub fn fail(&mut self, input: &Tuple) {
        self.emitter.fail(input)
    }

    /// Reports an error (logged by the runtime).
    pub fn report_error(&mut self, message: &str) {
        self.emitter.report_error(message)
    }
}

/// What a [`BasicBolt`](crate::BasicBolt) emits through: every emit is anchored to the input.
///
/// ```
/// use heron_api::{values, BasicOutputCollector, Emitter, Fields, ReliabilityMode, StreamDecl, Tuple};
/// let streams = [StreamDecl { id: "default".into(), fields: Fields::new(["w"]), direct: false }];
/// let mut emitter = Emitter::new("upper", 2, ReliabilityMode::AtMostOnce, &streams);
/// let input = Tuple::new("spout", "default", 1, Fields::new(["w"]), values!["a"]);
/// BasicOutputCollector::new(&mut emitter, &input).emit(values!["A"]);
/// assert_eq!(emitter.counters().emitted, 1);
/// ```
pub struct BasicOutputCollector<'a> {
    emitter: &'a mut Emitter,
    input: &'a Tuple,
}

impl<'a> BasicOutputCollector<'a> {
    /// A collector writing to `emitter`, anchoring to `input`.
    pub fn new(emitter: &'a mut Emitter, input: &'a Tuple) -> Self {
        BasicOutputCollector { emitter, input }
    }

    /// Emits on the `default` stream, anchored to the input.
    pub fn emit(&mut self, values: Values) {
        self.emitter
            .emit_bolt(DEFAULT_STREAM_ID, None, &[self.input], &values)
    }

    /// Emits borrowed values on `stream`, anchored to the input. The values are encoded
    /// before this returns, so an output buffer can be reused from one emit to the next:
    /// no allocation per emitted tuple.
    ///
    /// ```
    /// use heron_api::{values, BasicOutputCollector, Emitter, Fields, ReliabilityMode, StreamDecl, Tuple, Value};
    /// let streams = [StreamDecl { id: "default".into(), fields: Fields::new(["w"]), direct: false }];
    /// let mut emitter = Emitter::new("split", 2, ReliabilityMode::AtMostOnce, &streams);
    /// let input = Tuple::new("spout", "default", 1, Fields::new(["line"]), values!["a b c"]);
    /// let mut out = vec![Value::Str(String::new())];
    /// let mut c = BasicOutputCollector::new(&mut emitter, &input);
    /// for word in input.get_str(0).unwrap().split(' ') {
    ///     if let Value::Str(s) = &mut out[0] {
    ///         s.clear();
    ///         s.push_str(word);
    ///     }
    ///     c.emit_ref("default", &out);
    /// }
    /// assert_eq!(emitter.counters().emitted, 3);
    /// ```
    #[inline]
    pub fn emit_ref(&mut self, stream: &str, values: &[Value]) {
        self.emitter.emit_bolt(stream, None, &[self.input], values)
    }

    /// Emits on `stream`, anchored to the input.
    pub fn emit_stream(&mut self, stream: &str, values: Values) {
        self.emitter.emit_bolt(stream, None, &[self.input], &values)
    }

    /// Emits on direct `stream` to consumer task `task`, anchored to the input.
    pub fn emit_direct(&mut self, task: i32, stream: &str, values: Values) {
        self.emitter
            .emit_bolt(stream, Some(task), &[self.input], &values)
    }

    /// Reports an error (logged by the runtime).
    pub fn report_error(&mut self, message: &str) {
        self.emitter.report_error(message)
    }
}
