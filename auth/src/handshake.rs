//! The handshake every authenticated link starts with, as two pure state machines (the
//! socket side is in [`crate::io`]).
//!
//! ```text
//! server → client   CHALLENGE  "HRNAUTH1" ‖ server nonce (32)
//! client → server   RESPONSE   "HRNAUTH1" ‖ client nonce (32) ‖ HMAC(secret, "heron-rs client" ‖ sn ‖ cn)
//! server → client   PROOF      HMAC(secret, "heron-rs server" ‖ sn ‖ cn)
//! ```
//!
//! Then the Heron packets flow as usual. Both sides prove they hold the topology's secret;
//! the server's fresh nonce makes a recorded response useless on another connection, and the
//! two labels keep one side's MAC from being reflected as the other's. Messages have fixed
//! sizes, so neither side reads past the handshake. A peer that sends anything else (a plain
//! Heron client sending its register request) fails on the magic.

use crate::Secret;

/// The first 8 bytes of the challenge and of the response.
pub const MAGIC: &[u8; 8] = b"HRNAUTH1";
/// Bytes in a nonce.
pub const NONCE_LEN: usize = 32;
/// Bytes in the server's challenge.
pub const CHALLENGE_LEN: usize = MAGIC.len() + NONCE_LEN;
/// Bytes in the client's response.
pub const RESPONSE_LEN: usize = MAGIC.len() + NONCE_LEN + 32;
/// Bytes in the server's proof.
pub const PROOF_LEN: usize = 32;

const CLIENT_LABEL: &[u8] = b"heron-rs client";
const SERVER_LABEL: &[u8] = b"heron-rs server";

/// Why a handshake failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// The peer's first bytes are not a heron-rs handshake.
    #[error(
        "the peer did not start a heron-rs handshake (a plain Heron client? the topology \
         needs heron-rs.auth.required=false to accept one)"
    )]
    NotAHandshake,
    /// The client's MAC does not match: it does not hold this topology's secret.
    #[error("the client's proof does not match this topology's secret")]
    ClientNotProven,
    /// The server's MAC does not match: it does not hold this topology's secret.
    #[error("the server's proof does not match this topology's secret")]
    ServerNotProven,
}

/// The accepting side.
///
/// ```
/// use heron_auth::handshake::{ClientSide, ServerSide};
/// use heron_auth::Secret;
/// let secret = Secret::generate();
/// let server = ServerSide::new(&secret, [1; 32]);
/// let mut client = ClientSide::new(&secret, [2; 32]);
/// let response = client.respond(&server.challenge()).unwrap();
/// let proof = server.check(&response).unwrap();
/// client.check(&proof).unwrap();
/// ```
pub struct ServerSide<'a> {
    secret: &'a Secret,
    nonce: [u8; NONCE_LEN],
}

impl<'a> ServerSide<'a> {
    /// A server side with a fresh `nonce` (random, never reused).
    pub fn new(secret: &'a Secret, nonce: [u8; NONCE_LEN]) -> Self {
        ServerSide { secret, nonce }
    }

    /// What the server sends first.
    pub fn challenge(&self) -> [u8; CHALLENGE_LEN] {
        let mut out = [0u8; CHALLENGE_LEN];
        out[..MAGIC.len()].copy_from_slice(MAGIC);
        out[MAGIC.len()..].copy_from_slice(&self.nonce);
        out
    }

    /// Checks the client's response; on success returns the proof to send back.
    pub fn check(&self, response: &[u8; RESPONSE_LEN]) -> Result<[u8; PROOF_LEN], HandshakeError> {
        let (magic, rest) = response.split_at(MAGIC.len());
        if magic != MAGIC {
            return Err(HandshakeError::NotAHandshake);
        }
        let (client_nonce, tag) = rest.split_at(NONCE_LEN);
        if !self
            .secret
            .verify(&[CLIENT_LABEL, &self.nonce, client_nonce], tag)
        {
            return Err(HandshakeError::ClientNotProven);
        }
        Ok(self.secret.mac(&[SERVER_LABEL, &self.nonce, client_nonce]))
    }
}

/// The connecting side.
pub struct ClientSide<'a> {
    secret: &'a Secret,
    nonce: [u8; NONCE_LEN],
    server_nonce: Option<[u8; NONCE_LEN]>,
}

impl<'a> ClientSide<'a> {
    /// A client side with a fresh `nonce`.
    pub fn new(secret: &'a Secret, nonce: [u8; NONCE_LEN]) -> Self {
        ClientSide {
            secret,
            nonce,
            server_nonce: None,
        }
    }

