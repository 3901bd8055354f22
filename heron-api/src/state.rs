//! Managed state for effectively-once processing: [`State`], its encoding, and the
//! [`Stateful`] / [`TwoPhaseStateful`] traits a component implements to have it checkpointed.
//!
//! In `EFFECTIVELY_ONCE` mode the runtime takes periodic, globally consistent checkpoints:
//! it asks every stateful task for its [`State`] ([`Stateful::pre_save`]), stores the
//! [encoded](State::encode) bytes, and after a failure rolls the whole topology back to the
//! newest consistent checkpoint, handing each task its saved state again
//! ([`Stateful::init_state`]). Each tuple's effect on managed state is then applied once;
//! tuples after the checkpoint are replayed, and side effects outside managed state can
//! repeat (which is why Heron calls it *effectively* once).
//!
//! # Encoding
//!
//! [`State::encode`] writes this layout; integers are little endian, like the
//! [`Value`] encoding inside it:
//!
//! | bytes | field |
//! |---|---|
//! | 4 | magic `HRST` (`48 52 53 54`) |
//! | 1 | version, `1` |
//! | 4 | entry count `n`, u32 |
//! | … | `n` entries, keys strictly ascending (byte order), each: |
//! | 4 | &nbsp;&nbsp;key length `k`, u32 |
//! | `k` | &nbsp;&nbsp;key, UTF-8 |
//! | 4 | &nbsp;&nbsp;value length `v`, u32 |
//! | `v` | &nbsp;&nbsp;value, as [`Value::encode`] writes it (tag byte, payload) |
//!
//! Nothing follows the last entry. The keys are kept sorted, so one state always has one
//! encoding. Zero bytes decode as the empty state (a task with no checkpoint yet starts
//! clean); the empty state itself encodes as the 9-byte header with `n = 0`.
//!
//! ```
//! use heron_api::{State, Value};
//! let mut s = State::new();
//! s.put("n", 1);
//! let bytes = s.encode();
//! assert_eq!(&bytes[..5], b"HRST\x01");
//! assert_eq!(&bytes[5..9], &1u32.to_le_bytes());
//! // key "n": length 1, the key, value length 9, Value::Int(1)
//! assert_eq!(&bytes[9..], &[1, 0, 0, 0, b'n', 9, 0, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0]);
//! assert_eq!(State::decode(&bytes), Ok(s));
//! ```

use std::collections::BTreeMap;
use std::ops::Bound;

use crate::{Value, ValueError};

mod stateful;

pub use stateful::{Stateful, TwoPhaseStateful};

/// The magic bytes every encoded [`State`] starts with.
pub const STATE_MAGIC: [u8; 4] = *b"HRST";

/// The version of the encoding [`State::encode`] writes (the only one [`State::decode`] reads).
pub const STATE_VERSION: u8 = 1;

/// The length of the encoding's header: magic, version, entry count.
const HEADER_LEN: usize = STATE_MAGIC.len() + 1 + 4;

/// A task's managed state: a typed key-value map the runtime checkpoints.
///
/// Keys are strings, values are [`Value`]s; iteration and the [encoding](State::encode)
/// are in key order.
///
/// ```
/// use heron_api::{State, Value};
/// let mut s = State::new();
/// assert_eq!(s.put("count", 3), None);
/// assert_eq!(s.put("count", 4), Some(Value::Int(3)));
/// s.put("name", "words");
/// assert_eq!(s.get_i64("count"), Some(4));
/// assert_eq!(s.get_str("name"), Some("words"));
/// assert_eq!(s.get_i64("name"), None); // wrong type
/// assert_eq!(s.iter().map(|(k, _)| k).collect::<Vec<_>>(), ["count", "name"]);
/// let copy = State::decode(&s.encode()).unwrap();
/// assert_eq!(copy, s);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct State {
    entries: BTreeMap<String, Value>,
}

