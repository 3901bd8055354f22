//! What a shell spout and a shell bolt share: configuration, starting the subprocess and
//! shaking hands, and handling its death (error report, kill, restart with backoff).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use heron_api::{AsyncWaker, TopologyContext};

use crate::codec::{Serializer, SERIALIZER_KEY};
use crate::engine::{Backoff, Heartbeat, DEFAULT_TIMEOUT, HEARTBEAT_INTERVAL};
use crate::handshake::handshake_msg;
use crate::incoming::Incoming;
use crate::message::{DecodeError, ShellMsg};
use crate::node::Node;
use crate::process::{environment, parse_environment, working_dir, ProcessError, ShellProcess};
use crate::ShellSpec;

/// `topology.subprocess.timeout.secs`: how long a subprocess may stay silent while an answer
/// is expected (default 30).
pub const TIMEOUT_KEY: &str = "topology.subprocess.timeout.secs";
/// `topology.shellbolt.max.pending`: input tuples a shell bolt writes to its subprocess
/// before waiting for acks (default 100).
pub const MAX_PENDING_KEY: &str = "topology.shellbolt.max.pending";
/// `topology.environment`: extra environment for every subprocess (a JSON object string, or
/// `k=v,k2=v2`).
pub const ENVIRONMENT_KEY: &str = "topology.environment";

pub(crate) struct Shell {
    pub spec: ShellSpec,
    pub ctx: TopologyContext,
    pub component: String,
    pub task: i32,
    serializer: Result<Serializer, String>,
    env: Result<Vec<(String, String)>, String>,
    pub timeout: Duration,
    pub proc: Option<ShellProcess>,
    /// The pid the subprocess reported.
    pub pid: Option<i32>,
    pub pid_dir: PathBuf,
    backoff: Backoff,
    /// When to try starting again after a failure.
    pub restart_at: Option<Instant>,
    /// Counts starts: ids of a previous incarnation are not sent to a new one.
    pub incarnation: u64,
    pub restarts: Arc<AtomicU64>,
    pub heartbeat: Heartbeat,
    pub waker: Option<AsyncWaker>,
    /// How often the stdout reader reads at most while messages keep coming (bolts:
    /// [`READ_COALESCE`](crate::process::READ_COALESCE); spouts wait for each `sync`, so
    /// none).
    pub read_coalesce: Duration,
    /// Errors to report at the next chance to (calls without a collector).
    pub errors: Vec<String>,
}

impl Shell {
    pub fn new(spec: ShellSpec, ctx: &TopologyContext, restarts: Arc<AtomicU64>) -> Shell {
        let conf = ctx.config();
        let timeout = conf
            .get_f64(TIMEOUT_KEY)
            .filter(|s| *s > 0.0)
            .map_or(DEFAULT_TIMEOUT, Duration::from_secs_f64);
        let serializer = Serializer::from_name(conf.get(SERIALIZER_KEY)).map_err(|e| e.to_string());
        let topo_env = conf
            .get(ENVIRONMENT_KEY)
            .map_or(Ok(Vec::new()), parse_environment);
        let env = topo_env.map(|t| environment(&t, &spec.env));
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let pid_dir = cwd
            .join("pids")
            .join(format!("{}-{}", ctx.component_id(), ctx.task_id()));
        Shell {
            spec,
            component: ctx.component_id().to_owned(),
            task: ctx.task_id(),
            ctx: ctx.clone(),
            serializer,
            env,
            timeout,
            proc: None,
            pid: None,
            pid_dir,
            backoff: Backoff::default(),
            restart_at: None,
            incarnation: 0,
            restarts,
            heartbeat: Heartbeat::new(Instant::now(), HEARTBEAT_INTERVAL, timeout),
            waker: ctx.async_waker().cloned(),
            read_coalesce: Duration::ZERO,
            errors: Vec::new(),
        }
    }

    pub fn is_running(&self) -> bool {
        self.proc.is_some()
    }

    /// Starts the subprocess unless it runs or its restart is not due; `Ok(true)` when it
    /// runs. A failed start is logged, queued in `errors` and retried after a backoff.
    pub fn ensure_started(&mut self, now: Instant) -> bool {
        if self.proc.is_some() {
            return true;
        }
        if self.restart_at.is_some_and(|at| now < at) {
            return false;
        }
        match self.start() {
            Ok(()) => true,
            Err(reason) => {
                let msg = format!(
                    "shell component {} (task {}) could not start {:?}: {reason}",
                    self.component, self.task, self.spec.command
                );
                self.fail_and_schedule(msg);
                false
            }
        }
    }

