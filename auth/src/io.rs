//! The handshake over a socket: [`accept`] and [`connect`] for tokio streams,
//! [`connect_std`] for a blocking `std::net::TcpStream`. Each reads exactly the handshake's
//! bytes, so the stream then carries Heron packets from its first byte, and each gives up
//! after [`HANDSHAKE_TIMEOUT`].

use crate::handshake::{ClientSide, ServerSide, CHALLENGE_LEN, MAGIC, PROOF_LEN, RESPONSE_LEN};
use crate::{AuthError, HandshakeError, Secret};
use std::io::{Read, Write};
use std::time::Duration;

/// How long either side waits for the other's handshake bytes.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Proves the client on an accepted stream (and proves this server to it).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use heron_auth::{accept, connect, Secret};
/// let secret = Secret::generate();
/// let (mut a, mut b) = tokio::io::duplex(256);
/// let s2 = secret.clone();
/// let server = tokio::spawn(async move { accept(&mut a, &s2).await });
/// connect(&mut b, &secret).await.unwrap();
/// server.await.unwrap().unwrap();
/// # }
/// ```
#[cfg(feature = "tokio")]
pub async fn accept<S>(stream: &mut S, secret: &Secret) -> Result<(), AuthError>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let work = async {
        let server = ServerSide::new(secret, rand::random());
        stream.write_all(&server.challenge()).await.map_err(io)?;
        let mut response = [0u8; RESPONSE_LEN];
        stream
            .read_exact(&mut response[..MAGIC.len()])
            .await
            .map_err(io)?;
        if &response[..MAGIC.len()] != MAGIC {
            return Err(HandshakeError::NotAHandshake.into());
        }
        stream
            .read_exact(&mut response[MAGIC.len()..])
            .await
            .map_err(io)?;
        let proof = server.check(&response)?;
        stream.write_all(&proof).await.map_err(io)?;
        stream.flush().await.map_err(io)
    };
    tokio::time::timeout(HANDSHAKE_TIMEOUT, work)
        .await
        .map_err(|_| AuthError::Timeout(HANDSHAKE_TIMEOUT))?
}

/// Proves this client on a connected stream and checks the server's proof.
#[cfg(feature = "tokio")]
pub async fn connect<S>(stream: &mut S, secret: &Secret) -> Result<(), AuthError>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let work = async {
        let mut client = ClientSide::new(secret, rand::random());
        let mut challenge = [0u8; CHALLENGE_LEN];
        stream.read_exact(&mut challenge).await.map_err(io)?;
        let response = client.respond(&challenge)?;
        stream.write_all(&response).await.map_err(io)?;
        let mut proof = [0u8; PROOF_LEN];
        stream.read_exact(&mut proof).await.map_err(io)?;
        client.check(&proof).map_err(AuthError::from)
    };
    tokio::time::timeout(HANDSHAKE_TIMEOUT, work)
        .await
        .map_err(|_| AuthError::Timeout(HANDSHAKE_TIMEOUT))?
}

/// [`connect`] on a blocking stream. The stream's read and write timeouts are set to
/// [`HANDSHAKE_TIMEOUT`] for the handshake and restored after it.
pub fn connect_std(stream: &mut std::net::TcpStream, secret: &Secret) -> Result<(), AuthError> {
    let saved = SavedTimeouts::set_for_handshake(stream)?;
    let outcome = connect_blocking(stream, secret);
    saved.restore(stream)?;
    outcome
}

/// A blocking socket's read and write timeouts from before a handshake, which sets both to
/// [`HANDSHAKE_TIMEOUT`].
pub(crate) struct SavedTimeouts(Option<Duration>, Option<Duration>);

