//! Socket settings of the data connections (instance ↔ stream manager, stream manager ↔
//! stream manager).
//!
//! Linux grows a loopback socket's buffers on its own up to `tcp_rmem`/`tcp_wmem` maxima
//! (32 MB / 4 MB here), so a saturated topology can hold tens of megabytes per connection in
//! the kernel, where back pressure does not see them: measured on word count, seconds of
//! queueing latency at full rate. Fixed buffers keep the kernel's share small, and the
//! stream manager's write backlog (which back pressure watches) holds the rest.

use std::io;
use std::os::fd::AsFd;

use heron_flow::{RECV_BUFFER, SEND_BUFFER};

/// Turns Nagle off and fixes the buffer sizes of a data connection (`heron_flow`'s, which the
/// instance uses on its side).
pub(crate) fn tune_data_socket<S: AsFd>(socket: &S) -> io::Result<()> {
    let s = socket2::SockRef::from(socket);
    s.set_tcp_nodelay(true)?;
    s.set_send_buffer_size(SEND_BUFFER)?;
    s.set_recv_buffer_size(RECV_BUFFER)
}

/// Fixes the send buffer of an instance's connection on the local data socket. A Unix stream
/// socket has no receive buffer: what the instance has not read is charged to this send
/// buffer, and its kernel queue (`SIOCOUTQ`) counts it.
pub(crate) fn tune_local_socket<S: AsFd>(socket: &S) -> io::Result<()> {
    socket2::SockRef::from(socket).set_send_buffer_size(SEND_BUFFER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_fixed_and_nagle_is_off() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let stream = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        tune_data_socket(&stream).unwrap();
        let s = socket2::SockRef::from(&stream);
        assert!(s.tcp_nodelay().unwrap());
        // Linux reports twice the size asked for; other systems the size itself.
        let send = s.send_buffer_size().unwrap();
        assert!((SEND_BUFFER..=2 * SEND_BUFFER).contains(&send), "{send}");
        let recv = s.recv_buffer_size().unwrap();
        assert!((RECV_BUFFER..=2 * RECV_BUFFER).contains(&recv), "{recv}");
    }
}
