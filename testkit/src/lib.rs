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
