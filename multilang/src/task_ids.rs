//! The answer to `need_task_ids`: the tasks a non-direct emit is delivered to, computed from
//! the plan the way the stream manager routes (`stmgr/src/grouping.rs`): FIELDS hashes the
//! encoded grouping values with xxh3 (`h = h * 31 + xxh3_64(value)`, in schema order) and
//! picks `tasks[h % n]` of the consumer's sorted tasks; ALL is every task; GLOBAL the lowest.
//!
//! SHUFFLE, NONE, LOCAL_OR_SHUFFLE and CUSTOM are chosen by the stream manager's round
//! robin (or a grouping object) the host cannot see: for those an emit that asks for task
//! ids is refused with [`Unanswerable`] instead of answered wrongly.

use heron_api::{Fields, GroupingKind, TopologyContext, Value};
use xxhash_rust::xxh3::xxh3_64;

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

/// The tasks that get an emit of `values` on `stream` (declared with `fields`) of this task's
/// component, in consumer order of the plan.
pub fn task_ids(
    ctx: &TopologyContext,
    stream: &str,
    fields: &Fields,
    values: &[Value],
) -> Result<Vec<i32>, Unanswerable> {
    let mut out = Vec::new();
    for sub in ctx.stream_targets(ctx.component_id(), stream) {
        let tasks = ctx.component_tasks(&sub.consumer);
        if tasks.is_empty() {
            continue;
        }
        let refuse = |grouping| Unanswerable {
            stream: stream.to_owned(),
            consumer: sub.consumer.clone(),
            grouping,
        };
        match &sub.grouping {
            GroupingKind::All => out.extend_from_slice(tasks),
            GroupingKind::Global => out.push(tasks[0]),
            GroupingKind::Fields(g) => {
                let mut idx: Vec<usize> = g.iter().filter_map(|f| fields.index_of(f)).collect();
                idx.sort_unstable();
                idx.dedup();
                let mut h = 0u64;
                let mut buf = Vec::new();
                for i in idx {
                    buf.clear();
                    values.get(i).unwrap_or(&Value::Null).encode(&mut buf);
                    h = h.wrapping_mul(31).wrapping_add(xxh3_64(&buf));
                }
                out.push(tasks[(h % tasks.len() as u64) as usize]);
            }
            // A direct subscription gets only emit_direct tuples.
            GroupingKind::Direct => {}
            GroupingKind::Shuffle => return Err(refuse("SHUFFLE")),
            GroupingKind::None => return Err(refuse("NONE")),
            GroupingKind::LocalOrShuffle => return Err(refuse("LOCAL_OR_SHUFFLE")),
            GroupingKind::Custom => return Err(refuse("CUSTOM")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use heron_api::values;

    fn ctx() -> TopologyContext {
        TopologyContext::builder("t", "split", 1)
            .component_tasks("count", [5, 3, 4])
            .component_tasks("all", [7, 8])
            .component_tasks("glob", [10, 9])
            .component_tasks("shuf", [11])
            .stream("split", "default", Fields::new(["word", "n"]))
            .stream("split", "s", Fields::new(["word", "n"]))
            .subscription(
                "count",
                "split",
                "default",
                GroupingKind::Fields(Fields::new(["word"])),
            )
            .subscription("all", "split", "default", GroupingKind::All)
            .subscription("glob", "split", "default", GroupingKind::Global)
            .subscription("shuf", "split", "s", GroupingKind::Shuffle)
            .build()
    }

    #[test]
    fn fields_all_global() {
        let ctx = ctx();
        let f = Fields::new(["word", "n"]);
        let v = values!["cow", 1];
        let got = task_ids(&ctx, "default", &f, &v).unwrap();
        let mut b = Vec::new();
        Value::from("cow").encode(&mut b);
        let expect = [3, 4, 5][(xxh3_64(&b) % 3) as usize];
        assert_eq!(got, vec![expect, 7, 8, 9]);
        // the count value is not a grouping field: same task
        let again = task_ids(&ctx, "default", &f, &values!["cow", 99]).unwrap();
        assert_eq!(again[0], expect);
    }

    #[test]
    fn shuffle_is_refused() {
        let e = task_ids(&ctx(), "s", &Fields::new(["word", "n"]), &values!["a", 1]).unwrap_err();
        assert_eq!(e.grouping, "SHUFFLE");
        assert!(e.to_string().contains("need_task_ids=False"));
    }
}
