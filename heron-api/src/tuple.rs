//! Tuples as bolts receive them.

use std::sync::Arc;

use crate::{Fields, Value, Values};
use heron_proto::tuple::{walk_data_tuple, TupleError};

fn bad_value(e: crate::ValueError) -> TupleError {
    TupleError::Value(e.reason())
}

/// Decodes a serialized `HeronDataTuple`: its values are appended to `values`, its roots to
/// `roots`; returns its key. Destination task ids are skipped. For the runtime's tests and
/// benches; the instance decodes with [`Tuple::decode_over`].
#[doc(hidden)]
pub fn decode_data_tuple(
    raw: &[u8],
    values: &mut Vec<Value>,
    roots: &mut Vec<(i32, i64)>,
) -> Result<i64, TupleError> {
    walk_data_tuple(
        raw,
        |task, key| roots.push((task, key)),
        |v| {
            values.push(Value::decode(v).map_err(bad_value)?);
            Ok(())
        },
    )
}

/// The component id of system tuples (tick tuples).
pub const SYSTEM_COMPONENT_ID: &str = "__system";
/// The stream id of tick tuples.
pub const TICK_STREAM_ID: &str = "__tick";
/// The task id tick tuples carry.
pub const SYSTEM_TASK_ID: i32 = -1;
/// The stream id used when none is given.
pub const DEFAULT_STREAM_ID: &str = "default";

/// Where tuples of one stream come from: shared by all of them.
#[doc(hidden)]
#[derive(Debug)]
pub struct TupleSource {
    component: String,
    stream: String,
    fields: Fields,
}

impl TupleSource {
    /// The source of tuples of `stream` of `component`, with `fields`.
    pub fn new(component: &str, stream: &str, fields: Fields) -> TupleSource {
        TupleSource {
            component: component.to_owned(),
            stream: stream.to_owned(),
            fields,
        }
    }

    /// The field names.
    pub fn fields(&self) -> &Fields {
        &self.fields
    }
}

/// The roots of a tuple, without an allocation for the usual zero or one.
#[derive(Clone, Debug)]
enum Roots {
    None,
    One([(i32, i64); 1]),
    /// Any number, once a reused tuple has had more than one (the vector is kept).
    Many(Vec<(i32, i64)>),
}

impl Roots {
    fn clear(&mut self) {
        match self {
            Roots::Many(v) => v.clear(),
            other => *other = Roots::None,
        }
    }

    fn push(&mut self, root: (i32, i64)) {
        match self {
            Roots::None => *self = Roots::One([root]),
            Roots::One([first]) => *self = Roots::Many(vec![*first, root]),
            Roots::Many(v) => v.push(root),
        }
    }
}

/// One input tuple: its values, their field names, and where it came from.
///
/// ```
/// use heron_api::{values, Fields, Tuple};
/// let t = Tuple::new("spout", "default", 3, Fields::new(["word", "n"]), values!["hi", 2]);
/// assert_eq!(t.source_component(), "spout");
/// assert_eq!(t.source_task(), 3);
/// assert_eq!(t.get_str_by_field("word"), Some("hi"));
/// assert_eq!(t.get_i64(1), Some(2));
/// assert!(!t.is_tick_tuple());
/// ```
#[derive(Clone, Debug)]
pub struct Tuple {
    source: Arc<TupleSource>,
    task: i32,
    values: Values,
    key: i64,
    roots: Roots,
    /// The runtime's estimate of when `execute` started on this tuple (ns on its batch
    /// clock; 0: not stamped), for the process latency of its ack.
    started_ns: u64,
}

impl Tuple {
    /// A tuple from its parts, with no acking information (key 0, no roots): for tests of
    /// bolts and for system tuples.
    pub fn new(
        source_component: &str,
        source_stream: &str,
        source_task: i32,
        fields: Fields,
        values: Values,
    ) -> Tuple {
        Tuple {
            source: Arc::new(TupleSource::new(source_component, source_stream, fields)),
            task: source_task,
            values,
            key: 0,
            roots: Roots::None,
            started_ns: 0,
        }
    }

