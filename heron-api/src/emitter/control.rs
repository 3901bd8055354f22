//! The acks and fails of a bolt, encoded as they come into one `HeronControlTupleSet`
//! (`acks` = 1, `fails` = 2, each an `AckTuple { repeated RootId roots = 1; required sfixed64
//! ackedtuple = 2 }`, `RootId { required int32 taskid = 1; required sfixed64 key = 2 }`), so
//! an ack costs a few bytes written and no allocation.

use bytes::{BufMut, BytesMut};
use heron_proto::wire::{int32, put_varint, varint_len};

/// Which list of the control set an entry goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Ack = 1,
    Fail = 2,
}

/// An open control set.
#[derive(Debug, Default)]
pub(super) struct ControlSet {
    /// The encoded fields of the `HeronControlTupleSet`.
    body: BytesMut,
    /// Entries in `body`.
    len: usize,
}

fn root_len(taskid: i32) -> usize {
    1 + varint_len(int32(taskid)) + 1 + 8
}

impl ControlSet {
    /// Adds an `AckTuple` for the tuple with `key` and `roots` to the acks or fails.
    pub fn push(&mut self, kind: Kind, roots: &[(i32, i64)], key: i64) {
        let mut len = 1 + 8; // ackedtuple
        for &(taskid, _) in roots {
            let r = root_len(taskid);
            len += 1 + varint_len(r as u64) + r;
        }
        let b = &mut self.body;
        b.reserve(1 + varint_len(len as u64) + len);
        b.put_u8(((kind as u8) << 3) | 2);
        put_varint(b, len as u64);
        for &(taskid, root) in roots {
            b.put_u8(0x0a); // AckTuple.roots
            put_varint(b, root_len(taskid) as u64);
            b.put_u8(0x08); // RootId.taskid
            put_varint(b, int32(taskid));
            b.put_u8(0x11); // RootId.key
            b.put_i64_le(root);
        }
        b.put_u8(0x11); // AckTuple.ackedtuple
        b.put_i64_le(key);
        self.len += 1;
    }

    /// The number of acks and fails in the set.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Appends the set as a whole `HeronTupleSet` packet from `src_task` to `frames` and
    /// empties it. Nothing when it is empty.
    pub fn close_into(&mut self, frames: &mut BytesMut, src_task: i32) {
        if self.len == 0 {
            return;
        }
        // HeronTupleSet.control
        crate::wire::put_tuple_set_frame(frames, 2, [&self.body, &[]], src_task);
        self.body.clear();
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heron_proto::codec::HeronCodec;
    use heron_proto::system::{AckTuple, HeronControlTupleSet, HeronTupleSet, RootId};
    use heron_proto::Message;

    #[test]
    fn a_closed_set_is_the_heron_tuple_set_prost_writes() {
        let mut set = ControlSet::default();
        set.push(Kind::Ack, &[(1, -5)], 7);
        set.push(Kind::Fail, &[(-3, i64::MAX), (200_000, 1)], i64::MIN);
        set.push(Kind::Ack, &[], 0);
        assert_eq!(set.len(), 3);
        let mut frames = BytesMut::new();
        set.close_into(&mut frames, -7);
        assert_eq!(set.len(), 0);
        let packet = HeronCodec::new(0)
            .decode_packet(&mut frames)
            .unwrap()
            .unwrap();
        assert!(frames.is_empty(), "exactly one packet");
        let decoded: HeronTupleSet = packet.decode().unwrap();
        let ack = |roots: &[(i32, i64)], key| AckTuple {
            roots: roots
                .iter()
                .map(|&(taskid, key)| RootId { taskid, key })
                .collect(),
            ackedtuple: key,
        };
        let expected = HeronTupleSet {
            data: None,
            control: Some(HeronControlTupleSet {
                acks: vec![ack(&[(1, -5)], 7), ack(&[], 0)],
                fails: vec![ack(&[(-3, i64::MAX), (200_000, 1)], i64::MIN)],
                emits: vec![],
            }),
            src_task_id: -7,
        };
        assert_eq!(decoded, expected);
        // byte for byte what prost writes when acks and fails are not interleaved
        let mut only_acks = ControlSet::default();
        only_acks.push(Kind::Ack, &[(1, -5)], 7);
        let mut frames = BytesMut::new();
        only_acks.close_into(&mut frames, 4);
        let packet = HeronCodec::new(0)
            .decode_packet(&mut frames)
            .unwrap()
            .unwrap();
        let prost = HeronTupleSet {
            data: None,
            control: Some(HeronControlTupleSet {
                acks: vec![ack(&[(1, -5)], 7)],
                fails: vec![],
                emits: vec![],
            }),
            src_task_id: 4,
        }
        .encode_to_vec();
        assert_eq!(&packet.payload[..], &prost[..]);
        // an empty set writes nothing
        let mut frames = BytesMut::new();
        ControlSet::default().close_into(&mut frames, 1);
        assert!(frames.is_empty());
    }
}
