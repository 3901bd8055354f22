//! `bench hop-cost`: what one hop between two processes costs on this machine, by the way it
//! is carried. A hop is a message written by one process and read by another that was asleep
//! waiting for it: the unit the acked word count pays per window and per stage
//! (`docs/acked-floor.md`).
//!
//! Two processes (this one and a `bench hop-peer` child) pass a message of `--size` bytes back
//! and forth `--round-trips` times, each pinned to a CPU of `--cpus A,B` (the same CPU twice:
//! both on one CPU, as a pinned container's processes are). Mechanisms:
//! - `tcp`: loopback TCP with `TCP_NODELAY`, blocking reads and writes (an instance's link to its
//!   stream manager, and the stream managers' links);
//! - `unix`: a Unix stream socket, the same way;
//! - `futex`: a shared-memory mailbox per direction and a futex to sleep on (a shared-memory
//!   ring's floor: one copy in, one copy out, a wake-up).
//!
//! Prints, per mechanism, the wall time per hop and each side's CPU time per round trip.
//!
//! ```text
//! cargo run --release --example bench -- hop-cost --size 2048 --round-trips 100000 --cpus 0,0
//! ```

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

/// The parent's subcommand.
pub const COMMAND: &str = "hop-cost";
/// The child's subcommand.
pub const PEER_COMMAND: &str = "hop-peer";

/// The mechanisms, in the order they are measured.
pub const MECHANISMS: [&str; 3] = ["tcp", "unix", "futex"];

/// One mechanism's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct HopCost {
    /// `tcp`, `unix` or `futex`.
    pub mechanism: &'static str,
    /// Wall time per hop (half a round trip), µs.
    pub wall_us_per_hop: f64,
    /// The parent's CPU time per round trip, µs.
    pub parent_cpu_us: f64,
    /// The child's CPU time per round trip, µs.
    pub child_cpu_us: f64,
}

/// `bench hop-cost [--size N] [--round-trips N] [--cpus A,B]`. Returns the exit code.
pub fn main(args: &[String]) -> i32 {
    let (mut size, mut trips, mut cpus) = (2048usize, 100_000u64, (0usize, 0usize));
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let v = it.next().map(String::as_str).unwrap_or("");
        let ok = match a.as_str() {
            "--size" => v.parse().map(|n: usize| size = n.max(1)).is_ok(),
            "--round-trips" => v.parse().map(|n: u64| trips = n.max(1)).is_ok(),
            "--cpus" => parse_cpus(v).map(|c| cpus = c).is_some(),
            _ => false,
        };
        if !ok {
            eprintln!(
                "{COMMAND}: bad argument {a:?} {v:?} (--size N, --round-trips N, --cpus A,B)"
            );
            return 2;
        }
    }
    // both CPUs usable before any peer starts (the measuring side ends on its own)
    if let Err(e) = pin(cpus.1).and_then(|()| pin(cpus.0)) {
        eprintln!("{COMMAND}: --cpus {},{}: {e}", cpus.0, cpus.1);
        return 2;
    }
    println!(
        "{size}-byte messages, {trips} round trips, CPUs {},{}",
        cpus.0, cpus.1
    );
    for m in MECHANISMS {
        match measure(m, size, trips, cpus) {
            Ok(c) => println!(
                "{:5}  {:6.2} µs per hop (wall)   CPU per round trip: {:6.2} µs this side, {:6.2} µs the other",
                c.mechanism, c.wall_us_per_hop, c.parent_cpu_us, c.child_cpu_us
            ),
            Err(e) => {
                eprintln!("{COMMAND}: {m}: {e}");
                return 1;
            }
        }
    }
    0
}

