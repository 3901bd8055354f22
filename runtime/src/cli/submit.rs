//! `heron submit`: every step of the local scheduler's submit, printed as it goes, then a
//! wait for the physical plan.

use super::target::{parse_config_properties, parse_target};
use super::SubmitArgs;
use crate::startup::{wait_for_physical_plan, DEFAULT_PPLAN_TIMEOUT};
use anyhow::bail;
use heron_scheduler::{submit_with_progress, SubmitEvent, SubmitRequest};

pub fn run(args: SubmitArgs) -> anyhow::Result<()> {
    let target = parse_target(&args.cluster)?;
    let overrides = parse_config_properties(&args.config_property)?;
    for key in &overrides.ignored {
        eprintln!("note: --config-property {key} is not used by the local cluster; ignored");
    }
    let mut req = SubmitRequest::new(&args.binary, args.args.clone());
    req.cluster = target.cluster;
    req.role = target.role;
    req.environ = target.environ;
    req.verbose = args.verbose;
    if let Some(root) = overrides.state_root {
        req.state_root = root;
    }
    let verbose = args.verbose;
    let submitted = submit_with_progress(&req, |event| match event {
        SubmitEvent::Defining { binary } => {
            println!(
                "[1/5] defining the topology ({} heron-role define)",
                binary.display()
            )
        }
        SubmitEvent::Defined { name, id } => println!("      topology '{name}', id {id}"),
        SubmitEvent::Packed {
            containers,
            instances,
        } => println!(
            "[2/5] packed (round robin): {}, {}",
            plural(containers, "container"),
            plural(instances, "instance")
        ),
        SubmitEvent::StateWritten { state } => {
            println!("[3/5] wrote topologies, packingplans, executionstate to {state}")
        }
        SubmitEvent::Launched {
            working_dir,
            executors,
        } => {
            println!(
                "[4/5] launched {} in {}",
                plural(executors.len(), "executor"),
                working_dir.display()
            );
            if verbose {
                for e in executors {
                    println!("      executor-{} pid {}", e.shard, e.pid);
                }
            }
        }
    })
    .map_err(|e| anyhow::anyhow!("submit failed: {e}"))?;
    println!(
        "[5/5] waiting for the physical plan (up to {}s)",
        DEFAULT_PPLAN_TIMEOUT.as_secs()
    );
    let name = &submitted.name;
    match wait_for_physical_plan(&submitted, DEFAULT_PPLAN_TIMEOUT) {
        Ok(plan) => {
            println!("topology '{name}' is running");
            println!("  id:          {}", submitted.id);
            println!(
                "  processes:   1 tmaster, {}, {}",
                plural(plan.stmgrs.len(), "stream manager"),
                plural(plan.instances.len(), "instance")
            );
            println!("  working dir: {}", submitted.working_dir.display());
            println!("  logs:        {}", submitted.log_dir().display());
            println!("  kill with:   heron kill {} {name}", submitted.cluster);
            Ok(())
        }
        Err(failure) => bail!(
            "topology '{name}' was launched but did not start: {failure}\n\
             The topology stays deployed: inspect the logs in {}, then run \
             `heron kill {} {name}`.",
            submitted.log_dir().display(),
            submitted.cluster
        ),
    }
}

/// "1 container", "2 containers".
fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}
