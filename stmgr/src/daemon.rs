//! The async shell around [`Core`]: binds the servers, starts the tmaster client, and runs
//! the event loop that feeds the core and carries out its actions.
//!
//! Everything runs on one current-thread tokio runtime. Socket readers, the accept loops, the
//! stmgr connect attempts and the tmaster client are tasks that send [`Event`]s into one
//! bounded channel; a full channel stops the readers, so a core that falls behind pushes
//! back on the sockets. The loop takes one event, then whatever else is already queued (up to
//! [`MAX_EVENTS_PER_ROUND`]), then ends the round: open batches are flushed if the queue is
//! empty (or have waited [`crate::config::FLUSH_INTERVAL`]) and each connection gets its
//! frames as one buffer.

use crate::config::{StmgrConfig, MAX_EVENTS_PER_ROUND};
use crate::conn::{self, ConnHandle};
use crate::core::{Action, Core, CoreConfig};
use crate::error::StmgrError;
use crate::event::Event;
use crate::ids::{ConnId, Incoming};
use crate::stmgr_client::{self, Introduction};
use crate::tmaster_client::TmasterClient;
use bytes::BytesMut;
use heron_proto::stmgr::StrMgrHelloRequest;
use heron_proto::system::StMgr;
use heron_proto::HeronCodec;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tracing::{debug, info};

/// Room in the event channel, in events (a read's worth of packets each, at most a socket
/// buffer). Bounded so that a core falling behind holds a few megabytes of reads: what waits
/// here at saturation is queueing latency.
const EVENT_QUEUE: usize = 32;
/// How often the tuple counters are logged (at debug level) while there is traffic.
const STATS_INTERVAL: Duration = Duration::from_secs(10);

/// Runs the stream manager until a fatal error.
pub(crate) async fn serve(config: StmgrConfig) -> Result<(), StmgrError> {
    let bind = |what: &'static str, addr: String| async move {
        TcpListener::bind(addr.as_str())
            .await
            .map_err(|source| StmgrError::Bind { what, addr, source })
    };
    // this container's instances on a local socket too (bound first, so that an instance,
    // which tries it first, never finds only the TCP port open)
    let local = bind_local(
        heron_flow::local_socket::address(config.local_data_port),
        heron_flow::local_socket::name(config.local_data_port),
        "instances",
    );
    // the host's other heron-rs stream managers on a local socket too, unless the mesh is TLS
    // (which a local socket would not be); bound before the TCP port for the same reason
    let mesh = match config.tls {
        None => bind_local(
            heron_flow::local_socket::mesh_address(&config.host, config.data_port),
            heron_flow::local_socket::mesh_name(&config.host, config.data_port),
            "stream managers",
        ),
        Some(_) => None,
    };
    let instances = bind(
        "instance server",
        format!("127.0.0.1:{}", config.local_data_port),
    )
    .await?;
    let stmgrs = bind(
        "stream manager server",
        format!("{}:{}", config.host, config.data_port),
    )
    .await?;
    info!(
        "stream manager {} of {} serving instances on 127.0.0.1:{} and stream managers on {}:{}",
        config.stmgr_id,
        config.topology_name,
        config.local_data_port,
        config.host,
        config.data_port
    );
    let codec = HeronCodec::new(config.max_packet_size);
    let (events, mut rx) = mpsc::channel(EVENT_QUEUE);
    tokio::spawn(conn::accept_loop(
        instances,
        Incoming::Instance,
        None,
        config.auth.clone(),
        events.clone(),
    ));
    if let Some(local) = local {
        tokio::spawn(conn::accept_local_loop(
            local,
            Incoming::Instance,
            config.auth.clone(),
            events.clone(),
        ));
    }
    if let Some(mesh) = mesh {
        tokio::spawn(conn::accept_local_loop(
            mesh,
            Incoming::Stmgr,
            config.auth.clone(),
            events.clone(),
        ));
    }
    tokio::spawn(conn::accept_loop(
        stmgrs,
        Incoming::Stmgr,
        config.tls.clone(),
        config.auth.clone(),
        events.clone(),
    ));

    let shell_port = match config.shell_port {
        Some(port) => start_shell(&config.host, port).await,
        None => None,
    };
    let (registration, instances_rx) = watch::channel(None);
    let (to_tmaster, outgoing) = mpsc::unbounded_channel();
    let (to_ckptmgr, ckptmgr_frames) = mpsc::unbounded_channel();
    if let Some(port) = config.ckptmgr_port {
        tokio::spawn(crate::ckptmgr_client::run(
            port,
            config.auth.clone(),
            codec,
            ckptmgr_frames,
            events.clone(),
        ));
    }
    let tmaster = TmasterClient {
        topology_name: config.topology_name.clone(),
        topology_id: config.topology_id.clone(),
        stmgr: stmgr_record(&config, shell_port),
        state: config.state_manager.open().map_err(|e| {
            StmgrError::Config(format!("cannot open {}: {e}", config.state_manager))
        })?,
        codec,
        auth: config.auth.clone(),
        tls: config.tls.clone(),
        instances: instances_rx,
        events: events.clone(),
        outgoing,
    };
    tokio::spawn(tmaster.run());

    let mut shell = Shell {
        core: Core::new(CoreConfig::from(&config), Instant::now()),
        handles: HashMap::new(),
        next_conn: 0,
        codec,
        intro: Introduction {
            hello: StrMgrHelloRequest {
                topology_name: config.topology_name.clone(),
                topology_id: config.topology_id.clone(),
                stmgr: config.stmgr_id.clone(),
            },
            auth: config.auth.clone(),
            tls: config.tls.clone(),
            host: config.host.clone(),
        },
        events,
        registration,
        to_tmaster,
        to_ckptmgr,
    };
    let metrics = crate::metrics_publisher::spawn(crate::metrics_publisher::PublisherConfig {
        topology_name: config.topology_name.clone(),
        stmgr_id: config.stmgr_id.clone(),
        instance_ids: config.instance_ids.clone(),
        counters_dir: std::env::current_dir().unwrap_or_default().join("metrics"),
        state_manager: config.state_manager.clone(),
        hostname: config.host.clone(),
        auth: config.auth.clone(),
        tls: config.tls.clone(),
    });
    let mut metrics_at = Instant::now();
    let mut times =
        crate::metrics_publisher::BackPressureTimes::new(&config.instance_ids, Instant::now());
    let mut stats_at = Instant::now() + STATS_INTERVAL;
    loop {
        // the core's next timer, or the next metrics sample (an idle stream manager's
        // counters still reach the publisher)
        let wake = shell
            .core
            .next_deadline()
            .map_or(metrics_at, |d| d.min(metrics_at));
        let first = tokio::select! {
            ev = rx.recv() => ev,
            _ = tokio::time::sleep_until(tokio::time::Instant::from_std(wake)) => None,
        };
        if let Some(ev) = first {
            shell.handle(ev);
            for _ in 1..MAX_EVENTS_PER_ROUND {
                match rx.try_recv() {
                    Ok(ev) => shell.handle(ev),
                    Err(_) => break,
                }
            }
        }
        let now = Instant::now();
        shell.core.on_timer(now);
        for (&conn, h) in &shell.handles {
            let written = h.written();
            shell
                .core
                .on_writes(conn, written, h.backlog_with_kernel(now, written));
        }
        shell.core.end_round(now, rx.is_empty());
        shell.apply();
        if now >= metrics_at {
            metrics_at = now + crate::metrics_publisher::PUBLISH_INTERVAL / 2;
            let slow = shell.core.slow_instances();
            let bp = times.sample(
                now,
                shell.core.spouts_throttled(),
                shell.core.initiating_back_pressure(),
                &slow,
            );
            sample_metrics(&shell.core, &metrics, bp);
        }
        if now >= stats_at {
            stats_at = now + STATS_INTERVAL;
            let (counters, delivered) = (shell.core.counters(), shell.core.delivered());
            let (acking, trees) = (shell.core.ack_counters(), shell.core.pending_trees());
            let stateful = shell.core.stateful_counters();
            debug!(
                ?counters,
                ?delivered,
                ?acking,
                trees,
                ?stateful,
                "tuple counters"
            );
        }
    }
}

