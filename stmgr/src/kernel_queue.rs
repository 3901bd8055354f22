//! The bytes a connection's kernel send queue still holds (`SIOCOUTQ`), so that back pressure
//! counts them with the stream manager's own write backlog.
//!
//! A stream manager's backlog on a connection is what it has queued and not yet handed to the
//! socket. Once the reader falls behind, the kernel's send queue fills first (up to twice the
//! send buffer, 256 KiB here), and only then does the user-space backlog grow: measured flat
//! out (`docs/cost-log.md`), about half of the sentences queued between a spout and a split sat
//! in the socket pair, where back pressure did not see them. Adding the kernel's share
//! makes a connection's watermark bound everything the stream manager has sent and the reader
//! has not yet been able to take.
//!
//! On loopback TCP the peer acknowledges at once, so the queue holds only what the receiver's
//! window has no room for: what the reader is behind by. On an instance's local socket (a Unix
//! stream socket, `heron_flow::local_socket`) there is no receive buffer: everything written and
//! not yet read is charged to the sender, so the queue holds all of it.

use std::cell::Cell;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// How long a reading of the queue stands. The stream manager ends thousands of rounds a
/// second (tens of thousands with acking) and looks at every connection in each; a system
/// call per connection per round is too many.
pub(crate) const REFRESH: Duration = Duration::from_millis(1);

/// A handle on a connection's socket for reading its send queue's length.
#[derive(Debug)]
pub(crate) struct KernelQueue {
    /// A duplicate of the socket's descriptor: it stays valid for as long as the handle
    /// lives, whatever the connection's tasks do with theirs.
    socket: OwnedFd,
    /// The last reading: when, the bytes written to the socket by then, and what it held.
    last: Cell<Option<Reading>>,
}

#[derive(Debug, Clone, Copy)]
struct Reading {
    at: Instant,
    written: u64,
    unsent: usize,
}

impl KernelQueue {
    /// A handle on `socket` (duplicated); `None` when the descriptor cannot be duplicated.
    pub fn new(socket: &impl AsFd) -> Option<KernelQueue> {
        let socket = socket.as_fd().try_clone_to_owned().ok()?;
        Some(KernelQueue {
            socket,
            last: Cell::new(None),
        })
    }

    /// The queue's length at `now`, when the connection has written `written` bytes in all:
    /// read from the kernel at most every [`REFRESH`], and not at all while nothing was
    /// written since a reading that found it empty (it cannot have grown).
    pub fn unsent_at(&self, now: Instant, written: u64) -> usize {
        if let Some(r) = self.last.get() {
            let idle = r.written == written && r.unsent == 0;
            if idle || now.saturating_duration_since(r.at) < REFRESH {
                return r.unsent;
            }
        }
        let unsent = self.unsent();
        self.last.set(Some(Reading {
            at: now,
            written,
            unsent,
        }));
        unsent
    }

    /// The bytes written to the socket and not yet acknowledged by the peer (TCP) or not yet
    /// read by it (a Unix stream socket); 0 when the kernel does not say.
    pub fn unsent(&self) -> usize {
        let mut n: libc::c_int = 0;
        // SAFETY: `SIOCOUTQ` writes one `c_int` through the pointer, which points at `n`; the
        // descriptor is our own duplicate, open for as long as `self` lives.
        let rc = unsafe { libc::ioctl(self.socket.as_raw_fd(), libc::TIOCOUTQ, &mut n) };
        if rc == 0 {
            usize::try_from(n).unwrap_or(0)
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    /// Writes without blocking until the socket takes no more; the bytes written.
    fn fill(tx: &mut TcpStream) -> usize {
        tx.set_nonblocking(true).unwrap();
        let chunk = vec![7u8; 64 << 10];
        let mut written = 0usize;
        for _ in 0..200 {
            match tx.write(&chunk) {
                Ok(n) => written += n,
                Err(_) => break,
            }
        }
        written
    }

    #[test]
    fn a_reader_that_does_not_read_leaves_bytes_in_the_send_queue() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut tx = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut rx, _) = listener.accept().unwrap();
        let q = KernelQueue::new(&tx).expect("a duplicate");
        assert_eq!(q.unsent(), 0, "nothing written yet");
        // more than the receiver's buffers can take: the rest waits in the send queue
        let written = fill(&mut tx);
        let unsent = q.unsent();
        assert!(unsent > 0, "wrote {written} bytes, none waiting");
        assert!(unsent <= written, "{unsent} waiting of {written} written");

        // a reading stands for REFRESH, then the kernel is asked again
        let t0 = Instant::now();
        let w = written as u64;
        assert_eq!(q.unsent_at(t0, w), unsent);
        let mut buf = vec![0u8; 1 << 20];
        let deadline = Instant::now() + Duration::from_secs(10);
        while q.unsent() > 0 {
            assert!(Instant::now() < deadline, "the reader never took the bytes");
            let _ = rx.read(&mut buf).unwrap();
        }
        assert_eq!(q.unsent_at(t0 + REFRESH / 2, w), unsent, "within REFRESH");
        assert_eq!(q.unsent_at(t0 + REFRESH * 2, w), 0, "read again");

        // an empty queue with nothing written since is not asked after again
        let more = fill(&mut tx);
        assert!(q.unsent() > 0);
        assert_eq!(q.unsent_at(t0 + REFRESH * 4, w), 0, "nothing written since");
        assert!(
            q.unsent_at(t0 + REFRESH * 4, w + more as u64) > 0,
            "written since"
        );
    }
}
