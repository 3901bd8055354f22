//! One data tuple, `heron.proto.system.HeronDataTuple { required sfixed64 key = 1; repeated
//! RootId roots = 2; repeated bytes values = 3; repeated int32 dest_task_ids = 4 }` with
//! `RootId { required int32 taskid = 1; required sfixed64 key = 2 }`: written straight into a
//! set's buffer by an emit, and read in place by the stream manager (which looks at a few
//! fields and forwards the bytes unchanged) and by the instance (which decodes the values).

use bytes::{BufMut, BytesMut};

use super::fields::{
    fields, int32, key, len_delimited, put_varint, read_varint, skip, take, varint_len, wrong,
    Field,
};
use super::fields::{FIXED64, LEN, VARINT};
use super::TupleError;

const M: &str = "HeronDataTuple";

/// A tuple value that knows its own encoding: what [`put_data_tuple`] writes as one entry of
/// `values`. The user API implements it for its values; `&[u8]` is a value already encoded.
pub trait EncodeValue {
    /// The number of bytes [`EncodeValue::encode_to`] writes.
    fn encoded_len(&self) -> usize;
    /// Writes the encoding: exactly [`EncodeValue::encoded_len`] bytes.
    fn encode_to<B: BufMut>(&self, buf: &mut B);
    /// Writes the encoding into `out`, which is exactly [`EncodeValue::encoded_len`] bytes
    /// long. The tuple encoder writes through this; an implementation may copy a short
    /// payload without calling `memcpy` ([`crate::small_copy`]).
    #[inline]
    fn encode_exact(&self, out: &mut [u8]) {
        let mut out = out;
        self.encode_to(&mut out);
    }
}

impl EncodeValue for &[u8] {
    fn encoded_len(&self) -> usize {
        self.len()
    }

    fn encode_to<B: BufMut>(&self, buf: &mut B) {
        buf.put_slice(self);
    }
}

fn root_len(taskid: i32) -> usize {
    1 + varint_len(int32(taskid)) + 1 + 8
}

/// The encoded length of the `RootId`s `roots` as entries of a repeated field (one-byte key).
#[inline]
pub(crate) fn roots_len(roots: &[(i32, i64)]) -> usize {
    roots
        .iter()
        .map(|&(taskid, _)| {
            let r = root_len(taskid);
            1 + varint_len(r as u64) + r
        })
        .sum()
}

/// Appends `roots` as entries of repeated `RootId` field `field_no`.
#[inline(always)]
pub(crate) fn put_roots(buf: &mut impl BufMut, field_no: u8, roots: &[(i32, i64)]) {
    for &(taskid, k) in roots {
        buf.put_u8(key(field_no, LEN));
        put_varint(buf, root_len(taskid) as u64);
        buf.put_u8(key(1, VARINT));
        put_varint(buf, int32(taskid));
        buf.put_u8(key(2, FIXED64));
        buf.put_i64_le(k);
    }
}

/// Appends one `HeronDataTuple` (key 0) as field 2 (`tuples`) of a `HeronDataTupleSet` and
/// returns the number of bytes written. No allocation beyond growing `buf`.
///
/// ```
/// use heron_proto::prost::Message;
/// use heron_proto::system::HeronDataTuple;
/// use heron_proto::tuple::put_data_tuple;
/// let mut buf = bytes::BytesMut::new();
/// let value: &[u8] = b"\x04word";
/// put_data_tuple(&mut buf, &[(1, 42)], &[value], &[]);
/// // field 2 of the set, its length, then the tuple
/// let tuple = HeronDataTuple::decode(&buf[2..]).unwrap();
/// assert_eq!(tuple.roots[0].key, 42);
/// assert_eq!(&tuple.values[0][..], value);
/// ```
#[inline]
pub fn put_data_tuple<V: EncodeValue>(
    buf: &mut BytesMut,
    roots: &[(i32, i64)],
    values: &[V],
    dest_task_ids: &[i32],
) -> usize {
    put_data_tuple_keyed(buf, 0, roots, values, dest_task_ids)
}

