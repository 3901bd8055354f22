//! Commands run on someone else's behalf: the tracker's page runs `heron activate`,
//! `deactivate`, `restart`, `update` and `kill` as this CLI, with the bearer token its user
//! typed in [`CONTROL_TOKEN_VAR`]. Then the CLI acts only when that token is the topology's
//! (for a topology that requires authentication), although the CLI itself can read the
//! secret: the page's user may not.

use super::target::Resolved;
use heron_statemgr::StateManagerExt;

/// The variable that carries a delegating user's bearer token (set, even empty, means
/// "delegated").
pub const CONTROL_TOKEN_VAR: &str = "HERONRS_CONTROL_TOKEN";
/// The exit code of a command refused for its token (the tracker answers 401).
pub const TOKEN_REFUSED_EXIT: i32 = 3;

/// A delegated command whose token is missing or wrong.
#[derive(Debug, thiserror::Error)]
#[error("refused: topology {topology} requires authentication and the token given is {what}")]
pub struct TokenRefused {
    /// The topology.
    pub topology: String,
    /// `missing` or `wrong`.
    pub what: &'static str,
}

/// When the command is delegated ([`CONTROL_TOKEN_VAR`] is set), fails with [`TokenRefused`]
/// unless the token is the controller token of topology `name` (or the topology does not
/// require authentication, or does not exist: the command then reports that itself).
pub fn check(r: &Resolved, name: &str) -> anyhow::Result<()> {
    let Ok(given) = std::env::var(CONTROL_TOKEN_VAR) else {
        return Ok(());
    };
    let Ok(state) = r.state_manager.open() else {
        return Ok(());
    };
    let Ok(Some(topology)) = state.get_topology(name) else {
        return Ok(());
    };
    let Some(secret) = super::control::topology_secret(r, name, &topology)? else {
        return Ok(());
    };
    let given = given.trim();
    if given.is_empty() {
        return Err(TokenRefused {
            topology: name.to_string(),
            what: "missing",
        }
        .into());
    }
    if !secret.check_bearer(Some(&format!("Bearer {given}"))) {
        return Err(TokenRefused {
            topology: name.to_string(),
            what: "wrong",
        }
        .into());
    }
    Ok(())
}
