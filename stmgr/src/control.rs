//! Control tuples (`HeronControlTupleSet`: acks, fails, emits) read and written by hand: the
//! instance's sets are walked in place, and what the stream manager sends on (split per
//! root, addressed to a spout task) is built as encoded bytes in one buffer per destination,
//! so the ack path allocates per batch, not per tuple.

use crate::wire::{fields, int32, put_varint, varint_len, Value, WireError};
use bytes::{BufMut, BytesMut};

/// The three lists of a `HeronControlTupleSet`, by field number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `acks` (field 1).
    Ack = 1,
    /// `fails` (field 2).
    Fail = 2,
    /// `emits` (field 3).
    Emit = 3,
}

/// One checked `AckTuple` of an encoded control set, as [`read_acks`] finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AckEntry {
    pub kind: Kind,
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
pub(crate) fn read_acks(control: &[u8], out: &mut Vec<AckEntry>) -> Result<(), WireError> {
    let mut rest = fields(control);
    while let Some(field) = rest.next() {
        let (n, v) = field?;
        let kind = match n {
            1 => Kind::Ack,
            2 => Kind::Fail,
            3 => Kind::Emit,
            _ => continue,
        };
        let Value::Len(ack) = v else {
            return Err(WireError::WireType {
                message: "HeronControlTupleSet",
                field: n,
                wire_type: wire_type(&v),
            });
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
        let mut acked = None;
        for af in fields(ack) {
            match af? {
                (2, Value::Fixed64(v)) => acked = Some(v as i64),
                (1, Value::Len(root)) => {
                    check_root(root)?;
                    if entry.roots == 0 {
                        entry.first_root = crate::wire::read_root(root);
                    }
                    entry.roots += 1;
                }
                (1 | 2, v) => return Err(wrong("AckTuple", &v)),
                _ => {}
            }
        }
        entry.acked = acked.ok_or(WireError::Missing("AckTuple.ackedtuple"))?;
        out.push(entry);
    }
    Ok(())
}

/// Calls `f(taskid, key)` for every root of an `AckTuple` checked by [`read_acks`].
pub(crate) fn for_each_ack_root(ack: &[u8], mut f: impl FnMut(i32, i64)) {
    for field in fields(ack).map_while(Result::ok) {
        if let (1, Value::Len(root)) = field {
            let (task, key) = crate::wire::read_root(root);
            f(task, key);
        }
    }
}

fn check_root(root: &[u8]) -> Result<(), WireError> {
    for f in fields(root) {
        match f? {
            (1, Value::Varint(_)) | (2, Value::Fixed64(_)) => {}
            (1 | 2, v) => return Err(wrong("RootId", &v)),
            _ => {}
        }
    }
    Ok(())
}

fn wire_type(v: &Value<'_>) -> u8 {
    match v {
        Value::Varint(_) => 0,
        Value::Fixed64(_) => 1,
        Value::Len(_) => 2,
        Value::Fixed32(_) => 5,
    }
}

fn wrong(message: &'static str, v: &Value<'_>) -> WireError {
    WireError::WireType {
        message,
        field: 0,
        wire_type: wire_type(v),
    }
}

/// Encoded `HeronControlTupleSet` fields, each an `AckTuple` with one root, in the order
/// they were added.
#[derive(Debug, Default)]
pub(crate) struct ControlBuf {
    buf: BytesMut,
    count: u32,
}

impl ControlBuf {
    /// Appends `AckTuple{roots: [{task, root}], ackedtuple: acked}` to the `kind` list.
    pub fn push(&mut self, kind: Kind, task: i32, root: i64, acked: i64) {
        let root_len = 1 + varint_len(int32(task)) + 1 + 8;
        let ack_len = 1 + varint_len(root_len as u64) + root_len + 1 + 8;
        self.buf.put_u8(((kind as u8) << 3) | 2);
        put_varint(&mut self.buf, ack_len as u64);
        self.buf.put_u8(0x0a); // AckTuple.roots
        put_varint(&mut self.buf, root_len as u64);
        self.buf.put_u8(0x08); // RootId.taskid
        put_varint(&mut self.buf, int32(task));
        self.buf.put_u8(0x11); // RootId.key
        self.buf.put_i64_le(root);
        self.buf.put_u8(0x11); // AckTuple.ackedtuple
        self.buf.put_i64_le(acked);
        self.count += 1;
    }

    /// The number of control tuples held.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The bytes held.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// `true` when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Drops what is held.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.count = 0;
    }

    /// Writes `HeronTupleSet2{control: <held>, src_task_id}` into `out` and empties the buffer.
    pub fn take_tuple_set(&mut self, src_task: i32, out: &mut BytesMut) {
        out.put_u8(0x12); // HeronTupleSet2.control
        put_varint(out, self.buf.len() as u64);
        out.put_slice(&self.buf);
        out.put_u8(0x18); // HeronTupleSet2.src_task_id
        put_varint(out, int32(src_task));
        self.buf.clear();
        self.count = 0;
    }

    /// Writes `TupleStreamMessage{task_id: dest_task, set: HeronTupleSet2{control: <held>}}`
    /// into `out` and empties the buffer.
    pub fn take_stream_message(&mut self, dest_task: i32, src_task: i32, out: &mut BytesMut) {
        let count = self.count;
        let mut set = BytesMut::with_capacity(self.buf.len() + 16);
        self.take_tuple_set(src_task, &mut set);
        out.put_u8(0x08); // TupleStreamMessage.task_id
        put_varint(out, int32(dest_task));
        out.put_u8(0x12); // TupleStreamMessage.set
        put_varint(out, set.len() as u64);
        out.put_slice(&set);
        out.put_u8(0x18); // TupleStreamMessage.src_task_id
        put_varint(out, int32(src_task));
        out.put_u8(0x20); // TupleStreamMessage.num_tuples
        put_varint(out, u64::from(count));
    }
}

