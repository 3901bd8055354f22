//! A loopback TCP proxy that can be cut, to partition a client from the ZooKeeper server (so
//! that its session really expires) without disturbing other tests sharing the server.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct Proxy {
    pub addr: SocketAddr,
    cut: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    /// Forwards connections to `upstream` (`host:port`) from a fresh loopback port.
    pub fn start(upstream: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let cut = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let streams = Arc::new(Mutex::new(Vec::new()));
        let (c, d, s, up) = (
            cut.clone(),
            done.clone(),
            streams.clone(),
            upstream.to_string(),
        );
        std::thread::spawn(move || {
            while !d.load(Ordering::Acquire) {
                let client = match listener.accept() {
                    Ok((client, _)) => client,
                    Err(_) => {
                        std::thread::sleep(Duration::from_millis(10));
                        continue;
                    }
                };
                if c.load(Ordering::Acquire) {
                    continue; // partitioned: drop the connection at once
                }
                client.set_nonblocking(false).unwrap();
                let Ok(server) = TcpStream::connect(&up) else {
                    continue;
                };
                {
                    let mut all = s.lock().unwrap();
                    all.push(client.try_clone().unwrap());
                    all.push(server.try_clone().unwrap());
                }
                pipe(client.try_clone().unwrap(), server.try_clone().unwrap());
                pipe(server, client);
            }
        });
        Proxy {
            addr,
            cut,
            done,
            streams,
        }
    }

    /// Partitions: closes every proxied connection and refuses new ones until `heal`.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::Release);
        for s in self.streams.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Lets connections through again.
    pub fn heal(&self) {
        self.cut.store(false, Ordering::Release);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Release);
        self.cut();
    }
}

fn pipe(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
    });
}
