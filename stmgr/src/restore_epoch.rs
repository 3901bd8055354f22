//! Which restore the tuples from other stream managers belong to (`EFFECTIVELY_ONCE`), as a
//! plain state machine.
//!
//! The tmaster sends every stream manager a restore request with a new txid, and once all of
//! them restored, the start. The messages reach the stream managers at slightly different
//! times, so on the mesh two kinds of tuples cross a stream manager's restore:
//!
//! * tuples a peer sent before it received the restore request: they belong to the state
//!   rolled back, and must be dropped even when they are read after the start;
//! * tuples a peer sent after it received its start, read by a stream manager that has not
//!   received its own start yet: they belong to the new state, and must be delivered once it
//!   starts. Dropping them would lose them: the spout's next checkpoint records it past them.
//!
//! A heron-rs stream manager tags each tuple set and checkpoint marker it sends to another
//! with the txid of its latest restore ([`heron_proto::tuple::RESTORE_TXID_FIELD`]). The
//! receiver delivers what is tagged with its own txid once started, holds it until then, and
//! drops what is tagged with another. The tmaster's txids never repeat across its restarts
//! (they count up from its start time in microseconds), so an old tag cannot match a new
//! restore.
//!
//! What is held is bounded (as the checkpoint alignment is). Over the bound, everything held
//! is dropped, and so is the rest of that restore's input: the stream manager must then ask
//! the tmaster for another restore, which rolls back what the drop lost.

use std::collections::VecDeque;

/// What to do with a message from another stream manager ([`RestoreEpoch::admit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Deliver it now.
    Deliver,
    /// Keep it ([`RestoreEpoch::hold`]) until the start.
    Hold,
    /// Drop it: it belongs to another restore, or none was started.
    Drop,
}

/// Held messages went over the bound: these are dropped, and the topology must be restored.
#[derive(Debug)]
pub(crate) struct Overflow<T>(pub Vec<T>);

/// The restore this stream manager is in, and what it holds for it.
#[derive(Debug)]
pub(crate) struct RestoreEpoch<T> {
    /// The txid of the latest restore request (`None` before the first).
    txid: Option<i64>,
    /// The start of that restore came.
    started: bool,
    /// The hold overflowed during that restore: its input is dropped.
    overflowed: bool,
    held: VecDeque<T>,
    held_bytes: usize,
    limit: usize,
}

impl<T> RestoreEpoch<T> {
    /// Before any restore, holding at most `limit` bytes.
    pub fn new(limit: usize) -> RestoreEpoch<T> {
        RestoreEpoch {
            txid: None,
            started: false,
            overflowed: false,
            held: VecDeque::new(),
            held_bytes: 0,
            limit,
        }
    }

    /// Changes the bound (a new plan); it applies to what is held next.
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
    }

    /// The bound on what is held, in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The txid to tag what is sent with.
    pub fn txid(&self) -> Option<i64> {
        self.txid
    }

    /// A restore request with `txid`: what was held is returned, to be dropped.
    pub fn on_restore(&mut self, txid: i64) -> Vec<T> {
        self.txid = Some(txid);
        self.started = false;
        self.overflowed = false;
        self.held_bytes = 0;
        self.held.drain(..).collect()
    }

    /// The start of the current restore: what was held is returned, in arrival order, to be
    /// delivered now.
    pub fn on_start(&mut self) -> Vec<T> {
        self.started = true;
        self.held_bytes = 0;
        self.held.drain(..).collect()
    }

    /// What to do with a message tagged `tag` (`None`: a sender that does not tag, handled
    /// as before tags: delivered once started).
    pub fn admit(&mut self, tag: Option<i64>) -> Admit {
        let Some(txid) = self.txid else {
            return Admit::Drop;
        };
        if self.overflowed || tag.is_some_and(|t| t != txid) {
            return Admit::Drop;
        }
        match (self.started, tag) {
            (true, _) => Admit::Deliver,
            (false, Some(_)) => Admit::Hold,
            (false, None) => Admit::Drop,
        }
    }

    /// Keeps `item` (of `bytes` bytes) until the start. Over the bound, everything held and
    /// `item` are returned to be dropped, and the rest of this restore's input will be.
    pub fn hold(&mut self, item: T, bytes: usize) -> Result<(), Overflow<T>> {
        if self.held_bytes.saturating_add(bytes) > self.limit {
            self.overflowed = true;
            self.held_bytes = 0;
            let mut dropped: Vec<T> = self.held.drain(..).collect();
            dropped.push(item);
            return Err(Overflow(dropped));
        }
        self.held_bytes += bytes;
        self.held.push_back(item);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_delivered_before_the_first_restore() {
        let mut e = RestoreEpoch::<u32>::new(100);
        assert_eq!(e.txid(), None);
        assert_eq!(e.admit(None), Admit::Drop);
        assert_eq!(e.admit(Some(0)), Admit::Drop);
    }

    #[test]
    fn the_new_restores_tuples_are_held_until_the_start_and_old_ones_dropped() {
        let mut e = RestoreEpoch::new(100);
        assert!(e.on_restore(7).is_empty());
        assert_eq!(e.txid(), Some(7));
        // a peer that started first
        assert_eq!(e.admit(Some(7)), Admit::Hold);
        e.hold(1, 10).unwrap();
        // a slow peer's tuples from before the restore
        assert_eq!(e.admit(Some(6)), Admit::Drop);
        assert_eq!(e.admit(None), Admit::Drop);
        assert_eq!(e.admit(Some(7)), Admit::Hold);
        e.hold(2, 10).unwrap();
        assert_eq!(e.on_start(), vec![1, 2]);
        assert_eq!(e.admit(Some(7)), Admit::Deliver);
        assert_eq!(e.admit(None), Admit::Deliver);
        // read after the start, still old
        assert_eq!(e.admit(Some(6)), Admit::Drop);
        assert_eq!(e.admit(Some(8)), Admit::Drop);
    }

    #[test]
    fn a_restore_drops_what_the_one_before_held() {
        let mut e = RestoreEpoch::new(100);
        e.on_restore(1);
        e.hold(1, 10).unwrap();
        e.hold(2, 10).unwrap();
        assert_eq!(e.on_restore(2), vec![1, 2]);
        assert_eq!(e.admit(Some(1)), Admit::Drop);
        assert!(e.on_start().is_empty());
        assert_eq!(e.admit(Some(2)), Admit::Deliver);
    }

    #[test]
    fn over_the_bound_everything_of_the_restore_is_dropped_until_the_next() {
        let mut e = RestoreEpoch::new(25);
        e.on_restore(3);
        e.hold(1, 10).unwrap();
        e.hold(2, 10).unwrap();
        let Err(Overflow(dropped)) = e.hold(3, 10) else {
            panic!("over the bound");
        };
        assert_eq!(dropped, vec![1, 2, 3]);
        assert_eq!(e.admit(Some(3)), Admit::Drop);
        assert!(e.on_start().is_empty());
        assert_eq!(e.admit(Some(3)), Admit::Drop, "a gap: not delivered");
        e.on_restore(4);
        assert_eq!(e.admit(Some(4)), Admit::Hold);
        e.hold(4, 20).unwrap();
        assert_eq!(e.on_start(), vec![4]);
        assert_eq!(e.admit(Some(4)), Admit::Deliver);
    }
}
