//! Control tuples: `heron.proto.system.HeronControlTupleSet { repeated AckTuple acks = 1;
//! repeated AckTuple fails = 2; repeated AckTuple emits = 3 }` with `AckTuple { repeated
//! RootId roots = 1; required sfixed64 ackedtuple = 2 }`. A bolt's acks and fails, and what a
//! stream manager sends on to a spout's stream manager, are encoded as they come into one
//! buffer ([`ControlTuples`]), so an ack costs a few bytes written and no allocation; a
//! received set is read in place in one walk ([`read_acks`]).

use std::collections::hash_map::{Entry, HashMap};

use bytes::{BufMut, BytesMut};

use crate::keys::KeyBuildHasher;

use super::data::{decode_root, put_roots, read_root, roots_len};
use super::fields::{fields, key, put_varint, read_varint, varint_len, wrong, Field, FIXED64, LEN};
use super::set::put_control_set_frame;
use super::set2::{put_control_set2, put_stream_message};
use super::TupleError;

/// The three lists of a `HeronControlTupleSet`, by field number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlKind {
    /// `acks` (field 1).
    Ack = 1,
    /// `fails` (field 2).
    Fail = 2,
    /// `emits` (field 3): an anchored emit, XORed into its roots' trees.
    Emit = 3,
}

/// Encoded `HeronControlTupleSet` fields, in the order they were added.
///
/// ```
/// use heron_proto::prost::Message;
/// use heron_proto::system::HeronControlTupleSet;
/// use heron_proto::tuple::{ControlKind, ControlTuples};
/// let mut c = ControlTuples::default();
/// c.push(ControlKind::Ack, &[(1, 10)], 77);
/// let set = HeronControlTupleSet::decode(c.as_bytes()).unwrap();
/// assert_eq!((set.acks[0].ackedtuple, set.acks[0].roots[0].key), (77, 10));
/// ```
#[derive(Debug, Default)]
pub struct ControlTuples {
    buf: BytesMut,
    count: u32,
    /// Where each single-root ack or emit held is, by root (for
    /// [`push_merged`](Self::push_merged)). [`KeyHasher`](crate::keys::KeyHasher) hashes the
    /// pair as its last part, the random root key.
    merged: HashMap<(i32, i64), Held, KeyBuildHasher>,
    /// The root merged into last, and its entry: a bolt's emits and ack for one input come
    /// one after another, so most merges find their entry here without a lookup.
    last: Option<((i32, i64), Held)>,
}

/// Where a merged entry is in the buffer: its first byte (the list's field key, rewritten
/// when an emit entry becomes an ack) and its `ackedtuple`.
#[derive(Debug, Clone, Copy)]
struct Held {
    start: u32,
    acked: u32,
}

impl ControlTuples {
    /// Appends `AckTuple { roots, ackedtuple: acked }` to the `kind` list.
    #[inline]
    pub fn push(&mut self, kind: ControlKind, roots: &[(i32, i64)], acked: i64) {
        put_ack(&mut self.buf, kind, roots, acked);
        self.count += 1;
    }

