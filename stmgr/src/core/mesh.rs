//! The stream-manager mesh, seen from the core: hellos from other stream managers (incoming
//! links), and this stream manager's own client links to every other one in the plan, with
//! their reconnect schedule.

use super::*;
use crate::stmgr_server::check_hello;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PeerState {
    Connecting { attempt: u64 },
    Connected { conn: ConnId },
    Waiting { retry_at: Instant },
}

#[derive(Debug)]
pub(super) struct Peer {
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) state: PeerState,
}

impl Core {
    pub(super) fn on_hello(&mut self, conn: ConnId, packet: &Packet) -> Result<(), String> {
        let req: StrMgrHelloRequest = packet.decode().map_err(|e| e.to_string())?;
        if self.pplan.is_none() {
            // Membership cannot be checked yet, and tuples the peer would send now could not
            // be routed: answer once the plan is here. The peer waits (it only sends data
            // after an OK) and retries if that takes longer than its request timeout.
            debug!(
                conn,
                "holding the hello of {} until the physical plan arrives", req.stmgr
            );
            self.held_hellos.push((conn, packet.reqid, req));
            return Ok(());
        }
        self.answer_hello(conn, &packet.reqid, req);
        Ok(())
    }

    /// Answers the hellos that waited for the first physical plan.
    pub(super) fn answer_held_hellos(&mut self) {
        for (conn, reqid, req) in std::mem::take(&mut self.held_hellos) {
            if self.conns.contains_key(&conn) {
                self.answer_hello(conn, &reqid, req);
            }
        }
    }

    fn answer_hello(&mut self, conn: ConnId, reqid: &ReqId, req: StrMgrHelloRequest) {
        let cfg = &self.cfg;
        let checked = check_hello(
            &req,
            &cfg.topology_name,
            &cfg.topology_id,
            &cfg.stmgr_id,
            self.pplan.as_ref(),
        );
        let ok = checked.is_ok();
        if let Err(reason) = &checked {
            warn!(conn, peer = %self.conns[&conn].peer, "refusing stream manager hello: {reason}");
        }
        let resp = StrMgrHelloResponse {
            status: match checked {
                Ok(()) => status(StatusCode::Ok, None),
                Err(reason) => status(StatusCode::Notok, reason),
            },
        };
        self.send_message(conn, reqid, &resp);
        if !ok {
            self.close(conn);
            return;
        }
        let id = req.stmgr;
        info!(conn, peer = %self.conns[&conn].peer, "stream manager {id} connected");
        if let Some(old) = self.hellos.insert(id.clone(), conn) {
            info!(
                conn = old,
                "stream manager {id} said hello again; closing its previous connection"
            );
            self.close(old);
        }
        if let Some(c) = self.conns.get_mut(&conn) {
            c.role = Role::Stmgr { stmgr_id: id };
        }
    }

    /// Connects to new or moved stream managers, drops the ones that left the plan.
    pub(super) fn update_peers(&mut self) {
        let Some(pplan) = &self.pplan else { return };
        let mut wanted = HashMap::new();
        for s in pplan.stmgrs.iter().filter(|s| s.id != self.cfg.stmgr_id) {
            match u16::try_from(s.data_port) {
                Ok(port) => {
                    wanted.insert(s.id.clone(), (s.host_name.clone(), port));
                }
                Err(_) => warn!(
                    "stream manager {} has an invalid data port {}",
                    s.id, s.data_port
                ),
            }
        }
        let planned: Vec<String> = pplan.stmgrs.iter().map(|s| s.id.clone()).collect();
        let stale: Vec<String> = self
            .peers
            .iter()
            .filter(|(id, p)| !matches!(wanted.get(*id), Some((h, port)) if *h == p.host && *port == p.port))
            .map(|(id, _)| id.clone())
            .collect();
        for id in stale {
            if let Some(Peer {
                state: PeerState::Connected { conn },
                ..
            }) = self.peers.remove(&id)
            {
                info!("stream manager {id} moved or left the plan; closing the connection to it");
                self.close(conn);
            }
        }
        let gone: Vec<ConnId> = self
            .hellos
            .iter()
            .filter(|(id, _)| !planned.contains(id))
            .map(|(_, &c)| c)
            .collect();
        for conn in gone {
            warn!(
                conn,
                "closing a connection from a stream manager that is not in the plan"
            );
            self.close(conn);
        }
        for (id, (host, port)) in wanted {
            if !self.peers.contains_key(&id) {
                self.peers.insert(
                    id.clone(),
                    Peer {
                        host,
                        port,
                        state: PeerState::Waiting { retry_at: self.now },
                    },
                );
                self.connect_peer(&id);
            }
        }
    }

    fn connect_peer(&mut self, id: &str) {
        let Some(p) = self.peers.get_mut(id) else {
            return;
        };
        self.next_attempt += 1;
        p.state = PeerState::Connecting {
            attempt: self.next_attempt,
        };
        self.actions.push(Action::ConnectStmgr {
            stmgr_id: id.to_string(),
            host: p.host.clone(),
            port: p.port,
            attempt: self.next_attempt,
        });
    }

    /// The client connection `attempt` to `stmgr_id` said hello successfully.
    pub fn on_stmgr_client_up(
        &mut self,
        stmgr_id: &str,
        attempt: u64,
        conn: ConnId,
        peer: String,
        now: Instant,
    ) {
        self.now = now;
        match self.peers.get_mut(stmgr_id) {
            Some(p) if p.state == (PeerState::Connecting { attempt }) => {
                p.state = PeerState::Connected { conn };
                info!(conn, %peer, "connected to stream manager {stmgr_id}");
                let role = Role::StmgrClient {
                    stmgr_id: stmgr_id.to_string(),
                };
                self.conns.insert(conn, Conn { role, peer });
                self.rebuild_routes();
                self.back_pressure_joined(conn);
                self.maybe_send_assignments();
            }
            _ => {
                debug!(conn, "dropping an outdated connection to {stmgr_id}");
                self.actions.push(Action::Close(conn));
            }
        }
    }

    /// The client connection `attempt` to `stmgr_id` failed; retry later.
    pub fn on_stmgr_client_failed(&mut self, stmgr_id: &str, attempt: u64, now: Instant) {
        self.now = now;
        if let Some(p) = self.peers.get_mut(stmgr_id) {
            if p.state == (PeerState::Connecting { attempt }) {
                p.state = PeerState::Waiting {
                    retry_at: now + RECONNECT_INTERVAL,
                };
            }
        }
    }

    /// Time passed: reconnect to stream managers whose retry time came.
    pub fn on_timer(&mut self, now: Instant) {
        self.now = now;
        self.maybe_send_assignments();
        let due = |p: &Peer| matches!(p.state, PeerState::Waiting { retry_at } if retry_at <= now);
        if !self.peers.values().any(due) {
            return;
        }
        let ids: Vec<String> = self
            .peers
            .iter()
            .filter(|(_, p)| due(p))
            .map(|(id, _)| id.clone())
            .collect();
        for id in ids {
            self.connect_peer(&id);
        }
    }
}
