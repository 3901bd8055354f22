//! Flux YAML topologies (Storm's `flux-core` format, `../shared/reference/storm.md` §5) on
//! heron-rs, for topologies of multi-lang components: a Storm user's Flux file of pystorm or
//! streamparse components runs unmodified.
//!
//! [`load`] reads a Flux file — `${...}` substitution on the raw text, YAML parsing, `includes`
//! merging — and checks everything before anything starts, reporting every problem at once
//! with its file, line and column ([`FluxError`]). [`FluxTopology::build`] turns the result
//! into a [`heron_api::HeronTopology`] of heron-multilang `ShellSpout`s and `ShellBolt`s.
//!
//! ```no_run
//! use std::path::Path;
//!
//! let options = heron_flux::LoadOptions {
//!     filter: Some("dev.properties".into()),
//!     env_filter: true,
//! };
//! let flux = heron_flux::load(Path::new("topology.yaml"), &options)?;
//! println!("{} from {}", flux.name(), flux.resources_dir().display());
//! for c in flux.components() {
//!     println!("{} x{}: {:?}", c.id, c.parallelism, c.command);
//! }
//! let topology = flux.build()?;
//! assert_eq!(topology.name(), flux.name());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What runs
//!
//! - `name` (required), `config`, `spouts`, `bolts`, `streams`, `includes` (`file` relative to
//!   the including file's folder, with or without `override`; see [Includes](#includes)).
//! - Spouts `org.apache.storm.flux.wrappers.spouts.FluxShellSpout` and bolts
//!   `org.apache.storm.flux.wrappers.bolts.FluxShellBolt`, with `constructorArgs`
//!   `[[command, args...]]` or `[[command, args...], [output fields...]]` (the two
//!   constructors of Storm's wrappers), `configMethods` `setDefaultStream([fields])`,
//!   `setNamedStream(id, [fields])`, `addComponentConfig(key, value or list)` and `setEnv({..})`
//!   (the `ShellBolt`/`ShellSpout` method), `parallelism`, and a per-component `config` map.
//!   `onHeapMemoryLoad`, `offHeapMemoryLoad` and `cpuLoad` are ignored with a warning.
//! - Groupings `SHUFFLE`, `FIELDS` (with `args`), `ALL`, `GLOBAL`, `NONE`, `LOCAL_OR_SHUFFLE`
//!   and `DIRECT`, on `streamId` (default `default`). The shell wrappers cannot declare direct
//!   streams, so a stream subscribed to with `DIRECT` is declared direct, and then every
//!   subscription to it must be `DIRECT`.
//! - `${key}`, `${key[i]}` from the `--filter` properties file and `${ENV-NAME}` with
//!   `--env-filter` ([`LoadOptions`]). An undefined one is an error (Flux only warns).
//! - `config` values as described in [Config](#config).
//!
//! # What is refused, each with its line
//!
//! Java spout or bolt classes, `components:` beans (and `ref`s to them), `topologySource`,
//! `workerHooks`, `properties`, `factory`/`factoryArgs`, `numTasks` different from
//! `parallelism`, `CUSTOM` groupings, `resource: true` includes, and a
//! `topology.multilang.serializer` other than JSON or pystorm's msgpack.
//!
//! # Includes
//!
//! Merged after the including file, in order. Without `override: true` an include only adds
//! what is missing (config keys; spouts, bolts and components by `id`; the name); with it its
//! entries replace those with the same key or `id`. Streams are always appended. As in Flux,
//! an included file's own `includes` are ignored.
//!
//! # Config
//!
//! Values are stored as Heron stores config values: numbers, booleans and strings as text,
//! lists and mappings JSON-encoded, null as unset. `topology.workers` also sets
//! `topology.stmgrs` (unless set); `topology.acker.executors` sets `topology.reliability.mode`
//! unless that is set (0 → `ATMOST_ONCE`, otherwise — including unset, as in Storm, where
//! unset means one acker per worker — `ATLEAST_ONCE`); `topology.tick.tuple.freq.secs` sets
//! `topology.tick.tuple.freq.ms`; `topology.environment` (a mapping) is also given to every
//! shell subprocess. The same translation applies to component config.
//!
//! # Errors
//!
//! [`FluxError`] lists every problem as `file:line:column: message`, for example
//!
//! ```text
//! bad.yaml:9:16: bolt "count" is the Java class org.apache.storm.starter.CountBolt, which heron-rs cannot run: it runs only multi-lang components (org.apache.storm.flux.wrappers.bolts.FluxShellBolt)
//! bad.yaml:21:11: unknown grouping type "PARTIAL_KEY" (expected one of SHUFFLE, FIELDS, ALL, GLOBAL, NONE, LOCAL_OR_SHUFFLE, DIRECT)
//! ```

