//! The packer's input: components, their parallelism, the container count and resources.

use crate::config::{self, keys};
use crate::{PackingError, ResourceConfig};
use heron_proto::api::Topology;
use std::collections::{BTreeSet, HashMap};

/// One component to pack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComponentRequest {
    /// The component's name.
    pub name: String,
    /// How many instances it gets.
    pub parallelism: u32,
}

/// Everything round-robin packing needs, read from a topology by
/// [`PackingRequest::from_topology`] and adjustable before [`pack`](crate::pack).
#[derive(Clone, Debug, PartialEq)]
pub struct PackingRequest {
    /// The components, spouts first, in the topology's order.
    pub components: Vec<ComponentRequest>,
    /// The number of containers (`topology.stmgrs`).
    pub containers: u32,
    /// Resource overrides, padding and explicit container sizes.
    pub resources: ResourceConfig,
}

impl PackingRequest {
    /// Reads `topology.stmgrs` (default 1), every component's `topology.component.parallelism`
    /// (default 1) and the resource keys.
    pub fn from_topology(topology: &Topology) -> Result<PackingRequest, PackingError> {
        let tconf = topology.topology_config.as_ref();
        let containers = match config::get_i64(tconf, keys::STMGRS)? {
            None => 1,
            Some(n) if n < 1 => return Err(PackingError::TooFewContainers { containers: n }),
            Some(n) => u32::try_from(n).map_err(|_| PackingError::BadConfig {
                key: keys::STMGRS.to_string(),
                value: n.to_string(),
                reason: "too many containers".to_string(),
            })?,
        };
        let comps = topology
            .spouts
            .iter()
            .map(|s| &s.comp)
            .chain(topology.bolts.iter().map(|b| &b.comp));
        let mut seen = BTreeSet::new();
        let mut components = Vec::new();
        for comp in comps {
            if !seen.insert(comp.name.as_str()) {
                return Err(PackingError::DuplicateComponent(comp.name.clone()));
            }
            let parallelism =
                match config::get_i64(Some(&comp.config), keys::COMPONENT_PARALLELISM)? {
                    None => 1,
                    Some(p) => u32::try_from(p).ok().filter(|p| *p >= 1).ok_or_else(|| {
                        PackingError::InvalidParallelism {
                            component: comp.name.clone(),
                            parallelism: p,
                        }
                    })?,
                };
            components.push(ComponentRequest {
                name: comp.name.clone(),
                parallelism,
            });
        }
        Ok(PackingRequest {
            components,
            containers,
            resources: ResourceConfig::from_config(tconf)?,
        })
    }

    /// Sets the parallelism of the named components; naming an unknown component is an error.
    pub fn with_parallelism(
        mut self,
        parallelism: &HashMap<String, u32>,
    ) -> Result<PackingRequest, PackingError> {
        // Sorted, so the first unknown name reported is deterministic.
        let mut changes: Vec<_> = parallelism.iter().collect();
        changes.sort();
        for (name, p) in changes {
            let comp = self
                .components
                .iter_mut()
                .find(|c| &c.name == name)
                .ok_or_else(|| PackingError::UnknownComponent(name.clone()))?;
            comp.parallelism = *p;
        }
        Ok(self)
    }

    /// The total number of instances.
    pub fn total_instances(&self) -> u64 {
        self.components
            .iter()
            .map(|c| u64::from(c.parallelism))
            .sum()
    }
}
