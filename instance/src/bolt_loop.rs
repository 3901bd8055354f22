//! The bolt loop (reference/heron.md §4): take what the socket holds (`inbox.rs`), decode its tuples,
//! `execute` each, flush once per batch; tick tuples on their timer.

use std::time::{Duration, Instant};

use heron_api::window::{WatermarkTracker, WATERMARK_STREAM_ID};
use heron_api::{AsyncWaker, Bolt, Emitter, OutputCollector, TopologyContext, Tuple};

use crate::executor::{earliest, Shared, FLUSH_BYTES};
use crate::inbound::{InMsg, TupleDecoder};
use crate::inbox::RecvTimeoutError;
use crate::linger::{Linger, Waiting};
use crate::stateful::{After, StatefulMsg, StatefulTask};
use crate::InstanceError;

/// Keep taking queued batches for at most this long before looking at the timers.
const EXECUTE_BATCH_TIME: Duration = Duration::from_millis(16);

struct BoltTask<'s, 'a, 'c> {
    shared: &'s mut Shared<'a>,
    bolt: Box<dyn Bolt>,
    emitter: Emitter,
    ctx: &'c TopologyContext,
    decoder: TupleDecoder,
    /// `EFFECTIVELY_ONCE`: checkpoints, restores, the start notice.
    stateful: Option<StatefulTask>,
    /// Input held back while a two-phase bolt waits for its checkpoint to be consistent.
    held: Vec<InMsg>,
    /// Input sets dropped because they came before the start notice.
    dropped_sets: u64,
    /// The bolt's wake handle and its next `poll_async` deadline, when it has async output
    /// (asked once after `prepare`).
    async_output: Option<(AsyncWaker, Option<Instant>)>,
    /// The event-time watermark over the input tasks (topologies with event-time windows).
    watermarks: WatermarkTracker,
    /// Whether a batch's output goes at its end or is held a little (`linger.rs`).
    linger: Linger,
}

pub(crate) fn run(
    shared: &mut Shared<'_>,
    bolt: Box<dyn Bolt>,
    emitter: Emitter,
    ctx: &TopologyContext,
    pending: Vec<InMsg>,
) -> Result<(), InstanceError> {
    // Every bolt's context carries a wake handle that wakes this thread from its inbox
    // wait; only bolts with async output are ever polled.
    let unparker = shared.inbox.unparker();
    let waker = AsyncWaker::new(move || unparker.unpark());
    let mut owned_ctx = ctx.clone();
    owned_ctx.set_async_waker(waker.clone());
    let ctx = &owned_ctx;
    let effectively_once = ctx.config().reliability_mode().is_effectively_once();
    let mut task = BoltTask {
        shared,
        bolt,
        emitter,
        ctx,
        decoder: TupleDecoder::new(),
        stateful: effectively_once.then(StatefulTask::new),
        held: Vec::new(),
        dropped_sets: 0,
        async_output: None,
        // in EFFECTIVELY_ONCE checkpoint markers go out beside the emitter's output, which
        // must not be held behind them
        linger: if effectively_once {
            Linger::off()
        } else {
            Linger::new(ctx.config().output_linger())
        },
        watermarks: WatermarkTracker::new(
            ctx.component_inputs(ctx.component_id())
                .filter(|s| s.stream == WATERMARK_STREAM_ID)
                .flat_map(|s| ctx.component_tasks(&s.source).iter().copied()),
        ),
    };
    task.bolt.prepare(ctx);
    if task.bolt.has_async_output() {
        // a first poll right away picks up output made during prepare
        task.async_output = Some((waker, Some(Instant::now())));
    }
    let result = task.main_loop(pending);
    task.bolt.cleanup();
    task.shared.metrics.write_now(&task.emitter);
    result
}

