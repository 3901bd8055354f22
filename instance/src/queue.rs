//! The bounded queue from the executor to the gateway's writer: a `crossbeam-channel` queue
//! that sleeps without spinning. (Input needs none: the executor reads its socket, `inbox.rs`.)
//!
//! A blocking `crossbeam-channel` receive spins and then calls `sched_yield` several times
//! before it parks. On a machine with fewer cores than busy threads (an instance has two,
//! a container several instances) every yield hands the core to another thread and the
//! yielder waits for its next slice: measured on 2 vCPUs, a word count at half its saturated
//! rate made ~55 k involuntary context switches a second, most of them such yields. Here a
//! side that finds the queue empty (or full) parks at once on its own [`Parker`], and the other
//! side unparks it: after each send, and after a receive that leaves the queue half free (a
//! sender woken for every item taken would add one item and sleep again). One atomic swap
//! when nobody sleeps.
//!
//! A queue also has a budget in bytes: it counts as full while the items in it weigh that
//! much (an item is always taken when the queue holds nothing). Batches vary from a few
//! tuples to tens of kilobytes, so a count of batches alone bounds nothing: at saturation
//! every queue on the way from a spout to the slowest bolt is full, and what they hold is
//! the topology's queueing latency.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TryRecvError, TrySendError};
use crossbeam_utils::sync::{Parker, Unparker};

#[cfg(test)]
use crossbeam_channel::RecvTimeoutError;
pub(crate) use crossbeam_channel::{RecvError, SendError};

/// The sending end. Dropping it wakes a waiting receiver, which then sees the disconnection.
pub(crate) struct QueueTx<T> {
    tx: Sender<(T, usize)>,
    budget: Arc<Budget>,
    /// Where this side sleeps while the queue is full.
    parker: Parker,
    /// Wakes the receiver (last field: see [`Waker`]).
    receiver: Waker,
}

/// The receiving end. Dropping it wakes a waiting sender, which then sees the disconnection.
pub(crate) struct QueueRx<T> {
    rx: Receiver<(T, usize)>,
    budget: Arc<Budget>,
    /// A sender blocked on a full queue is woken once the queue is down to these items (and
    /// half its byte budget).
    wake_items: usize,
    /// Where this side sleeps while the queue is empty.
    parker: Parker,
    /// Wakes the sender (last field: see [`Waker`]).
    sender: Waker,
}

/// A queue that holds at most `capacity` items (at least one), with no budget in bytes.
#[cfg(test)]
pub(crate) fn bounded<T>(capacity: usize) -> (QueueTx<T>, QueueRx<T>) {
    bounded_bytes(capacity, usize::MAX)
}

/// A queue that holds at most `capacity` items (at least one) and is full while its items
/// weigh `max_bytes` or more (see [`QueueTx::send_weighted`]).
pub(crate) fn bounded_bytes<T>(capacity: usize, max_bytes: usize) -> (QueueTx<T>, QueueRx<T>) {
    let (tx, rx) = crossbeam_channel::bounded(capacity.max(1));
    let budget = Arc::new(Budget {
        max_bytes: AtomicUsize::new(max_bytes),
        ..Budget::default()
    });
    let (tx_parker, rx_parker) = (Parker::new(), Parker::new());
    let sender = Waker(tx_parker.unparker().clone());
    let receiver = Waker(rx_parker.unparker().clone());
    (
        QueueTx {
            tx,
            budget: budget.clone(),
            parker: tx_parker,
            receiver,
        },
        QueueRx {
            rx,
            budget,
            wake_items: capacity.max(1) / 2,
            parker: rx_parker,
            sender,
        },
    )
}

impl<T> QueueTx<T> {
    /// Queues `item` (weight 0), sleeping while the queue is full; fails when the receiver
    /// is gone.
    #[cfg(test)]
    pub fn send(&self, item: T) -> Result<(), SendError<T>> {
        self.send_weighted(item, 0)
    }

    /// Queues `item`, which weighs `bytes`, sleeping while the queue is full; fails when the
    /// receiver is gone.
    pub fn send_weighted(&self, item: T, bytes: usize) -> Result<(), SendError<T>> {
        let mut entry = (item, bytes);
        loop {
            if !self.wait_while_full(None) {
                return Err(SendError(entry.0));
            }
            // counted before it is visible: the receiver may take it at once, and must never
            // take away more than was counted
            self.budget.bytes.fetch_add(bytes, Ordering::Relaxed);
            match self.tx.try_send(entry) {
                Ok(()) => {
                    self.receiver.wake();
                    return Ok(());
                }
                Err(TrySendError::Disconnected((back, _))) => {
                    self.budget.bytes.fetch_sub(bytes, Ordering::Relaxed);
                    return Err(SendError(back));
                }
                Err(TrySendError::Full(back)) => {
                    // another look at the queue filled it in between: wait again
                    self.budget.bytes.fetch_sub(bytes, Ordering::Relaxed);
                    entry = back;
                }
            }
        }
    }

