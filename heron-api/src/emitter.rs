//! The runtime-facing side of the collectors: validates emits, encodes tuples, tracks
//! spout tuples in flight and accumulates the outgoing batch.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use heron_proto::codec::HeronCodec;
use heron_proto::system::HeronTupleSet;
use heron_proto::tuple::{ControlKind, ControlTuples};

use in_flight::{InFlight, KeyRng};

use crate::{
    CustomStreamGrouping, GroupingKind, HeronTopology, MessageId, ReliabilityMode, StreamDecl,
    TopologyContext, Tuple, Value,
};

/// A data tuple set is closed when it holds this many tuples (Heron's
/// `heron.instance.set.data.tuple.capacity`).
pub const DATA_SET_MAX_TUPLES: usize = 10_240;
/// A data tuple set is closed when its values reach about this many bytes.
pub const DATA_SET_MAX_BYTES: usize = 1 << 20;
/// A control set is closed when it holds this many acks and fails.
pub const CONTROL_SET_MAX_TUPLES: usize = 1024;
/// The largest encoded tuple an instance accepts (a frame is at most 10 MiB).
pub const MAX_TUPLE_BYTES: usize = 9 << 20;
/// Rough size of one encoded ack or fail.
const CONTROL_TUPLE_BYTES: usize = 24;

/// Cumulative counters of one task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EmitterCounters {
    /// Tuples emitted.
    pub emitted: u64,
    /// Tuples executed (bolts; the runtime counts them).
    pub executed: u64,
    /// Tuples acked: a bolt's `ack` calls, or a spout's `ack` callbacks.
    pub acked: u64,
    /// Tuples failed: a bolt's `fail` calls, or a spout's `fail` callbacks (timeouts included).
    pub failed: u64,
}

struct OutStream {
    decl: StreamDecl,
    /// The encoded `stream` field of this stream's data sets.
    stream_field: Vec<u8>,
    custom: Vec<Box<dyn CustomStreamGrouping>>,
    /// The task of each tuple, when the stream's one consumer groups it by fields or
    /// shuffles it.
    route: Option<dest_sets::Route>,
    /// Spout trees rooted on this stream: acks, fails, complete latencies.
    tally: StreamTally,
    /// Tuples emitted on this stream (Heron's `__emit-count/<stream>`). Their sum is also
    /// kept as `counters.emitted`, which the spout loop reads twice per `next_tuple`.
    emitted: u64,
}

/// Where an emitted tuple goes: by the consumers' groupings (and custom groupings' choice),
/// to one task of a direct stream, or pinned to tasks on a non-direct stream.
#[derive(Clone, Copy)]
enum Dest<'a> {
    Grouped,
    Direct(i32),
    Pinned(&'a [i32]),
}

impl From<Option<i32>> for Dest<'_> {
    #[inline]
    fn from(direct: Option<i32>) -> Self {
        direct.map_or(Dest::Grouped, Dest::Direct)
    }
}

