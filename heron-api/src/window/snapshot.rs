//! The bytes of a windowed bolt's pending windows in a checkpoint (`EFFECTIVELY_ONCE`), and
//! the errors of restoring them.
//!
//! A windowed bolt's [`State`](crate::State) keeps its window machinery under the reserved
//! key [`WINDOW_STATE_KEY`] as [`Value::Bytes`], in this layout
//! (integers little endian):
//!
//! | bytes | field |
//! |---|---|
//! | 4 | magic `HRWN` |
//! | 1 | version, `1` |
//! | 1 | machine: `0` count windows, `1` aligned (tumbling or sliding by time), `2` sessions |
//! | … | the machine's parameters, its clock or watermark, and its held tuples |
//! | … | the tuples that left since the last window (the next window's expired tuples) |
//! | 8 | late tuples dropped so far |
//!
//! A tuple is its source component, stream and task, its field names and its values (each
//! as [`Value::encode`] writes it); strings and byte runs are a `u32`
//! length and the bytes. Restoring a checkpoint written with other window parameters is
//! refused with [`SnapshotError::Mismatch`].

use crate::{Fields, Tuple, Value, ValueError};

/// The state key a windowed bolt's pending windows are kept under (reserved: a
/// [`WindowedBolt`](super::WindowedBolt)'s own state may not use it).
pub const WINDOW_STATE_KEY: &str = "__heron.window";

/// The magic bytes of an encoded window snapshot.
pub(crate) const MAGIC: [u8; 4] = *b"HRWN";
/// The version [`Writer`] users write.
pub(crate) const VERSION: u8 = 1;

/// Why window snapshot bytes cannot be restored.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum SnapshotError {
    /// The bytes end inside a field.
    #[error("window snapshot truncated: {field} at byte {at}")]
    Truncated {
        /// The field being read.
        field: &'static str,
        /// Where it starts.
        at: usize,
    },
    /// Not a window snapshot, or one of a version this build does not read.
    #[error("not a version {VERSION} window snapshot (magic/version {0:02x?})")]
    NotASnapshot([u8; 5]),
    /// The snapshot was taken with other window parameters than the bolt has now.
    #[error("the checkpoint's windows are {found}, the bolt's are {expected}: restart with topology.stateful.start.clean")]
    Mismatch {
        /// What the bolt is configured with.
        expected: String,
        /// What the checkpoint holds.
        found: String,
    },
    /// A string is not UTF-8.
    #[error("window snapshot: a string at byte {0} is not UTF-8")]
    BadUtf8(usize),
    /// A tuple value does not decode.
    #[error("window snapshot: a tuple value does not decode: {0}")]
    Value(#[from] ValueError),
    /// Bytes follow the end.
    #[error("window snapshot: {0} bytes after the end")]
    Trailing(usize),
    /// The parts do not fit together (no window machine could have written them).
    #[error("window snapshot: {0}")]
    Inconsistent(&'static str),
}

/// Appends fields to a byte buffer.
#[derive(Debug, Default)]
pub(crate) struct Writer {
    pub(crate) buf: Vec<u8>,
}

impl Writer {
    pub(crate) fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    pub(crate) fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn i64(&mut self, v: i64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn bool(&mut self, v: bool) {
        self.u8(u8::from(v));
    }
    pub(crate) fn opt_i64(&mut self, v: Option<i64>) {
        self.bool(v.is_some());
        self.i64(v.unwrap_or(0));
    }
    /// A count of items (collections never reach 2^32 entries in a checkpoint).
    pub(crate) fn len(&mut self, n: usize) {
        self.u32(u32::try_from(n).unwrap_or(u32::MAX));
    }
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.len(b.len());
        self.buf.extend_from_slice(b);
    }
    pub(crate) fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }
    /// A tuple: source component, stream, task, field names, values.
    pub(crate) fn tuple(&mut self, t: &Tuple) {
        self.str(t.source_component());
        self.str(t.source_stream());
        self.i64(i64::from(t.source_task()));
        self.len(t.fields().len());
        for f in t.fields().iter() {
            self.str(f);
        }
        self.len(t.values().len());
        for v in t.values() {
            self.len(v.encoded_len());
            v.encode(&mut self.buf);
        }
    }
    pub(crate) fn tuples<'a>(&mut self, ts: impl ExactSizeIterator<Item = &'a Tuple>) {
        self.len(ts.len());
        for t in ts {
            self.tuple(t);
        }
    }
}

