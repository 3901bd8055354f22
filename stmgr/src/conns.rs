//! The stream manager's connections and what each one is: an instance (after it registered),
//! another stream manager (after its hello), or this stream manager's own link to one; and
//! the instances registered so far, which the tmaster is told about once all are in.

use crate::ids::{ConnId, Incoming};
use heron_proto::system::Instance;
use std::collections::HashMap;

/// What a connection is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Role {
    PendingInstance,
    Instance { instance_id: String, task_id: i32 },
    PendingStmgr,
    Stmgr { stmgr_id: String },
    StmgrClient { stmgr_id: String },
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Role::PendingInstance => write!(f, "unregistered instance"),
            Role::Instance { instance_id, .. } => write!(f, "instance {instance_id}"),
            Role::PendingStmgr => write!(f, "stream manager (no hello yet)"),
            Role::Stmgr { stmgr_id } => write!(f, "stream manager {stmgr_id} (incoming)"),
            Role::StmgrClient { stmgr_id } => write!(f, "stream manager {stmgr_id} (outgoing)"),
        }
    }
}

#[derive(Debug)]
struct Conn {
    role: Role,
    peer: String,
}

#[derive(Debug)]
struct Registered {
    instance: Instance,
    conn: Option<ConnId>,
}

/// Every open connection and every registered instance.
#[derive(Debug, Default)]
pub(crate) struct Conns {
    conns: HashMap<ConnId, Conn>,
    registered: HashMap<String, Registered>,
    /// The instance records last handed to the tmaster client.
    reported: Option<Vec<Instance>>,
}

impl Conns {
    /// A server accepted `conn` from `peer`.
    pub fn accepted(&mut self, conn: ConnId, kind: Incoming, peer: String) -> &Role {
        let role = match kind {
            Incoming::Instance => Role::PendingInstance,
            Incoming::Stmgr => Role::PendingStmgr,
        };
        &self.conns.entry(conn).or_insert(Conn { role, peer }).role
    }

    /// This stream manager's link `conn` to `stmgr_id` is up.
    pub fn linked(&mut self, conn: ConnId, stmgr_id: &str, peer: String) {
        let role = Role::StmgrClient {
            stmgr_id: stmgr_id.to_string(),
        };
        self.conns.insert(conn, Conn { role, peer });
    }

    /// What `conn` is, if it is open.
    pub fn role(&self, conn: ConnId) -> Option<&Role> {
        self.conns.get(&conn).map(|c| &c.role)
    }

    /// The address `conn` came from (empty if it is closed).
    pub fn peer(&self, conn: ConnId) -> &str {
        self.conns.get(&conn).map_or("", |c| &c.peer)
    }

    /// `true` while `conn` is open.
    pub fn is_open(&self, conn: ConnId) -> bool {
        self.conns.contains_key(&conn)
    }

    /// Forgets `conn` (and that its instance is connected); returns what it was.
    pub fn remove(&mut self, conn: ConnId) -> Option<Role> {
        let c = self.conns.remove(&conn)?;
        if let Role::Instance { instance_id, .. } = &c.role {
            if let Some(r) = self.registered.get_mut(instance_id) {
                if r.conn == Some(conn) {
                    r.conn = None;
                }
            }
        }
        Some(c.role)
    }

    /// `instance` registered on `conn`; returns the connection it registered on before, which
    /// must be closed.
    pub fn register(&mut self, conn: ConnId, instance: Instance) -> Option<ConnId> {
        let id = instance.instance_id.clone();
        if let Some(c) = self.conns.get_mut(&conn) {
            c.role = Role::Instance {
                instance_id: id.clone(),
                task_id: instance.info.task_id,
            };
        }
        let old = self.registered.get(&id).and_then(|r| r.conn);
        let conn = Some(conn);
        self.registered.insert(id, Registered { instance, conn });
        old
    }

    /// `conn` said an accepted hello as `stmgr_id`.
    pub fn hello(&mut self, conn: ConnId, stmgr_id: &str) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.role = Role::Stmgr {
                stmgr_id: stmgr_id.to_string(),
            };
        }
    }

    /// The connection of the registered instance `instance_id`.
    pub fn instance_conn(&self, instance_id: &str) -> Option<ConnId> {
        self.registered.get(instance_id).and_then(|r| r.conn)
    }

    /// The connections of every registered instance.
    pub fn instance_conns(&self) -> impl Iterator<Item = ConnId> + '_ {
        self.registered.values().filter_map(|r| r.conn)
    }

    /// The open instance connections with their task ids.
    pub fn tasks(&self) -> impl Iterator<Item = (ConnId, i32)> + '_ {
        self.conns.iter().filter_map(|(&id, c)| match &c.role {
            Role::Instance { task_id, .. } => Some((id, *task_id)),
            _ => None,
        })
    }

    /// The records of the instances `ids`, once every one registered and only if they differ
    /// from what was reported last (which they then become).
    pub fn report(&mut self, ids: &[String]) -> Option<Vec<Instance>> {
        let all: Vec<Instance> = ids
            .iter()
            .map(|id| self.registered.get(id).map(|r| r.instance.clone()))
            .collect::<Option<_>>()?;
        if self.reported.as_ref() == Some(&all) {
            return None;
        }
        self.reported = Some(all.clone());
        Some(all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(component: &str, task: i32) -> Instance {
        crate::testutil::instance("stmgr-1", component, task)
    }

    #[test]
    fn registrations_replace_older_connections_and_are_reported_once() {
        let mut c = Conns::default();
        assert_eq!(
            c.accepted(1, Incoming::Instance, "a".into()),
            &Role::PendingInstance
        );
        c.accepted(2, Incoming::Instance, "b".into());
        let ids = vec!["container_1_i_1".to_string(), "container_1_i_2".to_string()];
        assert_eq!(c.register(1, instance("i", 1)), None);
        assert_eq!(c.report(&ids), None, "i2 is missing");
        assert_eq!(c.register(2, instance("i", 2)), None);
        assert_eq!(c.report(&ids).map(|v| v.len()), Some(2));
        assert_eq!(c.report(&ids), None, "nothing changed");
        c.accepted(3, Incoming::Instance, "c".into());
        assert_eq!(c.register(3, instance("i", 1)), Some(1));
        assert_eq!(c.instance_conn("container_1_i_1"), Some(3));
        // the old connection closing does not disconnect the new one
        assert!(matches!(c.remove(1), Some(Role::Instance { .. })));
        assert_eq!(c.instance_conn("container_1_i_1"), Some(3));
        assert_eq!(
            c.remove(3).map(|r| r.to_string()),
            Some("instance container_1_i_1".into())
        );
        assert_eq!(c.instance_conn("container_1_i_1"), None);
        assert!(c.remove(3).is_none());
        let mut tasks: Vec<(ConnId, i32)> = c.tasks().collect();
        tasks.sort();
        assert_eq!(tasks, vec![(2, 2)]);
        assert_eq!(c.peer(2), "b");
        assert_eq!(c.peer(9), "");
    }
}