    /// [`push`](Self::push), except that an ack or emit with one root already held (as an
    /// ack or an emit) is merged into it: its `ackedtuple` becomes the XOR of both, and it is
    /// an ack once an ack is merged in. A receiver XORs every `ackedtuple` into its roots'
    /// trees, so one entry with `a ^ b` does what two with `a` and `b` do, in fewer bytes and
    /// less work on the way. A bolt's emits anchored to an input and its ack of that input
    /// become one ack: the tree gets the children's keys and loses the input's at once.
    ///
    /// Why an emit may ride in an ack: a receiver applies a set's emits before its acks, so
    /// that no ack can complete a tree before the emits that extend it. An emit merged into
    /// an ack entry is applied with that entry, which was added before the emit was; the ack
    /// of the emit's anchor is added after the emit (a tuple is anchored to before it is
    /// acked), so it is this entry or a later one, and the anchor's key keeps the tree open
    /// until the emit is in. Fails, and tuples with several roots, are appended as they come.
    ///
    /// ```
    /// use heron_proto::prost::Message;
    /// use heron_proto::system::HeronControlTupleSet;
    /// use heron_proto::tuple::{ControlKind, ControlTuples};
    /// let mut c = ControlTuples::default();
    /// c.push_merged(ControlKind::Emit, &[(1, 10)], 0b1000);
    /// c.push_merged(ControlKind::Ack, &[(1, 10)], 0b0110);
    /// c.push_merged(ControlKind::Ack, &[(1, 11)], 1);
    /// c.push_merged(ControlKind::Ack, &[(1, 10)], 0b0011);
    /// assert_eq!(c.count(), 2);
    /// let set = HeronControlTupleSet::decode(c.as_bytes()).unwrap();
    /// assert!(set.emits.is_empty());
    /// assert_eq!(set.acks[0].ackedtuple, 0b1101);
    /// assert_eq!(set.acks[1].roots[0].key, 11);
    /// ```
    pub fn push_merged(&mut self, kind: ControlKind, roots: &[(i32, i64)], acked: i64) {
        let &[root] = roots else {
            return self.push(kind, roots, acked);
        };
        if kind == ControlKind::Fail {
            return self.push(kind, roots, acked);
        }
        let at = match self.last {
            Some((r, at)) if r == root => at,
            _ => match self.merged.entry(root) {
                Entry::Occupied(e) => *e.get(),
                Entry::Vacant(slot) => {
                    // a control set is at most a packet, far below 4 GiB
                    let start = self.buf.len() as u32;
                    put_ack(&mut self.buf, kind, roots, acked);
                    let at = *slot.insert(Held {
                        start,
                        acked: (self.buf.len() - 8) as u32,
                    });
                    self.count += 1;
                    self.last = Some((root, at));
                    return;
                }
            },
        };
        let (start, acked_at) = (at.start as usize, at.acked as usize);
        let field = &mut self.buf[acked_at..acked_at + 8];
        let was = i64::from_le_bytes(field.try_into().expect("8 bytes"));
        field.copy_from_slice(&(was ^ acked).to_le_bytes());
        if kind == ControlKind::Ack {
            self.buf[start] = key(ControlKind::Ack as u8, LEN);
        }
        self.last = Some((root, at));
    }

    /// The number of control tuples held.
    #[inline]
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The bytes held.
    #[inline]
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// `true` when nothing is held.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The encoded `HeronControlTupleSet`.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Drops what is held.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.count = 0;
        self.merged.clear();
        self.last = None;
    }

    /// Appends what is held as a whole `HeronTupleSet` packet from `src_task` (an instance to
    /// its stream manager) and empties the buffer. Nothing when it is empty.
    pub fn take_frame(&mut self, frames: &mut BytesMut, src_task: i32) {
        if self.is_empty() {
            return;
        }
        put_control_set_frame(frames, &self.buf, src_task);
        self.clear();
    }

    /// Writes `HeronTupleSet2 { control: <held>, src_task_id }` into `out` and empties the
    /// buffer.
    pub fn take_tuple_set(&mut self, src_task: i32, out: &mut BytesMut) {
        put_control_set2(out, &self.buf, src_task);
        self.clear();
    }

    /// Writes `TupleStreamMessage { task_id: dest_task, set: HeronTupleSet2 { control: <held>
    /// } }` into `out` and empties the buffer.
    pub fn take_stream_message(&mut self, dest_task: i32, src_task: i32, out: &mut BytesMut) {
        let count = self.count;
        let mut set = BytesMut::with_capacity(self.buf.len() + 16);
        self.take_tuple_set(src_task, &mut set);
        put_stream_message(out, dest_task, &set, src_task, count);
    }
}

/// Appends `AckTuple { roots, ackedtuple: acked }` to the `kind` list in `b`; the
/// `ackedtuple` is its last 8 bytes.
#[inline]
fn put_ack(b: &mut BytesMut, kind: ControlKind, roots: &[(i32, i64)], acked: i64) {
    let len = roots_len(roots) + 1 + 8;
    b.reserve(1 + varint_len(len as u64) + len);
    b.put_u8(key(kind as u8, LEN));
    put_varint(b, len as u64);
    put_roots(b, 1, roots); // AckTuple.roots
    b.put_u8(key(2, FIXED64)); // AckTuple.ackedtuple
    b.put_i64_le(acked);
}

/// One checked `AckTuple` of an encoded control set, as [`read_acks`] finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckEntry {
    /// Which list it is on.
    pub kind: ControlKind,
    /// `ackedtuple`.
    pub acked: i64,
    /// Where the `AckTuple` is in the control set.
    start: u32,
    end: u32,
    /// How many roots it has, and the first one.
    roots: u32,
    first_root: (i32, i64),
}

