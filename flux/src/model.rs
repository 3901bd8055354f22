//! What a loaded Flux topology holds: its shell components, their output streams and the
//! subscriptions between them.

use std::path::PathBuf;

use heron_api::{Config, Fields, Grouping};
use heron_multilang::ShellSpec;

use crate::error::Location;

/// Flux's multi-lang spout class.
pub const FLUX_SHELL_SPOUT: &str = "org.apache.storm.flux.wrappers.spouts.FluxShellSpout";
/// Flux's multi-lang bolt class.
pub const FLUX_SHELL_BOLT: &str = "org.apache.storm.flux.wrappers.bolts.FluxShellBolt";

/// Spout or bolt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComponentKind {
    /// A `spouts:` entry ([`FLUX_SHELL_SPOUT`]).
    Spout,
    /// A `bolts:` entry ([`FLUX_SHELL_BOLT`]).
    Bolt,
}

impl ComponentKind {
    /// `"spout"` or `"bolt"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ComponentKind::Spout => "spout",
            ComponentKind::Bolt => "bolt",
        }
    }

    /// The Flux wrapper class of this kind.
    pub fn wrapper_class(&self) -> &'static str {
        match self {
            ComponentKind::Spout => FLUX_SHELL_SPOUT,
            ComponentKind::Bolt => FLUX_SHELL_BOLT,
        }
    }
}

/// A stream a component declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputStream {
    /// The stream id (`default` for the constructor's fields and `setDefaultStream`).
    pub id: String,
    /// Its fields.
    pub fields: Vec<String>,
    /// `true` when a `DIRECT` grouping consumes it: the Flux shell wrappers cannot declare
    /// direct streams, so a stream is made direct by being subscribed to with `DIRECT` (and
    /// then every subscription to it must be `DIRECT`).
    pub direct: bool,
}

/// A `FluxShellSpout` or `FluxShellBolt`: a subprocess speaking Storm's multi-lang protocol.
#[derive(Debug, Clone, PartialEq)]
pub struct FluxComponent {
    /// The component id (Flux's `id`).
    pub id: String,
    /// Spout or bolt.
    pub kind: ComponentKind,
    /// The subprocess's argv: the first `constructorArgs` list (`["streamparse_run",
    /// "-s json bolts.count.CountBolt"]`, `["python3", "split.py"]`).
    pub command: Vec<String>,
    /// Declared streams, in declaration order.
    pub streams: Vec<OutputStream>,
    /// Number of tasks (Flux's `parallelism`, default 1).
    pub parallelism: u32,
    /// The component's own config (`addComponentConfig`), translated as the topology config is.
    pub config: Config,
    /// Extra environment for the subprocess: `topology.environment`, then `setEnv`.
    pub env: Vec<(String, String)>,
    /// Where the component is defined.
    pub location: Location,
}

impl FluxComponent {
    /// The declared stream `id`.
    pub fn output(&self, id: &str) -> Option<&OutputStream> {
        self.streams.iter().find(|s| s.id == id)
    }

    /// What heron-multilang runs for this component. The working directory is left unset
    /// unless `working_dir` is given (heron-multilang then uses `resources/` under the
    /// instance's working directory, as Storm runs shell components in the topology's
    /// resources folder).
    pub fn shell_spec(&self, working_dir: Option<&std::path::Path>) -> ShellSpec {
        ShellSpec {
            command: self.command.clone(),
            streams: self
                .streams
                .iter()
                .map(|s| {
                    (
                        s.id.clone(),
                        Fields::new(s.fields.iter().map(String::as_str)),
                        s.direct,
                    )
                })
                .collect(),
            env: self.env.clone(),
            working_dir: working_dir.map(PathBuf::from),
        }
    }
}

/// A Flux grouping type (every one but `CUSTOM`, which needs a Java class).
///
/// ```
/// use heron_flux::FluxGrouping;
/// let g = FluxGrouping::Fields(vec!["word".into()]);
/// assert_eq!(g.name(), "FIELDS");
/// assert_eq!(g.to_heron().name(), "FIELDS");
/// assert_eq!(FluxGrouping::Global.to_heron().name(), "LOWEST");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FluxGrouping {
    /// `SHUFFLE`.
    Shuffle,
    /// `FIELDS` with its `args`.
    Fields(Vec<String>),
    /// `ALL`.
    All,
    /// `GLOBAL` (Heron's lowest task id).
    Global,
    /// `NONE`.
    None,
    /// `LOCAL_OR_SHUFFLE`.
    LocalOrShuffle,
    /// `DIRECT`.
    Direct,
}

impl FluxGrouping {
    /// The Flux names accepted in `grouping.type` (any case).
    pub const NAMES: &'static [&'static str] = &[
        "SHUFFLE",
        "FIELDS",
        "ALL",
        "GLOBAL",
        "NONE",
        "LOCAL_OR_SHUFFLE",
        "DIRECT",
    ];

    /// Flux's name of this grouping type.
    pub fn name(&self) -> &'static str {
        match self {
            FluxGrouping::Shuffle => "SHUFFLE",
            FluxGrouping::Fields(_) => "FIELDS",
            FluxGrouping::All => "ALL",
            FluxGrouping::Global => "GLOBAL",
            FluxGrouping::None => "NONE",
            FluxGrouping::LocalOrShuffle => "LOCAL_OR_SHUFFLE",
            FluxGrouping::Direct => "DIRECT",
        }
    }

    /// The heron-api grouping.
    pub fn to_heron(&self) -> Grouping {
        match self {
            FluxGrouping::Shuffle => Grouping::Shuffle,
            FluxGrouping::Fields(f) => Grouping::Fields(Fields::new(f.iter().map(String::as_str))),
            FluxGrouping::All => Grouping::All,
            FluxGrouping::Global => Grouping::Global,
            FluxGrouping::None => Grouping::None,
            FluxGrouping::LocalOrShuffle => Grouping::LocalOrShuffle,
            FluxGrouping::Direct => Grouping::Direct,
        }
    }
}

/// A `streams:` entry: bolt `to` subscribes to stream `stream_id` of component `from`.
#[derive(Debug, Clone, PartialEq)]
pub struct FluxStream {
    /// Flux's `name` (informational).
    pub name: Option<String>,
    /// The producing component.
    pub from: String,
    /// The consuming bolt.
    pub to: String,
    /// `grouping.streamId` (default `default`).
    pub stream_id: String,
    /// `grouping.type` (and `args`).
    pub grouping: FluxGrouping,
    /// Where the entry is.
    pub location: Location,
}

/// Letters, digits, '-', '_' and '.' (heron-api's rule for topology, component and stream
/// names).
pub(crate) fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groupings_map_to_heron() {
        assert_eq!(FluxGrouping::Global.to_heron().name(), "LOWEST");
        assert_eq!(FluxGrouping::LocalOrShuffle.to_heron().name(), "SHUFFLE");
        assert!(matches!(
            FluxGrouping::LocalOrShuffle.to_heron(),
            Grouping::LocalOrShuffle
        ));
        match FluxGrouping::Fields(vec!["w".into()]).to_heron() {
            Grouping::Fields(f) => assert_eq!(f.as_slice(), ["w"]),
            other => panic!("{other:?}"),
        }
        for name in FluxGrouping::NAMES {
            assert!(!name.is_empty());
        }
    }

    #[test]
    fn names() {
        assert!(is_valid_name("count_bolt-2.x"));
        assert!(!is_valid_name("count bolt"));
        assert!(!is_valid_name(""));
    }
}
