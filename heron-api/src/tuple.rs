//! Tuples as bolts receive them.

use std::sync::Arc;

use crate::{Fields, Value, Values};

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
    Many(Vec<(i32, i64)>),
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
}
