//! heron-sources: replayable sources for effectively-once topologies.
//!
//! In `EFFECTIVELY_ONCE` mode a rollback replays every tuple emitted after the checkpoint
//! restored, so a spout must be able to read again from where it stood at that checkpoint.
//! A [`Source`] is such a reader: it reads records from named partitions (files, or the
//! partitions of a log such as Kafka's), reports its [`Offsets`], and [seeks](Source::seek)
//! back to saved ones. [`SourceSpout`] runs any source as a stateful spout: it keeps the
//! offsets in its checkpointed [`State`] and seeks to them on restore.
//! [`FileSource`] reads text files, one record a line, split across the spout's tasks.
//!
//! ```
//! use heron_api::{Config, ReliabilityMode, TopologyBuilder};
//! use heron_sources::{FileSource, SourceSpout};
//!
//! let files = vec!["/data/part-0.txt".to_string(), "/data/part-1.txt".to_string()];
//! let mut builder = TopologyBuilder::new();
//! // The source is built in `open`, when the task knows its index and parallelism.
//! builder.set_spout("lines", move || SourceSpout::files(files.clone()), 2);
//! let mut conf = Config::new();
//! conf.set_reliability_mode(ReliabilityMode::EffectivelyOnce);
//! let topology = builder.build("lines", conf).unwrap();
//! # drop(topology);
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;

use heron_api::State;

mod file;
mod spout;

pub use file::{FileSource, DEFAULT_BUFFER_CAPACITY};
pub use spout::{
    SourceSpout, SourceSpoutCounters, DEFAULT_MAX_PER_CALL, LINE_FIELD, OFFSETS_PREFIX,
};

/// A replayable reader of records from named partitions.
///
/// An offset is a position in one partition: where a record starts. Offsets only grow as
/// records are read, and [seeking](Source::seek) to offsets taken earlier reads the same
/// records again, in the same order.
///
/// ```
/// use heron_sources::{Offsets, Record, Source, SourceError};
///
/// /// The numbers 0..n as one partition; the offset is the next number.
/// struct Count { next: u64, n: u64 }
///
/// impl Source for Count {
///     fn partitions(&self) -> Vec<String> {
///         vec!["count".into()]
///     }
///     fn next(&mut self) -> Result<Option<Record>, SourceError> {
///         if self.next == self.n {
///             return Ok(None);
///         }
///         self.next += 1;
///         let value = (self.next - 1).to_string().into_bytes();
///         Ok(Some(Record { partition: 0, offset: self.next, value }))
///     }
///     fn seek(&mut self, offsets: &Offsets) -> Result<(), SourceError> {
///         self.next = offsets.get("count").unwrap_or(0).min(self.n);
///         Ok(())
///     }
///     fn offsets(&self) -> Offsets {
///         [("count", self.next)].into_iter().collect()
///     }
///     fn exhausted(&self) -> bool {
///         self.next == self.n
///     }
/// }
///
/// let mut c = Count { next: 0, n: 3 };
/// c.next().unwrap();
/// let saved = c.offsets();
/// assert_eq!(c.next().unwrap().unwrap().value, b"1");
/// c.seek(&saved).unwrap();
/// assert_eq!(c.next().unwrap().unwrap().value, b"1"); // replayed
/// ```
pub trait Source: Send {
    /// The partitions this task reads, named (e.g. `"file:/path/a.txt"` or `"topic-3"`).
    /// The names are the keys of [`Offsets`]; [`Record::partition`] indexes this list.
    fn partitions(&self) -> Vec<String>;

    /// The next record of any of this task's partitions, with its partition and the offset
    /// *after* it; `None` when nothing is available now.
    fn next(&mut self) -> Result<Option<Record>, SourceError>;

    /// Moves every partition to the given offsets (missing ones to the start). Offsets of
    /// partitions this task does not read are ignored.
    fn seek(&mut self, offsets: &Offsets) -> Result<(), SourceError>;

    /// The current offsets (where the next record of each partition starts).
    fn offsets(&self) -> Offsets;

    /// `true` once every partition is exhausted (finite sources; an unbounded one, such as
    /// a log that keeps growing, is never exhausted).
    fn exhausted(&self) -> bool;
}

impl<S: Source + ?Sized> Source for Box<S> {
    fn partitions(&self) -> Vec<String> {
        (**self).partitions()
    }
    fn next(&mut self) -> Result<Option<Record>, SourceError> {
        (**self).next()
    }
    fn seek(&mut self, offsets: &Offsets) -> Result<(), SourceError> {
        (**self).seek(offsets)
    }
    fn offsets(&self) -> Offsets {
        (**self).offsets()
    }
    fn exhausted(&self) -> bool {
        (**self).exhausted()
    }
}

/// One record read from a [`Source`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The partition, an index into [`Source::partitions`].
    pub partition: usize,
    /// The offset *after* this record: where the partition's next record starts (the
    /// partition's offset once this record is read).
    pub offset: u64,
    /// The record (for [`FileSource`], the line without its line ending).
    pub value: Vec<u8>,
}

