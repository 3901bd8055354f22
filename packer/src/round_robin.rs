//! Heron's RoundRobinPacking.

use crate::{PackingError, PackingRequest, ResourceConfig, MIN_RAM_PER_INSTANCE};
use crate::{DEFAULT_INSTANCE_CPU, DEFAULT_INSTANCE_DISK, DEFAULT_INSTANCE_RAM};
use heron_proto::api::Topology;
use heron_proto::system::{ContainerPlan, InstancePlan, PackingPlan, Resource};
use std::cmp::Reverse;
use std::collections::HashMap;

/// Packs `topology` with Heron's round-robin algorithm; the plan's id is `plan_id` (Heron uses
/// the topology id).
///
/// * N containers, ids 1..=N, from `topology.stmgrs` (default 1); an error if N < 1 or N is
///   larger than the number of instances.
/// * Each component gets `topology.component.parallelism` instances (default 1).
/// * Components are ordered by their `topology.component.rammap` RAM, largest first (unset
///   counts as 0), ties broken by component name. (Heron breaks ties in hash-map order, so
///   its task ids are only stable through the stored plan; ours are deterministic.)
/// * Instances are dealt to containers 1, 2, …, N, 1, … in that order, with global task ids
///   1, 2, 3, … and a component index counting from 0 within each component.
/// * Instance resources: RAM 1 GiB, CPU 1.0, disk 1 GiB unless the component is in
///   `topology.component.rammap|cpumap|diskmap`. With an explicit `topology.container.ram`
///   (or `.cpu`), instances without a map entry share what the container has left after the
///   padding and the mapped instances. An instance below 16 MiB of RAM, or with no CPU, is an
///   error.
/// * Every container requires the same resource: for each of RAM, CPU and disk, the largest
///   per-container sum of its instances plus the padding (RAM 2 GiB
///   `topology.container.ram.padding`, CPU 1.0 `topology.container.cpu.padding`, disk
///   12 GiB), CPU rounded to a whole number as Heron does; or the explicit
///   `topology.container.ram|cpu|disk` where given.
pub fn round_robin(topology: &Topology, plan_id: &str) -> Result<PackingPlan, PackingError> {
    pack(&PackingRequest::from_topology(topology)?, plan_id)
}

/// Repacks with round robin: the topology's components with `new_parallelism` applied (unknown
/// component names are an error) over `containers`, or as many containers as `current` has.
/// The plan keeps `current`'s id. Task ids are dealt afresh.
pub fn repack(
    current: &PackingPlan,
    topology: &Topology,
    new_parallelism: &HashMap<String, u32>,
    containers: Option<u32>,
) -> Result<PackingPlan, PackingError> {
    let mut request = PackingRequest::from_topology(topology)?.with_parallelism(new_parallelism)?;
    request.containers = match containers {
        Some(n) => n,
        None => u32::try_from(current.container_plans.len()).unwrap_or(u32::MAX),
    };
    pack(&request, &current.id)
}

/// One dealt instance.
struct Slot<'a> {
    component: &'a str,
    task_id: i32,
    component_index: i32,
}

/// Packs a [`PackingRequest`] with the rules of [`round_robin`].
pub fn pack(request: &PackingRequest, plan_id: &str) -> Result<PackingPlan, PackingError> {
    for c in &request.components {
        if c.parallelism < 1 {
            return Err(PackingError::InvalidParallelism {
                component: c.name.clone(),
                parallelism: i64::from(c.parallelism),
            });
        }
    }
    let mut names: Vec<&str> = request.components.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(PackingError::DuplicateComponent(w[0].to_string()));
    }
    let n = request.containers;
    let total = request.total_instances();
    if n < 1 {
        return Err(PackingError::TooFewContainers { containers: 0 });
    }
    if u64::from(n) > total {
        return Err(PackingError::TooManyContainers {
            containers: i64::from(n),
            instances: total,
        });
    }
    if total > i32::MAX as u64 {
        return Err(PackingError::TooManyInstances { instances: total });
    }

    let res = &request.resources;
    let mut order: Vec<_> = request.components.iter().collect();
    order.sort_by_key(|c| {
        (
            Reverse(res.ram_map.get(&c.name).copied().unwrap_or(0)),
            &c.name,
        )
    });

    let mut containers: Vec<Vec<Slot>> = (0..n).map(|_| Vec::new()).collect();
    let mut next = 0usize;
    for comp in order {
        for index in 0..comp.parallelism {
            containers[next % n as usize].push(Slot {
                component: &comp.name,
                task_id: next as i32 + 1,
                component_index: index as i32,
            });
            next += 1;
        }
    }

    let mut plans = Vec::with_capacity(containers.len());
    for (i, slots) in containers.iter().enumerate() {
        plans.push(container_instances(i as i32 + 1, slots, res)?);
    }
    let required = required_resource(&plans, res);
    Ok(PackingPlan {
        id: plan_id.to_string(),
        container_plans: plans
            .into_iter()
            .enumerate()
            .map(|(i, instance_plans)| ContainerPlan {
                id: i as i32 + 1,
                instance_plans,
                required_resource: required,
                scheduled_resource: None,
            })
            .collect(),
    })
}

