//! The bytes a connection's kernel send queue still holds (`SIOCOUTQ`), so that back pressure
//! counts them with the stream manager's own write backlog.
//!
//! A stream manager's backlog on a connection is what it has queued and not yet handed to the
//! socket. Once the reader falls behind, the kernel's send queue fills first (up to twice the
//! send buffer, 256 KiB here), and only then does the user-space backlog grow: measured flat
//! out (`docs/cost.md`), about half of the sentences queued between a spout and a split sat
//! in the socket pair, where back pressure did not see them. Adding the kernel's share
//! makes a connection's watermark bound everything the stream manager has sent and the reader
//! has not yet been able to take.
//!
//! On loopback the peer acknowledges at once, so the queue holds only what the receiver's
//! window has no room for: what the reader is behind by.

use std::net::TcpStream;
use std::os::fd::{AsFd, AsRawFd};

/// A handle on a connection's socket for reading its send queue's length.
#[derive(Debug)]
pub(crate) struct KernelQueue {
    /// A duplicate of the socket's descriptor: it stays valid for as long as the handle
    /// lives, whatever the connection's tasks do with theirs.
    socket: TcpStream,
}

impl KernelQueue {
    /// A handle on `socket` (duplicated); `None` when the descriptor cannot be duplicated.
    pub fn new(socket: &impl AsFd) -> Option<KernelQueue> {
        let socket = socket2::SockRef::from(socket).try_clone().ok()?;
        Some(KernelQueue {
            socket: socket.into(),
        })
    }

    /// The bytes written to the socket and not yet acknowledged by the peer (0 when the
    /// kernel does not say).
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
    use std::io::Write;
    use std::net::TcpListener;

    #[test]
    fn a_reader_that_does_not_read_leaves_bytes_in_the_send_queue() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut tx = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (_rx, _) = listener.accept().unwrap();
        let q = KernelQueue::new(&tx).expect("a duplicate");
        assert_eq!(q.unsent(), 0, "nothing written yet");
        // more than the receiver's buffers can take: the rest waits in the send queue
        tx.set_nonblocking(true).unwrap();
        let chunk = vec![7u8; 64 << 10];
        let mut written = 0usize;
        for _ in 0..200 {
            match tx.write(&chunk) {
                Ok(n) => written += n,
                Err(_) => break,
            }
        }
        let unsent = q.unsent();
        assert!(unsent > 0, "wrote {written} bytes, none waiting");
        assert!(unsent <= written, "{unsent} waiting of {written} written");
    }
}