    /// The runtime's constructor: the shared source, plus the tuple key and roots
    /// (`(task id, root key)` pairs) needed to ack it.
    #[doc(hidden)]
    pub fn from_runtime(
        source: Arc<TupleSource>,
        source_task: i32,
        values: Values,
        key: i64,
        roots: &[(i32, i64)],
    ) -> Tuple {
        let roots = match roots {
            [] => Roots::None,
            [one] => Roots::One([*one]),
            many => Roots::Many(many.to_vec()),
        };
        Tuple {
            source,
            task: source_task,
            values,
            key,
            roots,
            started_ns: 0,
        }
    }

    /// The runtime's hook for reusing one tuple object for a stream of received tuples: makes
    /// `source` this tuple's source unless it already is (the same `Arc`), so a set of tuples
    /// of one stream costs one reference count update, not one per tuple.
    #[doc(hidden)]
    pub fn set_source(&mut self, source: &Arc<TupleSource>) {
        if !Arc::ptr_eq(&self.source, source) {
            self.source = source.clone();
        }
    }

    /// The runtime's hook for reusing one tuple object: overwrites this tuple with the
    /// serialized `HeronDataTuple` `raw` sent by `source_task` (the source stays), decoding
    /// its values over the current ones so that their string and bytes buffers are reused
    /// (see `heron_proto::tuple`); no allocation when the previous tuple had values of the same
    /// types and at least as long. Clones made earlier are unaffected.
    ///
    /// On error the tuple's values, key and roots are a mix of old and new: it must not be
    /// executed, and the next successful decode makes it whole again.
    #[doc(hidden)]
    pub fn decode_over(&mut self, source_task: i32, raw: &[u8]) -> Result<(), TupleError> {
        self.task = source_task;
        self.started_ns = 0;
        self.roots.clear();
        let (roots, values) = (&mut self.roots, &mut self.values);
        let mut n = 0;
        self.key = walk_data_tuple(
            raw,
            |task, key| roots.push((task, key)),
            |v| {
                match values.get_mut(n) {
                    Some(slot) => slot.decode_in_place(v).map_err(bad_value)?,
                    None => values.push(Value::decode(v).map_err(bad_value)?),
                }
                n += 1;
                Ok(())
            },
        )?;
        values.truncate(n);
        Ok(())
    }

    /// The runtime's execute-start stamp (see `Emitter::stamp`).
    pub(crate) fn started_ns(&self) -> u64 {
        self.started_ns
    }

    pub(crate) fn set_started_ns(&mut self, ns: u64) {
        self.started_ns = ns;
    }

    /// A tick tuple: component `__system`, stream `__tick`, task -1, no values.
    ///
    /// ```
    /// assert!(heron_api::Tuple::tick().is_tick_tuple());
    /// ```
    pub fn tick() -> Tuple {
        Tuple::new(
            SYSTEM_COMPONENT_ID,
            TICK_STREAM_ID,
            SYSTEM_TASK_ID,
            Fields::empty(),
            Vec::new(),
        )
    }

    /// The id of the component that emitted this tuple.
    pub fn source_component(&self) -> &str {
        &self.source.component
    }

    /// The stream this tuple was emitted on.
    pub fn source_stream(&self) -> &str {
        &self.source.stream
    }

    /// The task that emitted this tuple (-1 for system tuples).
    pub fn source_task(&self) -> i32 {
        self.task
    }

    /// All values, in field order.
    pub fn values(&self) -> &[Value] {
        &self.values
    }

    /// Takes the values out (leaves the tuple empty).
    pub fn into_values(self) -> Values {
        self.values
    }

    /// A copy without the values that acks, fails and anchors exactly as this tuple does
    /// (same source, task, tree and timing): what a bolt that holds its inputs until later
    /// keeps, without copying their values.
    ///
    /// ```
    /// use heron_api::{Fields, Tuple, Value};
    ///
    /// let t = Tuple::new("spout", "default", 3, Fields::new(["word"]), vec![Value::from("w")]);
    /// let held = t.without_values();
    /// assert!(held.is_empty());
    /// assert_eq!((held.source_component(), held.source_task()), ("spout", 3));
    /// assert_eq!((held.key(), held.roots()), (t.key(), t.roots()));
    /// ```
    pub fn without_values(&self) -> Tuple {
        Tuple {
            source: self.source.clone(),
            task: self.task,
            values: Values::new(),
            key: self.key,
            roots: self.roots.clone(),
            started_ns: self.started_ns,
        }
    }

