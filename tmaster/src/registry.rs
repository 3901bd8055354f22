//! Stream-manager registration and the physical plan: a synchronous state machine.
//!
//! No sockets and no clock: every call gets the connection it came from and the current time,
//! and returns what to answer and what to publish. The server module does the I/O.

use crate::pplan::{self, PlanError};
use heron_proto::api::Topology;
use heron_proto::system::{Instance, PhysicalPlan, StMgr, StatusCode};
use heron_proto::tmanager::{StMgrRegisterRequest, StMgrRegisterResponse};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// Identifies one accepted connection for the lifetime of the tmaster.
pub type ConnId = u64;

/// A registered stream manager.
#[derive(Clone, Debug)]
struct Registration {
    conn: ConnId,
    stmgr: StMgr,
    instances: Vec<Instance>,
    last_heartbeat: Instant,
}

/// A physical plan to write to `pplans/<topology>` and then push to `recipients`.
#[derive(Clone, Debug, PartialEq)]
pub struct Publish {
    /// The new plan.
    pub pplan: PhysicalPlan,
    /// The connections of every registered stmgr, in stmgr-id order.
    pub recipients: Vec<ConnId>,
}

/// What a plan rebuild produced.
#[derive(Clone, Debug, PartialEq)]
pub enum PlanStep {
    /// Some expected stmgr is still absent (or the registration was refused).
    Waiting,
    /// Everyone is present: publish this plan.
    Publish(Publish),
    /// Everyone is present but the plan is inconsistent; nothing is published.
    Invalid(PlanError),
}

/// The outcome of a registration request.
#[derive(Clone, Debug, PartialEq)]
pub struct RegisterOutcome {
    /// The answer for the registering connection.
    pub response: StMgrRegisterResponse,
    /// A previous connection of the same stmgr whose registration timed out and was replaced;
    /// the server closes it.
    pub replaced: Option<ConnId>,
    /// Whether a plan is to be published.
    pub plan: PlanStep,
}

/// The registration state of one topology.
#[derive(Debug)]
pub struct Registry {
    topology: Topology,
    expected: BTreeSet<String>,
    expected_instances: usize,
    state_timeout: Duration,
    registered: BTreeMap<String, Registration>,
    by_conn: HashMap<ConnId, String>,
    pplan: Option<PhysicalPlan>,
}

fn status(code: StatusCode, message: impl Into<String>) -> heron_proto::system::Status {
    heron_proto::status(code, Some(message.into()))
}

impl Registry {
    /// A registry expecting the stmgr ids `expected`, whose plan must hold `expected_instances`
    /// instances. `previous` is a plan read back from the state, if any; its topology and
    /// instances are kept when the plan is rebuilt.
    pub fn new(
        topology: Topology,
        expected: impl IntoIterator<Item = String>,
        expected_instances: usize,
        previous: Option<PhysicalPlan>,
        state_timeout: Duration,
    ) -> Registry {
        Registry {
            topology,
            expected: expected.into_iter().collect(),
            expected_instances,
            state_timeout,
            registered: BTreeMap::new(),
            by_conn: HashMap::new(),
            pplan: previous,
        }
    }

