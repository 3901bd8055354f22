//! Optional TLS on the links between hosts (`heron-rs.tls.enabled=true`): the stream
//! managers' data links and the stream managers' links to the tmaster.
//!
//! `heron submit` makes a certificate authority for the topology, signs one certificate with
//! it (for the name [`SERVER_NAME`], whichever host a daemon runs on), writes the CA
//! certificate, that certificate and its key next to the secret (mode 0600) and forgets the
//! CA's key, so no other certificate can ever be signed for the topology. Every server shows
//! the certificate; every client trusts only that CA. The HMAC handshake then runs inside
//! the TLS session, so TLS encrypts and proves the server, and the secret proves the client.

use crate::AuthError;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The topology config key that turns TLS on (`true`); off by default.
pub const TLS_KEY: &str = "heron-rs.tls.enabled";
/// The name in the topology's certificate, checked by every client.
pub const SERVER_NAME: &str = "heron-rs.topology";

const CA_FILE: &str = "tls-ca.der";
const CERT_FILE: &str = "tls-cert.der";
const KEY_FILE: &str = "tls-key.der";

/// Reads [`TLS_KEY`]'s value: absent → `false`; `true`/`false` in any case; anything else is
/// an error naming the key.
///
/// ```
/// assert_eq!(heron_auth::tls_enabled(None), Ok(false));
/// assert_eq!(heron_auth::tls_enabled(Some("true")), Ok(true));
/// assert!(heron_auth::tls_enabled(Some("yes")).is_err());
/// ```
pub fn tls_enabled(value: Option<&str>) -> Result<bool, String> {
    crate::flag(TLS_KEY, value, false)
}

/// The topology's TLS identity, loaded: a server config showing its certificate and a client
/// config trusting only its CA.
#[derive(Clone)]
pub struct Tls {
    acceptor: tokio_rustls::TlsAcceptor,
    connector: tokio_rustls::TlsConnector,
    client: Arc<rustls::ClientConfig>,
    ca: CertificateDer<'static>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tls(..)")
    }
}

impl PartialEq for Tls {
    fn eq(&self, other: &Tls) -> bool {
        self.ca == other.ca
    }
}

impl Eq for Tls {}

fn tls_err(what: &str) -> impl FnOnce(rustls::Error) -> AuthError + '_ {
    move |e| AuthError::BadSecret(format!("{what}: {e}"))
}

impl Tls {
    /// Makes the topology's CA and certificate and writes them into `dir` (the directory of
    /// the secret), replacing old ones.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// heron_auth::Tls::create(dir.path()).unwrap();
    /// let tls = heron_auth::Tls::load(dir.path()).unwrap();
    /// assert_eq!(tls, heron_auth::Tls::load(dir.path()).unwrap());
    /// ```
    pub fn create(dir: &Path) -> Result<(), AuthError> {
        let bad = |e: rcgen::Error| AuthError::BadSecret(format!("making the certificate: {e}"));
        let ca_key = rcgen::KeyPair::generate().map_err(bad)?;
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(bad)?;
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "heron-rs topology CA");
        let ca = ca_params.self_signed(&ca_key).map_err(bad)?;
        let key = rcgen::KeyPair::generate().map_err(bad)?;
        let params = rcgen::CertificateParams::new(vec![SERVER_NAME.to_string()]).map_err(bad)?;
        let cert = params.signed_by(&key, &ca, &ca_key).map_err(bad)?;
        crate::secret::write_private(&dir.join(CA_FILE), ca.der())?;
        crate::secret::write_private(&dir.join(CERT_FILE), cert.der())?;
        crate::secret::write_private(&dir.join(KEY_FILE), &key.serialize_der())
    }

    /// Loads what [`Tls::create`] wrote into `dir`.
    pub fn load(dir: &Path) -> Result<Tls, AuthError> {
        let read = |name: &str| -> Result<Vec<u8>, AuthError> {
            let path: PathBuf = dir.join(name);
            crate::secret::read_private(&path)
        };
        let ca = CertificateDer::from(read(CA_FILE)?);
        let cert = CertificateDer::from(read(CERT_FILE)?);
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(read(KEY_FILE)?));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(tls_err("TLS versions"))?
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .map_err(tls_err("the topology's certificate"))?;
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(ca.clone())
            .map_err(tls_err("the topology's CA"))?;
        let client = Arc::new(
            rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(tls_err("TLS versions"))?
                .with_root_certificates(roots)
                .with_no_client_auth(),
        );
        Ok(Tls {
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(server)),
            connector: tokio_rustls::TlsConnector::from(client.clone()),
            client,
            ca,
        })
    }

    fn server_name() -> ServerName<'static> {
        ServerName::try_from(SERVER_NAME).expect("a valid DNS name")
    }

    /// The server side of TLS on an accepted connection (within the handshake timeout).
    pub async fn accept(&self, tcp: tokio::net::TcpStream) -> Result<crate::Link, AuthError> {
        let work = self.acceptor.accept(tcp);
        let tls = tokio::time::timeout(crate::HANDSHAKE_TIMEOUT, work)
            .await
            .map_err(|_| AuthError::Timeout(crate::HANDSHAKE_TIMEOUT))?
            .map_err(|e| AuthError::Io("TLS handshake".into(), e))?;
        Ok(crate::Link::Tls(Box::new(tls.into())))
    }

    /// The client side of TLS on a connected stream: checks the server's certificate against
    /// the topology's CA.
    pub async fn connect(&self, tcp: tokio::net::TcpStream) -> Result<crate::Link, AuthError> {
        let work = self.connector.connect(Self::server_name(), tcp);
        let tls = tokio::time::timeout(crate::HANDSHAKE_TIMEOUT, work)
            .await
            .map_err(|_| AuthError::Timeout(crate::HANDSHAKE_TIMEOUT))?
            .map_err(|e| AuthError::Io("TLS handshake".into(), e))?;
        Ok(crate::Link::Tls(Box::new(tls.into())))
    }

    /// [`Tls::connect`] on a blocking stream (the TLS handshake happens on first use).
    pub fn connect_std(
        &self,
        tcp: std::net::TcpStream,
    ) -> Result<rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>, AuthError> {
        let conn = rustls::ClientConnection::new(self.client.clone(), Self::server_name())
            .map_err(tls_err("TLS client"))?;
        Ok(rustls::StreamOwned::new(conn, tcp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_client_trusts_only_its_topology_and_the_secret_handshake_runs_inside() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        Tls::create(a.path()).unwrap();
        Tls::create(b.path()).unwrap();
        let (ours, theirs) = (Tls::load(a.path()).unwrap(), Tls::load(b.path()).unwrap());
        assert_ne!(ours, theirs);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let secret = crate::Secret::generate();
        let (server_tls, server_secret) = (ours.clone(), secret.clone());
        let server = tokio::spawn(async move {
            let mut outcomes = Vec::new();
            for _ in 0..2 {
                let (tcp, _) = listener.accept().await.unwrap();
                let outcome = match server_tls.accept(tcp).await {
                    Ok(mut link) => crate::accept(&mut link, &server_secret).await.is_ok(),
                    Err(_) => false,
                };
                outcomes.push(outcome);
            }
            outcomes
        });
        // Another topology's CA does not vouch for this server.
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        assert!(theirs.connect(tcp).await.is_err());
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut link = ours.connect(tcp).await.unwrap();
        crate::connect(&mut link, &secret).await.unwrap();
        assert_eq!(server.await.unwrap(), vec![false, true]);
    }
}