/// [`put_data_tuple`] with the tuple's `key` (field 1): for an emitter that keys the tuples
/// of an addressed set itself ([`super::KEYED_FIELD`]).
///
/// ```
/// use heron_proto::prost::Message;
/// use heron_proto::system::HeronDataTuple;
/// use heron_proto::tuple::put_data_tuple_keyed;
/// let mut buf = bytes::BytesMut::new();
/// let value: &[u8] = b"\x04word";
/// put_data_tuple_keyed(&mut buf, -5, &[(1, 42)], &[value], &[3]);
/// let tuple = HeronDataTuple::decode(&buf[2..]).unwrap();
/// assert_eq!((tuple.key, tuple.dest_task_ids[0]), (-5, 3));
/// ```
#[inline(always)]
pub fn put_data_tuple_keyed<V: EncodeValue>(
    buf: &mut BytesMut,
    tuple_key: i64,
    roots: &[(i32, i64)],
    values: &[V],
    dest_task_ids: &[i32],
) -> usize {
    write_data_tuple(buf, tuple_key, roots, values, dest_task_ids)
}

/// [`put_data_tuple`] of a tuple with no roots and no destination tasks (key 0): what an
/// unacked emit writes into a set addressed to one task. The same bytes, written by code
/// without the loops over roots and tasks.
///
/// ```
/// use heron_proto::tuple::{put_data_tuple, put_data_tuple_plain};
/// let (mut a, mut b) = (bytes::BytesMut::new(), bytes::BytesMut::new());
/// let values: [&[u8]; 2] = [b"\x04word", b"\x02\x07\0\0\0\0\0\0\0"];
/// assert_eq!(put_data_tuple_plain(&mut a, &values), put_data_tuple(&mut b, &[], &values, &[]));
/// assert_eq!(a, b);
/// ```
#[inline]
pub fn put_data_tuple_plain<V: EncodeValue>(buf: &mut BytesMut, values: &[V]) -> usize {
    write_data_tuple(buf, 0, &[], values, &[])
}

/// The writer of [`put_data_tuple_keyed`] and [`put_data_tuple_plain`], inlined into each so
/// that the latter's empty roots and tasks compile away.
#[inline(always)]
fn write_data_tuple<V: EncodeValue>(
    buf: &mut BytesMut,
    tuple_key: i64,
    roots: &[(i32, i64)],
    values: &[V],
    dest_task_ids: &[i32],
) -> usize {
    let mut len = 1 + 8 + roots_len(roots); // key, roots
    for v in values {
        let n = v.encoded_len();
        len += 1 + varint_len(n as u64) + n;
    }
    for &t in dest_task_ids {
        len += 1 + varint_len(int32(t));
    }
    let total = 1 + varint_len(len as u64) + len;
    // Written through a slice of the grown buffer: its position stays in a register, where
    // `BytesMut`'s own length would be stored and reloaded around every byte.
    let start = buf.len();
    grow_zeroed(buf, total);
    let mut out = &mut buf[start..];
    out.put_u8(key(2, LEN));
    put_varint(&mut out, len as u64);
    out.put_u8(key(1, FIXED64));
    out.put_i64_le(tuple_key);
    put_roots(&mut out, 2, roots);
    for v in values {
        out.put_u8(key(3, LEN));
        let n = v.encoded_len();
        put_varint(&mut out, n as u64);
        let (value, rest) = std::mem::take(&mut out).split_at_mut(n);
        v.encode_exact(value);
        out = rest;
    }
    for &t in dest_task_ids {
        out.put_u8(key(4, VARINT));
        put_varint(&mut out, int32(t));
    }
    assert!(
        out.is_empty(),
        "a tuple value wrote other than its encoded_len"
    );
    total
}

/// Tuples up to this size are zeroed by a fixed-size store rather than by `memset`.
const SMALL_TUPLE: usize = 64;