/// Accumulates one task's output. The instance owns one per task; collectors are thin
/// `&mut Emitter` wrappers made for each call into user code.
///
/// Emits are validated (declared stream, one value per field, `emit_direct` only on direct
/// streams); misuse panics with a message naming the component and stream, as Storm's
/// exceptions do. Output is a list of `HeronTupleSet`s: one per run of same-stream data
/// tuples (bounded in size; without acking, on a direct stream or one whose one consumer
/// groups it by fields or shuffles it, one per destination task of the run, naming that task
/// so the stream manager forwards the set whole), then one with the acks and fails.
///
/// ```
/// use heron_api::{values, Emitter, Fields, ReliabilityMode, SpoutOutputCollector, StreamDecl};
/// let streams = [StreamDecl { id: "default".into(), fields: Fields::new(["n"]), direct: false }];
/// let mut emitter = Emitter::new("spout", 1, ReliabilityMode::AtMostOnce, &streams);
/// SpoutOutputCollector::new(&mut emitter).emit_with_id(values![7], 7);
/// let sets = emitter.take_output();
/// assert_eq!(sets.len(), 1);
/// assert_eq!(sets[0].data.as_ref().unwrap().tuples.len(), 1);
/// // At most once: the message id is acked right away.
/// assert_eq!(emitter.take_immediate_acks(), vec![heron_api::Value::Int(7)]);
/// ```
pub struct Emitter {
    component: String,
    task_id: i32,
    mode: ReliabilityMode,
    streams: Vec<OutStream>,
    last_stream: usize,
    /// Whole packets ready to send.
    frames: BytesMut,
    /// The stream of the open data set, if one is open.
    open: Option<usize>,
    /// The encoded tuples of the open data set routed per tuple.
    tuples: BytesMut,
    open_count: usize,
    /// The open data sets of tuples to one task each.
    by_dest: dest_sets::DestSets,
    /// Whether the open stream's tuples go to `by_dest` (else to `tuples`).
    open_addressed: bool,
    control: ControlTuples,
    /// A spout's emits (`ATLEAST_ONCE`): one per tuple it addressed, starting its tree.
    tree_starts: ControlTuples,
    /// Framed tree starts, sent ahead of the data frames taken with them.
    lead: BytesMut,
    /// Acks or fails were made since the output was last taken (framed or not yet).
    acks_waiting: bool,
    dests: Vec<i32>,
    roots: Vec<(i32, i64)>,
    in_flight: InFlight,
    immediate_acks: Vec<MessageId>,
    errors: Vec<String>,
    counters: EmitterCounters,
    rng: KeyRng,
    bolt: stats::BoltClock,
}

impl Emitter {
    /// An emitter for task `task_id` of `component`, which declared `streams`.
    pub fn new(
        component: &str,
        task_id: i32,
        mode: ReliabilityMode,
        streams: &[StreamDecl],
    ) -> Emitter {
        let streams = streams
            .iter()
            .map(|d| OutStream {
                stream_field: heron_proto::tuple::stream_field(&d.id, component),
                decl: d.clone(),
                custom: Vec::new(),
                route: None,
                tally: StreamTally::default(),
                emitted: 0,
            })
            .collect();
        Emitter {
            component: component.to_owned(),
            task_id,
            mode,
            streams,
            last_stream: 0,
            frames: BytesMut::new(),
            open: None,
            tuples: BytesMut::new(),
            open_count: 0,
            by_dest: dest_sets::DestSets::new(mode.is_acking()),
            open_addressed: false,
            control: ControlTuples::default(),
            tree_starts: ControlTuples::default(),
            lead: BytesMut::new(),
            acks_waiting: false,
            dests: Vec::new(),
            roots: Vec::new(),
            in_flight: InFlight::default(),
            immediate_acks: Vec::new(),
            errors: Vec::new(),
            counters: EmitterCounters::default(),
            rng: KeyRng::new(),
            bolt: stats::BoltClock::new(),
        }
    }

    /// The emitter of the task `ctx` describes: its component's streams from `topology`,
    /// the reliability mode from the context's configuration, and a prepared instance of
    /// every custom grouping that consumes one of its streams.
    pub fn for_task(topology: &HeronTopology, ctx: &TopologyContext) -> Emitter {
        let component = ctx.component_id();
        let streams = topology.outputs(component).unwrap_or(&[]);
        let mut emitter = Emitter::new(
            component,
            ctx.task_id(),
            ctx.config().reliability_mode(),
            streams,
        );
        for out in &mut emitter.streams {
            let mut targets = ctx.stream_targets(component, &out.decl.id);
            if let (Some(only), None) = (targets.next(), targets.next()) {
                let tasks = ctx.component_tasks(&only.consumer);
                out.route = match &only.grouping {
                    GroupingKind::Fields(by) => {
                        dest_sets::FieldsRoute::new(&out.decl.fields, by, tasks)
                            .map(dest_sets::Route::Fields)
                    }
                    GroupingKind::Shuffle | GroupingKind::None => {
                        let start = emitter.rng.next_nonzero().unsigned_abs();
                        dest_sets::ShuffleRoute::new(tasks, start).map(dest_sets::Route::Shuffle)
                    }
                    _ => None,
                };
            }
        }
        for (consumer, stream, mut grouping) in topology.custom_groupings_from(component) {
            grouping.prepare(ctx, &stream, ctx.component_tasks(&consumer));
            emitter.add_custom_grouping(&stream, grouping);
        }
        emitter
    }

