//! The daemon: a TCP server on 127.0.0.1 speaking Heron packets, any number of connections,
//! one task each. A connection's requests are answered in order by the [`Handler`] on tokio's
//! blocking pool (storage I/O blocks), so a slow disk stalls no other connection.
//!
//! Bad input never reaches the handler's logic: a framing error (garbage, a truncated or
//! oversized packet), an undecodable payload or a packet of a type the checkpoint manager
//! does not handle closes that connection with a warning; the daemon goes on.

use crate::config::{CkptmgrConfig, CkptmgrError};
use crate::handler::{Handler, Reply};
use crate::localfs::LocalFsStorage;
use crate::storage::Storage;
use futures::{SinkExt, StreamExt};
use heron_proto::HeronCodec;
use std::net::{Ipv4Addr, SocketAddr, TcpListener as StdListener};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::Framed;
use tracing::{debug, info, warn};

/// Threads for storage I/O: connections are few (one per stmgr, one tmaster).
const MAX_BLOCKING_THREADS: usize = 8;

/// A bound checkpoint manager, not serving yet.
///
/// ```no_run
/// use heron_ckptmgr::{CkptmgrConfig, Server};
/// let server = Server::bind(CkptmgrConfig {
///     topology_name: "T".into(),
///     topology_id: "T-1".into(),
///     ckptmgr_id: "ckptmgr-1".into(),
///     port: 0,
///     root: "/tmp/checkpoints".into(),
///     max_packet_size: heron_ckptmgr::MAX_PACKET_SIZE,
///     auth: None,
/// })
/// .unwrap();
/// println!("listening on {}", server.local_addr());
/// server.serve().unwrap(); // forever
/// ```
pub struct Server {
    listener: StdListener,
    addr: SocketAddr,
    handler: Arc<Handler<Arc<dyn Storage>>>,
    ckptmgr_id: String,
    max_packet_size: usize,
    auth: Option<heron_auth::Secret>,
}

impl Server {
    /// Binds `127.0.0.1:<port>` with [`LocalFsStorage`] under `cfg.root`.
    pub fn bind(cfg: CkptmgrConfig) -> Result<Server, CkptmgrError> {
        let storage: Arc<dyn Storage> = Arc::new(LocalFsStorage::new(&cfg.root));
        info!(root = %cfg.root.display(), "local file system storage");
        Server::bind_with(cfg, storage)
    }

    /// Binds `127.0.0.1:<port>` with any storage (`cfg.root` is not used).
    pub fn bind_with(
        cfg: CkptmgrConfig,
        storage: Arc<dyn Storage>,
    ) -> Result<Server, CkptmgrError> {
        let wanted = SocketAddr::from((Ipv4Addr::LOCALHOST, cfg.port));
        let bind_err = |source| CkptmgrError::Bind {
            addr: wanted,
            source,
        };
        let listener = StdListener::bind(wanted).map_err(bind_err)?;
        listener.set_nonblocking(true).map_err(bind_err)?;
        let addr = listener.local_addr().map_err(bind_err)?;
        Ok(Server {
            listener,
            addr,
            handler: Arc::new(Handler::new(cfg.topology_name, cfg.topology_id, storage)),
            ckptmgr_id: cfg.ckptmgr_id,
            max_packet_size: cfg.max_packet_size,
            auth: cfg.auth,
        })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves connections forever on a tokio runtime of its own. Returns only if the runtime
    /// cannot be built.
    pub fn serve(self) -> Result<(), CkptmgrError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .max_blocking_threads(MAX_BLOCKING_THREADS)
            .build()
            .map_err(CkptmgrError::Runtime)?;
        let Server {
            listener,
            addr,
            handler,
            ckptmgr_id,
            max_packet_size,
            auth,
        } = self;
        runtime.block_on(async move {
            let listener = TcpListener::from_std(listener)
                .map_err(|source| CkptmgrError::Bind { addr, source })?;
            info!(%addr, ckptmgr = %ckptmgr_id, "checkpoint manager listening");
            accept_loop(listener, handler, max_packet_size, auth).await;
            Ok(())
        })
    }
}

/// Binds `127.0.0.1:<cfg.port>` and serves checkpoints under `cfg.root` forever (see
/// [`Server`]). Blocking.
pub fn run(cfg: CkptmgrConfig) -> Result<(), CkptmgrError> {
    Server::bind(cfg)?.serve()
}

async fn accept_loop(
    listener: TcpListener,
    handler: Arc<Handler<Arc<dyn Storage>>>,
    max_packet_size: usize,
    auth: Option<heron_auth::Secret>,
) {
    let codec = HeronCodec::new(max_packet_size);
    let slots = heron_auth::PendingHandshakes::default();
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                let slot = match &auth {
                    None => None,
                    Some(_) => match slots.admit(&peer) {
                        Some(slot) => Some(slot),
                        None => continue,
                    },
                };
                tokio::spawn(serve_connection(
                    stream,
                    peer,
                    handler.clone(),
                    codec,
                    auth.clone(),
                    slot,
                ));
            }
            Err(e) => {
                // Out of file descriptors and the like: back off rather than spin.
                warn!(error = %e, "cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Answers one connection's requests in order until it closes or sends bad input.
async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    handler: Arc<Handler<Arc<dyn Storage>>>,
    codec: HeronCodec,
    auth: Option<heron_auth::Secret>,
    handshake_slot: Option<tokio::sync::OwnedSemaphorePermit>,
) {
    let mut stream = stream;
    let _ = stream.set_nodelay(true);
    if let Some(secret) = &auth {
        if let Err(e) = heron_auth::accept(&mut stream, secret).await {
            warn!(%peer, "refusing a connection from {peer}: authentication failed: {e}");
            return;
        }
    }
    drop(handshake_slot);
    debug!(%peer, "connection accepted");
    let mut framed = Framed::new(stream, codec);
    while let Some(read) = framed.next().await {
        let packet = match read {
            Ok(p) => p,
            Err(e) => {
                warn!(%peer, reason = %e, "closing connection: unreadable input");
                return;
            }
        };
        let h = handler.clone();
        let reply = match tokio::task::spawn_blocking(move || h.handle(&packet)).await {
            Ok(r) => r,
            Err(e) => {
                warn!(%peer, reason = %e, "closing connection: the request failed");
                return;
            }
        };
        match reply {
            Reply::Respond(response) => {
                if let Err(e) = framed.send(response).await {
                    warn!(%peer, reason = %e, "closing connection: write failed");
                    return;
                }
            }
            Reply::Close(reason) => {
                warn!(%peer, %reason, "closing connection: bad request");
                return;
            }
        }
    }
    debug!(%peer, "connection closed by the peer");
}
