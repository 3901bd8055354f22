//! Watches on our location node and the packing plan, fed into the shell's event queue.
//!
//! One thread per watch waits on the state manager's [`NodeWatch`] (ZooKeeper watches; the
//! local backend polls) and forwards each event as [`Event::State`]. The threads end when the
//! shell's queue closes. The core's periodic check (`state_watch_interval`) stays as a safety
//! net.

use crate::daemon::Event;
use heron_statemgr::{NodeWatch, StateDir, StateManager};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tracing::warn;

/// How often a watch thread looks whether the shell is gone.
const CHECK: Duration = Duration::from_millis(500);

/// Starts a watch thread for each of `tmanagers/<name>` and `packingplans/<name>`. A backend
/// without watches is logged and left to the periodic check.
pub(crate) fn spawn(state: &Arc<dyn StateManager>, name: &str, events: &mpsc::Sender<Event>) {
    for dir in [StateDir::TManagers, StateDir::PackingPlans] {
        match state.watch(dir, name) {
            Ok(watch) => {
                let events = events.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("watch-{}", dir.name()))
                    .spawn(move || forward(dir, watch, events));
                if let Err(e) = spawned {
                    warn!(error = %e, dir = dir.name(), "cannot start a watch thread");
                }
            }
            Err(e) => warn!(error = %e, dir = dir.name(), "cannot watch; polling only"),
        }
    }
}

fn forward(dir: StateDir, watch: NodeWatch, events: mpsc::Sender<Event>) {
    use crossbeam_channel::RecvTimeoutError;
    loop {
        match watch.recv_timeout(CHECK) {
            Ok(event) => {
                if events.blocking_send(Event::State { dir, event }).is_err() {
                    return;
                }
            }
            Err(RecvTimeoutError::Timeout) if events.is_closed() => return,
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}
