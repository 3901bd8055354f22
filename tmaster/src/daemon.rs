//! The async shell around the [`Core`]: one queue of events from the connection tasks, the
//! controller and the watch threads, a timer for the core's deadline, and the I/O the core's
//! [`Action`]s ask for (outboxes, state-manager reads and writes, controller replies).
//!
//! Every task feeds the shell through one queue, so the core needs no locks. Time is read
//! here, once per event, from tokio's clock (so tests can pause it), and passed in.

use crate::core::{Action, Answer, Core, Request};
use crate::registry::ConnId;
use crate::TmasterError;
use bytes::Bytes;
use heron_statemgr::{NodeEvent, StateDir, StateManager, StateManagerExt};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot};
use tracing::{info, warn};

/// What connection tasks, the controller and the watch threads tell the shell.
#[derive(Debug)]
pub(crate) enum Event {
    /// A connection was accepted; `outbox` carries framed packets to it.
    Connected {
        conn: ConnId,
        peer: SocketAddr,
        outbox: mpsc::Sender<Bytes>,
    },
    /// A message arrived.
    Request {
        conn: ConnId,
        reqid: heron_proto::ReqId,
        request: Request,
    },
    /// The connection is gone.
    Closed { conn: ConnId },
    /// A watched node changed (`tmanagers` or `packingplans`), or the session ended.
    State { dir: StateDir, event: NodeEvent },
    /// A controller HTTP request (`/activate`, ...); the answer goes to `reply`.
    Control {
        path: String,
        query: Vec<(String, String)>,
        reply: oneshot::Sender<Answer>,
    },
}

/// The shell's side of the connections, the state manager, and the core.
struct Shell {
    core: Core,
    state: Arc<dyn StateManager>,
    topology: String,
    outboxes: HashMap<ConnId, mpsc::Sender<Bytes>>,
    /// The reply channel of the controller request being handled.
    reply: Option<oneshot::Sender<Answer>>,
    /// Frames for the checkpoint manager client (`EFFECTIVELY_ONCE`).
    ckptmgr: Option<mpsc::UnboundedSender<Bytes>>,
}

/// Runs the core until a fatal error (or until every event sender is gone).
#[cfg(test)]
pub(crate) async fn run(
    core: Core,
    state: Arc<dyn StateManager>,
    topology: String,
    events: mpsc::Receiver<Event>,
) -> Result<(), TmasterError> {
    run_with_ckptmgr(core, state, topology, events, None).await
}

/// [`run`], sending the core's checkpoint-manager requests to `ckptmgr`.
pub(crate) async fn run_with_ckptmgr(
    core: Core,
    state: Arc<dyn StateManager>,
    topology: String,
    mut events: mpsc::Receiver<Event>,
    ckptmgr: Option<mpsc::UnboundedSender<Bytes>>,
) -> Result<(), TmasterError> {
    let mut shell = Shell {
        core,
        state,
        topology,
        outboxes: HashMap::new(),
        reply: None,
        ckptmgr,
    };
    loop {
        let deadline = shell.core.next_deadline();
        let wake = deadline.map_or_else(now, tokio::time::Instant::from_std);
        tokio::select! {
            event = events.recv() => match event {
                Some(event) => shell.handle(event, now().into_std()),
                None => return Ok(()),
            },
            _ = tokio::time::sleep_until(wake), if deadline.is_some() => {
                let t = now().into_std();
                shell.core.on_timer(t);
                shell.core.on_stateful_timer(t, unix_secs());
            }
        }
        shell.carry_out()?;
    }
}

/// The shell's clock.
fn now() -> tokio::time::Instant {
    tokio::time::Instant::now()
}