    /// Adds an already prepared custom grouping that consumes `stream`.
    ///
    /// # Panics
    /// If `stream` is not declared.
    pub fn add_custom_grouping(&mut self, stream: &str, grouping: Box<dyn CustomStreamGrouping>) {
        let i = self.stream_index(stream);
        self.streams[i].custom.push(grouping);
        // the stream manager adds the grouping's tasks to each tuple's own route
        self.streams[i].route = None;
    }

    /// The task id.
    pub fn task_id(&self) -> i32 {
        self.task_id
    }

    /// The component name.
    pub fn component(&self) -> &str {
        &self.component
    }

    /// The reliability mode.
    pub fn reliability_mode(&self) -> ReliabilityMode {
        self.mode
    }

    /// Whether this component declares `stream`.
    pub fn declares(&self, stream: &str) -> bool {
        self.streams.iter().any(|s| s.decl.id == stream)
    }

    #[inline]
    fn stream_index(&mut self, stream: &str) -> usize {
        if let Some(s) = self.streams.get(self.last_stream) {
            if same_name(&s.decl.id, stream) {
                return self.last_stream;
            }
        }
        self.find_stream(stream)
    }

    /// [`Emitter::stream_index`] when the stream is not the last one emitted on.
    fn find_stream(&mut self, stream: &str) -> usize {
        match self.streams.iter().position(|s| s.decl.id == stream) {
            Some(i) => {
                self.last_stream = i;
                i
            }
            None => panic!(
                "component {:?} (task {}) emitted on stream {stream:?}, which it does not declare \
                 in declare_output_fields",
                self.component, self.task_id
            ),
        }
    }

    /// Validates and queues one data tuple; returns its stream's index. `bolt`: a bolt's
    /// emit (in `ATLEAST_ONCE` a spout's tree starts and a bolt's emits go apart, see below).
    #[inline]
    fn push(
        &mut self,
        stream: &str,
        dest: Dest,
        values: &[Value],
        roots: &[(i32, i64)],
        bolt: bool,
    ) -> usize {
        if matches!(dest, Dest::Grouped) && self.may_continue_open_run() {
            if let Some(si) = self.push_to_open_run(stream, values, roots, bolt) {
                return si;
            }
        }
        self.push_any(stream, dest, values, roots, bolt)
    }

