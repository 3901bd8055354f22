//! A tiny blocking HTTP/1.1 client for tests (one request per connection).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// An answer: status, content type and body.
#[derive(Debug)]
pub struct Got {
    pub status: u16,
    pub content_type: String,
    pub body: String,
}

impl Got {
    /// The body as JSON (panics with the body if it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// GETs `path_and_query` from `addr`.
pub fn get(addr: SocketAddr, path_and_query: &str) -> Got {
    request(addr, "GET", path_and_query, None)
}

/// POSTs (empty body) to `path_and_query` on `addr`, with `Authorization: Bearer <token>`
/// when a token is given.
#[allow(dead_code)] // not every test binary posts
pub fn post(addr: SocketAddr, path_and_query: &str, token: Option<&str>) -> Got {
    request(addr, "POST", path_and_query, token)
}

fn request(addr: SocketAddr, method: &str, path_and_query: &str, token: Option<&str>) -> Got {
    let mut s = TcpStream::connect(addr).expect("connect to the tracker");
    // a control (POST) runs the heron CLI, which may wait for processes to stop
    let timeout = if method == "GET" { 20 } else { 200 };
    s.set_read_timeout(Some(Duration::from_secs(timeout)))
        .unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        s,
        "{method} {path_and_query} HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Length: 0\r\n\
         Connection: close\r\n\r\n"
    )
    .unwrap();
    // Read to the end, or to Content-Length (some servers keep the connection open).
    let mut raw = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let n = match s.read(&mut chunk) {
            Ok(n) => n,
            // a child process of this test (the tracker runs the heron CLI) ended
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => panic!("read the answer: {e}"),
        };
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&chunk[..n]);
        if let Some(end) = complete_length(&raw) {
            raw.truncate(end);
            break;
        }
    }
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status code");
    let content_type = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    Got {
        status,
        content_type,
        body,
    }
}

/// The length of the whole answer once its head (with a Content-Length) and body are in.
fn complete_length(raw: &[u8]) -> Option<usize> {
    let head_end = raw.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&raw[..head_end]);
    let len: usize = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| v.trim().parse().ok())?
    })?;
    (raw.len() >= head_end + len).then_some(head_end + len)
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n.min(rest.len())]);
        body = rest.get(n + 2..).unwrap_or("");
    }
    out
}