impl BoltTask<'_, '_, '_> {
    fn main_loop(&mut self, pending: Vec<InMsg>) -> Result<(), InstanceError> {
        let tick_every = self
            .ctx
            .config()
            .tick_tuple_freq_ms()
            .map(Duration::from_millis);
        let mut next_tick = tick_every.map(|d| Instant::now() + d);
        self.handle(pending)?;
        loop {
            let now = Instant::now();
            let async_due = self.async_output.as_ref().and_then(|(_, d)| *d);
            let until = earliest([
                next_tick,
                Some(self.shared.metrics.next_due()),
                async_due,
                self.linger.due(),
            ])
            .expect("metrics are always due some time");
            let received = match &self.async_output {
                Some((waker, _)) => self
                    .shared
                    .inbox
                    .recv_deadline_or(until, || waker.is_pending()),
                None => self
                    .shared
                    .inbox
                    .recv_timeout(until.saturating_duration_since(now)),
            };
            match received {
                Ok(batch) => {
                    self.handle(batch)?;
                    let start = Instant::now();
                    while start.elapsed() < EXECUTE_BATCH_TIME {
                        match self.shared.inbox.try_recv() {
                            Ok(batch) => self.handle(batch)?,
                            Err(_) => break,
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Err(InstanceError::Disconnected),
            }
            let now = Instant::now();
            if self.linger.is_due(now) {
                self.shared.flush(&mut self.emitter)?;
            }
            let may_tick = self.stateful.as_ref().is_none_or(StatefulTask::may_process);
            if let (Some(every), Some(at), true) = (tick_every, next_tick, may_tick) {
                if now >= at {
                    let mut tick = Tuple::tick();
                    self.emitter.begin_batch(now);
                    self.emitter.stamp(&mut tick);
                    self.bolt
                        .execute(&tick, &mut OutputCollector::new(&mut self.emitter));
                    let stream = tick.source_stream();
                    self.emitter.end_batch(Instant::now(), stream, 1);
                    self.flush_now()?;
                    next_tick = Some(now + every);
                }
            }
            self.poll_async(now)?;
            self.shared.metrics.maybe_write(now, &self.emitter);
        }
    }

    /// Calls the bolt's `poll_async` when its waker was woken or its deadline passed, then
    /// flushes.
    fn poll_async(&mut self, now: Instant) -> Result<(), InstanceError> {
        let Some((waker, deadline)) = &mut self.async_output else {
            return Ok(());
        };
        let woken = waker.take();
        if !woken && deadline.is_none_or(|d| now < d) {
            return Ok(());
        }
        if self.stateful.as_ref().is_some_and(|s| !s.may_process()) {
            return Ok(());
        }
        *deadline = self
            .bolt
            .poll_async(&mut OutputCollector::new(&mut self.emitter), now);
        self.flush_now()
    }

    /// Sends everything waiting, held output included.
    fn flush_now(&mut self) -> Result<(), InstanceError> {
        self.linger.flushed();
        self.shared.flush(&mut self.emitter)
    }

    /// At the end of an input batch: sends the output, or holds it if it may linger.
    fn end_of_batch(&mut self) -> Result<(), InstanceError> {
        let waiting = Waiting {
            output: self.emitter.has_output(),
            urgent: self.emitter.has_acks() || self.emitter.pending_bytes() >= FLUSH_BYTES,
        };
        if self.linger.at_batch_end(Instant::now(), waiting) {
            self.shared.flush(&mut self.emitter)?;
        } else {
            // errors are logged at once either way
            self.shared.flush_errors(&mut self.emitter);
        }
        Ok(())
    }

    /// Executes every data tuple of a batch, then flushes.
    fn handle(&mut self, batch: Vec<InMsg>) -> Result<(), InstanceError> {
        for msg in batch {
            let msg = match self.stateful_gate(msg)? {
                Some(msg) => msg,
                None => continue,
            };
            match msg {
                InMsg::Control(_) => {
                    tracing::warn!("a bolt received control tuples; ignoring them");
                }
                InMsg::Data(set) => {
                    if set.is_empty() {
                        continue;
                    }
                    let Self {
                        shared,
                        bolt,
                        emitter,
                        ctx,
                        decoder,
                        watermarks,
                        ..
                    } = self;
                    if set.stream_id() == WATERMARK_STREAM_ID {
                        // in-band watermarks: the bolt hears the minimum over its inputs,
                        // then it goes downstream after whatever the bolt emitted for it
                        emitter.begin_batch(Instant::now());
                        decoder.for_each(ctx, &set, |tuple| {
                            let advanced = tuple
                                .get_i64(0)
                                .and_then(|w| watermarks.update(tuple.source_task(), w));
                            if let Some(w) = advanced {
                                let mut c = OutputCollector::new(emitter);
                                bolt.on_watermark(w, &mut c);
                                c.emit_watermark(w);
                            }
                            Ok::<_, InstanceError>(())
                        })?;
                        emitter.end_batch(Instant::now(), set.stream_id(), 0);
                        continue;
                    }
                    // One clock read at each end of the set (docs/internals.md, latencies);
                    // decoding each tuple just before its execute falls inside.
                    emitter.begin_batch(Instant::now());
                    let mut executed = 0u64;
                    decoder.for_each(ctx, &set, |tuple| {
                        emitter.stamp(tuple);
                        bolt.execute(tuple, &mut OutputCollector::new(emitter));
                        emitter.count_executed();
                        executed += 1;
                        if emitter.pending_bytes() >= FLUSH_BYTES {
                            // time blocked on a full out-queue is not execute time
                            let blocked = Instant::now();
                            shared.flush(emitter)?;
                            emitter.exclude_from_batch(blocked.elapsed());
                        }
                        Ok::<_, InstanceError>(())
                    })?;
                    emitter.end_batch(Instant::now(), set.stream_id(), executed);
                }
                InMsg::Plan(pplan) => {
                    self.shared.check_plan(&pplan)?;
                }
                InMsg::Stateful(msg) => {
                    tracing::warn!(
                        ?msg,
                        "ignoring a stateful message: the topology is not EFFECTIVELY_ONCE"
                    );
                }
            }
        }
        self.end_of_batch()
    }

    /// In `EFFECTIVELY_ONCE`: handles stateful messages, drops input that precedes the start
    /// notice, and holds input (markers too, to keep their order) while a two-phase bolt
    /// waits for its checkpoint to be consistent. Returns the message to process normally.
    fn stateful_gate(&mut self, msg: InMsg) -> Result<Option<InMsg>, InstanceError> {
        let Some(st) = self.stateful.as_mut() else {
            return Ok(Some(msg));
        };
        let waiting = !st.drops_input() && !st.may_process();
        match msg {
            InMsg::Data(_) if st.drops_input() => {
                if self.dropped_sets == 0 {
                    tracing::info!("dropping input that came before the start notice");
                }
                self.dropped_sets += 1;
                Ok(None)
            }
            InMsg::Data(_) | InMsg::Stateful(StatefulMsg::Checkpoint(_)) if waiting => {
                self.held.push(msg);
                Ok(None)
            }
            InMsg::Stateful(m) => {
                let after = st.handle(m, self.bolt.stateful(), &mut self.emitter, self.shared)?;
                match after {
                    After::Continue => {}
                    After::RolledBack => {
                        self.held.clear();
                        // the inputs roll back too, and send their watermarks again
                        self.watermarks.reset();
                    }
                    After::Resume => {
                        let held = std::mem::take(&mut self.held);
                        self.handle(held)?;
                    }
                }
                Ok(None)
            }
            other => Ok(Some(other)),
        }
    }
}
