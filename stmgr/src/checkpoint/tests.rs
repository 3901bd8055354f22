use super::*;
use std::collections::HashSet;

/// The destination task of the single-destination tests.
const D: i32 = 5;
/// The size of every test set.
const SET_BYTES: usize = 10;

/// An input of the gateway for destination [`D`]: a set (identified by its source and its
/// sequence number there, carried as the tuple count) or a marker.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ev {
    Set { src: i32, seq: u64 },
    Marker(i32),
}

fn set(src: i32, seq: u64) -> Release {
    Release::Set {
        src_task: src,
        set: Bytes::from(vec![src as u8; SET_BYTES]),
        tuples: seq,
    }
}

fn ckpt(id: &str) -> Release {
    Release::Checkpoint(id.to_string())
}

fn gateway(limit: usize, plan: &[(i32, &[i32])]) -> Gateway {
    let mut gw = Gateway::new(limit);
    gw.set_upstreams(plan.iter().map(|(d, ups)| (*d, ups.to_vec())).collect());
    gw
}

fn admit(gw: &mut Gateway, dest: i32, src: i32, seq: u64) -> Vec<Release> {
    let mut out = Vec::new();
    gw.admit(
        dest,
        src,
        Bytes::from(vec![src as u8; SET_BYTES]),
        seq,
        &mut out,
    );
    out
}

fn marker(gw: &mut Gateway, dest: i32, src: i32, id: &str) -> Vec<Release> {
    let mut out = Vec::new();
    gw.on_marker(dest, src, id, &mut out);
    out
}

/// Feeds `evs` (markers for checkpoint `id`) to `gw` for [`D`]; returns what `D` got.
fn feed(gw: &mut Gateway, id: &str, evs: &[Ev]) -> Vec<Release> {
    let mut out = Vec::new();
    for ev in evs {
        match *ev {
            Ev::Set { src, seq } => gw.admit(
                D,
                src,
                Bytes::from(vec![src as u8; SET_BYTES]),
                seq,
                &mut out,
            ),
            Ev::Marker(src) => gw.on_marker(D, src, id, &mut out),
        }
    }
    out
}

/// One upstream's events: `before` sets, its marker, `after` sets.
fn lane(src: i32, before: u64, after: u64) -> Vec<Ev> {
    let sets = |range: std::ops::RangeInclusive<u64>| range.map(move |seq| Ev::Set { src, seq });
    sets(1..=before)
        .chain([Ev::Marker(src)])
        .chain(sets(before + 1..=before + after))
        .collect()
}

/// Calls `f` with every interleaving of `lanes` that keeps each lane's order.
fn interleavings(lanes: &[Vec<Ev>], f: &mut impl FnMut(&[Ev])) {
    fn go(lanes: &[Vec<Ev>], next: &mut [usize], prefix: &mut Vec<Ev>, f: &mut impl FnMut(&[Ev])) {
        let mut any = false;
        for i in 0..lanes.len() {
            if next[i] < lanes[i].len() {
                any = true;
                prefix.push(lanes[i][next[i]]);
                next[i] += 1;
                go(lanes, next, prefix, f);
                next[i] -= 1;
                prefix.pop();
            }
        }
        if !any {
            f(prefix);
        }
    }
    let total = lanes.iter().map(Vec::len).sum();
    go(
        lanes,
        &mut vec![0; lanes.len()],
        &mut Vec::with_capacity(total),
        f,
    );
}

/// The multinomial coefficient: how many interleavings `lanes` has.
fn count_interleavings(lanes: &[Vec<Ev>]) -> u64 {
    let fact = |n: usize| (1..=n as u64).product::<u64>();
    let total: usize = lanes.iter().map(Vec::len).sum();
    fact(total) / lanes.iter().map(|l| fact(l.len())).product::<u64>()
}

/// The invariant: the sets that came before their own upstream's marker, in arrival order,
/// then the checkpoint, then the sets that came after it, in arrival order.
fn aligned(evs: &[Ev], id: &str) -> Vec<Release> {
    let mut arrived = HashSet::new();
    let (mut before, mut after) = (Vec::new(), Vec::new());
    for ev in evs {
        match *ev {
            Ev::Marker(src) => {
                arrived.insert(src);
            }
            Ev::Set { src, seq } if arrived.contains(&src) => after.push(set(src, seq)),
            Ev::Set { src, seq } => before.push(set(src, seq)),
        }
    }
    before.into_iter().chain([ckpt(id)]).chain(after).collect()
}

