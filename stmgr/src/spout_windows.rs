//! When a stream manager hands a local spout task the trees that completed.
//!
//! A spout that filled its `topology.max.spout.pending` window does not call `next_tuple`
//! again until a worthwhile part of the window is free, or until
//! [`REFILL_WAIT`](heron_flow::refill::REFILL_WAIT) after a slot freed
//! ([`heron_flow::refill`]). Acks that reach it before then wake it for nothing: it reads
//! them, runs their `ack` callbacks and goes back to sleep. With Heron's default window of 100
//! the trees of a window complete over two or three rounds of its stream manager (the counts
//! of two containers ack at different times), so a held spout used to wake two or three times
//! per window, and every wake-up is a context switch on a CPU the topology's other processes
//! need.
//!
//! So the stream manager, which tracks the spout's trees, applies the spout's own refill rule
//! to the acks it holds for it: while the spout's window is full (its trees in flight here
//! plus the acks held for it reach the window), the acks are kept until handing them over
//! would let the spout emit, and at most [`REFILL_WAIT`](heron_flow::refill::REFILL_WAIT) after
//! the first of them could have gone. A spout whose window is not full (a rate-limited source,
//! an unlimited window, or a spout that fills it slowly) gets its acks at the end of the round,
//! as before. Fails are held the same way: they free slots as acks do.
//!
//! ```text
//! open --(nothing held, trees in flight >= window)--> held
//! held --(trees in flight <= window - refill slots, or REFILL_WAIT after an ack was kept)--> open
//! ```

use heron_flow::refill::Refill;
use heron_proto::keys::KeyBuildHasher;
use heron_proto::system::PhysicalPlan;
use std::collections::HashMap;
use std::time::Instant;

/// `topology.max.spout.pending`, and Heron's default for it.
const MAX_SPOUT_PENDING: &str = "topology.max.spout.pending";
const DEFAULT_MAX_SPOUT_PENDING: usize = 100;

/// The windows of the local spout tasks of an `ATLEAST_ONCE` topology: for each, the
/// [`Refill`] rule of its spout, driven by what the stream manager sees.
#[derive(Debug, Default)]
pub(crate) struct SpoutWindows {
    tasks: HashMap<i32, Refill, KeyBuildHasher>,
}

/// [`Refill::may_emit`] for the acks held for a spout while `in_flight` of its trees are
/// tracked. The tracker may hold more trees than the window: trees the spout already timed out
/// and failed, or those of its previous instance, stay until they rotate out. Such a window
/// counts as one slot short of full, so the acks held go after the refill wait at the latest and
/// are never kept until those trees expire.
fn may_emit(refill: &mut Refill, in_flight: usize, now: Instant) -> bool {
    let short_of_full = refill.window().saturating_sub(1);
    refill.may_emit(in_flight.min(short_of_full), now)
}

impl SpoutWindows {
    /// The windows of `local` spout tasks of `pplan` (a task whose component is not a spout of
    /// the plan gets none: its acks are never held).
    pub fn for_plan(pplan: &PhysicalPlan, local: &[i32]) -> SpoutWindows {
        let mut tasks = HashMap::default();
        for i in pplan
            .instances
            .iter()
            .filter(|i| local.contains(&i.info.task_id))
        {
            if let Some(window) = max_spout_pending(pplan, &i.info.component_name) {
                tasks.insert(i.info.task_id, Refill::new(window));
            }
        }
        SpoutWindows { tasks }
    }

    /// The end of a round at `now`: `state(task)` gives each spout task's trees in flight
    /// here and the acks and fails held for it. With none held, what is in flight is what the
    /// spout counts, so a full window holds the spout; with some held, `true` if its spout
    /// would emit on them (see [`release`](Self::release)).
    pub fn end_round(
        &mut self,
        now: Instant,
        mut state: impl FnMut(i32) -> (usize, usize),
    ) -> bool {
        let mut due = false;
        for (&task, w) in &mut self.tasks {
            match state(task) {
                (in_flight, 0) => w.after_round(in_flight),
                (in_flight, _) => due |= may_emit(w, in_flight, now),
            }
        }
        due
    }

    /// Whether the acks held for `task`, whose trees in flight here are `in_flight`, are to be
    /// handed over at `now`: `true` unless its spout is held and would not emit yet.
    pub fn release(&mut self, task: i32, in_flight: usize, now: Instant) -> bool {
        self.tasks
            .get_mut(&task)
            .is_none_or(|w| may_emit(w, in_flight, now))
    }

    /// When acks kept for a held spout are due anyway, the earliest over the tasks.
    pub fn deadline(&self) -> Option<Instant> {
        self.tasks.values().filter_map(Refill::deadline).min()
    }
}