impl AckEntry {
    /// Calls `f(taskid, key)` for every root of the entry; `control` is the set it was read
    /// from.
    #[inline]
    pub fn for_each_root(&self, control: &[u8], mut f: impl FnMut(i32, i64)) {
        match self.roots {
            0 => {}
            1 => f(self.first_root.0, self.first_root.1),
            _ => for_each_ack_root(&control[self.start as usize..self.end as usize], f),
        }
    }
}

/// Reads and checks every `AckTuple` of an encoded `HeronControlTupleSet` into `out`, in wire
/// order, in one walk (each root is read once; the roots of an entry with several are read
/// again when used). Malformed input is an error and `out` is then incomplete.
#[inline]
pub fn read_acks(control: &[u8], out: &mut Vec<AckEntry>) -> Result<(), TupleError> {
    let mut rest = fields(control);
    loop {
        // entries as encoders write them inline, anything else field by field
        let (n, v) = match rest.next_len_field() {
            Some((n, v)) => (n, Field::Len(v)),
            None => match rest.next() {
                Some(field) => field?,
                None => break,
            },
        };
        let kind = match n {
            1 => ControlKind::Ack,
            2 => ControlKind::Fail,
            3 => ControlKind::Emit,
            _ => continue,
        };
        let Field::Len(ack) = v else {
            return Err(wrong("HeronControlTupleSet", n, &v));
        };
        let end = control.len() - rest.remaining();
        let mut entry = AckEntry {
            kind,
            acked: 0,
            // a control set is at most a packet, far below 4 GiB
            start: (end - ack.len()) as u32,
            end: end as u32,
            roots: 0,
            first_root: (0, 0),
        };
        if let Some((root, acked)) = one_root_ack(ack) {
            entry.roots = 1;
            entry.first_root = root;
            entry.acked = acked;
            out.push(entry);
            continue;
        }
        let mut acked = None;
        for af in fields(ack) {
            match af? {
                (2, Field::Fixed64(v)) => acked = Some(v as i64),
                (1, Field::Len(root)) => {
                    let r = decode_root(root)?;
                    if entry.roots == 0 {
                        entry.first_root = r;
                    }
                    entry.roots += 1;
                }
                (n @ 1..=2, v) => return Err(wrong("AckTuple", n, &v)),
                _ => {}
            }
        }
        entry.acked = acked.ok_or(TupleError::Missing("AckTuple.ackedtuple"))?;
        out.push(entry);
    }
    Ok(())
}

/// The root and `ackedtuple` of an `AckTuple` laid out as encoders write one with a single
/// root (`roots` {`taskid`, `key`}, then `ackedtuple`, nothing else); `None` for any other
/// layout, which [`read_acks`] then reads field by field.
#[inline]
fn one_root_ack(ack: &[u8]) -> Option<((i32, i64), i64)> {
    let &[0x0a, n, 0x08, ..] = ack else {
        return None;
    };
    let n = usize::from(n);
    // a one-byte root length, a task varint, the key's tag and 8 bytes; then the ackedtuple
    if !(11..0x80).contains(&n) || ack.len() != 2 + n + 9 {
        return None;
    }
    let (root, tail) = ack[2..].split_at(n);
    let mut task = &root[1..n - 9];
    let t = read_varint(&mut task).ok()?;
    if !task.is_empty() || root[n - 9] != 0x11 || tail[0] != 0x11 {
        return None;
    }
    let key = i64::from_le_bytes(root[n - 8..].try_into().ok()?);
    let acked = i64::from_le_bytes(tail[1..].try_into().ok()?);
    // int32: the low 32 bits of the varint, as prost reads it
    Some(((t as i32, key), acked))
}

/// Calls `f(taskid, key)` for every root of an `AckTuple` checked by [`read_acks`].
#[inline]
pub fn for_each_ack_root(ack: &[u8], mut f: impl FnMut(i32, i64)) {
    for field in fields(ack).map_while(Result::ok) {
        if let (1, Field::Len(root)) = field {
            let (task, key) = read_root(root);
            f(task, key);
        }
    }
}

#[cfg(test)]
mod tests;
