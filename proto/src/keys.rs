//! Hashing of Heron's root keys (`RootId.key`) and task ids.
//!
//! Root keys are uniformly random 64-bit numbers, so a map keyed by them needs no hashing:
//! [`KeyHasher`] hands the key back as its hash. Task ids are small integers; it spreads them
//! with one multiplication. Both the spout's in-flight map and the stream manager's XOR
//! tracker use it.

use std::hash::{BuildHasherDefault, Hasher};

/// A hasher for random root keys (identity) and task ids (one multiplication).
#[derive(Default, Clone, Copy, Debug)]
pub struct KeyHasher(u64);

/// Builds [`KeyHasher`]s, for `HashMap<i64, V, KeyBuildHasher>`.
pub type KeyBuildHasher = BuildHasherDefault<KeyHasher>;

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_i64(&mut self, v: i64) {
        self.0 = v as u64;
    }

    fn write_i32(&mut self, v: i32) {
        self.0 = u64::from(v as u32).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn keys_are_their_own_hash_and_tasks_spread() {
        let b = KeyBuildHasher::default();
        assert_eq!(b.hash_one(-5i64), -5i64 as u64);
        assert_ne!(
            b.hash_one(1i32) >> 57,
            b.hash_one(2i32) >> 57,
            "top bits differ"
        );
    }
}
