//! [`FluxTopology`]: a loaded, checked Flux file, and how it becomes a [`HeronTopology`].

use std::path::{Path, PathBuf};

use heron_api::{Config, HeronTopology, TopologyBuilder, TopologyError};
use heron_multilang::{ShellBolt, ShellSpout};

use crate::model::{ComponentKind, FluxComponent, FluxStream};

/// A loaded and checked Flux topology: everything in it can run on heron-rs.
///
/// Made by [`load`](crate::load); [`build`](Self::build) turns it into a [`HeronTopology`]
/// whose spouts and bolts are heron-multilang [`ShellSpout`]s and [`ShellBolt`]s.
///
/// ```no_run
/// let flux = heron_flux::load("wordcount.yaml".as_ref(), &Default::default())?;
/// for bolt in flux.bolts() {
///     println!("{} x{} runs {:?}", bolt.id, bolt.parallelism, bolt.command);
/// }
/// // everything on this machine: run the shell components in the Flux file's folder
/// let topology = flux.build_in(flux.resources_dir())?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct FluxTopology {
    name: String,
    file: PathBuf,
    resources_dir: PathBuf,
    config: Config,
    components: Vec<FluxComponent>,
    streams: Vec<FluxStream>,
}

impl FluxTopology {
    pub(crate) fn new(
        name: String,
        file: PathBuf,
        config: Config,
        components: Vec<FluxComponent>,
        streams: Vec<FluxStream>,
    ) -> FluxTopology {
        let file = std::path::absolute(&file).unwrap_or(file);
        let resources_dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        FluxTopology {
            name,
            file,
            resources_dir,
            config,
            components,
            streams,
        }
    }

    /// The topology's name (Flux's `name`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The Flux file (absolute).
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The folder holding the Flux file (absolute): the topology's resources, where Storm runs
    /// shell components (its `resources/` folder). A runtime stages it as `resources/` in each
    /// instance's working directory, or builds with [`build_in`](Self::build_in).
    pub fn resources_dir(&self) -> &Path {
        &self.resources_dir
    }

    /// The topology config (Flux's `config`, translated: see the crate docs), without Heron's
    /// defaults, which [`build`](Self::build) adds.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Every spout and bolt, spouts first, each in file order.
    pub fn components(&self) -> &[FluxComponent] {
        &self.components
    }

    /// The spout or bolt `id`.
    pub fn component(&self, id: &str) -> Option<&FluxComponent> {
        self.components.iter().find(|c| c.id == id)
    }

    /// The spouts.
    pub fn spouts(&self) -> impl Iterator<Item = &FluxComponent> {
        self.components
            .iter()
            .filter(|c| c.kind == ComponentKind::Spout)
    }

    /// The bolts.
    pub fn bolts(&self) -> impl Iterator<Item = &FluxComponent> {
        self.components
            .iter()
            .filter(|c| c.kind == ComponentKind::Bolt)
    }

    /// The subscriptions (Flux's `streams`), in file order.
    pub fn streams(&self) -> &[FluxStream] {
        &self.streams
    }

    /// The topology: its config, spouts, bolts and streams. Each shell component runs in the
    /// default working directory of heron-multilang (`resources/` under the instance's working
    /// directory when it exists), so the runtime stages [`resources_dir`](Self::resources_dir)
    /// there.
    pub fn build(&self) -> Result<HeronTopology, TopologyError> {
        self.build_with(None)
    }

    /// [`build`](Self::build), with every shell component running in `working_dir` (e.g.
    /// [`resources_dir`](Self::resources_dir) when everything runs on this machine).
    pub fn build_in(&self, working_dir: &Path) -> Result<HeronTopology, TopologyError> {
        self.build_with(Some(working_dir))
    }

    fn build_with(&self, working_dir: Option<&Path>) -> Result<HeronTopology, TopologyError> {
        let mut b = TopologyBuilder::new();
        for c in &self.components {
            let spec = c.shell_spec(working_dir);
            match c.kind {
                ComponentKind::Spout => {
                    let mut d = b.set_spout(
                        &c.id,
                        move || ShellSpout::from_spec(spec.clone()),
                        c.parallelism,
                    );
                    d.add_configurations(&c.config);
                }
                ComponentKind::Bolt => {
                    let mut d = b.set_bolt(
                        &c.id,
                        move || ShellBolt::from_spec(spec.clone()),
                        c.parallelism,
                    );
                    d.add_configurations(&c.config);
                    for s in self.streams.iter().filter(|s| s.to == c.id) {
                        d.grouping(&s.from, &s.stream_id, s.grouping.to_heron());
                    }
                }
            }
        }
        b.build(&self.name, self.config.clone())
    }
}
