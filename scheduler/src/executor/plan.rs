//! What a container runs: its processes' names and command lines, from the packing plan and
//! the ports the executor picked (flags as in `docs/internals.md`). `EFFECTIVELY_ONCE`
//! topologies also run a checkpoint manager `ckptmgr-<shard>` in every container.

use super::free_ports;
use super::ExecutorConfig;
use crate::SchedulerError;
use heron_proto::api;
use heron_proto::system::PackingPlan;
use std::path::{Path, PathBuf};

/// `true` when the topology's `topology.reliability.mode` is `EFFECTIVELY_ONCE`: its
/// containers then run a checkpoint manager each.
pub fn is_effectively_once(topology: &api::Topology) -> bool {
    topology
        .topology_config
        .iter()
        .flat_map(|c| &c.kvs)
        .any(|kv| {
            kv.key == "topology.reliability.mode" && kv.value.as_deref() == Some("EFFECTIVELY_ONCE")
        })
}

/// The topology's secret file when its config wants authentication (the default, see
/// [`heron_auth::REQUIRED_KEY`]): `<working dir>/auth/secret`, which `heron submit` wrote.
/// A missing file is an error: the daemons would refuse to start without it.
pub fn auth_secret_file(
    topology: &api::Topology,
    working_dir: &Path,
) -> Result<Option<PathBuf>, SchedulerError> {
    if !crate::auth_required(topology)? {
        return Ok(None);
    }
    let path = crate::layout::secret_file(working_dir);
    if !path.is_file() {
        return Err(SchedulerError::Executor(format!(
            "{} is missing: the topology wants authentication ({}) and heron submit writes \
             its secret there",
            path.display(),
            heron_auth::REQUIRED_KEY
        )));
    }
    Ok(Some(path))
}

/// One process of the container: its name (log file `log-files/<name>.log`) and the
/// arguments that follow the binary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessSpec {
    /// `tmaster`, `stmgr-N` or the instance id.
    pub name: String,
    /// Arguments after the binary (`heron-role <role> ... -- <user args>`).
    pub args: Vec<String>,
}

/// The fixed port of the tmaster's server, or of a stream manager's data server (Heron's 6001).
pub const FIXED_SERVER: u16 = 6001;
/// The fixed port of the tmaster's controller (Heron's 6002).
pub const FIXED_CONTROLLER: u16 = 6002;
/// The fixed port of the tmaster's stats server (Heron's 6003).
pub const FIXED_STATS: u16 = 6003;
/// The fixed port of a container's shell (Heron's shell port, 6004).
pub const FIXED_SHELL: u16 = 6004;
/// The fixed port of a stream manager's server for its instances (on loopback).
pub const FIXED_LOCAL_DATA: u16 = 6005;
/// The fixed port of a checkpoint manager (Heron's 6009).
pub const FIXED_CKPTMGR: u16 = 6009;

/// The ports a container's daemons listen on, picked once when the executor starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContainerPorts {
    /// Shard 0.
    Tmaster {
        /// Binary protocol server (stmgrs register here).
        server: u16,
        /// Controller HTTP.
        controller: u16,
        /// Stats HTTP.
        stats: u16,
        /// The checkpoint manager (`EFFECTIVELY_ONCE` only).
        ckptmgr: Option<u16>,
    },
    /// Shards >= 1.
    Stmgr {
        /// Stmgr-to-stmgr server.
        data: u16,
        /// Server for the container's instances.
        local_data: u16,
        /// The container's shell (`heron_shell`: its log files).
        shell: u16,
        /// The checkpoint manager (`EFFECTIVELY_ONCE` only).
        ckptmgr: Option<u16>,
    },
}

impl ContainerPorts {
    /// Picks free ports for `shard`'s daemons, with one for a checkpoint manager when
    /// `effectively_once`.
    pub fn pick(shard: i32, effectively_once: bool) -> Result<ContainerPorts, SchedulerError> {
        let daemons = 3;
        let p = free_ports(daemons + usize::from(effectively_once))?;
        let ckptmgr = effectively_once.then(|| p[daemons]);
        if shard == 0 {
            Ok(ContainerPorts::Tmaster {
                server: p[0],
                controller: p[1],
                stats: p[2],
                ckptmgr,
            })
        } else {
            Ok(ContainerPorts::Stmgr {
                data: p[0],
                local_data: p[1],
                shell: p[2],
                ckptmgr,
            })
        }
    }

    /// Heron's fixed ports for a container that has a network of its own: the tmaster's
    /// server [`FIXED_SERVER`] (a stream manager's data server in other containers),
    /// controller [`FIXED_CONTROLLER`], stats [`FIXED_STATS`], the instances' server
    /// [`FIXED_LOCAL_DATA`], the shell [`FIXED_SHELL`] and the checkpoint manager
    /// [`FIXED_CKPTMGR`].
    ///
    /// ```
    /// use heron_scheduler::executor::{ContainerPorts, FIXED_SERVER};
    /// assert!(matches!(ContainerPorts::fixed(2, false),
    ///     ContainerPorts::Stmgr { data: FIXED_SERVER, ckptmgr: None, .. }));
    /// assert_eq!(ContainerPorts::fixed(0, true).ckptmgr(), Some(6009));
    /// ```
    pub fn fixed(shard: i32, effectively_once: bool) -> ContainerPorts {
        let ckptmgr = effectively_once.then_some(FIXED_CKPTMGR);
        if shard == 0 {
            ContainerPorts::Tmaster {
                server: FIXED_SERVER,
                controller: FIXED_CONTROLLER,
                stats: FIXED_STATS,
                ckptmgr,
            }
        } else {
            ContainerPorts::Stmgr {
                data: FIXED_SERVER,
                local_data: FIXED_LOCAL_DATA,
                shell: FIXED_SHELL,
                ckptmgr,
            }
        }
    }

