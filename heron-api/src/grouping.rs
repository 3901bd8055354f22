//! Stream groupings: how a stream's tuples are split among a bolt's tasks.

use std::fmt;
use std::sync::Arc;

use crate::{Fields, TopologyContext, Value};

/// `custom_grouping_object` that marks a local-or-shuffle grouping (a `SHUFFLE` in the proto).
pub const LOCAL_OR_SHUFFLE_MARKER: &[u8] = b"heron-rs:local-or-shuffle";
/// `custom_grouping_object` that marks a custom grouping run by the emitting instance.
pub const CUSTOM_MARKER: &[u8] = b"heron-rs:custom";

/// A user-defined grouping (Storm's `CustomStreamGrouping`), run in the emitting instance:
/// the chosen tasks travel in the tuple's destination list.
///
/// ```
/// use heron_api::{CustomStreamGrouping, TopologyContext, Value};
///
/// /// Sends every tuple to the first task.
/// #[derive(Clone, Default)]
/// struct First { tasks: Vec<i32> }
///
/// impl CustomStreamGrouping for First {
///     fn prepare(&mut self, _ctx: &TopologyContext, _stream: &str, target_tasks: &[i32]) {
///         self.tasks = target_tasks.to_vec();
///     }
///     fn choose_tasks(&mut self, _values: &[Value]) -> Vec<i32> {
///         self.tasks.first().copied().into_iter().collect()
///     }
/// }
/// ```
pub trait CustomStreamGrouping: Send {
    /// Called once with the emitting task's context, the stream and the consumer's tasks
    /// (sorted).
    fn prepare(&mut self, _ctx: &TopologyContext, _stream: &str, _target_tasks: &[i32]) {}

    /// The consumer tasks that get a tuple with these values.
    fn choose_tasks(&mut self, values: &[Value]) -> Vec<i32>;
}

/// Makes a fresh custom grouping for one emitting task.
pub type CustomGroupingFactory = Arc<dyn Fn() -> Box<dyn CustomStreamGrouping> + Send + Sync>;

/// How a bolt consumes a stream.
#[derive(Clone)]
pub enum Grouping {
    /// Round robin over the consumer's tasks.
    Shuffle,
    /// Equal values of these fields go to the same task.
    Fields(Fields),
    /// Every task gets every tuple.
    All,
    /// Every tuple goes to the task with the lowest id.
    Global,
    /// No preference (treated as shuffle).
    None,
    /// The emitter picks the task with `emit_direct`.
    Direct,
    /// Shuffle over the consumer's tasks in the emitter's container when there are any.
    LocalOrShuffle,
    /// A [`CustomStreamGrouping`] run by the emitting instance.
    Custom(CustomGroupingFactory),
}

impl Grouping {
    /// A custom grouping from a prototype that is cloned for every emitting task.
    pub fn custom<G: CustomStreamGrouping + Clone + 'static>(grouping: G) -> Grouping {
        let proto = std::sync::Mutex::new(grouping);
        Grouping::Custom(Arc::new(move || {
            let g = proto.lock().unwrap_or_else(|e| e.into_inner()).clone();
            Box::new(g) as Box<dyn CustomStreamGrouping>
        }))
    }

    /// The grouping's name as in Heron's proto enum (`SHUFFLE`, `FIELDS`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Grouping::Shuffle | Grouping::LocalOrShuffle => "SHUFFLE",
            Grouping::Fields(_) => "FIELDS",
            Grouping::All => "ALL",
            Grouping::Global => "LOWEST",
            Grouping::None => "NONE",
            Grouping::Direct => "DIRECT",
            Grouping::Custom(_) => "CUSTOM",
        }
    }

    /// Heron's proto enum value.
    pub fn proto_type(&self) -> heron_proto::api::Grouping {
        use heron_proto::api::Grouping as G;
        match self {
            Grouping::Shuffle | Grouping::LocalOrShuffle => G::Shuffle,
            Grouping::Fields(_) => G::Fields,
            Grouping::All => G::All,
            Grouping::Global => G::Lowest,
            Grouping::None => G::None,
            Grouping::Direct => G::Direct,
            Grouping::Custom(_) => G::Custom,
        }
    }
}

impl fmt::Debug for Grouping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Grouping::Fields(fields) => write!(f, "Fields({fields})"),
            Grouping::LocalOrShuffle => f.write_str("LocalOrShuffle"),
            Grouping::Custom(_) => f.write_str("Custom"),
            other => f.write_str(other.name()),
        }
    }
}

/// One subscription of a bolt: a source component's stream and the grouping.
#[derive(Clone, Debug)]
pub struct InputDecl {
    /// The producing component.
    pub source: String,
    /// The stream id.
    pub stream: String,
    /// The grouping.
    pub grouping: Grouping,
}
