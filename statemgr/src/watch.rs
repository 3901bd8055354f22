//! Watching one node: [`NodeEvent`], [`NodeWatch`], and the polling watcher [`poll_node`]
//! used by backends without server-side watches.
//!
//! The semantics are documented on [`NodeWatch`].

use crate::StateError;
use crossbeam_channel::{Receiver, RecvError, RecvTimeoutError, TryRecvError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often [`poll_node`] reads the node unless told otherwise (and the local backend's
/// default).
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(500);

/// What a [`NodeWatch`] reports; see [`NodeWatch`] for the rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeEvent {
    /// The node's value now: `Some(bytes)` if it exists, `None` if it does not.
    Changed(Option<Vec<u8>>),
    /// The session behind the watch is gone; no more events follow.
    SessionLost,
}

type Cancel = Box<dyn FnOnce() + Send + 'static>;

/// A watch on one node: a receiver of [`NodeEvent`]s that cancels the watch when dropped.
///
/// # Semantics (every backend)
///
/// * The first event is `Changed(value)` with the node's value when the watch was set
///   (`None` if the node did not exist), so a caller never has to pair a `get` with a watch.
/// * After that, an event is sent when the backend sees a value different from the last one
///   sent: `Changed(Some(bytes))` after a create or a set, `Changed(None)` after a delete.
///   Changes in quick succession may be coalesced: the event carries the latest value, and a
///   change that is undone before the backend looks (delete and re-create with the same bytes)
///   may not be reported at all. A change made after [`StateManager::watch`] returned is never
///   lost: the last event always reflects it, up to the backend's latency (a ZooKeeper round
///   trip; one poll interval for polling backends).
/// * `SessionLost` is sent, once and last, when the session behind the watch is gone: the
///   ZooKeeper session expired or was closed, or the state manager was dropped. Ephemeral nodes
///   created through that session are gone. After it the channel is disconnected. Backends
///   without sessions never send it.
/// * Dropping the [`NodeWatch`] cancels the watch (the backend's thread or task stops).
///
/// A [`NodeWatch`] is a blocking receiver. Sync callers use [`NodeWatch::recv`] /
/// [`NodeWatch::recv_timeout`], or [`NodeWatch::receiver`] in a `crossbeam_channel::select!`;
/// tokio callers wait in `tokio::task::spawn_blocking` (or poll `try_recv` on a timer).
///
/// [`StateManager::watch`]: crate::StateManager::watch
pub struct NodeWatch {
    rx: Receiver<NodeEvent>,
    cancel: Mutex<Option<Cancel>>,
}

impl NodeWatch {
    /// For backends: wraps the receiving end of a watch; `cancel` runs once when the
    /// `NodeWatch` is dropped (it should stop whatever feeds the channel).
    pub fn new(rx: Receiver<NodeEvent>, cancel: impl FnOnce() + Send + 'static) -> NodeWatch {
        NodeWatch {
            rx,
            cancel: Mutex::new(Some(Box::new(cancel))),
        }
    }

    /// Waits for the next event; `Err` once the watch has ended (after `SessionLost`).
    pub fn recv(&self) -> Result<NodeEvent, RecvError> {
        self.rx.recv()
    }

    /// Waits at most `timeout` for the next event.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<NodeEvent, RecvTimeoutError> {
        self.rx.recv_timeout(timeout)
    }

    /// The next event if one is waiting.
    pub fn try_recv(&self) -> Result<NodeEvent, TryRecvError> {
        self.rx.try_recv()
    }

    /// The underlying channel, e.g. for `crossbeam_channel::select!`. Keep the `NodeWatch`
    /// alive while using it: dropping the `NodeWatch` cancels the watch.
    pub fn receiver(&self) -> &Receiver<NodeEvent> {
        &self.rx
    }
}

impl std::fmt::Debug for NodeWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeWatch")
            .field("pending", &self.rx.len())
            .finish_non_exhaustive()
    }
}