/// Every set of `evs` was delivered exactly once, and each upstream's in its order.
fn assert_per_upstream_order(evs: &[Ev], got: &[Release]) {
    let sent: Vec<(i32, u64)> = evs
        .iter()
        .filter_map(|ev| match *ev {
            Ev::Set { src, seq } => Some((src, seq)),
            Ev::Marker(_) => None,
        })
        .collect();
    let delivered: Vec<(i32, u64)> = got
        .iter()
        .filter_map(|r| match r {
            Release::Set {
                src_task, tuples, ..
            } => Some((*src_task, *tuples)),
            Release::Checkpoint(_) => None,
        })
        .collect();
    assert_eq!(delivered.len(), sent.len(), "{evs:?} → {got:?}");
    for src in [1, 2, 3] {
        let of = |v: &[(i32, u64)]| v.iter().filter(|s| s.0 == src).copied().collect::<Vec<_>>();
        assert_eq!(
            of(&delivered),
            of(&sent),
            "upstream {src}: {evs:?} → {got:?}"
        );
    }
}

const THREE: &[(i32, &[i32])] = &[(D, &[1, 2, 3])];

#[test]
fn every_interleaving_of_three_upstreams_delivers_the_checkpoint_between_the_right_sets() {
    // (sets before the marker, sets after it) per upstream 1, 2, 3.
    let shapes: &[[(u64, u64); 3]] = &[
        [(0, 2), (0, 1), (0, 1)], // marker_a, a1, a2 / marker_b, b1 / marker_c, c1
        [(1, 2), (1, 1), (2, 1)],
        [(2, 0), (0, 2), (1, 1)],
        [(3, 0), (0, 3), (0, 0)],
    ];
    let mut gw = gateway(usize::MAX, THREE);
    let mut total = 0;
    for shape in shapes {
        let lanes: Vec<Vec<Ev>> = (1..=3)
            .zip(shape)
            .map(|(src, &(before, after))| lane(src, before, after))
            .collect();
        let mut cases = 0;
        interleavings(&lanes, &mut |evs| {
            cases += 1;
            // A fresh checkpoint id per case: ids only grow, so the gateway is reused as
            // it would be over a run of checkpoints.
            let id = format!("{:08}", total + cases);
            let got = feed(&mut gw, &id, evs);
            assert_eq!(got, aligned(evs, &id), "{evs:?}");
            assert_per_upstream_order(evs, &got);
            assert!(!gw.busy(), "{evs:?}");
            assert_eq!(gw.buffered_bytes(D), 0);
        });
        assert_eq!(cases, count_interleavings(&lanes), "{shape:?}");
        total += cases;
    }
    assert_eq!(total, 210 + 11550 + 1680 + 630);
    let stats = gw.stats();
    assert_eq!(stats.completed, total);
    assert_eq!(
        stats.ignored_markers + stats.forced_drains + stats.superseded,
        0
    );
}

/// The single-destination gateway as a direct model for a limit of `limit` bytes of
/// [`SET_BYTES`]-byte sets: what `D` gets, and whether the checkpoint completed.
fn bounded_model(evs: &[Ev], id: &str, limit: usize) -> (Vec<Release>, bool) {
    let (mut out, mut held) = (Vec::new(), Vec::new());
    let mut arrived = HashSet::new();
    let (mut completed, mut abandoned) = (false, false);
    for ev in evs {
        match *ev {
            Ev::Marker(src) => {
                arrived.insert(src);
                if arrived.len() == 3 && !abandoned {
                    completed = true;
                    out.push(ckpt(id));
                    out.append(&mut held);
                }
            }
            Ev::Set { src, seq } => {
                if completed || abandoned || !arrived.contains(&src) {
                    out.push(set(src, seq));
                } else if (held.len() + 1) * SET_BYTES > limit {
                    abandoned = true;
                    out.append(&mut held);
                    out.push(set(src, seq));
                } else {
                    held.push(set(src, seq));
                }
            }
        }
    }
    (out, completed)
}

#[test]
fn every_interleaving_with_a_small_buffer_completes_or_force_drains_keeping_every_set() {
    let limit = 2 * SET_BYTES; // two sets fit, a third overflows
    let lanes = vec![lane(1, 1, 3), lane(2, 0, 2), lane(3, 1, 1)];
    let mut gw = gateway(limit, THREE);
    let (mut cases, mut completed, mut drained) = (0u64, 0u64, 0u64);
    interleavings(&lanes, &mut |evs| {
        cases += 1;
        let id = format!("{cases:08}");
        let got = feed(&mut gw, &id, evs);
        let (want, done) = bounded_model(evs, &id, limit);
        assert_eq!(got, want, "{evs:?}");
        assert_per_upstream_order(evs, &got);
        if done {
            completed += 1;
            assert_eq!(got, aligned(evs, &id), "{evs:?}");
        } else {
            drained += 1;
            assert!(!got.contains(&ckpt(&id)), "{evs:?}");
        }
        assert!(!gw.busy(), "{evs:?}");
    });
    assert_eq!(cases, count_interleavings(&lanes));
    assert!(completed > 0 && drained > 0, "{completed} {drained}");
    assert_eq!(gw.stats().completed, completed);
    assert_eq!(gw.stats().forced_drains, drained);
}