/// Grows `buf` by `n` zero bytes, which the caller overwrites. `BytesMut::resize` calls
/// `memset` with a variable size, a call per tuple that cost about as much as writing the
/// tuple; a tuple of up to [`SMALL_TUPLE`] bytes is zeroed by a fixed-size fill instead,
/// which compiles to a few vector stores.
#[inline(always)]
fn grow_zeroed(buf: &mut BytesMut, n: usize) {
    if n > SMALL_TUPLE {
        buf.resize(buf.len() + n, 0);
        return;
    }
    buf.reserve(SMALL_TUPLE);
    let spare = &mut buf.spare_capacity_mut()[..SMALL_TUPLE];
    spare.fill(std::mem::MaybeUninit::new(0));
    // SAFETY: the `n <= SMALL_TUPLE` bytes past the length were just initialized (zeroed).
    unsafe { buf.set_len(buf.len() + n) };
}

/// Checks a `RootId` and reads its task id and key (missing fields read as 0) in one walk.
#[inline]
pub(crate) fn decode_root(root: &[u8]) -> Result<(i32, i64), TupleError> {
    match root_as_written(root) {
        Some(r) => Ok(r),
        None => decode_root_fields(root),
    }
}

/// A `RootId` as [`put_roots`] writes it: the task (field 1, varint), then the key (field
/// 2, 8 bytes), nothing else. Every tuple with acking carries one and every ack one or more,
/// so this is read on the bolts' and the stream managers' hot paths; `None` for any other
/// layout, which [`decode_root_fields`] reads (as it would read this one, the same).
#[inline]
fn root_as_written(root: &[u8]) -> Option<(i32, i64)> {
    let (&k, mut rest) = root.split_first()?;
    if k != key(1, VARINT) {
        return None;
    }
    // int32: the low 32 bits of the varint, as prost reads it
    let task = read_varint(&mut rest).ok()? as i32;
    match rest {
        [k, key_bytes @ ..] if *k == key(2, FIXED64) => {
            let key_bytes: [u8; 8] = key_bytes.try_into().ok()?;
            Some((task, i64::from_le_bytes(key_bytes)))
        }
        _ => None,
    }
}

/// [`decode_root`] field by field, in any order, unknown fields skipped.
fn decode_root_fields(root: &[u8]) -> Result<(i32, i64), TupleError> {
    let (mut task, mut k) = (0i32, 0i64);
    let mut f = fields(root);
    while !f.is_empty() {
        match f.read()? {
            // int32: the low 32 bits of the varint, as prost reads it
            (1, Field::Varint(v)) => task = v as i32,
            (2, Field::Fixed64(v)) => k = v as i64,
            (n @ 1..=2, v) => return Err(wrong("RootId", n, &v)),
            _ => {}
        }
    }
    Ok((task, k))
}

/// A checked `RootId`'s task id and key (missing fields read as 0).
#[inline]
pub fn read_root(root: &[u8]) -> (i32, i64) {
    decode_root(root).unwrap_or((0, 0))
}