/// Hands the core's cumulative counters to the metrics publisher.
fn sample_metrics(
    core: &Core,
    slot: &crate::metrics_publisher::SampleSlot,
    back_pressure: crate::metrics_publisher::BackPressureMs,
) {
    let (c, d) = (core.counters(), core.delivered());
    let sample = crate::metrics_publisher::StmgrSample {
        tuples_from_instances: c.tuples_from_instances,
        tuples_to_instances: d.to_instances,
        tuples_to_stmgrs: d.to_stmgrs,
        sets_from_stmgrs: c.sets_from_stmgrs,
        lost_tuples: d.lost + c.tuples_without_plan + c.tuples_too_large,
        bytes_from_instances: c.bytes.from_instances,
        bytes_to_instances: c.bytes.to_instances,
        bytes_from_stmgrs: c.bytes.from_stmgrs,
        bytes_to_stmgrs: c.bytes.to_stmgrs,
        back_pressure,
        stateful: core.stateful_counters(),
    };
    *slot.lock().unwrap_or_else(|e| e.into_inner()) = sample;
}

/// A local data socket ([`heron_flow::local_socket`]) at `addr`, named `name`, for `whom`;
/// `None`, logged, where it cannot be bound (they then connect over TCP).
fn bind_local(
    addr: std::io::Result<std::os::unix::net::SocketAddr>,
    name: String,
    whom: &str,
) -> Option<tokio::net::UnixListener> {
    let bound = addr
        .and_then(|a| std::os::unix::net::UnixListener::bind_addr(&a))
        .and_then(|l| {
            l.set_nonblocking(true)?;
            tokio::net::UnixListener::from_std(l)
        });
    match bound {
        Ok(l) => {
            info!("serving {whom} also on the local socket @{name}");
            Some(l)
        }
        Err(e) => {
            tracing::warn!("no local socket for {whom} (they use TCP): cannot bind @{name}: {e}");
            None
        }
    }
}

