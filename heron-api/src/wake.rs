//! Waking a task's executor thread for output produced outside `execute`.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A handle that wakes a bolt's executor thread so it calls
/// [`Bolt::poll_async`](crate::Bolt::poll_async) soon, without waiting for the next input
/// tuple. A bolt whose work finishes on other threads (a subprocess reader, a client
/// callback) takes it from [`TopologyContext::async_waker`](crate::TopologyContext::async_waker)
/// in `prepare`, clones it into those threads, and calls [`wake`](Self::wake) when output is
/// ready.
///
/// `wake` sets a flag and calls the runtime's notify function only when the flag was clear,
/// so a burst of wakes costs one notification; the executor clears it with
/// [`take`](Self::take) before it calls `poll_async`.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use heron_api::AsyncWaker;
///
/// let notified = Arc::new(AtomicUsize::new(0));
/// let n = notified.clone();
/// let waker = AsyncWaker::new(move || { n.fetch_add(1, Ordering::Relaxed); });
/// waker.wake();
/// waker.wake(); // already pending: no second notification
/// assert_eq!(notified.load(Ordering::Relaxed), 1);
/// assert!(waker.take());
/// assert!(!waker.take());
/// ```
#[derive(Clone)]
pub struct AsyncWaker {
    inner: Arc<Inner>,
}

struct Inner {
    pending: AtomicBool,
    notify: Box<dyn Fn() + Send + Sync>,
}

impl AsyncWaker {
    /// A waker that calls `notify` (e.g. unparks the executor thread) on the first `wake`
    /// after each `take`.
    pub fn new(notify: impl Fn() + Send + Sync + 'static) -> AsyncWaker {
        AsyncWaker {
            inner: Arc::new(Inner {
                pending: AtomicBool::new(false),
                notify: Box::new(notify),
            }),
        }
    }

    /// Asks for a `poll_async` call soon.
    pub fn wake(&self) {
        if !self.inner.pending.swap(true, Ordering::AcqRel) {
            (self.inner.notify)();
        }
    }

    /// Clears the request; `true` when there was one (the runtime's side).
    pub fn take(&self) -> bool {
        self.inner.pending.swap(false, Ordering::AcqRel)
    }

    /// `true` when a wake is pending.
    pub fn is_pending(&self) -> bool {
        self.inner.pending.load(Ordering::Acquire)
    }
}

impl fmt::Debug for AsyncWaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncWaker")
            .field("pending", &self.is_pending())
            .finish()
    }
}
