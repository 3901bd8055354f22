//! `heron kill`: stop every process of a topology and delete its state.

use super::target::{parse_config_properties, parse_target};
use super::KillArgs;
use heron_scheduler::{kill, KillRequest};

pub fn run(args: KillArgs) -> anyhow::Result<()> {
    let target = parse_target(&args.cluster)?;
    let overrides = parse_config_properties(&args.config_property)?;
    for key in &overrides.ignored {
        eprintln!("note: --config-property {key} is not used by the local cluster; ignored");
    }
    let mut req = KillRequest::new(&args.topology);
    req.cluster = target.cluster;
    req.role = target.role;
    if let Some(root) = overrides.state_root {
        req.state_root = root;
    }
    println!("killing topology '{}' in cluster {}", req.name, req.cluster);
    let report = kill(&req).map_err(|e| anyhow::anyhow!("kill failed: {e}"))?;
    if args.verbose {
        for e in &report.executors {
            println!("  stopped executor-{} (process group {})", e.shard, e.pid);
        }
    }
    println!(
        "killed '{}': {} executor process groups stopped, state deleted; logs kept in {}",
        report.name,
        report.executors.len(),
        heron_scheduler::layout::log_dir(&report.working_dir).display()
    );
    Ok(())
}
