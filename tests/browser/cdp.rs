//! Headless Debian `chromium` driven over the DevTools protocol (a websocket): navigate,
//! evaluate JavaScript, collect console errors and uncaught exceptions, take screenshots.

use heron_testkit::Wait;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tungstenite::{Message, WebSocket};

/// The chromium binary, if installed.
pub fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| {
            std::env::var_os("PATH")
                .map(|p| {
                    std::env::split_paths(&p)
                        .map(|d| d.join(name))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
        .find(|p| p.is_file())
}

/// A running headless browser with one page attached.
pub struct Browser {
    child: Child,
    _profile: tempfile::TempDir,
    ws: WebSocket<TcpStream>,
    next_id: u64,
    /// Console errors and uncaught exceptions seen so far.
    pub errors: Vec<String>,
}

impl Browser {
    /// Starts chromium and attaches to its first page.
    pub fn start(binary: &PathBuf) -> Browser {
        let profile = tempfile::tempdir().expect("profile dir");
        let mut child = Command::new(binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--no-default-browser-check",
                "--remote-debugging-port=0",
                "--window-size=1280,1000",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start chromium");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("DevTools listening on ") {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        });
        let browser_url = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("chromium printed its DevTools address");
        let port: u16 = browser_url
            .trim_start_matches("ws://")
            .split('/')
            .next()
            .and_then(|hp| hp.rsplit(':').next())
            .and_then(|p| p.parse().ok())
            .expect("DevTools port");
        let addr = format!("127.0.0.1:{port}").parse().unwrap();
        let mut list = Value::Null;
        let page_url = Wait::new("a page target")
            .timeout(Duration::from_secs(20))
            .every(Duration::from_millis(200))
            .try_until(|| {
                list = crate::support::http::get(addr, "/json/list").json();
                list.as_array().and_then(|a| {
                    a.iter()
                        .find(|t| t["type"] == "page")
                        .and_then(|t| t["webSocketDebuggerUrl"].as_str().map(str::to_string))
                })
            })
            .unwrap_or_else(|e| panic!("{e}: {list}"));
        let stream = TcpStream::connect(addr).expect("connect to DevTools");
        let (ws, _) = tungstenite::client(page_url.as_str(), stream).expect("websocket handshake");
        let mut b = Browser {
            child,
            _profile: profile,
            ws,
            next_id: 0,
            errors: Vec::new(),
        };
        b.call("Runtime.enable", json!({}));
        b.call("Log.enable", json!({}));
        b.call("Page.enable", json!({}));
        b
    }

    fn note_event(&mut self, ev: &Value) {
        let p = &ev["params"];
        match ev["method"].as_str() {
            Some("Runtime.exceptionThrown") => self
                .errors
                .push(format!("exception: {}", p["exceptionDetails"])),
            Some("Runtime.consoleAPICalled") if p["type"] == "error" => {
                self.errors.push(format!("console.error: {}", p["args"]))
            }
            // A fetch answered 4xx (a control refused for its token, on purpose) is logged
            // by the browser with source "network"; the page reports its own failed
            // requests, which the tests check.
            Some("Log.entryAdded")
                if p["entry"]["level"] == "error" && p["entry"]["source"] != "network" =>
            {
                self.errors.push(format!("log: {}", p["entry"]))
            }
            _ => {}
        }
    }

    /// Sends a command and waits for its result (noting events meanwhile).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let msg = json!({"id": id, "method": method, "params": params}).to_string();
        self.ws.send(Message::text(msg)).expect("send to DevTools");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            assert!(Instant::now() < deadline, "no answer to {method}");
            let m = self.ws.read().expect("read from DevTools");
            let Message::Text(t) = m else { continue };
            let v: Value = serde_json::from_str(t.as_str()).expect("DevTools JSON");
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method} failed: {v}");
                return v["result"].clone();
            }
            self.note_event(&v);
        }
    }

    /// Evaluates `expr` in the page and returns its value.
    pub fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
        );
        r["result"]["value"].clone()
    }

    /// Navigates to `url`.
    pub fn navigate(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}));
    }

    /// A PNG screenshot of the page.
    pub fn screenshot(&mut self) -> Vec<u8> {
        let r = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
        );
        base64_decode(r["data"].as_str().expect("screenshot data"))
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for v in s.bytes().filter_map(val) {
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}
