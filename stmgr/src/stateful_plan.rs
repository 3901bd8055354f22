//! What checkpointing needs of a physical plan: for each local task, the tasks downstream of
//! it (its checkpoint markers go to every one of them) and the tasks upstream of it (it is
//! aligned once markers came from every one); the local spouts (they take the tmaster's
//! marker first); the local instances' records (for the checkpoint manager); where every task
//! runs. Pure and synchronous.

use heron_proto::system::{Instance, PhysicalPlan};
use std::collections::{BTreeSet, HashMap};

/// The checkpoint graph of one plan, seen from one stream manager.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct StatefulPlan {
    /// Local task → every task of every component consuming any of its component's streams.
    pub downstreams: HashMap<i32, Vec<i32>>,
    /// Local task → every task of every component whose streams it consumes.
    pub upstreams: HashMap<i32, Vec<i32>>,
    /// The local spout tasks.
    pub local_spouts: Vec<i32>,
    /// The local instances, by task id.
    pub local: HashMap<i32, Instance>,
    /// Every task's stream manager.
    pub stmgr_of: HashMap<i32, String>,
}

impl StatefulPlan {
    /// The graph of `pplan` for the stream manager `my_stmgr`.
    pub fn new(pplan: &PhysicalPlan, my_stmgr: &str) -> StatefulPlan {
        let mut tasks_of: HashMap<&str, Vec<i32>> = HashMap::new();
        let mut plan = StatefulPlan::default();
        for i in &pplan.instances {
            tasks_of
                .entry(i.info.component_name.as_str())
                .or_default()
                .push(i.info.task_id);
            plan.stmgr_of.insert(i.info.task_id, i.stmgr_id.clone());
            if i.stmgr_id == my_stmgr {
                plan.local.insert(i.info.task_id, i.clone());
            }
        }
        // component → the components it consumes from, and the reverse
        let mut consumes: HashMap<&str, BTreeSet<&str>> = HashMap::new();
        let mut consumed_by: HashMap<&str, BTreeSet<&str>> = HashMap::new();
        for bolt in &pplan.topology.bolts {
            for input in &bolt.inputs {
                let producer = input.stream.component_name.as_str();
                consumes
                    .entry(bolt.comp.name.as_str())
                    .or_default()
                    .insert(producer);
                consumed_by
                    .entry(producer)
                    .or_default()
                    .insert(bolt.comp.name.as_str());
            }
        }
        let tasks = |components: Option<&BTreeSet<&str>>| -> Vec<i32> {
            let mut v: Vec<i32> = components
                .into_iter()
                .flatten()
                .flat_map(|c| tasks_of.get(c).into_iter().flatten().copied())
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let spouts: BTreeSet<&str> = pplan
            .topology
            .spouts
            .iter()
            .map(|s| s.comp.name.as_str())
            .collect();
        for (task, instance) in &plan.local {
            let component = instance.info.component_name.as_str();
            plan.downstreams
                .insert(*task, tasks(consumed_by.get(component)));
            plan.upstreams.insert(*task, tasks(consumes.get(component)));
            if spouts.contains(component) {
                plan.local_spouts.push(*task);
            }
        }
        plan.local_spouts.sort_unstable();
        plan
    }

    /// The local task ids, ascending.
    pub fn local_tasks(&self) -> Vec<i32> {
        let mut v: Vec<i32> = self.local.keys().copied().collect();
        v.sort_unstable();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heron_proto::api::Grouping;
    use heron_testkit::plan::{input, output, PlanBuilder, TopologyBuilder};

    #[test]
    fn spout_split_count_graph_seen_from_one_container() {
        // spout (tasks 1, 2) → split (3, 4) → count (5); container 1 holds 1, 3, 5
        let topology = TopologyBuilder::new("t-1", "t")
            .spout("spout", vec![output("spout", "default", &["line"])])
            .bolt(
                "split",
                vec![input("spout", "default", Grouping::Shuffle)],
                vec![output("split", "default", &["word"])],
            )
            .bolt(
                "count",
                vec![input("split", "default", Grouping::Shuffle)],
                vec![],
            )
            .build();
        let plan = PlanBuilder::new(topology)
            .stmgr("stmgr-1", 1)
            .stmgr("stmgr-2", 2)
            .instance("stmgr-1", "spout", 1)
            .instance("stmgr-2", "spout", 2)
            .instance("stmgr-1", "split", 3)
            .instance("stmgr-2", "split", 4)
            .instance("stmgr-1", "count", 5)
            .build();
        let g = StatefulPlan::new(&plan, "stmgr-1");
        assert_eq!(g.local_tasks(), vec![1, 3, 5]);
        assert_eq!(g.local_spouts, vec![1]);
        assert_eq!(g.downstreams[&1], vec![3, 4]);
        assert_eq!(g.downstreams[&3], vec![5]);
        assert!(g.downstreams[&5].is_empty());
        assert!(g.upstreams[&1].is_empty());
        assert_eq!(g.upstreams[&3], vec![1, 2]);
        assert_eq!(g.upstreams[&5], vec![3, 4]);
        assert_eq!(g.stmgr_of[&4], "stmgr-2");
    }
}