impl SavedTimeouts {
    /// Saves `tcp`'s timeouts and sets both to [`HANDSHAKE_TIMEOUT`].
    pub(crate) fn set_for_handshake(tcp: &std::net::TcpStream) -> Result<Self, AuthError> {
        let saved = SavedTimeouts(
            tcp.read_timeout().map_err(io)?,
            tcp.write_timeout().map_err(io)?,
        );
        tcp.set_read_timeout(Some(HANDSHAKE_TIMEOUT)).map_err(io)?;
        tcp.set_write_timeout(Some(HANDSHAKE_TIMEOUT)).map_err(io)?;
        Ok(saved)
    }

    /// Puts the saved timeouts back on `tcp`.
    pub(crate) fn restore(self, tcp: &std::net::TcpStream) -> Result<(), AuthError> {
        tcp.set_read_timeout(self.0).map_err(io)?;
        tcp.set_write_timeout(self.1).map_err(io)
    }
}

/// The client side over any blocking reader-writer (no timeout of its own).
pub fn connect_blocking<S: Read + Write>(stream: &mut S, secret: &Secret) -> Result<(), AuthError> {
    let mut client = ClientSide::new(secret, rand::random());
    let mut challenge = [0u8; CHALLENGE_LEN];
    stream.read_exact(&mut challenge).map_err(io)?;
    let response = client.respond(&challenge)?;
    stream.write_all(&response).map_err(io)?;
    stream.flush().map_err(io)?;
    let mut proof = [0u8; PROOF_LEN];
    stream.read_exact(&mut proof).map_err(io)?;
    client.check(&proof).map_err(AuthError::from)
}

fn io(e: std::io::Error) -> AuthError {
    AuthError::Io("during the handshake".into(), e)
}

#[cfg(all(test, feature = "tokio"))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn both_sides_pass_with_one_secret_and_fail_with_two() {
        let secret = Secret::generate();
        let (mut a, mut b) = tokio::io::duplex(256);
        let s2 = secret.clone();
        let server = tokio::spawn(async move { accept(&mut a, &s2).await });
        connect(&mut b, &Secret::generate()).await.unwrap_err();
        let e = server.await.unwrap().unwrap_err();
        assert!(
            matches!(e, AuthError::Handshake(HandshakeError::ClientNotProven)),
            "{e}"
        );
    }

    #[tokio::test]
    async fn a_plain_heron_client_is_told_apart_and_the_bytes_after_are_untouched() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let secret = Secret::generate();
        let (mut a, mut b) = tokio::io::duplex(1024);
        let s2 = secret.clone();
        let server = tokio::spawn(async move { accept(&mut a, &s2).await });
        b.write_all(&[0, 0, 0, 60, 0, 0, 0, 32, 1, 2, 3])
            .await
            .unwrap();
        let e = server.await.unwrap().unwrap_err();
        assert!(
            matches!(e, AuthError::Handshake(HandshakeError::NotAHandshake)),
            "{e}"
        );

        // After a good handshake the next bytes are the application's.
        let (mut a, mut b) = tokio::io::duplex(1024);
        let s2 = secret.clone();
        let server = tokio::spawn(async move {
            accept(&mut a, &s2).await.unwrap();
            let mut rest = [0u8; 5];
            a.read_exact(&mut rest).await.unwrap();
            rest
        });
        connect(&mut b, &secret).await.unwrap();
        b.write_all(b"hello").await.unwrap();
        assert_eq!(&server.await.unwrap(), b"hello");
    }

    #[test]
    fn the_blocking_client_talks_to_the_async_server() {
        let secret = Secret::generate();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let s2 = secret.clone();
        let server = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let l = tokio::net::TcpListener::from_std({
                    listener.set_nonblocking(true).unwrap();
                    listener
                })
                .unwrap();
                let (mut s, _) = l.accept().await.unwrap();
                accept(&mut s, &s2).await
            })
        });
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        connect_std(&mut stream, &secret).unwrap();
        assert_eq!(stream.read_timeout().unwrap(), None, "timeouts restored");
        server.join().unwrap().unwrap();
    }
}