/// Reads fields written by [`Writer`].
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, at: 0 }
    }
    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], SnapshotError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or(SnapshotError::Truncated { field, at: self.at })?;
        let s = &self.buf[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], SnapshotError> {
        let s = self.take(N, field)?;
        Ok(s.try_into().expect("took N bytes"))
    }
    pub(crate) fn u8(&mut self, field: &'static str) -> Result<u8, SnapshotError> {
        Ok(self.array::<1>(field)?[0])
    }
    pub(crate) fn u64(&mut self, field: &'static str) -> Result<u64, SnapshotError> {
        Ok(u64::from_le_bytes(self.array(field)?))
    }
    pub(crate) fn i64(&mut self, field: &'static str) -> Result<i64, SnapshotError> {
        Ok(i64::from_le_bytes(self.array(field)?))
    }
    /// An arrival counter: at most 2^62 (no machine ever counts that far, and the count goes
    /// on from there without overflowing).
    pub(crate) fn arrivals(&mut self, field: &'static str) -> Result<u64, SnapshotError> {
        let n = self.u64(field)?;
        if n > 1 << 62 {
            return Err(SnapshotError::Inconsistent(
                "an arrival counter out of range",
            ));
        }
        Ok(n)
    }
    pub(crate) fn bool(&mut self, field: &'static str) -> Result<bool, SnapshotError> {
        Ok(self.u8(field)? != 0)
    }
    pub(crate) fn opt_i64(&mut self, field: &'static str) -> Result<Option<i64>, SnapshotError> {
        let some = self.bool(field)?;
        let v = self.i64(field)?;
        Ok(some.then_some(v))
    }
    /// A count of items, each at least `min_item` bytes long (so a corrupt count cannot ask
    /// for more memory than the input could fill).
    pub(crate) fn len(
        &mut self,
        field: &'static str,
        min_item: usize,
    ) -> Result<usize, SnapshotError> {
        let at = self.at;
        let n = u32::from_le_bytes(self.array(field)?) as usize;
        if n.saturating_mul(min_item.max(1)) > self.buf.len() - self.at {
            return Err(SnapshotError::Truncated { field, at });
        }
        Ok(n)
    }
    pub(crate) fn bytes(&mut self, field: &'static str) -> Result<&'a [u8], SnapshotError> {
        let n = self.len(field, 1)?;
        self.take(n, field)
    }
    pub(crate) fn str(&mut self, field: &'static str) -> Result<&'a str, SnapshotError> {
        let at = self.at;
        std::str::from_utf8(self.bytes(field)?).map_err(|_| SnapshotError::BadUtf8(at))
    }
    /// A tuple written by [`Writer::tuple`] (no acking information: it is restored in
    /// `EFFECTIVELY_ONCE`, where nothing is acked).
    pub(crate) fn tuple(&mut self) -> Result<Tuple, SnapshotError> {
        let component = self.str("tuple component")?;
        let stream = self.str("tuple stream")?;
        let task = self.i64("tuple task")?;
        let nf = self.len("tuple fields", 4)?;
        let mut fields = Vec::with_capacity(nf);
        for _ in 0..nf {
            fields.push(self.str("tuple field")?);
        }
        let nv = self.len("tuple values", 5)?;
        let mut values = Vec::with_capacity(nv);
        for _ in 0..nv {
            values.push(Value::decode(self.bytes("tuple value")?)?);
        }
        Ok(Tuple::new(
            component,
            stream,
            i32::try_from(task).unwrap_or(i32::MAX),
            Fields::new(fields),
            values,
        ))
    }
    pub(crate) fn tuples(&mut self) -> Result<Vec<Tuple>, SnapshotError> {
        let n = self.len("tuple count", 8)?;
        (0..n).map(|_| self.tuple()).collect()
    }
    /// Checks the header: magic and version.
    pub(crate) fn header(&mut self) -> Result<(), SnapshotError> {
        let head: [u8; 5] = self.array("header")?;
        if head[..4] != MAGIC || head[4] != VERSION {
            return Err(SnapshotError::NotASnapshot(head));
        }
        Ok(())
    }
    /// Fails unless every byte was read.
    pub(crate) fn finish(self) -> Result<(), SnapshotError> {
        match self.buf.len() - self.at {
            0 => Ok(()),
            n => Err(SnapshotError::Trailing(n)),
        }
    }
}

/// A window parameter as the checkpoint holds it, compared with the bolt's.
pub(crate) fn expect_eq<T: PartialEq + std::fmt::Debug>(
    what: &str,
    expected: T,
    found: T,
) -> Result<(), SnapshotError> {
    if expected == found {
        Ok(())
    } else {
        Err(SnapshotError::Mismatch {
            expected: format!("{what} {expected:?}"),
            found: format!("{what} {found:?}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values;

    #[test]
    fn tuples_round_trip_with_their_source_and_every_value_type() {
        let t = Tuple::new(
            "spout",
            "s1",
            7,
            Fields::new(["a", "b", "c", "d", "e", "f"]),
            vec![
                Value::Null,
                Value::Bool(true),
                Value::Int(-3),
                Value::Float(1.5),
                Value::from("héllo"),
                Value::Bytes(vec![0, 1, 255]),
            ],
        );
        let mut w = Writer::default();
        w.tuples([&t, &Tuple::new("x", "y", 1, Fields::empty(), values![])].into_iter());
        let mut r = Reader::new(&w.buf);
        let back = r.tuples().unwrap();
        r.finish().unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(
            (
                back[0].source_component(),
                back[0].source_stream(),
                back[0].source_task()
            ),
            ("spout", "s1", 7)
        );
        assert_eq!(back[0].fields(), t.fields());
        assert_eq!(back[0].values(), t.values());
        assert!(back[1].values().is_empty());
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let t = Tuple::new("c", "s", 2, Fields::new(["w"]), values!["word", 3]);
        let mut w = Writer::default();
        w.tuples([&t, &t].into_iter());
        for cut in 0..w.buf.len() {
            let mut r = Reader::new(&w.buf[..cut]);
            assert!(r.tuples().is_err(), "cut at {cut} read as whole");
        }
    }

    #[test]
    fn a_huge_count_is_refused_before_allocating() {
        let mut w = Writer::default();
        w.u32(u32::MAX);
        assert!(matches!(
            Reader::new(&w.buf).tuples(),
            Err(SnapshotError::Truncated { .. })
        ));
    }
}
