//! The two hand-offs between the instance's executor thread and a subprocess's I/O threads,
//! built on a mutex and condition variables so that neither side spins or yields while it
//! waits (a `crossbeam-channel` receive spins and calls `sched_yield` before it sleeps: on
//! two cores that cost the shell bolt's host more CPU than its protocol work).
//!
//! * [`Outbox`]: the executor encodes messages straight into one shared byte buffer; the
//!   writer thread takes the whole buffer and writes it with one `write` call. Bounded in
//!   bytes: a sender waits (up to its timeout) while the buffer is full. With a
//!   [`DirectWrite`] target, a sender that finds the writer idle and nothing queued writes
//!   itself (a non-blocking `write`; what the pipe does not take is queued for the writer),
//!   which spares a thread wake-up per message when the subprocess keeps up.
//! * [`Inbox`]: the reader thread queues decoded messages; the executor takes every queued
//!   one under one lock. Bounded in messages: the reader waits while it is full, so a fast
//!   subprocess blocks on its own stdout pipe.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why a hand-off failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PipeError {
    /// The other side is gone.
    Closed,
    /// No room came within the timeout.
    Timeout,
}

struct OutState {
    buf: Vec<u8>,
    closed: bool,
    /// The writer thread holds a batch it has not finished writing.
    writing: bool,
}

/// Where a sender may write directly: a pipe in non-blocking mode.
pub trait DirectWrite: Send + Sync {
    /// One non-blocking write: the bytes taken, `Ok(0)` when the pipe is full.
    fn write_now(&self, bytes: &[u8]) -> std::io::Result<usize>;
}

