//! The executor's end of the connection to the stream manager: the executor reads the socket
//! itself, in the same wait in which it would otherwise sleep on a queue.
//!
//! Before, a gateway reader thread blocked in `read`, decoded what came and handed it to the
//! executor through a queue. Every delivery then woke two threads: the reader (by the socket)
//! and the executor (by the reader). Under acking, where every hop carries what one spout
//! window holds, those hand-offs were a third of the instances' context switches
//! (`docs/cost-log-2026-12-05.md`, "The executor reads its own socket"). Here the executor waits in `ppoll`
//! on the socket and on a wake-up socket pair (for [`InboxWaker`]), reads with `MSG_DONTWAIT`,
//! and decodes; one wake-up per delivery.
//!
//! Pressure works as before: an executor that does not take its input leaves it in the
//! socket's receive buffer, and the stream manager sees its send queue grow.
//!
//! A malformed packet, a read error or the end of the stream closes the connection (logged)
//! and reports the inbox disconnected; nothing panics.

use std::cell::RefCell;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use heron_proto::codec::HeronCodec;

pub(crate) use crossbeam_channel::{RecvError, RecvTimeoutError, TryRecvError};

use crate::gateway::READ_CHUNK;
use crate::inbound::{self, InBatch, InMsg};
use crate::stmgr_socket::StmgrSocket;
use crate::stream_metrics::StreamCounter;

/// The executor's reader: what arrived and was not decoded yet, and how to wait for more.
pub(crate) struct Inbox {
    state: RefCell<ReadState>,
    /// The read end of the wake-up pair.
    woken: UnixStream,
    /// The write end, shared with every [`InboxWaker`].
    waker: Arc<UnixStream>,
}

struct ReadState {
    stream: StmgrSocket,
    /// What was read and not decoded yet. The socket is read straight into its spare room:
    /// once the executor dropped the packets of the previous reads, `reserve` takes the
    /// same memory again (no copy, no second buffer through the cache, no fresh pages).
    buf: BytesMut,
    codec: HeronCodec,
    /// What came with the registration, handed out first.
    initial: Option<InBatch>,
    closed: bool,
    /// The last read found the socket empty (or emptied it: it returned less than asked),
    /// and no wait has seen it readable since: the next wait need not read first (that read
    /// would only return `EAGAIN`: the executor takes its input with [`Inbox::try_recv`]
    /// until it is empty, then waits).
    drained: bool,
    /// The last read emptied the socket: the next [`Inbox::try_recv`] answers `Empty`
    /// without reading (the executor then waits, and the wait's poll sees what came since).
    /// Once only, so that a caller that never waits still reads every other call.
    skip_read: bool,
    /// `recv` calls made (for tests).
    reads: u64,
    executes: StreamCounter,
}

/// Wakes an executor waiting in its [`Inbox`] (from any thread).
#[derive(Clone)]
pub(crate) struct InboxWaker(Arc<UnixStream>);

impl InboxWaker {
    /// Wakes the executor's current or next wait.
    pub fn unpark(&self) {
        // A full pair already holds a wake-up; nothing to add.
        let _ = (&*self.0).write(&[1]);
    }
}

impl Inbox {
    /// The executor's end of a registered connection: `leftover` holds bytes already read
    /// after the registration response, `initial` what was decoded with it.
    pub fn new(
        stream: StmgrSocket,
        leftover: BytesMut,
        initial: InBatch,
        max_packet_size: usize,
        executes: StreamCounter,
    ) -> std::io::Result<Inbox> {
        let (woken, waker) = UnixStream::pair()?;
        woken.set_nonblocking(true)?;
        waker.set_nonblocking(true)?;
        let mut buf = leftover;
        buf.reserve(READ_CHUNK);
        Ok(Inbox {
            state: RefCell::new(ReadState {
                stream,
                buf,
                codec: HeronCodec::new(max_packet_size),
                initial: (!initial.is_empty()).then_some(initial),
                closed: false,
                drained: false,
                skip_read: false,
                reads: 0,
                executes,
            }),
            woken,
            waker: Arc::new(waker),
        })
    }

    /// A handle that wakes this inbox's waits.
    pub fn unparker(&self) -> InboxWaker {
        InboxWaker(Arc::clone(&self.waker))
    }

