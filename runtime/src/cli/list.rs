//! `heron list CLUSTER`: the cluster's topologies and their state, from its state manager.

use super::target::resolve;
use super::ClusterArgs;
use heron_proto::api::TopologyState;
use heron_statemgr::{StateDir, StateManagerExt};

/// One topology's line.
#[derive(Debug, PartialEq, Eq)]
pub struct Line {
    /// Name.
    pub name: String,
    /// `running`, `paused`, `starting` (no physical plan yet) or `no tmaster`.
    pub state: String,
    /// Role and environ.
    pub role: String,
    /// Environ.
    pub environ: String,
    /// `ATMOST_ONCE`, `ATLEAST_ONCE` or `EFFECTIVELY_ONCE`.
    pub mode: String,
}

/// The state of a topology as `heron list` shows it.
pub fn state_of(has_tmaster: bool, pplan_state: Option<i32>) -> &'static str {
    match (has_tmaster, pplan_state) {
        (_, None) => "starting",
        (false, Some(_)) => "no tmaster",
        (true, Some(s)) => match TopologyState::try_from(s) {
            Ok(TopologyState::Paused) => "paused",
            Ok(TopologyState::Killed) => "killed",
            _ => "running",
        },
    }
}

/// The topology's `topology.reliability.mode` (Heron's default `ATMOST_ONCE` when unset).
pub fn reliability_mode(t: &heron_proto::api::Topology) -> String {
    heron_proto::config_value(t, "topology.reliability.mode")
        .unwrap_or("ATMOST_ONCE")
        .to_string()
}

pub fn run(args: ClusterArgs) -> anyhow::Result<()> {
    let r = resolve(&args)?;
    let state = r
        .state_manager
        .open()
        .map_err(|e| anyhow::anyhow!("opening {}: {e}", r.state_manager))?;
    let names = state
        .list(StateDir::Topologies)
        .map_err(|e| anyhow::anyhow!("listing topologies in {}: {e}", r.state_manager))?;
    let mut lines = Vec::new();
    for name in names {
        let exec = state.get_execution_state(&name).ok().flatten();
        let pplan = state.get_physical_plan(&name).ok().flatten();
        let tmaster = state.get_tmanager_location(&name).ok().flatten();
        let mode = state
            .get_topology(&name)
            .ok()
            .flatten()
            .map(|t| reliability_mode(&t))
            .unwrap_or_else(|| "?".into());
        let (role, environ) = exec
            .map(|e| (e.role, e.environ))
            .unwrap_or_else(|| ("?".into(), "?".into()));
        lines.push(Line {
            state: state_of(tmaster.is_some(), pplan.map(|p| p.topology.state)).to_string(),
            name,
            role,
            environ,
            mode,
        });
    }
    if lines.is_empty() {
        println!(
            "no topologies in cluster {} ({})",
            r.target.cluster, r.state_manager
        );
        return Ok(());
    }
    let w = lines.iter().map(|l| l.name.len()).max().unwrap_or(0).max(8);
    println!(
        "{:w$}  {:10}  {:16}  {:12}  ENVIRON",
        "TOPOLOGY", "STATE", "MODE", "ROLE"
    );
    for l in &lines {
        println!(
            "{:w$}  {:10}  {:16}  {:12}  {}",
            l.name, l.state, l.mode, l.role, l.environ
        );
    }
    println!(
        "tracker: heron-tracker serves these at http://127.0.0.1:{}/",
        TRACKER_PORT
    );
    Ok(())
}

/// Heron's tracker port (the `heron-tracker` binary's default).
pub const TRACKER_PORT: u16 = 8888;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states() {
        assert_eq!(state_of(true, None), "starting");
        assert_eq!(
            state_of(true, Some(TopologyState::Running as i32)),
            "running"
        );
        assert_eq!(state_of(true, Some(TopologyState::Paused as i32)), "paused");
        assert_eq!(state_of(false, Some(1)), "no tmaster");
    }
}
