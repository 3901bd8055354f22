//! The subprocess: started in its own process group with `PR_SET_PDEATHSIG = SIGKILL` (a
//! `kill -9` of the instance takes it down too), stdin fed by a writer thread through a
//! bounded queue, stdout decoded by a reader thread into a bounded channel (a fast
//! subprocess blocks on its pipe: back pressure), stderr logged line by line at INFO under
//! the component's name and its last lines kept for error reports. Killed with SIGKILL to
//! its group when dropped.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use heron_api::AsyncWaker;

use crate::codec::{CodecError, Serializer};
use crate::incoming::Incoming;
use crate::node::Node;
use crate::pipe::{write_available, DirectWrite, Inbox, Outbox, PipeError};
use crate::ShellSpec;

/// Messages the reader thread may hold before the subprocess blocks on its stdout.
const INBOX_CAPACITY: usize = 1024;
/// Bytes the writer thread may hold before a send waits.
const OUTBOX_BYTES: usize = 1 << 20;
/// Stderr lines kept for error reports.
const STDERR_TAIL: usize = 20;
/// While messages keep coming, a shell bolt's stdout reader reads at most once per this
/// long, so a subprocess that writes each message on its own (pystorm does) costs one
/// wake-up per run of messages, not one per message (here a wake-up costs more than decoding
/// a dozen messages). A read after a quiet spell is not delayed.
pub const READ_COALESCE: Duration = Duration::from_micros(500);

/// Why talking to the subprocess failed.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// The command could not be started.
    #[error("cannot start {command:?} in {dir}: {source}")]
    Spawn {
        /// argv.
        command: Vec<String>,
        /// The working directory.
        dir: String,
        /// Why.
        source: std::io::Error,
    },
    /// The spec has no command.
    #[error("the shell component has an empty command")]
    EmptyCommand,
    /// Reading or decoding its output failed (EOF included).
    #[error(transparent)]
    Read(#[from] CodecError),
    /// Its stdin is closed (the writer thread is gone).
    #[error("the subprocess's stdin is closed (broken pipe)")]
    BrokenPipe,
    /// Its stdin did not take a message within the timeout.
    #[error("the subprocess did not read its stdin for {0:?}")]
    WriteTimeout(Duration),
}

/// Where the subprocess runs: `spec.working_dir`, else `resources/` under the current
/// directory when it exists, else the current directory.
pub fn working_dir(spec: &ShellSpec) -> PathBuf {
    if let Some(d) = &spec.working_dir {
        return d.clone();
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let res = cwd.join("resources");
    if res.is_dir() {
        res
    } else {
        cwd
    }
}

/// Parses `topology.environment`: a JSON object of key → value (`{"A": "1"}`; non-string
/// values are written as JSON), or `k=v,k2=v2`.
pub fn parse_environment(text: &str) -> Result<Vec<(String, String)>, String> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(Vec::new());
    }
    if t.starts_with('{') {
        let v: serde_json::Map<String, serde_json::Value> = serde_json::from_str(t)
            .map_err(|e| format!("topology.environment is not a JSON object: {e}"))?;
        return Ok(v
            .into_iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => (k, s),
                other => (k, other.to_string()),
            })
            .collect());
    }
    t.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.to_owned())),
            _ => Err(format!("topology.environment entry {p:?} is not key=value")),
        })
        .collect()
}

/// The variables to set on top of the inherited environment: `topology` (from
/// `topology.environment`) first, then the component's own, which win; a `PATH` entry is
/// appended to the inherited `PATH`.
pub fn environment(
    topology: &[(String, String)],
    component: &[(String, String)],
) -> Vec<(String, String)> {
    let inherited_path = std::env::var("PATH").unwrap_or_default();
    let mut out: Vec<(String, String)> = Vec::new();
    for (k, v) in topology.iter().chain(component) {
        let v = if k == "PATH" {
            let base = out
                .iter()
                .rev()
                .find(|(k, _)| k == "PATH")
                .map_or(inherited_path.clone(), |(_, v)| v.clone());
            if base.is_empty() {
                v.clone()
            } else {
                format!("{base}:{v}")
            }
        } else {
            v.clone()
        };
        out.retain(|(k2, _)| k2 != k);
        out.push((k.clone(), v));
    }
    out
}

/// A running subprocess.
pub struct ShellProcess {
    child: Child,
    pid: i32,
    serializer: Serializer,
    outbox: Arc<Outbox>,
    inbox: Arc<Inbox<Result<Incoming, CodecError>>>,
    /// Messages taken from the inbox, not yet handed out.
    taken: RefCell<VecDeque<Result<Incoming, CodecError>>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    started: Instant,
    status: Option<ExitStatus>,
}

