//! The socket side of a connection: a reader task that splits packets off a large buffer and
//! hands them to the core in batches, and a writer task that writes whole rounds of frames.
//!
//! A read that brings many packets becomes one event for the core; the core answers with at
//! most one buffer per connection per round, so both directions cost one wake-up and one
//! syscall per batch, not per tuple.

use crate::event::Event;
use crate::ids::{ConnId, Incoming};
use crate::kernel_queue::KernelQueue;
use bytes::{Bytes, BytesMut};
use heron_auth::Link;
use heron_proto::HeronCodec;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::{mpsc, watch};
use tokio::task::AbortHandle;
use tracing::{debug, info, warn};

/// Bytes the reader asks the socket for at least, per read.
const READ_CHUNK: usize = 64 * 1024;

/// A connection's write counters, shared by its handle and its writer task.
#[derive(Debug, Default)]
struct WriteCounts {
    /// Bytes queued for writing and not written yet (the write backlog).
    queued: AtomicUsize,
    /// Bytes written since the connection opened (its drain rate, for back pressure).
    written: AtomicU64,
}

/// The core's end of a connection. Dropping it closes the connection once everything sent
/// to it has been written.
#[derive(Debug)]
pub(crate) struct ConnHandle {
    tx: mpsc::UnboundedSender<Bytes>,
    reader: AbortHandle,
    /// What the writer has been given and has written.
    counts: Arc<WriteCounts>,
    /// `true` while the reader must not read (back pressure on a spout).
    paused: watch::Sender<bool>,
    /// The socket's send queue, counted with the backlog.
    kernel: Option<KernelQueue>,
}

impl ConnHandle {
    /// Queues whole frames for writing.
    pub fn send(&self, frames: Bytes) {
        self.counts
            .queued
            .fetch_add(frames.len(), Ordering::Relaxed);
        // A writer that stopped has reported the connection closed; nothing to do.
        let _ = self.tx.send(frames);
    }

    /// The bytes queued for writing and not written yet.
    pub fn backlog(&self) -> usize {
        self.counts.queued.load(Ordering::Relaxed)
    }

    /// [`backlog`](Self::backlog) and what the socket's send queue held at most
    /// [`REFRESH`](crate::kernel_queue::REFRESH) before `now`: everything sent to the
    /// connection that the reader has not taken ([`KernelQueue`]).
    /// `written` is [`written`](Self::written), read once by the caller for both.
    pub fn backlog_with_kernel(&self, now: Instant, written: u64) -> usize {
        let kernel = self.kernel.as_ref();
        self.backlog() + kernel.map_or(0, |k| k.unsent_at(now, written))
    }

    /// The bytes written since the connection opened.
    pub fn written(&self) -> u64 {
        self.counts.written.load(Ordering::Relaxed)
    }

    /// Stops (`true`) or resumes reading from the connection.
    pub fn pause_reads(&self, pause: bool) {
        self.paused.send_replace(pause);
    }
}

impl Drop for ConnHandle {
    fn drop(&mut self) {
        // The writer ends when its queue closes, after writing what is queued; with both
        // halves gone the socket closes.
        self.reader.abort();
    }
}

/// Starts the reader and writer of `stream`. `initial` holds bytes already read from it.
/// Events (packets, close) go to `events` tagged with `conn`.
pub(crate) fn spawn(
    stream: Link,
    conn: ConnId,
    label: String,
    initial: BytesMut,
    codec: HeronCodec,
    events: mpsc::Sender<Event>,
) -> ConnHandle {
    let (tx, rx) = mpsc::unbounded_channel();
    let counts = Arc::new(WriteCounts::default());
    let (paused, paused_rx) = watch::channel(false);
    let writer_counts = Arc::clone(&counts);
    let writer_events = events.clone();
    let kernel = KernelQueue::new(&stream);
    let reader = match stream {
        // Plain TCP splits without a lock; TLS shares its session between the halves.
        Link::Plain(tcp) => {
            let (r, w) = tcp.into_split();
            tokio::spawn(write_loop(w, rx, conn, writer_counts, writer_events));
            tokio::spawn(read_loop(r, initial, codec, conn, label, paused_rx, events))
        }
        Link::Local(unix) => {
            let (r, w) = unix.into_split();
            tokio::spawn(write_loop(w, rx, conn, writer_counts, writer_events));
            tokio::spawn(read_loop(r, initial, codec, conn, label, paused_rx, events))
        }
        tls @ Link::Tls(_) => {
            let (r, w) = tokio::io::split(tls);
            tokio::spawn(write_loop(w, rx, conn, writer_counts, writer_events));
            tokio::spawn(read_loop(r, initial, codec, conn, label, paused_rx, events))
        }
    }
    .abort_handle();
    ConnHandle {
        tx,
        reader,
        counts,
        paused,
        kernel,
    }
}