fn parse_cpus(v: &str) -> Option<(usize, usize)> {
    let (a, b) = v.split_once(',')?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

/// Runs `trips` round trips of `size` bytes over `mechanism` with a child process.
pub fn measure(
    mechanism: &'static str,
    size: usize,
    trips: u64,
    cpus: (usize, usize),
) -> Result<HopCost, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let rendezvous = dir.path().join("hop");
    let mut child_cmd = Command::new(exe);
    child_cmd
        .args([
            PEER_COMMAND,
            mechanism,
            &size.to_string(),
            &trips.to_string(),
        ])
        .arg(cpus.1.to_string())
        .stdout(Stdio::piped());
    let mut msg = vec![0x5au8; size];
    let (child, elapsed, parent_cpu) = match mechanism {
        "tcp" => {
            let l = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
            let addr = l.local_addr().map_err(|e| e.to_string())?;
            l.set_nonblocking(true).map_err(|e| e.to_string())?;
            let mut child = child_cmd
                .arg(addr.to_string())
                .spawn()
                .map_err(|e| e.to_string())?;
            let mut s = accept_from(&mut child, || l.accept().map(|(s, _)| s))?;
            s.set_nodelay(true).map_err(|e| e.to_string())?;
            let (elapsed, cpu) = ping(&mut s, &mut msg, trips, cpus.0)?;
            (child, elapsed, cpu)
        }
        "unix" => {
            let l = UnixListener::bind(&rendezvous).map_err(|e| e.to_string())?;
            l.set_nonblocking(true).map_err(|e| e.to_string())?;
            let mut child = child_cmd
                .arg(&rendezvous)
                .spawn()
                .map_err(|e| e.to_string())?;
            let mut s = accept_from(&mut child, || l.accept().map(|(s, _)| s))?;
            let (elapsed, cpu) = ping(&mut s, &mut msg, trips, cpus.0)?;
            (child, elapsed, cpu)
        }
        "futex" => {
            let shm = Mailboxes::create(&rendezvous, size)?;
            let mut child = child_cmd
                .arg(&rendezvous)
                .spawn()
                .map_err(|e| e.to_string())?;
            // a watchdog ends the run if the peer dies (its box would stay empty for good);
            // it aborts only an empty box, so a last echo the peer sent before exiting is read
            let (pid, done) = (child.id(), std::sync::atomic::AtomicBool::new(false));
            let watch = || {
                while !done.load(Ordering::Relaxed) {
                    if exited(pid) && shm.abort_if_empty(1) {
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
            };
            let mut run = || -> Result<(f64, f64), String> {
                pin(cpus.0)?;
                let (t, c) = (Instant::now(), cpu_seconds());
                for i in 0..trips {
                    msg[0] = i as u8;
                    shm.send(0, &msg);
                    shm.recv(1, &mut msg)?;
                    if msg[0] != (i as u8).wrapping_add(1) {
                        return Err(format!("round trip {i}: the echo is wrong"));
                    }
                }
                Ok((t.elapsed().as_secs_f64(), cpu_seconds() - c))
            };
            let result = std::thread::scope(|scope| {
                scope.spawn(watch);
                let r = run();
                done.store(true, Ordering::Relaxed);
                r
            });
            match result {
                Ok((elapsed, cpu)) => (child, elapsed, cpu),
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(e);
                }
            }
        }
        other => return Err(format!("unknown mechanism {other:?}")),
    };
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let child_cpu: f64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|_| {
            format!(
                "the peer reported {:?}",
                String::from_utf8_lossy(&out.stdout)
            )
        })?;
    let per_trip = |s: f64| s / trips as f64 * 1e6;
    Ok(HopCost {
        mechanism,
        wall_us_per_hop: per_trip(elapsed) / 2.0,
        parent_cpu_us: per_trip(parent_cpu),
        child_cpu_us: per_trip(child_cpu),
    })
}

/// The parent's side over a socket: write, read the echo, check it; (wall s, CPU s).
fn ping<S: Read + Write>(
    s: &mut S,
    msg: &mut [u8],
    trips: u64,
    cpu: usize,
) -> Result<(f64, f64), String> {
    pin(cpu)?;
    let (t, c) = (Instant::now(), cpu_seconds());
    for i in 0..trips {
        msg[0] = i as u8;
        s.write_all(msg).map_err(|e| e.to_string())?;
        s.read_exact(msg).map_err(|e| e.to_string())?;
        if msg[0] != (i as u8).wrapping_add(1) {
            return Err(format!("round trip {i}: the echo is wrong"));
        }
    }
    Ok((t.elapsed().as_secs_f64(), cpu_seconds() - c))
}