/// Writes as much of `bytes` as `to` takes without blocking; the count written, or `Err`
/// when the pipe is broken.
pub fn write_available(to: &dyn DirectWrite, bytes: &[u8]) -> Result<usize, std::io::Error> {
    let mut done = 0;
    while done < bytes.len() {
        match to.write_now(&bytes[done..]) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Bytes for the subprocess's stdin (see the module docs).
pub struct Outbox {
    direct: Option<Box<dyn DirectWrite>>,
    state: Mutex<OutState>,
    /// The writer waits here for bytes.
    filled: Condvar,
    /// Senders wait here for room.
    drained: Condvar,
    capacity: usize,
}

impl Outbox {
    /// An outbox holding at most `capacity` bytes (a single larger message still goes in when
    /// the buffer is empty), with senders writing directly to `direct` when they can.
    pub fn with_direct(capacity: usize, direct: Option<Box<dyn DirectWrite>>) -> Outbox {
        Outbox {
            direct,
            state: Mutex::new(OutState {
                buf: Vec::new(),
                closed: false,
                writing: false,
            }),
            filled: Condvar::new(),
            drained: Condvar::new(),
            capacity,
        }
    }

    /// Appends what `encode` writes, waiting up to `timeout` for room, and sends it
    /// ([`send_lazy`](Self::send_lazy) then [`flush`](Self::flush)).
    pub fn send(
        &self,
        timeout: Duration,
        encode: impl FnOnce(&mut Vec<u8>),
    ) -> Result<(), PipeError> {
        if self.append(timeout, encode)? {
            self.flush()
        } else {
            // bytes are already queued: they go first, with the writer
            self.filled.notify_one();
            Ok(())
        }
    }

    /// Appends what `encode` writes without writing or waking anyone: the caller
    /// [`flush`](Self::flush)es later (e.g. once per batch of input tuples), so one `write`
    /// carries many messages. Waiting for room wakes the writer first.
    pub fn send_lazy(
        &self,
        timeout: Duration,
        encode: impl FnOnce(&mut Vec<u8>),
    ) -> Result<(), PipeError> {
        self.append(timeout, encode).map(drop)
    }

    /// Appends what `encode` writes once there is room; whether the buffer was empty before.
    fn append(
        &self,
        timeout: Duration,
        encode: impl FnOnce(&mut Vec<u8>),
    ) -> Result<bool, PipeError> {
        let deadline = Instant::now() + timeout;
        let mut s = lock(&self.state);
        loop {
            if s.closed {
                return Err(PipeError::Closed);
            }
            if s.buf.is_empty() || s.buf.len() < self.capacity {
                break;
            }
            self.filled.notify_one();
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(PipeError::Timeout);
            }
            s = self
                .drained
                .wait_timeout(s, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        let was_empty = s.buf.is_empty();
        encode(&mut s.buf);
        Ok(was_empty)
    }

    /// Sends what [`send_lazy`](Self::send_lazy) queued: written here when the writer is
    /// idle (what the pipe does not take goes to the writer), else left to the writer.
    pub fn flush(&self) -> Result<(), PipeError> {
        let mut s = lock(&self.state);
        if s.buf.is_empty() {
            return if s.closed {
                Err(PipeError::Closed)
            } else {
                Ok(())
            };
        }
        if let (Some(direct), false) = (&self.direct, s.writing) {
            let Ok(done) = write_available(direct.as_ref(), &s.buf) else {
                s.closed = true;
                drop(s);
                self.filled.notify_all();
                return Err(PipeError::Closed);
            };
            s.buf.drain(..done);
            if s.buf.is_empty() {
                return Ok(());
            }
        }
        drop(s);
        self.filled.notify_one();
        Ok(())
    }

    /// The writer side: swaps everything queued into `into` (emptied first), waiting for
    /// bytes; `false` once closed and drained.
    pub fn take(&self, into: &mut Vec<u8>) -> bool {
        into.clear();
        let mut s = lock(&self.state);
        // the previous batch (if any) is written
        s.writing = false;
        while s.buf.is_empty() {
            if s.closed {
                return false;
            }
            s = self.filled.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        std::mem::swap(&mut s.buf, into);
        s.writing = true;
        drop(s);
        self.drained.notify_all();
        true
    }

    /// Closes it: senders fail from now on; the writer stops once it took what is left.
    pub fn close(&self) {
        lock(&self.state).closed = true;
        self.filled.notify_all();
        self.drained.notify_all();
    }
}

struct InState<T> {
    queue: VecDeque<T>,
    closed: bool,
    /// Takers waiting on `filled` (a notify with none waiting would still be a syscall).
    waiting: usize,
}

/// Decoded messages from the subprocess (see the module docs).
pub struct Inbox<T> {
    state: Mutex<InState<T>>,
    /// The executor waits here for messages.
    filled: Condvar,
    /// The reader waits here for room.
    drained: Condvar,
    capacity: usize,
}

impl<T> Inbox<T> {
    /// An inbox holding at most `capacity` messages.
    pub fn new(capacity: usize) -> Inbox<T> {
        Inbox {
            state: Mutex::new(InState {
                queue: VecDeque::new(),
                closed: false,
                waiting: 0,
            }),
            filled: Condvar::new(),
            drained: Condvar::new(),
            capacity: capacity.max(1),
        }
    }

    /// The reader side: queues `item`, waiting while full; `Err(item)` once closed.
    #[cfg(test)]
    pub fn push(&self, item: T) -> Result<(), T> {
        let mut one = vec![item];
        self.push_all(&mut one)
            .map_err(|()| one.pop().expect("not taken"))
    }

    /// The reader side: queues every item of `items` (emptied) under one lock, waiting while
    /// full; `Err(())` once closed (the items stay in `items`).
    pub fn push_all(&self, items: &mut Vec<T>) -> Result<(), ()> {
        let mut s = lock(&self.state);
        while s.queue.len() >= self.capacity && !s.closed {
            s = self.drained.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        if s.closed {
            return Err(());
        }
        let wake = s.queue.is_empty() && s.waiting > 0;
        s.queue.extend(items.drain(..));
        drop(s);
        if wake {
            self.filled.notify_one();
        }
        Ok(())
    }

    /// Moves every queued message to the back of `into`, waiting until `deadline` for at
    /// least one (`None`: do not wait). `Err(Closed)` when nothing is queued and the reader
    /// is gone.
    pub fn take_all(
        &self,
        into: &mut VecDeque<T>,
        deadline: Option<Instant>,
    ) -> Result<(), PipeError> {
        let mut s = lock(&self.state);
        loop {
            if !s.queue.is_empty() {
                let was_full = s.queue.len() >= self.capacity;
                into.append(&mut s.queue);
                drop(s);
                if was_full {
                    self.drained.notify_one();
                }
                return Ok(());
            }
            if s.closed {
                return Err(PipeError::Closed);
            }
            let Some(deadline) = deadline else {
                return Ok(());
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            s.waiting += 1;
            s = self
                .filled
                .wait_timeout(s, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            s.waiting -= 1;
        }
    }

    /// Closes it from either side: the reader's pushes fail, waiters wake.
    pub fn close(&self) {
        lock(&self.state).closed = true;
        self.filled.notify_all();
        self.drained.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn outbox_batches_bytes_and_bounds_them() {
        let o = Outbox::with_direct(8, None);
        o.send(Duration::ZERO, |b| b.extend_from_slice(b"abc"))
            .unwrap();
        o.send(Duration::ZERO, |b| b.extend_from_slice(b"defgh"))
            .unwrap();
        // full (8 bytes): a sender times out
        let t = Instant::now();
        assert_eq!(
            o.send(Duration::from_millis(30), |b| b.push(b'x')),
            Err(PipeError::Timeout)
        );
        assert!(t.elapsed() >= Duration::from_millis(30));
        let mut got = Vec::new();
        assert!(o.take(&mut got));
        assert_eq!(got, b"abcdefgh", "one batch, in order");
        // room again; a message bigger than the capacity goes into an empty buffer
        o.send(Duration::ZERO, |b| b.extend_from_slice(&[1; 20]))
            .unwrap();
        o.close();
        assert_eq!(o.send(Duration::ZERO, |_| {}), Err(PipeError::Closed));
        assert!(
            o.take(&mut got),
            "what was queued before close is still written"
        );
        assert_eq!(got.len(), 20);
        assert!(!o.take(&mut got));
    }

    /// Takes at most `room` bytes per call, then reports a full pipe.
    struct Small {
        got: Arc<Mutex<Vec<u8>>>,
        room: usize,
    }

    impl DirectWrite for Small {
        fn write_now(&self, bytes: &[u8]) -> std::io::Result<usize> {
            let mut g = lock(&self.got);
            if g.len() >= self.room {
                return Ok(0);
            }
            let n = bytes.len().min(self.room - g.len());
            g.extend_from_slice(&bytes[..n]);
            Ok(n)
        }
    }

    /// An outbox over a [`Small`] pipe of `room` bytes, and what the pipe got.
    fn small_outbox(room: usize) -> (Outbox, Arc<Mutex<Vec<u8>>>) {
        let got = Arc::new(Mutex::new(Vec::new()));
        let pipe = Small {
            got: got.clone(),
            room,
        };
        (Outbox::with_direct(64, Some(Box::new(pipe))), got)
    }

    #[test]
    fn direct_writes_when_idle_and_queues_what_the_pipe_does_not_take() {
        let (o, got) = small_outbox(5);
        o.send(Duration::ZERO, |b| b.extend_from_slice(b"abc"))
            .unwrap();
        assert_eq!(*lock(&got), b"abc", "written by the sender itself");
        o.send(Duration::ZERO, |b| b.extend_from_slice(b"defg"))
            .unwrap();
        assert_eq!(*lock(&got), b"abcde", "as much as the pipe took");
        // the rest waits for the writer, and so does what comes after it (order)
        o.send(Duration::ZERO, |b| b.extend_from_slice(b"h"))
            .unwrap();
        let mut batch = Vec::new();
        assert!(o.take(&mut batch));
        assert_eq!(batch, b"fgh");
        // while the writer holds a batch, senders queue behind it
        o.send(Duration::ZERO, |b| b.push(b'i')).unwrap();
        assert_eq!(*lock(&got), b"abcde");
        assert!(o.take(&mut batch));
        assert_eq!(batch, b"i");
    }

    #[test]
    fn lazy_sends_go_out_together_on_flush() {
        let (o, got) = small_outbox(6);
        o.send_lazy(Duration::ZERO, |b| b.extend_from_slice(b"ab"))
            .unwrap();
        o.send_lazy(Duration::ZERO, |b| b.extend_from_slice(b"cd"))
            .unwrap();
        assert!(lock(&got).is_empty(), "nothing written before the flush");
        o.flush().unwrap();
        assert_eq!(*lock(&got), b"abcd");
        // an eager send after lazy ones keeps the order
        o.send_lazy(Duration::ZERO, |b| b.extend_from_slice(b"ef"))
            .unwrap();
        o.send(Duration::ZERO, |b| b.extend_from_slice(b"gh"))
            .unwrap();
        let mut batch = Vec::new();
        assert!(o.take(&mut batch));
        assert_eq!(batch, b"efgh");
        // while the writer holds a batch, a flush leaves the bytes to it
        o.send_lazy(Duration::ZERO, |b| b.extend_from_slice(b"ij"))
            .unwrap();
        o.flush().unwrap();
        assert_eq!(*lock(&got), b"abcd");
        assert!(o.take(&mut batch));
        assert_eq!(batch, b"ij");

        // what the pipe does not take on a flush is left for the writer
        let (o, got) = small_outbox(6);
        o.send_lazy(Duration::ZERO, |b| b.extend_from_slice(b"abcdefgh"))
            .unwrap();
        o.flush().unwrap();
        assert_eq!(*lock(&got), b"abcdef");
        assert!(o.take(&mut batch));
        assert_eq!(batch, b"gh");
    }

    #[test]
    fn outbox_wakes_a_waiting_writer_and_a_waiting_sender() {
        let o = Arc::new(Outbox::with_direct(4, None));
        let writer = {
            let o = o.clone();
            std::thread::spawn(move || {
                let (mut all, mut buf) = (Vec::new(), Vec::new());
                while o.take(&mut buf) {
                    all.extend_from_slice(&buf);
                }
                all
            })
        };
        for i in 0..100u8 {
            o.send(Duration::from_secs(10), |b| b.extend_from_slice(&[i; 3]))
                .unwrap();
        }
        o.close();
        let all = writer.join().unwrap();
        assert_eq!(all.len(), 300);
        assert!(all.chunks(3).enumerate().all(|(i, c)| c == [i as u8; 3]));
    }

    #[test]
    fn inbox_hands_over_everything_in_order_and_blocks_a_full_reader() {
        let inbox = Arc::new(Inbox::new(2));
        let reader = {
            let inbox = inbox.clone();
            std::thread::spawn(move || {
                for i in 0..10 {
                    if inbox.push(i).is_err() {
                        return i;
                    }
                }
                10
            })
        };
        let mut got = VecDeque::new();
        while got.len() < 10 {
            inbox
                .take_all(&mut got, Some(Instant::now() + Duration::from_secs(10)))
                .unwrap();
        }
        assert_eq!(got, (0..10).collect::<VecDeque<_>>());
        assert_eq!(reader.join().unwrap(), 10);
        // nothing queued, no wait: returns at once; after close: Closed
        inbox.take_all(&mut got, None).unwrap();
        let t = Instant::now();
        inbox
            .take_all(&mut got, Some(Instant::now() + Duration::from_millis(20)))
            .unwrap();
        assert!(t.elapsed() >= Duration::from_millis(20));
        inbox.close();
        assert_eq!(inbox.take_all(&mut got, None), Err(PipeError::Closed));
        assert_eq!(inbox.push(11), Err(11));
    }
}