/// The window of the spout `component` of `pplan`: its `topology.max.spout.pending` (the
/// component's configuration over the topology's, Heron's 100 when absent or not a whole
/// number), as the instance reads it; `usize::MAX` for 0 (no limit), `None` if `component` is
/// not a spout of the plan.
fn max_spout_pending(pplan: &PhysicalPlan, component: &str) -> Option<usize> {
    let spout = pplan
        .topology
        .spouts
        .iter()
        .find(|s| s.comp.name == component)?;
    let n = heron_proto::kv_value(&spout.comp.config, MAX_SPOUT_PENDING)
        .or_else(|| heron_proto::config_value(&pplan.topology, MAX_SPOUT_PENDING))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(DEFAULT_MAX_SPOUT_PENDING, |n| {
            usize::try_from(n).unwrap_or(usize::MAX)
        });
    Some(if n == 0 { usize::MAX } else { n })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::two_spouts_one_bolt;
    use heron_flow::refill::REFILL_WAIT;
    use heron_proto::api;

    fn plan(config: &[(&str, &str)]) -> PhysicalPlan {
        two_spouts_one_bolt(api::Grouping::Shuffle, config)
    }

    #[test]
    fn acks_for_a_held_spout_wait_for_its_whole_window_or_the_refill_wait() {
        let t0 = Instant::now();
        let mut w = SpoutWindows::for_plan(&plan(&[]), &[1, 3]);
        assert_eq!(w.tasks.len(), 1, "only the spout has a window");
        // the spout emitted 100 trees: its window (Heron's default) is full
        assert!(!w.end_round(t0, |_| (100, 0)));
        // 60 of them complete: for 60 free slots of 100 the spout would not emit yet
        assert!(!w.end_round(t0, |_| (40, 60)));
        assert!(!w.release(1, 40, t0), "kept: the spout would not emit");
        assert_eq!(w.deadline(), Some(t0 + REFILL_WAIT));
        assert!(!w.release(1, 10, t0 + REFILL_WAIT / 2));
        assert!(
            w.end_round(t0 + REFILL_WAIT / 2, |_| (0, 100)),
            "the whole window"
        );
        assert!(w.release(1, 0, t0 + REFILL_WAIT / 2));
        assert_eq!(w.deadline(), None);
        // the next window fills; its acks go after the refill wait even if trees are lost
        w.end_round(t0, |_| (100, 0));
        assert!(!w.release(1, 99, t0 + REFILL_WAIT));
        assert_eq!(w.deadline(), Some(t0 + REFILL_WAIT * 2));
        assert!(w.end_round(t0 + REFILL_WAIT * 2, |_| (99, 1)));
        assert!(w.release(1, 99, t0 + REFILL_WAIT * 2));
        // more trees tracked than the window (timed out at the spout, not rotated out yet):
        // the acks held still go after the refill wait
        w.end_round(t0, |_| (150, 0));
        assert!(!w.end_round(t0, |_| (149, 1)));
        assert!(!w.release(1, 149, t0 + REFILL_WAIT / 2));
        assert!(w.end_round(t0 + REFILL_WAIT, |_| (149, 1)));
        assert!(w.release(1, 149, t0 + REFILL_WAIT));
        // not full: acks go at once; a task without a window too
        w.end_round(t0, |_| (99, 0));
        assert!(w.release(1, 98, t0));
        assert!(w.release(3, 5, t0) && w.release(7, 5, t0));
    }

    #[test]
    fn the_window_is_the_spouts_configuration_over_the_topologys() {
        let p = plan(&[("topology.max.spout.pending", "1000")]);
        let mut w = SpoutWindows::for_plan(&p, &[1]);
        let t0 = Instant::now();
        w.end_round(t0, |_| (1000, 0));
        assert!(!w.release(1, 751, t0), "a quarter of a large window");
        assert!(w.release(1, 750, t0));
        let mut p = plan(&[("topology.max.spout.pending", "1000")]);
        let spout = &mut p.topology.spouts[0].comp.config.kvs;
        spout.push(heron_testkit::plan::kv(MAX_SPOUT_PENDING, "10"));
        assert_eq!(max_spout_pending(&p, "spout"), Some(10));
        assert_eq!(max_spout_pending(&p, "bolt"), None);
        let unlimited = plan(&[("topology.max.spout.pending", "0")]);
        assert_eq!(max_spout_pending(&unlimited, "spout"), Some(usize::MAX));
        let bad = plan(&[("topology.max.spout.pending", "many")]);
        assert_eq!(max_spout_pending(&bad, "spout"), Some(100));
        // an unlimited window never holds its spout
        let mut w = SpoutWindows::for_plan(&unlimited, &[1]);
        w.end_round(t0, |_| (1_000_000, 0));
        assert!(w.release(1, 999_999, t0));
    }
}