mod config;
mod error;
mod include;
mod model;
mod props;
mod subst;
mod topology;
mod validate;
mod yaml;

use std::path::{Path, PathBuf};

pub use error::{FluxError, Location, Problem};
pub use model::{
    ComponentKind, FluxComponent, FluxGrouping, FluxStream, OutputStream, FLUX_SHELL_BOLT,
    FLUX_SHELL_SPOUT,
};
pub use topology::FluxTopology;

/// Where substitution values come from (Flux's `--filter` and `--env-filter`).
///
/// ```
/// let options = heron_flux::LoadOptions {
///     filter: Some("prod.properties".into()),
///     ..Default::default()
/// };
/// assert!(!options.env_filter);
/// ```
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// A Java properties file whose keys replace `${key}` (and `${key[i]}`).
    pub filter: Option<PathBuf>,
    /// Replace `${ENV-NAME}` with the environment variable `NAME`.
    pub env_filter: bool,
}

/// Loads and checks the Flux file at `path` (and its includes).
///
/// Every problem found is reported together in the [`FluxError`]; `Ok` means every component,
/// stream and config value can run on heron-rs.
///
/// ```
/// use heron_flux::{load, FluxGrouping, LoadOptions};
///
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("dev.properties"), "split.parallelism = 2\n")?;
/// let file = dir.path().join("wc.yaml");
/// std::fs::write(&file, r#"
/// name: word-count
/// config:
///   topology.workers: 2
/// spouts:
///   - id: sentences
///     className: org.apache.storm.flux.wrappers.spouts.FluxShellSpout
///     constructorArgs: [[python3, sentences.py], [sentence]]
/// bolts:
///   - id: split
///     className: org.apache.storm.flux.wrappers.bolts.FluxShellBolt
///     constructorArgs: [[python3, split.py], [word]]
///     parallelism: ${split.parallelism}
/// streams:
///   - from: sentences
///     to: split
///     grouping: {type: SHUFFLE}
/// "#)?;
/// let options = LoadOptions { filter: Some(dir.path().join("dev.properties")), env_filter: false };
/// let flux = load(&file, &options)?;
/// assert_eq!(flux.name(), "word-count");
/// assert_eq!(flux.component("split").unwrap().parallelism, 2);
/// assert_eq!(flux.streams()[0].grouping, FluxGrouping::Shuffle);
/// assert_eq!(flux.config().num_stmgrs(), 2);
///
/// let topology = flux.build()?;
/// assert_eq!(topology.parallelism("split"), Some(2));
///
/// // a problem names the file, the line and the column
/// std::fs::write(&file, "name: wc\nspouts:\n  - id: s\n    className: com.example.MySpout\n")?;
/// let err = load(&file, &LoadOptions::default()).unwrap_err();
/// assert_eq!(err.problems()[0].location.line, 4);
/// assert!(err.to_string().contains("wc.yaml:4:16: spout \"s\" is the Java class com.example.MySpout"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn load(path: &Path, options: &LoadOptions) -> Result<FluxTopology, FluxError> {
    let properties = match &options.filter {
        None => None,
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| {
                FluxError::one(
                    Location::file(p),
                    format!("cannot read the --filter properties file: {e}"),
                )
            })?;
            let props = props::parse(&text)
                .map_err(|(line, msg)| FluxError::one(Location::new(p, line, 0), msg))?;
            Some((p.as_path(), props))
        }
    };
    let env = |name: &str| std::env::var(name).ok();
    let subst = subst::Substitutions {
        properties: properties.as_ref().map(|(p, props)| (*p, props)),
        env_filter: options.env_filter,
        env: &env,
    };
    let mut problems = Vec::new();
    let merged = include::load(path, &subst, &mut problems);
    let topology = match merged.map(validate::interpret) {
        Some(Ok(t)) => Some(t),
        Some(Err(mut p)) => {
            problems.append(&mut p);
            None
        }
        None => None,
    };
    match topology {
        Some(t) if problems.is_empty() => Ok(t),
        _ => {
            error::sort(&mut problems);
            Err(FluxError::new(problems))
        }
    }
}
