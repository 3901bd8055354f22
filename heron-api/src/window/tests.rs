//! The window machinery against references computed independently (brute force over every
//! window, naive session lists), on seeded synthetic event-time streams: in order, out of
//! order within the lag, late, with gaps (empty windows) and session merges.

use std::collections::{BTreeMap, BTreeSet};

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::*;

/// A synthetic stream: (event time, id) in arrival order. Times mostly increase, some come
/// up to `lag` late, `late_every`-th ones much later than that, and there are quiet gaps.
fn stream(seed: u64, n: usize, lag: i64, late_every: usize) -> Vec<(i64, usize)> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut t = 1_000i64;
    (0..n)
        .map(|i| {
            t += rng.random_range(0..40);
            if rng.random_range(0..50) == 0 {
                t += 500; // a gap: empty windows
            }
            let ts = if late_every > 0 && i % late_every == late_every - 1 {
                t - lag - rng.random_range(1..300)
            } else {
                t - rng.random_range(0..=lag)
            };
            (ts, i)
        })
        .collect()
}

/// The watermark after each record, as a source computes it: max event time so far − lag.
fn watermarks(events: &[(i64, usize)], lag: i64) -> Vec<i64> {
    let mut max = i64::MIN;
    events
        .iter()
        .map(|&(ts, _)| {
            max = max.max(ts);
            max - lag
        })
        .collect()
}

/// A fired window: span, items, new items, expired items (ids, sorted).
type FiredIds = (Span, Vec<usize>, Vec<usize>, Vec<usize>);

/// Closed sessions (key, span, ids) and the late ids.
type Sessions = (Vec<(u8, Span, Vec<usize>)>, BTreeSet<usize>);

#[derive(Debug, PartialEq)]
struct Out {
    /// Fired windows in order.
    windows: Vec<FiredIds>,
    late: BTreeSet<usize>,
}

fn run_aligned(size: i64, slide: i64, events: &[(i64, usize)], wms: &[i64]) -> Out {
    let mut w = AlignedWindows::new(size, slide);
    let mut out = Out {
        windows: Vec::new(),
        late: BTreeSet::new(),
    };
    let mut expired = Vec::new();
    let final_wm = [i64::MAX];
    for (i, &wm) in wms.iter().chain(&final_wm).enumerate() {
        if let Some(&(ts, id)) = events.get(i) {
            if let Inserted::Late(id) = w.insert(ts, id) {
                out.late.insert(id);
            }
        }
        loop {
            let due = w.next_due(wm);
            expired.extend(w.take_expired());
            let Some(span) = due else { break };
            let f = w.fire(span);
            let mut items: Vec<usize> = f.items.iter().map(|x| **x).collect();
            let mut new: Vec<usize> = f.new.iter().map(|x| **x).collect();
            let mut gone = std::mem::take(&mut expired);
            items.sort();
            new.sort();
            gone.sort();
            out.windows.push((span, items, new, gone));
        }
    }
    out
}

