//! Authentication of a topology's links.
//!
//! Each topology has a [`Secret`], made by `heron submit` and kept in a file that only the
//! topology's owner can read (`<working dir>/auth/secret`, mode 0600). Every connection
//! between its processes (instance → stream manager, stream manager → stream manager, stream
//! manager → tmaster, tmaster and stream managers → checkpoint manager) starts with the
//! [`handshake`]: an HMAC-SHA256 over fresh nonces that proves both ends hold the secret,
//! before any Heron message. The tmaster's controller wants `Authorization: Bearer <token>`,
//! the token being [`Secret::bearer_token`].
//!
//! A topology with `heron-rs.auth.required=false` ([`REQUIRED_KEY`]) runs without, so plain
//! Heron clients can connect.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let secret = heron_auth::Secret::generate();
//! let (mut server_end, mut client_end) = tokio::io::duplex(256);
//! let theirs = secret.clone();
//! let server = tokio::spawn(async move { heron_auth::accept(&mut server_end, &theirs).await });
//! heron_auth::connect(&mut client_end, &secret).await.unwrap();
//! server.await.unwrap().unwrap();
//! # }
//! ```

pub mod handshake;
mod io;
#[cfg(feature = "tokio")]
mod link;
#[cfg(feature = "tokio")]
mod pending;
mod secret;
#[cfg(feature = "tokio")]
mod tls;

pub use handshake::HandshakeError;
#[cfg(feature = "tokio")]
pub use io::{accept, connect};
pub use io::{connect_blocking, connect_std, HANDSHAKE_TIMEOUT};
#[cfg(feature = "tokio")]
pub use link::{admit, dial, dial_std, Link, StdLink};
#[cfg(feature = "tokio")]
pub use pending::{PendingHandshakes, MAX_PENDING_HANDSHAKES};
pub use secret::{Secret, SECRET_LEN};
#[cfg(feature = "tokio")]
pub use tls::{tls_enabled, Tls, SERVER_NAME, TLS_KEY};

/// The topology config key that turns authentication off (`false`); on by default.
pub const REQUIRED_KEY: &str = "heron-rs.auth.required";

/// Reads [`REQUIRED_KEY`]'s value: absent → `true`; `true`/`false` in any case; anything
/// else is an error naming the key.
///
/// ```
/// assert_eq!(heron_auth::required(None), Ok(true));
/// assert_eq!(heron_auth::required(Some("FALSE")), Ok(false));
/// assert!(heron_auth::required(Some("no")).is_err());
/// ```
pub fn required(value: Option<&str>) -> Result<bool, String> {
    flag(REQUIRED_KEY, value, true)
}

/// A true/false config value (any case, surrounding blanks ignored); `default` when absent.
pub(crate) fn flag(key: &str, value: Option<&str>, default: bool) -> Result<bool, String> {
    match value.map(str::trim) {
        None => Ok(default),
        Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
        Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
        Some(v) => Err(format!("{key} must be true or false, not {v:?}")),
    }
}

/// Why a secret could not be read or a handshake failed.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The secret file is unusable.
    #[error("bad topology secret: {0}")]
    BadSecret(String),
    /// Reading or writing a file or socket failed.
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    /// The peer failed the handshake.
    #[error("{0}")]
    Handshake(#[from] HandshakeError),
    /// The peer did not finish the handshake in time.
    #[error("no handshake within {0:?}")]
    Timeout(std::time::Duration),
}
