//! Where framed bytes wait for their connection: one buffer per connection, handed out once
//! per round (or in chunks when a round is large), and the table from a destination slot
//! (one per task of the plan) to the connection that reaches it.

use crate::checkpoint::{Gateway, Release};
use crate::ids::names::{HERON_TUPLE_SET2, TUPLE_STREAM_MESSAGE};
use crate::ids::ConnId;
use crate::tuple_cache::Batch;
use bytes::{Bytes, BytesMut};
use heron_proto::codec::encode_raw;
use heron_proto::ReqId;
use std::collections::HashMap;
use tracing::warn;

/// Tuples handed to connections or lost, counted where batches are delivered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delivered {
    /// Tuples written to local instances.
    pub to_instances: u64,
    /// Tuples written to other stream managers.
    pub to_stmgrs: u64,
    /// Tuples whose destination was not connected.
    pub lost: u64,
}

/// Where a slot's batches go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dest {
    /// The connection.
    pub conn: ConnId,
    /// A local instance (else the stream manager that owns the task).
    pub local: bool,
    /// The destination task.
    pub task_id: i32,
}

/// A connection's buffer is handed out in chunks of about this size. Buffers that grew
/// through a whole saturated round reached several MB by doubling: each growth copied what
/// was there, and past glibc's mmap threshold each buffer was a fresh mapping, page-faulted
/// in and unmapped again (measured: ~8 % of a saturated stream manager's time).
pub(crate) const OUT_CHUNK: usize = 256 << 10;

/// Per-connection output buffers and the slot → connection table.
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    slots: Vec<Option<Dest>>,
    bufs: HashMap<ConnId, BytesMut>,
    /// Connections whose buffer went from empty to non-empty this round.
    dirty: Vec<ConnId>,
    /// Full chunks taken off a connection's buffer this round, in order.
    ready: Vec<(ConnId, Bytes)>,
    delivered: Delivered,
    /// `EFFECTIVELY_ONCE`: checkpoint-barrier alignment in front of the local instances.
    gate: Option<Gateway>,
    /// What the gate let through, reused.
    released: Vec<Release>,
    /// Local task → its instance's connection (for the gate's releases).
    local_conns: HashMap<i32, ConnId>,
    /// `EFFECTIVELY_ONCE`: the txid of the restore the tuples sent to other stream managers
    /// follow ([`heron_proto::tuple::RESTORE_TXID_FIELD`]).
    restore_txid: Option<i64>,
}

impl Outbox {
    /// The buffer frames for `conn` are appended to.
    pub fn buf(&mut self, conn: ConnId) -> &mut BytesMut {
        let buf = self.bufs.entry(conn).or_default();
        if buf.len() >= OUT_CHUNK {
            self.ready.push((conn, buf.split().freeze()));
        }
        if buf.is_empty() {
            if buf.capacity() < OUT_CHUNK / 4 {
                buf.reserve(OUT_CHUNK);
            }
            self.dirty.push(conn);
        }
        buf
    }

    /// Replaces the slot table (after a plan or connection change).
    pub fn set_slots(&mut self, slots: impl IntoIterator<Item = Option<Dest>>) {
        self.slots.clear();
        self.slots.extend(slots);
        self.local_conns.clear();
        for d in self.slots.iter().flatten().filter(|d| d.local) {
            self.local_conns.insert(d.task_id, d.conn);
        }
    }

    /// Puts checkpoint-barrier alignment in front of the local instances (`None`: none).
    pub fn set_gate(&mut self, gate: Option<Gateway>) {
        self.gate = gate;
    }

    /// Tags the tuple sets sent to other stream managers from now on with the txid of this
    /// restore (`None`: untagged).
    pub fn set_restore_txid(&mut self, txid: Option<i64>) {
        self.restore_txid = txid;
    }

    /// The alignment, if any.
    pub fn gate(&self) -> Option<&Gateway> {
        self.gate.as_ref()
    }

    /// The alignment, if any, to change.
    pub fn gate_mut(&mut self) -> Option<&mut Gateway> {
        self.gate.as_mut()
    }

    /// A checkpoint marker of `id` for local task `dest` from task `src`: frames what the
    /// alignment releases (the marker first, then what it held) for the instance.
    pub fn gate_marker(&mut self, dest: i32, src: i32, id: &str) {
        let Some(gate) = self.gate.as_mut() else {
            return;
        };
        let mut released = std::mem::take(&mut self.released);
        gate.on_marker(dest, src, id, &mut released);
        self.write_released(dest, &mut released);
        self.released = released;
    }

    /// Hands a set for local task `dest` from `src` to the alignment; `false` if it is not
    /// aligning anything (the caller frames the set itself, copying nothing).
    fn gated(&mut self, dest: i32, src: i32, set: &[u8], n: u64) -> bool {
        let Some(gate) = self.gate.as_mut().filter(|g| g.busy()) else {
            return false;
        };
        let mut released = std::mem::take(&mut self.released);
        gate.admit(dest, src, Bytes::copy_from_slice(set), n, &mut released);
        self.write_released(dest, &mut released);
        self.released = released;
        true
    }