/// Brute force: every window `[k·slide, k·slide + size)` closes at the first watermark that
/// reaches its end; a record is in the windows of its time that are still open when it
/// arrives; late when it is in none.
fn reference_aligned(size: i64, slide: i64, events: &[(i64, usize)], wms: &[i64]) -> Out {
    let lo = events.iter().map(|e| e.0).min().unwrap() - size - slide;
    let hi = events.iter().map(|e| e.0).max().unwrap() + size + slide;
    let mut starts = Vec::new();
    let mut s = lo.div_euclid(slide) * slide;
    while s <= hi {
        starts.push(s);
        s += slide;
    }
    // when each window closes: the index of the first watermark reaching its end
    let closes: Vec<usize> = starts
        .iter()
        .map(|&s| {
            wms.iter()
                .position(|&w| w >= s + size)
                .unwrap_or(usize::MAX)
        })
        .collect();
    let mut contents: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    let mut late = BTreeSet::new();
    for (i, &(ts, id)) in events.iter().enumerate() {
        let mut placed = false;
        for (&s, &closed_at) in starts.iter().zip(&closes) {
            // arrival i sees the watermarks up to i − 1
            let open_at_arrival = i == 0 || closed_at >= i;
            if s <= ts && ts < s + size && open_at_arrival {
                contents.entry(s).or_default().push(id);
                placed = true;
            }
        }
        if !placed {
            late.insert(id);
        }
    }
    // fired in end order (= start order); new and expired from the fired sequence
    let fired: Vec<(i64, Vec<usize>)> = contents
        .into_iter()
        .map(|(s, mut v)| {
            v.sort();
            (s, v)
        })
        .collect();
    // the last fired window each item is in
    let mut last_in: BTreeMap<usize, usize> = BTreeMap::new();
    for (k, (_, items)) in fired.iter().enumerate() {
        for &x in items {
            last_in.insert(x, k);
        }
    }
    let mut windows = Vec::new();
    for (k, (s, items)) in fired.iter().enumerate() {
        let prev: BTreeSet<usize> = if k == 0 {
            BTreeSet::new()
        } else {
            fired[k - 1].1.iter().copied().collect()
        };
        let new = items
            .iter()
            .copied()
            .filter(|x| !prev.contains(x))
            .collect();
        // an item expires with the window after the last fired window it is in
        let expired = last_in
            .iter()
            .filter(|(_, &last)| last + 1 == k)
            .map(|(&x, _)| x)
            .collect();
        windows.push((
            Span {
                start: *s,
                end: s + size,
            },
            items.clone(),
            new,
            expired,
        ));
    }
    Out { windows, late }
}

#[test]
fn aligned_windows_match_the_brute_force_reference() {
    for (seed, size, slide, lag, late_every) in [
        (1, 100, 100, 0, 0),  // tumbling, in order
        (2, 100, 100, 30, 0), // tumbling, out of order within the lag
        (3, 100, 25, 30, 7),  // sliding, with late records
        (4, 250, 50, 0, 5),   // sliding, late records with no lag
        (5, 60, 20, 45, 3),   // many late
    ] {
        let events = stream(seed, 600, lag, late_every);
        let wms = watermarks(&events, lag);
        let got = run_aligned(size, slide, &events, &wms);
        let want = reference_aligned(size, slide, &events, &wms);
        assert_eq!(got.late, want.late, "late, seed {seed}");
        assert_eq!(
            got.windows.len(),
            want.windows.len(),
            "windows, seed {seed}"
        );
        for (g, w) in got.windows.iter().zip(&want.windows) {
            assert_eq!(g, w, "seed {seed}");
        }
        if late_every > 0 {
            assert!(
                !got.late.is_empty(),
                "the stream has late records, seed {seed}"
            );
        }
        // gaps leave empty windows out: consecutive fired windows are sometimes apart
        assert!(
            got.windows
                .windows(2)
                .any(|p| p[1].0.start - p[0].0.start > slide),
            "seed {seed}"
        );
    }
}

#[test]
fn tumbling_windows_sum_as_a_group_by_would() {
    // results, not just contents: per-window sums equal a group-by over the on-time records
    let events = stream(9, 2_000, 20, 11);
    let wms = watermarks(&events, 20);
    let got = run_aligned(200, 200, &events, &wms);
    let ts: BTreeMap<usize, i64> = events.iter().map(|&(t, id)| (id, t)).collect();
    let mut by_window: BTreeMap<i64, i64> = BTreeMap::new();
    for &(t, id) in &events {
        if !got.late.contains(&id) {
            *by_window.entry(t.div_euclid(200) * 200).or_default() += id as i64;
        }
    }
    let sums: BTreeMap<i64, i64> = got
        .windows
        .iter()
        .map(|(s, items, _, _)| (s.start, items.iter().map(|id| *id as i64).sum()))
        .collect();
    assert_eq!(sums, by_window);
    for (s, items, _, _) in &got.windows {
        assert!(items.iter().all(|id| (s.start..s.end).contains(&ts[id])));
    }
}

