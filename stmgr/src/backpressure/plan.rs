//! What back pressure needs of the physical plan: the mode (Heron's topology-wide or our
//! selective one, [`SELECTIVE_KEY`]), the watermarks, which tasks are spouts, which spouts
//! reach which component; and which local spout connections it paused.
//!
//! With [`SELECTIVE_KEY`] set to `true`, a stream manager names the components it is slow
//! for (the component of a slow instance, or every component of a slow peer stream manager)
//! in the notice's `message_id` (`heron-rs-selective:<c1>,<c2>`), and only the spouts upstream
//! of a slow component stop. A notice without that form (from Heron) stops every spout.

use super::{ALL, DEFAULT_DRAIN_TIME, DEFAULT_HIGH_WATERMARK, DEFAULT_LOW_WATERMARK};
use crate::ids::ConnId;
use heron_proto::system::PhysicalPlan;
use std::collections::{HashMap, HashSet};
use std::time::Duration;

const HIGH_KEY: &str = "heron.streammgr.network.backpressure.highwatermark.mb";
const LOW_KEY: &str = "heron.streammgr.network.backpressure.lowwatermark.mb";
/// Our topology config key for the drain time of watermarks in time, in milliseconds
/// (fractions allowed; 0: byte watermarks only). See [`super::drain`].
pub(crate) const DRAIN_KEY: &str = "heron-rs.backpressure.drain.ms";
/// Our topology config key for selective back pressure (`true` / `false`, default false).
pub(crate) const SELECTIVE_KEY: &str = "heron-rs.backpressure.selective";
/// How a selective notice's `message_id` starts.
const SELECTIVE_PREFIX: &str = "heron-rs-selective:";

fn config_value<'a>(pplan: &'a PhysicalPlan, key: &str) -> Option<&'a str> {
    pplan
        .topology
        .topology_config
        .as_ref()?
        .kvs
        .iter()
        .rev()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_deref())
        .map(str::trim)
}

/// The number the plan's topology config gives `key`, if it is one that `ok` accepts; a value
/// that is not is logged and ignored.
fn config_number(pplan: &PhysicalPlan, key: &str, ok: fn(f64) -> bool) -> Option<f64> {
    let v = config_value(pplan, key)?;
    match v.parse::<f64>() {
        Ok(n) if n.is_finite() && ok(n) => Some(n),
        _ => {
            tracing::warn!("ignoring {key}={v:?}: not a number in range; using our default");
            None
        }
    }
}

/// The watermarks in bytes: the plan's topology config may override Heron's defaults (in MB,
/// fractions allowed, > 0).
pub(crate) fn watermarks(pplan: &PhysicalPlan) -> (usize, usize) {
    let mb =
        |key: &str| config_number(pplan, key, |v| v > 0.0).map(|v| (v * 1024.0 * 1024.0) as usize);
    (
        mb(HIGH_KEY).unwrap_or(DEFAULT_HIGH_WATERMARK),
        mb(LOW_KEY).unwrap_or(DEFAULT_LOW_WATERMARK),
    )
}

/// The drain time of the plan's topology config ([`DRAIN_KEY`], milliseconds ≥ 0), or our
/// default.
pub(crate) fn drain_time(pplan: &PhysicalPlan) -> Duration {
    config_number(pplan, DRAIN_KEY, |ms| ms >= 0.0).map_or(DEFAULT_DRAIN_TIME, |ms| {
        Duration::from_secs_f64(ms / 1000.0)
    })
}

/// What back pressure needs to know of the plan, and which spout connections it paused.
#[derive(Debug, Default)]
pub(crate) struct PressurePlan {
    selective: bool,
    /// task -> component, every task.
    components: HashMap<i32, String>,
    /// spout task -> its component.
    spouts: HashMap<i32, String>,
    /// stream manager -> the components it runs.
    stmgr_components: HashMap<String, Vec<String>>,
    /// component -> the spouts it is reachable from (a spout reaches itself).
    upstream: HashMap<String, Vec<String>>,
    /// Spout connections whose reads are paused.
    paused: HashSet<ConnId>,
}

impl PressurePlan {
    /// What `pplan` says: its mode, spouts, graph and placement; nothing paused.
    pub fn new(pplan: &PhysicalPlan) -> PressurePlan {
        let topology = &pplan.topology;
        let selective =
            config_value(pplan, SELECTIVE_KEY).is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let spout_names: Vec<&str> = topology
            .spouts
            .iter()
            .map(|s| s.comp.name.as_str())
            .collect();
        let mut plan = PressurePlan {
            selective,
            ..PressurePlan::default()
        };
        for i in &pplan.instances {
            let c = &i.info.component_name;
            plan.components.insert(i.info.task_id, c.clone());
            if spout_names.contains(&c.as_str()) {
                plan.spouts.insert(i.info.task_id, c.clone());
            }
            let on = plan.stmgr_components.entry(i.stmgr_id.clone()).or_default();
            if !on.contains(c) {
                on.push(c.clone());
            }
        }
        // downstream edges, then everything each spout reaches
        let mut down: HashMap<&str, Vec<&str>> = HashMap::new();
        for b in &topology.bolts {
            for input in &b.inputs {
                down.entry(input.stream.component_name.as_str())
                    .or_default()
                    .push(b.comp.name.as_str());
            }
        }
        for &spout in &spout_names {
            let mut seen = vec![spout];
            let mut todo = vec![spout];
            while let Some(c) = todo.pop() {
                for &d in down.get(c).map_or(&[][..], Vec::as_slice) {
                    if !seen.contains(&d) {
                        seen.push(d);
                        todo.push(d);
                    }
                }
            }
            for c in seen {
                plan.upstream
                    .entry(c.to_string())
                    .or_default()
                    .push(spout.to_string());
            }
        }
        plan
    }