/// Walks a serialized `HeronDataTuple`, checking it, handing each root to `root` and each
/// encoded value to `value`; returns its key. Destination task ids and unknown fields are
/// skipped. This is how the instance decodes what it executes.
///
/// ```
/// use heron_proto::tuple::walk_data_tuple;
/// // key 7, one value "\x02\x01"
/// let t = [0x09, 7, 0, 0, 0, 0, 0, 0, 0, 0x1a, 2, 2, 1];
/// let mut values = Vec::new();
/// let key = walk_data_tuple(&t, |_, _| {}, |v| Ok(values.push(v))).unwrap();
/// assert_eq!((key, values), (7, vec![&[2u8, 1][..]]));
/// ```
pub fn walk_data_tuple<'a>(
    tuple: &'a [u8],
    mut root: impl FnMut(i32, i64),
    mut value: impl FnMut(&'a [u8]) -> Result<(), TupleError>,
) -> Result<i64, TupleError> {
    // The keys the encoders write, matched as one byte each: this is the bolt's hot loop.
    const KEY: u64 = key(1, FIXED64) as u64;
    const ROOT: u64 = key(2, LEN) as u64;
    const VALUE: u64 = key(3, LEN) as u64;
    const DEST: u64 = key(4, VARINT) as u64;
    let mut buf = tuple;
    let mut tuple_key = 0;
    while !buf.is_empty() {
        match read_varint(&mut buf)? {
            VALUE => value(len_delimited(&mut buf)?)?,
            KEY => {
                let k = take(&mut buf, 8)?;
                tuple_key = i64::from_le_bytes(k.try_into().expect("8 bytes"));
            }
            ROOT => {
                let (task, k) = decode_root(len_delimited(&mut buf)?)?;
                root(task, k);
            }
            // a direct or custom grouping's destination, which the bolt does not need
            DEST => {
                read_varint(&mut buf)?;
            }
            k => skip_unknown(&mut buf, k, 3)?,
        }
    }
    Ok(tuple_key)
}

/// After a key the fast paths did not match: a known field (1 to `known`) with another valid
/// wire type is an error, any other field is skipped.
#[inline]
fn skip_unknown(buf: &mut &[u8], key: u64, known: u64) -> Result<(), TupleError> {
    let field = key >> 3;
    if (1..=known).contains(&field) && matches!(key & 7, 0 | 1 | 2 | 5) {
        return Err(TupleError::WireType {
            message: M,
            field: field as u32,
            wire_type: (key & 7) as u8,
        });
    }
    skip(buf, key)
}

/// Checks that `tuple` is a well-formed `HeronDataTuple`, so that what is forwarded parses.
#[inline]
pub fn check_tuple(tuple: &[u8]) -> Result<(), TupleError> {
    scan_tuple_into(tuple, &mut TupleScan::default())
}

/// Roots a [`TupleScan`] keeps inline; a tuple with more is walked again for them.
pub const INLINE_ROOTS: usize = 4;
/// Values a [`TupleScan`] keeps (as ranges); a tuple with more is walked again for them.
pub const INLINE_VALUES: usize = 8;
/// Destination task ids a [`TupleScan`] keeps inline; a tuple with more is walked again for
/// them.
pub const INLINE_DEST_TASKS: usize = 4;

/// What one walk over a tuple finds ([`scan_tuple`]): that it is well formed, where its key
/// is, its roots, where its values are and whether it has destination task ids. The stream manager's data path needs the check and
/// the values (fields grouping), in ATLEAST_ONCE also the key and the roots.
#[derive(Debug, Default, Clone)]
pub struct TupleScan {
    /// Where the 8 bytes of the `key` field are (its last occurrence), if it has one.
    pub key_offset: Option<usize>,
    /// How many roots the tuple has.
    pub roots: usize,
    /// How many `dest_task_ids` entries the tuple has.
    dest_tasks: usize,
    /// The first [`INLINE_DEST_TASKS`] of them.
    inline_dests: [i32; INLINE_DEST_TASKS],
    inline: [(i32, i64); INLINE_ROOTS],
    /// How many values the tuple has.
    values: usize,
    /// Where the first [`INLINE_VALUES`] values are in the tuple: (start, end).
    value_ranges: [(u32, u32); INLINE_VALUES],
}

/// Equal when they describe the same tuple (entries past the counts are leftovers).
impl PartialEq for TupleScan {
    fn eq(&self, other: &Self) -> bool {
        (self.key_offset, self.roots, self.dest_tasks, self.values)
            == (
                other.key_offset,
                other.roots,
                other.dest_tasks,
                other.values,
            )
            && self.inline[..self.roots.min(INLINE_ROOTS)]
                == other.inline[..other.roots.min(INLINE_ROOTS)]
            && self.value_ranges[..self.values.min(INLINE_VALUES)]
                == other.value_ranges[..other.values.min(INLINE_VALUES)]
            && self.inline_dests[..self.dest_tasks.min(INLINE_DEST_TASKS)]
                == other.inline_dests[..other.dest_tasks.min(INLINE_DEST_TASKS)]
    }
}