/// The instance plans of one container, with their resources.
fn container_instances(
    container: i32,
    slots: &[Slot],
    res: &ResourceConfig,
) -> Result<Vec<InstancePlan>, PackingError> {
    let unmapped = |mapped: &dyn Fn(&str) -> bool| {
        slots.iter().filter(|s| !mapped(s.component)).count() as i64
    };
    // RAM of instances without a rammap entry.
    let ram_share = match res.container_ram {
        None => DEFAULT_INSTANCE_RAM,
        Some(total) => {
            let mapped: i64 = slots
                .iter()
                .filter_map(|s| res.ram_map.get(s.component))
                .fold(0i64, |a, b| a.saturating_add(*b));
            let free = total.saturating_sub(res.ram_padding).saturating_sub(mapped);
            free / unmapped(&|c| res.ram_map.contains_key(c)).max(1)
        }
    };
    let cpu_share = match res.container_cpu {
        None => DEFAULT_INSTANCE_CPU,
        Some(total) => {
            let mapped: f64 = slots
                .iter()
                .filter_map(|s| res.cpu_map.get(s.component))
                .sum();
            (total - res.cpu_padding - mapped)
                / unmapped(&|c| res.cpu_map.contains_key(c)).max(1) as f64
        }
    };
    slots
        .iter()
        .map(|s| {
            let ram = res.ram_map.get(s.component).copied().unwrap_or(ram_share);
            let cpu = res.cpu_map.get(s.component).copied().unwrap_or(cpu_share);
            let disk = res
                .disk_map
                .get(s.component)
                .copied()
                .unwrap_or(DEFAULT_INSTANCE_DISK);
            if ram < MIN_RAM_PER_INSTANCE {
                return Err(PackingError::InsufficientRam {
                    container,
                    component: s.component.to_string(),
                    task_id: s.task_id,
                    ram,
                    min: MIN_RAM_PER_INSTANCE,
                });
            }
            if cpu <= 0.0 || !cpu.is_finite() {
                return Err(PackingError::InsufficientCpu {
                    container,
                    component: s.component.to_string(),
                    task_id: s.task_id,
                    cpu,
                });
            }
            Ok(InstancePlan {
                component_name: s.component.to_string(),
                task_id: s.task_id,
                component_index: s.component_index,
                resource: Resource { cpu, ram, disk },
            })
        })
        .collect()
}

/// The resource every container requires: the largest per-container sums plus padding, or the
/// explicit container sizes.
fn required_resource(plans: &[Vec<InstancePlan>], res: &ResourceConfig) -> Resource {
    let sums = plans.iter().map(|instances| {
        instances.iter().fold((0.0f64, 0i64, 0i64), |(c, r, d), i| {
            (
                c + i.resource.cpu,
                r.saturating_add(i.resource.ram),
                d.saturating_add(i.resource.disk),
            )
        })
    });
    let (cpu, ram, disk) = sums.fold((0.0f64, 0i64, 0i64), |(c, r, d), (c2, r2, d2)| {
        (c.max(c2), r.max(r2), d.max(d2))
    });
    Resource {
        cpu: res
            .container_cpu
            .unwrap_or_else(|| (cpu + res.cpu_padding).round()),
        ram: res
            .container_ram
            .unwrap_or_else(|| ram.saturating_add(res.ram_padding)),
        disk: res
            .container_disk
            .unwrap_or_else(|| disk.saturating_add(res.disk_padding)),
    }
}
