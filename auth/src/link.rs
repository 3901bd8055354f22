//! [`Link`]: a connection between daemons, plain TCP, TLS or a local socket, read and written
//! the same way.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};

/// A connection between daemons: plain TCP (the default, and always on loopback-only links),
/// TLS ([`crate::Tls`]), or a Unix domain socket between two processes of one container.
#[derive(Debug)]
pub enum Link {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over TCP, either side.
    Tls(Box<tokio_rustls::TlsStream<TcpStream>>),
    /// A Unix domain socket between an instance and its stream manager (no TLS: it never
    /// leaves the host; the secret's handshake as on TCP).
    Local(UnixStream),
}

impl Link {
    /// The TCP socket under the link (for socket options and addresses); `None` for a local
    /// socket.
    pub fn tcp(&self) -> Option<&TcpStream> {
        match self {
            Link::Plain(s) => Some(s),
            Link::Tls(s) => Some(s.get_ref().0),
            Link::Local(_) => None,
        }
    }
}

impl AsFd for Link {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Link::Plain(s) => s.as_fd(),
            Link::Tls(s) => s.get_ref().0.as_fd(),
            Link::Local(s) => s.as_fd(),
        }
    }
}

impl From<TcpStream> for Link {
    fn from(s: TcpStream) -> Link {
        Link::Plain(s)
    }
}

impl AsyncRead for Link {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Link::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Link::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            Link::Local(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Link {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Link::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Link::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            Link::Local(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Link::Plain(s) => Pin::new(s).poll_flush(cx),
            Link::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
            Link::Local(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Link::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Link::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            Link::Local(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

/// The server side of a new connection: TLS first when `tls` is given, then the secret's
/// handshake when `secret` is; plain TCP when neither.
pub async fn admit(
    tcp: TcpStream,
    tls: Option<&crate::Tls>,
    secret: Option<&crate::Secret>,
) -> Result<Link, crate::AuthError> {
    let mut link = match tls {
        Some(tls) => tls.accept(tcp).await?,
        None => Link::Plain(tcp),
    };
    if let Some(secret) = secret {
        crate::accept(&mut link, secret).await?;
    }
    Ok(link)
}

/// The client side of a new connection: [`admit`]'s counterpart.
pub async fn dial(
    tcp: TcpStream,
    tls: Option<&crate::Tls>,
    secret: Option<&crate::Secret>,
) -> Result<Link, crate::AuthError> {
    let mut link = match tls {
        Some(tls) => tls.connect(tcp).await?,
        None => Link::Plain(tcp),
    };
    if let Some(secret) = secret {
        crate::connect(&mut link, secret).await?;
    }
    Ok(link)
}

/// A blocking client connection between daemons: plain TCP or TLS.
pub enum StdLink {
    /// Plain TCP.
    Plain(std::net::TcpStream),
    /// TLS over TCP.
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>>),
}

impl StdLink {
    /// The TCP socket under the link.
    pub fn tcp(&self) -> &std::net::TcpStream {
        match self {
            StdLink::Plain(s) => s,
            StdLink::Tls(s) => s.get_ref(),
        }
    }
}

impl io::Read for StdLink {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            StdLink::Plain(s) => s.read(buf),
            StdLink::Tls(s) => s.read(buf),
        }
    }
}

impl io::Write for StdLink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            StdLink::Plain(s) => s.write(buf),
            StdLink::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            StdLink::Plain(s) => s.flush(),
            StdLink::Tls(s) => s.flush(),
        }
    }
}

/// [`dial`] on a blocking stream; the handshakes time out after
/// [`HANDSHAKE_TIMEOUT`](crate::HANDSHAKE_TIMEOUT) and the socket's timeouts are restored
/// after them.
pub fn dial_std(
    tcp: std::net::TcpStream,
    tls: Option<&crate::Tls>,
    secret: Option<&crate::Secret>,
) -> Result<StdLink, crate::AuthError> {
    let saved = crate::io::SavedTimeouts::set_for_handshake(&tcp)?;
    let mut link = match tls {
        Some(tls) => StdLink::Tls(Box::new(tls.connect_std(tcp)?)),
        None => StdLink::Plain(tcp),
    };
    if let Some(secret) = secret {
        crate::connect_blocking(&mut link, secret)?;
    }
    saved.restore(link.tcp())?;
    Ok(link)
}
