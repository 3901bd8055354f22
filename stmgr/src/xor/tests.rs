use super::*;
use proptest::prelude::*;

const T: i32 = 1;

fn tracker(now: Instant) -> XorTracker {
    XorTracker::new(&[T, 2], Duration::from_secs(3), DEFAULT_NBUCKETS, now)
}

/// What reaches the spout's stream manager for one tuple tree.
#[derive(Debug, Clone)]
enum Ev {
    /// A tuple (key) was emitted to a destination: an `emits` entry (or the spout's own XOR).
    Emit(i64),
    /// A tuple (key) was acked by the bolt that got it.
    Ack(i64),
}

/// A random tree: the spout tuple goes to `fanout[0]` destinations, every tuple of depth d
/// makes `fanout[d]` children. Keys come from `seed` (a simple LCG, non-zero, distinct).
fn tree(fanout: &[usize], seed: u64) -> (Vec<i64>, Vec<(Vec<i64>, i64)>) {
    let mut s = seed | 1;
    let mut next = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let k = (s ^ (s >> 29)) as i64;
        if k == 0 {
            1
        } else {
            k
        }
    };
    // (children keys emitted while processing it, own key) per bolt tuple
    let mut tuples = Vec::new();
    let roots: Vec<i64> = (0..fanout[0]).map(|_| next()).collect();
    let mut level = roots.clone();
    for &f in &fanout[1..] {
        let mut next_level = Vec::new();
        for &k in &level {
            let children: Vec<i64> = (0..f).map(|_| next()).collect();
            next_level.extend(&children);
            tuples.push((children, k));
        }
        level = next_level;
    }
    for &k in &level {
        tuples.push((Vec::new(), k));
    }
    (roots, tuples)
}

proptest! {
    /// Any interleaving of the tree's events (each bolt's emits before its own ack, as a
    /// bolt's control set is processed; across bolts in any order) completes the tree exactly
    /// at its last event.
    #[test]
    fn random_trees_complete_exactly_when_everything_is_acked(
        fanout in proptest::collection::vec(1usize..4, 1..4),
        seed in any::<u64>(),
        order in proptest::collection::vec(any::<u32>(), 64),
        split in any::<bool>(),
    ) {
        let (first, tuples) = tree(&fanout, seed);
        // The events of each bolt tuple: its children's emits, then its ack. With `split`,
        // each emit and the ack are separate events that still keep that relative order.
        let mut queues: Vec<Vec<Ev>> = tuples
            .iter()
            .map(|(children, own)| {
                let mut q: Vec<Ev> = children.iter().map(|&c| Ev::Emit(c)).collect();
                q.push(Ev::Ack(*own));
                q
            })
            .collect();
        if !split {
            // one event per bolt tuple: merge emits into one XOR (what the stmgr sends)
            for q in &mut queues {
                let x = q.iter().fold(0i64, |a, e| match e { Ev::Emit(k) => a ^ k, _ => a });
                let ack = q.pop().unwrap();
                q.clear();
                if x != 0 { q.push(Ev::Emit(x)); }
                q.push(ack);
            }
        }
        let total: usize = queues.iter().map(Vec::len).sum();
        let now = Instant::now();
        let mut t = tracker(now);
        let root = 77;
        let spout_xor = first.iter().fold(0i64, |a, k| a ^ k);
        prop_assume!(spout_xor != 0);
        prop_assert!(!t.emit(T, root, spout_xor), "the spout's emit creates the entry");
        let mut done = 0;
        let mut completed_at = None;
        let mut i = 0;
        while done < total {
            let live: Vec<usize> = (0..queues.len()).filter(|&q| !queues[q].is_empty()).collect();
            let pick = live[order[i % order.len()] as usize % live.len()];
            i += 1;
            let ev = queues[pick].remove(0);
            done += 1;
            let completed = match ev {
                Ev::Emit(k) => t.emit(T, root, k),
                Ev::Ack(k) => t.ack(T, root, k),
            };
            if completed {
                prop_assert!(completed_at.is_none(), "completed twice");
                completed_at = Some(done);
            }
        }
        prop_assert_eq!(completed_at, Some(total), "completes at the last event only");
        prop_assert_eq!(t.len(), 0);
    }

    /// Independent trees do not disturb each other, and an unknown root is never completed.
    #[test]
    fn trees_are_independent(keys in proptest::collection::vec(1i64..i64::MAX, 1..50)) {
        let mut t = tracker(Instant::now());
        for (root, &k) in keys.iter().enumerate() {
            t.emit(T, root as i64, k);
        }
        prop_assert!(!t.ack(T, -1, keys[0]), "unknown root");
        prop_assert!(!t.ack(2, 0, keys[0]), "other task");
        for (root, &k) in keys.iter().enumerate().rev() {
            prop_assert!(t.ack(T, root as i64, k));
        }
        prop_assert_eq!(t.len(), 0);
    }
}