    fn over_budget(&self) -> bool {
        self.budget.bytes.load(Ordering::Relaxed) >= self.budget.max_bytes.load(Ordering::Relaxed)
    }

    /// `true` when a send would have to wait.
    pub fn is_full(&self) -> bool {
        self.tx.is_full() || (self.over_budget() && !self.tx.is_empty())
    }

    /// Sleeps until the queue has room, or at most until `deadline`.
    pub fn wait_for_room(&self, deadline: Instant) {
        self.wait_while_full(Some(deadline));
    }

    /// Sleeps while the queue is full (until `deadline`, if given); `false` once the receiver
    /// is gone. A receive wakes this side; it also looks again every [`BUDGET_RECHECK`], which
    /// bounds the wait when that wake raced with its own count.
    fn wait_while_full(&self, deadline: Option<Instant>) -> bool {
        loop {
            if self.budget.closed.load(Ordering::Acquire) {
                return false;
            }
            if !self.is_full() {
                return true;
            }
            let now = Instant::now();
            let recheck = now + BUDGET_RECHECK;
            match deadline {
                Some(d) if now >= d => return true,
                Some(d) => self.parker.park_deadline(d.min(recheck)),
                None => self.parker.park_deadline(recheck),
            }
        }
    }
}

impl<T> QueueRx<T> {
    /// Takes an item if one is queued.
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        let (item, bytes) = self.rx.try_recv()?;
        let left = if bytes > 0 {
            // never below zero: a sender counts an item before sending it
            self.budget.bytes.fetch_sub(bytes, Ordering::Relaxed) - bytes
        } else {
            self.budget.bytes.load(Ordering::Relaxed)
        };
        // Waking a full queue's sender for every item taken would make it add one item and
        // sleep again, a wake-up per item; it is woken once half the queue is free.
        let len = self.rx.len();
        let wake_bytes = self.budget.max_bytes.load(Ordering::Relaxed) / 2;
        if len == 0 || (left <= wake_bytes && len <= self.wake_items) {
            self.sender.wake();
        }
        Ok(item)
    }

    /// Takes an item, sleeping until one comes; fails when the queue is empty and the
    /// sender is gone.
    pub fn recv(&self) -> Result<T, RecvError> {
        loop {
            match self.try_recv() {
                Ok(item) => return Ok(item),
                Err(TryRecvError::Disconnected) => return Err(RecvError),
                Err(TryRecvError::Empty) => self.parker.park(),
            }
        }
    }

    /// Takes an item, sleeping at most `timeout` for one.
    #[cfg(test)]
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.try_recv() {
                Ok(item) => return Ok(item),
                Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) => {
                    if Instant::now() >= deadline {
                        return Err(RecvTimeoutError::Timeout);
                    }
                    self.parker.park_deadline(deadline);
                }
            }
        }
    }
}

/// What both ends of a queue share: the weight of the queued items, the weight at which the
/// queue is full, and whether the receiver is gone (its queued items can no longer lighten).
#[derive(Default)]
struct Budget {
    bytes: AtomicUsize,
    max_bytes: AtomicUsize,
    closed: AtomicBool,
}

impl<T> Drop for QueueRx<T> {
    fn drop(&mut self) {
        // before the fields drop: the waker (last field) then wakes the sender, who sees it
        self.budget.closed.store(true, Ordering::Release);
    }
}

/// How often a sender waiting on a full queue looks again (see `wait_while_full`).
const BUDGET_RECHECK: Duration = Duration::from_millis(1);

/// Wakes the other side when dropped. It is the last field of each end, and fields drop in
/// declaration order, so the channel end is gone by then and the woken side sees the
/// disconnection.
struct Waker(Unparker);

impl Waker {
    fn wake(&self) {
        self.0.unpark();
    }
}