impl ShellProcess {
    /// Starts `spec.command` for `component` (logs under that name) with `env` added, in
    /// `dir`. `waker` is woken for each run of messages read; while they keep coming, stdout
    /// is read at most once per `coalesce` (zero: whenever bytes arrive).
    pub fn spawn(
        spec: &ShellSpec,
        component: &str,
        dir: &Path,
        env: &[(String, String)],
        serializer: Serializer,
        waker: Option<AsyncWaker>,
        coalesce: Duration,
    ) -> Result<ShellProcess, ProcessError> {
        let (program, args) = spec
            .command
            .split_first()
            .ok_or(ProcessError::EmptyCommand)?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        // SAFETY: getpid is async-signal-safe; called before the fork.
        let parent = unsafe { libc::getpid() };
        // SAFETY: between fork and exec the closure only calls setpgid, prctl and getppid,
        // which are async-signal-safe, and builds io::Errors from errno without allocating.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setpgid(0, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                let sig = libc::SIGKILL as libc::c_ulong;
                if libc::prctl(libc::PR_SET_PDEATHSIG, sig, 0, 0, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != parent {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|source| ProcessError::Spawn {
            command: spec.command.clone(),
            dir: dir.display().to_string(),
            source,
        })?;
        let pid = child.id() as i32;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");

        let stdin = Arc::new(NonBlockingStdin::new(stdin));
        let outbox = Arc::new(Outbox::with_direct(
            OUTBOX_BYTES,
            Some(Box::new(stdin.clone())),
        ));
        let out = outbox.clone();
        spawn_thread(format!("{component}-stdin"), move || {
            write_loop(&stdin, &out)
        });

        let inbox = Arc::new(Inbox::new(INBOX_CAPACITY));
        let inb = inbox.clone();
        spawn_thread(format!("{component}-stdout"), move || {
            let mut r = BufReader::with_capacity(64 << 10, stdout);
            let mut batch = Vec::new();
            let mut last_read: Option<Instant> = None;
            loop {
                let since = last_read.map_or(coalesce, |t| t.elapsed());
                if since < coalesce && r.buffer().is_empty() {
                    std::thread::sleep(coalesce - since);
                }
                last_read = Some(Instant::now());
                // every message already complete in the buffer goes over in one hand-off
                // (one lock, one wake-up), never waiting for more bytes to do so
                let last = loop {
                    let msg = serializer.read::<Incoming>(&mut r);
                    let last = msg.is_err();
                    batch.push(msg);
                    if last || batch.len() >= 64 || !serializer.has_complete(r.buffer()) {
                        break last;
                    }
                };
                if inb.push_all(&mut batch).is_err() {
                    return;
                }
                if let Some(w) = &waker {
                    w.wake();
                }
                if last {
                    // the error (EOF included) is the last message
                    inb.close();
                    return;
                }
            }
        });

        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let (t, name) = (tail.clone(), component.to_owned());
        spawn_thread(format!("{component}-stderr"), move || {
            let mut r = BufReader::new(stderr);
            let mut line = Vec::new();
            loop {
                line.clear();
                match r.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        let text = String::from_utf8_lossy(&line).trim_end().to_owned();
                        tracing::info!(component = %name, pid, "{text}");
                        let mut q = t.lock().unwrap_or_else(|e| e.into_inner());
                        if q.len() == STDERR_TAIL {
                            q.pop_front();
                        }
                        q.push_back(text);
                    }
                }
            }
        });
        Ok(ShellProcess {
            child,
            pid,
            serializer,
            outbox,
            inbox,
            taken: RefCell::new(VecDeque::new()),
            stderr: tail,
            started: Instant::now(),
            status: None,
        })
    }

    /// The OS pid of the started command (also its process group id).
    pub fn os_pid(&self) -> i32 {
        self.pid
    }

    /// When it was started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Queues `msg` for its stdin (encoded straight into the writer's buffer), waiting at most
    /// `timeout` for room.
    pub fn send(&self, msg: &Node, timeout: Duration) -> Result<(), ProcessError> {
        let serializer = self.serializer;
        match self.outbox.send(timeout, |buf| serializer.encode(msg, buf)) {
            Ok(()) => Ok(()),
            Err(PipeError::Timeout) => Err(ProcessError::WriteTimeout(timeout)),
            Err(PipeError::Closed) => Err(ProcessError::BrokenPipe),
        }
    }

    /// Queues a bolt's input tuple without sending it yet ([`flush`](Self::flush) does):
    /// JSON written straight from its values, msgpack through its message tree.
    pub fn send_tuple(
        &self,
        tuple: &crate::message::TupleOut<'_>,
        timeout: Duration,
    ) -> Result<(), ProcessError> {
        match self.serializer {
            Serializer::Json => {
                let sent = self.outbox.send_lazy(timeout, |buf| {
                    serde_json::to_writer(&mut *buf, tuple).expect("a Vec never fails");
                    buf.extend_from_slice(b"\nend\n");
                });
                match sent {
                    Ok(()) => Ok(()),
                    Err(PipeError::Timeout) => Err(ProcessError::WriteTimeout(timeout)),
                    Err(PipeError::Closed) => Err(ProcessError::BrokenPipe),
                }
            }
            Serializer::Msgpack => self.send(&tuple.to_node(), timeout),
        }
    }

    /// Sends the tuples [`send_tuple`](Self::send_tuple) queued.
    pub fn flush(&self) -> Result<(), ProcessError> {
        self.outbox.flush().map_err(|_| ProcessError::BrokenPipe)
    }

    /// The next message if one was read.
    pub fn try_recv(&self) -> Result<Option<Incoming>, ProcessError> {
        self.next(None)
    }

    /// The next message, waiting until `deadline`; `None` when none came.
    pub fn recv_deadline(&self, deadline: Instant) -> Result<Option<Incoming>, ProcessError> {
        self.next(Some(deadline))
    }

    /// A taken message, else whatever the inbox has (waiting until `deadline`, if any).
    fn next(&self, deadline: Option<Instant>) -> Result<Option<Incoming>, ProcessError> {
        let mut taken = self.taken.borrow_mut();
        if taken.is_empty() && self.inbox.take_all(&mut taken, deadline).is_err() {
            return Err(CodecError::Eof.into());
        }
        match taken.pop_front() {
            Some(m) => Ok(Some(m?)),
            None => Ok(None),
        }
    }

    /// The last lines it wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        let q = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        q.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// Kills its process group (SIGKILL) and reaps it; returns its exit status.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            // Its exit status first, if it already exited by itself.
            if let Ok(Some(s)) = self.child.try_wait() {
                self.status = Some(s);
            }
            // SAFETY: kill(2) on our own child's process group (pgid = its pid > 1).
            if self.pid > 1 {
                unsafe {
                    libc::kill(-self.pid, libc::SIGKILL);
                }
            }
            self.outbox.close();
            self.inbox.close();
            if self.status.is_none() {
                self.status = self.child.wait().ok();
            }
        }
        self.status
    }

    /// Waits up to `timeout` for it to exit by itself; its status if it did.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(s)) = self.child.try_wait() {
                self.status = Some(s);
                return Some(s);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for ShellProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The subprocess's stdin in non-blocking mode, shared by the writer thread and the senders'
