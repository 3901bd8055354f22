//! The bounded queues between the gateway and the executor: a `crossbeam-channel` queue that
//! sleeps without spinning.
//!
//! A blocking `crossbeam-channel` receive spins and then calls `sched_yield` several times
//! before it parks. On a machine with fewer cores than busy threads (an instance has three,
//! a container several instances) every yield hands the core to another thread and the
//! yielder waits for its next slice: measured on 2 vCPUs, a word count at half its saturated
//! rate made ~55 k involuntary context switches a second, most of them such yields. Here a
//! side that finds the queue empty (or full) parks at once on its own [`Parker`], and the other
//! side unparks it after each send (or receive): one atomic swap when nobody sleeps.

use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TryRecvError, TrySendError};
use crossbeam_utils::sync::{Parker, Unparker};

pub(crate) use crossbeam_channel::{RecvError, RecvTimeoutError, SendError};

/// The sending end. Dropping it wakes a waiting receiver, which then sees the disconnection.
pub(crate) struct QueueTx<T> {
    tx: Sender<T>,
    /// Where this side sleeps while the queue is full.
    parker: Parker,
    /// Wakes the receiver (last field: see [`Waker`]).
    receiver: Waker,
}

/// The receiving end. Dropping it wakes a waiting sender, which then sees the disconnection.
pub(crate) struct QueueRx<T> {
    rx: Receiver<T>,
    /// Where this side sleeps while the queue is empty.
    parker: Parker,
    /// Wakes the sender (last field: see [`Waker`]).
    sender: Waker,
}

/// A queue that holds at most `capacity` items (at least one).
pub(crate) fn bounded<T>(capacity: usize) -> (QueueTx<T>, QueueRx<T>) {
    let (tx, rx) = crossbeam_channel::bounded(capacity.max(1));
    let (tx_parker, rx_parker) = (Parker::new(), Parker::new());
    let sender = Waker(tx_parker.unparker().clone());
    let receiver = Waker(rx_parker.unparker().clone());
    (
        QueueTx {
            tx,
            parker: tx_parker,
            receiver,
        },
        QueueRx {
            rx,
            parker: rx_parker,
            sender,
        },
    )
}

impl<T> QueueTx<T> {
    /// Queues `item`, sleeping while the queue is full; fails when the receiver is gone.
    pub fn send(&self, mut item: T) -> Result<(), SendError<T>> {
        loop {
            match self.tx.try_send(item) {
                Ok(()) => {
                    self.receiver.wake();
                    return Ok(());
                }
                Err(TrySendError::Disconnected(back)) => return Err(SendError(back)),
                Err(TrySendError::Full(back)) => {
                    item = back;
                    self.parker.park();
                }
            }
        }
    }

    /// `true` when a send would have to wait.
    pub fn is_full(&self) -> bool {
        self.tx.is_full()
    }
}

impl<T> QueueRx<T> {
    /// Takes an item if one is queued.
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        let item = self.rx.try_recv()?;
        self.sender.wake();
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

    /// A handle that wakes this receiver from [`recv_deadline_or`](Self::recv_deadline_or).
    pub fn unparker(&self) -> Unparker {
        self.parker.unparker().clone()
    }

    /// Takes an item, sleeping until `deadline` for one, or until `woken()` is true (checked
    /// before each sleep; whoever makes it true must unpark this receiver, see
    /// [`unparker`](Self::unparker)). Returns `Timeout` on the deadline or the wake.
    pub fn recv_deadline_or(
        &self,
        deadline: Instant,
        woken: impl Fn() -> bool,
    ) -> Result<T, RecvTimeoutError> {
        loop {
            match self.try_recv() {
                Ok(item) => return Ok(item),
                Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) => {
                    if woken() || Instant::now() >= deadline {
                        return Err(RecvTimeoutError::Timeout);
                    }
                    self.parker.park_deadline(deadline);
                }
            }
        }
    }

    /// Takes an item, sleeping at most `timeout` for one.
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
    fn a_wake_ends_a_deadline_receive_early() {
        let (_tx, rx) = bounded::<u32>(1);
        let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (f, unparker) = (flag.clone(), rx.unparker());
        let waker = thread::spawn(move || {
            f.store(true, std::sync::atomic::Ordering::Release);
            unparker.unpark();
        });
        let start = Instant::now();
        let got = rx.recv_deadline_or(Instant::now() + LONG, || {
            flag.load(std::sync::atomic::Ordering::Acquire)
        });
        assert_eq!(got, Err(RecvTimeoutError::Timeout));
        assert!(start.elapsed() < LONG, "woken, not timed out");
        waker.join().unwrap();
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
    fn a_receive_wakes_a_sender_blocked_on_a_full_queue() {
        let (tx, rx) = bounded::<u32>(1);
        tx.send(1).unwrap();
        let sender = spawn_asleep(LONG, move || tx.send(2));
        assert_eq!(rx.recv(), Ok(1));
        assert_eq!(rx.recv_timeout(LONG), Ok(2));
        assert_eq!(sender.join().unwrap(), Ok(()));
    }
}
