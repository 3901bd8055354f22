//! A bound on connections that have been accepted but not proven yet: a peer without the
//! secret can hold a handshake open for [`HANDSHAKE_TIMEOUT`](crate::HANDSHAKE_TIMEOUT) at
//! most, and only this many of them at once per listener, so strangers cannot run a daemon
//! out of memory or file descriptors by opening connections and saying nothing.

use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How many accepted connections may wait for their handshake at once, per listener. Far
/// above what a container's own processes need when they all (re)connect together: each
/// handshake takes well under a millisecond once its peer is running.
pub const MAX_PENDING_HANDSHAKES: usize = 256;

/// Slots for connections waiting for their handshake.
///
/// ```
/// let slots = heron_auth::PendingHandshakes::new(1);
/// let first = slots.try_start().expect("a free slot");
/// assert!(slots.try_start().is_none(), "full");
/// drop(first);
/// assert!(slots.try_start().is_some());
/// ```
#[derive(Clone, Debug)]
pub struct PendingHandshakes {
    slots: Arc<Semaphore>,
    capacity: usize,
}

impl Default for PendingHandshakes {
    fn default() -> Self {
        PendingHandshakes::new(MAX_PENDING_HANDSHAKES)
    }
}

impl PendingHandshakes {
    /// Room for `n` handshakes at once.
    pub fn new(n: usize) -> Self {
        PendingHandshakes {
            slots: Arc::new(Semaphore::new(n)),
            capacity: n,
        }
    }

    /// A slot for one handshake, held until the permit is dropped; `None` when all are taken
    /// (the caller closes the new connection).
    pub fn try_start(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.slots).try_acquire_owned().ok()
    }

    /// [`PendingHandshakes::try_start`] for a connection from `peer`, logging the refusal
    /// when every slot is taken.
    pub fn admit(&self, peer: &dyn std::fmt::Display) -> Option<OwnedSemaphorePermit> {
        let slot = self.try_start();
        if slot.is_none() {
            tracing::warn!(
                %peer,
                "closing a connection from {peer}: {} connections are already waiting for their \
                 handshake",
                self.capacity
            );
        }
        slot
    }
}