/// direct writes (the pipe stays open while either holds it).
struct NonBlockingStdin(ChildStdin);

impl NonBlockingStdin {
    fn new(stdin: ChildStdin) -> NonBlockingStdin {
        let fd = stdin.as_raw_fd();
        // SAFETY: fcntl on a descriptor we own; failure leaves it blocking, which only makes
        // direct writes wait (the writer thread polls either way).
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            if flags != -1 {
                libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
            }
        }
        NonBlockingStdin(stdin)
    }

    /// Waits until the pipe takes bytes again (or is broken).
    fn wait_writable(&self) {
        let mut p = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        unsafe {
            libc::poll(&mut p, 1, 1000);
        }
    }
}

impl DirectWrite for Arc<NonBlockingStdin> {
    fn write_now(&self, bytes: &[u8]) -> std::io::Result<usize> {
        match (&self.0).write(bytes) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(0),
            other => other,
        }
    }
}

/// Writes everything queued in one `write` per batch until the outbox closes or the pipe
/// breaks (then the outbox closes: later sends fail as a broken pipe).
fn write_loop(stdin: &Arc<NonBlockingStdin>, outbox: &Outbox) {
    let mut buf = Vec::new();
    while outbox.take(&mut buf) {
        let mut done = 0;
        while done < buf.len() {
            match write_available(stdin, &buf[done..]) {
                Ok(n) => done += n,
                Err(_) => {
                    outbox.close();
                    return;
                }
            }
            if done < buf.len() {
                stdin.wait_writable();
            }
        }
    }
}

fn spawn_thread(name: String, f: impl FnOnce() + Send + 'static) {
    if let Err(e) = std::thread::Builder::new().name(name.clone()).spawn(f) {
        tracing::error!(thread = %name, error = %e, "cannot start a subprocess I/O thread");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_parsing_and_path_appending() {
        assert_eq!(
            parse_environment(r#"{"A": "1", "N": 2}"#).unwrap(),
            vec![
                ("A".to_string(), "1".to_string()),
                ("N".to_string(), "2".to_string())
            ]
        );
        assert_eq!(
            parse_environment("A=1, B=x=y").unwrap(),
            vec![
                ("A".to_string(), "1".to_string()),
                ("B".to_string(), "x=y".to_string())
            ]
        );
        assert!(parse_environment("novalue").is_err());
        assert!(parse_environment("{bad").is_err());
        let inherited = std::env::var("PATH").unwrap_or_default();
        let env = environment(
            &[("A".into(), "topo".into())],
            &[
                ("A".into(), "comp".into()),
                ("PATH".into(), "/opt/x".into()),
            ],
        );
        assert!(
            env.contains(&("A".to_string(), "comp".to_string())),
            "the component's wins"
        );
        let path = &env.iter().find(|(k, _)| k == "PATH").unwrap().1;
        assert!(
            path.ends_with(":/opt/x") && path.starts_with(&inherited),
            "{path}"
        );
    }
}
