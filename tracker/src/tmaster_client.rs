//! Asks a tmaster's stats port (HTTP POST, protobuf bodies), as Heron's tracker does, and a
//! container's shell (HTTP GET, JSON). A deliberately small HTTP/1.1 client: one request per
//! connection, `Connection: close`.

use crate::TrackerError;
use heron_proto::tmanager::TManagerLocation;
use heron_proto::Message;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long one stats request may take.
const TIMEOUT: Duration = Duration::from_secs(5);
/// The largest answer read.
const MAX_ANSWER: usize = 64 * 1024 * 1024;

/// POSTs `request` to `path` on the tmaster's stats port and decodes the answer.
pub async fn post<Req: Message, Resp: Message + Default>(
    tmaster: &TManagerLocation,
    path: &str,
    request: &Req,
) -> Result<Resp, TrackerError> {
    let port = tmaster.stats_port.unwrap_or(0);
    let addr = format!("{}:{}", tmaster.host, port);
    let fail = |why: String| TrackerError::Tmaster {
        addr: addr.clone(),
        why,
    };
    let (status, body) = exchange(&addr, "POST", path, &request.encode_to_vec()).await?;
    if status != 200 {
        return Err(fail(format!("answered HTTP {status}")));
    }
    Resp::decode(&body[..]).map_err(|e| fail(format!("bad answer: {e}")))
}

/// GETs `path` from `addr` (a container's shell): the status and the body.
pub async fn get(addr: &str, path: &str) -> Result<(u16, Vec<u8>), TrackerError> {
    exchange(addr, "GET", path, &[]).await
}

/// One HTTP/1.1 request to `addr`: the answer's status and body (de-chunked).
async fn exchange(
    addr: &str,
    method: &str,
    path: &str,
    body: &[u8],
) -> Result<(u16, Vec<u8>), TrackerError> {
    let fail = |why: String| TrackerError::Tmaster {
        addr: addr.to_string(),
        why,
    };
    let talk = async {
        let mut stream = TcpStream::connect(addr)
            .await
            .map_err(|e| fail(e.to_string()))?;
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/octet-stream\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        stream
            .write_all(head.as_bytes())
            .await
            .map_err(|e| fail(e.to_string()))?;
        stream
            .write_all(body)
            .await
            .map_err(|e| fail(e.to_string()))?;
        let mut answer = Vec::new();
        (&mut stream)
            .take(MAX_ANSWER as u64)
            .read_to_end(&mut answer)
            .await
            .map_err(|e| fail(e.to_string()))?;
        Ok::<_, TrackerError>(answer)
    };
    let answer = tokio::time::timeout(TIMEOUT, talk)
        .await
        .map_err(|_| fail("timed out".into()))??;
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| fail("no HTTP header in the answer".into()))?;
    let head = String::from_utf8_lossy(&answer[..split]);
    let status_line = head.lines().next().unwrap_or("");
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| fail(format!("answered {status_line:?}")))?;
    let mut body = &answer[split + 4..];
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return Ok((status, dechunk(body).map_err(fail)?));
    }
    if let Some(len) = content_length(&head) {
        body = &body[..len.min(body.len())];
    }
    Ok((status, body.to_vec()))
}

fn content_length(head: &str) -> Option<usize> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| v.trim().parse().ok())?
    })
}

fn dechunk(mut body: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let eol = body
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("bad chunk")?;
        let size = usize::from_str_radix(
            String::from_utf8_lossy(&body[..eol])
                .split(';')
                .next()
                .unwrap_or("")
                .trim(),
            16,
        )
        .map_err(|e| e.to_string())?;
        body = &body[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        out.extend_from_slice(body.get(..size).ok_or("short chunk")?);
        body = body.get(size + 2..).unwrap_or(&[]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_and_lengths() {
        assert_eq!(
            dechunk(b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n").unwrap(),
            b"abcde"
        );
        assert_eq!(
            content_length("HTTP/1.1 200 OK\r\ncontent-length: 12"),
            Some(12)
        );
    }
}
