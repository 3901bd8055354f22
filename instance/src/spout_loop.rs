//! The spout loop (reference/heron.md §4): deliver acks and fails, call `next_tuple` while
//! the topology runs, the out-queue has room and fewer than `topology.max.spout.pending`
//! tuples are in flight (with acking; after filling the window, once the window of a small
//! one or a quarter of a large one is free again, or a slot has been free for a
//! millisecond, see `heron_flow::refill`), flush, expire timed-out tuples.
//!
//! A round that ends because `next_tuple` ran dry (a source with nothing more for now, or a
//! rate-limited one) leaves a small output held for up to [`DRY_LINGER`], and the spout
//! waits that long (or for acks) before its next round: without it, a spout a little faster
//! than its source called `next_tuple` in a tight loop and wrote every few tuples as their
//! own packet (word count at half its saturated rate: 51 words per write, each waking the
//! stream manager). Rounds that fill a batch, the window or their time go out at once, and
//! `EFFECTIVELY_ONCE` spouts never hold output.

use std::time::{Duration, Instant};

use crate::inbox::TryRecvError;
use heron_api::{Emitter, MessageId, Spout, SpoutOutputCollector, TopologyContext};
use heron_proto::tuple::ControlKind;

use crate::executor::{earliest, Shared, FLUSH_BYTES, IDLE_WAIT};
use crate::inbound::{ControlSet, InMsg};
use crate::inbox::RecvTimeoutError;
use crate::linger::{Linger, Waiting};
use crate::stateful::StatefulTask;
use crate::InstanceError;
use heron_flow::refill::Refill;

/// Stop calling `next_tuple` after this long and flush.
const EMIT_BATCH_TIME: Duration = Duration::from_millis(2);
/// Socket reads' worth of messages taken per round before emitting again.
const MAX_IN_BATCHES_PER_ROUND: usize = 64;
/// How long a paused spout waits for messages.
const PAUSED_WAIT: Duration = Duration::from_millis(50);
/// How long a spout whose `next_tuple` ran dry holds a small output, and waits before it
/// calls `next_tuple` again (see [`SpoutTask::emit_round`]).
const DRY_LINGER: Duration = Duration::from_micros(200);

struct SpoutTask<'s, 'a> {
    shared: &'s mut Shared<'a>,
    spout: Box<dyn Spout>,
    emitter: Emitter,
    running: bool,
    acks: Vec<MessageId>,
    refill: Refill,
    /// Whether the output of a round that ran dry goes now or is held a little.
    linger: Linger,
    /// `EFFECTIVELY_ONCE`: checkpoints, restores, the start notice.
    stateful: Option<StatefulTask>,
}

pub(crate) fn run(
    shared: &mut Shared<'_>,
    spout: Box<dyn Spout>,
    emitter: Emitter,
    ctx: &TopologyContext,
    running: bool,
    pending: Vec<InMsg>,
) -> Result<(), InstanceError> {
    let conf = ctx.config();
    let acking = emitter.reliability_mode().is_acking();
    let max_pending = match conf.max_spout_pending() {
        n if acking && n > 0 => usize::try_from(n).unwrap_or(usize::MAX),
        _ => usize::MAX,
    };
    let timeout = (acking && conf.enable_message_timeouts())
        .then(|| Duration::from_secs(conf.message_timeout_secs().max(1)));
    let mut task = SpoutTask {
        shared,
        spout,
        emitter,
        running,
        acks: Vec::new(),
        refill: Refill::new(max_pending),
        linger: if conf.reliability_mode().is_effectively_once() {
            Linger::off()
        } else {
            Linger::new(DRY_LINGER)
        },
        stateful: conf
            .reliability_mode()
            .is_effectively_once()
            .then(StatefulTask::new),
    };
    task.spout.open(ctx);
    if !running {
        task.spout.deactivate();
    }
    task.shared.metrics.set_active(running);
    let result = task.main_loop(pending, max_pending, timeout);
    task.spout.close();
    task.shared.metrics.write_now(&task.emitter);
    result
}