    /// [`Emitter::push`] for every emit: out of line, so that the emits that continue an
    /// open run ([`Emitter::push_to_open_run`]) do not carry it.
    #[inline(never)]
    fn push_any(
        &mut self,
        stream: &str,
        dest: Dest,
        values: &[Value],
        roots: &[(i32, i64)],
        bolt: bool,
    ) -> usize {
        let si = self.stream_index(stream);
        let out = &mut self.streams[si];
        if values.len() != out.decl.fields.len() {
            panic!(
                "component {:?} emitted {} values on stream {stream:?}, which declares {} fields {}",
                self.component,
                values.len(),
                out.decl.fields.len(),
                out.decl.fields
            );
        }
        self.dests.clear();
        match (dest, out.decl.direct) {
            (Dest::Direct(task), true) => self.dests.push(task),
            (Dest::Grouped, false) => {
                for g in &mut out.custom {
                    self.dests.extend(g.choose_tasks(values));
                }
            }
            (Dest::Pinned(tasks), false) => {
                self.dests.extend_from_slice(tasks);
                for g in &mut out.custom {
                    self.dests.extend(g.choose_tasks(values));
                }
            }
            (Dest::Direct(_), false) => panic!(
                "component {:?} used emit_direct on stream {stream:?}, which is not declared direct",
                self.component
            ),
            (Dest::Grouped, true) => panic!(
                "component {:?} emitted on direct stream {stream:?} without emit_direct",
                self.component
            ),
            (Dest::Pinned(_), true) => panic!(
                "component {:?} used emit_pinned on direct stream {stream:?}; use emit_direct",
                self.component
            ),
        }
        let size: usize = values.iter().map(Value::encoded_len).sum();
        if size > MAX_TUPLE_BYTES {
            panic!(
                "component {:?} emitted a tuple of {size} bytes on stream {stream:?}; the limit is \
                 {MAX_TUPLE_BYTES} bytes",
                self.component
            );
        }
        // With acking, addressed tuples get their keys here and their emits go in a control
        // set, so the stream manager forwards the set whole. A spout's emits start its
        // trees: they are framed ahead of the data (`tree_starts`), so that the stream
        // manager has each tree before the tuple goes on and any ack of it can come back.
        // the task, and its slot when the stream's route chose it
        let (slot, addressed) = match dest {
            Dest::Direct(task) => (None, Some(task)),
            Dest::Grouped => match out.route.as_mut().map(|r| r.slot(values)) {
                Some((slot, task)) => (Some(slot), Some(task)),
                None => (None, None),
            },
            Dest::Pinned(_) => (None, None),
        };
        let key = match addressed {
            Some(_) => self.rng.tuple_key(self.mode.is_acking(), roots),
            None => 0,
        };
        // a run of one stream is all addressed or all not, so that its tuples keep their order
        if self.open != Some(si) || self.open_addressed != addressed.is_some() {
            self.close_data();
            self.open = Some(si);
            self.open_addressed = addressed.is_some();
        }
        if addressed.is_none()
            && (self.open_count >= DATA_SET_MAX_TUPLES || self.tuples.len() >= DATA_SET_MAX_BYTES)
        {
            self.close_general(si);
        }
        // one task and nothing to key: into that task's set, forwarded whole; one call site,
        // so the tuple's encoding is inlined here
        let field = &self.streams[si].stream_field;
        let buf = match (slot, addressed) {
            (Some(slot), Some(task)) => {
                self.by_dest
                    .buffer_at(slot, task, &mut self.frames, field, self.task_id)
            }
            (None, Some(task)) => self
                .by_dest
                .buffer(task, &mut self.frames, field, self.task_id),
            (_, None) => &mut self.tuples,
        };
        heron_proto::tuple::put_data_tuple_keyed(buf, key, roots, values, &self.dests);
        match addressed {
            Some(_) => self.by_dest.pushed(),
            None => self.open_count += 1,
        }
        self.keyed_emit(key, roots, bolt);
        self.streams[si].emitted += 1;
        self.counters.emitted += 1;
        si
    }

    /// After a tuple keyed `key` (0: not keyed, nothing to do) was queued with `roots`: its
    /// emit, which the stream manager needs before any ack of it.
    #[inline]
    fn keyed_emit(&mut self, key: i64, roots: &[(i32, i64)], bolt: bool) {
        if key != 0 && bolt {
            // one entry per root: the XOR of the keys of its tuples in this set
            self.control.push_merged(ControlKind::Emit, roots, key);
            if self.control.count() as usize >= CONTROL_SET_MAX_TUPLES {
                self.close_control();
            }
        } else if key != 0 {
            // a spout's tuple has a fresh root: one entry each, nothing to merge
            self.tree_starts.push(ControlKind::Emit, roots, key);
            if self.tree_starts.count() as usize >= CONTROL_SET_MAX_TUPLES {
                self.tree_starts.take_frame(&mut self.lead, self.task_id);
            }
        }
    }

