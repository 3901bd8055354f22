//! [`ShellBolt`]'s protocol: input tuples go to the subprocess with string ids, its emits,
//! acks and fails come back whenever it sends them — during `execute`, or in
//! [`Bolt::poll_async`] when the reader thread wakes the executor.

use std::collections::HashSet;
use std::hash::BuildHasherDefault;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use heron_api::{Bolt, Fields, OutputCollector, OutputFieldsDeclarer, TopologyContext, Tuple};

use crate::engine::Liveness;
use crate::incoming::Incoming;
use crate::message::{heartbeat_msg, task_ids_msg, tuple_msg, Emit, ShellMsg, TupleOut};
use crate::node::Node;
use crate::pending::{parse_id, Pending, SeqHasher};
use crate::shell::{Shell, MAX_PENDING_KEY};
use crate::task_ids::{emit_values, PinState};
use crate::{ShellBolt, ShellSpec};

/// Storm's `topology.shellbolt.max.pending` default.
pub const DEFAULT_MAX_PENDING: usize = 100;

pub(crate) struct BoltRuntime {
    shell: Shell,
    pending: Pending<Tuple>,
    /// Ids of tick tuples and heartbeats written and not yet acked (acks are swallowed).
    system_ids: HashSet<u64, BuildHasherDefault<SeqHasher>>,
    max_pending: usize,
    /// The round robins of `need_task_ids` answers on shuffled streams.
    pins: PinState,
}

/// Checks an emit against the declared streams before it reaches the emitter (which panics
/// on misuse): the stream exists, one value per field, `task` exactly on direct streams.
pub(crate) fn check_emit<'s>(spec: &'s ShellSpec, e: &Emit) -> Result<(&'s Fields, bool), String> {
    let Some((_, fields, direct)) = spec.streams.iter().find(|(s, _, _)| *s == e.stream) else {
        return Err(format!("emit on undeclared stream {:?}", e.stream));
    };
    if e.tuple.len() != fields.len() {
        return Err(format!(
            "emit of {} values on stream {:?}, which declares {} fields {fields}",
            e.tuple.len(),
            e.stream,
            fields.len()
        ));
    }
    match (e.task, *direct) {
        (Some(_), false) => Err(format!(
            "direct emit (task) on stream {:?}, which is not direct",
            e.stream
        )),
        (None, true) => Err(format!(
            "emit without a task on direct stream {:?}",
            e.stream
        )),
        _ => Ok((fields, *direct)),
    }
}

impl BoltRuntime {
    pub fn new(spec: ShellSpec, ctx: &TopologyContext, restarts: Arc<AtomicU64>) -> BoltRuntime {
        let max_pending = ctx
            .config()
            .get_u64(MAX_PENDING_KEY)
            .filter(|&n| n > 0)
            .map_or(DEFAULT_MAX_PENDING, |n| {
                usize::try_from(n).unwrap_or(usize::MAX)
            });
        let mut shell = Shell::new(spec, ctx, restarts);
        shell.read_coalesce = crate::process::READ_COALESCE;
        shell.ensure_started(Instant::now());
        BoltRuntime {
            shell,
            pending: Pending::default(),
            system_ids: HashSet::default(),
            max_pending,
            pins: PinState::default(),
        }
    }

    pub fn execute(&mut self, input: &Tuple, c: &mut OutputCollector) {
        let now = Instant::now();
        self.service(c, now);
        if !self.shell.ensure_started(now) {
            self.report(c);
            if !input.is_tick_tuple() {
                c.fail(input);
            }
            return;
        }
        let sent = if input.is_tick_tuple() {
            let id = self.pending.next_id();
            self.system_ids.insert(id);
            let secs = self.shell.ctx.config().tick_tuple_freq_ms().unwrap_or(0);
            let freq = if secs.is_multiple_of(1000) {
                Node::Int((secs / 1000) as i64)
            } else {
                Node::Float(secs as f64 / 1000.0)
            };
            self.shell.send(&tuple_msg(
                &id.to_string(),
                Node::str(heron_api::SYSTEM_COMPONENT_ID),
                heron_api::TICK_STREAM_ID,
                -1,
                vec![freq],
            ))
        } else {
            // held for its ack or fail (and anchoring), without its values
            let id = self.pending.insert(input.without_values());
            self.shell.heartbeat.busy(now);
            self.shell.send_tuple(&TupleOut {
                id,
                comp: input.source_component(),
                stream: input.source_stream(),
                task: input.source_task(),
                values: input.values(),
            })
        };
        // Input tuples go out together: the instance calls poll_async (which flushes) as soon
        // as its current batch is done, because of this wake; without a waker, at once.
        let sent = sent.and_then(|()| match &self.shell.waker {
            Some(w) => {
                w.wake();
                Ok(())
            }
            None => self.shell.flush(),
        });
        if let Err(e) = sent {
            self.die(c, &e.to_string());
            return;
        }
        // Bounded: at the limit, wait (handling output, checking liveness) until a quarter
        // of the window is free again, so inputs go to the pipe in runs rather than one
        // write and one wake-up per ack.
        if self.pending.len() >= self.max_pending {
            if let Err(e) = self.shell.flush() {
                self.die(c, &e.to_string());
            }
            let resume = self.max_pending - self.max_pending.div_ceil(4);
            while self.shell.is_running() && self.pending.len() > resume {
                let deadline = self.shell.heartbeat.deadline();
                let got = match &self.shell.proc {
                    Some(p) => p.recv_deadline(deadline),
                    None => break,
                };
                match got {
                    Ok(Some(m)) => self.handle(m, c, Instant::now()),
                    Ok(None) => {}
                    Err(e) => self.die(c, &e.to_string()),
                }
                self.liveness(c, Instant::now());
            }
        }
        self.drain(c, Instant::now());
        self.report(c);
    }

