//! Flux topologies hosted by the `heron` binary itself (no Rust topology binary needed).
//!
//! `heron submit local path/topology.yaml [--filter props] [--env-filter]` loads and checks the
//! file, then submits the `heron` binary with the topology arguments
//! `--flux <absolute file> [--filter <absolute props>] [--env-filter]`: every role process
//! (define, executors, instances) runs `heron heron-role ...` and calls [`build_topology`],
//! which loads the same file again. The folder holding the file is the topology's resources
//! folder: it is copied into the working directory as `resources/`, where shell components run.
//!
//! ```
//! use heron_runtime::FluxArgs;
//! use std::path::Path;
//!
//! let args = FluxArgs::from_cli(Path::new("/t/wc.yaml"), &["--filter".into(), "/t/p.properties".into()]).unwrap();
//! assert_eq!(args.to_topology_args(), ["--flux", "/t/wc.yaml", "--filter", "/t/p.properties"]);
//! assert_eq!(FluxArgs::from_topology_args(&args.to_topology_args()).unwrap(), args);
//! ```

use std::path::{Path, PathBuf};

use heron_api::{HeronTopology, TopologyError};
use heron_flux::{FluxTopology, LoadOptions};

/// The topology argument that marks a Flux topology.
pub const FLUX_ARG: &str = "--flux";

/// Whether `path` names a Flux file (`.yaml` or `.yml`) rather than a topology binary.
pub fn is_flux_file(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    )
}

/// A Flux file and its substitution options, as given to `heron submit` and passed to every
/// role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FluxArgs {
    /// The Flux file (absolute once parsed from the command line).
    pub file: PathBuf,
    /// `--filter`/`-f`: a properties file for `${key}`.
    pub filter: Option<PathBuf>,
    /// `--env-filter`/`-e`: replace `${ENV-NAME}` from the environment.
    pub env_filter: bool,
}

impl FluxArgs {
    /// From `heron submit`'s file and the arguments after it (`--filter F`, `-f F`,
    /// `--env-filter`, `-e`); paths are made absolute. Anything else is refused, naming it.
    pub fn from_cli(file: &Path, rest: &[String]) -> Result<FluxArgs, String> {
        let abs = |p: &Path| {
            std::path::absolute(p).map_err(|e| format!("resolving {}: {e}", p.display()))
        };
        let mut out = FluxArgs {
            file: abs(file)?,
            filter: None,
            env_filter: false,
        };
        let mut it = rest.iter();
        while let Some(arg) = it.next() {
            match arg.as_str() {
                "--filter" | "-f" => {
                    let Some(f) = it.next() else {
                        return Err(format!("{arg} needs a properties file"));
                    };
                    out.filter = Some(abs(Path::new(f))?);
                }
                "--env-filter" | "-e" => out.env_filter = true,
                other => {
                    return Err(format!(
                        "unknown option {other:?} for a Flux topology (supported: --filter \
                         <properties file>, --env-filter)"
                    ))
                }
            }
        }
        Ok(out)
    }

    /// The topology arguments every role gets.
    pub fn to_topology_args(&self) -> Vec<String> {
        let mut args = vec![FLUX_ARG.to_owned(), self.file.display().to_string()];
        if let Some(f) = &self.filter {
            args.push("--filter".into());
            args.push(f.display().to_string());
        }
        if self.env_filter {
            args.push("--env-filter".into());
        }
        args
    }

    /// Parses [`to_topology_args`](Self::to_topology_args)' output.
    pub fn from_topology_args(args: &[String]) -> Result<FluxArgs, String> {
        match args {
            [flag, file, rest @ ..] if flag == FLUX_ARG => {
                FluxArgs::from_cli(Path::new(file), rest)
            }
            _ => Err(format!(
                "expected `{FLUX_ARG} <file> [--filter <file>] [--env-filter]`, got {args:?}"
            )),
        }
    }

    /// Loads and checks the file.
    pub fn load(&self) -> Result<FluxTopology, heron_flux::FluxError> {
        heron_flux::load(
            &self.file,
            &LoadOptions {
                filter: self.filter.clone(),
                env_filter: self.env_filter,
            },
        )
    }

    /// The folder holding the Flux file: the topology's resources folder.
    pub fn resources_dir(&self) -> PathBuf {
        self.file
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."))
    }
}

/// The `heron` binary's topology: the Flux file its arguments name (see the module docs).
pub fn build_topology(args: &[String]) -> Result<HeronTopology, TopologyError> {
    let flux = FluxArgs::from_topology_args(args).map_err(TopologyError::Invalid)?;
    let topology = flux
        .load()
        .map_err(|e| TopologyError::Invalid(e.to_string()))?;
    topology.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flux_files_are_told_from_binaries_by_extension() {
        assert!(is_flux_file(Path::new("a/topology.yaml")));
        assert!(is_flux_file(Path::new("wc.yml")));
        assert!(!is_flux_file(Path::new("target/debug/examples/word_count")));
        assert!(!is_flux_file(Path::new("yaml")));
    }

    #[test]
    fn options_round_trip_and_unknown_ones_are_refused() {
        let a = FluxArgs::from_cli(Path::new("wc.yaml"), &["-e".into()]).unwrap();
        assert!(a.file.is_absolute());
        assert!(a.env_filter && a.filter.is_none());
        assert_eq!(
            FluxArgs::from_topology_args(&a.to_topology_args()).unwrap(),
            a
        );
        let err = FluxArgs::from_cli(Path::new("wc.yaml"), &["--local".into()]).unwrap_err();
        assert!(err.contains("\"--local\""), "{err}");
        let err = FluxArgs::from_cli(Path::new("wc.yaml"), &["--filter".into()]).unwrap_err();
        assert!(err.contains("needs a properties file"), "{err}");
        assert!(FluxArgs::from_topology_args(&["--nope".into()]).is_err());
    }
}
