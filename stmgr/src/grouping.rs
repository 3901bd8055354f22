//! How one subscribing bolt's tasks are chosen for a tuple: one [`Grouping`] per
//! (stream, consumer) pair.
//!
//! Tasks are named by *slot*: the index of the task in the physical plan's task ids sorted
//! ascending (see [`crate::routing::Router`]). Every list of slots here is therefore in
//! ascending task-id order, as Heron sorts its task lists.

use heron_proto::grouping::{fields_hash_step, Modulus};
use heron_proto::tuple::TupleScan;

/// The `custom_grouping_object` that turns a SHUFFLE input into local-or-shuffle.
pub(crate) const LOCAL_OR_SHUFFLE: &[u8] = b"heron-rs:local-or-shuffle";

/// One consumer's grouping, ready to route.
#[derive(Debug, Clone)]
pub(crate) enum Grouping {
    /// Round robin over `slots`, starting at a random index (SHUFFLE, NONE, local-or-shuffle),
    /// unless the tuple is *pinned*: then the tuple's `dest_task_ids` that are tasks of this
    /// consumer (the emitter chose them, e.g. a multi-lang emit that asked for its task ids).
    Shuffle {
        /// The candidate slots of the round robin (local-or-shuffle: the local ones).
        slots: Vec<u32>,
        /// The next index into `slots`.
        next: usize,
        /// Every task id of the consumer, ascending: what a pinned tuple may name.
        tasks: Vec<i32>,
        /// The slot of each entry of `tasks`.
        task_slots: Vec<u32>,
    },
    /// `slots[fields_hash % n]` over the values at `indices` (ascending schema indices).
    Fields {
        /// The consumer's slots.
        slots: Vec<u32>,
        /// Schema indices of the grouping fields, ascending.
        indices: Vec<usize>,
        /// `slots.len()`, as a modulus.
        modulus: Modulus,
    },
    /// Every slot (ALL).
    All {
        /// The consumer's slots.
        slots: Vec<u32>,
    },
    /// The lowest task (LOWEST, Storm's global grouping).
    Lowest {
        /// The slot of the lowest task id.
        slot: u32,
    },
    /// The tuple's `dest_task_ids` that are tasks of this consumer (DIRECT, CUSTOM).
    Direct {
        /// The consumer's task ids, ascending.
        tasks: Vec<i32>,
        /// The slot of each entry of `tasks`.
        slots: Vec<u32>,
    },
}

impl Grouping {
    /// A round robin over `slots` (non-empty) from a random start, honouring pinned tuples
    /// whose `dest_task_ids` name some of `tasks` (every task of the consumer, ascending, in
    /// `task_slots`).
    pub fn shuffle(slots: Vec<u32>, tasks: Vec<i32>, task_slots: Vec<u32>) -> Grouping {
        debug_assert_eq!(tasks.len(), task_slots.len());
        let next = rand::random_range(0..slots.len());
        Grouping::Shuffle {
            slots,
            next,
            tasks,
            task_slots,
        }
    }

    /// Appends the destination slots of `tuple` (a checked, encoded `HeronDataTuple`).
    pub fn route(&mut self, tuple: &[u8], scan: &TupleScan, out: &mut Vec<u32>) {
        match self {
            Grouping::Shuffle {
                slots,
                next,
                tasks,
                task_slots,
            } => {
                // Ordinary tuples pay this one check; a pinned tuple goes where it says, a
                // tuple pinned for (or directed at) another consumer is round-robined here.
                if scan.has_dest_tasks() && push_dest_slots(tuple, scan, tasks, task_slots, out) {
                    return;
                }
                out.push(slots[*next]);
                *next += 1;
                if *next == slots.len() {
                    *next = 0;
                }
            }
            Grouping::Fields {
                slots,
                indices,
                modulus,
            } => {
                let h = tuple_fields_hash(tuple, scan, indices);
                out.push(slots[modulus.rem(h)]);
            }
            Grouping::All { slots } => out.extend_from_slice(slots),
            Grouping::Lowest { slot } => out.push(*slot),
            Grouping::Direct { tasks, slots } => {
                push_dest_slots(tuple, scan, tasks, slots, out);
            }
        }
    }
}