    /// Closes the open stream's sets: the one routed per tuple, then those per destination.
    fn close_data(&mut self) {
        if let Some(si) = self.open.take() {
            self.close_general(si);
            self.by_dest.close_all(
                &mut self.frames,
                &self.streams[si].stream_field,
                self.task_id,
            );
        }
    }

    /// Closes the set of stream `si` whose tuples the stream manager routes one by one.
    fn close_general(&mut self, si: usize) {
        if self.open_count > 0 {
            heron_proto::tuple::put_data_set_frame(
                &mut self.frames,
                &self.streams[si].stream_field,
                &self.tuples,
                self.task_id,
            );
            self.tuples.clear();
            self.open_count = 0;
        }
    }

    fn close_control(&mut self) {
        if !self.control.is_empty() {
            self.close_data();
            self.control.take_frame(&mut self.frames, self.task_id);
        }
    }

    /// A spout emit. With a message id: in `ATLEAST_ONCE` mode the tuple gets a fresh root
    /// and is tracked until acked, failed or expired; otherwise the id is queued for an
    /// immediate `ack` (see [`take_immediate_acks`](Self::take_immediate_acks)).
    /// `direct`: the consumer task of an emit on a direct stream (`None` on other streams).
    pub fn emit_spout(
        &mut self,
        stream: &str,
        direct: Option<i32>,
        values: &[Value],
        msg_id: Option<MessageId>,
    ) {
        self.spout_to(stream, Dest::from(direct), values, msg_id)
    }

    /// A spout emit on a non-direct `stream` pinned to `tasks`: the tuple's
    /// `dest_task_ids` are `tasks` (then any custom grouping's choice), which the stream
    /// manager honours on SHUFFLE, NONE and local-or-shuffle consumers; see
    /// [`SpoutOutputCollector::emit_pinned`](crate::SpoutOutputCollector::emit_pinned).
    /// Tracking and acking as [`emit_spout`](Self::emit_spout).
    ///
    /// # Panics
    /// On a direct stream, and on the misuses [`emit_spout`](Self::emit_spout) panics on.
    pub fn emit_spout_pinned(
        &mut self,
        stream: &str,
        values: &[Value],
        msg_id: Option<MessageId>,
        tasks: &[i32],
    ) {
        self.spout_to(stream, Dest::Pinned(tasks), values, msg_id)
    }

    fn spout_to(&mut self, stream: &str, dest: Dest, values: &[Value], msg_id: Option<MessageId>) {
        match msg_id {
            Some(msg) if self.mode.is_acking() => {
                let key = loop {
                    let k = self.rng.next_nonzero();
                    if !self.in_flight.map.contains_key(&k) {
                        break k;
                    }
                };
                let si = self.push(stream, dest, values, &[(self.task_id, key)], false);
                self.in_flight.insert(key, msg, Instant::now(), si);
            }
            Some(msg) => {
                let si = self.push(stream, dest, values, &[], false);
                self.streams[si].tally.acked += 1;
                self.immediate_acks.push(msg);
            }
            None => {
                self.push(stream, dest, values, &[], false);
            }
        }
    }

    /// A bolt emit anchored to `anchors` (none: unanchored). In `ATLEAST_ONCE` mode the tuple
    /// carries the union of the anchors' roots. `direct`: the consumer task of an emit on a
    /// direct stream (`None` on other streams).
    #[inline]
    pub fn emit_bolt(
        &mut self,
        stream: &str,
        direct: Option<i32>,
        anchors: &[&Tuple],
        values: &[Value],
    ) {
        self.bolt_to(stream, Dest::from(direct), anchors, values)
    }