#[test]
fn a_single_upstream_completes_on_its_first_marker() {
    let mut gw = gateway(usize::MAX, &[(D, &[1])]);
    assert_eq!(admit(&mut gw, D, 1, 1), vec![set(1, 1)]);
    assert_eq!(marker(&mut gw, D, 1, "a"), vec![ckpt("a")]);
    assert!(!gw.busy());
    assert_eq!(admit(&mut gw, D, 1, 2), vec![set(1, 2)]);
    assert_eq!(gw.aligning(D), None);
}

#[test]
fn upstreams_listed_twice_count_once() {
    let mut gw = gateway(usize::MAX, &[(D, &[2, 1, 2, 1])]);
    assert!(marker(&mut gw, D, 1, "a").is_empty());
    assert!(gw.busy());
    assert_eq!(marker(&mut gw, D, 2, "a"), vec![ckpt("a")]);
    assert!(!gw.busy());
}

#[test]
fn a_newer_id_releases_the_older_alignment_and_starts_with_its_sender_arrived() {
    let mut gw = gateway(usize::MAX, &[(D, &[1, 2])]);
    assert!(marker(&mut gw, D, 1, "1-100").is_empty());
    assert!(admit(&mut gw, D, 1, 1).is_empty(), "after its marker: held");
    assert_eq!(
        admit(&mut gw, D, 2, 1),
        vec![set(2, 1)],
        "still pending: passes"
    );
    assert_eq!(gw.buffered_bytes(D), SET_BYTES);

    // Upstream 2 skipped 1-100 (say it was restarted): its 1-200 resets the alignment.
    assert_eq!(marker(&mut gw, D, 2, "1-200"), vec![set(1, 1)]);
    assert_eq!(gw.aligning(D), Some("1-200"));
    assert!(gw.busy());
    assert_eq!(gw.buffered_bytes(D), 0);
    assert!(
        admit(&mut gw, D, 2, 2).is_empty(),
        "2 arrived for 1-200: held"
    );
    assert_eq!(
        admit(&mut gw, D, 1, 2),
        vec![set(1, 2)],
        "1 is pending again"
    );
    assert!(
        marker(&mut gw, D, 2, "1-100").is_empty(),
        "older than current"
    );
    assert!(
        marker(&mut gw, D, 1, "1-100").is_empty(),
        "older than current"
    );
    assert_eq!(gw.aligning(D), Some("1-200"));
    assert_eq!(
        marker(&mut gw, D, 1, "1-200"),
        vec![ckpt("1-200"), set(2, 2)]
    );
    assert!(!gw.busy());
    let stats = gw.stats();
    assert_eq!(
        (stats.superseded, stats.completed, stats.ignored_markers),
        (1, 1, 2)
    );
}

#[test]
fn ids_compare_as_strings() {
    let mut gw = gateway(usize::MAX, &[(D, &[1, 2])]);
    assert!(marker(&mut gw, D, 1, "9").is_empty());
    assert!(marker(&mut gw, D, 2, "10").is_empty(), "\"10\" < \"9\"");
    assert_eq!(gw.aligning(D), Some("9"));
    assert!(
        marker(&mut gw, D, 2, "90").is_empty(),
        "\"90\" > \"9\": resets"
    );
    assert_eq!(gw.aligning(D), Some("90"));
    assert_eq!(marker(&mut gw, D, 1, "90"), vec![ckpt("90")]);
}

