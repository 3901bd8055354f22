//! The executor's side of the connection to the stream manager: a flush goes straight to the
//! socket when the gateway writer has nothing in hand, and through the writer's queue
//! otherwise.
//!
//! Handing every flush to the writer thread cost a wake-up of that thread per flush, and the
//! flush waited for it to be scheduled. Writing through removes both while the socket has room.
//! The write never blocks (`MSG_DONTWAIT`): whatever the socket does not take goes to the
//! queue, so a full socket still holds the executor back only through the queue's budget, and
//! a spout held back keeps taking acks and expiring tuples as before.
//!
//! Order: the executor writes through only when the writer has written every chunk it was
//! given ([`Outbound::writer_idle`]). Only the executor queues chunks, so once that holds the
//! writer stays idle until the executor queues again.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use crate::queue::QueueTx;
use crate::stmgr_socket::StmgrSocket;
use crate::InstanceError;

/// The chunks the gateway writer has written and flushed, shared with it.
pub(crate) type WrittenCount = Arc<AtomicU64>;

/// The executor's way out: the socket, or the writer's queue.
pub(crate) struct Outbound<'a> {
    queue: &'a QueueTx<Bytes>,
    /// `None`: every chunk goes through the queue.
    socket: Option<StmgrSocket>,
    written: WrittenCount,
    /// Chunks given to the queue so far.
    queued: u64,
}

impl<'a> Outbound<'a> {
    pub fn new(
        queue: &'a QueueTx<Bytes>,
        socket: Option<StmgrSocket>,
        written: WrittenCount,
    ) -> Outbound<'a> {
        Outbound {
            queue,
            socket,
            written,
            queued: 0,
        }
    }

    /// `true` when the writer's queue has room for another chunk.
    pub fn has_room(&self) -> bool {
        !self.queue.is_full()
    }

    /// Sleeps until the writer's queue has room, or at most until `deadline`.
    pub fn wait_for_room(&self, deadline: std::time::Instant) {
        self.queue.wait_for_room(deadline);
    }

    /// Whether the writer has written everything it was given.
    fn writer_idle(&self) -> bool {
        self.written.load(Ordering::Acquire) == self.queued
    }

    /// Sends framed packets after everything sent before: as much as the socket takes now
    /// when the writer is idle, the rest (or all) through the queue, blocking while the queue
    /// is full.
    pub fn send(&mut self, frames: Bytes) -> Result<(), InstanceError> {
        let rest = if self.writer_idle() {
            match self.write_through(frames)? {
                Some(rest) => rest,
                None => return Ok(()),
            }
        } else {
            frames
        };
        let n = rest.len();
        self.queue
            .send_weighted(rest, n)
            .map_err(|_| InstanceError::Disconnected)?;
        self.queued += 1;
        Ok(())
    }

    /// Writes what the socket takes without waiting; returns the rest, if any.
    fn write_through(&mut self, frames: Bytes) -> Result<Option<Bytes>, InstanceError> {
        let Some(socket) = &self.socket else {
            return Ok(Some(frames));
        };
        let socket = socket2::SockRef::from(socket);
        let mut off = 0;
        while off < frames.len() {
            match socket.send_with_flags(&frames[off..], libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) {
                Ok(0) => return Err(InstanceError::Disconnected),
                Ok(n) => off += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    tracing::warn!(error = %e, "writing to the stream manager failed");
                    return Err(InstanceError::Disconnected);
                }
            }
        }
        Ok((off < frames.len()).then(|| frames.slice(off..)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::bounded_bytes;
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        // as the gateway's connection (else Nagle and delayed acks stall the small buffers)
        a.set_nodelay(true).unwrap();
        b.set_nodelay(true).unwrap();
        (a, b)
    }

    fn chunk(i: u32, len: usize) -> Bytes {
        let mut v = vec![(i % 251) as u8; len];
        v[..4].copy_from_slice(&i.to_be_bytes());
        Bytes::from(v)
    }

    #[test]
    fn an_idle_writer_lets_a_flush_go_straight_to_the_socket() {
        let (a, mut b) = pair();
        let (tx, rx) = bounded_bytes::<Bytes>(4, 1 << 20);
        let written = WrittenCount::default();
        let mut out = Outbound::new(&tx, Some(StmgrSocket::from(a)), written);
        out.send(chunk(7, 100)).unwrap();
        assert!(rx.try_recv().is_err(), "nothing queued");
        let mut got = vec![0u8; 100];
        b.read_exact(&mut got).unwrap();
        assert_eq!(got, chunk(7, 100));
    }

    #[test]
    fn a_busy_writer_gets_the_chunk_so_order_holds() {
        let (a, _b) = pair();
        let (tx, rx) = bounded_bytes::<Bytes>(4, 1 << 20);
        let written = WrittenCount::default();
        let mut out = Outbound::new(&tx, Some(StmgrSocket::from(a)), written.clone());
        out.queued = 1; // the writer holds one chunk it has not written yet
        out.send(chunk(1, 10)).unwrap();
        assert_eq!(rx.try_recv().unwrap(), chunk(1, 10));
        written.store(1, Ordering::Release);
        out.send(chunk(2, 10)).unwrap();
        assert_eq!(
            rx.try_recv().unwrap(),
            chunk(2, 10),
            "chunk 1 is not written yet"
        );
        written.store(3, Ordering::Release);
        out.send(chunk(3, 10)).unwrap();
        assert!(rx.try_recv().is_err(), "caught up: straight to the socket");
    }

    #[test]
    fn what_a_full_socket_does_not_take_goes_to_the_writer_in_order() {
        let (a, mut b) = pair();
        let s = socket2::SockRef::from(&a);
        s.set_send_buffer_size(64 << 10).unwrap();
        socket2::SockRef::from(&b)
            .set_recv_buffer_size(64 << 10)
            .unwrap();
        let (tx, rx) = bounded_bytes::<Bytes>(1 << 10, 64 << 20);
        let written = WrittenCount::default();
        let mut out = Outbound::new(
            &tx,
            Some(StmgrSocket::from(a.try_clone().unwrap())),
            written.clone(),
        );
        let chunks: Vec<Bytes> = (0..64).map(|i| chunk(i, 16 << 10)).collect();
        for c in &chunks {
            out.send(c.clone()).unwrap();
        }
        assert!(
            out.queued > 0,
            "the peer reads nothing, so the socket filled"
        );
        // the writer: drains the queue in order, then says so
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            let mut a = a;
            let mut n = 0;
            while let Ok(c) = rx.try_recv() {
                a.write_all(&c).unwrap();
                n += 1;
            }
            written.store(n, Ordering::Release);
        });
        let expected: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
        let mut got = vec![0u8; expected.len()];
        b.read_exact(&mut got).unwrap();
        writer.join().unwrap();
        assert!(got == expected, "bytes arrive whole and in order");
    }
}