    /// Whether the spout `component` must stop while the `slow` components are slow.
    pub fn stops(&self, component: &str, slow: &[String]) -> bool {
        if slow.is_empty() {
            return false;
        }
        if !self.selective || slow.iter().any(|c| c == ALL) {
            return true;
        }
        slow.iter().any(|c| {
            self.upstream
                .get(c)
                .is_some_and(|spouts| spouts.iter().any(|s| s == component))
        })
    }

    /// The plan of a new physical plan, keeping which connections are paused.
    pub fn replace(&mut self, pplan: &PhysicalPlan) {
        let paused = std::mem::take(&mut self.paused);
        *self = PressurePlan::new(pplan);
        self.paused = paused;
    }

    /// What a slow connection to the instance of `task` is slow for: its component in
    /// selective mode, else (or if unknown) the whole topology.
    pub fn slow_for_task(&self, task: i32) -> Vec<String> {
        let named = self
            .selective
            .then(|| self.components.get(&task).map(|c| vec![c.clone()]))
            .flatten();
        named.unwrap_or_else(|| vec![ALL.to_string()])
    }

    /// What a slow link to `stmgr` is slow for: every component it runs in selective mode,
    /// else (or if it runs none) the whole topology.
    pub fn slow_for_stmgr(&self, stmgr: &str) -> Vec<String> {
        let named = self
            .selective
            .then(|| self.stmgr_components.get(stmgr).cloned())
            .flatten()
            .filter(|c| !c.is_empty());
        named.unwrap_or_else(|| vec![ALL.to_string()])
    }

    /// Decides whether the spout connection `conn` of `task` is paused while the `slow`
    /// components are slow: `Some(pause)` when that changes, `None` when it stays (or `task`
    /// is no spout).
    pub fn pause(&mut self, conn: ConnId, task: i32, slow: &[String]) -> Option<bool> {
        let component = self.spouts.get(&task)?;
        let stop = self.stops(component, slow);
        if stop == self.paused.contains(&conn) {
            return None;
        }
        if stop {
            self.paused.insert(conn);
        } else {
            self.paused.remove(&conn);
        }
        Some(stop)
    }

    /// A connection closed.
    pub fn forget(&mut self, conn: ConnId) {
        self.paused.remove(&conn);
    }

    /// `true` while some local spout connection is paused.
    pub fn any_paused(&self) -> bool {
        !self.paused.is_empty()
    }

    /// The `message_id` of a Start (`components` non-empty) or Stop notice: the selective
    /// form naming the components, or a random id as Heron sends.
    pub fn notice_id(&self, components: &[String]) -> String {
        if self.selective && !components.is_empty() {
            format!("{SELECTIVE_PREFIX}{}", components.join(","))
        } else {
            format!("{:016x}", rand::random::<u64>())
        }
    }
}

/// The components a StartBackPressure's `message_id` names: its selective list, or the whole
/// topology for any other id (a Heron stream manager's).
pub(crate) fn notice_components(message_id: &str) -> Vec<String> {
    match message_id.strip_prefix(SELECTIVE_PREFIX) {
        Some(list) if !list.is_empty() => list.split(',').map(str::to_string).collect(),
        _ => vec![ALL.to_string()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_name_components_only_in_selective_mode() {
        assert_eq!(notice_components("heron-rs-selective:a,b"), vec!["a", "b"]);
        assert_eq!(notice_components("heron-rs-selective:"), vec![ALL]);
        assert_eq!(notice_components("0123456789abcdef"), vec![ALL]);
        let mut plan = PressurePlan {
            selective: true,
            ..PressurePlan::default()
        };
        let named = plan.notice_id(&["a".into(), "b".into()]);
        assert_eq!(notice_components(&named), vec!["a", "b"]);
        plan.selective = false;
        assert_eq!(plan.notice_id(&["a".into()]).len(), 16);
        assert_eq!(plan.slow_for_task(3), vec![ALL]);
        assert_eq!(plan.slow_for_stmgr("stmgr-2"), vec![ALL]);
    }

    #[test]
    fn a_spout_pauses_once_and_resumes_once() {
        let mut plan = PressurePlan::default();
        plan.spouts.insert(1, "spout".into());
        let all = vec![ALL.to_string()];
        assert_eq!(plan.pause(7, 1, &all), Some(true));
        assert_eq!(plan.pause(7, 1, &all), None);
        assert!(plan.any_paused());
        assert_eq!(plan.pause(7, 2, &all), None, "task 2 is no spout");
        assert_eq!(plan.pause(7, 1, &[]), Some(false));
        assert!(!plan.any_paused());
        plan.pause(7, 1, &all);
        plan.forget(7);
        assert!(!plan.any_paused());
    }
}