    /// The checkpoint manager's port, if the container runs one.
    pub fn ckptmgr(&self) -> Option<u16> {
        match *self {
            ContainerPorts::Tmaster { ckptmgr, .. } | ContainerPorts::Stmgr { ckptmgr, .. } => {
                ckptmgr
            }
        }
    }
}

/// The processes of the executor's container: the tmaster for shard 0; for shard N the
/// stream manager `stmgr-N` and then one instance per instance plan of container N. When the
/// ports hold a checkpoint manager port, `ckptmgr-<shard>` follows the tmaster or stream
/// manager, which get `--ckptmgr-port`. With `auth_secret` (the topology's secret file,
/// see [`auth_secret_file`]) every process gets `--auth-secret-file <path>`.
pub fn container_processes(
    cfg: &ExecutorConfig,
    plan: &PackingPlan,
    ports: ContainerPorts,
    auth_secret: Option<&Path>,
) -> Result<Vec<ProcessSpec>, SchedulerError> {
    let base = |role: &str| -> Vec<String> {
        vec![
            "heron-role".into(),
            role.into(),
            "--topology-name".into(),
            cfg.topology_name.clone(),
            "--topology-id".into(),
            cfg.topology_id.clone(),
        ]
    };
    let finish = |mut args: Vec<String>| {
        if let Some(path) = auth_secret {
            args.extend(["--auth-secret-file".into(), path.display().to_string()]);
        }
        args.push("--".into());
        args.extend(cfg.user_args.iter().cloned());
        args
    };
    let state_manager = cfg.state_manager.to_string();
    let ckptmgr_flag = |args: &mut Vec<String>| {
        if let Some(port) = ports.ckptmgr() {
            args.extend(["--ckptmgr-port".into(), port.to_string()]);
        }
    };
    let ckptmgr = ports.ckptmgr().map(|port| {
        let name = format!("ckptmgr-{}", cfg.shard);
        let mut args = base("ckptmgr");
        args.extend([
            "--ckptmgr-id".into(),
            name.clone(),
            "--port".into(),
            port.to_string(),
        ]);
        ProcessSpec {
            name,
            args: finish(args),
        }
    });
    match (cfg.shard, ports) {
        (
            0,
            ContainerPorts::Tmaster {
                server,
                controller,
                stats,
                ..
            },
        ) => {
            let mut args = base("tmaster");
            args.extend([
                "--state-manager".into(),
                state_manager,
                "--host".into(),
                cfg.host.clone(),
                "--server-port".into(),
                server.to_string(),
                "--controller-port".into(),
                controller.to_string(),
                "--stats-port".into(),
                stats.to_string(),
            ]);
            ckptmgr_flag(&mut args);
            let tmaster = ProcessSpec {
                name: "tmaster".into(),
                args: finish(args),
            };
            Ok(std::iter::once(tmaster).chain(ckptmgr).collect())
        }
        (
            shard,
            ContainerPorts::Stmgr {
                data,
                local_data,
                shell,
                ..
            },
        ) if shard > 0 => {
            let container = plan
                .container_plans
                .iter()
                .find(|c| c.id == shard)
                .ok_or_else(|| {
                    SchedulerError::Executor(format!(
                        "the packing plan of {} has no container {shard}",
                        cfg.topology_name
                    ))
                })?;
            let stmgr_id = heron_packer::stmgr_id(shard);
            let mut instances = container.instance_plans.clone();
            instances.sort_by(|a, b| {
                (a.task_id, &a.component_name).cmp(&(b.task_id, &b.component_name))
            });
            let ids: Vec<String> = instances
                .iter()
                .map(|i| heron_packer::instance_id(shard, &i.component_name, i.task_id))
                .collect();
            let mut stmgr = base("stmgr");
            stmgr.extend([
                "--state-manager".into(),
                state_manager,
                "--stmgr-id".into(),
                stmgr_id.clone(),
                "--host".into(),
                cfg.host.clone(),
                "--data-port".into(),
                data.to_string(),
                "--local-data-port".into(),
                local_data.to_string(),
                "--shell-port".into(),
                shell.to_string(),
                "--instance-ids".into(),
                ids.join(","),
            ]);
            ckptmgr_flag(&mut stmgr);
            let mut specs = vec![ProcessSpec {
                name: stmgr_id.clone(),
                args: finish(stmgr),
            }];
            specs.extend(ckptmgr);
            for (inst, id) in instances.iter().zip(ids) {
                let mut args = base("instance");
                args.extend([
                    "--instance-id".into(),
                    id.clone(),
                    "--component-name".into(),
                    inst.component_name.clone(),
                    "--task-id".into(),
                    inst.task_id.to_string(),
                    "--component-index".into(),
                    inst.component_index.to_string(),
                    "--stmgr-id".into(),
                    stmgr_id.clone(),
                    "--stmgr-port".into(),
                    local_data.to_string(),
                ]);
                specs.push(ProcessSpec {
                    name: id,
                    args: finish(args),
                });
            }
            Ok(specs)
        }
        (shard, _) => Err(SchedulerError::Executor(format!(
            "ports {ports:?} do not fit shard {shard}"
        ))),
    }
}

#[cfg(test)]
mod tests;
