//! Free ports for a container's daemons, claimed host-wide between the pick and the daemons'
//! own binds.
//!
//! An executor picks its daemons' ports by binding them, reading them and releasing them;
//! the daemons, started next, bind them again. Every executor of a topology does this in its
//! own process at the same time, and so do the executors of every other topology and test on
//! the host. Without more, a port one executor has just released can be picked by another
//! before the first one's daemon has bound it: a tmaster's stats server and a stream
//! manager's data server once got the same port, and the stream manager failed to bind it at
//! every restart while the topology waited for it.
//!
//! So every pick goes through one claims file, [`CLAIMS_PATH`], under an exclusive lock: the
//! ports picked in the last [`CLAIM_TTL`], each with the time it was picked. A pick skips
//! them and adds its own. The file is only advice between executors: when it cannot be
//! opened or locked, ports are picked as before, with a warning.

use crate::SchedulerError;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The host-wide claims file. Fixed rather than under `$TMPDIR`, so that executors started
/// with different temporary directories (tests do) still see each other's claims.
pub const CLAIMS_PATH: &str = "/tmp/heron-rs-port-claims";

/// How long a claim holds: far longer than a daemon takes to start and bind its port.
pub const CLAIM_TTL: Duration = Duration::from_secs(60);

/// The longest wait for the claims file's lock.
const LOCK_WAIT: Duration = Duration::from_secs(2);

/// The lowest port picked (below it are the well-known and registered services people run).
const LOWEST: u16 = 10_000;

/// `n` distinct free ports on 127.0.0.1, none claimed by another pick in the last
/// [`CLAIM_TTL`], claimed in [`CLAIMS_PATH`] for this pick.
///
/// They are drawn below the kernel's ephemeral range (`ip_local_port_range`), so that
/// between this pick and the daemons' own binds no `bind(port 0)` elsewhere (a tracker, a
/// test, another process's listener) and no outgoing connection's source port can take
/// them; only when none is found there does it fall back to ephemeral ports.
///
/// ```
/// let ports = heron_scheduler::executor::free_ports(3).unwrap();
/// assert_eq!(ports.len(), 3);
/// assert!(ports.iter().all(|&p| p >= 10_000));
/// ```
pub fn free_ports(n: usize) -> Result<Vec<u16>, SchedulerError> {
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    free_ports_in(n, LOWEST..ephemeral_low, Path::new(CLAIMS_PATH))
}

/// [`free_ports`] from `range`, with the claims file at `claims`.
pub(crate) fn free_ports_in(
    n: usize,
    range: std::ops::Range<u16>,
    claims: &Path,
) -> Result<Vec<u16>, SchedulerError> {
    let now = unix_secs(SystemTime::now());
    let mut file = match ClaimsFile::lock(claims) {
        Ok(f) => Some(f),
        Err(e) => {
            tracing::warn!(
                path = %claims.display(),
                "cannot lock the port claims file ({e}); picking ports without it"
            );
            None
        }
    };
    let mut held = match file.as_mut().map(ClaimsFile::read) {
        Some(Ok(text)) => Claims::parse(&text, now, CLAIM_TTL),
        Some(Err(e)) => {
            tracing::warn!(path = %claims.display(), "cannot read the port claims file ({e})");
            Claims::default()
        }
        None => Claims::default(),
    };
    let listeners = bind_free(n, range, &held)?;
    let ports = listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(SchedulerError::io("picking a free port"))?;
    for &p in &ports {
        held.add(p, now);
    }
    if let Some(f) = file.as_mut() {
        if let Err(e) = f.write(&held.render()) {
            tracing::warn!(path = %claims.display(), "cannot write the port claims file ({e})");
        }
    }
    // the listeners close here, the lock when `file` drops: after the claims are written
    drop(listeners);
    Ok(ports)
}

/// Binds `n` distinct ports of `range` that `held` does not claim (random picks), else
/// ephemeral ports for the rest.
fn bind_free(
    n: usize,
    range: std::ops::Range<u16>,
    held: &Claims,
) -> Result<Vec<TcpListener>, SchedulerError> {
    let mut listeners: Vec<TcpListener> = Vec::with_capacity(n);
    if range.end > range.start {
        let mut x = seed();
        for _ in 0..n.saturating_mul(64) {
            if listeners.len() == n {
                break;
            }
            // xorshift64: a different sequence per executor and call
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let port = range.start + (x % u64::from(range.end - range.start)) as u16;
            if held.contains(port) {
                continue;
            }
            if let Ok(l) = TcpListener::bind(("127.0.0.1", port)) {
                listeners.push(l);
            }
        }
    }
    while listeners.len() < n {
        listeners.push(
            TcpListener::bind(("127.0.0.1", 0))
                .map_err(SchedulerError::io("picking a free port"))?,
        );
    }
    Ok(listeners)
}

/// A per-process, per-call seed for the picks (never 0).
fn seed() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    (nanos ^ (u64::from(std::process::id()) << 32)) | 1
}

fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The claims in force: `(port, unix seconds picked)`, one line each in the file as
/// `<port> <seconds>`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Claims {
    held: Vec<(u16, u64)>,
}

impl Claims {
    /// The claims of `text` picked within `ttl` before `now`; lines that do not parse, and
    /// claims from the future by more than `ttl` (a clock set back), are dropped.
    pub(crate) fn parse(text: &str, now: u64, ttl: Duration) -> Claims {
        let ttl = ttl.as_secs();
        let held = text
            .lines()
            .filter_map(|line| {
                let mut it = line.split_whitespace();
                let port = it.next()?.parse::<u16>().ok()?;
                let at = it.next()?.parse::<u64>().ok()?;
                it.next().is_none().then_some((port, at))
            })
            .filter(|&(_, at)| now.saturating_sub(at) < ttl && at.saturating_sub(now) < ttl)
            .collect();
        Claims { held }
    }

    /// `true` when `port` is claimed.
    pub(crate) fn contains(&self, port: u16) -> bool {
        self.held.iter().any(|&(p, _)| p == port)
    }

    /// Claims `port` at `now` (replacing an older claim of it).
    pub(crate) fn add(&mut self, port: u16, now: u64) {
        self.held.retain(|&(p, _)| p != port);
        self.held.push((port, now));
    }

    /// The file's text.
    pub(crate) fn render(&self) -> String {
        self.held
            .iter()
            .map(|(p, at)| format!("{p} {at}\n"))
            .collect()
    }
}

/// The claims file, open and exclusively locked until dropped.
struct ClaimsFile(File);

impl ClaimsFile {
    /// Opens (creating; never through a symbolic link) and locks `path`, waiting up to
    /// [`LOCK_WAIT`] for another pick to finish: a pick holds the lock for a few binds, so a
    /// lock held longer is a stuck or hostile process, and ports are then picked without it.
    fn lock(path: &Path) -> std::io::Result<ClaimsFile> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)?;
        let deadline = std::time::Instant::now() + LOCK_WAIT;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(ClaimsFile(file)),
                Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("still locked after {LOCK_WAIT:?}"),
                    ))
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(e),
            }
        }
    }

    fn read(&mut self) -> std::io::Result<String> {
        let mut text = String::new();
        self.0.seek(SeekFrom::Start(0))?;
        self.0.read_to_string(&mut text)?;
        Ok(text)
    }

    fn write(&mut self, text: &str) -> std::io::Result<()> {
        self.0.set_len(0)?;
        self.0.seek(SeekFrom::Start(0))?;
        self.0.write_all(text.as_bytes())
    }
}

#[cfg(test)]
mod tests;
