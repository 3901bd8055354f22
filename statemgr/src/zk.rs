//! The ZooKeeper state manager: nodes `<root>/<dir>/<topology>` in a real ZooKeeper ensemble.
//! The thread and session model is documented on [`ZkStateManager`].

use crate::zk_watch;
use crate::{validate_name, NodeWatch, StateDir, StateError, StateManager};
use std::future::Future;
use std::time::Duration;
use tokio::sync::{oneshot, watch};
use zookeeper_client as zk;

/// Heron's default ZooKeeper root path (`heron.statemgr.root.path`).
pub const DEFAULT_ZK_ROOT: &str = "/heron";
/// Heron's default ZooKeeper session and connection timeouts: 30 s.
pub const DEFAULT_ZK_TIMEOUT: Duration = Duration::from_secs(30);
/// How long dropping a state manager waits for the server to close its session.
const CLOSE_WAIT: Duration = Duration::from_secs(5);
/// Extra time a caller waits for the client thread beyond the operation timeout.
const GRACE: Duration = Duration::from_secs(2);

/// Where and how to connect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZkConfig {
    /// ZooKeeper's connection string: `host:port[,host:port...]`, e.g. `127.0.0.1:2181`.
    pub connect: String,
    /// The root path of the layout, e.g. `/heron` (created on first write).
    pub root: String,
    /// The session timeout asked of the server (it clamps it to its own bounds, by default
    /// 2 to 20 ticks: 4 to 40 s).
    pub session_timeout: Duration,
    /// How long [`ZkStateManager::connect`] waits for a session.
    pub connect_timeout: Duration,
    /// How long one call waits for its answer.
    pub operation_timeout: Duration,
}

impl ZkConfig {
    /// A config with Heron's defaults: 30 s session, connect and operation timeouts.
    pub fn new(connect: impl Into<String>, root: impl Into<String>) -> ZkConfig {
        ZkConfig {
            connect: connect.into(),
            root: root.into(),
            session_timeout: DEFAULT_ZK_TIMEOUT,
            connect_timeout: DEFAULT_ZK_TIMEOUT,
            operation_timeout: DEFAULT_ZK_TIMEOUT,
        }
    }

    /// Checks the connection string, the root path and the timeouts.
    pub fn validate(&self) -> Result<(), StateError> {
        let bad = |key: &str, value: String, reason: String| StateError::Config {
            key: key.to_string(),
            value,
            reason,
        };
        check_connect(&self.connect)
            .map_err(|r| bad(crate::KEY_CONNECTION_STRING, self.connect.clone(), r))?;
        check_root(&self.root).map_err(|r| bad(crate::KEY_ROOT_PATH, self.root.clone(), r))?;
        for (key, d) in [
            (crate::KEY_ZK_SESSION_TIMEOUT_MS, self.session_timeout),
            (crate::KEY_ZK_CONNECTION_TIMEOUT_MS, self.connect_timeout),
            ("operation timeout", self.operation_timeout),
        ] {
            if d.is_zero() {
                return Err(bad(key, "0".into(), "must be more than 0".into()));
            }
        }
        Ok(())
    }
}

/// Checks a ZooKeeper connection string `host:port[,host:port...]`; the reason if bad.
pub(crate) fn check_connect(connect: &str) -> Result<(), String> {
    if connect.is_empty() {
        return Err("empty; expected host:port[,host:port...]".into());
    }
    if connect.contains('/') {
        return Err("a chroot suffix is not supported; put the path in the root path".into());
    }
    for server in connect.split(',') {
        let (host, port) = match server.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') || h.starts_with('[') => (h, Some(p)),
            _ => (server, None),
        };
        if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!("bad host in {server:?}"));
        }
        if let Some(p) = port {
            if p.parse::<u16>().map(|p| p == 0).unwrap_or(true) {
                return Err(format!("bad port in {server:?}"));
            }
        }
    }
    Ok(())
}

/// Checks a ZooKeeper root path: absolute, no empty, `.` or `..` components, no trailing `/`
/// (except `/` itself); the reason if bad.
pub(crate) fn check_root(root: &str) -> Result<(), String> {
    if !root.starts_with('/') {
        return Err("must start with '/'".into());
    }
    if root == "/" {
        return Ok(());
    }
    for part in root[1..].split('/') {
        if part.is_empty() {
            return Err("empty path component (double or trailing '/')".into());
        }
        if part == "." || part == ".." {
            return Err(format!("path component {part:?} is not allowed"));
        }
        if part.chars().any(|c| c.is_control()) {
            return Err("control characters are not allowed".into());
        }
    }
    Ok(())
}