/// Why bytes do not decode as a [`State`].
///
/// ```
/// use heron_api::{State, StateError};
/// assert!(matches!(State::decode(b"HR"), Err(StateError::Truncated { .. })));
/// assert_eq!(State::decode(b"JSON\x01\0\0\0\0"), Err(StateError::BadMagic(*b"JSON")));
/// assert_eq!(State::decode(b"HRST\x09\0\0\0\0"), Err(StateError::UnknownVersion(9)));
/// ```
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum StateError {
    /// The input does not start with [`STATE_MAGIC`].
    #[error("not an encoded state: magic bytes {0:02x?}, expected \"HRST\"")]
    BadMagic([u8; 4]),
    /// The version byte is not [`STATE_VERSION`].
    #[error("unknown state encoding version {0} (this build reads version {STATE_VERSION})")]
    UnknownVersion(u8),
    /// The input ends inside a field.
    #[error("encoded state truncated: {field} at byte {at} needs {needed} bytes, {left} left")]
    Truncated {
        /// The field being read ("entry count", "key length", "key", "value length", "value").
        field: &'static str,
        /// Where the field starts.
        at: usize,
        /// The bytes the field needs.
        needed: usize,
        /// The bytes left in the input.
        left: usize,
    },
    /// A key is not valid UTF-8.
    #[error("the key of entry {index} is not valid UTF-8")]
    BadKey {
        /// The entry's position (from 0).
        index: u32,
    },
    /// A key is not greater than the one before it (keys are sorted and unique).
    #[error("the key {key:?} of entry {index} is not greater than the key before it")]
    UnsortedKeys {
        /// The entry's position (from 0).
        index: u32,
        /// The key.
        key: String,
    },
    /// A value does not decode.
    #[error("the value of key {key:?} does not decode: {error}")]
    BadValue {
        /// The key.
        key: String,
        /// Why the value does not decode.
        #[source]
        error: ValueError,
    },
    /// Bytes follow the last entry.
    #[error("{0} bytes follow the last entry of the encoded state")]
    TrailingBytes(usize),
}

impl State {
    /// An empty state.
    pub fn new() -> State {
        State::default()
    }

    /// Sets `key` to `value`, returning the value it replaced.
    pub fn put(&mut self, key: impl Into<String>, value: impl Into<Value>) -> Option<Value> {
        self.entries.insert(key.into(), value.into())
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries.get(key)
    }