/// `bench hop-peer MECHANISM SIZE TRIPS CPU RENDEZVOUS`: echoes each message with its first
/// byte plus one; prints its CPU seconds. Returns the exit code.
pub fn peer_main(args: &[String]) -> i32 {
    let run = || -> Result<f64, String> {
        let [mechanism, size, trips, cpu, at] = args else {
            return Err(format!(
                "{PEER_COMMAND}: needs MECHANISM SIZE TRIPS CPU RENDEZVOUS"
            ));
        };
        // SAFETY: prctl with an integer argument; the child goes when the measuring process
        // goes, wherever it waits
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
        let bad = |what: &str| format!("{PEER_COMMAND}: bad {what}");
        let size: usize = size.parse().map_err(|_| bad("size"))?;
        let trips: u64 = trips.parse().map_err(|_| bad("trip count"))?;
        pin(cpu.parse().map_err(|_| bad("CPU"))?)?;
        let mut msg = vec![0u8; size];
        let c = cpu_seconds();
        match mechanism.as_str() {
            "tcp" => {
                let mut s = TcpStream::connect(at).map_err(|e| e.to_string())?;
                s.set_nodelay(true).map_err(|e| e.to_string())?;
                echo(&mut s, &mut msg, trips)?;
            }
            "unix" => echo(
                &mut UnixStream::connect(at).map_err(|e| e.to_string())?,
                &mut msg,
                trips,
            )?,
            "futex" => {
                let shm = Mailboxes::open(std::path::Path::new(at), size)?;
                for _ in 0..trips {
                    shm.recv(0, &mut msg)?;
                    msg[0] = msg[0].wrapping_add(1);
                    shm.send(1, &msg);
                }
            }
            other => return Err(format!("{PEER_COMMAND}: unknown mechanism {other:?}")),
        }
        Ok(cpu_seconds() - c)
    };
    match run() {
        Ok(cpu) => {
            println!("{cpu}");
            0
        }
        Err(e) => {
            eprintln!("{e}");
            1
        }
    }
}

fn echo<S: Read + Write>(s: &mut S, msg: &mut [u8], trips: u64) -> Result<(), String> {
    for _ in 0..trips {
        s.read_exact(msg).map_err(|e| e.to_string())?;
        msg[0] = msg[0].wrapping_add(1);
        s.write_all(msg).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Two one-message mailboxes in a shared file mapping: box `i` is a full flag (a futex word)
/// at offset `i * 64` and `size` bytes of message at `128 + i * size`.
struct Mailboxes {
    base: *mut u8,
    len: usize,
    size: usize,
}

impl Mailboxes {
    fn create(path: &std::path::Path, size: usize) -> Result<Mailboxes, String> {
        let f = std::fs::File::create_new(path).map_err(|e| e.to_string())?;
        f.set_len((128 + 2 * size) as u64)
            .map_err(|e| e.to_string())?;
        Mailboxes::map(&f, size)
    }

    fn open(path: &std::path::Path, size: usize) -> Result<Mailboxes, String> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| e.to_string())?;
        Mailboxes::map(&f, size)
    }

    fn map(f: &std::fs::File, size: usize) -> Result<Mailboxes, String> {
        use std::os::fd::AsRawFd;
        let len = 128 + 2 * size;
        // SAFETY: a shared mapping of a file of `len` bytes; unmapped in `drop`.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(format!("mmap: {}", std::io::Error::last_os_error()));
        }
        Ok(Mailboxes {
            base: base.cast(),
            len,
            size,
        })
    }

    fn flag(&self, i: usize) -> &AtomicU32 {
        // SAFETY: offsets 0 and 64 are inside the mapping, 4-aligned (the mapping is
        // page-aligned), and only ever accessed atomically.
        unsafe { &*self.base.add(i * 64).cast::<AtomicU32>() }
    }

    fn data(&self, i: usize) -> *mut u8 {
        // SAFETY: `128 + i * size .. + size` is inside the mapping for i in 0..2.
        unsafe { self.base.add(128 + i * self.size) }
    }

    /// Fills box `i` and wakes its reader (each side sends only once it has the echo of its
    /// last message, so the box is empty).
    fn send(&self, i: usize, msg: &[u8]) {
        // SAFETY: the box is ours until we set the flag; `msg` is `size` bytes.
        unsafe { std::ptr::copy_nonoverlapping(msg.as_ptr(), self.data(i), self.size) };
        self.flag(i).store(1, Ordering::Release);
        futex(self.flag(i), libc::FUTEX_WAKE, 1);
    }

    /// Takes the message in box `i`, sleeping until it comes; an error once
    /// [`Mailboxes::abort`] marked the box.
    fn recv(&self, i: usize, msg: &mut [u8]) -> Result<(), String> {
        loop {
            match self.flag(i).load(Ordering::Acquire) {
                0 => futex(self.flag(i), libc::FUTEX_WAIT, 0),
                ABORTED => return Err("the peer is gone".into()),
                _ => break,
            }
        }
        // SAFETY: the flag says the box is full and the sender is done with it.
        unsafe { std::ptr::copy_nonoverlapping(self.data(i), msg.as_mut_ptr(), self.size) };
        self.flag(i).store(0, Ordering::Release);
        Ok(())
    }

    /// Marks box `i`, if it is empty, so that its reader's `recv` fails instead of sleeping
    /// on; `false` when the box holds a message (its reader gets that first).
    fn abort_if_empty(&self, i: usize) -> bool {
        let flag = self.flag(i);
        let aborted = flag
            .compare_exchange(0, ABORTED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if aborted {
            futex(flag, libc::FUTEX_WAKE, 1);
        }
        aborted
    }
}

