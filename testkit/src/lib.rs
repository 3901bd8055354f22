//! Dev-only helpers shared by the heron-rs test crates (never a normal dependency).
//!
//! * [`wait`]: poll a condition with a timeout instead of sleeping; a timeout fails with what
//!   was waited for.
//! * [`process`]: a guard that kills the processes a test started, and `/proc` readers.
//! * [`plan`]: topology, physical-plan and tuple builders.
//! * [`cluster`]: a local cluster with a private HOME, driven by the `heron` CLI.
//!
//! ```
//! use heron_testkit::{free_port, wait_for};
//! use std::time::Duration;
//!
//! let port = free_port();
//! let listener = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
//! wait_for(Duration::from_secs(5), "the listener", || listener.local_addr().is_ok());
//! ```

pub mod cluster;
pub mod plan;
pub mod process;
pub mod wait;

pub use cluster::LocalCluster;
pub use process::ProcessGuard;
pub use wait::{wait_for, Wait};

/// The files in `dir` whose names start with `prefix` and end with `suffix`, sorted; none if
/// `dir` cannot be read (the files a test topology or the runtime writes: `spout-1.json`,
/// `executor-0.pid`, ...).
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// for f in ["spout-2.json", "spout-1.json", "bolt-1.json", "spout-1.tmp"] {
///     std::fs::write(dir.path().join(f), "").unwrap();
/// }
/// let names: Vec<String> = heron_testkit::files(dir.path(), "spout-", ".json")
///     .iter()
///     .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
///     .collect();
/// assert_eq!(names, ["spout-1.json", "spout-2.json"]);
/// ```
pub fn files(dir: &std::path::Path, prefix: &str, suffix: &str) -> Vec<std::path::PathBuf> {
    let mut found: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with(prefix) && name.ends_with(suffix)
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// A TCP port on 127.0.0.1 that was free a moment ago (bound, read, released).
///
/// # Panics
/// If no port can be bound.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}