    /// A bolt emit on a non-direct `stream` pinned to `tasks`, anchored as
    /// [`emit_bolt`](Self::emit_bolt): the tuple's `dest_task_ids` are `tasks` (then any
    /// custom grouping's choice), which the stream manager honours on SHUFFLE, NONE and
    /// local-or-shuffle consumers; see
    /// [`OutputCollector::emit_pinned`](crate::OutputCollector::emit_pinned).
    ///
    /// # Panics
    /// On a direct stream, and on the misuses [`emit_bolt`](Self::emit_bolt) panics on.
    pub fn emit_bolt_pinned(
        &mut self,
        stream: &str,
        anchors: &[&Tuple],
        values: &[Value],
        tasks: &[i32],
    ) {
        self.bolt_to(stream, Dest::Pinned(tasks), anchors, values)
    }

    fn bolt_to(&mut self, stream: &str, dest: Dest, anchors: &[&Tuple], values: &[Value]) {
        if anchors.is_empty() || !self.mode.is_acking() {
            // no roots to carry
            self.push(stream, dest, values, &[], true);
            return;
        }
        let mut roots = std::mem::take(&mut self.roots);
        roots.clear();
        for anchor in anchors {
            for root in anchor.roots() {
                if !roots.contains(root) {
                    roots.push(*root);
                }
            }
        }
        self.push(stream, dest, values, &roots, true);
        self.roots = roots;
    }

    /// A bolt acks an input tuple. In `ATLEAST_ONCE` mode a tuple with roots adds an
    /// `AckTuple{roots, ackedtuple: key}` to the control set, merged into the ack held for
    /// the same single root if there is one (`ackedtuple` the XOR of both keys:
    /// [`ControlTuples::push_merged`]); a word count's bolt acks the words of a sentence as
    /// one.
    pub fn ack(&mut self, tuple: &Tuple) {
        self.counters.acked += 1;
        self.bolt.acked(tuple, true);
        if self.mode.is_acking() && !tuple.roots().is_empty() {
            self.control
                .push_merged(ControlKind::Ack, tuple.roots(), tuple.key());
            self.after_control();
        }
    }

    /// A bolt fails an input tuple (see [`ack`](Self::ack)).
    pub fn fail(&mut self, tuple: &Tuple) {
        self.counters.failed += 1;
        self.bolt.acked(tuple, false);
        if self.mode.is_acking() && !tuple.roots().is_empty() {
            self.control
                .push(ControlKind::Fail, tuple.roots(), tuple.key());
            self.after_control();
        }
    }

    fn after_control(&mut self) {
        self.acks_waiting = true;
        if self.control.count() as usize >= CONTROL_SET_MAX_TUPLES {
            self.close_control();
        }
    }

    /// Records an error a component reported; the runtime logs it.
    pub fn report_error(&mut self, message: &str) {
        self.errors.push(message.to_owned());
    }

    /// Takes the reported errors.
    pub fn take_errors(&mut self) -> Vec<String> {
        std::mem::take(&mut self.errors)
    }

    /// `true` when output is waiting.
    pub fn has_output(&self) -> bool {
        self.open.is_some()
            || !self.frames.is_empty()
            || !self.control.is_empty()
            || !self.lead.is_empty()
    }

    /// `true` when acks or fails are waiting to go out (output that should not be held back:
    /// the spouts' complete latency counts on it).
    pub fn has_acks(&self) -> bool {
        self.acks_waiting
    }

    /// Roughly how many bytes of output are waiting.
    pub fn pending_bytes(&self) -> usize {
        self.frames.len()
            + self.tuples.len()
            + self.by_dest.bytes()
            + self.lead.len()
            + (self.control.count() + self.tree_starts.count()) as usize * CONTROL_TUPLE_BYTES
    }

    /// Takes the waiting output as Heron packets, one `HeronTupleSet` each: a spout's tree
    /// starts (`ATLEAST_ONCE`), the data sets in emit order, then the acks and fails. Empty
    /// when there is nothing.
    pub fn take_frames(&mut self) -> Bytes {
        self.acks_waiting = false;
        self.close_data();
        self.close_control();
        self.tree_starts.take_frame(&mut self.lead, self.task_id);
        if self.lead.is_empty() {
            return self.frames.split().freeze();
        }
        self.lead.extend_from_slice(&self.frames);
        self.frames.clear();
        self.lead.split().freeze()
    }

