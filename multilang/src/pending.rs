//! A bolt's input tuples written to the subprocess and not yet acked or failed, by the id
//! they were sent with.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Held items by id. Ids are sequence numbers, sent as decimal strings (Storm's tuple ids are
/// strings) and unique for the life of the component; an id that is not the canonical
/// decimal form of one (`"07"`, `"+7"`, `"x"`) is unknown.
///
/// ```
/// use heron_multilang::Pending;
///
/// let mut p = Pending::default();
/// let id = p.insert("tuple");
/// assert_eq!(p.get(&id.to_string()), Some(&"tuple"));
/// assert_eq!(p.take(&format!("+{id}")), None);
/// assert_eq!(p.take(&id.to_string()), Some("tuple"));
/// ```
#[derive(Debug)]
pub struct Pending<T> {
    map: HashMap<u64, T, BuildHasherDefault<SeqHasher>>,
    next: u64,
}

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Pending {
            map: HashMap::default(),
            next: 1,
        }
    }
}

/// The id a string names, when it is the canonical decimal form of one.
pub fn parse_id(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    let canonical = !b.is_empty()
        && b.len() <= 20
        && b.iter().all(u8::is_ascii_digit)
        && (b[0] != b'0' || b.len() == 1);
    if canonical {
        s.parse().ok()
    } else {
        None
    }
}

impl<T> Pending<T> {
    /// A fresh id (not held).
    pub fn next_id(&mut self) -> u64 {
        let id = self.next;
        self.next += 1;
        id
    }

    /// Holds `item` under a fresh id, returned.
    pub fn insert(&mut self, item: T) -> u64 {
        let id = self.next_id();
        self.map.insert(id, item);
        id
    }

    /// The held item `id`.
    pub fn get(&self, id: &str) -> Option<&T> {
        self.map.get(&parse_id(id)?)
    }

    /// Releases `id` (ack or fail).
    pub fn take(&mut self, id: &str) -> Option<T> {
        self.map.remove(&parse_id(id)?)
    }

    /// How many are held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// `true` when none is held.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Releases every held item (ids in no order).
    pub fn drain(&mut self) -> impl Iterator<Item = (u64, T)> + '_ {
        self.map.drain()
    }
}

/// Hashes sequence numbers by one multiplication (they are not chosen by anyone, so no
/// defence against collisions is needed; SipHash was a visible cost per tuple).
#[derive(Debug, Default, Clone, Copy)]
pub struct SeqHasher(u64);

impl Hasher for SeqHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_released_once() {
        let mut p = Pending::default();
        let a = p.insert('a');
        let b = p.insert('b');
        assert_ne!(a, b);
        assert_eq!(p.len(), 2);
        assert_eq!(p.take(&a.to_string()), Some('a'));
        assert_eq!(p.take(&a.to_string()), None, "an id is released once");
        assert_eq!(p.get(&b.to_string()), Some(&'b'));
        assert_eq!(p.drain().count(), 1);
        assert!(p.is_empty());
    }

    #[test]
    fn only_canonical_decimal_ids_name_one() {
        assert_eq!(parse_id("0"), Some(0));
        assert_eq!(parse_id("18446744073709551615"), Some(u64::MAX));
        for bad in [
            "",
            "07",
            "+7",
            "-7",
            " 7",
            "7 ",
            "x",
            "18446744073709551616",
            "1e3",
        ] {
            assert_eq!(parse_id(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn many_held_ids_stay_reachable() {
        let mut p = Pending::default();
        let ids: Vec<u64> = (0..10_000).map(|i| p.insert(i)).collect();
        for (i, id) in ids.iter().enumerate().step_by(7) {
            assert_eq!(p.take(&id.to_string()), Some(i));
        }
        assert_eq!(p.len(), 10_000 - 10_000usize.div_ceil(7));
    }
}
