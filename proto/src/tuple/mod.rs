//! The tuple wire format, in one place: writing and reading `HeronTupleSet` (instance →
//! stream manager), `HeronTupleSet2` (stream manager → instance, and inside
//! `TupleStreamMessage` between stream managers), data tuples and control tuples, by hand on
//! the hot path.
//!
//! Decoding a tuple set with prost would allocate a `Vec` per tuple (for its values and roots)
//! and re-encoding would copy every value again. Here an emit appends its `HeronDataTuple`
//! straight to a byte buffer and a closed set becomes a whole Heron packet with one copy; the
//! stream manager finds each tuple's bytes, looks at a few of its fields (grouping values,
//! direct targets, roots) and copies the bytes on unchanged; the instance reads values out of
//! the encoding in place. No allocation per tuple anywhere. The message layouts are those of
//! Heron's `tuple.proto` and `topology.proto` (field numbers in `shared/reference/heron.md`);
//! the tests check every reader and writer against prost.
//!
//! * [`fields`]: varints and a borrowing field iterator, the primitives of everything else.
//! * [`put_data_tuple`], [`scan_tuple`], [`walk_data_tuple`]: one `HeronDataTuple`.
//! * [`stream_field`], [`put_data_set_frame`], [`split_tuple_set`], [`split_data_set`]:
//!   `HeronTupleSet`.
//! * [`Set2Builder`], [`parse_tuple_set2`], [`split_set2`]: `HeronTupleSet2`.
//! * [`ControlTuples`], [`read_acks`]: acks, fails and anchored emits.
//!
//! Every reader reports malformed bytes as a [`TupleError`]; the caller closes the connection
//! they came from.

mod control;
mod data;
mod fields;
mod set;
mod set2;

pub use control::{for_each_ack_root, read_acks, AckEntry, ControlKind, ControlTuples};
pub use data::{
    check_tuple, for_each_dest_task, for_each_root, put_data_tuple, put_data_tuple_keyed,
    put_data_tuple_plain, read_root, scan_tuple, scan_tuple_into, tuple_key_offset, values,
    walk_data_tuple, EncodeValue, TupleScan, INLINE_ROOTS, INLINE_VALUES,
};
pub use fields::{fields, int32, put_varint, read_varint, varint_len, write_varint, Field, Fields};
pub use set::{
    put_control_set_frame, put_data_set_frame, put_data_set_frame_to, split_data_set,
    split_tuple_set, stream_field, DataSetRef, TupleSetParts, DEST_TASK_FIELD, KEYED_FIELD,
};
pub use set2::{
    parse_tuple_set2, put_control_set2, put_data_set2, put_stream_message, split_set2, DataSet,
    DataTuples, ReceivedSet, Set2Builder, Set2Parts, TupleKey, RESTORE_TXID_FIELD, SET2_FRAMING,
};

/// Why bytes are not a valid encoding of the expected tuple message. `Copy`, with no heap
/// part: the readers return it on the hot path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TupleError {
    /// A field runs past the end of its message.
    #[error("truncated protobuf field")]
    Truncated,
    /// A varint has more than 10 bytes.
    #[error("varint longer than 10 bytes")]
    VarintTooLong,
    /// A field key is invalid (field number 0, or a group wire type).
    #[error("invalid protobuf field key {0}")]
    BadKey(u64),
    /// A known field has the wrong wire type.
    #[error("field {field} of {message} has wire type {wire_type}")]
    WireType {
        /// The message being read.
        message: &'static str,
        /// The field number.
        field: u32,
        /// The wire type found.
        wire_type: u8,
    },
    /// A required field is absent.
    #[error("{0} is missing")]
    Missing(&'static str),
    /// A string field is not UTF-8.
    #[error("{0} is not UTF-8")]
    Utf8(&'static str),
    /// A tuple value does not decode (the reason, from the value codec of the user API).
    #[error("bad value: {0}")]
    Value(&'static str),
}

/// The prost form of a data tuple, for the tests that check the hand-written codecs.
#[cfg(test)]
pub(crate) fn prost_tuple(
    key: i64,
    roots: &[(i32, i64)],
    values: &[&[u8]],
    dest: &[i32],
) -> crate::system::HeronDataTuple {
    crate::system::HeronDataTuple {
        key,
        roots: roots
            .iter()
            .map(|&(taskid, key)| crate::system::RootId { taskid, key })
            .collect(),
        values: values
            .iter()
            .map(|v| bytes::Bytes::copy_from_slice(v))
            .collect(),
        dest_task_ids: dest.to_vec(),
    }
}