    /// Takes the waiting output decoded (for tests; the runtime uses
    /// [`take_frames`](Self::take_frames)).
    pub fn take_output(&mut self) -> Vec<HeronTupleSet> {
        let mut frames = BytesMut::from(&self.take_frames()[..]);
        let codec = HeronCodec::new(0);
        let mut out = Vec::new();
        while let Some(packet) = codec
            .decode_packet(&mut frames)
            .expect("well-formed frames")
        {
            out.push(packet.decode().expect("a HeronTupleSet"));
        }
        out
    }

    /// Takes the message ids to ack right away (modes without acking); counts them as acked.
    pub fn take_immediate_acks(&mut self) -> Vec<MessageId> {
        self.counters.acked += self.immediate_acks.len() as u64;
        std::mem::take(&mut self.immediate_acks)
    }

    /// Moves the message ids to ack right away into `out` (no allocation when `out` has
    /// room); counts them as acked.
    pub fn take_immediate_acks_into(&mut self, out: &mut Vec<MessageId>) {
        self.counters.acked += self.immediate_acks.len() as u64;
        out.append(&mut self.immediate_acks);
    }

    /// `true` when message ids wait for an immediate ack.
    pub fn has_immediate_acks(&self) -> bool {
        !self.immediate_acks.is_empty()
    }

    /// The number of spout tuples in flight (`ATLEAST_ONCE`).
    pub fn in_flight(&self) -> usize {
        self.in_flight.map.len()
    }

    /// The tuple tree of `root_key` completed: its message id and time since emit, counted
    /// as acked. `None` for an unknown (expired) key.
    pub fn spout_acked(&mut self, root_key: i64) -> Option<(MessageId, Duration)> {
        self.spout_acked_at(root_key, Instant::now())
    }

    /// [`spout_acked`](Self::spout_acked) with the time of the ack given (one clock read for
    /// a whole control set). Adds the complete latency to its stream's tally.
    pub fn spout_acked_at(&mut self, root_key: i64, now: Instant) -> Option<(MessageId, Duration)> {
        let (msg, at, si) = self.in_flight.remove(root_key)?;
        self.counters.acked += 1;
        let latency = now.saturating_duration_since(at);
        let t = &mut self.streams[si].tally;
        t.acked += 1;
        t.latency_ns += u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
        t.latency_count += 1;
        Some((msg, latency))
    }

    /// The tuple tree of `root_key` failed: its message id, counted as failed.
    pub fn spout_failed(&mut self, root_key: i64) -> Option<MessageId> {
        let (msg, _, si) = self.in_flight.remove(root_key)?;
        self.counters.failed += 1;
        self.streams[si].tally.failed += 1;
        Some(msg)
    }

    /// Removes the tuples emitted at or before `now - timeout` and returns their message ids,
    /// oldest first, counted as failed.
    pub fn expire(&mut self, now: Instant, timeout: Duration) -> Vec<MessageId> {
        let mut out = Vec::new();
        if let Some(deadline) = now.checked_sub(timeout) {
            self.in_flight.expire(deadline, &mut out);
        }
        self.counters.failed += out.len() as u64;
        out.into_iter()
            .map(|(msg, si)| {
                self.streams[si].tally.failed += 1;
                msg
            })
            .collect()
    }

    /// Counts one executed tuple (called by the runtime).
    pub fn count_executed(&mut self) {
        self.counters.executed += 1;
    }

    /// The counters.
    pub fn counters(&self) -> EmitterCounters {
        self.counters
    }
}

mod dest_sets;
mod in_flight;
mod open_run;
mod stats;
pub use stats::StreamTally;

/// `a == b` for names: the stream names an emit passes are short (`default`), and comparing
/// up to 16 bytes as two overlapping words is several times cheaper than a call to `memcmp`.
#[inline]
fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8"));
    let half = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().expect("4"));
    match n {
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests;