impl Eq for TupleScan {}

impl TupleScan {
    /// `true` when the scanned tuple has at least one `dest_task_ids` entry (packed or not):
    /// a DIRECT / CUSTOM choice, or tasks pinned for shuffle-like consumers. Read them with
    /// [`TupleScan::for_each_dest_task`].
    #[inline]
    pub fn has_dest_tasks(&self) -> bool {
        self.dest_tasks > 0
    }

    /// Calls `f` for every `dest_task_ids` entry of the scanned `tuple`, in order (from the
    /// scan when it kept them all, as a stream manager routing a direct emit needs).
    #[inline]
    pub fn for_each_dest_task(&self, tuple: &[u8], mut f: impl FnMut(i32)) {
        if self.dest_tasks <= INLINE_DEST_TASKS {
            for &task in &self.inline_dests[..self.dest_tasks] {
                f(task);
            }
        } else {
            for_each_dest_task(tuple, f);
        }
    }

    /// Calls `f` with the serialized values of the scanned `tuple`, in schema order.
    #[inline]
    pub fn for_each_value<'t>(&self, tuple: &'t [u8], mut f: impl FnMut(&'t [u8])) {
        if self.values <= INLINE_VALUES {
            for &(start, end) in &self.value_ranges[..self.values] {
                f(&tuple[start as usize..end as usize]);
            }
        } else {
            values(tuple).for_each(f);
        }
    }

    /// Calls `f(taskid, key)` for every root of the scanned `tuple`.
    #[inline]
    pub fn for_each_root(&self, tuple: &[u8], mut f: impl FnMut(i32, i64)) {
        if self.roots <= INLINE_ROOTS {
            for &(task, key) in &self.inline[..self.roots] {
                f(task, key);
            }
        } else {
            for_each_root(tuple, f);
        }
    }
}

impl TupleScan {
    #[inline]
    fn push_dest(&mut self, task: i32) {
        if self.dest_tasks < INLINE_DEST_TASKS {
            self.inline_dests[self.dest_tasks] = task;
        }
        self.dest_tasks += 1;
    }
}

/// Checks `tuple` and collects its key offset, roots, value positions and `dest_task_ids` in
/// one walk.
///
/// ```
/// use heron_proto::tuple::scan_tuple;
/// let t = [0x09, 7, 0, 0, 0, 0, 0, 0, 0, 0x1a, 1, 0xaa];
/// let scan = scan_tuple(&t).unwrap();
/// assert_eq!(scan.key_offset, Some(1));
/// let mut values = Vec::new();
/// scan.for_each_value(&t, |v| values.push(v));
/// assert_eq!(values, vec![&[0xaa][..]]);
/// assert!(scan_tuple(&[0x08, 1]).is_err(), "key with the wrong wire type");
/// ```
#[inline]
pub fn scan_tuple(tuple: &[u8]) -> Result<TupleScan, TupleError> {
    let mut scan = TupleScan::default();
    scan_tuple_into(tuple, &mut scan)?;
    Ok(scan)
}

