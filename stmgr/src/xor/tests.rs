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

/// The rotating map as one pass per rotation (the implementation before stale entries): the
/// reference the map must agree with.
#[derive(Default)]
struct Model {
    entries: HashMap<i64, (i64, u64)>,
    generation: u64,
}

impl Model {
    fn anchor(&mut self, key: i64, value: i64) -> bool {
        match self.entries.get_mut(&key) {
            Some((v, _)) => {
                *v ^= value;
                if *v != 0 {
                    return false;
                }
                self.entries.remove(&key);
                true
            }
            None => {
                if value != 0 {
                    self.entries.insert(key, (value, self.generation));
                }
                false
            }
        }
    }

    fn ack(&mut self, key: i64, value: i64) -> bool {
        let Some((v, _)) = self.entries.get_mut(&key) else {
            return false;
        };
        *v ^= value;
        if *v != 0 {
            return false;
        }
        self.entries.remove(&key);
        true
    }

    fn rotate(&mut self, nbuckets: u64) -> usize {
        let before = self.entries.len();
        let oldest = (self.generation + 2).saturating_sub(nbuckets);
        self.entries.retain(|_, (_, g)| *g >= oldest);
        self.generation += 1;
        before - self.entries.len()
    }
}

#[derive(Debug, Clone)]
enum Op {
    Anchor(i64, i64),
    Ack(i64, i64),
    Remove(i64),
    Rotate,
}

fn op() -> impl Strategy<Value = Op> {
    // few keys and values, so that entries meet again after rotations
    let key = 0i64..12;
    let value = 0i64..4;
    prop_oneof![
        4 => (key.clone(), value.clone()).prop_map(|(k, v)| Op::Anchor(k, v)),
        4 => (key.clone(), value).prop_map(|(k, v)| Op::Ack(k, v)),
        1 => key.prop_map(Op::Remove),
        2 => Just(Op::Rotate),
    ]
}

proptest! {
    #[test]
    fn the_map_agrees_with_one_pass_per_rotation(
        nbuckets in 1usize..6,
        ops in prop::collection::vec(op(), 0..200),
    ) {
        let mut m = RotatingMap::new(nbuckets);
        let mut model = Model::default();
        for op in ops {
            match op {
                Op::Anchor(k, v) => prop_assert_eq!(m.anchor(k, v), model.anchor(k, v), "{:?}", op),
                Op::Ack(k, v) => prop_assert_eq!(m.ack(k, v), model.ack(k, v), "{:?}", op),
                Op::Remove(k) => {
                    prop_assert_eq!(m.remove(k), model.entries.remove(&k).is_some(), "{:?}", op)
                }
                Op::Rotate => prop_assert_eq!(m.rotate(), model.rotate(nbuckets as u64)),
            }
            prop_assert_eq!(m.len(), model.entries.len());
            for k in 0..12 {
                prop_assert_eq!(m.get(k), model.entries.get(&k).map(|&(v, _)| v), "key {}", k);
            }
        }
    }
}

#[test]
fn a_rotation_leaves_expired_entries_stale_until_looked_up() {
    let mut m = RotatingMap::new(2);
    m.anchor(1, 10);
    m.anchor(2, 20);
    m.anchor(3, 30);
    assert_eq!((m.rotate(), m.rotate()), (0, 3));
    assert_eq!((m.len(), m.held()), (0, 3), "counted gone, still held");
    assert!(!m.ack(1, 10), "stale: as if absent");
    assert!(!m.remove(2), "stale: as if absent");
    assert_eq!(m.held(), 1, "both lookups dropped theirs");
    assert!(!m.anchor(3, 5), "a stale entry is replaced, not XORed into");
    assert_eq!((m.get(3), m.len(), m.held()), (Some(5), 1, 1));
    assert!(m.ack(3, 5));
}

#[test]
fn stale_entries_are_swept_once_they_outnumber_the_live_ones() {
    let n = SWEEP_MIN as i64 + 10;
    let mut m = RotatingMap::new(3);
    for k in 1..=n {
        m.anchor(k, k);
    }
    for _ in 0..3 {
        m.rotate();
    }
    assert_eq!((m.len(), m.held()), (0, n as usize));
    m.anchor(-1, 1); // an insert checks: 1034 stale > max(1024, 1 live)
    assert_eq!((m.len(), m.held()), (1, 1));

    // with more live entries than stale ones, nothing is swept
    let mut m = RotatingMap::new(3);
    for k in 1..=n {
        m.anchor(k, k); // generation 0
    }
    m.rotate();
    for k in n + 1..=3 * n {
        m.anchor(k, k); // generation 1
    }
    m.rotate();
    m.rotate(); // generation 0 ages out
    m.anchor(-1, 1);
    assert_eq!(
        (m.len(), m.held()),
        (2 * n as usize + 1, 3 * n as usize + 1)
    );
}