/// The flag value of an aborted box.
const ABORTED: u32 = 2;

// SAFETY: the mapping is shared memory that both sides (and the watchdog, which only stores
// a flag) touch only through the flags' atomics and the copies those flags order; the
// pointer itself is never reseated.
unsafe impl Send for Mailboxes {}
// SAFETY: as above.
unsafe impl Sync for Mailboxes {}

impl Drop for Mailboxes {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

fn futex(word: &AtomicU32, op: libc::c_int, val: u32) {
    // SAFETY: FUTEX_WAIT / FUTEX_WAKE on a valid shared u32; no timeout (a wait without one
    // arms no timer, as a ring's reader would not).
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op,
            val,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

/// Whether process `pid` has exited (a zombie not yet reaped, or gone).
fn exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => true,
    }
}

/// How long the measuring side waits for the peer to connect before giving up.
const PEER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Accepts the child's connection with `accept` (on a non-blocking listener); gives up when
/// the child has exited or after [`PEER_TIMEOUT`], killing it.
fn accept_from<S>(
    child: &mut std::process::Child,
    accept: impl Fn() -> std::io::Result<S>,
) -> Result<S, String> {
    let give_up = Instant::now() + PEER_TIMEOUT;
    loop {
        match accept() {
            Ok(s) => return Ok(s),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e.to_string()),
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("the peer exited before connecting ({status})"));
        }
        if Instant::now() >= give_up {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("the peer did not connect in {PEER_TIMEOUT:?}"));
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Pins the calling thread to `cpu`; an error naming it when there is no such CPU (or this
/// process may not use it).
pub(crate) fn pin(cpu: usize) -> Result<(), String> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(format!(
            "CPU {cpu}: beyond the {} a CPU set holds",
            libc::CPU_SETSIZE
        ));
    }
    // SAFETY: a zeroed cpu_set_t with one CPU (below CPU_SETSIZE) set, for this thread.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        return Err(format!(
            "cannot run on CPU {cpu}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct.
    let r = unsafe {
        let mut r: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut r);
        r
    };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    s(r.ru_utime) + s(r.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpus_parse_as_a_pair() {
        assert_eq!(parse_cpus("0,1"), Some((0, 1)));
        assert_eq!(parse_cpus(" 1 , 1"), Some((1, 1)));
        assert_eq!(parse_cpus("0"), None);
        assert_eq!(parse_cpus("a,1"), None);
    }

    #[test]
    fn an_exited_child_is_seen_before_it_is_reaped() {
        let mut child = std::process::Command::new("sleep")
            .arg("0.2")
            .spawn()
            .unwrap();
        assert!(!exited(child.id()), "still running");
        let t = Instant::now();
        while !exited(child.id()) {
            assert!(t.elapsed().as_secs() < 10, "never seen to exit");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        child.wait().unwrap();
        assert!(exited(child.id()), "reaped: gone");
    }

    #[test]
    fn a_mailbox_carries_each_message_once_and_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m");
        let a = Mailboxes::create(&path, 5).unwrap();
        let b = Mailboxes::open(&path, 5).unwrap();
        let peer = std::thread::spawn(move || {
            let mut m = [0u8; 5];
            for _ in 0..1000 {
                b.recv(0, &mut m).unwrap();
                m[0] = m[0].wrapping_add(1);
                b.send(1, &m);
            }
        });
        let mut m = [9u8, 1, 2, 3, 4];
        for i in 0..1000u32 {
            m[0] = i as u8;
            a.send(0, &m);
            a.recv(1, &mut m).unwrap();
            assert_eq!(m, [(i as u8).wrapping_add(1), 1, 2, 3, 4], "trip {i}");
        }
        peer.join().unwrap();
        // a box the watchdog aborted fails its reader instead of leaving it asleep
        let waiter = std::thread::spawn(move || {
            let mut m = [0u8; 5];
            a.recv(1, &mut m)
        });
        let b = Mailboxes::open(&path, 5).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(b.abort_if_empty(1));
        assert_eq!(waiter.join().unwrap(), Err("the peer is gone".to_string()));
        // a full box is left alone: a last echo sent just before the peer exited is read
        b.send(0, &[7, 7, 7, 7, 7]);
        assert!(!b.abort_if_empty(0));
        let mut m = [0u8; 5];
        assert_eq!(b.recv(0, &mut m), Ok(()));
        assert_eq!(m, [7; 5]);
    }
}
