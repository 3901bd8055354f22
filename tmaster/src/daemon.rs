//! The async shell around the [`Core`]: one queue of events from the connection tasks, the
//! controller and the watch threads, a timer for the core's deadline, and the I/O the core's
//! [`Action`]s ask for (outboxes, state-manager reads and writes, controller replies).
//!
//! Every task feeds the shell through one queue, so the core needs no locks. Time is read
//! here, once per event, and passed in.

use crate::core::{Action, Answer, Core, Request};
use crate::registry::ConnId;
use crate::TmasterError;
use bytes::Bytes;
use heron_statemgr::{NodeEvent, StateDir, StateManager, StateManagerExt};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;
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
}

/// Runs the core until a fatal error (or until every event sender is gone).
pub(crate) async fn run(
    core: Core,
    state: Arc<dyn StateManager>,
    topology: String,
    mut events: mpsc::Receiver<Event>,
) -> Result<(), TmasterError> {
    let mut shell = Shell {
        core,
        state,
        topology,
        outboxes: HashMap::new(),
        reply: None,
    };
    loop {
        let deadline = shell.core.next_deadline();
        let wake = tokio::time::Instant::from_std(deadline.unwrap_or_else(Instant::now));
        tokio::select! {
            event = events.recv() => match event {
                Some(event) => shell.handle(event, Instant::now()),
                None => return Ok(()),
            },
            _ = tokio::time::sleep_until(wake), if deadline.is_some() => {
                shell.core.on_timer(Instant::now());
            }
        }
        shell.carry_out()?;
    }
}

impl Shell {
    fn handle(&mut self, event: Event, now: Instant) {
        match event {
            Event::Connected { conn, peer, outbox } => {
                self.outboxes.insert(conn, outbox);
                self.core.on_connected(conn, peer);
            }
            Event::Closed { conn } => {
                self.outboxes.remove(&conn);
                self.core.on_closed(conn);
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
