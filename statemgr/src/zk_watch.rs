//! ZooKeeper node watches for [`ZkStateManager::watch`](crate::ZkStateManager): one task per
//! watch on the client thread, holding a oneshot ZooKeeper watch and re-arming it after every
//! event. The semantics are those of [`NodeWatch`].
//!
//! Arming reads the node and leaves a watch in one request: `getData` with a watch when the
//! node exists (fires on change and deletion), `exists` with a watch when it does not (fires on
//! creation). A node created between the two requests is read again, so no change is lost.
//! Transient failures while re-arming (connection loss) are retried with backoff; a session that
//! expired or was closed ends the watch with `SessionLost`.

use crate::zk::zk_err;
use crate::{NodeEvent, NodeWatch, StateError};
use crossbeam_channel::Sender;
use std::time::Duration;
use tokio::sync::{oneshot, watch};
use zookeeper_client as zk;

const RETRY_MIN: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(5);

/// Starts a watch task on `handle` and waits (at most `timeout`) until the watch is armed and
/// the first event is queued.
pub(crate) fn start(
    handle: &tokio::runtime::Handle,
    client: zk::Client,
    path: String,
    stop: watch::Receiver<bool>,
    timeout: Duration,
) -> Result<NodeWatch, StateError> {
    let (tx, rx) = crossbeam_channel::unbounded();
    let (ready_tx, ready_rx) = crossbeam_channel::bounded(1);
    let (cancel_tx, cancel_rx) = oneshot::channel::<()>();
    let task = WatchTask {
        client,
        path: path.clone(),
        tx,
        cancel: cancel_rx,
        stop,
    };
    handle.spawn(task.run(ready_tx, timeout));
    match ready_rx.recv_timeout(timeout + Duration::from_secs(2)) {
        Ok(Ok(())) => Ok(NodeWatch::new(rx, move || {
            let _ = cancel_tx.send(());
        })),
        Ok(Err(e)) => Err(e),
        Err(crossbeam_channel::RecvTimeoutError::Timeout) => Err(StateError::Timeout {
            op: "watch",
            path,
            after: timeout,
        }),
        Err(crossbeam_channel::RecvTimeoutError::Disconnected) => Err(StateError::Zk {
            op: "watch",
            path,
            source: "the zookeeper client thread has stopped".into(),
        }),
    }
}

/// Reads the node and leaves a oneshot watch on it.
async fn arm(
    client: &zk::Client,
    path: &str,
) -> Result<(Option<Vec<u8>>, zk::OneshotWatcher), zk::Error> {
    loop {
        match client.get_and_watch_data(path).await {
            Ok((data, _, watcher)) => return Ok((Some(data), watcher)),
            Err(zk::Error::NoNode) => {}
            Err(e) => return Err(e),
        }
        match client.check_and_watch_stat(path).await? {
            (None, watcher) => return Ok((None, watcher)),
            // Created in between: read it (dropping this watcher removes it).
            (Some(_), _) => continue,
        }
    }
}

fn session_gone(e: &zk::Error) -> bool {
    matches!(
        e,
        zk::Error::SessionExpired | zk::Error::ClientClosed | zk::Error::AuthFailed
    )
}

/// Why the task stops waiting.
enum Interrupt {
    /// The `NodeWatch` was dropped.
    Cancelled,
    /// The state manager is being dropped: its session is closing.
    Stopping,
}

struct WatchTask {
    client: zk::Client,
    path: String,
    tx: Sender<NodeEvent>,
    cancel: oneshot::Receiver<()>,
    stop: watch::Receiver<bool>,
}

impl WatchTask {
    /// Runs `fut` unless the watch is cancelled or the manager stops first.
    async fn until<T>(
        &mut self,
        fut: impl std::future::Future<Output = T>,
    ) -> Result<T, Interrupt> {
        if *self.stop.borrow() {
            return Err(Interrupt::Stopping);
        }
        tokio::select! {
            v = fut => Ok(v),
            _ = &mut self.cancel => Err(Interrupt::Cancelled),
            _ = self.stop.changed() => Err(Interrupt::Stopping),
        }
    }

    fn end(&self, why: Interrupt) {
        match why {
            Interrupt::Cancelled => {}
            Interrupt::Stopping => {
                let _ = self.tx.send(NodeEvent::SessionLost);
            }
        }
    }

    async fn run(
        mut self,
        ready: crossbeam_channel::Sender<Result<(), StateError>>,
        timeout: Duration,
    ) {
        let client = self.client.clone();
        let path = self.path.clone();
        let first = match self
            .until(tokio::time::timeout(timeout, arm(&client, &path)))
            .await
        {
            Ok(Ok(Ok(armed))) => armed,
            Ok(Ok(Err(e))) => {
                let _ = ready.send(Err(zk_err("watch", &path, e)));
                return;
            }
            Ok(Err(_)) => {
                let _ = ready.send(Err(StateError::Timeout {
                    op: "watch",
                    path,
                    after: timeout,
                }));
                return;
            }
            Err(why) => {
                let _ = ready.send(Err(StateError::SessionExpired { op: "watch", path }));
                self.end(why);
                return;
            }
        };
        let (mut last, mut watcher) = first;
        let _ = self.tx.send(NodeEvent::Changed(last.clone()));
        if ready.send(Ok(())).is_err() {
            return; // the caller gave up waiting
        }
        tracing::debug!(path = %path, "watch armed");
        loop {
            let event = match self.until(watcher.changed()).await {
                Ok(event) => event,
                Err(why) => return self.end(why),
            };
            if event.event_type == zk::EventType::Session && event.session_state.is_terminated() {
                tracing::info!(path = %path, state = %event.session_state, "watch: session lost");
                let _ = self.tx.send(NodeEvent::SessionLost);
                return;
            }
            // Re-arm and report the value now, retrying transient failures.
            let mut delay = RETRY_MIN;
            let (now, next) = loop {
                match self.until(arm(&client, &path)).await {
                    Err(why) => return self.end(why),
                    Ok(Ok(armed)) => break armed,
                    Ok(Err(e)) if session_gone(&e) => {
                        tracing::info!(path = %path, error = %e, "watch: session lost");
                        let _ = self.tx.send(NodeEvent::SessionLost);
                        return;
                    }
                    Ok(Err(e)) => {
                        tracing::warn!(path = %path, error = %e, "watch: cannot re-arm; retrying in {delay:?}");
                        if let Err(why) = self.until(tokio::time::sleep(delay)).await {
                            return self.end(why);
                        }
                        delay = (delay * 2).min(RETRY_MAX);
                    }
                }
            };
            watcher = next;
            if now != last {
                if self.tx.send(NodeEvent::Changed(now.clone())).is_err() {
                    return;
                }
                last = now;
            }
        }
    }
}