#[test]
fn stale_and_duplicate_markers_are_ignored() {
    let mut gw = gateway(usize::MAX, THREE);
    assert!(marker(&mut gw, D, 1, "b").is_empty());
    assert!(admit(&mut gw, D, 1, 1).is_empty());
    assert!(marker(&mut gw, D, 1, "b").is_empty(), "duplicate");
    assert!(marker(&mut gw, D, 2, "a").is_empty(), "older than current");
    assert!(
        admit(&mut gw, D, 1, 2).is_empty(),
        "still held: the duplicate changed nothing"
    );
    assert_eq!(
        admit(&mut gw, D, 2, 1),
        vec![set(2, 1)],
        "the stale marker changed nothing"
    );
    assert!(marker(&mut gw, D, 2, "b").is_empty());
    assert!(marker(&mut gw, D, 2, "b").is_empty(), "duplicate");
    assert_eq!(
        marker(&mut gw, D, 3, "b"),
        vec![ckpt("b"), set(1, 1), set(1, 2)]
    );
    // Completed: neither "b" again nor anything older starts an alignment.
    for (src, id) in [(1, "b"), (3, "b"), (2, "a"), (1, "")] {
        assert!(marker(&mut gw, D, src, id).is_empty(), "{src} {id}");
        assert!(!gw.busy(), "{src} {id}");
    }
    assert_eq!(admit(&mut gw, D, 1, 3), vec![set(1, 3)]);
    assert_eq!(gw.stats().ignored_markers, 7);
    assert_eq!(gw.stats().completed, 1);
}

#[test]
fn markers_for_unknown_destinations_or_from_unknown_sources_are_ignored_and_their_sets_pass() {
    let mut gw = gateway(usize::MAX, &[(D, &[1, 2]), (6, &[1])]);
    assert!(
        marker(&mut gw, 9, 1, "a").is_empty(),
        "dest not in the plan"
    );
    assert!(
        marker(&mut gw, D, 7, "a").is_empty(),
        "src not upstream of D"
    );
    assert!(!gw.busy());
    assert_eq!(admit(&mut gw, 9, 1, 1), vec![set(1, 1)]);
    assert!(marker(&mut gw, D, 1, "a").is_empty());
    assert_eq!(
        admit(&mut gw, D, 7, 1),
        vec![set(7, 1)],
        "not aligned on: passes"
    );
    assert!(
        marker(&mut gw, 6, 2, "a").is_empty(),
        "2 is not upstream of 6"
    );
    assert_eq!(gw.aligning(6), None);
    let stats = gw.stats();
    assert_eq!((stats.ignored_markers, stats.unknown_sets), (3, 2));
    assert_eq!(marker(&mut gw, D, 2, "a"), vec![ckpt("a")]);
}

#[test]
fn destinations_align_independently() {
    let mut gw = gateway(usize::MAX, &[(D, &[1, 2]), (6, &[1, 2])]);
    assert!(marker(&mut gw, D, 1, "a").is_empty());
    assert!(gw.busy());
    assert!(admit(&mut gw, D, 1, 1).is_empty());
    assert_eq!(
        admit(&mut gw, 6, 1, 1),
        vec![set(1, 1)],
        "6 has no marker yet"
    );
    assert!(marker(&mut gw, 6, 2, "a").is_empty());
    assert!(admit(&mut gw, 6, 2, 1).is_empty());
    assert_eq!(marker(&mut gw, D, 2, "a"), vec![ckpt("a"), set(1, 1)]);
    assert!(gw.busy(), "6 still aligns");
    assert_eq!(marker(&mut gw, 6, 1, "a"), vec![ckpt("a"), set(2, 1)]);
    assert!(!gw.busy());
}

#[test]
fn an_overflowing_set_force_drains_and_abandons_the_checkpoint() {
    let mut gw = gateway(2 * SET_BYTES, &[(D, &[1, 2]), (6, &[1, 2])]);
    assert!(marker(&mut gw, D, 1, "x").is_empty());
    assert!(marker(&mut gw, 6, 1, "x").is_empty());
    assert!(admit(&mut gw, D, 1, 1).is_empty());
    assert!(
        admit(&mut gw, D, 1, 2).is_empty(),
        "exactly at the limit: held"
    );
    assert_eq!(gw.buffered_bytes(D), 2 * SET_BYTES);
    assert_eq!(admit(&mut gw, D, 2, 1), vec![set(2, 1)]);
    assert_eq!(
        admit(&mut gw, D, 1, 3),
        vec![set(1, 1), set(1, 2), set(1, 3)],
        "over the limit: everything, in order"
    );
    assert_eq!(gw.aligning(D), None);
    assert_eq!(gw.buffered_bytes(D), 0);
    assert!(gw.busy(), "6 still aligns");
    assert_eq!(gw.stats().forced_drains, 1);
    // D will not get "x": its late markers are ignored and its sets pass.
    assert!(marker(&mut gw, D, 2, "x").is_empty());
    assert!(marker(&mut gw, D, 1, "x").is_empty());
    assert_eq!(admit(&mut gw, D, 1, 4), vec![set(1, 4)]);
    assert_eq!(gw.aligning(D), None);
    // 6 is unaffected, and the next checkpoint aligns D again.
    assert_eq!(marker(&mut gw, 6, 2, "x"), vec![ckpt("x")]);
    assert!(marker(&mut gw, D, 2, "y").is_empty());
    assert!(admit(&mut gw, D, 2, 2).is_empty());
    assert_eq!(marker(&mut gw, D, 1, "y"), vec![ckpt("y"), set(2, 2)]);
    assert!(!gw.busy());
}