    fn start(&mut self) -> Result<(), String> {
        let serializer = self.serializer.clone()?;
        let env = self.env.clone()?;
        std::fs::create_dir_all(&self.pid_dir)
            .map_err(|e| format!("cannot create the pid dir {}: {e}", self.pid_dir.display()))?;
        let dir = working_dir(&self.spec);
        let mut proc = ShellProcess::spawn(
            &self.spec,
            &self.component,
            &dir,
            &env,
            serializer,
            self.waker.clone(),
            self.read_coalesce,
        )
        .map_err(|e| e.to_string())?;
        let hs = handshake_msg(&self.ctx, &self.pid_dir);
        let deadline = Instant::now() + self.timeout;
        let fail = |proc: &mut ShellProcess, what: String| {
            let status = proc.kill();
            format!(
                "{what} (exit status {}; stderr: {})",
                status_text(status),
                proc.stderr_tail()
            )
        };
        if let Err(e) = proc.send(&hs, self.timeout) {
            return Err(fail(&mut proc, format!("handshake: {e}")));
        }
        let pid = loop {
            match proc.recv_deadline(deadline) {
                Ok(Some(Incoming(msg))) => match msg {
                    Ok(ShellMsg::Handshake { pid }) => break pid,
                    Err(e @ DecodeError::NoPid(_)) => {
                        return Err(fail(&mut proc, format!("handshake: {e}")))
                    }
                    // a log line or similar before the reply
                    other => {
                        tracing::debug!(component = %self.component, "before the handshake reply: {other:?}")
                    }
                },
                Ok(None) => {
                    return Err(fail(
                        &mut proc,
                        format!("no handshake reply within {:?}", self.timeout),
                    ))
                }
                Err(e) => return Err(fail(&mut proc, format!("handshake: {e}"))),
            }
        };
        if !self.pid_dir.join(pid.to_string()).exists() {
            tracing::warn!(component = %self.component, task = self.task, pid, dir = %self.pid_dir.display(),
                "the subprocess did not create its pid file");
        }
        tracing::info!(component = %self.component, task = self.task, pid, os_pid = proc.os_pid(),
            serializer = serializer.short_name(), "subprocess started");
        self.pid = Some(pid);
        self.proc = Some(proc);
        self.incarnation += 1;
        self.restart_at = None;
        self.heartbeat = Heartbeat::new(Instant::now(), HEARTBEAT_INTERVAL, self.timeout);
        Ok(())
    }

    /// Queues `msg`; a failure means the subprocess is gone or hung.
    pub fn send(&self, msg: &Node) -> Result<(), ProcessError> {
        match &self.proc {
            Some(p) => p.send(msg, self.timeout),
            None => Err(ProcessError::BrokenPipe),
        }
    }

    /// Sends the queued input tuples (see [`ShellProcess::flush`]).
    pub fn flush(&self) -> Result<(), ProcessError> {
        match &self.proc {
            Some(p) => p.flush(),
            None => Ok(()),
        }
    }

    /// Queues a bolt's input tuple, sent on the next [`flush`](Self::flush) (see
    /// [`ShellProcess::send_tuple`]).
    pub fn send_tuple(&self, tuple: &crate::message::TupleOut<'_>) -> Result<(), ProcessError> {
        match &self.proc {
            Some(p) => p.send_tuple(tuple, self.timeout),
            None => Err(ProcessError::BrokenPipe),
        }
    }

    /// The subprocess failed for `reason`: kill it, build the full report (exit status and
    /// last stderr lines), log it, queue it in `errors`, schedule the restart. Returns the
    /// report.
    pub fn died(&mut self, reason: &str) {
        let Some(mut proc) = self.proc.take() else {
            return;
        };
        // a subprocess that exits by itself (pystorm after `error`) gets a moment to do so
        let status = proc
            .wait_exit(Duration::from_millis(200))
            .or_else(|| proc.kill());
        proc.kill();
        let started = proc.started();
        let msg = format!(
            "shell component {} (task {}, pid {}): {reason}; exit status {}; last stderr lines: {}",
            self.component,
            self.task,
            self.pid.map_or("?".into(), |p| p.to_string()),
            status_text(status),
            proc.stderr_tail()
        );
        drop(proc);
        self.backoff_from(Some(started));
        self.fail_and_schedule_only(msg);
    }

    fn fail_and_schedule(&mut self, msg: String) {
        self.backoff_from(None);
        self.fail_and_schedule_only(msg);
    }

    fn backoff_from(&mut self, started: Option<Instant>) {
        let now = Instant::now();
        let delay = self.backoff.failed(started, now);
        self.restart_at = Some(now + delay);
        self.restarts.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("heron_multilang_subprocess_restarts", "component" => self.component.clone())
            .increment(1);
    }

    fn fail_and_schedule_only(&mut self, msg: String) {
        tracing::error!(component = %self.component, task = self.task, "{msg}; restarting");
        self.pid = None;
        self.errors.push(msg);
    }

    /// Kills the subprocess for good (close / cleanup).
    pub fn shutdown(&mut self) {
        if let Some(mut p) = self.proc.take() {
            p.kill();
        }
    }

    /// Logs a `log` command at its level.
    pub fn log(&self, level: i64, msg: &str) {
        let (c, t) = (&self.component, self.task);
        match level {
            i64::MIN..=0 => tracing::trace!(component = %c, task = t, "{msg}"),
            1 => tracing::debug!(component = %c, task = t, "{msg}"),
            2 => tracing::info!(component = %c, task = t, "{msg}"),
            3 => tracing::warn!(component = %c, task = t, "{msg}"),
            _ => tracing::error!(component = %c, task = t, "{msg}"),
        }
    }

    /// Records a `metrics` command: a gauge per metric name (numbers; other values are
    /// logged at debug).
    pub fn metric(&self, name: &str, params: &Node) {
        let value = match params {
            Node::Int(i) => Some(*i as f64),
            Node::UInt(u) => Some(*u as f64),
            Node::Float(f) => Some(*f),
            _ => None,
        };
        match value {
            Some(v) => metrics::gauge!("heron_multilang_metric", "component" => self.component.clone(), "name" => name.to_owned()).set(v),
            None => tracing::debug!(component = %self.component, metric = name, "metric: {}", params.to_json()),
        }
    }
}

pub(crate) fn status_text(s: Option<std::process::ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match s {
        Some(s) => match (s.code(), s.signal()) {
            (Some(c), _) => c.to_string(),
            (None, Some(sig)) => format!("killed by signal {sig}"),
            _ => s.to_string(),
        },
        None => "unknown".into(),
    }
}