    /// Sends the queued input tuples.
    pub fn flush(&mut self, c: &mut OutputCollector) {
        if let Err(e) = self.shell.flush() {
            self.die(c, &e.to_string());
        }
    }

    /// Handles whatever the subprocess sent, checks liveness, restarts it when due.
    /// Returns when to be called again.
    pub fn service(&mut self, c: &mut OutputCollector, now: Instant) -> Option<Instant> {
        if self.shell.is_running() {
            self.drain(c, now);
            self.liveness(c, now);
        }
        if !self.shell.is_running() {
            self.shell.ensure_started(now);
        }
        self.report(c);
        match self.shell.is_running() {
            true => Some(self.shell.heartbeat.deadline()),
            false => self.shell.restart_at,
        }
    }

    fn drain(&mut self, c: &mut OutputCollector, now: Instant) {
        loop {
            let got = match &self.shell.proc {
                Some(p) => p.try_recv(),
                None => return,
            };
            match got {
                Ok(Some(m)) => self.handle(m, c, now),
                Ok(None) => return,
                Err(e) => return self.die(c, &e.to_string()),
            }
        }
    }

    fn liveness(&mut self, c: &mut OutputCollector, now: Instant) {
        if !self.shell.is_running() {
            return;
        }
        match self.shell.heartbeat.check(now) {
            Liveness::Fine => {}
            Liveness::SendHeartbeat => {
                let id = self.pending.next_id();
                self.system_ids.insert(id);
                if let Err(e) = self.shell.send(&heartbeat_msg(&id.to_string())) {
                    return self.die(c, &e.to_string());
                }
                self.shell.heartbeat.sent(now);
            }
            Liveness::Hung(quiet) => {
                let t = self.shell.heartbeat.timeout();
                self.die(
                    c,
                    &format!(
                        "no message for {quiet:?} (topology.subprocess.timeout.secs = {t:?}): hung"
                    ),
                );
            }
        }
    }

    fn handle(&mut self, Incoming(msg): Incoming, c: &mut OutputCollector, now: Instant) {
        self.shell.heartbeat.heard(now);
        let msg = match msg {
            Ok(m) => m,
            Err(e) => return self.die(c, &format!("misbehaved: {e}")),
        };
        let result = match msg {
            ShellMsg::Sync => {
                self.shell.heartbeat.synced(now);
                Ok(())
            }
            ShellMsg::Ack(id) => self.release(&id, c, true),
            ShellMsg::Fail(id) => self.release(&id, c, false),
            ShellMsg::Log { msg, level } => {
                self.shell.log(level, &msg);
                Ok(())
            }
            ShellMsg::Error(msg) => {
                c.report_error(&format!(
                    "{} (task {}): {msg}",
                    self.shell.component, self.shell.task
                ));
                Ok(())
            }
            ShellMsg::Metrics { name, params } => {
                self.shell.metric(&name, &params);
                Ok(())
            }
            ShellMsg::ResetTimeout(_) => Ok(()),
            ShellMsg::Handshake { .. } => Err("a second handshake reply".to_string()),
            ShellMsg::Emit(e) => self.emit(e, c),
        };
        if let Err(reason) = result {
            self.die(c, &format!("misbehaved: {reason}"));
        }
    }

