//! A minimal HTTP/1.1 client for the tmaster's controller (one POST, `Connection: close`).

use anyhow::{bail, Context};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(30);

/// POSTs `path_and_query` (already encoded) to `host:port`, with `Authorization: Bearer
/// <token>` when given; returns the status and body.
pub fn post(
    host: &str,
    port: u16,
    path_and_query: &str,
    token: Option<&str>,
) -> anyhow::Result<(u16, String)> {
    let mut stream = TcpStream::connect((host, port))
        .with_context(|| format!("connecting to the tmaster controller at {host}:{port}"))?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "POST {path_and_query} HTTP/1.1\r\nHost: {host}:{port}\r\n{auth}Content-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .context("reading the controller's answer")?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .lines()
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse::<u16>().ok());
    match status {
        Some(s) => Ok((s, body.trim().to_string())),
        None => bail!("the controller sent no HTTP status line: {head:?}"),
    }
}

/// Percent-encodes a query value.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