/// Naive sessions: a list of (key, start, end, items), merged by scanning.
fn reference_sessions(gap: i64, events: &[(u8, i64, usize)], wms: &[i64]) -> Sessions {
    let mut open: Vec<(u8, i64, i64, Vec<usize>)> = Vec::new();
    let mut closed = Vec::new();
    let mut late = BTreeSet::new();
    let mut wm = i64::MIN;
    let close = |open: &mut Vec<(u8, i64, i64, Vec<usize>)>, wm: i64, closed: &mut Vec<_>| {
        let mut due: Vec<_> = open.iter().filter(|s| s.2 <= wm).cloned().collect();
        open.retain(|s| s.2 > wm);
        due.sort_by_key(|s| (s.2, s.0, s.1));
        for (k, s, e, mut items) in due {
            items.sort();
            closed.push((k, Span { start: s, end: e }, items));
        }
    };
    for (i, &(key, ts, id)) in events.iter().enumerate() {
        let (mut s, mut e) = (ts, ts + gap);
        let touching: Vec<usize> = (0..open.len())
            .filter(|&j| open[j].0 == key && open[j].1 <= e && open[j].2 >= s)
            .collect();
        if touching.is_empty() && e <= wm {
            late.insert(id);
        } else {
            let mut items = vec![id];
            for &j in touching.iter().rev() {
                let (_, os, oe, oi) = open.remove(j);
                s = s.min(os);
                e = e.max(oe);
                items.extend(oi);
            }
            open.push((key, s, e, items));
        }
        wm = wm.max(wms[i]);
        close(&mut open, wm, &mut closed);
    }
    close(&mut open, i64::MAX, &mut closed);
    (closed, late)
}

#[test]
fn sessions_match_the_naive_reference() {
    for (seed, gap, lag) in [(21, 50, 0), (22, 50, 40), (23, 15, 25), (24, 200, 10)] {
        let mut rng = StdRng::seed_from_u64(seed);
        let base = stream(seed, 800, lag, 9);
        let events: Vec<(u8, i64, usize)> = base
            .iter()
            .map(|&(ts, id)| (rng.random_range(0..4u8), ts, id))
            .collect();
        let ts_only: Vec<(i64, usize)> = events.iter().map(|&(_, t, id)| (t, id)).collect();
        let wms = watermarks(&ts_only, lag);
        let mut w = SessionWindows::new(gap);
        let mut got = Vec::new();
        let mut late = BTreeSet::new();
        for (i, &(key, ts, id)) in events.iter().enumerate() {
            if let Inserted::Late(id) = w.insert(key, ts, id) {
                late.insert(id);
            }
            while let Some((k, span, mut items)) = w.next_due(wms[i]) {
                items.sort();
                got.push((k, span, items));
            }
        }
        while let Some((k, span, mut items)) = w.next_due(i64::MAX) {
            items.sort();
            got.push((k, span, items));
        }
        let (want, want_late) = reference_sessions(gap, &events, &wms);
        assert_eq!(late, want_late, "late, seed {seed}");
        assert_eq!(got, want, "sessions, seed {seed}");
        assert!(
            got.iter().any(|(_, _, items)| items.len() > 1),
            "some sessions merged, seed {seed}"
        );
        assert_eq!(w.open_sessions(), 0);
    }
}

#[test]
fn count_windows_are_the_last_length_tuples_every_slide() {
    for (len, slide) in [(5u64, 5u64), (5, 2), (3, 1), (10, 4)] {
        let mut w = CountWindows::new(Length::Count(len), Length::Count(slide));
        let mut fired = Vec::new();
        let mut seen_expired = Vec::new();
        for i in 0..40usize {
            if w.insert(0, i) {
                let f = w.fire(0);
                fired.push((
                    f.items.iter().map(|x| **x).collect::<Vec<_>>(),
                    f.new.iter().map(|x| **x).collect::<Vec<_>>(),
                ));
                seen_expired.extend(f.expired);
            }
        }
        for (k, (items, new)) in fired.iter().enumerate() {
            let end = (k + 1) * slide as usize;
            let start = end.saturating_sub(len as usize);
            assert_eq!(items, &(start..end).collect::<Vec<_>>(), "{len}/{slide}");
            let prev_end = k * slide as usize;
            let new_start = start.max(prev_end);
            assert_eq!(new, &(new_start..end).collect::<Vec<_>>(), "{len}/{slide}");
        }
        // every tuple that left the window expired exactly once, in order
        let last_start = (fired.len() * slide as usize).saturating_sub(len as usize);
        let want: Vec<usize> = (0..last_start).collect();
        assert_eq!(seen_expired, want, "{len}/{slide}");
    }
}