/// The ZooKeeper backend.
///
/// * `get`/`list` of a missing node or directory: `None` / empty.
/// * `set` overwrites the node or creates it (persistent), creating `<root>/<dir>` as needed.
/// * `create(.., ephemeral)` creates an EPHEMERAL (tied to this session) or PERSISTENT node,
///   and fails with [`StateError::AlreadyExists`] if the node exists, whoever owns it.
/// * `delete` of a missing node is not an error.
/// * `watch` uses ZooKeeper watches, re-armed after each event.
///
/// # The client thread
///
/// [`StateManager`] is synchronous and daemons call it from plain threads and from inside tokio
/// runtimes alike, while `zookeeper-client` is async. So every [`ZkStateManager`] owns one
/// thread, `heron-zk`, running a current-thread tokio runtime that drives the ZooKeeper session.
/// A call spawns its future onto that runtime (through a runtime handle, which works from any
/// thread, inside another runtime or not) and waits for the result on a channel, at most
/// [`ZkConfig::operation_timeout`]. No call ever runs `block_on` on the caller's thread, so it
/// cannot panic inside a runtime nor deadlock a current-thread runtime; from async code it does
/// block the calling worker for one ZooKeeper round trip (use `spawn_blocking` on hot paths).
///
/// # Sessions
///
/// One state manager is one ZooKeeper session. Ephemeral nodes created through it live as long
/// as the session. Dropping the state manager closes the session (its ephemeral nodes go away
/// at once) and stops the thread. If the session expires (the server lost us for longer than
/// the session timeout, or closed it), every later call fails with
/// [`StateError::SessionExpired`] and every watch ends with
/// [`NodeEvent::SessionLost`](crate::NodeEvent::SessionLost): there is no silent new session,
/// because the ephemeral nodes of the old one are gone. The owner opens a new state manager (a
/// tmaster exits and is restarted by its executor, as in Heron).
pub struct ZkStateManager {
    config: ZkConfig,
    /// `None` only while dropping.
    client: Option<zk::Client>,
    handle: tokio::runtime::Handle,
    /// Set to `true` on drop: stops the watch tasks (they hold clients).
    stop: watch::Sender<bool>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

type Ready = Result<(zk::Client, tokio::runtime::Handle), StateError>;

impl ZkStateManager {
    /// Connects (waiting at most `config.connect_timeout`) and starts the client thread.
    pub fn connect(config: ZkConfig) -> Result<ZkStateManager, StateError> {
        config.validate()?;
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel::<Ready>(1);
        let (shutdown_tx, shutdown_rx) = oneshot::channel();
        let cfg = config.clone();
        let thread = std::thread::Builder::new()
            .name("heron-zk".into())
            .spawn(move || client_thread(cfg, ready_tx, shutdown_rx))
            .map_err(|source| StateError::Connect {
                connect: config.connect.clone(),
                source: Box::new(source),
            })?;
        match ready_rx.recv() {
            Ok(Ok((client, handle))) => {
                tracing::info!(
                    connect = %config.connect,
                    root = %config.root,
                    session = %client.session_id(),
                    timeout_ms = client.session_timeout().as_millis() as u64,
                    "zookeeper session established"
                );
                let (stop, _) = watch::channel(false);
                Ok(ZkStateManager {
                    config,
                    client: Some(client),
                    handle,
                    stop,
                    shutdown: Some(shutdown_tx),
                    thread: Some(thread),
                })
            }
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(StateError::Connect {
                    connect: config.connect,
                    source: "the zookeeper client thread stopped".into(),
                })
            }
        }
    }

    /// The configuration it was opened with.
    pub fn config(&self) -> &ZkConfig {
        &self.config
    }

    /// Whether the session is still usable (connected, or disconnected and retrying); `false`
    /// once it expired or was closed.
    pub fn is_session_live(&self) -> bool {
        !self.client().state().is_terminated()
    }

    /// The session timeout the server granted.
    pub fn session_timeout(&self) -> Duration {
        self.client().session_timeout()
    }

    /// Deletes the root node and everything under it (for tests and for wiping a test
    /// cluster). Refuses the root `/`.
    pub fn delete_root(&self) -> Result<(), StateError> {
        let root = self.config.root.clone();
        if root == "/" {
            return Err(StateError::Unsupported {
                backend: self.describe(),
                what: "deleting the root '/'",
            });
        }
        let client = self.client();
        self.call("delete-root", &root.clone(), async move {
            delete_tree(&client, &root)
                .await
                .map_err(|e| zk_err("delete-root", &root, e))
        })
    }

    fn client(&self) -> zk::Client {
        self.client
            .as_ref()
            .expect("client present until drop")
            .clone()
    }

    fn root_prefix(&self) -> &str {
        if self.config.root == "/" {
            ""
        } else {
            &self.config.root
        }
    }

