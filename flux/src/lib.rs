//! Flux YAML topologies (`../shared/reference/storm.md` §5) run on heron-rs (SKELETON).
//!
//! [`load`] reads a Flux file (with its `includes` and `${...}` substitution) into a
//! [`FluxTopology`], checking everything before anything starts; [`FluxTopology::build`]
//! turns it into a [`heron_api::HeronTopology`] of shell components.

use std::path::{Path, PathBuf};

use heron_api::{HeronTopology, TopologyError};

/// Where substitution values come from (Flux's `--filter` and `--env-filter`).
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// A Java properties file whose keys replace `${key}`.
    pub filter: Option<PathBuf>,
    /// Replace `${ENV-NAME}` with the environment variable `NAME`.
    pub env_filter: bool,
}

/// A Flux file that failed to load, naming the file, the line and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FluxError(String);

/// A loaded, checked Flux topology.
#[derive(Debug, Clone)]
pub struct FluxTopology {
    name: String,
}

impl FluxTopology {
    /// The topology's name (Flux's `name`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The topology: its config, spouts, bolts and streams.
    pub fn build(&self) -> Result<HeronTopology, TopologyError> {
        Err(TopologyError::Invalid("flux: not built yet".into()))
    }
}

/// Loads and checks the Flux file at `path`.
pub fn load(path: &Path, options: &LoadOptions) -> Result<FluxTopology, FluxError> {
    let _ = options;
    Err(FluxError(format!(
        "{}: flux is not implemented yet",
        path.display()
    )))
}