    fn release(&mut self, id: &str, c: &mut OutputCollector, ack: bool) -> Result<(), String> {
        if parse_id(id).is_some_and(|n| self.system_ids.remove(&n)) {
            return Ok(());
        }
        let released = self.pending.take(id);
        if self.pending.is_empty() {
            self.shell.heartbeat.idle();
        }
        match released {
            Some(t) if ack => c.ack(&t),
            Some(t) => c.fail(&t),
            None => {
                return Err(format!(
                    "{} of unknown tuple id {id:?}",
                    if ack { "ack" } else { "fail" }
                ))
            }
        }
        Ok(())
    }

    fn emit(&mut self, mut e: Emit, c: &mut OutputCollector) -> Result<(), String> {
        let (fields, direct) = check_emit(&self.shell.spec, &e)?;
        let (pending, system_ids) = (&self.pending, &self.system_ids);
        // the held input an anchor names: none for a tick or heartbeat (no tree to join)
        let anchor = |id: &str| match pending.get(id) {
            Some(t) => Ok(Some(t)),
            None if parse_id(id).is_some_and(|n| system_ids.contains(&n)) => Ok(None),
            None => Err(format!("emit anchored to unknown tuple id {id:?}")),
        };
        // pystorm anchors each emit to one input: no list is built for that
        let one;
        let many: Vec<&Tuple>;
        let anchors: &[&Tuple] = match e.anchors.as_slice() {
            [a] => match anchor(a)? {
                Some(t) => {
                    one = [t];
                    &one
                }
                None => &[],
            },
            all => {
                many = all
                    .iter()
                    .filter_map(|a| anchor(a).transpose())
                    .collect::<Result<_, _>>()?;
                &many
            }
        };
        let (values, answer) = emit_values(&self.shell.ctx, &mut self.pins, &mut e, fields, direct)
            .map_err(|u| u.to_string())?;
        match (e.task, &answer) {
            (Some(task), _) => c.emit_direct(task, &e.stream, anchors, values),
            // the answer holds only if the tuple goes where it says
            (None, Some(a)) if a.pinned => c.emit_pinned(&e.stream, anchors, values, &a.tasks),
            (None, _) => c.emit_ref(&e.stream, anchors, &values),
        }
        if let Some(a) = answer {
            self.shell
                .send(&task_ids_msg(&a.tasks))
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// The subprocess failed: fail every pending input (their spouts replay them), report
    /// the error, kill it and schedule its restart.
    fn die(&mut self, c: &mut OutputCollector, reason: &str) {
        if !self.shell.is_running() {
            return;
        }
        let failed = self.pending.len();
        for (_, t) in self.pending.drain() {
            c.fail(&t);
        }
        self.system_ids.clear();
        self.shell
            .died(&format!("{reason} ({failed} pending input tuples failed)"));
        self.report(c);
    }

    fn report(&mut self, c: &mut OutputCollector) {
        for e in self.shell.errors.drain(..) {
            c.report_error(&e);
        }
    }

    pub fn cleanup(&mut self) {
        self.shell.shutdown();
    }

    pub fn pid(&self) -> Option<i32> {
        self.shell.pid
    }

    pub fn pending(&self) -> usize {
        self.pending.len()
    }
}

impl ShellBolt {
    /// How many times the subprocess was restarted (or failed to start).
    pub fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }

    /// A shared handle on [`restarts`](Self::restarts), readable from other threads.
    pub fn restart_counter(&self) -> Arc<AtomicU64> {
        self.restarts.clone()
    }

    /// The pid the running subprocess reported in the handshake.
    pub fn subprocess_pid(&self) -> Option<i32> {
        self.rt.as_ref().and_then(BoltRuntime::pid)
    }

    /// Input tuples written to the subprocess and not yet acked or failed.
    pub fn pending_tuples(&self) -> usize {
        self.rt.as_ref().map_or(0, BoltRuntime::pending)
    }
}

impl Bolt for ShellBolt {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        self.spec.declare(d);
    }

    fn prepare(&mut self, ctx: &TopologyContext) {
        self.rt = Some(BoltRuntime::new(
            self.spec.clone(),
            ctx,
            self.restarts.clone(),
        ));
    }

    fn execute(&mut self, input: &Tuple, collector: &mut OutputCollector) {
        match &mut self.rt {
            Some(rt) => rt.execute(input, collector),
            None => {
                collector.report_error("ShellBolt::execute before prepare");
                collector.fail(input);
            }
        }
    }

    fn has_async_output(&self) -> bool {
        true
    }

    fn poll_async(&mut self, collector: &mut OutputCollector, now: Instant) -> Option<Instant> {
        let rt = self.rt.as_mut()?;
        rt.flush(collector);
        rt.service(collector, now)
    }

    fn cleanup(&mut self) {
        if let Some(rt) = &mut self.rt {
            rt.cleanup();
        }
    }
}

impl Drop for ShellBolt {
    fn drop(&mut self) {
        self.cleanup();
    }
}
