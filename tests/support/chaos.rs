//! Kill -9 of random role processes while a topology runs (the effectively-once tests).

use super::{role_pids, TestEnv};
use rand::{RngExt, SeedableRng};
use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::Duration;

/// The roles of an `EFFECTIVELY_ONCE` topology's processes.
pub const ROLES: [&str; 4] = ["tmaster", "stmgr", "ckptmgr", "instance"];

/// Kills a process every `every` until `stop` says so (or its sender goes), the roles in
/// turn (from a random one), a random process of each; returns the kills per role.
pub fn killer(
    env: &TestEnv,
    every: Duration,
    stop: mpsc::Receiver<()>,
    seed: u64,
) -> BTreeMap<&'static str, u32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut kills = BTreeMap::new();
    let (first, mut turn) = (rng.random_range(0..ROLES.len()), 0);
    while let Err(mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(every) {
        let role = ROLES[(first + turn) % ROLES.len()];
        turn += 1;
        let pids = role_pids(env, role);
        if pids.is_empty() {
            continue; // between a kill and its restart
        }
        let pid = pids[rng.random_range(0..pids.len())];
        // SAFETY: kill(2) with a pid we read from /proc; at worst it is already gone
        if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
            *kills.entry(role).or_insert(0) += 1;
        }
    }
    kills
}