    /// Frames the alignment's releases for `dest`'s instance, in order.
    fn write_released(&mut self, dest: i32, released: &mut Vec<Release>) {
        let conn = self.local_conns.get(&dest).copied();
        for r in released.drain(..) {
            match (r, conn) {
                (Release::Set { set, tuples, .. }, Some(conn)) => {
                    encode_raw(self.buf(conn), HERON_TUPLE_SET2, &ReqId::ZERO, &set);
                    self.delivered.to_instances += tuples;
                }
                (Release::Checkpoint(id), Some(conn)) => {
                    let m = heron_proto::ckptmgr::InitiateStatefulCheckpoint { checkpoint_id: id };
                    heron_proto::codec::encode_message(self.buf(conn), &ReqId::ZERO, &m);
                }
                (Release::Set { tuples, .. }, None) => self.lose(dest as u32, tuples),
                (Release::Checkpoint(_), None) => {}
            }
        }
    }

    /// Where `slot`'s batches go, if it is connected.
    pub fn dest(&self, slot: u32) -> Option<Dest> {
        self.slots.get(slot as usize).copied().flatten()
    }

    /// Frames a closed batch for its destination.
    pub fn deliver(&mut self, slot: u32, batch: &mut Batch) {
        let n = u64::from(batch.tuples());
        match self.dest(slot) {
            Some(Dest {
                conn,
                local: true,
                task_id,
            }) => {
                let src = batch.src_task();
                let set = batch.tuple_set();
                if self.gate.is_some() && self.gated(task_id, src, set, n) {
                    return;
                }
                encode_raw(self.buf(conn), HERON_TUPLE_SET2, &ReqId::ZERO, set);
                self.delivered.to_instances += n;
            }
            Some(Dest { conn, task_id, .. }) => {
                let payload = batch.stream_message(task_id, self.restore_txid);
                encode_raw(self.buf(conn), TUPLE_STREAM_MESSAGE, &ReqId::ZERO, payload);
                self.delivered.to_stmgrs += n;
            }
            None => self.lose(slot, n),
        }
    }

    /// Frames an encoded `HeronTupleSet2` of `n` tuples, from another stream manager, for the
    /// local instance of `slot`; `false` (and counted lost) if it is not connected here.
    pub fn forward_to_instance(
        &mut self,
        slot: Option<u32>,
        src_task: i32,
        set: &[u8],
        n: u64,
    ) -> bool {
        match slot.and_then(|s| self.dest(s)) {
            Some(Dest {
                conn,
                local: true,
                task_id,
            }) => {
                if self.gate.is_some() && self.gated(task_id, src_task, set, n) {
                    return true;
                }
                encode_raw(self.buf(conn), HERON_TUPLE_SET2, &ReqId::ZERO, set);
                self.delivered.to_instances += n;
                true
            }
            _ => {
                self.delivered.lost += n;
                false
            }
        }
    }

    fn lose(&mut self, slot: u32, n: u64) {
        if self.delivered.lost == 0 {
            warn!(
                slot,
                tuples = n,
                "dropping tuples for a task whose instance or stream manager is not connected \
                 (further drops are only counted)"
            );
        }
        self.delivered.lost += n;
    }

    /// Hands `f` the full chunks taken off buffers this round, in order, then (unless
    /// `chunks_only`) what every buffer written this round holds.
    pub fn drain(&mut self, chunks_only: bool, mut f: impl FnMut(ConnId, Bytes)) {
        for (conn, frames) in self.ready.drain(..) {
            f(conn, frames);
        }
        if chunks_only {
            return;
        }
        for conn in self.dirty.drain(..) {
            if let Some(buf) = self.bufs.get_mut(&conn) {
                if !buf.is_empty() {
                    f(conn, buf.split().freeze());
                }
            }
        }
    }

    /// Forgets `conn`'s buffer, returning what it still held.
    pub fn remove(&mut self, conn: ConnId) -> Option<Bytes> {
        let buf = self.bufs.remove(&conn)?;
        (!buf.is_empty()).then(|| buf.freeze())
    }

    /// Delivery counters.
    pub fn delivered(&self) -> &Delivered {
        &self.delivered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_go_out_once_per_round_and_in_chunks_when_large() {
        let mut out = Outbox::default();
        out.buf(1).extend_from_slice(b"a");
        out.buf(2).extend_from_slice(b"b");
        out.buf(1).extend_from_slice(b"c");
        let mut seen = Vec::new();
        out.drain(true, |c, b| seen.push((c, b)));
        assert!(seen.is_empty(), "nothing is a full chunk");
        out.drain(false, |c, b| seen.push((c, b)));
        assert_eq!(seen, vec![(1, Bytes::from("ac")), (2, Bytes::from("b"))]);
        // a full chunk is taken off as soon as more is written
        out.buf(3).extend_from_slice(&vec![7; OUT_CHUNK]);
        out.buf(3).extend_from_slice(b"z");
        let mut seen = Vec::new();
        out.drain(false, |c, b| seen.push((c, b.len())));
        assert_eq!(seen, vec![(3, OUT_CHUNK), (3, 1)]);
        assert_eq!(out.remove(3), None, "empty after the round");
        out.buf(3).extend_from_slice(b"q");
        assert_eq!(out.remove(3), Some(Bytes::from("q")));
    }

    #[test]
    fn sets_for_unconnected_slots_are_counted_lost() {
        let mut out = Outbox::default();
        out.set_slots([
            Some(Dest {
                conn: 4,
                local: true,
                task_id: 1,
            }),
            None,
        ]);
        assert_eq!(out.dest(0).map(|d| d.conn), Some(4));
        assert!(out.forward_to_instance(Some(0), 9, b"set", 3));
        assert!(!out.forward_to_instance(Some(1), 9, b"set", 2));
        assert!(!out.forward_to_instance(None, 9, b"set", 1));
        assert_eq!(
            out.delivered(),
            &Delivered {
                to_instances: 3,
                to_stmgrs: 0,
                lost: 3
            }
        );
    }
}
