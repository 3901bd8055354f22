//! The gateway: the connection to the local stream manager (connect, register), the
//! executor's [`Inbox`] on it, and a socket writer thread (which writes what the executor
//! could not write through itself, `outbound.rs`).

use std::io::{BufWriter, ErrorKind, Read, Write};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::inbox::Inbox;
use crate::queue::{bounded_bytes, QueueRx, QueueTx};
use bytes::{Bytes, BytesMut};
use heron_proto::codec::{encode_message, HeronCodec, ReqId};
use heron_proto::stmgr::{RegisterInstanceRequest, RegisterInstanceResponse};
use heron_proto::system::{Instance, InstanceInfo, StatusCode};

use crate::inbound::{self, InBatch, InMsg};
use crate::outbound::WrittenCount;
use crate::stmgr_socket::StmgrSocket;
use crate::stream_metrics::StreamCounter;
use crate::{InstanceConfig, InstanceError, RunOptions};

/// Bytes asked of the socket per read (registration here, then the executor's inbox).
pub(crate) const READ_CHUNK: usize = 128 << 10;
/// Capacity of the writer's buffer.
const WRITE_BUFFER: usize = 64 << 10;

/// A registered connection and what arrived with the registration.
pub(crate) struct Registered {
    stream: StmgrSocket,
    leftover: BytesMut,
    initial: InBatch,
    /// The largest packet accepted from the stream manager.
    max_packet_size: usize,
}

/// The first wait between connection attempts; it doubles with each failure up to
/// `connect_retry_interval`. An instance usually starts a few milliseconds before its stream
/// manager listens, and a fixed 1-s retry made one topology start in three take a second longer.
const FIRST_CONNECT_RETRY: Duration = Duration::from_millis(5);

fn connect(config: &InstanceConfig, options: &RunOptions) -> Result<StmgrSocket, InstanceError> {
    let start = Instant::now();
    let mut attempts = 0u32;
    let mut wait = FIRST_CONNECT_RETRY.min(options.connect_retry_interval);
    loop {
        attempts += 1;
        match StmgrSocket::connect(config.stmgr_port, true) {
            Ok(s) => {
                tracing::info!(
                    port = config.stmgr_port,
                    transport = s.transport(),
                    attempts,
                    "connected to the stream manager"
                );
                return Ok(s);
            }
            Err(e) if start.elapsed() + wait > options.connect_timeout => {
                return Err(InstanceError::Connect {
                    port: config.stmgr_port,
                    waited: start.elapsed(),
                    source: e,
                });
            }
            Err(e) => {
                tracing::debug!(port = config.stmgr_port, error = %e, "stream manager not reachable yet");
                thread::sleep(wait);
                wait = (wait * 2).min(options.connect_retry_interval);
            }
        }
    }
}

/// The receive buffer asked of the connection to the stream manager. It is the executor's
/// in-queue: the executor reads the socket itself (`inbox.rs`), so what waits for it waits
/// here. The stream managers' data connections ask for [`heron_flow::RECV_BUFFER`] (64 KiB);
/// with no queue behind the socket, that left a bolt a single read of slack and a flat-out
/// word count lost 3 % (9.82 → 9.64 M words/s), idle while its stream managers waited for the
/// bolts' windows. The 256 KiB of the in-queue that it replaces restores the throughput (1.035 ×
/// the build with the queue) and holds the flat-out p99 under that build's (35 against 39 ms;
/// `docs/cost-log-2026-12-05.md`, "The executor reads its own socket").
const RECV_BUFFER: usize = crate::QUEUE_BYTES;

