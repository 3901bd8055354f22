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

/// Send buffer size asked for (the kernel doubles it for its bookkeeping). What the send queue
/// holds counts towards back pressure (`kernel_queue.rs`).
pub(crate) const DATA_SOCKET_BUFFER: usize = 128 * 1024;
/// Receive buffer size asked for: smaller than the send buffer, because what a receive queue
/// holds is invisible to the sender's back pressure, while its sender's send queue is counted.
/// 64 KiB instead of 128 KiB cut the flat-out p50 by a sixth at the same throughput
/// (`docs/cost.md`, "Back pressure counts the kernel's send queue"). Not smaller: the kernel
/// doubles it, and a window below one loopback segment (64 KiB) stalls the sender on its
/// persist timer (16 KiB collapsed a word count to 1 % of its throughput).
pub(crate) const DATA_RECV_BUFFER: usize = 64 * 1024;

/// Turns Nagle off and fixes the buffer sizes of a data connection.
pub(crate) fn tune_data_socket<S: AsFd>(socket: &S) -> io::Result<()> {
    let s = socket2::SockRef::from(socket);
    s.set_tcp_nodelay(true)?;
    s.set_send_buffer_size(DATA_SOCKET_BUFFER)?;
    s.set_recv_buffer_size(DATA_RECV_BUFFER)
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
        assert!(
            (DATA_SOCKET_BUFFER..=2 * DATA_SOCKET_BUFFER).contains(&send),
            "{send}"
        );
        let recv = s.recv_buffer_size().unwrap();
        assert!(
            (DATA_RECV_BUFFER..=2 * DATA_RECV_BUFFER).contains(&recv),
            "{recv}"
        );
    }
}