/// The wall clock in unix seconds (checkpoint ids carry it).
fn unix_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Shell {
    fn handle(&mut self, event: Event, now: std::time::Instant) {
        match event {
            Event::Connected { conn, peer, outbox } => {
                self.outboxes.insert(conn, outbox);
                self.core.on_connected(conn, peer);
            }
            Event::Closed { conn } => {
                self.outboxes.remove(&conn);
                self.core.on_closed(conn, now);
            }
            Event::State { dir, event } => self.core.on_state(dir, event),
            Event::Control { path, query, reply } => {
                self.reply = Some(reply);
                self.core.on_control(&path, &query);
            }
            Event::Request {
                conn,
                reqid,
                request,
            } => self.core.on_request(conn, reqid, request, now),
        }
    }

    /// Carries out the core's actions, including those queued while doing so (state reads
    /// feed their results back in).
    fn carry_out(&mut self) -> Result<(), TmasterError> {
        while let Some(action) = self.core.next_action() {
            match action {
                Action::Send(conn, bytes) => self.push(conn, bytes),
                Action::Close(conn) => {
                    self.outboxes.remove(&conn);
                }
                Action::WritePplan(pplan) => {
                    let name = &self.topology;
                    self.state
                        .set_proto(StateDir::PPlans, name, &pplan)
                        .map_err(|source| TmasterError::State {
                            what: format!("writing pplans/{name}"),
                            source,
                        })?;
                    info!(
                        topology = %name,
                        stmgrs = pplan.stmgrs.len(),
                        instances = pplan.instances.len(),
                        "physical plan written; pushing it to every stream manager"
                    );
                }
                Action::DeletePplan => {
                    if let Err(e) = self.state.delete(StateDir::PPlans, &self.topology) {
                        warn!(topology = %self.topology, error = %e, "cannot delete the physical plan");
                    }
                }
                Action::ReadLocation => {
                    let read = self.state.get_tmanager_location(&self.topology);
                    self.core.on_location_read(read);
                }
                Action::ReadPackingPlan => {
                    let read = self.state.get(StateDir::PackingPlans, &self.topology);
                    self.core.on_packing_plan_read(read);
                }
                Action::Reply(answer) => {
                    if let Some(reply) = self.reply.take() {
                        let _ = reply.send(answer);
                    }
                }
                Action::WriteCheckpoints(list) => {
                    let name = &self.topology;
                    match self
                        .state
                        .set_proto(StateDir::StatefulCheckpoints, name, &list)
                    {
                        Ok(()) => {
                            tracing::debug!(topology = %name, newest = ?list.consistent_checkpoints.first().map(|c| &c.checkpoint_id), "statefulcheckpoints written")
                        }
                        Err(e) => {
                            warn!(topology = %name, error = %e, "cannot write statefulcheckpoints")
                        }
                    }
                }
                Action::ToCkptmgr(frame) => {
                    if let Some(c) = &self.ckptmgr {
                        let _ = c.send(frame);
                    }
                }
                Action::Exit(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn push(&mut self, conn: ConnId, bytes: Bytes) {
        let Some(outbox) = self.outboxes.get(&conn) else {
            return;
        };
        match outbox.try_send(bytes) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                // Dropping the outbox ends the connection's task.
                self.outboxes.remove(&conn);
                self.core.on_stuck(conn);
            }
            // The connection task has ended; its Closed event is on the way.
            Err(TrySendError::Closed(_)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::MetricsStore;
    use crate::registry::Registry;
    use heron_proto::api::{Topology, TopologyState};
    use heron_proto::tmanager::TManagerLocation;
    use heron_statemgr::LocalFsStateManager;
    use std::time::Duration;

    const WATCH: Duration = Duration::from_secs(5);

    /// The periodic state check runs on the shell's clock: with tokio's time paused, the
    /// tmaster notices that its location node is gone at the first check after the deletion,
    /// not before and not later, and stops.
    #[tokio::test(start_paused = true)]
    async fn a_lost_location_stops_the_tmaster_at_the_next_state_check() {
        let dir = tempfile::tempdir().unwrap();
        let state: Arc<dyn StateManager> = Arc::new(LocalFsStateManager::new(dir.path()));
        let location = TManagerLocation {
            topology_name: "wc".into(),
            topology_id: "wc-1".into(),
            host: "127.0.0.1".into(),
            controller_port: 1,
            server_port: 2,
            stats_port: None,
        };
        state
            .set_proto(StateDir::TManagers, "wc", &location)
            .unwrap();
        state.set(StateDir::PackingPlans, "wc", b"plan").unwrap();
        let topology = Topology {
            id: "wc-1".into(),
            name: "wc".into(),
            state: TopologyState::Running as i32,
            ..Topology::default()
        };
        let registry = Registry::new(
            topology,
            ["stmgr-1".to_string()],
            1,
            None,
            Duration::from_secs(60),
        );
        let t0 = now();
        let core = Core::new(
            location,
            b"plan".to_vec(),
            registry,
            MetricsStore::new(),
            WATCH,
            t0.into_std(),
        );
        let (events, rx) = mpsc::channel(8);
        let tmaster = tokio::spawn(run(core, state.clone(), "wc".into(), rx));
        // two checks pass with everything in place
        tokio::time::sleep(WATCH * 2 + WATCH / 2).await;
        assert!(!tmaster.is_finished(), "stopped with its location in place");
        state.delete(StateDir::TManagers, "wc").unwrap();
        let stopped = tmaster.await.unwrap();
        assert!(
            matches!(stopped, Err(TmasterError::LocationLost(ref n)) if n == "wc"),
            "{stopped:?}"
        );
        assert_eq!(t0.elapsed(), WATCH * 3, "noticed at the third check");
        drop(events);
    }
}