/// Serves the container's shell (its log files) on `host:port`; the port when it listens.
/// The logs are not worth the stream manager: a shell that cannot bind is logged and left out
/// of the physical plan.
async fn start_shell(host: &str, port: u16) -> Option<u16> {
    let root = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!("no shell: cannot read the working directory: {e}");
            return None;
        }
    };
    match TcpListener::bind((host, port)).await {
        Ok(l) => {
            info!(
                "shell serving {}/log-files on {host}:{port}",
                root.display()
            );
            tokio::spawn(async move {
                if let Err(e) = heron_shell::serve(l, root).await {
                    tracing::warn!("the shell stopped: {e}");
                }
            });
            Some(port)
        }
        Err(e) => {
            tracing::warn!("no shell: cannot bind {host}:{port}: {e}");
            None
        }
    }
}

/// This stream manager's record for the tmaster.
fn stmgr_record(config: &StmgrConfig, shell_port: Option<u16>) -> StMgr {
    StMgr {
        id: config.stmgr_id.clone(),
        host_name: config.host.clone(),
        data_port: i32::from(config.data_port),
        local_endpoint: "/unused".into(),
        cwd: std::env::current_dir()
            .ok()
            .map(|d| d.display().to_string()),
        pid: i32::try_from(std::process::id()).ok(),
        shell_port: shell_port.map(i32::from),
        local_data_port: Some(i32::from(config.local_data_port)),
    }
}

/// The loop's state besides the core: the connections' handles.
struct Shell {
    core: Core,
    handles: HashMap<ConnId, ConnHandle>,
    next_conn: ConnId,
    codec: HeronCodec,
    intro: Introduction,
    events: mpsc::Sender<Event>,
    registration: watch::Sender<Option<Vec<heron_proto::system::Instance>>>,
    to_tmaster: mpsc::UnboundedSender<bytes::Bytes>,
    to_ckptmgr: mpsc::UnboundedSender<bytes::Bytes>,
}

impl Shell {
    fn open(&mut self, stream: heron_auth::Link, label: String, initial: BytesMut) -> ConnId {
        self.next_conn += 1;
        let id = self.next_conn;
        let handle = conn::spawn(stream, id, label, initial, self.codec, self.events.clone());
        self.handles.insert(id, handle);
        id
    }

    fn handle(&mut self, ev: Event) {
        let now = Instant::now();
        match ev {
            Event::Accepted { stream, peer, kind } => {
                let label = match kind {
                    Incoming::Instance => format!("instance at {peer}"),
                    Incoming::Stmgr => format!("stream manager at {peer}"),
                };
                let id = self.open(stream, label.clone(), BytesMut::new());
                self.core.on_connected(id, kind, label);
            }
            Event::Packets { conn, packets } => {
                for p in &packets {
                    self.core.on_packet(conn, p, now);
                }
            }
            Event::Closed { conn } => self.core.on_closed(conn, now),
            Event::StmgrClientUp {
                stmgr_id,
                attempt,
                stream,
                leftover,
            } => {
                let label = match stream.tcp().and_then(|t| t.peer_addr().ok()) {
                    Some(a) => format!("stream manager {stmgr_id} at {a}"),
                    None => format!("stream manager {stmgr_id} on its local mesh socket"),
                };
                let id = self.open(stream, label.clone(), leftover);
                self.core
                    .on_stmgr_client_up(&stmgr_id, attempt, id, label, now);
            }
            Event::StmgrClientFailed { stmgr_id, attempt } => {
                self.core.on_stmgr_client_failed(&stmgr_id, attempt, now)
            }
            Event::Pplan(pplan) => self.core.on_pplan(pplan, now),
            Event::TmasterMessage(packet) => self.core.on_tmaster_message(&packet, now),
            Event::CkptmgrUp => self.core.on_ckptmgr_up(now),
            Event::CkptmgrDown => self.core.on_ckptmgr_down(now),
            Event::CkptmgrPacket(packet) => self.core.on_ckptmgr_message(&packet, now),
        }
    }

    fn apply(&mut self) {
        for action in self.core.drain_actions() {
            match action {
                Action::Send(conn, frames) => {
                    if let Some(h) = self.handles.get(&conn) {
                        h.send(frames);
                    }
                }
                Action::Close(conn) => {
                    self.handles.remove(&conn);
                }
                Action::ConnectStmgr {
                    stmgr_id,
                    host,
                    port,
                    attempt,
                } => {
                    tokio::spawn(stmgr_client::connect(
                        stmgr_id,
                        host,
                        port,
                        attempt,
                        self.intro.clone(),
                        self.codec,
                        self.events.clone(),
                    ));
                }
                Action::RegisterWithTmaster(instances) => {
                    self.registration.send_replace(Some(instances));
                }
                Action::PauseReads(conn, pause) => {
                    if let Some(h) = self.handles.get(&conn) {
                        h.pause_reads(pause);
                    }
                }
                Action::ToTmaster(frame) => {
                    let _ = self.to_tmaster.send(frame);
                }
                Action::ToCkptmgr(frame) => {
                    let _ = self.to_ckptmgr.send(frame);
                }
            }
        }
    }
}