    /// The field names of the source stream.
    pub fn fields(&self) -> &Fields {
        &self.source.fields
    }

    /// The number of values.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// `true` when the tuple has no values.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `true` when the source stream declares `field`.
    pub fn contains(&self, field: &str) -> bool {
        self.source.fields.contains(field)
    }

    /// The value at position `i`.
    pub fn get(&self, i: usize) -> Option<&Value> {
        self.values.get(i)
    }

    /// The value of field `name`.
    pub fn get_by_field(&self, name: &str) -> Option<&Value> {
        self.source
            .fields
            .index_of(name)
            .and_then(|i| self.values.get(i))
    }

    /// The string at position `i`, if it is a string.
    pub fn get_str(&self, i: usize) -> Option<&str> {
        self.get(i).and_then(Value::as_str)
    }

    /// The string of field `name`, if it is a string.
    pub fn get_str_by_field(&self, name: &str) -> Option<&str> {
        self.get_by_field(name).and_then(Value::as_str)
    }

    /// The integer at position `i`, if it is an integer.
    pub fn get_i64(&self, i: usize) -> Option<i64> {
        self.get(i).and_then(Value::as_i64)
    }

    /// The integer of field `name`, if it is an integer.
    pub fn get_i64_by_field(&self, name: &str) -> Option<i64> {
        self.get_by_field(name).and_then(Value::as_i64)
    }

    /// The float at position `i` (integers convert).
    pub fn get_f64(&self, i: usize) -> Option<f64> {
        self.get(i).and_then(Value::as_f64)
    }

    /// The boolean at position `i`, if it is a boolean.
    pub fn get_bool(&self, i: usize) -> Option<bool> {
        self.get(i).and_then(Value::as_bool)
    }

    /// The bytes at position `i`, if they are bytes (or a string).
    pub fn get_bytes(&self, i: usize) -> Option<&[u8]> {
        self.get(i).and_then(Value::as_bytes)
    }

    /// `true` for tick tuples (component `__system`, stream `__tick`).
    pub fn is_tick_tuple(&self) -> bool {
        self.source.component == SYSTEM_COMPONENT_ID && self.source.stream == TICK_STREAM_ID
    }

    /// The tuple key the stream manager assigned (0 when not tracked).
    #[doc(hidden)]
    pub fn key(&self) -> i64 {
        self.key
    }