/// Appends the slot of each of the tuple's `dest_task_ids` that is one of `tasks` (ascending,
/// their slots in `slots`), in the tuple's order; `true` when there was at least one.
#[inline]
fn push_dest_slots(
    tuple: &[u8],
    scan: &TupleScan,
    tasks: &[i32],
    slots: &[u32],
    out: &mut Vec<u32>,
) -> bool {
    let before = out.len();
    scan.for_each_dest_task(tuple, |task| {
        if let Ok(i) = tasks.binary_search(&task) {
            out.push(slots[i]);
        }
    });
    out.len() > before
}

/// Fields grouping's hash of the serialized grouping values, in schema order
/// (`docs/internals.md`): xxh3-64 of each value's payload seeded with its tag, combined as
/// `h = h * 31 + x` (wrapping) from 0. Every stream manager computes the same.
#[cfg(test)]
pub(crate) fn fields_hash<'a>(values: impl IntoIterator<Item = &'a [u8]>) -> u64 {
    values.into_iter().fold(0u64, fields_hash_step)
}

/// [`fields_hash`] of the values at `indices` (ascending) of a scanned tuple.
fn tuple_fields_hash(tuple: &[u8], scan: &TupleScan, indices: &[usize]) -> u64 {
    let mut want = indices.iter().copied().peekable();
    let (mut h, mut i) = (0u64, 0usize);
    scan.for_each_value(tuple, |v| {
        if want.next_if_eq(&i).is_some() {
            h = fields_hash_step(h, v);
        }
        i += 1;
    });
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::tuple as encoded;
    use heron_proto::tuple as wire;
    use xxhash_rust::xxh3::xxh3_64_with_seed;

    fn route(g: &mut Grouping, tuple: &[u8]) -> Vec<u32> {
        let mut out = Vec::new();
        let scan = wire::scan_tuple(tuple).expect("a well-formed tuple");
        g.route(tuple, &scan, &mut out);
        out
    }

    #[test]
    fn shuffle_is_a_round_robin_over_every_slot() {
        let t = encoded(&[b"\x04x"], &[]);
        let mut g = Grouping::shuffle(vec![2, 5, 9], vec![20, 50, 90], vec![2, 5, 9]);
        let picks: Vec<u32> = (0..9).flat_map(|_| route(&mut g, &t)).collect();
        // each window of 3 visits all three slots in ascending cyclic order
        for w in picks.chunks(3) {
            let mut sorted = w.to_vec();
            sorted.sort_unstable();
            assert_eq!(sorted, vec![2, 5, 9]);
        }
        for pair in picks.windows(2) {
            let next = match pair[0] {
                2 => 5,
                5 => 9,
                _ => 2,
            };
            assert_eq!(pair[1], next);
        }
    }

    #[test]
    fn shuffle_starts_at_a_random_index() {
        let t = encoded(&[], &[]);
        let firsts: std::collections::HashSet<u32> = (0..200)
            .map(|_| {
                let g =
                    &mut Grouping::shuffle((0..8).collect(), (0..8).collect(), (0..8).collect());
                route(g, &t)[0]
            })
            .collect();
        assert!(firsts.len() > 1, "every router started at {firsts:?}");
    }

    #[test]
    fn shuffle_honours_tasks_pinned_for_its_consumer() {
        // local-or-shuffle: the round robin is over the local slots 5 and 9 only, but a pinned
        // tuple may name any task of the consumer
        let mut g = Grouping::shuffle(vec![5, 9], vec![20, 50, 90], vec![2, 5, 9]);
        assert_eq!(route(&mut g, &encoded(&[b"\x04x"], &[20])), vec![2]);
        assert_eq!(route(&mut g, &encoded(&[b"\x04x"], &[90])), vec![9]);
        // several pinned tasks, in the tuple's order; others' tasks are left out
        assert_eq!(route(&mut g, &encoded(&[], &[90, 7, 20])), vec![9, 2]);
        // pinned tuples do not move the round robin
        let plain = encoded(&[b"\x04x"], &[]);
        let a = route(&mut g, &plain);
        route(&mut g, &encoded(&[], &[50]));
        let b = route(&mut g, &plain);
        assert_ne!(a, b, "the round robin went on from where it was");
        assert_eq!(route(&mut g, &plain), a);
    }

    #[test]
    fn shuffle_round_robins_tuples_whose_dests_belong_to_another_consumer() {
        // a CUSTOM grouping chose task 7 of another bolt on the same stream: this consumer
        // still gets the tuple, by its round robin
        let t = encoded(&[b"\x04x"], &[7]);
        let mut g = Grouping::shuffle(vec![2, 5, 9], vec![20, 50, 90], vec![2, 5, 9]);
        let mut picks: Vec<u32> = (0..3).flat_map(|_| route(&mut g, &t)).collect();
        picks.sort_unstable();
        assert_eq!(picks, vec![2, 5, 9]);
        // and a consumer that reads the stream with DIRECT / CUSTOM gets only its own tasks
        let mut d = Grouping::Direct {
            tasks: vec![20, 50, 90],
            slots: vec![2, 5, 9],
        };
        assert!(route(&mut d, &t).is_empty());
    }

    #[test]
    fn fields_hash_follows_the_documented_formula() {
        let a: &[u8] = b"\x04hello";
        let b: &[u8] = b"\x02\x07\0\0\0\0\0\0\0";
        // the payload after the tag byte, the tag as seed
        let x = |v: &[u8]| xxh3_64_with_seed(&v[1..], u64::from(v[0]));
        let want = x(a).wrapping_mul(31).wrapping_add(x(b));
        assert_eq!(fields_hash([a, b]), want);
        assert_eq!(fields_hash(std::iter::empty::<&[u8]>()), 0);
        // only the grouping fields count, in schema order
        let t = encoded(&[a, b"\x04ignored", b], &[]);
        let scan = wire::scan_tuple(&t).unwrap();
        assert_eq!(tuple_fields_hash(&t, &scan, &[0, 2]), want);
        assert_eq!(tuple_fields_hash(&t, &scan, &[0]), x(a));
        // more values than a scan keeps: the tuple is walked again for them
        let many: Vec<Vec<u8>> = (0..wire::INLINE_VALUES as u8 + 3)
            .map(|i| vec![4, i])
            .collect();
        let refs: Vec<&[u8]> = many.iter().map(|v| &v[..]).collect();
        let t = encoded(&refs, &[]);
        let scan = wire::scan_tuple(&t).unwrap();
        let last = refs.len() - 1;
        assert_eq!(
            tuple_fields_hash(&t, &scan, &[1, last]),
            fields_hash([refs[1], refs[last]])
        );
    }

    #[test]
    fn fields_sends_equal_values_to_one_task_and_spreads_others() {
        let mut g = Grouping::Fields {
            slots: vec![0, 1, 2, 3],
            indices: vec![1],
            modulus: Modulus::new(4),
        };
        let mut hit = [0u32; 4];
        for i in 0..400 {
            let word = format!("\x04word-{}", i % 40);
            let other = format!("\x04{i}");
            let t = encoded(&[other.as_bytes(), word.as_bytes()], &[]);
            let slot = route(&mut g, &t);
            assert_eq!(slot.len(), 1);
            let again = encoded(&[b"\x04different", word.as_bytes()], &[]);
            assert_eq!(route(&mut g, &again), slot, "same key, same task");
            hit[slot[0] as usize] += 1;
        }
        assert!(hit.iter().all(|&n| n > 0), "40 keys over 4 tasks: {hit:?}");
    }

    #[test]
    fn all_lowest_and_direct() {
        let t = encoded(&[b"\x04x"], &[7, 3, 99, 7]);
        assert_eq!(
            route(&mut Grouping::All { slots: vec![1, 4] }, &t),
            vec![1, 4]
        );
        assert_eq!(route(&mut Grouping::Lowest { slot: 6 }, &t), vec![6]);
        let mut d = Grouping::Direct {
            tasks: vec![3, 5, 7],
            slots: vec![10, 11, 12],
        };
        // 99 is not this consumer's task; 7 twice stays twice
        assert_eq!(route(&mut d, &t), vec![12, 10, 12]);
        assert!(route(&mut d, &encoded(&[], &[])).is_empty());
    }
}