    /// The value of `key`, mutably.
    ///
    /// ```
    /// # use heron_api::{State, Value};
    /// let mut s = State::new();
    /// s.put("n", 1);
    /// if let Some(Value::Int(n)) = s.get_mut("n") {
    ///     *n += 1;
    /// }
    /// assert_eq!(s.get_i64("n"), Some(2));
    /// ```
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.entries.get_mut(key)
    }

    /// `true` if `key` has a value.
    pub fn contains_key(&self, key: &str) -> bool {
        self.entries.contains_key(key)
    }

    /// The integer value of `key` (`None` if absent or not a [`Value::Int`]).
    pub fn get_i64(&self, key: &str) -> Option<i64> {
        self.get(key)?.as_i64()
    }

    /// The string value of `key` (`None` if absent or not a [`Value::Str`]).
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key)?.as_str()
    }

    /// The float value of `key`; integers convert, as in [`Value::as_f64`].
    pub fn get_f64(&self, key: &str) -> Option<f64> {
        self.get(key)?.as_f64()
    }

    /// The bytes of `key`: a [`Value::Bytes`], or a string's UTF-8 bytes, as in
    /// [`Value::as_bytes`].
    pub fn get_bytes(&self, key: &str) -> Option<&[u8]> {
        self.get(key)?.as_bytes()
    }

    /// The boolean value of `key` (`None` if absent or not a [`Value::Bool`]).
    pub fn get_bool(&self, key: &str) -> Option<bool> {
        self.get(key)?.as_bool()
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.entries.remove(key)
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// `true` when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.entries.clear()
    }

    /// The entries, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The entries whose key starts with `prefix`, in key order.
    ///
    /// Components sharing one state (a spout's source offsets beside its own keys) keep
    /// their keys under distinct prefixes.
    ///
    /// ```
    /// # use heron_api::State;
    /// let mut s = State::new();
    /// s.put("offset.a", 1);
    /// s.put("offset.b", 2);
    /// s.put("other", 3);
    /// let keys: Vec<&str> = s.iter_prefix("offset.").map(|(k, _)| k).collect();
    /// assert_eq!(keys, ["offset.a", "offset.b"]);
    /// ```
    pub fn iter_prefix<'a>(
        &'a self,
        prefix: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a Value)> {
        self.entries
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(move |(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.as_str(), v))
    }

    /// Removes the entries whose key starts with `prefix`, returning how many there were.
    ///
    /// ```
    /// # use heron_api::State;
    /// let mut s = State::new();
    /// s.put("offset.a", 1);
    /// s.put("other", 3);
    /// assert_eq!(s.remove_prefix("offset."), 1);
    /// assert_eq!(s.len(), 1);
    /// ```
    pub fn remove_prefix(&mut self, prefix: &str) -> usize {
        let keys: Vec<String> = self
            .iter_prefix(prefix)
            .map(|(k, _)| k.to_owned())
            .collect();
        for k in &keys {
            self.entries.remove(k);
        }
        keys.len()
    }

    /// The length of [`State::encode`]'s output.
    pub fn encoded_len(&self) -> usize {
        HEADER_LEN
            + self
                .entries
                .iter()
                .map(|(k, v)| 8 + k.len() + v.encoded_len())
                .sum::<usize>()
    }

    /// The encoding described in the [module docs](self): magic, version, entry count,
    /// then each entry's key and value, in key order.
    ///
    /// # Panics
    /// If there are 2³² entries or more, or a key or an encoded value is 4 GiB or longer
    /// (a checkpoint travels in one protobuf message, which cannot hold that much anyway).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.encode_to(&mut out);
        out
    }

    /// Appends [`State::encode`]'s output to `out` (so a caller can reuse one buffer).
    ///
    /// # Panics
    /// As [`State::encode`].
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.encoded_len());
        out.extend_from_slice(&STATE_MAGIC);
        out.push(STATE_VERSION);
        out.extend_from_slice(&len_u32(self.entries.len(), "entry count").to_le_bytes());
        for (k, v) in &self.entries {
            out.extend_from_slice(&len_u32(k.len(), "key length").to_le_bytes());
            out.extend_from_slice(k.as_bytes());
            out.extend_from_slice(&len_u32(v.encoded_len(), "value length").to_le_bytes());
            v.encode(out);
        }
    }

    /// Decodes [`State::encode`]'s output; the empty input is the empty state.
    ///
    /// The whole input must be one state: a truncated input, a bad key or value, keys out
    /// of order, or bytes after the last entry are errors.
    ///
    /// ```
    /// # use heron_api::{State, StateError};
    /// assert_eq!(State::decode(&[]), Ok(State::new()));
    /// let mut bytes = State::new().encode();
    /// assert_eq!(State::decode(&bytes), Ok(State::new()));
    /// bytes.push(0);
    /// assert_eq!(State::decode(&bytes), Err(StateError::TrailingBytes(1)));
    /// ```
    pub fn decode(bytes: &[u8]) -> Result<State, StateError> {
        if bytes.is_empty() {
            return Ok(State::new());
        }
        let mut r = Reader { bytes, at: 0 };
        let magic: [u8; 4] = r.take(4, "magic")?.try_into().expect("4 bytes");
        if magic != STATE_MAGIC {
            return Err(StateError::BadMagic(magic));
        }
        let version = r.take(1, "version")?[0];
        if version != STATE_VERSION {
            return Err(StateError::UnknownVersion(version));
        }
        let count = r.u32("entry count")?;
        let mut entries = BTreeMap::new();
        let mut last: Option<&str> = None;
        for index in 0..count {
            let key_len = r.u32("key length")? as usize;
            let key = std::str::from_utf8(r.take(key_len, "key")?)
                .map_err(|_| StateError::BadKey { index })?;
            if last.is_some_and(|prev| prev >= key) {
                return Err(StateError::UnsortedKeys {
                    index,
                    key: key.to_owned(),
                });
            }
            last = Some(key);
            let value_len = r.u32("value length")? as usize;
            let value = Value::decode(r.take(value_len, "value")?).map_err(|error| {
                StateError::BadValue {
                    key: key.to_owned(),
                    error,
                }
            })?;
            entries.insert(key.to_owned(), value);
        }
        match bytes.len() - r.at {
            0 => Ok(State { entries }),
            n => Err(StateError::TrailingBytes(n)),
        }
    }
}

fn len_u32(n: usize, what: &str) -> u32 {
    u32::try_from(n).unwrap_or_else(|_| panic!("state {what} {n} does not fit the encoding's u32"))
}

