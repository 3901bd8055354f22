//! What a shell component runs and declares, and the builders.

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use heron_api::{Fields, OutputFieldsDeclarer};

/// The subprocess a shell component runs and the streams it declares.
#[derive(Debug, Clone, Default)]
pub struct ShellSpec {
    /// argv: the program and its arguments (`["python3", "split.py"]`,
    /// `["streamparse_run", "wordcount.WordSpout"]`).
    pub command: Vec<String>,
    /// Declared output streams: (stream id, fields, direct).
    pub streams: Vec<(String, Fields, bool)>,
    /// Extra environment for the subprocess (a `PATH` entry is appended to the inherited PATH).
    pub env: Vec<(String, String)>,
    /// The subprocess's working directory (default: `resources/` under the instance's working
    /// directory when it exists, else the instance's working directory).
    pub working_dir: Option<PathBuf>,
}

impl ShellSpec {
    fn new<I, S>(command: I) -> ShellSpec
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ShellSpec {
            command: command.into_iter().map(Into::into).collect(),
            ..ShellSpec::default()
        }
    }

    pub(crate) fn declare(&self, d: &mut OutputFieldsDeclarer) {
        for (stream, fields, direct) in &self.streams {
            if *direct {
                d.declare_direct_stream(stream, fields.clone());
            } else {
                d.declare_stream(stream, fields.clone());
            }
        }
    }

    fn set_stream(&mut self, stream: &str, fields: Fields, direct: bool) {
        self.streams.retain(|(s, _, _)| s != stream);
        self.streams.push((stream.to_owned(), fields, direct));
    }
}

macro_rules! shell_builder {
    ($ty:ident) => {
        impl $ty {
            /// A component that runs `command` (argv) once per task.
            pub fn new<I, S>(command: I) -> $ty
            where
                I: IntoIterator<Item = S>,
                S: Into<String>,
            {
                $ty::from_spec(ShellSpec::new(command))
            }

            /// Declares the `default` stream's fields (Flux's `setDefaultStream`).
            pub fn output_fields(mut self, fields: impl Into<Fields>) -> Self {
                self.spec.set_stream("default", fields.into(), false);
                self
            }

            /// Declares another stream (Flux's `setNamedStream`).
            pub fn named_stream(mut self, stream: &str, fields: impl Into<Fields>) -> Self {
                self.spec.set_stream(stream, fields.into(), false);
                self
            }

            /// Declares a direct stream.
            pub fn direct_stream(mut self, stream: &str, fields: impl Into<Fields>) -> Self {
                self.spec.set_stream(stream, fields.into(), true);
                self
            }

            /// Adds an environment variable for the subprocess.
            pub fn env(mut self, key: &str, value: &str) -> Self {
                self.spec.env.push((key.to_owned(), value.to_owned()));
                self
            }

            /// Sets the subprocess's working directory.
            pub fn working_dir(mut self, dir: impl Into<PathBuf>) -> Self {
                self.spec.working_dir = Some(dir.into());
                self
            }

            /// What this component runs and declares.
            pub fn spec(&self) -> &ShellSpec {
                &self.spec
            }
        }
    };
}

/// A spout backed by a multi-lang subprocess.
pub struct ShellSpout {
    pub(crate) spec: ShellSpec,
    pub(crate) rt: Option<crate::spout::SpoutRuntime>,
    pub(crate) restarts: Arc<AtomicU64>,
}

impl ShellSpout {
    /// A shell spout for `spec`.
    pub fn from_spec(spec: ShellSpec) -> ShellSpout {
        ShellSpout {
            spec,
            rt: None,
            restarts: Arc::default(),
        }
    }
}

/// A bolt backed by a multi-lang subprocess.
pub struct ShellBolt {
    pub(crate) spec: ShellSpec,
    pub(crate) rt: Option<crate::bolt::BoltRuntime>,
    pub(crate) restarts: Arc<AtomicU64>,
}

impl ShellBolt {
    /// A shell bolt for `spec`.
    pub fn from_spec(spec: ShellSpec) -> ShellBolt {
        ShellBolt {
            spec,
            rt: None,
            restarts: Arc::default(),
        }
    }
}

shell_builder!(ShellSpout);
shell_builder!(ShellBolt);