    /// The roots `(spout task, root key)` of the tuple trees this tuple belongs to.
    #[doc(hidden)]
    pub fn roots(&self) -> &[(i32, i64)] {
        match &self.roots {
            Roots::None => &[],
            Roots::One(one) => one,
            Roots::Many(many) => many,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values;

    #[test]
    fn accessors() {
        let source = Arc::new(TupleSource::new(
            "split",
            "words",
            Fields::new(["w", "n", "f"]),
        ));
        let t = Tuple::from_runtime(source.clone(), 7, values!["x", 3, 1.5], 99, &[(1, 5)]);
        assert_eq!(t.source_stream(), "words");
        assert_eq!(t.get_str(0), Some("x"));
        assert_eq!(t.get_str(1), None);
        assert_eq!(t.get_i64_by_field("n"), Some(3));
        assert_eq!(t.get_i64_by_field("missing"), None);
        assert_eq!(t.get_f64(2), Some(1.5));
        assert_eq!(t.get(3), None);
        assert_eq!(t.key(), 99);
        assert_eq!(t.roots(), &[(1, 5)]);
        assert_eq!(t.len(), 3);
        let many = Tuple::from_runtime(source.clone(), 7, vec![], 1, &[(1, 5), (2, 6)]);
        assert_eq!(many.roots(), &[(1, 5), (2, 6)]);
        assert_eq!(Tuple::from_runtime(source, 7, vec![], 1, &[]).roots(), &[]);
        let tick = Tuple::tick();
        assert!(tick.is_tick_tuple());
        assert_eq!(tick.source_task(), -1);
        assert!(!Tuple::new("__system", "default", -1, Fields::empty(), vec![]).is_tick_tuple());
    }

    fn encoded(key: i64, roots: &[(i32, i64)], values: &[Value]) -> Vec<u8> {
        let mut buf = bytes::BytesMut::new();
        heron_proto::tuple::put_data_tuple(&mut buf, roots, values, &[3]);
        // skip the set's field key and length: the tuple itself
        let len_bytes = (1..=10)
            .find(|&n| heron_proto::tuple::varint_len((buf.len() - 1 - n) as u64) == n)
            .expect("a length");
        let mut t = buf[1 + len_bytes..].to_vec();
        t[1..9].copy_from_slice(&key.to_le_bytes());
        t
    }

    #[test]
    fn decode_over_reuses_the_tuple_and_its_buffers() {
        let words = Arc::new(TupleSource::new("split", "words", Fields::new(["w", "n"])));
        let nums = Arc::new(TupleSource::new("count", "nums", Fields::new(["n"])));
        let mut t = Tuple::from_runtime(words.clone(), 0, Vec::new(), 0, &[]);

        t.set_source(&words);
        assert_eq!(Arc::strong_count(&words), 2, "same source: not replaced");
        let first = encoded(5, &[(1, 10)], &values!["a string of some length", 1]);
        t.decode_over(4, &first).unwrap();
        assert_eq!(t.values(), &values!["a string of some length", 1][..]);
        assert_eq!(
            (t.key(), t.roots(), t.source_task()),
            (5, &[(1, 10)][..], 4)
        );
        assert_eq!(t.get_i64_by_field("n"), Some(1));
        let buffer = t.get_str(0).unwrap().as_ptr();
        let copy = t.clone();

        // An int tuple of another stream, with more roots.
        t.set_source(&nums);
        t.decode_over(6, &encoded(7, &[(1, 11), (2, 12)], &values![42]))
            .unwrap();
        assert_eq!(t.values(), &values![42][..]);
        assert_eq!(
            (t.key(), t.roots(), t.source_task()),
            (7, &[(1, 11), (2, 12)][..], 6)
        );
        assert_eq!(t.source_stream(), "nums");
        assert_eq!(t.get_i64_by_field("n"), Some(42));
        assert_eq!(t.get_by_field("w"), None);

        // A longer string tuple again, no roots: back on the first stream.
        t.set_source(&words);
        let long = "x".repeat(100);
        t.decode_over(4, &encoded(0, &[], &values![long.as_str(), -1]))
            .unwrap();
        assert_eq!(t.get_str_by_field("w"), Some(long.as_str()));
        assert_eq!(t.get_i64(1), Some(-1));
        assert_eq!(t.roots(), &[] as &[(i32, i64)]);
        assert_eq!(t.len(), 2);

        // The same shape: the string buffer is reused.
        t.decode_over(4, &encoded(0, &[(3, 3)], &values!["short", 2]))
            .unwrap();
        let reused = t.get_str(0).unwrap().as_ptr();
        t.decode_over(4, &first).unwrap();
        assert_eq!(t.get_str(0).unwrap().as_ptr(), reused);
        assert_eq!(t.roots(), &[(1, 10)]);

        // The clone taken before is untouched, and independent.
        assert_eq!(copy.values(), &values!["a string of some length", 1][..]);
        assert_eq!(
            (copy.key(), copy.roots(), copy.source_stream()),
            (5, &[(1, 10)][..], "words")
        );
        assert_ne!(copy.get_str(0).unwrap().as_ptr(), buffer, "a deep copy");

        // A bad tuple is an error; the next good one is whole.
        assert!(t.decode_over(4, &[0x1a, 1, 9]).is_err());
        t.decode_over(4, &first).unwrap();
        assert_eq!(t.values(), copy.values());
        assert_eq!(t.into_values(), values!["a string of some length", 1]);
    }
}