    /// The messages of what the socket holds now, without waiting. `Empty` without a read
    /// right after a read that emptied the socket (the call after that reads again): input
    /// that came since is found by the next wait at once.
    pub fn try_recv(&self) -> Result<InBatch, TryRecvError> {
        self.state.borrow_mut().try_take(false)
    }

    /// Waits until messages come; fails once the connection is closed.
    pub fn recv(&self) -> Result<InBatch, RecvError> {
        self.recv_until(None, || false).map_err(|_| RecvError)
    }

    /// Waits at most `timeout` for messages.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<InBatch, RecvTimeoutError> {
        self.recv_deadline_or(Instant::now() + timeout, || false)
    }

    /// Waits until `deadline` for messages, or until `woken()` is true (checked before each
    /// wait; whoever makes it true must wake this inbox, see [`unparker`](Self::unparker)).
    /// Returns `Timeout` on the deadline or the wake.
    pub fn recv_deadline_or(
        &self,
        deadline: Instant,
        woken: impl Fn() -> bool,
    ) -> Result<InBatch, RecvTimeoutError> {
        self.recv_until(Some(deadline), woken)
    }

    /// The waits above: until messages come, `woken()` is true, or `deadline` (if any).
    fn recv_until(
        &self,
        deadline: Option<Instant>,
        woken: impl Fn() -> bool,
    ) -> Result<InBatch, RecvTimeoutError> {
        // Every call reads the socket or polls it, so input cannot wait unseen across calls
        // that return at once (a caller whose `woken()` stays true).
        let mut waited = false;
        loop {
            let stop = woken() || deadline.is_some_and(|d| Instant::now() >= d);
            let drained = self.state.borrow().drained;
            // skipped only before a wait, or right after a wait that found the socket quiet
            if !drained || (stop && !waited) {
                match self.state.borrow_mut().try_take(stop && !waited) {
                    Ok(b) => return Ok(b),
                    Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
                    Err(TryRecvError::Empty) => {}
                }
            }
            if stop {
                return Err(RecvTimeoutError::Timeout);
            }
            self.wait(deadline);
            waited = true;
        }
    }

    /// Sleeps until the socket is readable, a waker wakes us, or `deadline`. Unless the poll
    /// found the socket quiet (a timeout, or a wake-up alone), the next wait reads it first.
    fn wait(&self, deadline: Option<Instant>) {
        let sock = self.state.borrow().stream.as_raw_fd();
        let mut fds = [
            libc::pollfd {
                fd: sock,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.woken.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let ts = deadline.map(|d| {
            let left = d.saturating_duration_since(Instant::now());
            libc::timespec {
                tv_sec: left.as_secs() as libc::time_t,
                tv_nsec: left.subsec_nanos() as libc::c_long,
            }
        });
        let ts_ptr = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: `fds` is a valid array of two pollfds and `ts_ptr` is null or points to a
        // timespec that outlives the call; no signal mask is passed.
        let rc = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, ts_ptr, std::ptr::null()) };
        // a timeout or a wake-up alone leaves the socket as empty as it was
        let socket_quiet = rc == 0 || (rc > 0 && fds[0].revents == 0);
        if !socket_quiet {
            let mut state = self.state.borrow_mut();
            (state.drained, state.skip_read) = (false, false);
        }
        if rc > 0 && fds[1].revents != 0 {
            let mut sink = [0u8; 64];
            while matches!((&self.woken).read(&mut sink), Ok(n) if n > 0) {}
        }
    }
}

