//! `heron update`: `--component-parallelism` / `--container-number` repack the topology
//! (`--dry-run` prints the new plan); `--runtime-config` goes to the tmaster's controller.

use super::control::controller_request;
use super::target::resolve;
use super::UpdateArgs;
use anyhow::{bail, Context};
use heron_proto::system::PackingPlan;
use heron_scheduler::{update, UpdateRequest};
use std::collections::HashMap;

pub fn run(args: UpdateArgs) -> anyhow::Result<()> {
    let r = resolve(&args.common)?;
    super::delegated::check(&r, &args.topology)?;
    let repack = !args.component_parallelism.is_empty() || args.container_number.is_some();
    if repack && !args.runtime_config.is_empty() {
        bail!("--runtime-config cannot be combined with --component-parallelism or --container-number");
    }
    if !args.runtime_config.is_empty() {
        if args.dry_run {
            println!(
                "dry run: would send runtime config {:?} to the tmaster of '{}'",
                args.runtime_config, args.topology
            );
            return Ok(());
        }
        let extra: Vec<(&str, String)> = args
            .runtime_config
            .iter()
            .map(|v| ("runtime-config", v.clone()))
            .collect();
        controller_request(&r, &args.topology, "runtime_config/update", &extra)?;
        println!("runtime config of '{}' updated", args.topology);
        return Ok(());
    }
    if !repack {
        bail!("nothing to update: give --component-parallelism COMPONENT:N, --container-number N or --runtime-config");
    }
    let mut parallelism = HashMap::new();
    for p in &args.component_parallelism {
        let (comp, n) = p
            .rsplit_once(':')
            .with_context(|| format!("bad --component-parallelism {p:?}: expected COMPONENT:N"))?;
        let n: u32 = n.parse().ok().filter(|n| *n > 0).with_context(|| {
            format!("bad --component-parallelism {p:?}: N must be a positive number")
        })?;
        parallelism.insert(comp.to_string(), n);
    }
    let mut req = UpdateRequest::new(&args.topology);
    req.cluster = r.target.cluster.clone();
    req.role = r.target.role.clone();
    req.state_manager = r.state_manager.clone();
    req.parallelism = parallelism;
    req.containers = args.container_number;
    req.dry_run = args.dry_run;
    let report = match r.config.scheduler()? {
        crate::cluster::SchedulerKind::Slurm => {
            heron_slurm::update(&req, &heron_slurm::Slurm::from_config(&r.config.values)?)
        }
        crate::cluster::SchedulerKind::Kubernetes => heron_kubernetes::update(
            &heron_kubernetes::Kubernetes::from_config(&r.config.values)?,
            &req,
        ),
        crate::cluster::SchedulerKind::Local => update(&req),
    }
    .map_err(|e| anyhow::anyhow!("update failed: {e}"))?;
    if args.dry_run {
        println!(
            "dry run: the new packing plan of '{}' would be:",
            args.topology
        );
        print_plan(&report.new_plan);
        return Ok(());
    }
    println!(
        "updated '{}': {} → {} containers, {} → {} instances",
        args.topology,
        report.old_plan.container_plans.len(),
        report.new_plan.container_plans.len(),
        instances(&report.old_plan),
        instances(&report.new_plan)
    );
    if args.common.verbose {
        print_plan(&report.new_plan);
    }
    Ok(())
}

fn instances(p: &PackingPlan) -> usize {
    p.container_plans
        .iter()
        .map(|c| c.instance_plans.len())
        .sum()
}

fn print_plan(p: &PackingPlan) {
    let mut containers: Vec<_> = p.container_plans.iter().collect();
    containers.sort_by_key(|c| c.id);
    for c in containers {
        let mut items: Vec<String> = c
            .instance_plans
            .iter()
            .map(|i| {
                format!(
                    "{}[task {}, index {}]",
                    i.component_name, i.task_id, i.component_index
                )
            })
            .collect();
        items.sort();
        println!("  container {}: {}", c.id, items.join(", "));
    }
}