#[test]
fn a_zero_limit_force_drains_on_the_first_held_set() {
    let mut gw = gateway(0, &[(D, &[1, 2])]);
    assert!(marker(&mut gw, D, 1, "x").is_empty());
    assert_eq!(admit(&mut gw, D, 2, 1), vec![set(2, 1)]);
    assert_eq!(admit(&mut gw, D, 1, 1), vec![set(1, 1)]);
    assert!(!gw.busy());
    assert!(marker(&mut gw, D, 2, "x").is_empty());
}

#[test]
fn clear_drops_the_buffers_and_all_alignment() {
    let mut gw = gateway(usize::MAX, &[(D, &[1, 2]), (6, &[1, 2])]);
    assert!(marker(&mut gw, 6, 1, "a").is_empty());
    assert_eq!(marker(&mut gw, 6, 2, "a"), vec![ckpt("a")]);
    assert!(marker(&mut gw, D, 1, "b").is_empty());
    assert!(marker(&mut gw, 6, 2, "b").is_empty());
    let mut out = Vec::new();
    gw.admit(D, 1, Bytes::from_static(b"x"), 7, &mut out);
    gw.admit(D, 1, Bytes::from_static(b"y"), 3, &mut out);
    gw.admit(6, 2, Bytes::from_static(b"z"), 5, &mut out);
    assert!(out.is_empty());
    assert_eq!(gw.clear(), 15);
    assert!(!gw.busy());
    assert_eq!((gw.aligning(D), gw.aligning(6)), (None, None));
    assert_eq!(gw.buffered_bytes(D) + gw.buffered_bytes(6), 0);
    assert_eq!(admit(&mut gw, D, 1, 1), vec![set(1, 1)]);
    assert_eq!(gw.clear(), 0);
    // Ids start afresh after a restore: even "a" aligns again.
    assert!(marker(&mut gw, 6, 1, "a").is_empty());
    assert_eq!(marker(&mut gw, 6, 2, "a"), vec![ckpt("a")]);
}

#[test]
fn a_new_plan_resets_alignment_and_abandons_the_checkpoint_in_progress() {
    let mut gw = gateway(usize::MAX, &[(D, &[1, 2]), (6, &[1, 2])]);
    assert!(marker(&mut gw, D, 1, "x").is_empty());
    assert!(admit(&mut gw, D, 1, 1).is_empty());
    assert!(gw.busy());
    gw.set_upstreams(HashMap::from([(D, vec![1, 2, 3]), (8, vec![1])]));
    assert!(!gw.busy());
    assert_eq!(gw.stats().dropped_by_plan, 1);
    assert_eq!(gw.buffered_bytes(D), 0);
    // The late "x" marker does not start an alignment that could never complete.
    assert!(marker(&mut gw, D, 2, "x").is_empty());
    assert!(!gw.busy());
    assert!(marker(&mut gw, D, 1, "y").is_empty());
    assert!(
        marker(&mut gw, D, 2, "y").is_empty(),
        "3 is an upstream now"
    );
    assert_eq!(marker(&mut gw, D, 3, "y"), vec![ckpt("y")]);
    // 6 left the plan; 8 joined it.
    assert!(marker(&mut gw, 6, 1, "y").is_empty());
    assert_eq!(gw.aligning(6), None);
    assert_eq!(marker(&mut gw, 8, 1, "y"), vec![ckpt("y")]);
}

#[test]
fn busy_counts_aligning_destinations_through_resets_and_drains() {
    let mut gw = gateway(SET_BYTES, &[(D, &[1, 2]), (6, &[1, 2])]);
    assert!(!gw.busy());
    assert!(marker(&mut gw, D, 1, "a").is_empty());
    assert!(marker(&mut gw, 6, 1, "a").is_empty());
    assert!(
        marker(&mut gw, D, 1, "b").is_empty(),
        "reset: still one alignment for D"
    );
    assert_eq!(marker(&mut gw, D, 2, "b"), vec![ckpt("b")]);
    assert!(gw.busy());
    assert!(admit(&mut gw, 6, 1, 1).is_empty());
    assert_eq!(admit(&mut gw, 6, 1, 2).len(), 2, "overflow");
    assert!(!gw.busy());
}
