//! The connection to the local stream manager: its local data socket
//! ([`heron_flow::local_socket`]) when it offers one, else TCP to `127.0.0.1:port`.
//!
//! Both carry the same bytes, and the same handshake with a shared secret; the executor reads
//! and writes either through its descriptor (`inbox.rs`, `outbound.rs`).

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// A connected socket to the stream manager: TCP or the local data socket, one type for both
/// (`socket2`'s), so that nothing past the connect needs to know which.
#[derive(Debug)]
pub(crate) struct StmgrSocket {
    socket: socket2::Socket,
    /// The local data socket (else TCP).
    local: bool,
}

impl From<TcpStream> for StmgrSocket {
    fn from(tcp: TcpStream) -> StmgrSocket {
        StmgrSocket {
            socket: tcp.into(),
            local: false,
        }
    }
}

impl StmgrSocket {
    /// Connects to the stream manager whose instance server is on `port`: its local data
    /// socket first when `local`, then TCP. The error is TCP's.
    pub fn connect(port: u16, local: bool) -> io::Result<StmgrSocket> {
        if local {
            if let Ok(s) =
                heron_flow::local_socket::address(port).and_then(|a| UnixStream::connect_addr(&a))
            {
                return Ok(StmgrSocket {
                    socket: s.into(),
                    local: true,
                });
            }
        }
        TcpStream::connect(("127.0.0.1", port)).map(StmgrSocket::from)
    }

    /// `"local socket"` or `"tcp"`, for logs.
    pub fn transport(&self) -> &'static str {
        if self.local {
            "local socket"
        } else {
            "tcp"
        }
    }

    /// Proves this instance with the topology's shared secret (`heron_auth`), on either
    /// transport, with [`heron_auth::HANDSHAKE_TIMEOUT`] on each read and write.
    pub fn authenticate(
        &mut self,
        secret: &heron_auth::Secret,
    ) -> Result<(), heron_auth::AuthError> {
        let io = |e| heron_auth::AuthError::Io("setting the handshake's timeouts".into(), e);
        let limit = Some(heron_auth::HANDSHAKE_TIMEOUT);
        self.socket.set_read_timeout(limit).map_err(io)?;
        self.socket.set_write_timeout(limit).map_err(io)?;
        let outcome = heron_auth::connect_blocking(&mut self.socket, secret);
        self.socket.set_read_timeout(None).map_err(io)?;
        self.socket.set_write_timeout(None).map_err(io)?;
        outcome
    }

    /// Turns Nagle off (TCP) and fixes the buffer sizes. A Unix stream socket has no receive
    /// buffer of its own (what waits for the reader is charged to the writer's send buffer),
    /// so only its send buffer is set.
    pub fn tune(&self, send_buffer: usize, recv_buffer: usize) -> io::Result<()> {
        if !self.local {
            self.socket.set_tcp_nodelay(true)?;
            self.socket.set_recv_buffer_size(recv_buffer)?;
        }
        self.socket.set_send_buffer_size(send_buffer)
    }

    /// Another handle on the same socket.
    pub fn try_clone(&self) -> io::Result<StmgrSocket> {
        Ok(StmgrSocket {
            socket: self.socket.try_clone()?,
            local: self.local,
        })
    }

    /// Shuts both directions down.
    pub fn shutdown(&self) -> io::Result<()> {
        self.socket.shutdown(Shutdown::Both)
    }

    /// As the std sockets' `set_read_timeout`.
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.socket.set_read_timeout(timeout)
    }
}

impl Read for StmgrSocket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.socket.read(buf)
    }
}

impl Write for StmgrSocket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.socket.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.socket.flush()
    }
}

impl AsFd for StmgrSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }
}

impl AsRawFd for StmgrSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.socket.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_socket_is_taken_when_offered_and_tcp_otherwise() {
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = tcp.local_addr().unwrap().port();
        // no local socket under this port's name: TCP
        let s = StmgrSocket::connect(port, true).unwrap();
        assert_eq!(s.transport(), "tcp");
        drop(s);

        let addr = heron_flow::local_socket::address(port).unwrap();
        let local = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
        let mut s = StmgrSocket::connect(port, true).unwrap();
        assert_eq!(s.transport(), "local socket");
        s.tune(64 << 10, 64 << 10).unwrap();
        let (mut peer, _) = local.accept().unwrap();
        s.write_all(b"ping").unwrap();
        let mut got = [0u8; 4];
        peer.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"ping");

        // not asked for: TCP even though the local socket is there
        assert_eq!(
            StmgrSocket::connect(port, false).unwrap().transport(),
            "tcp"
        );
    }
}