/// A [`Source`]'s position: partition name → offset of the next record to read.
///
/// ```
/// use heron_api::State;
/// use heron_sources::Offsets;
///
/// let mut offsets = Offsets::new();
/// offsets.set("file:/data/a.txt", 120);
/// let mut state = State::new();
/// state.put("mine", 7);
/// offsets.to_state("offset.", &mut state);
/// assert_eq!(state.get_i64("offset.file:/data/a.txt"), Some(120));
/// assert_eq!(Offsets::from_state(&state, "offset.").unwrap(), offsets);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Offsets(pub BTreeMap<String, u64>);

impl Offsets {
    /// No offsets (every partition at its start).
    pub fn new() -> Offsets {
        Offsets::default()
    }

    /// The offset of `partition`.
    pub fn get(&self, partition: &str) -> Option<u64> {
        self.0.get(partition).copied()
    }

    /// Sets the offset of `partition`, returning the one it replaced.
    pub fn set(&mut self, partition: impl Into<String>, offset: u64) -> Option<u64> {
        self.0.insert(partition.into(), offset)
    }

    /// The offsets, by partition name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.0.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// The number of partitions with an offset.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// `true` when no partition has an offset.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Writes the offsets into `state`, each under `prefix` followed by the partition name,
    /// as a [`Value::Int`](heron_api::Value::Int) (the offset's 64 bits, so offsets above
    /// `i64::MAX` read back intact). Entries already under `prefix` are removed first;
    /// other entries are left alone.
    pub fn to_state(&self, prefix: &str, state: &mut State) {
        state.remove_prefix(prefix);
        for (partition, offset) in self.iter() {
            state.put(format!("{prefix}{partition}"), offset as i64);
        }
    }

    /// Reads the offsets [`to_state`](Self::to_state) wrote under `prefix` (none: empty).
    ///
    /// # Errors
    /// [`SourceError::BadState`] if an entry under `prefix` is not an integer.
    pub fn from_state(state: &State, prefix: &str) -> Result<Offsets, SourceError> {
        state
            .iter_prefix(prefix)
            .map(|(key, value)| match value.as_i64() {
                Some(offset) => Ok((key[prefix.len()..].to_owned(), offset as u64)),
                None => Err(SourceError::BadState {
                    key: key.to_owned(),
                    found: value.type_name(),
                }),
            })
            .collect::<Result<_, _>>()
            .map(Offsets)
    }
}

impl<K: Into<String>> FromIterator<(K, u64)> for Offsets {
    fn from_iter<I: IntoIterator<Item = (K, u64)>>(iter: I) -> Self {
        Offsets(iter.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}

/// Why a [`Source`] cannot be built, read or moved.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// Reading a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// An offset to seek to does not fit its partition.
    #[error("cannot seek partition {partition:?} to offset {offset}: {reason}")]
    BadOffset {
        /// The partition.
        partition: String,
        /// The offset asked for.
        offset: u64,
        /// Why it does not fit.
        reason: &'static str,
    },
    /// A saved offset in a [`State`] is not an integer.
    #[error("saved offset {key:?} is a {found}, not an integer")]
    BadState {
        /// The state key.
        key: String,
        /// The type found (see [`Value::type_name`](heron_api::Value::type_name)).
        found: &'static str,
    },
    /// A task index outside its parallelism.
    #[error("task index {index} is not below the parallelism {parallelism}")]
    BadTask {
        /// The task's index among its component's tasks.
        index: usize,
        /// The number of the component's tasks.
        parallelism: usize,
    },
    /// Any other failure of a source (for sources outside this crate).
    #[error(transparent)]
    Other(Box<dyn std::error::Error + Send + Sync>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_round_trip_through_state() {
        let offsets: Offsets = [("a", 0), ("b", 17), ("huge", u64::MAX)]
            .into_iter()
            .collect();
        let mut state = State::new();
        state.put("other", "kept");
        state.put("o.stale", 5);
        offsets.to_state("o.", &mut state);
        assert_eq!(state.get_i64("o.stale"), None, "old entries go");
        assert_eq!(state.get_str("other"), Some("kept"));
        let back = Offsets::from_state(&State::decode(&state.encode()).unwrap(), "o.").unwrap();
        assert_eq!(back, offsets);
        assert_eq!(back.get("huge"), Some(u64::MAX));
        assert_eq!(
            Offsets::from_state(&State::new(), "o.").unwrap(),
            Offsets::new()
        );
    }

    #[test]
    fn bad_state_is_an_error() {
        let mut state = State::new();
        state.put("o.a", "12");
        let err = Offsets::from_state(&state, "o.").unwrap_err();
        assert!(matches!(err, SourceError::BadState { ref key, found: "string" } if key == "o.a"));
        assert!(err.to_string().contains("o.a"), "{err}");
    }
}