/// [`scan_tuple`] into `scan`, which is overwritten: a loop over many tuples keeps one scan
/// instead of copying a fresh one out of every call.
///
/// ```
/// use heron_proto::tuple::{scan_tuple, scan_tuple_into, TupleScan};
/// let mut scan = TupleScan::default();
/// let two_values = [0x09, 7, 0, 0, 0, 0, 0, 0, 0, 0x1a, 1, 0xaa, 0x1a, 1, 0xcc];
/// for t in [&two_values[..], &[0x1a, 1, 0xbb]] {
///     scan_tuple_into(t, &mut scan).unwrap();
///     assert_eq!(scan, scan_tuple(t).unwrap());
/// }
/// ```
#[inline]
pub fn scan_tuple_into(tuple: &[u8], scan: &mut TupleScan) -> Result<(), TupleError> {
    // The keys the encoders write, matched as one byte each: the stream manager's hot loop.
    const KEY: u64 = key(1, FIXED64) as u64;
    const ROOT: u64 = key(2, LEN) as u64;
    const VALUE: u64 = key(3, LEN) as u64;
    const DEST: u64 = key(4, VARINT) as u64;
    const DESTS: u64 = key(4, LEN) as u64;
    // the counts restart; entries past them are leftovers, overwritten as they are reached
    scan.key_offset = None;
    scan.roots = 0;
    scan.dest_tasks = 0;
    scan.values = 0;
    let mut buf = tuple;
    while !buf.is_empty() {
        match read_varint(&mut buf)? {
            VALUE => {
                let v = len_delimited(&mut buf)?;
                if scan.values < INLINE_VALUES {
                    let end = tuple.len() - buf.len();
                    // a tuple is at most a packet, far below 4 GiB
                    scan.value_ranges[scan.values] = ((end - v.len()) as u32, end as u32);
                }
                scan.values += 1;
            }
            KEY => {
                take(&mut buf, 8)?;
                scan.key_offset = Some(tuple.len() - buf.len() - 8);
            }
            ROOT => {
                let r = decode_root(len_delimited(&mut buf)?)?;
                if scan.roots < INLINE_ROOTS {
                    scan.inline[scan.roots] = r;
                }
                scan.roots += 1;
            }
            DEST => {
                // int32 on the wire is the sign-extended 64-bit varint; truncation restores it
                let task = read_varint(&mut buf)? as i32;
                scan.push_dest(task);
            }
            DESTS => {
                let mut packed = len_delimited(&mut buf)?;
                while !packed.is_empty() {
                    let task = read_varint(&mut packed)? as i32;
                    scan.push_dest(task);
                }
            }
            k => skip_unknown(&mut buf, k, 4)?,
        }
    }
    Ok(())
}

/// The serialized values of a checked tuple, in schema order.
#[inline]
pub fn values(tuple: &[u8]) -> impl Iterator<Item = &[u8]> {
    fields(tuple).map_while(Result::ok).filter_map(|f| match f {
        (3, Field::Len(v)) => Some(v),
        _ => None,
    })
}

/// Calls `f` for every `dest_task_ids` entry of a checked tuple (packed or not).
pub fn for_each_dest_task(tuple: &[u8], mut f: impl FnMut(i32)) {
    for field in fields(tuple).map_while(Result::ok) {
        match field {
            // int32 on the wire is the sign-extended 64-bit varint; truncation restores it.
            (4, Field::Varint(v)) => f(v as i32),
            (4, Field::Len(mut packed)) => {
                while let Ok(v) = read_varint(&mut packed) {
                    f(v as i32);
                }
            }
            _ => {}
        }
    }
}

/// Where the 8 bytes of a checked tuple's `key` (field 1, sfixed64) are, if it has one (the
/// last occurrence, which is the one a parser keeps). Encoders write it first.
#[inline]
pub fn tuple_key_offset(tuple: &[u8]) -> Option<usize> {
    let mut found = None;
    let mut f = fields(tuple);
    while !f.is_empty() {
        let Ok((n, v)) = f.read() else { break };
        if let (1, Field::Fixed64(_)) = (n, v) {
            found = Some(tuple.len() - f.remaining() - 8);
        }
    }
    found
}

/// Calls `f(taskid, key)` for every root of a checked tuple; returns how many there were.
#[inline]
pub fn for_each_root(tuple: &[u8], mut f: impl FnMut(i32, i64)) -> usize {
    let mut n = 0;
    for field in fields(tuple).map_while(Result::ok) {
        if let (2, Field::Len(root)) = field {
            let (task, key) = read_root(root);
            f(task, key);
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests;