#[test]
fn time_length_count_slide_and_count_length_time_slide() {
    // the last 100 ms every 3 tuples
    let mut w = CountWindows::new(
        Length::Duration(std::time::Duration::from_millis(100)),
        Length::Count(3),
    );
    for (t, x) in [(0, 'a'), (50, 'b')] {
        assert!(!w.insert(t, x));
    }
    assert!(w.insert(120, 'c'));
    let f = w.fire(120);
    assert_eq!(f.items, vec![&'b', &'c']);
    assert_eq!(f.expired, vec!['a']);
    // the last 2 tuples every 100 ms
    let mut w = CountWindows::new(
        Length::Count(2),
        Length::Duration(std::time::Duration::from_millis(100)),
    );
    for (t, x) in [(0, 'a'), (10, 'b'), (20, 'c')] {
        assert!(!w.insert(t, x));
    }
    assert_eq!(w.next_timer(), Some(100));
    let f = w.fire(100);
    assert_eq!((f.items, f.expired), (vec![&'b', &'c'], vec!['a']));
    assert_eq!(w.next_timer(), Some(200));
}

#[test]
fn window_configurations_are_checked_against_the_topology() {
    use crate::Config;
    use std::time::Duration;
    let secs = |s| Length::Duration(Duration::from_secs(s));
    let mut atleast = Config::new();
    atleast.set("topology.reliability.mode", "ATLEAST_ONCE");
    atleast.set("topology.message.timeout.secs", 30);
    atleast.set("topology.max.spout.pending", 1000);
    assert!(WindowConfig::sliding(secs(20), secs(5))
        .check(&atleast)
        .is_ok());
    let e = WindowConfig::sliding(secs(30), secs(10))
        .check(&atleast)
        .unwrap_err();
    assert!(e.contains("topology.message.timeout.secs = 30"), "{e}");
    let e = WindowConfig::sliding(Length::Count(900), Length::Count(200))
        .check(&atleast)
        .unwrap_err();
    assert!(e.contains("topology.max.spout.pending = 1000"), "{e}");
    // the same windows are fine without acking
    assert!(WindowConfig::sliding(secs(30), secs(10))
        .check(&Config::new())
        .is_ok());
    let e = WindowConfig::sliding(Length::Count(10), Length::Count(2))
        .with_timestamp_field("ts")
        .check(&Config::new())
        .unwrap_err();
    assert!(e.contains("processing time only"), "{e}");
    let e = WindowConfig::sliding(secs(1), secs(2))
        .check(&Config::new())
        .unwrap_err();
    assert!(e.contains("longer than the window"), "{e}");
    let e = WindowConfig::tumbling(Length::Count(0))
        .check(&Config::new())
        .unwrap_err();
    assert!(e.contains("0 tuples"), "{e}");
    // EFFECTIVELY_ONCE checkpoints the windows: no timeout or pending bound applies
    let mut once = Config::new();
    once.set("topology.reliability.mode", "EFFECTIVELY_ONCE");
    once.set(Config::TOPOLOGY_MESSAGE_TIMEOUT_SECS, "1");
    once.set(Config::TOPOLOGY_MAX_SPOUT_PENDING, "1");
    assert_eq!(WindowConfig::tumbling(secs(60)).check(&once), Ok(()));
    assert_eq!(
        WindowConfig::tumbling(Length::Count(100)).check(&once),
        Ok(())
    );
    let e = WindowConfig::session(Duration::from_secs(1), Vec::<String>::new())
        .check(&Config::new())
        .unwrap_err();
    assert!(e.contains("key field"), "{e}");
}