impl ReadState {
    /// What is buffered or can be read now; `force`: read even right after a read that
    /// emptied the socket.
    fn try_take(&mut self, force: bool) -> Result<InBatch, TryRecvError> {
        if let Some(b) = self.initial.take() {
            return Ok(b);
        }
        if self.closed {
            return Err(TryRecvError::Disconnected);
        }
        let mut may_read = force || !std::mem::take(&mut self.skip_read);
        loop {
            let mut batch = InBatch::new();
            if let Err(e) = self.decode_buffered(&mut batch) {
                tracing::error!(error = %e, "malformed message from the stream manager; closing");
                return Err(self.close());
            }
            if !batch.is_empty() {
                return Ok(batch);
            }
            if !may_read {
                return Err(TryRecvError::Empty);
            }
            let fd = self.stream.as_raw_fd();
            self.reads += 1;
            self.buf.reserve(READ_CHUNK);
            let room = self.buf.spare_capacity_mut();
            let asked = room.len();
            // SAFETY: `room` is the buffer's spare capacity, `asked` bytes the kernel may
            // write into (uninitialised memory is fine for it); `fd` is our open socket.
            let n = unsafe { libc::recv(fd, room.as_mut_ptr().cast(), asked, libc::MSG_DONTWAIT) };
            match n {
                0 => {
                    tracing::info!("the stream manager closed the connection");
                    return Err(self.close());
                }
                n if n > 0 => {
                    let n = n as usize;
                    // SAFETY: the kernel wrote `n <= asked` bytes at the start of the spare
                    // capacity.
                    unsafe { self.buf.set_len(self.buf.len() + n) };
                    // less than asked: the socket is empty now (until a wait sees more)
                    let emptied = n < asked;
                    (self.drained, self.skip_read) = (emptied, emptied);
                    may_read = !emptied;
                }
                _ => {
                    let e = std::io::Error::last_os_error();
                    match e.kind() {
                        ErrorKind::WouldBlock => {
                            (self.drained, self.skip_read) = (true, false);
                            return Err(TryRecvError::Empty);
                        }
                        ErrorKind::Interrupted => {}
                        _ => {
                            tracing::warn!(error = %e, "reading from the stream manager failed");
                            return Err(self.close());
                        }
                    }
                }
            }
        }
    }

    /// Decodes every whole packet buffered into `batch`.
    fn decode_buffered(&mut self, batch: &mut InBatch) -> Result<(), crate::InstanceError> {
        while let Some(packet) = self.codec.decode_packet(&mut self.buf)? {
            let before = batch.len();
            inbound::decode(&packet, batch)?;
            // executes are counted per set, undecodable tuples included
            for msg in &batch[before..] {
                if let InMsg::Data(d) = msg {
                    self.executes.add(d.stream_id(), d.len() as u64);
                }
            }
        }
        Ok(())
    }