    fn dir_path(&self, dir: StateDir) -> String {
        format!("{}/{}", self.root_prefix(), dir.name())
    }

    fn node_path(&self, dir: StateDir, topology: &str) -> Result<String, StateError> {
        validate_name(topology)?;
        Ok(format!(
            "{}/{}/{}",
            self.root_prefix(),
            dir.name(),
            topology
        ))
    }

    /// Runs `fut` on the client thread and waits for its result (at most the operation
    /// timeout).
    fn call<T, F>(&self, op: &'static str, path: &str, fut: F) -> Result<T, StateError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, StateError>> + Send + 'static,
    {
        let after = self.config.operation_timeout;
        let (tx, rx) = crossbeam_channel::bounded(1);
        let task_path = path.to_string();
        self.handle.spawn(async move {
            let r = match tokio::time::timeout(after, fut).await {
                Ok(r) => r,
                Err(_) => Err(StateError::Timeout {
                    op,
                    path: task_path,
                    after,
                }),
            };
            let _ = tx.send(r);
        });
        match rx.recv_timeout(after + GRACE) {
            Ok(r) => r,
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => Err(StateError::Timeout {
                op,
                path: path.to_string(),
                after,
            }),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => Err(StateError::Zk {
                op,
                path: path.to_string(),
                source: "the zookeeper client thread has stopped".into(),
            }),
        }
    }
}

impl std::fmt::Debug for ZkStateManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkStateManager")
            .field("config", &self.config)
            .field(
                "session_live",
                &self.client.as_ref().map(|c| !c.state().is_terminated()),
            )
            .finish_non_exhaustive()
    }
}

impl Drop for ZkStateManager {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        drop(self.client.take());
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            if thread.thread().id() != std::thread::current().id() && thread.join().is_err() {
                tracing::warn!("the zookeeper client thread panicked");
            }
        }
    }
}

/// Maps a client error: a lost session gets its own variant.
pub(crate) fn zk_err(op: &'static str, path: &str, e: zk::Error) -> StateError {
    match e {
        zk::Error::SessionExpired | zk::Error::ClientClosed => StateError::SessionExpired {
            op,
            path: path.to_string(),
        },
        e => StateError::Zk {
            op,
            path: path.to_string(),
            source: Box::new(e),
        },
    }
}

fn persistent() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

/// Creates `path`, creating its parents (persistent) if they are missing.
async fn create_with_parents(
    client: &zk::Client,
    path: &str,
    data: &[u8],
    mode: zk::CreateMode,
) -> Result<(), zk::Error> {
    let options = mode.with_acls(zk::Acls::anyone_all());
    match client.create(path, data, &options).await {
        Ok(_) => Ok(()),
        Err(zk::Error::NoNode) => {
            let parent = &path[..path.rfind('/').unwrap_or(0)];
            if !parent.is_empty() {
                client.mkdir(parent, &persistent()).await?;
            }
            client.create(path, data, &options).await.map(|_| ())
        }
        Err(e) => Err(e),
    }
}

