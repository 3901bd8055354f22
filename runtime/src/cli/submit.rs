//! `heron submit`: every step of the local scheduler's submit, printed as it goes, then a
//! wait for the physical plan.

use super::target::resolve;
use super::SubmitArgs;
use crate::cluster::SchedulerKind;
use crate::startup::{wait_for_physical_plan, DEFAULT_PPLAN_TIMEOUT};
use anyhow::bail;
use heron_scheduler::{submit_with, Launcher, LocalLauncher, SubmitEvent, SubmitRequest};

pub fn run(args: SubmitArgs) -> anyhow::Result<()> {
    let r = resolve(&args.common)?;
    let scheduler = r.config.scheduler()?;
    if args.dry_run && scheduler != SchedulerKind::Kubernetes {
        bail!(
            "--dry-run prints a topology's Kubernetes objects; cluster {} does not use the \
             Kubernetes scheduler",
            r.target.cluster
        );
    }
    let mut req = if crate::flux::is_flux_file(&args.binary) {
        flux_request(&args, !args.dry_run)?
    } else {
        SubmitRequest::new(&args.binary, args.args.clone())
    };
    req.cluster = r.target.cluster;
    req.role = r.target.role;
    req.environ = r.target.environ;
    req.verbose = args.common.verbose;
    req.state_manager = r.state_manager;
    // the cluster's CPU pinning, unless the topology's config sets its own
    if let Some(v) = r.config.values.get(heron_scheduler::pinning::KEY) {
        req.topology_defaults
            .push((heron_scheduler::pinning::KEY.to_string(), v.clone()));
    }
    req.host = match (
        scheduler,
        r.config.values.contains_key(crate::cluster::KEY_HOST),
    ) {
        (SchedulerKind::Local, _) | (_, true) => r.config.host()?,
        // on a cluster each container advertises the address of the node it runs on
        _ => heron_scheduler::host::AUTO.to_string(),
    };
    let launcher: Box<dyn Launcher> = match scheduler {
        SchedulerKind::Local => Box::new(LocalLauncher),
        SchedulerKind::Slurm => Box::new(heron_slurm::Slurm::from_config(&r.config.values)?),
        SchedulerKind::Kubernetes => {
            let k = heron_kubernetes::Kubernetes::from_config(&r.config.values)?;
            if args.dry_run {
                // the objects and nothing else on stdout, so it can be piped to kubectl
                print!("{}", heron_kubernetes::dry_run(&k, &req)?);
                return Ok(());
            }
            if k.uri.is_none() {
                bail!("{}", heron_kubernetes::KubernetesError::NoApi);
            }
            // checked before any state is written
            let topology = heron_scheduler::define_topology(
                &heron_scheduler::check_binary(&req.binary)?,
                &req.user_args,
            )?;
            heron_kubernetes::check_supported(&req.state_manager, &topology)?;
            Box::new(heron_kubernetes::KubernetesLauncher(k))
        }
    };
    let verbose = args.common.verbose;
    // The step under way and the topology's name, for the failure message.
    let mut step = "[0/5] checking the request and connecting to the state manager";
    let mut name = None;
    let submitted = submit_with(&req, &*launcher, |event| {
        step = failing_step(&event);
        if let SubmitEvent::Defined { name: n, .. } = &event {
            name = Some(n.to_string());
        }
        print_event(event, verbose)
    })
    .map_err(|e| {
        let logs = match &name {
            Some(n) => {
                let wd =
                    heron_scheduler::layout::working_dir(&req.home, &req.cluster, &req.role, n);
                format!(
                    "\nlogs: {}",
                    heron_scheduler::layout::log_dir(&wd).display()
                )
            }
            None => String::new(),
        };
        anyhow::anyhow!("submit failed at step {step}: {e}{logs}")
    })?;
    finish(submitted)
}

/// A Flux file: loaded and checked here, before anything starts; then the `heron` binary
/// itself is submitted with the file as its topology arguments, and the file's folder as the
/// topology's resources.
fn flux_request(args: &SubmitArgs, report: bool) -> anyhow::Result<SubmitRequest> {
    let flux = crate::flux::FluxArgs::from_cli(&args.binary, &args.args)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let topology = flux.load()?;
    if report {
        println!(
            "[0/5] loaded the Flux file {} (topology '{}')",
            flux.file.display(),
            topology.name()
        );
    }
    let heron = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("locating the heron binary to host the Flux topology: {e}"))?;
    let mut req = SubmitRequest::new(heron, flux.to_topology_args());
    req.resources = Some(flux.resources_dir());
    Ok(req)
}

/// The step that runs after `event` (what failed if the submit fails next).
fn failing_step(event: &SubmitEvent<'_>) -> &'static str {
    match event {
        SubmitEvent::Defining { .. } => "[1/5] defining the topology",
        SubmitEvent::Defined { .. } => "[2/5] packing",
        SubmitEvent::Packed { .. } => "[3/5] writing the state",
        SubmitEvent::StateWritten { .. } => "[4/5] launching the containers",
        SubmitEvent::Launched { .. } => "[5/5] waiting for the physical plan",
    }
}

fn print_event(event: SubmitEvent<'_>, verbose: bool) {
    match event {
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
            description,
        } => {
            println!("[4/5] launched {description} in {}", working_dir.display());
            if verbose {
                for e in executors {
                    println!("      executor-{} pid {}", e.shard, e.pid);
                }
            }
        }
    }
}

fn finish(submitted: heron_scheduler::Submitted) -> anyhow::Result<()> {
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
            println!(
                "  tracker:     http://127.0.0.1:{}/?cluster={}&environ={}&topology={name} \
                 (served by heron-tracker)",
                super::list::TRACKER_PORT,
                submitted.cluster,
                submitted.environ
            );
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
