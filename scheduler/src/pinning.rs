//! CPU pinning of containers on the local scheduler: `heron-rs.local.cpu.pinning`.
//!
//! With `core`, each container's executor (and so its stream manager and instances, which
//! inherit the executor's CPU affinity) runs on one CPU of those this scheduler may use,
//! container 1 on the first, container 2 on the second, and so on round the list; the
//! tmaster's container 0 is not pinned. This is what Kubernetes' static CPU manager does for
//! containers that ask for whole CPUs. A container's processes then wake each other on the
//! CPU they share, without an inter-processor interrupt or an idle CPU to wake: on a 2-core
//! machine the acked word count ran 1.3 × faster pinned, the unacked one about 0.9 × (its
//! processes could use both cores; `docs/cost-log-2026-12-05.md`, "Containers pinned to a CPU").
//!
//! `none` (the default) leaves placement to the kernel. Other values are refused at submit,
//! and so is `core` on a scheduler that does not place processes itself (Slurm, Kubernetes:
//! they bind CPUs with their own settings).

use crate::SchedulerError;
use std::io;
use std::process::Command;

/// The topology config key.
pub const KEY: &str = "heron-rs.local.cpu.pinning";

/// How the local scheduler places containers on CPUs.
///
/// ```
/// use heron_scheduler::pinning::{CpuPinning, KEY};
/// assert_eq!(CpuPinning::from_config(|_| None), Ok(CpuPinning::None));
/// assert_eq!(CpuPinning::from_config(|k| (k == KEY).then_some("core")), Ok(CpuPinning::Core));
/// let e = CpuPinning::from_config(|k| (k == KEY).then_some("numa")).unwrap_err();
/// assert!(e.contains(KEY) && e.contains("numa"), "{e}");
/// // container 0 (the tmaster) is not pinned; the others go round the CPUs allowed
/// assert_eq!(CpuPinning::Core.cpu_for(0, &[2, 3]), None);
/// assert_eq!(CpuPinning::Core.cpu_for(1, &[2, 3]), Some(2));
/// assert_eq!(CpuPinning::Core.cpu_for(3, &[2, 3]), Some(2));
/// assert_eq!(CpuPinning::None.cpu_for(1, &[2, 3]), None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CpuPinning {
    /// The kernel places every process.
    #[default]
    None,
    /// Each container on one CPU, round the CPUs allowed.
    Core,
}

impl CpuPinning {
    /// The pinning a topology config asks for (`get` looks a key up); the error names the key
    /// and the value refused.
    pub fn from_config<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Result<CpuPinning, String> {
        match get(KEY).map(str::trim) {
            None | Some("none") => Ok(CpuPinning::None),
            Some("core") => Ok(CpuPinning::Core),
            Some(other) => Err(format!(
                "{KEY} {other:?} is not a pinning heron-rs has (expected none or core)"
            )),
        }
    }

    /// The CPU container `shard` runs on, from the CPUs `allowed` (none: not pinned).
    pub fn cpu_for(self, shard: i32, allowed: &[usize]) -> Option<usize> {
        match self {
            CpuPinning::Core if shard > 0 && !allowed.is_empty() => {
                let i = usize::try_from(shard - 1).ok()? % allowed.len();
                Some(allowed[i])
            }
            _ => None,
        }
    }
}

/// Where a topology's containers run: its [`CpuPinning`] and the CPUs this process may use.
#[derive(Clone, Debug, Default)]
pub struct Placement {
    pinning: CpuPinning,
    cpus: Vec<usize>,
}

impl Placement {
    /// The placement `topology`'s config asks for, over the CPUs this process may use.
    pub fn for_topology(
        topology: &heron_proto::api::Topology,
    ) -> Result<Placement, SchedulerError> {
        let pinning = CpuPinning::from_config(|k| heron_proto::config_value(topology, k)).map_err(
            |reason| SchedulerError::Unsupported {
                name: topology.name.clone(),
                reason,
            },
        )?;
        let cpus = match pinning {
            CpuPinning::None => Vec::new(),
            CpuPinning::Core => {
                allowed_cpus().map_err(SchedulerError::io("reading this process's CPU affinity"))?
            }
        };
        Ok(Placement { pinning, cpus })
    }

    /// The CPU container `shard` runs on (none: not pinned).
    pub fn cpu_for(&self, shard: i32) -> Option<usize> {
        self.pinning.cpu_for(shard, &self.cpus)
    }
}

/// The CPUs this process may run on, in order.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity writes at most its
    // size into it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `set` is a valid, writable cpu_set_t of `size` bytes.
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } == -1 {
        return Err(io::Error::last_os_error());
    }
    let max = usize::try_from(libc::CPU_SETSIZE).unwrap_or(1024);
    // SAFETY: CPU_ISSET reads within the set for indices below CPU_SETSIZE.
    Ok((0..max)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// Makes `cmd`'s process (and everything it starts) run on `cpu` only.
pub fn pin(cmd: &mut Command, cpu: usize) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs between fork and exec and only calls `sched_setaffinity` on a
    // set built on the stack, which is async-signal-safe; errors come from errno without
    // allocating.
    unsafe {
        cmd.pre_exec(move || {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_may_run_somewhere() {
        let cpus = allowed_cpus().unwrap();
        assert!(!cpus.is_empty());
        assert!(cpus.windows(2).all(|w| w[0] < w[1]), "{cpus:?}");
    }

    #[test]
    fn a_pinned_child_runs_on_its_cpu_only() {
        let cpu = *allowed_cpus().unwrap().last().unwrap();
        let mut cmd = Command::new("grep");
        cmd.args(["^Cpus_allowed_list", "/proc/self/status"]);
        pin(&mut cmd, cpu);
        let out = cmd.output().unwrap();
        assert!(out.status.success());
        let line = String::from_utf8(out.stdout).unwrap();
        assert_eq!(
            line.split_whitespace().nth(1),
            Some(cpu.to_string().as_str()),
            "{line}"
        );
    }

    #[test]
    fn containers_go_round_the_cpus() {
        let cpus: Vec<Option<usize>> = (0..6)
            .map(|s| CpuPinning::Core.cpu_for(s, &[0, 1]))
            .collect();
        assert_eq!(cpus, [None, Some(0), Some(1), Some(0), Some(1), Some(0)]);
        assert_eq!(CpuPinning::Core.cpu_for(1, &[]), None);
    }
}