/// Connects (retrying) and registers this instance; the physical plan, if the response
/// carries one, is in the initial batch. The socket's send buffer is `send_buffer` bytes.
pub(crate) fn connect_and_register(
    config: &InstanceConfig,
    options: &RunOptions,
    send_buffer: usize,
) -> Result<Registered, InstanceError> {
    let mut stream = connect(config, options)?;
    stream.tune(send_buffer, RECV_BUFFER)?;
    if let Some(secret) = &config.auth {
        stream.authenticate(secret)?;
    }
    let reqid = ReqId::random();
    let request = RegisterInstanceRequest {
        instance: Instance {
            instance_id: config.instance_id.clone(),
            stmgr_id: config.stmgr_id.clone(),
            info: InstanceInfo {
                task_id: config.task_id,
                component_index: config.component_index,
                component_name: config.component_name.clone(),
                params: Vec::new(),
                remote_debugger_port: None,
            },
        },
        topology_name: config.topology_name.clone(),
        topology_id: config.topology_id.clone(),
    };
    let mut out = BytesMut::new();
    encode_message(&mut out, &reqid, &request);
    stream.write_all(&out)?;

    let codec = HeronCodec::new(config.max_packet_size);
    let deadline = Instant::now() + options.register_timeout;
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let mut scratch = vec![0u8; READ_CHUNK];
    let mut initial = InBatch::new();
    loop {
        while let Some(packet) = codec.decode_packet(&mut buf)? {
            if packet.is::<RegisterInstanceResponse>() && packet.reqid == reqid {
                let response: RegisterInstanceResponse = packet.decode()?;
                if response.status.status != StatusCode::Ok as i32 {
                    let code = StatusCode::try_from(response.status.status)
                        .map(|c| c.as_str_name().to_owned())
                        .unwrap_or_else(|_| response.status.status.to_string());
                    return Err(InstanceError::RegisterRefused {
                        instance_id: config.instance_id.clone(),
                        message: format!("{code}: {}", response.status.message.unwrap_or_default()),
                    });
                }
                tracing::info!(
                    instance_id = %config.instance_id,
                    with_pplan = response.pplan.is_some(),
                    "registered with the stream manager"
                );
                if let Some(pplan) = response.pplan {
                    initial.push(InMsg::Plan(Box::new(pplan)));
                }
                stream.set_read_timeout(None)?;
                return Ok(Registered {
                    stream,
                    leftover: buf,
                    initial,
                    max_packet_size: config.max_packet_size,
                });
            }
            inbound::decode(&packet, &mut initial)?;
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(InstanceError::RegisterTimeout(options.register_timeout));
        }
        stream.set_read_timeout(Some(deadline - now))?;
        match read_some(&mut stream, &mut buf, &mut scratch) {
            Ok(0) => return Err(InstanceError::Disconnected),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(InstanceError::RegisterTimeout(options.register_timeout));
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Reads once from `stream` into `scratch`, then appends what came to `buf`. Reading into a
/// reused buffer (rather than growing `buf` by a zeroed chunk per read) keeps a small read
/// from costing a large memset and fresh pages.
fn read_some(
    stream: &mut StmgrSocket,
    buf: &mut BytesMut,
    scratch: &mut [u8],
) -> std::io::Result<usize> {
    let n = stream.read(scratch)?;
    buf.extend_from_slice(&scratch[..n]);
    Ok(n)
}

/// The running gateway: the executor's [`Inbox`] on the connection, and the writer thread.
pub(crate) struct Gateway {
    /// What the stream manager sends, read by the executor itself.
    pub inbox: Inbox,
    /// Framed bytes for the stream manager.
    pub out_tx: QueueTx<Bytes>,
    /// The chunks the writer has written and flushed.
    pub written: WrittenCount,
    stream: StmgrSocket,
    writer: JoinHandle<()>,
}

impl Gateway {
    /// Starts the writer thread on a registered connection and makes the executor's inbox.
    pub fn start(reg: Registered, options: &RunOptions) -> Result<Gateway, InstanceError> {
        let (out_tx, out_rx) =
            bounded_bytes::<Bytes>(options.out_queue_capacity, options.out_queue_bytes);
        let executes = StreamCounter::new(crate::stream_metrics::current(), "execute");
        let inbox = Inbox::new(
            reg.stream.try_clone()?,
            reg.leftover,
            reg.initial,
            reg.max_packet_size,
            executes,
        )?;
        let write_stream = reg.stream.try_clone()?;
        let written = WrittenCount::default();
        let writer_written = written.clone();
        let writer = thread::Builder::new()
            .name("gateway-writer".into())
            .spawn(move || writer_loop(write_stream, out_rx, writer_written))
            .map_err(InstanceError::Thread)?;
        Ok(Gateway {
            inbox,
            out_tx,
            written,
            stream: reg.stream,
            writer,
        })
    }

    /// Another handle on the connection, for the executor to write through (`None` if the
    /// handle cannot be made: everything then goes through the writer).
    pub fn socket(&self) -> Option<StmgrSocket> {
        self.stream.try_clone().ok()
    }

    /// Closes the connection and waits for the writer.
    pub fn shutdown(self) {
        let Gateway {
            inbox,
            out_tx,
            stream,
            writer,
            ..
        } = self;
        let _ = stream.shutdown();
        drop(out_tx);
        drop(inbox);
        let _ = writer.join();
    }
}

/// Writes the chunks the executor queued, flushing whenever the queue is empty, then counts
/// them written (the executor writes through only when the count has caught up). Stops when
/// the executor drops its end or on a write error (closing the connection so the reader stops
/// too).
fn writer_loop(stream: StmgrSocket, out_rx: QueueRx<Bytes>, written: WrittenCount) {
    let closer = stream.try_clone().ok();
    let mut w = BufWriter::with_capacity(WRITE_BUFFER, stream);
    let mut n = 0u64;
    let result = (|| -> std::io::Result<()> {
        while let Ok(chunk) = out_rx.recv() {
            w.write_all(&chunk)?;
            n += 1;
            while let Ok(chunk) = out_rx.try_recv() {
                w.write_all(&chunk)?;
                n += 1;
            }
            w.flush()?;
            written.store(n, std::sync::atomic::Ordering::Release);
        }
        w.flush()
    })();
    if let Err(e) = result {
        tracing::warn!(error = %e, "writing to the stream manager failed");
        if let Some(s) = closer {
            let _ = s.shutdown();
        }
    }
}