impl Drop for NodeWatch {
    fn drop(&mut self) {
        let cancel = match self.cancel.get_mut() {
            Ok(c) => c.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(cancel) = cancel {
            cancel();
        }
    }
}

/// Watches a node by calling `read` every `interval` on a background thread named `heron-watch`,
/// sending `Changed` when the value differs from the last one sent (see
/// [`NodeWatch`]). `read` is called once before this returns, for the first event; its
/// error is returned. Later read errors are logged and retried at the next tick. The thread
/// stops promptly when the [`NodeWatch`] is dropped.
pub fn poll_node<F>(what: String, interval: Duration, read: F) -> Result<NodeWatch, StateError>
where
    F: Fn() -> Result<Option<Vec<u8>>, StateError> + Send + 'static,
{
    let initial = read()?;
    let (tx, rx) = crossbeam_channel::unbounded();
    // Cannot fail: we hold the receiver.
    let _ = tx.send(NodeEvent::Changed(initial.clone()));
    let stop = Arc::new(AtomicBool::new(false));
    let stop_thread = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("heron-watch".into())
        .spawn(move || {
            let mut last = initial;
            let mut failing = false;
            loop {
                std::thread::park_timeout(interval);
                if stop_thread.load(Ordering::Acquire) {
                    return;
                }
                match read() {
                    Ok(now) => {
                        if failing {
                            tracing::info!(node = %what, "watch: node readable again");
                            failing = false;
                        }
                        if now != last {
                            if tx.send(NodeEvent::Changed(now.clone())).is_err() {
                                return;
                            }
                            last = now;
                        }
                    }
                    Err(e) => {
                        if !failing {
                            tracing::warn!(node = %what, error = %e, "watch: cannot read node; retrying");
                            failing = true;
                        }
                    }
                }
            }
        })
        .map_err(|source| StateError::Io {
            path: "heron-watch thread".into(),
            source,
        })?;
    let handle = thread.thread().clone();
    Ok(NodeWatch::new(rx, move || {
        stop.store(true, Ordering::Release);
        handle.unpark();
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn poll_reports_initial_value_then_changes_only() {
        let value = Arc::new(Mutex::new(None::<Vec<u8>>));
        let v = Arc::clone(&value);
        let w = poll_node("t".into(), Duration::from_millis(10), move || {
            Ok(v.lock().unwrap().clone())
        })
        .unwrap();
        let t = Duration::from_secs(5);
        assert_eq!(w.recv_timeout(t).unwrap(), NodeEvent::Changed(None));
        *value.lock().unwrap() = Some(b"a".to_vec());
        assert_eq!(
            w.recv_timeout(t).unwrap(),
            NodeEvent::Changed(Some(b"a".to_vec()))
        );
        // unchanged: nothing
        assert!(w.recv_timeout(Duration::from_millis(100)).is_err());
        *value.lock().unwrap() = None;
        assert_eq!(w.recv_timeout(t).unwrap(), NodeEvent::Changed(None));
    }

    #[test]
    fn dropping_the_watch_stops_the_thread() {
        let reads = Arc::new(AtomicUsize::new(0));
        let r = Arc::clone(&reads);
        let w = poll_node("t".into(), Duration::from_millis(5), move || {
            r.fetch_add(1, Ordering::SeqCst);
            Ok(None)
        })
        .unwrap();
        heron_testkit::wait_for(Duration::from_secs(5), "a few polls", || {
            reads.load(Ordering::SeqCst) >= 3
        });
        drop(w);
        std::thread::sleep(Duration::from_millis(50));
        let after_drop = reads.load(Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(reads.load(Ordering::SeqCst), after_drop);
    }

    #[test]
    fn first_read_error_is_returned() {
        let r = poll_node("t".into(), DEFAULT_POLL_INTERVAL, || {
            Err(StateError::InvalidName("x y".into()))
        });
        assert!(matches!(r, Err(StateError::InvalidName(_))));
    }
}