/// Deletes `root` and every node under it; missing nodes are fine.
async fn delete_tree(client: &zk::Client, root: &str) -> Result<(), zk::Error> {
    let mut preorder = Vec::new();
    let mut stack = vec![root.to_string()];
    while let Some(path) = stack.pop() {
        match client.list_children(&path).await {
            Ok(children) => stack.extend(children.into_iter().map(|c| format!("{path}/{c}"))),
            Err(zk::Error::NoNode) => continue,
            Err(e) => return Err(e),
        }
        preorder.push(path);
    }
    for path in preorder.iter().rev() {
        match client.delete(path, None).await {
            Ok(()) | Err(zk::Error::NoNode) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

impl StateManager for ZkStateManager {
    fn get(&self, dir: StateDir, topology: &str) -> Result<Option<Vec<u8>>, StateError> {
        let path = self.node_path(dir, topology)?;
        let client = self.client();
        self.call("get", &path.clone(), async move {
            match client.get_data(&path).await {
                Ok((data, _)) => Ok(Some(data)),
                Err(zk::Error::NoNode) => Ok(None),
                Err(e) => Err(zk_err("get", &path, e)),
            }
        })
    }

    fn set(&self, dir: StateDir, topology: &str, data: &[u8]) -> Result<(), StateError> {
        let path = self.node_path(dir, topology)?;
        let client = self.client();
        let data = data.to_vec();
        self.call("set", &path.clone(), async move {
            // Overwrite, or create; a concurrent create or delete makes us go round again.
            for _ in 0..5 {
                match client.set_data(&path, &data, None).await {
                    Ok(_) => return Ok(()),
                    Err(zk::Error::NoNode) => {}
                    Err(e) => return Err(zk_err("set", &path, e)),
                }
                match create_with_parents(&client, &path, &data, zk::CreateMode::Persistent).await {
                    Ok(()) => return Ok(()),
                    Err(zk::Error::NodeExists) => {}
                    Err(e) => return Err(zk_err("set", &path, e)),
                }
            }
            Err(StateError::Zk {
                op: "set",
                path,
                source: "the node kept being created and deleted by others".into(),
            })
        })
    }

    fn create(
        &self,
        dir: StateDir,
        topology: &str,
        data: &[u8],
        ephemeral: bool,
    ) -> Result<(), StateError> {
        let path = self.node_path(dir, topology)?;
        let client = self.client();
        let data = data.to_vec();
        let mode = if ephemeral {
            zk::CreateMode::Ephemeral
        } else {
            zk::CreateMode::Persistent
        };
        let topology = topology.to_string();
        self.call("create", &path.clone(), async move {
            match create_with_parents(&client, &path, &data, mode).await {
                Ok(()) => Ok(()),
                Err(zk::Error::NodeExists) => Err(StateError::AlreadyExists {
                    dir: dir.name(),
                    topology,
                }),
                Err(e) => Err(zk_err("create", &path, e)),
            }
        })
    }

    fn delete(&self, dir: StateDir, topology: &str) -> Result<(), StateError> {
        let path = self.node_path(dir, topology)?;
        let client = self.client();
        self.call("delete", &path.clone(), async move {
            match client.delete(&path, None).await {
                Ok(()) | Err(zk::Error::NoNode) => Ok(()),
                Err(e) => Err(zk_err("delete", &path, e)),
            }
        })
    }

    fn list(&self, dir: StateDir) -> Result<Vec<String>, StateError> {
        let path = self.dir_path(dir);
        let client = self.client();
        self.call("list", &path.clone(), async move {
            match client.list_children(&path).await {
                Ok(mut names) => {
                    names.sort();
                    Ok(names)
                }
                Err(zk::Error::NoNode) => Ok(Vec::new()),
                Err(e) => Err(zk_err("list", &path, e)),
            }
        })
    }

    fn describe(&self) -> String {
        format!("zk://{}{}", self.config.connect, self.config.root)
    }

    fn watch(&self, dir: StateDir, topology: &str) -> Result<NodeWatch, StateError> {
        let path = self.node_path(dir, topology)?;
        zk_watch::start(
            &self.handle,
            self.client(),
            path,
            self.stop.subscribe(),
            self.config.operation_timeout,
        )
    }
}

/// The body of the `heron-zk` thread: connect, report, serve until shut down, close.
fn client_thread(
    config: ZkConfig,
    ready: std::sync::mpsc::SyncSender<Ready>,
    shutdown: oneshot::Receiver<()>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(StateError::Connect {
                connect: config.connect,
                source: Box::new(e),
            }));
            return;
        }
    };
    rt.block_on(async move {
        let connector = zk::Client::connector().with_session_timeout(config.session_timeout);
        let connected =
            tokio::time::timeout(config.connect_timeout, connector.connect(&config.connect)).await;
        let client = match connected {
            Ok(Ok(client)) => client,
            Ok(Err(e)) => {
                let _ = ready.send(Err(StateError::Connect {
                    connect: config.connect,
                    source: Box::new(e),
                }));
                return;
            }
            Err(_) => {
                let _ = ready.send(Err(StateError::Connect {
                    connect: config.connect,
                    source: format!("no session within {:?}", config.connect_timeout).into(),
                }));
                return;
            }
        };
        let mut state = client.state_watcher();
        let session = client.session_id();
        if ready.send(Ok((client, tokio::runtime::Handle::current()))).is_err() {
            return;
        }
        // Log the session's state changes until the owner drops the state manager.
        let mut shutdown = shutdown;
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                s = state.changed() => {
                    if s.is_terminated() {
                        tracing::warn!(%session, state = %s, "zookeeper session ended; its ephemeral nodes are gone");
                    } else {
                        tracing::info!(%session, state = %s, "zookeeper session state");
                    }
                }
            }
        }
        // Every client is dropped (or being dropped by the stopping watch tasks): the session
        // task sends CloseSession. Wait for it, so that ephemeral nodes are gone on return.
        let closed = tokio::time::timeout(CLOSE_WAIT, async {
            while !state.peek_state().is_terminated() {
                state.changed().await;
            }
        })
        .await;
        if closed.is_err() {
            tracing::warn!(%session, "zookeeper session not closed within {CLOSE_WAIT:?}");
        } else {
            tracing::debug!(%session, "zookeeper session closed");
        }
    });
}