#[test]
fn fail_forgets_the_tree_once() {
    let mut t = tracker(Instant::now());
    t.emit(T, 5, 0x55);
    assert!(t.fail(T, 5));
    assert!(!t.fail(T, 5), "already gone");
    assert!(!t.ack(T, 5, 0x55), "acks after a fail are ignored");
    assert!(!t.fail(9, 5), "untracked task");
}

#[test]
fn rotation_expires_entries_after_nbuckets_rotations() {
    let mut m = RotatingMap::new(3);
    m.anchor(1, 10);
    assert_eq!(m.rotate(), 0);
    m.anchor(2, 20);
    assert_eq!(m.rotate(), 0);
    m.anchor(1, 1); // XOR into the entry where it is, not a new one
    assert_eq!(m.get(1), Some(11));
    assert_eq!(m.len(), 2);
    assert_eq!(m.rotate(), 1, "key 1 was in the oldest bucket");
    assert_eq!(m.get(1), None);
    assert!(!m.ack(1, 11), "expired");
    assert_eq!(m.rotate(), 1, "then key 2");
    assert_eq!(m.len(), 0);
}

#[test]
fn acks_reach_entries_in_older_buckets() {
    let mut m = RotatingMap::new(3);
    m.anchor(1, 0b101);
    m.rotate();
    m.rotate();
    assert!(!m.ack(1, 0b001));
    assert!(m.ack(1, 0b100));
    assert_eq!(m.len(), 0);
}

#[test]
fn the_tracker_rotates_on_schedule() {
    let t0 = Instant::now();
    let mut t = tracker(t0); // timeout 3 s, 3 buckets: first rotation at 3 s, then every 1 s
    t.emit(T, 1, 7);
    assert_eq!(t.deadline(), t0 + Duration::from_secs(3));
    t.on_time(t0 + Duration::from_millis(2999));
    assert_eq!(t.len(), 1);
    t.on_time(t0 + Duration::from_secs(3)); // rotation 1
    t.emit(T, 2, 9);
    t.on_time(t0 + Duration::from_secs(4)); // 2
    assert_eq!(t.len(), 2);
    t.on_time(t0 + Duration::from_secs(5)); // 3: root 1 goes
    assert_eq!(t.len(), 1);
    assert_eq!(t.expired, 1);
    // a long pause catches up on every rotation it missed
    t.on_time(t0 + Duration::from_secs(60));
    assert_eq!(t.len(), 0);
    assert_eq!(t.deadline(), t0 + Duration::from_secs(61));
}

#[test]
fn set_tasks_keeps_known_trees() {
    let mut t = tracker(Instant::now());
    t.emit(T, 1, 7);
    t.emit(2, 1, 7);
    t.set_tasks(&[T, 3]);
    assert!(t.tracks(T) && t.tracks(3) && !t.tracks(2));
    assert_eq!(t.len(), 1);
    assert!(t.ack(T, 1, 7));
}