/// A cursor over an encoded state.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, needed: usize, field: &'static str) -> Result<&'a [u8], StateError> {
        let left = self.bytes.len() - self.at;
        if needed > left {
            return Err(StateError::Truncated {
                field,
                at: self.at,
                needed,
                left,
            });
        }
        let out = &self.bytes[self.at..self.at + needed];
        self.at += needed;
        Ok(out)
    }

    fn u32(&mut self, field: &'static str) -> Result<u32, StateError> {
        let b = self.take(4, field)?;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }
}

impl<'a> IntoIterator for &'a State {
    type Item = (&'a String, &'a Value);
    type IntoIter = std::collections::btree_map::Iter<'a, String, Value>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter()
    }
}

impl<K: Into<String>, V: Into<Value>> FromIterator<(K, V)> for State {
    /// ```
    /// # use heron_api::State;
    /// let s: State = [("a", 1), ("b", 2)].into_iter().collect();
    /// assert_eq!(s.get_i64("b"), Some(2));
    /// ```
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut s = State::new();
        s.extend(iter);
        s
    }
}

impl<K: Into<String>, V: Into<Value>> Extend<(K, V)> for State {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.put(k, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> State {
        let mut s = State::new();
        s.put("null", Value::Null);
        s.put("bool", true);
        s.put("int", -5);
        s.put("float", 2.5);
        s.put("str", "héllo");
        s.put("empty", "");
        s.put("bytes", vec![0u8, 255, 10]);
        s.put("", "the empty key");
        s.put("big", vec![7u8; 70_000]);
        s
    }

    #[test]
    fn round_trips() {
        let cases = [
            State::new(),
            [("a", 1)].into_iter().collect(),
            [("z", Value::Null), ("a", Value::from("x"))]
                .into_iter()
                .collect(),
            sample(),
        ];
        for s in cases {
            let bytes = s.encode();
            assert_eq!(bytes.len(), s.encoded_len());
            assert_eq!(State::decode(&bytes).as_ref(), Ok(&s));
            let mut out = vec![9, 9];
            s.encode_to(&mut out);
            assert_eq!(&out[2..], &bytes[..]);
            // decoding and re-encoding gives the same bytes
            assert_eq!(State::decode(&bytes).unwrap().encode(), bytes);
        }
        let nan: State = [("x", f64::NAN)].into_iter().collect();
        let back = State::decode(&nan.encode()).unwrap();
        assert!(back.get_f64("x").unwrap().is_nan());
    }

    #[test]
    fn encoding_is_deterministic_and_sorted() {
        let a: State = [("b", 2), ("a", 1), ("c", 3)].into_iter().collect();
        let b: State = [("c", 3), ("a", 1), ("b", 2)].into_iter().collect();
        assert_eq!(a.encode(), b.encode());
        let bytes = a.encode();
        assert_eq!(&bytes[..9], b"HRST\x01\x03\0\0\0");
        assert_eq!(&bytes[9..14], &[1, 0, 0, 0, b'a']);
    }

    #[test]
    fn every_truncation_fails_cleanly() {
        let bytes = sample().encode();
        for n in 1..bytes.len() {
            let err = State::decode(&bytes[..n]).unwrap_err();
            assert!(
                matches!(err, StateError::Truncated { .. }),
                "prefix of {n} bytes: {err:?}"
            );
        }
        // and a count promising more entries than there are
        let mut bytes = State::new().encode();
        bytes[5] = 200;
        assert_eq!(
            State::decode(&bytes),
            Err(StateError::Truncated {
                field: "key length",
                at: 9,
                needed: 4,
                left: 0
            })
        );
    }

    #[test]
    fn refuses_bad_headers_and_trailing_bytes() {
        let mut bytes = sample().encode();
        bytes[4] = 2;
        assert_eq!(State::decode(&bytes), Err(StateError::UnknownVersion(2)));
        bytes[4] = 0;
        assert_eq!(State::decode(&bytes), Err(StateError::UnknownVersion(0)));
        bytes[4] = STATE_VERSION;
        bytes[0] = b'X';
        assert_eq!(State::decode(&bytes), Err(StateError::BadMagic(*b"XRST")));
        bytes[0] = b'H';
        for garbage in [&[0u8][..], b"xyz", &sample().encode()] {
            let mut b = bytes.clone();
            b.extend_from_slice(garbage);
            assert_eq!(
                State::decode(&b),
                Err(StateError::TrailingBytes(garbage.len()))
            );
        }
    }

    /// One entry's bytes: key length, key, value length, value.
    fn entry(key: &[u8], value: &[u8]) -> Vec<u8> {
        let mut out = (key.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(key);
        out.extend_from_slice(&(value.len() as u32).to_le_bytes());
        out.extend_from_slice(value);
        out
    }

    fn with_entries(entries: &[Vec<u8>]) -> Vec<u8> {
        let mut out = b"HRST\x01".to_vec();
        out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        for e in entries {
            out.extend_from_slice(e);
        }
        out
    }

    #[test]
    fn refuses_bad_keys_and_values() {
        let ok = with_entries(&[entry(b"a", &[0]), entry(b"b", &[1, 1])]);
        let s = State::decode(&ok).unwrap();
        assert_eq!(s.get("a"), Some(&Value::Null));
        assert_eq!(s.get_bool("b"), Some(true));

        let bad_key = with_entries(&[entry(b"a", &[0]), entry(&[0xff], &[0])]);
        assert_eq!(
            State::decode(&bad_key),
            Err(StateError::BadKey { index: 1 })
        );
        let bad_value = with_entries(&[entry(b"a", &[2, 1])]);
        assert_eq!(
            State::decode(&bad_value),
            Err(StateError::BadValue {
                key: "a".into(),
                error: ValueError::BadLength {
                    tag: 2,
                    len: 1,
                    expected: 8
                }
            })
        );
        let empty_value = with_entries(&[entry(b"a", &[])]);
        assert!(matches!(
            State::decode(&empty_value),
            Err(StateError::BadValue {
                error: ValueError::Empty,
                ..
            })
        ));
        let duplicate = with_entries(&[entry(b"a", &[0]), entry(b"a", &[0])]);
        assert_eq!(
            State::decode(&duplicate),
            Err(StateError::UnsortedKeys {
                index: 1,
                key: "a".into()
            })
        );
        let unsorted = with_entries(&[entry(b"b", &[0]), entry(b"a", &[0])]);
        assert!(matches!(
            State::decode(&unsorted),
            Err(StateError::UnsortedKeys { index: 1, .. })
        ));
        // the error says which value and why
        let msg = State::decode(&bad_value).unwrap_err().to_string();
        assert!(msg.contains("\"a\"") && msg.contains("8"), "{msg}");
    }

    #[test]
    fn map_operations() {
        let mut s = sample();
        assert_eq!(s.len(), 9);
        assert!(!s.is_empty());
        assert_eq!(s.get_i64("int"), Some(-5));
        assert_eq!(s.get_f64("int"), Some(-5.0));
        assert_eq!(s.get_f64("float"), Some(2.5));
        assert_eq!(s.get_str("str"), Some("héllo"));
        assert_eq!(s.get_bytes("bytes"), Some(&[0u8, 255, 10][..]));
        assert_eq!(s.get_bytes("str"), Some("héllo".as_bytes()));
        assert_eq!(s.get_bool("bool"), Some(true));
        assert_eq!(s.get_bool("int"), None);
        assert_eq!(s.get_i64("missing"), None);
        assert!(s.contains_key(""));
        assert_eq!(s.remove("int"), Some(Value::Int(-5)));
        assert_eq!(s.remove("int"), None);
        let keys: Vec<&str> = s.iter().map(|(k, _)| k).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted);
        assert_eq!((&s).into_iter().count(), s.len());
        s.clear();
        assert!(s.is_empty());
        assert_eq!(s, State::new());
    }

    #[test]
    fn prefixes() {
        let mut s: State = [
            ("a", 0),
            ("p.", 1),
            ("p.x", 2),
            ("p.y", 3),
            ("q", 4),
            ("p", 5),
        ]
        .into_iter()
        .collect();
        let got: Vec<i64> = s
            .iter_prefix("p.")
            .map(|(_, v)| v.as_i64().unwrap())
            .collect();
        assert_eq!(got, [1, 2, 3]);
        assert_eq!(s.iter_prefix("").count(), 6);
        assert_eq!(s.iter_prefix("zz").count(), 0);
        assert_eq!(s.remove_prefix("p."), 3);
        let keys: Vec<&str> = s.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["a", "p", "q"]);
    }
}