async fn read_loop<R: AsyncRead + Unpin>(
    mut r: R,
    mut buf: BytesMut,
    codec: HeronCodec,
    conn: ConnId,
    label: String,
    mut paused: watch::Receiver<bool>,
    events: mpsc::Sender<Event>,
) {
    let mut packets = Vec::new();
    loop {
        let failure = loop {
            match codec.decode_packet(&mut buf) {
                Ok(Some(p)) => packets.push(p),
                Ok(None) => break None,
                Err(e) => break Some(e),
            }
        };
        if !packets.is_empty() {
            let batch = std::mem::take(&mut packets);
            if events
                .send(Event::Packets {
                    conn,
                    packets: batch,
                })
                .await
                .is_err()
            {
                return;
            }
        }
        if let Some(e) = failure {
            warn!(conn, peer = %label, "closing connection: {e}");
            break;
        }
        if *paused.borrow() && paused.wait_for(|p| !*p).await.is_err() {
            break;
        }
        if buf.capacity() - buf.len() < READ_CHUNK {
            buf.reserve(READ_CHUNK);
        }
        match r.read_buf(&mut buf).await {
            Ok(0) if buf.is_empty() => {
                debug!(conn, peer = %label, "connection closed by peer");
                break;
            }
            Ok(0) => {
                warn!(conn, peer = %label, "connection closed in the middle of a packet ({} bytes buffered)", buf.len());
                break;
            }
            Ok(_) => {}
            Err(e) => {
                info!(conn, peer = %label, "read failed: {e}");
                break;
            }
        }
    }
    let _ = events.send(Event::Closed { conn }).await;
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut w: W,
    mut rx: mpsc::UnboundedReceiver<Bytes>,
    conn: ConnId,
    counts: Arc<WriteCounts>,
    events: mpsc::Sender<Event>,
) {
    while let Some(frames) = rx.recv().await {
        if let Err(e) = w.write_all(&frames).await {
            info!(conn, "write failed: {e}");
            let _ = events.send(Event::Closed { conn }).await;
            return;
        }
        counts.queued.fetch_sub(frames.len(), Ordering::Relaxed);
        counts
            .written
            .fetch_add(frames.len() as u64, Ordering::Relaxed);
    }
    let _ = w.shutdown().await;
}

/// Accepts connections on `listener` and hands each to the core as an [`Event::Accepted`];
/// with TLS or a secret, only once the peer has passed them (TLS first, then the secret's
/// handshake; in a task of its own, so a slow or silent peer holds up no one). A peer that
/// fails is logged with its address and closed; the core never hears of it, so it cannot
/// displace a registered peer.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    kind: Incoming,
    tls: Option<heron_auth::Tls>,
    auth: Option<heron_auth::Secret>,
    events: mpsc::Sender<Event>,
) {
    let slots = heron_auth::PendingHandshakes::default();
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                if let Err(e) = crate::net::tune_data_socket(&stream) {
                    debug!(%peer, "cannot set the socket options: {e}");
                }
                let admission = if tls.is_none() && auth.is_none() {
                    Admission::Now(Link::Plain(stream))
                } else {
                    let (tls, auth) = (tls.clone(), auth.clone());
                    Admission::After(async move {
                        heron_auth::admit(stream, tls.as_ref(), auth.as_ref()).await
                    })
                };
                if !hand_over(admission, peer.to_string(), kind, &slots, &events).await {
                    return;
                }
            }
            Err(e) => {
                // Usually out of file descriptors; give the process a moment.
                warn!("accept failed on the {kind:?} server: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Accepts connections of `kind` on a local data socket ([`heron_flow::local_socket`]: this
/// container's instances, or the host's other stream managers) and hands each to the core as
/// [`accept_loop`] does for TCP (no TLS: the socket never leaves the host).
pub(crate) async fn accept_local_loop(
    listener: UnixListener,
    kind: Incoming,
    auth: Option<heron_auth::Secret>,
    events: mpsc::Sender<Event>,
) {
    let slots = heron_auth::PendingHandshakes::default();
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                if let Err(e) = crate::net::tune_local_socket(&stream) {
                    debug!("cannot set the local socket's options: {e}");
                }
                let mut link = Link::Local(stream);
                let admission = match auth.clone() {
                    None => Admission::Now(link),
                    Some(secret) => Admission::After(async move {
                        heron_auth::accept(&mut link, &secret).await.map(|()| link)
                    }),
                };
                let peer = format!("the local {kind:?} socket");
                if !hand_over(admission, peer, kind, &slots, &events).await {
                    return;
                }
            }
            Err(e) => {
                warn!("accept failed on the local {kind:?} socket: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// A new connection: ready for the core, or once its handshake passes.
enum Admission<F> {
    Now(Link),
    After(F),
}

/// Hands a new connection from `peer` to the core: at once, or in a task of its own once its
/// handshake passed (holding one of `slots` meanwhile; with none free, or when the handshake
/// fails, the connection is logged and closed). `false` once the core is gone.
async fn hand_over<F>(
    admission: Admission<F>,
    peer: String,
    kind: Incoming,
    slots: &heron_auth::PendingHandshakes,
    events: &mpsc::Sender<Event>,
) -> bool
where
    F: std::future::Future<Output = Result<Link, heron_auth::AuthError>> + Send + 'static,
{
    let handshake = match admission {
        Admission::Now(stream) => {
            let accepted = Event::Accepted { stream, peer, kind };
            return events.send(accepted).await.is_ok();
        }
        Admission::After(handshake) => handshake,
    };
    let Some(slot) = slots.admit(&peer) else {
        return true;
    };
    let events = events.clone();
    tokio::spawn(async move {
        let admitted = handshake.await;
        drop(slot);
        match admitted {
            Ok(stream) => {
                let _ = events.send(Event::Accepted { stream, peer, kind }).await;
            }
            Err(e) => {
                warn!(%peer, "refusing a {kind:?} connection from {peer}: authentication failed: {e}")
            }
        }
    });
    true
}