    fn close(&mut self) -> TryRecvError {
        let _ = self.stream.shutdown();
        self.closed = true;
        TryRecvError::Disconnected
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heron_proto::codec::{encode_message, ReqId};
    use heron_proto::stmgr::NewInstanceAssignmentMessage;
    use heron_proto::system::PhysicalPlan;
    use std::net::{TcpListener, TcpStream};
    use std::sync::atomic::{AtomicBool, Ordering};

    const LONG: Duration = Duration::from_secs(10);

    /// An inbox on one end of a loopback connection, and the other end.
    fn pair(initial: InBatch) -> (Inbox, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let peer = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (ours, _) = listener.accept().unwrap();
        let executes = StreamCounter::new(crate::stream_metrics::current(), "execute");
        let inbox = Inbox::new(
            StmgrSocket::from(ours),
            BytesMut::new(),
            initial,
            1 << 20,
            executes,
        )
        .unwrap();
        (inbox, peer)
    }

    fn plan_frame() -> BytesMut {
        let mut out = BytesMut::new();
        let msg = NewInstanceAssignmentMessage {
            pplan: PhysicalPlan::default(),
        };
        encode_message(&mut out, &ReqId::random(), &msg);
        out
    }

    fn plans(batch: &InBatch) -> usize {
        batch.iter().filter(|m| matches!(m, InMsg::Plan(_))).count()
    }

    #[test]
    fn what_came_with_the_registration_comes_first_then_the_socket() {
        let (inbox, mut peer) = pair(vec![InMsg::Plan(Box::default())]);
        assert_eq!(plans(&inbox.try_recv().unwrap()), 1, "the initial batch");
        assert!(matches!(inbox.try_recv(), Err(TryRecvError::Empty)));
        peer.write_all(&plan_frame()).unwrap();
        assert_eq!(plans(&inbox.recv_timeout(LONG).unwrap()), 1);
    }

    #[test]
    fn a_packet_split_across_writes_arrives_whole_and_once() {
        let (inbox, mut peer) = pair(InBatch::new());
        let mut two = plan_frame();
        two.extend_from_slice(&plan_frame());
        let cut = two.len() / 2 + 3;
        let (head, tail) = two.split_at(cut);
        let tail = tail.to_vec();
        peer.write_all(head).unwrap();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            peer.write_all(&tail).unwrap();
            peer
        });
        let mut got = 0;
        while got < 2 {
            got += plans(&inbox.recv_timeout(LONG).expect("both packets come"));
        }
        assert_eq!(got, 2);
        let _peer = writer.join().unwrap();
        assert!(matches!(inbox.try_recv(), Err(TryRecvError::Empty)));
    }

    #[test]
    fn a_malformed_packet_closes_the_connection_without_a_panic() {
        let (inbox, mut peer) = pair(InBatch::new());
        // a length over the largest packet allowed
        peer.write_all(&[0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0])
            .unwrap();
        assert_eq!(
            inbox.recv_timeout(LONG).unwrap_err(),
            RecvTimeoutError::Disconnected
        );
        assert!(matches!(inbox.try_recv(), Err(TryRecvError::Disconnected)));
        peer.set_read_timeout(Some(LONG)).unwrap();
        let mut byte = [0u8; 1];
        assert_eq!(peer.read(&mut byte).unwrap(), 0, "we closed our end");
    }

    #[test]
    fn the_end_of_the_stream_is_a_disconnection() {
        let (inbox, peer) = pair(InBatch::new());
        drop(peer);
        assert_eq!(inbox.recv().unwrap_err(), RecvError);
    }

    #[test]
    fn a_wait_after_an_empty_read_does_not_read_again_before_it_sleeps() {
        let (inbox, mut peer) = pair(InBatch::new());
        let reads = || inbox.state.borrow().reads;
        assert!(matches!(inbox.try_recv(), Err(TryRecvError::Empty)));
        assert_eq!(reads(), 1);
        // nothing comes: the wait times out without a read
        assert_eq!(
            inbox.recv_timeout(Duration::from_millis(5)).unwrap_err(),
            RecvTimeoutError::Timeout
        );
        assert_eq!(reads(), 1, "the wait only slept");
        // a wake-up alone does not make the socket worth reading either
        inbox.unparker().unpark();
        assert_eq!(
            inbox.recv_timeout(Duration::from_millis(5)).unwrap_err(),
            RecvTimeoutError::Timeout
        );
        assert_eq!(reads(), 1);
        // data that comes during a wait is read once, then the socket is read until empty
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            peer.write_all(&plan_frame()).unwrap();
            peer
        });
        assert_eq!(plans(&inbox.recv_timeout(LONG).unwrap()), 1);
        assert_eq!(reads(), 2, "one read after the socket became readable");
        // that read emptied the socket: asking again answers at once, without a read, and
        // data already waiting when the executor asks is found by the wait's poll
        let mut peer = writer.join().unwrap();
        assert!(matches!(inbox.try_recv(), Err(TryRecvError::Empty)));
        assert_eq!(reads(), 2, "no read right after the socket was emptied");
        peer.write_all(&plan_frame()).unwrap();
        assert_eq!(plans(&inbox.recv_timeout(LONG).unwrap()), 1);
        assert_eq!(reads(), 3, "the poll saw it readable: one read");
        // once only: a caller that asks again without waiting reads
        assert!(matches!(inbox.try_recv(), Err(TryRecvError::Empty)));
        assert_eq!(reads(), 3);
        peer.write_all(&plan_frame()).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(plans(&inbox.try_recv().expect("read, not skipped")), 1);
        assert_eq!(reads(), 4);
        // a caller that is woken already does not wait, so it reads: input that came since
        // its last empty read is not left behind (a bolt whose async output stays pending)
        assert!(matches!(inbox.try_recv(), Err(TryRecvError::Empty)));
        peer.write_all(&plan_frame()).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let got = inbox.recv_deadline_or(Instant::now() + LONG, || true);
        assert_eq!(plans(&got.expect("the input, not a timeout")), 1);
    }

    #[test]
    fn a_waker_ends_a_wait_early_and_a_deadline_ends_it_late() {
        let (inbox, _peer) = pair(InBatch::new());
        let start = Instant::now();
        assert_eq!(
            inbox.recv_timeout(Duration::from_millis(20)).unwrap_err(),
            RecvTimeoutError::Timeout
        );
        assert!(start.elapsed() >= Duration::from_millis(20));

        let flag = Arc::new(AtomicBool::new(false));
        let (f, waker) = (flag.clone(), inbox.unparker());
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            f.store(true, Ordering::Release);
            waker.unpark();
        });
        let start = Instant::now();
        let got = inbox.recv_deadline_or(start + LONG, || flag.load(Ordering::Acquire));
        assert_eq!(got.unwrap_err(), RecvTimeoutError::Timeout);
        assert!(start.elapsed() < LONG / 2, "woken, not timed out");
        t.join().unwrap();
    }
}
