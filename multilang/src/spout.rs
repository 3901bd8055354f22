//! [`ShellSpout`]'s protocol: each `next_tuple`, `ack`, `fail`, `activate` and `deactivate`
//! is a command the subprocess answers with `sync`, after any emits. Message ids keep their
//! JSON type: the host tracks each tuple under a sequence number and sends back exactly the
//! id the subprocess gave.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use heron_api::{
    MessageId, OutputFieldsDeclarer, Spout, SpoutOutputCollector, TopologyContext, Value,
};

use crate::bolt::check_emit;
use crate::incoming::Incoming;
use crate::message::{command_msg, task_ids_msg, Emit, ShellMsg};
use crate::node::Node;
use crate::shell::Shell;
use crate::task_ids::{emit_values, PinState};
use crate::{ShellSpec, ShellSpout};

/// An emit made while no collector was at hand (during ack, fail, activate, deactivate),
/// emitted at the next `next_tuple`.
struct Deferred {
    stream: String,
    task: Option<i32>,
    /// The tasks of a pinned emit (a `need_task_ids` answer on a shuffled stream).
    pinned: Option<Vec<i32>>,
    values: Vec<Value>,
    msg: Option<MessageId>,
}

pub(crate) struct SpoutRuntime {
    shell: Shell,
    /// Host message id (a sequence number) → (incarnation, the subprocess's own id).
    ids: HashMap<i64, (u64, Node)>,
    next_msg: i64,
    deferred: Vec<Deferred>,
    active: bool,
    /// The round robins of `need_task_ids` answers on shuffled streams.
    pins: PinState,
}

impl SpoutRuntime {
    fn new(spec: ShellSpec, ctx: &TopologyContext, restarts: Arc<AtomicU64>) -> SpoutRuntime {
        let mut rt = SpoutRuntime {
            shell: Shell::new(spec, ctx, restarts),
            ids: HashMap::new(),
            next_msg: 1,
            deferred: Vec::new(),
            // the instance calls `deactivate` right after `open` when the topology is not running
            active: true,
            pins: PinState::default(),
        };
        rt.start(Instant::now());
        rt
    }

    /// Starts the subprocess if it is not running and its restart is due, and tells it it is
    /// active. `true` when it runs.
    fn start(&mut self, now: Instant) -> bool {
        if self.shell.is_running() {
            return true;
        }
        if !self.shell.ensure_started(now) {
            return false;
        }
        if self.active {
            self.command("activate", Node::str(""), None);
        }
        self.shell.is_running()
    }

    /// Sends a command and handles messages until `sync`. Without a collector emits are
    /// deferred. Failures kill the subprocess (restarted later).
    fn command(&mut self, command: &str, id: Node, mut c: Option<&mut SpoutOutputCollector>) {
        if let Err(e) = self.shell.send(&command_msg(command, id)) {
            return self.shell.died(&e.to_string());
        }
        loop {
            let deadline = Instant::now() + self.shell.timeout;
            let got = match &self.shell.proc {
                Some(p) => p.recv_deadline(deadline),
                None => return,
            };
            let Incoming(msg) = match got {
                Ok(Some(n)) => n,
                Ok(None) => {
                    let t = self.shell.timeout;
                    return self.shell.died(&format!(
                        "no reply to {command:?} within {t:?} (topology.subprocess.timeout.secs): hung"
                    ));
                }
                Err(e) => return self.shell.died(&e.to_string()),
            };
            let msg = match msg {
                Ok(m) => m,
                Err(e) => return self.shell.died(&format!("misbehaved: {e}")),
            };
            let result = match msg {
                ShellMsg::Sync => return,
                ShellMsg::Emit(e) => self.emit(e, c.as_deref_mut()),
                ShellMsg::Log { msg, level } => {
                    self.shell.log(level, &msg);
                    Ok(())
                }
                ShellMsg::Error(msg) => {
                    let m = format!("{} (task {}): {msg}", self.shell.component, self.shell.task);
                    match c.as_deref_mut() {
                        Some(c) => c.report_error(&m),
                        None => self.shell.errors.push(m),
                    }
                    Ok(())
                }
                ShellMsg::Metrics { name, params } => {
                    self.shell.metric(&name, &params);
                    Ok(())
                }
                ShellMsg::Ack(_) | ShellMsg::Fail(_) | ShellMsg::ResetTimeout(_) => {
                    Err("a spout sent a bolt command".to_string())
                }
                ShellMsg::Handshake { .. } => Err("a second handshake reply".to_string()),
            };
            if let Err(reason) = result {
                return self.shell.died(&format!("misbehaved: {reason}"));
            }
        }
    }

