//! The answer to `need_task_ids`: the tasks a non-direct emit is delivered to.
//!
//! Storm's multi-lang adapters (storm.py, storm.rb, storm.js, pystorm) ask for it on every
//! non-direct emit unless told not to (`need_task_ids` absent means true), so every grouping
//! needs an answer:
//!
//! - FIELDS, ALL and GLOBAL are computed from the plan the way the stream manager routes
//!   (`stmgr/src/grouping.rs`): FIELDS hashes the grouping values as
//!   the stream managers do (`h = h * 31 + x`, in schema order, `x` each value's
//!   [`Value::grouping_hash`]) and picks `tasks[h % n]` of the
//!   consumer's sorted tasks; ALL is every task; GLOBAL the lowest.
//! - SHUFFLE, NONE and LOCAL_OR_SHUFFLE are answered by *pinning*: the host picks the task
//!   itself, by a round robin over the consumer's sorted tasks kept per (stream, consumer) in
//!   a [`PinState`], starting at index `task id % n` so the tasks of one component do not all
//!   start at the same consumer task. The emit then carries the answer in its
//!   `dest_task_ids` ([`heron_api::OutputCollector::emit_pinned`]), which the stream manager
//!   honours on those groupings. LOCAL_OR_SHUFFLE is pinned over *all* the consumer's tasks:
//!   such tuples lose the local preference.
//! - CUSTOM is chosen by a grouping object the host does not run for a subprocess: an emit
//!   that asks for task ids is refused with [`Unanswerable`] rather than answered wrongly.
//! - A DIRECT subscription gets only direct emits: it adds nothing.

use std::collections::HashMap;

use heron_api::{Fields, GroupingKind, TopologyContext, Value};

/// The emit's consumer reads the stream with a grouping whose choice the host cannot know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "need_task_ids on stream {stream:?}: consumer {consumer:?} reads it with {grouping} grouping, \
     whose task the stream manager picks; emit with need_task_ids=False on this stream"
)]
pub struct Unanswerable {
    /// The stream.
    pub stream: String,
    /// The consumer.
    pub consumer: String,
    /// The grouping's name.
    pub grouping: &'static str,
}

/// The round robins of pinned answers: per (stream, consumer), the index of the next task
/// among the consumer's sorted tasks. One per task, kept across emits (and restarts of the
/// subprocess); [`Default`] is a fresh state.
#[derive(Debug, Default, Clone)]
pub struct PinState {
    /// stream → consumer → next index
    next: HashMap<String, HashMap<String, usize>>,
}

impl PinState {
    /// The next of `tasks` (non-empty, sorted) for `consumer` on `stream`; the first pick is
    /// `tasks[task_id % n]`.
    fn pick(&mut self, stream: &str, consumer: &str, task_id: i32, tasks: &[i32]) -> i32 {
        let n = tasks.len();
        // no allocation once the pair is known
        if !self.next.contains_key(stream) {
            self.next.insert(stream.to_owned(), HashMap::new());
        }
        let by_consumer = self.next.get_mut(stream).expect("just inserted");
        if !by_consumer.contains_key(consumer) {
            let start = task_id.rem_euclid(n as i32) as usize;
            by_consumer.insert(consumer.to_owned(), start);
        }
        let next = by_consumer.get_mut(consumer).expect("just inserted");
        let i = *next % n;
        *next = (i + 1) % n;
        tasks[i]
    }
}

/// What [`task_ids`] answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskIds {
    /// The tasks that get the emit, in consumer order of the plan.
    pub tasks: Vec<i32>,
    /// `true` when some were picked by the host (a SHUFFLE, NONE or LOCAL_OR_SHUFFLE
    /// consumer): the emit must then carry `tasks` as its destination task ids
    /// ([`heron_api::OutputCollector::emit_pinned`]) to really go there.
    pub pinned: bool,
}

/// An emit's values, moved out of it, and (when it asks for them on a non-direct stream)
/// the task ids to answer with, for a component whose stream `e.stream` has `fields`.
pub(crate) fn emit_values(
    ctx: &TopologyContext,
    pins: &mut PinState,
    e: &mut crate::message::Emit,
    fields: &Fields,
    direct: bool,
) -> Result<(Vec<Value>, Option<TaskIds>), Unanswerable> {
    let values: Vec<Value> = std::mem::take(&mut e.tuple)
        .into_iter()
        .map(crate::node::Node::into_value)
        .collect();
    let answer = if e.need_task_ids && !direct {
        Some(task_ids(ctx, pins, &e.stream, fields, &values)?)
    } else {
        None
    };
    Ok((values, answer))
}

