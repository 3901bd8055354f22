//! Which spout task reads which partition: Storm's `RoundRobinManualPartitioner`.

/// A partition of a topic.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicPartition {
    /// The topic.
    pub topic: String,
    /// The partition number.
    pub partition: i32,
}

impl TopicPartition {
    /// `topic`'s partition `partition`.
    pub fn new(topic: impl Into<String>, partition: i32) -> TopicPartition {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }
}

impl std::fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// The partitions task number `index` (0-based) of `tasks` reads: the partitions sorted by
/// topic and number, task `i` taking `i, i + tasks, i + 2·tasks, …`. Every partition is read
/// by exactly one task, and the split depends only on the partitions and the task count, so
/// after a parallelism change each task computes its new share on its own.
///
/// ```
/// use heron_kafka::{assign_round_robin, TopicPartition};
///
/// let all: Vec<TopicPartition> = (0..5).map(|p| TopicPartition::new("t", p)).collect();
/// let mine = assign_round_robin(&all, 1, 2);
/// assert_eq!(mine.iter().map(|tp| tp.partition).collect::<Vec<_>>(), [1, 3]);
/// ```
pub fn assign_round_robin(
    partitions: &[TopicPartition],
    index: usize,
    tasks: usize,
) -> Vec<TopicPartition> {
    let mut sorted = partitions.to_vec();
    sorted.sort();
    sorted.dedup();
    let tasks = tasks.max(1);
    sorted
        .into_iter()
        .enumerate()
        .filter(|(i, _)| i % tasks == index)
        .map(|(_, tp)| tp)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_partition_has_exactly_one_task() {
        let mut all = Vec::new();
        for t in ["b", "a"] {
            for p in (0..7).rev() {
                all.push(TopicPartition::new(t, p));
            }
        }
        for tasks in 1..10 {
            let mut seen: Vec<TopicPartition> = (0..tasks)
                .flat_map(|i| assign_round_robin(&all, i, tasks))
                .collect();
            seen.sort();
            let mut expect = all.clone();
            expect.sort();
            assert_eq!(seen, expect, "{tasks} tasks");
            // balanced: shares differ by at most one
            let sizes: Vec<usize> = (0..tasks)
                .map(|i| assign_round_robin(&all, i, tasks).len())
                .collect();
            assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
        }
    }

    #[test]
    fn input_order_does_not_matter() {
        let a: Vec<TopicPartition> = (0..4).map(|p| TopicPartition::new("t", p)).collect();
        let mut b = a.clone();
        b.reverse();
        assert_eq!(assign_round_robin(&a, 0, 2), assign_round_robin(&b, 0, 2));
        assert_eq!(
            assign_round_robin(&a, 0, 2),
            [TopicPartition::new("t", 0), TopicPartition::new("t", 2)]
        );
    }
}
