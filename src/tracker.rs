//! Starting the Heron tracker (REST API and web page, crate `heron-tracker`) inside a program,
//! for the examples: `LocalTopology` users get a page to watch their topology.

use crate::LocalTopology;
pub use heron_tracker::{BackgroundTracker, Cluster, TrackerError, DEFAULT_PORT};
use std::net::{Ipv4Addr, SocketAddr};

/// Starts a tracker over `topology`'s cluster on a thread of this process, on 127.0.0.1:8888
/// when that port is free, else on any free port; returns the URL of the topology's page.
pub fn start_tracker_for(topology: &LocalTopology) -> Result<String, TrackerError> {
    let s = topology.submitted();
    let clusters = || vec![Cluster::new(s.cluster.clone(), s.state_manager.clone())];
    let at = |port| SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let tracker = heron_tracker::spawn_background(at(DEFAULT_PORT), clusters())
        .or_else(|_| heron_tracker::spawn_background(at(0), clusters()))?;
    Ok(format!(
        "{}?cluster={}&environ={}&topology={}",
        tracker.url(),
        s.cluster,
        s.environ,
        s.name
    ))
}