/// The tasks that get an emit of `values` on `stream` (declared with `fields`) of this task's
/// component, in consumer order of the plan; shuffle-like consumers' tasks are picked from
/// `pins` (see the [module docs](self)).
pub fn task_ids(
    ctx: &TopologyContext,
    pins: &mut PinState,
    stream: &str,
    fields: &Fields,
    values: &[Value],
) -> Result<TaskIds, Unanswerable> {
    let mut out = TaskIds {
        tasks: Vec::new(),
        pinned: false,
    };
    for sub in ctx.stream_targets(ctx.component_id(), stream) {
        let tasks = ctx.component_tasks(&sub.consumer);
        if tasks.is_empty() {
            continue;
        }
        match &sub.grouping {
            GroupingKind::All => out.tasks.extend_from_slice(tasks),
            GroupingKind::Global => out.tasks.push(tasks[0]),
            GroupingKind::Fields(g) => {
                let mut idx: Vec<usize> = g.iter().filter_map(|f| fields.index_of(f)).collect();
                idx.sort_unstable();
                idx.dedup();
                let mut h = 0u64;
                for i in idx {
                    let x = values.get(i).unwrap_or(&Value::Null).grouping_hash();
                    h = h.wrapping_mul(31).wrapping_add(x);
                }
                out.tasks.push(tasks[(h % tasks.len() as u64) as usize]);
            }
            // A direct subscription gets only emit_direct tuples.
            GroupingKind::Direct => {}
            GroupingKind::Shuffle | GroupingKind::None | GroupingKind::LocalOrShuffle => {
                out.tasks
                    .push(pins.pick(stream, &sub.consumer, ctx.task_id(), tasks));
                out.pinned = true;
            }
            GroupingKind::Custom => {
                return Err(Unanswerable {
                    stream: stream.to_owned(),
                    consumer: sub.consumer.clone(),
                    grouping: "CUSTOM",
                })
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use heron_api::values;
    use xxhash_rust::xxh3::xxh3_64_with_seed;

    fn ctx() -> TopologyContext {
        TopologyContext::builder("t", "split", 1)
            .component_tasks("count", [5, 3, 4])
            .component_tasks("all", [7, 8])
            .component_tasks("glob", [10, 9])
            .component_tasks("shuf", [14, 12, 13])
            .component_tasks("none", [21, 20])
            .component_tasks("local", [30, 31])
            .stream("split", "default", Fields::new(["word", "n"]))
            .stream("split", "s", Fields::new(["word", "n"]))
            .stream("split", "n", Fields::new(["word", "n"]))
            .subscription(
                "count",
                "split",
                "default",
                GroupingKind::Fields(Fields::new(["word"])),
            )
            .subscription("all", "split", "default", GroupingKind::All)
            .subscription("glob", "split", "default", GroupingKind::Global)
            .subscription("shuf", "split", "s", GroupingKind::Shuffle)
            .subscription("none", "split", "n", GroupingKind::None)
            .subscription("local", "split", "n", GroupingKind::LocalOrShuffle)
            .build()
    }

    #[test]
    fn fields_all_global() {
        let ctx = ctx();
        let f = Fields::new(["word", "n"]);
        let v = values!["cow", 1];
        let mut pins = PinState::default();
        let got = task_ids(&ctx, &mut pins, "default", &f, &v).unwrap();
        let mut b = Vec::new();
        Value::from("cow").encode(&mut b);
        let expect = [3, 4, 5][(xxh3_64_with_seed(&b[1..], u64::from(b[0])) % 3) as usize];
        assert_eq!(got.tasks, vec![expect, 7, 8, 9]);
        assert!(!got.pinned, "the stream manager picks the same by itself");
        // the count value is not a grouping field: same task
        let again = task_ids(&ctx, &mut pins, "default", &f, &values!["cow", 99]).unwrap();
        assert_eq!(again.tasks[0], expect);
    }

    #[test]
    fn shuffle_none_and_local_or_shuffle_are_pinned_round_robins() {
        let ctx = ctx();
        let f = Fields::new(["word", "n"]);
        let mut pins = PinState::default();
        let mut ask = |stream: &str| {
            let got = task_ids(&ctx, &mut pins, stream, &f, &values!["a", 1]).unwrap();
            assert!(got.pinned, "{stream}");
            got.tasks
        };
        // SHUFFLE over [12, 13, 14] from task 1: starts at index 1 % 3, then round robin
        let picks: Vec<Vec<i32>> = (0..4).map(|_| ask("s")).collect();
        assert_eq!(picks, vec![vec![13], vec![14], vec![12], vec![13]]);
        // NONE (one consumer) and LOCAL_OR_SHUFFLE (over all tasks), each its own round robin
        let picks: Vec<Vec<i32>> = (0..3).map(|_| ask("n")).collect();
        assert_eq!(picks, vec![vec![21, 31], vec![20, 30], vec![21, 31]]);
    }

    #[test]
    fn the_first_pick_depends_on_the_task_id() {
        let f = Fields::new(["word", "n"]);
        let first = |task: i32| {
            let ctx = TopologyContext::builder("t", "split", task)
                .component_tasks("split", [1, 2, 3])
                .component_tasks("shuf", [12, 13, 14])
                .stream("split", "s", f.clone())
                .subscription("shuf", "split", "s", GroupingKind::Shuffle)
                .build();
            let got = task_ids(&ctx, &mut PinState::default(), "s", &f, &values!["a", 1]);
            got.unwrap().tasks[0]
        };
        assert_eq!([first(1), first(2), first(3)], [13, 14, 12]);
    }

    #[test]
    fn custom_is_refused() {
        let ctx = TopologyContext::builder("t", "split", 1)
            .component_tasks("shuf", [11])
            .component_tasks("cust", [15, 16])
            .stream("split", "c", Fields::new(["word"]))
            .subscription("shuf", "split", "c", GroupingKind::Shuffle)
            .subscription("cust", "split", "c", GroupingKind::Custom)
            .build();
        let e = task_ids(
            &ctx,
            &mut PinState::default(),
            "c",
            &Fields::new(["word"]),
            &values!["a"],
        )
        .unwrap_err();
        assert_eq!(e.grouping, "CUSTOM");
        assert_eq!(e.consumer, "cust");
        assert!(e.to_string().contains("need_task_ids=False"), "{e}");
    }
}
