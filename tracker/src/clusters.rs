//! The clusters the tracker serves: one state manager each, opened on first use, read on a
//! blocking thread (ZooKeeper reads block).

use crate::json::TopologyInfo;
use crate::TrackerError;
use heron_proto::scheduler::SchedulerLocation;
use heron_statemgr::{StateDir, StateManager, StateManagerExt, StateManagerSpec};
use std::sync::{Arc, Mutex};

/// One cluster: a name and where its state lives.
pub struct Cluster {
    /// The cluster's name (`local`, ...).
    pub name: String,
    /// Its state manager.
    pub spec: StateManagerSpec,
    /// The `heron` CLI the page's controls run for this cluster (`None`: no controls).
    pub cli: Option<crate::controls::Cli>,
    opened: Mutex<Option<Arc<dyn StateManager>>>,
}

/// A topology as listed: its name and where its execution state puts it.
#[derive(Clone, Debug)]
pub struct Listed {
    /// The topology's name.
    pub name: String,
    /// `executionstate.role`.
    pub role: String,
    /// `executionstate.environ`.
    pub environ: String,
    /// What is known of it.
    pub info: TopologyInfo,
}

impl Cluster {
    /// A cluster whose state manager is opened when first needed.
    pub fn new(name: impl Into<String>, spec: StateManagerSpec) -> Cluster {
        Cluster {
            name: name.into(),
            spec,
            cli: None,
            opened: Mutex::new(None),
        }
    }

    /// The same cluster with controls that run `cli`.
    pub fn with_cli(mut self, cli: crate::controls::Cli) -> Cluster {
        self.cli = Some(cli);
        self
    }

    fn state(&self) -> Result<Arc<dyn StateManager>, TrackerError> {
        let mut opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = &*opened {
            return Ok(s.clone());
        }
        let s = self.spec.open().map_err(|e| self.error(e))?;
        *opened = Some(s.clone());
        Ok(s)
    }

    fn error(&self, e: impl std::fmt::Display) -> TrackerError {
        TrackerError::State {
            cluster: self.name.clone(),
            why: e.to_string(),
        }
    }

    /// Reads every node of one topology; `None` if it has no `topologies` node.
    pub fn read(&self, name: &str) -> Result<Option<TopologyInfo>, TrackerError> {
        let s = self.state()?;
        let err = |e| self.error(e);
        let Some(topology) = s.get_topology(name).map_err(err)? else {
            return Ok(None);
        };
        Ok(Some(TopologyInfo {
            topology: Some(topology),
            physical_plan: s.get_physical_plan(name).map_err(err)?,
            packing_plan: s.get_packing_plan(name).map_err(err)?,
            execution_state: s.get_execution_state(name).map_err(err)?,
            tmanager: s.get_tmanager_location(name).map_err(err)?,
            scheduler: s
                .get_proto::<SchedulerLocation>(StateDir::Schedulers, name)
                .map_err(err)?,
            checkpoints: s
                .get_proto(StateDir::StatefulCheckpoints, name)
                .map_err(err)?,
        }))
    }

    /// Every topology of the cluster.
    pub fn list(&self) -> Result<Vec<Listed>, TrackerError> {
        let names = self
            .state()?
            .list(StateDir::Topologies)
            .map_err(|e| self.error(e))?;
        let mut out = Vec::new();
        for name in names {
            // A topology killed between list and read is skipped.
            if let Some(info) = self.read(&name)? {
                let e = info.execution_state.clone().unwrap_or_default();
                out.push(Listed {
                    name,
                    role: e.role,
                    environ: if e.environ.is_empty() {
                        "default".into()
                    } else {
                        e.environ
                    },
                    info,
                });
            }
        }
        Ok(out)
    }
}

/// Every cluster.
pub type Clusters = Arc<Vec<Cluster>>;

/// Runs a state read on the blocking pool.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, TrackerError> + Send + 'static,
) -> Result<T, TrackerError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| TrackerError::Internal(e.to_string()))?
}