impl SpoutTask<'_, '_> {
    fn main_loop(
        &mut self,
        pending: Vec<InMsg>,
        max_pending: usize,
        timeout: Option<Duration>,
    ) -> Result<(), InstanceError> {
        self.handle(pending)?;
        let expiry_every = timeout.map(|t| (t / 10).max(Duration::from_millis(10)));
        let mut next_expiry = expiry_every.map(|e| Instant::now() + e);
        loop {
            let mut got_input = false;
            for _ in 0..MAX_IN_BATCHES_PER_ROUND {
                match self.shared.inbox.try_recv() {
                    Ok(batch) => {
                        got_input = true;
                        self.handle(batch)?;
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => return Err(InstanceError::Disconnected),
                }
            }

            let emitted = self.emit_round(max_pending)?;

            let now = Instant::now();
            if self.linger.is_due(now) {
                self.shared.flush(&mut self.emitter)?;
            }
            // output held after a dry round: wait as if nothing had been emitted
            let emitted = emitted && self.linger.due().is_none();
            if let (Some(t), Some(at)) = (timeout, next_expiry) {
                if now >= at {
                    for msg in self.emitter.expire(now, t) {
                        self.spout.fail(msg);
                    }
                    next_expiry = expiry_every.map(|e| now + e);
                }
            }
            self.shared.metrics.maybe_write(now, &self.emitter);

            if !emitted && !got_input && self.running && !self.shared.out_has_room() {
                // held back by the out-queue: wake as soon as the writer makes room
                let until =
                    earliest([Some(now + IDLE_WAIT), next_expiry]).expect("at least one instant");
                self.shared.wait_for_out_room(until);
            } else if !emitted && !got_input {
                let wait = if self.running { IDLE_WAIT } else { PAUSED_WAIT };
                let until = earliest([
                    Some(now + wait),
                    self.refill.deadline(),
                    self.linger.due(),
                    next_expiry,
                    Some(self.shared.metrics.next_due()),
                ])
                .expect("at least one instant");
                match self
                    .shared
                    .inbox
                    .recv_timeout(until.saturating_duration_since(now))
                {
                    Ok(batch) => self.handle(batch)?,
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return Err(InstanceError::Disconnected),
                }
            }
        }
    }

    /// Calls `next_tuple` until it emits nothing, the batch is full or its time is up, or
    /// the pending limit is reached; then flushes, unless it ran dry with a small output,
    /// which the linger holds for up to [`DRY_LINGER`]. Returns whether anything was emitted.
    fn emit_round(&mut self, max_pending: usize) -> Result<bool, InstanceError> {
        if !self.running || !self.shared.out_has_room() {
            return Ok(false);
        }
        if self.stateful.as_ref().is_some_and(|s| !s.may_process()) {
            return Ok(false);
        }
        let start = Instant::now();
        if !self.refill.may_emit(self.emitter.in_flight(), start) {
            return Ok(false);
        }
        let mut calls = 0u32;
        let mut emitted_any = false;
        let mut dry = false;
        while self.emitter.in_flight() < max_pending {
            let before = self.emitter.counters().emitted;
            self.spout
                .next_tuple(&mut SpoutOutputCollector::new(&mut self.emitter));
            if self.emitter.has_immediate_acks() {
                self.emitter.take_immediate_acks_into(&mut self.acks);
                for msg in self.acks.drain(..) {
                    self.spout.ack(msg);
                }
            }
            if self.emitter.counters().emitted == before {
                dry = true;
                break;
            }
            emitted_any = true;
            calls += 1;
            if self.emitter.pending_bytes() >= FLUSH_BYTES
                || (calls.is_multiple_of(16) && start.elapsed() >= EMIT_BATCH_TIME)
            {
                break;
            }
        }
        self.refill.after_round(self.emitter.in_flight());
        let pending = self.emitter.pending_bytes();
        let waiting = Waiting {
            output: self.emitter.has_output(),
            urgent: !dry || pending >= FLUSH_BYTES,
        };
        if self.linger.at_batch_end(Instant::now(), waiting) {
            self.shared.flush(&mut self.emitter)?;
        } else {
            // reported errors are logged every round, whatever the output does
            self.shared.flush_errors(&mut self.emitter);
        }
        Ok(emitted_any)
    }

    fn handle(&mut self, batch: Vec<InMsg>) -> Result<(), InstanceError> {
        for msg in batch {
            match msg {
                InMsg::Control(control) => self.control(&control),
                InMsg::Data(data) => {
                    if !data.is_empty() {
                        tracing::warn!("a spout received data tuples; dropping them");
                    }
                }
                InMsg::Stateful(msg) => match self.stateful.as_mut() {
                    Some(st) => {
                        st.handle(msg, self.spout.stateful(), &mut self.emitter, self.shared)?;
                    }
                    None => tracing::warn!(
                        ?msg,
                        "ignoring a stateful message: the topology is not EFFECTIVELY_ONCE"
                    ),
                },
                InMsg::Plan(pplan) => {
                    let running = self.shared.check_plan(&pplan)?;
                    if running != self.running {
                        tracing::info!(running, "topology state changed");
                        if running {
                            self.spout.activate();
                        } else {
                            self.spout.deactivate();
                        }
                        self.running = running;
                        // at once, so a reader of the counters file sees the change applied
                        self.shared.metrics.set_active(running);
                        self.shared.metrics.write_now(&self.emitter);
                    }
                }
            }
        }
        Ok(())
    }

    /// Acks and fails from the stream manager: each root of ours names an in-flight tuple.
    fn control(&mut self, control: &ControlSet) {
        let me = self.emitter.task_id();
        // one clock read for the whole set
        let now = Instant::now();
        let Self {
            emitter,
            spout,
            shared,
            ..
        } = self;
        control.for_each_root(ControlKind::Ack, |task, key| {
            if task != me {
                return;
            }
            if let Some((msg, latency)) = emitter.spout_acked_at(key, now) {
                shared.metrics.record_complete_latency(latency);
                spout.ack(msg);
            }
        });
        control.for_each_root(ControlKind::Fail, |task, key| {
            if task != me {
                return;
            }
            if let Some(msg) = emitter.spout_failed(key) {
                spout.fail(msg);
            }
        });
    }
}