    /// Answers the server's challenge.
    pub fn respond(
        &mut self,
        challenge: &[u8; CHALLENGE_LEN],
    ) -> Result<[u8; RESPONSE_LEN], HandshakeError> {
        let (magic, server_nonce) = challenge.split_at(MAGIC.len());
        if magic != MAGIC {
            return Err(HandshakeError::NotAHandshake);
        }
        let mut sn = [0u8; NONCE_LEN];
        sn.copy_from_slice(server_nonce);
        self.server_nonce = Some(sn);
        let tag = self.secret.mac(&[CLIENT_LABEL, &sn, &self.nonce]);
        let mut out = [0u8; RESPONSE_LEN];
        out[..MAGIC.len()].copy_from_slice(MAGIC);
        out[MAGIC.len()..MAGIC.len() + NONCE_LEN].copy_from_slice(&self.nonce);
        out[MAGIC.len() + NONCE_LEN..].copy_from_slice(&tag);
        Ok(out)
    }

    /// Checks the server's proof (after [`ClientSide::respond`]).
    pub fn check(&self, proof: &[u8; PROOF_LEN]) -> Result<(), HandshakeError> {
        let Some(sn) = self.server_nonce else {
            return Err(HandshakeError::ServerNotProven);
        };
        if self.secret.verify(&[SERVER_LABEL, &sn, &self.nonce], proof) {
            Ok(())
        } else {
            Err(HandshakeError::ServerNotProven)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (Secret, Secret) {
        (Secret::from_bytes([1; 32]), Secret::from_bytes([2; 32]))
    }

    #[test]
    fn the_same_secret_proves_both_sides() {
        let (s, _) = pair();
        let server = ServerSide::new(&s, [9; 32]);
        let mut client = ClientSide::new(&s, [8; 32]);
        let resp = client.respond(&server.challenge()).unwrap();
        let proof = server.check(&resp).unwrap();
        assert_eq!(client.check(&proof), Ok(()));
    }

    #[test]
    fn a_wrong_secret_fails_on_the_side_that_checks_it() {
        let (s, other) = pair();
        let server = ServerSide::new(&s, [9; 32]);
        let mut client = ClientSide::new(&other, [8; 32]);
        let resp = client.respond(&server.challenge()).unwrap();
        assert_eq!(server.check(&resp), Err(HandshakeError::ClientNotProven));
        // A server without the secret cannot fool a client that has it.
        let fake = ServerSide::new(&other, [9; 32]);
        let mut client = ClientSide::new(&s, [8; 32]);
        let resp = client.respond(&fake.challenge()).unwrap();
        let proof = ServerSide::new(&other, [9; 32]).check(&resp);
        assert_eq!(proof, Err(HandshakeError::ClientNotProven));
        let forged = [0u8; PROOF_LEN];
        assert_eq!(client.check(&forged), Err(HandshakeError::ServerNotProven));
    }

    #[test]
    fn a_recorded_response_does_not_pass_a_new_challenge() {
        let (s, _) = pair();
        let mut client = ClientSide::new(&s, [8; 32]);
        let recorded = client
            .respond(&ServerSide::new(&s, [9; 32]).challenge())
            .unwrap();
        let fresh = ServerSide::new(&s, [10; 32]);
        assert_eq!(fresh.check(&recorded), Err(HandshakeError::ClientNotProven));
    }

    #[test]
    fn the_server_proof_is_not_the_client_mac_reflected() {
        let (s, _) = pair();
        let server = ServerSide::new(&s, [9; 32]);
        let mut client = ClientSide::new(&s, [8; 32]);
        let resp = client.respond(&server.challenge()).unwrap();
        let mut reflected = [0u8; PROOF_LEN];
        reflected.copy_from_slice(&resp[MAGIC.len() + NONCE_LEN..]);
        assert_eq!(
            client.check(&reflected),
            Err(HandshakeError::ServerNotProven)
        );
    }

    #[test]
    fn other_bytes_are_not_a_handshake() {
        let (s, _) = pair();
        let server = ServerSide::new(&s, [9; 32]);
        // A Heron packet starts with a 4-byte length, then a type name length.
        let mut heron = [0u8; RESPONSE_LEN];
        heron[..8].copy_from_slice(&[0, 0, 0, 60, 0, 0, 0, 32]);
        assert_eq!(server.check(&heron), Err(HandshakeError::NotAHandshake));
        let mut client = ClientSide::new(&s, [8; 32]);
        assert_eq!(
            client.respond(&[0u8; CHALLENGE_LEN]),
            Err(HandshakeError::NotAHandshake)
        );
        assert_eq!(client.check(&[0; 32]), Err(HandshakeError::ServerNotProven));
    }
}