    /// Handles `StMgrRegisterRequest` from `conn` at time `now`.
    ///
    /// * An id not in the expected set ⇒ `INVALID_STMGR`.
    /// * An id registered by a connection that heartbeated within the state timeout ⇒
    ///   `DUPLICATE_STRMGR`; the old registration stays.
    /// * An id registered but timed out ⇒ the new connection replaces the old one.
    /// * A connection that already registered another id ⇒ `NOTOK`.
    ///
    /// An accepted registration is answered OK with the current plan, if any; if it completes
    /// the set of expected stmgrs, the plan is rebuilt.
    pub fn register(
        &mut self,
        conn: ConnId,
        request: StMgrRegisterRequest,
        now: Instant,
    ) -> RegisterOutcome {
        let id = request.stmgr.id.clone();
        let refuse = |code, message: String| RegisterOutcome {
            response: StMgrRegisterResponse {
                status: status(code, message),
                pplan: None,
            },
            replaced: None,
            plan: PlanStep::Waiting,
        };
        if !self.expected.contains(&id) {
            return refuse(
                StatusCode::InvalidStmgr,
                format!("{id:?} is not a stream manager of this topology"),
            );
        }
        if let Some(other) = self.by_conn.get(&conn) {
            return refuse(
                StatusCode::Notok,
                format!("this connection already registered as {other}"),
            );
        }
        let mut replaced = None;
        if let Some(old) = self.registered.get(&id) {
            let silent_for = now.saturating_duration_since(old.last_heartbeat);
            if silent_for < self.state_timeout {
                return refuse(
                    StatusCode::DuplicateStrmgr,
                    format!(
                        "{id} is already registered and heartbeated {}s ago",
                        silent_for.as_secs()
                    ),
                );
            }
            replaced = Some(old.conn);
            self.by_conn.remove(&old.conn);
        }
        self.by_conn.insert(conn, id.clone());
        self.registered.insert(
            id,
            Registration {
                conn,
                stmgr: request.stmgr,
                instances: request.instances,
                last_heartbeat: now,
            },
        );
        let response = StMgrRegisterResponse {
            status: status(StatusCode::Ok, "registered"),
            pplan: self.pplan.clone(),
        };
        RegisterOutcome {
            response,
            replaced,
            plan: self.rebuild(),
        }
    }

    /// Rebuilds the plan if every expected stmgr is registered.
    fn rebuild(&mut self) -> PlanStep {
        if !self.absent().is_empty() {
            return PlanStep::Waiting;
        }
        let registered = self
            .registered
            .values()
            .map(|r| (&r.stmgr, r.instances.as_slice()));
        match pplan::build(
            self.pplan.as_ref(),
            &self.topology,
            registered,
            self.expected_instances,
        ) {
            Ok(plan) => {
                self.pplan = Some(plan.clone());
                PlanStep::Publish(Publish {
                    pplan: plan,
                    recipients: self.registered.values().map(|r| r.conn).collect(),
                })
            }
            Err(e) => PlanStep::Invalid(e),
        }
    }

    /// Handles a heartbeat from `conn` at `now`: OK and recorded if `conn` holds a
    /// registration, else NOTOK.
    pub fn heartbeat(&mut self, conn: ConnId, now: Instant) -> StatusCode {
        let Some(id) = self.by_conn.get(&conn) else {
            return StatusCode::Notok;
        };
        if let Some(r) = self.registered.get_mut(id) {
            r.last_heartbeat = now;
        }
        StatusCode::Ok
    }

    /// A connection closed: its stmgr (if any) becomes absent. The plan does not change until
    /// it registers again. Returns the stmgr id that became absent.
    pub fn disconnect(&mut self, conn: ConnId) -> Option<String> {
        let id = self.by_conn.remove(&conn)?;
        self.registered.remove(&id);
        Some(id)
    }

    /// The stmgr id registered by `conn`.
    pub fn stmgr_of(&self, conn: ConnId) -> Option<&str> {
        self.by_conn.get(&conn).map(String::as_str)
    }

    /// Registered stmgr ids, sorted.
    pub fn registered(&self) -> Vec<String> {
        self.registered.keys().cloned().collect()
    }

    /// Expected stmgr ids not registered, sorted.
    pub fn absent(&self) -> Vec<String> {
        self.expected
            .iter()
            .filter(|id| !self.registered.contains_key(*id))
            .cloned()
            .collect()
    }

    /// Replaces the current plan (a controller change: state or runtime config) and returns
    /// it with every registered stmgr as recipient.
    pub fn replace_pplan(&mut self, pplan: PhysicalPlan) -> Publish {
        self.pplan = Some(pplan.clone());
        Publish {
            pplan,
            recipients: self.registered.values().map(|r| r.conn).collect(),
        }
    }

    /// The connections of the registered stream managers.
    pub fn registered_conns(&self) -> Vec<ConnId> {
        self.registered.values().map(|r| r.conn).collect()
    }

    /// The current physical plan, if one was built.
    pub fn pplan(&self) -> Option<&PhysicalPlan> {
        self.pplan.as_ref()
    }
}

#[cfg(test)]
mod tests;