impl Drop for Waker {
    fn drop(&mut self) {
        self.0.unpark();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heron_testkit::wait::spawn_asleep;
    use std::thread;

    const LONG: Duration = Duration::from_secs(10);

    #[test]
    fn items_arrive_in_order_across_threads_with_a_full_queue() {
        let (tx, rx) = bounded::<u32>(2);
        let producer = thread::spawn(move || {
            for i in 0..10_000 {
                tx.send(i).unwrap();
            }
        });
        for i in 0..10_000 {
            assert_eq!(rx.recv_timeout(LONG), Ok(i));
        }
        producer.join().unwrap();
        assert_eq!(rx.recv(), Err(RecvError), "sender gone and queue drained");
    }

    #[test]
    fn timeouts_and_full() {
        let (tx, rx) = bounded::<u32>(1);
        let start = Instant::now();
        assert_eq!(
            rx.recv_timeout(Duration::from_millis(20)),
            Err(RecvTimeoutError::Timeout)
        );
        assert!(start.elapsed() >= Duration::from_millis(20));
        assert!(!tx.is_full());
        tx.send(1).unwrap();
        assert!(tx.is_full());
        assert_eq!(rx.try_recv(), Ok(1));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    }

    #[test]
    fn dropping_the_sender_wakes_a_sleeping_receiver() {
        let (tx, rx) = bounded::<u32>(1);
        let receiver = spawn_asleep(LONG, move || rx.recv_timeout(LONG));
        drop(tx);
        assert_eq!(
            receiver.join().unwrap(),
            Err(RecvTimeoutError::Disconnected)
        );
    }

    #[test]
    fn dropping_the_receiver_wakes_a_sender_blocked_on_a_full_queue() {
        let (tx, rx) = bounded::<u32>(1);
        tx.send(1).unwrap();
        let sender = spawn_asleep(LONG, move || tx.send(2));
        drop(rx);
        assert_eq!(sender.join().unwrap(), Err(SendError(2)));
    }

    #[test]
    fn the_byte_budget_makes_a_queue_full_and_half_a_queue_frees_it() {
        let (tx, rx) = bounded_bytes::<u32>(16, 100);
        tx.send_weighted(1, 60).unwrap();
        assert!(!tx.is_full(), "60 of 100 bytes");
        tx.send_weighted(2, 60).unwrap();
        assert!(tx.is_full(), "120 of 100 bytes");
        let sender = spawn_asleep(LONG, move || {
            tx.send_weighted(3, 10).unwrap();
            tx
        });
        assert_eq!(rx.recv_timeout(LONG), Ok(1));
        assert_eq!(rx.recv_timeout(LONG), Ok(2));
        assert_eq!(rx.recv_timeout(LONG), Ok(3), "the sender was woken");
        let tx = sender.join().unwrap();
        assert!(!tx.is_full());
    }

    #[test]
    fn weighted_items_cross_threads_in_order_and_the_count_returns_to_zero() {
        let (tx, rx) = bounded_bytes::<u32>(4, 50);
        let producer = thread::spawn(move || {
            for i in 0..20_000 {
                tx.send_weighted(i, 1 + (i as usize % 40)).unwrap();
            }
            tx
        });
        for i in 0..20_000 {
            assert_eq!(rx.recv_timeout(LONG), Ok(i));
        }
        let tx = producer.join().unwrap();
        assert_eq!(rx.budget.bytes.load(Ordering::Relaxed), 0);
        assert!(!tx.is_full());
    }

    #[test]
    fn an_item_over_the_budget_goes_into_an_empty_queue() {
        let (tx, rx) = bounded_bytes::<u32>(4, 10);
        tx.send_weighted(1, 1000).unwrap();
        assert!(tx.is_full());
        assert_eq!(rx.try_recv(), Ok(1));
        assert!(!tx.is_full(), "the weight went with the item");
        tx.send_weighted(2, 1000).unwrap();
        assert_eq!(rx.try_recv(), Ok(2));
    }

    #[test]
    fn waiting_for_room_ends_at_the_deadline_or_when_the_receiver_takes() {
        let (tx, rx) = bounded_bytes::<u32>(4, 10);
        tx.send_weighted(1, 10).unwrap();
        let start = Instant::now();
        tx.wait_for_room(start + Duration::from_millis(20));
        assert!(start.elapsed() >= Duration::from_millis(20));
        assert!(tx.is_full());
        let waiter = spawn_asleep(LONG, move || {
            tx.wait_for_room(Instant::now() + LONG);
            tx
        });
        assert_eq!(rx.recv_timeout(LONG), Ok(1));
        assert!(!waiter.join().unwrap().is_full());
    }

    #[test]
    fn dropping_the_receiver_wakes_a_sender_blocked_on_the_byte_budget() {
        let (tx, rx) = bounded_bytes::<u32>(4, 10);
        tx.send_weighted(1, 10).unwrap();
        let sender = spawn_asleep(LONG, move || tx.send_weighted(2, 1));
        drop(rx);
        assert_eq!(sender.join().unwrap(), Err(SendError(2)));
    }

    #[test]
    fn a_receive_wakes_a_sender_blocked_on_a_full_queue() {
        let (tx, rx) = bounded::<u32>(1);
        tx.send(1).unwrap();
        let sender = spawn_asleep(LONG, move || tx.send(2));
        assert_eq!(rx.recv(), Ok(1));
        assert_eq!(rx.recv_timeout(LONG), Ok(2));
        assert_eq!(sender.join().unwrap(), Ok(()));
    }
}
