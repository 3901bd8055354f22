//! `heron kill`: stop every process of a topology and delete its state.

use super::target::resolve;
use super::TopologyArgs;
use crate::cluster::SchedulerKind;
use heron_scheduler::{kill, KillRequest};

pub fn run(args: TopologyArgs) -> anyhow::Result<()> {
    let r = resolve(&args.common)?;
    super::delegated::check(&r, &args.topology)?;
    let mut req = KillRequest::new(&args.topology);
    req.cluster = r.target.cluster;
    req.role = r.target.role;
    req.state_manager = r.state_manager;
    println!("killing topology '{}' in cluster {}", req.name, req.cluster);
    match r.config.scheduler()? {
        SchedulerKind::Slurm => {
            let report =
                heron_slurm::kill(&req).map_err(|e| anyhow::anyhow!("kill failed: {e}"))?;
            println!(
                "killed '{}': its Slurm job ended, state deleted; logs kept in {}",
                report.name,
                heron_scheduler::layout::log_dir(&report.working_dir).display()
            );
            return Ok(());
        }
        SchedulerKind::Kubernetes => {
            let k = heron_kubernetes::Kubernetes::from_config(&r.config.values)?;
            let report = heron_kubernetes::kill(&k, &req)
                .map_err(|e| anyhow::anyhow!("kill failed: {e}"))?;
            println!(
                "killed '{}': its Kubernetes objects and its state deleted",
                report.name
            );
            return Ok(());
        }
        SchedulerKind::Local => {}
    }
    let report = kill(&req).map_err(|e| anyhow::anyhow!("kill failed: {e}"))?;
    if args.common.verbose {
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