    fn emit(&mut self, mut e: Emit, c: Option<&mut SpoutOutputCollector>) -> Result<(), String> {
        let (fields, direct) = check_emit(&self.shell.spec, &e)?;
        let (values, answer) = emit_values(&self.shell.ctx, &mut self.pins, &mut e, fields, direct)
            .map_err(|u| u.to_string())?;
        let msg = e.id.map(|id| {
            let seq = self.next_msg;
            self.next_msg += 1;
            self.ids.insert(seq, (self.shell.incarnation, id));
            Value::Int(seq)
        });
        // the answer holds only if the tuple goes where it says
        let pinned = answer.as_ref().filter(|a| a.pinned).map(|a| &a.tasks);
        match c {
            Some(c) => match (e.task, pinned) {
                (Some(task), _) => c.emit_direct(task, &e.stream, values, msg),
                (None, Some(tasks)) => c.emit_pinned(&e.stream, values, msg, tasks),
                (None, None) => c.emit_stream(&e.stream, values, msg),
            },
            None => self.deferred.push(Deferred {
                stream: e.stream.into_owned(),
                task: e.task,
                pinned: pinned.cloned(),
                values,
                msg,
            }),
        }
        if let Some(a) = answer {
            self.shell
                .send(&task_ids_msg(&a.tasks))
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    fn next_tuple(&mut self, c: &mut SpoutOutputCollector) {
        for d in self.deferred.drain(..) {
            match (d.task, &d.pinned) {
                (Some(t), _) => c.emit_direct(t, &d.stream, d.values, d.msg),
                (None, Some(tasks)) => c.emit_pinned(&d.stream, d.values, d.msg, tasks),
                (None, None) => c.emit_stream(&d.stream, d.values, d.msg),
            }
        }
        if self.start(Instant::now()) {
            self.command("next", Node::str(""), Some(c));
        }
        for e in self.shell.errors.drain(..) {
            c.report_error(&e);
        }
    }

    /// Forwards an ack or fail with the subprocess's own id, unless the id belongs to a
    /// previous incarnation.
    fn ack_or_fail(&mut self, command: &str, msg_id: &MessageId) {
        let Some(seq) = msg_id.as_i64() else { return };
        let Some((incarnation, id)) = self.ids.remove(&seq) else {
            tracing::debug!(component = %self.shell.component, seq, "{command} for an unknown message id");
            return;
        };
        if incarnation != self.shell.incarnation || !self.shell.is_running() {
            tracing::debug!(component = %self.shell.component, id = %id.to_json(),
                "not forwarding {command}: the id is from a previous subprocess");
            return;
        }
        self.command(command, id, None);
    }

    fn set_active(&mut self, active: bool) {
        self.active = active;
        if self.shell.is_running() {
            self.command(
                if active { "activate" } else { "deactivate" },
                Node::str(""),
                None,
            );
        }
    }
}

impl ShellSpout {
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
        self.rt.as_ref().and_then(|r| r.shell.pid)
    }
}

impl Spout for ShellSpout {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        self.spec.declare(d);
    }

    fn open(&mut self, ctx: &TopologyContext) {
        self.rt = Some(SpoutRuntime::new(
            self.spec.clone(),
            ctx,
            self.restarts.clone(),
        ));
    }

    fn next_tuple(&mut self, collector: &mut SpoutOutputCollector) {
        match &mut self.rt {
            Some(rt) => rt.next_tuple(collector),
            None => collector.report_error("ShellSpout::next_tuple before open"),
        }
    }

    fn ack(&mut self, msg_id: MessageId) {
        if let Some(rt) = &mut self.rt {
            rt.ack_or_fail("ack", &msg_id);
        }
    }

    fn fail(&mut self, msg_id: MessageId) {
        if let Some(rt) = &mut self.rt {
            rt.ack_or_fail("fail", &msg_id);
        }
    }

    fn activate(&mut self) {
        if let Some(rt) = &mut self.rt {
            rt.set_active(true);
        }
    }

    fn deactivate(&mut self) {
        if let Some(rt) = &mut self.rt {
            rt.set_active(false);
        }
    }

    fn close(&mut self) {
        if let Some(rt) = &mut self.rt {
            rt.shell.shutdown();
        }
    }
}

impl Drop for ShellSpout {
    fn drop(&mut self) {
        self.close();
    }
}