/// The parts of an encoded `HeronTupleSet2`.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Set2Parts<'a> {
    /// `data`, encoded, if present.
    pub data: Option<&'a [u8]>,
    /// `control`, encoded, if present.
    pub control: Option<&'a [u8]>,
    /// `src_task_id`.
    pub src_task: i32,
}

/// Splits an encoded `HeronTupleSet2` (the last occurrence of each field wins).
pub(crate) fn split_set2(set: &[u8]) -> Result<Set2Parts<'_>, WireError> {
    let mut parts = Set2Parts::default();
    for f in fields(set) {
        match f? {
            (1, Value::Len(d)) => parts.data = Some(d),
            (2, Value::Len(c)) => parts.control = Some(c),
            (3, Value::Varint(v)) => parts.src_task = v as i32,
            (n @ 1..=3, v) => {
                return Err(WireError::WireType {
                    message: "HeronTupleSet2",
                    field: n,
                    wire_type: wire_type(&v),
                })
            }
            _ => {}
        }
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use heron_proto::stmgr::TupleStreamMessage;
    use heron_proto::system::{AckTuple, HeronControlTupleSet, HeronTupleSet2, RootId};
    use heron_proto::Message;

    fn ack(roots: &[(i32, i64)], acked: i64) -> AckTuple {
        AckTuple {
            roots: roots
                .iter()
                .map(|&(taskid, key)| RootId { taskid, key })
                .collect(),
            ackedtuple: acked,
        }
    }

    #[test]
    fn control_sets_are_read_per_kind_with_their_roots() {
        let set = HeronControlTupleSet {
            acks: vec![ack(&[(1, 10), (-2, 20)], 5), ack(&[], -1)],
            fails: vec![ack(&[(3, 30)], 0)],
            emits: vec![ack(&[(1, 10)], i64::MIN)],
        }
        .encode_to_vec();
        let mut entries = Vec::new();
        read_acks(&set, &mut entries).unwrap();
        let seen: Vec<_> = entries
            .iter()
            .map(|e| {
                let mut roots = Vec::new();
                e.for_each_root(&set, |t, k| roots.push((t, k)));
                (e.kind, e.acked, roots)
            })
            .collect();
        // wire order: prost writes acks, fails, emits
        assert_eq!(
            seen,
            vec![
                (Kind::Ack, 5, vec![(1, 10), (-2, 20)]),
                (Kind::Ack, -1, vec![]),
                (Kind::Fail, 0, vec![(3, 30)]),
                (Kind::Emit, i64::MIN, vec![(1, 10)]),
            ]
        );
        let mut entries = Vec::new();
        assert!(read_acks(&[0x0a, 2, 0x11, 1], &mut entries).is_err());
        assert_eq!(
            read_acks(&[0x0a, 0], &mut entries),
            Err(WireError::Missing("AckTuple.ackedtuple"))
        );
        // a root of the wrong wire type, a list of the wrong wire type
        assert!(matches!(
            read_acks(&[0x0a, 2, 0x08, 0x01], &mut entries),
            Err(WireError::WireType { .. })
        ));
        assert!(read_acks(&[0x08, 1], &mut entries).is_err());
        // unknown fields are skipped
        let mut entries = Vec::new();
        read_acks(
            &[0x20, 1, 0x0a, 9, 0x11, 1, 0, 0, 0, 0, 0, 0, 0],
            &mut entries,
        )
        .unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].acked, 1);
    }

    #[test]
    fn built_sets_decode_with_prost() {
        let mut c = ControlBuf::default();
        c.push(Kind::Emit, 4, -9, 77);
        c.push(Kind::Ack, 4, -9, 78);
        c.push(Kind::Fail, -3, 1, 0);
        assert_eq!(c.count(), 3);
        let mut out = BytesMut::new();
        c.take_stream_message(4, 6, &mut out);
        assert!(c.is_empty());
        assert_eq!(c.len(), 0);
        let msg = TupleStreamMessage::decode(&out[..]).unwrap();
        assert_eq!((msg.task_id, msg.src_task_id, msg.num_tuples), (4, 6, 3));
        let set = HeronTupleSet2::decode(msg.set.clone()).unwrap();
        assert!(set.data.is_none());
        let control = set.control.unwrap();
        assert_eq!(control.emits, vec![ack(&[(4, -9)], 77)]);
        assert_eq!(control.acks, vec![ack(&[(4, -9)], 78)]);
        assert_eq!(control.fails, vec![ack(&[(-3, 1)], 0)]);
        let parts = split_set2(&msg.set).unwrap();
        assert!(parts.data.is_none() && parts.control.is_some());
        assert_eq!(parts.src_task, 6);
    }
}
