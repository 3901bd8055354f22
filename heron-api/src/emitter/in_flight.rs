//! A spout's tuples in flight and the generator of their root keys.

use heron_proto::keys::KeyBuildHasher;
use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use crate::MessageId;

/// A tracked spout tuple: message id, emit time, index of its stream.
pub(super) type Tracked = (MessageId, Instant, usize);

/// The spout's tuples in flight (ATLEAST_ONCE): root key → (message id, emit time, stream),
/// with insertion order kept for expiry.
#[derive(Default)]
pub(super) struct InFlight {
    /// Root keys are random: [`KeyBuildHasher`] does not hash them again.
    pub(super) map: HashMap<i64, Tracked, KeyBuildHasher>,
    pub(super) order: VecDeque<(i64, Instant)>,
}

impl InFlight {
    pub(super) fn insert(&mut self, key: i64, msg: MessageId, at: Instant, stream: usize) {
        self.map.insert(key, (msg, at, stream));
        self.order.push_back((key, at));
    }

    pub(super) fn remove(&mut self, key: i64) -> Option<Tracked> {
        let found = self.map.remove(&key);
        // Keep `order` from growing without bound with entries already acked.
        if found.is_some() && self.order.len() > 2 * self.map.len() + 1024 {
            let map = &self.map;
            self.order.retain(|(k, _)| map.contains_key(k));
        }
        found
    }

    pub(super) fn expire(&mut self, deadline: Instant, out: &mut Vec<(MessageId, usize)>) {
        while let Some(&(key, at)) = self.order.front() {
            if at > deadline {
                break;
            }
            self.order.pop_front();
            if let Some((msg, emitted, stream)) = self.map.remove(&key) {
                if emitted == at {
                    out.push((msg, stream));
                } else {
                    self.map.insert(key, (msg, emitted, stream));
                }
            }
        }
    }
}

/// A fast per-task PRNG (wyrand) for root keys, seeded from the OS.
pub(super) struct KeyRng(pub(super) u64);

impl KeyRng {
    pub(super) fn new() -> Self {
        KeyRng(rand::random())
    }

    /// The key of an addressed tuple with `roots`: a fresh one with acking and roots (its emit
    /// then goes in a control set), else 0.
    #[inline]
    pub(super) fn tuple_key(&mut self, acking: bool, roots: &[(i32, i64)]) -> i64 {
        if acking && !roots.is_empty() {
            self.next_nonzero()
        } else {
            0
        }
    }

    pub(super) fn next_nonzero(&mut self) -> i64 {
        loop {
            self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
            let t = u128::from(self.0).wrapping_mul(u128::from(self.0 ^ 0xe703_7ed1_a0b4_28db));
            let k = ((t >> 64) as u64 ^ t as u64) as i64;
            if k != 0 {
                return k;
            }
        }
    }
}
