//! The relay floor (`--peer relay`): the word count in Heron's process layout doing only the
//! work the layout cannot avoid. Two containers, each a relay "stream manager" and one
//! spout, one split and one count process, the same shape as our topology with parallelism 2;
//! every process is this binary (`bench relay-node --role ROLE ...`).
//!
//! - The spout makes the same sentences (`common::sentences`) with a clock read each, and
//!   writes them in batches of 32 KiB, alternating between the two split tasks (a shuffle).
//! - Each stream manager forwards every batch to its local instance, or to the other stream
//!   manager when the task is the other container's. It looks at a batch's header only.
//! - The split splits each sentence at whitespace, picks the count task by a hash of the word
//!   (FNV-1a, as the timely peer) and writes one batch per count task.
//! - The count checks each word's UTF-8 and counts it in a `HashMap<String, u64>`, as the
//!   bench's count bolt does.
//!
//! The wire format is a bare frame, `[u32 length][u8 kind][u32 task][records]`, over
//! loopback TCP; no protobuf, no acking, no back pressure other than TCP's, no metrics, one
//! thread per process (the stream manager: one per inbound connection). The rate it reaches
//! is a floor for per-word costs in this layout: what ours adds over it is our own work.
//! `scripts/cost_table.py --topology relay` breaks its CPU down per role as for ours.
//!
//! With `--window N` (`--peer relay --reliability atleast`) every process runs its acked
//! variant instead (`relay_acked.rs`); `--cpu C` pins a process as our pinned containers are.

use crate::children::{die_with_parent, free_loopback_port, Children};
use crate::common::sentences::Sentences;
use crate::record::now_ns;
use crate::timely_peer::PeerResult;
use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The subcommand that runs one relay process.
pub const NODE_COMMAND: &str = "relay-node";
/// The subcommand that runs the relay alone and prints `relay words_per_sec R` (for
/// `scripts/cost_table.py --topology relay`).
pub const RUN_COMMAND: &str = "relay-run";
pub(crate) const CONTAINERS: u32 = 2;
/// A batch is written once it holds this many bytes (our executors flush at 32 KiB too).
const BATCH_BYTES: usize = 32 * 1024;
/// Bytes read per `read` call at most.
const READ_BYTES: usize = 256 * 1024;
/// A frame's header: length, kind, task.
pub(crate) const HEADER: usize = 9;
/// How often a blocked reader looks at the clock.
pub(crate) const POLL: Duration = Duration::from_millis(100);

/// Which process of a container.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    Stmgr,
    Spout,
    Split,
    Count,
}

impl Role {
    fn parse(s: &str) -> Option<Role> {
        Some(match s {
            "stmgr" => Role::Stmgr,
            "spout" => Role::Spout,
            "split" => Role::Split,
            "count" => Role::Count,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Role::Stmgr => "stmgr",
            Role::Spout => "spout",
            Role::Split => "split",
            Role::Count => "count",
        }
    }

    /// The byte that names this role in a hello and a frame's destination.
    pub(crate) fn byte(self) -> u8 {
        self as u8
    }
}

/// The arguments of one relay process.
pub(crate) struct Node {
    role: Role,
    pub(crate) container: u32,
    /// Both stream managers' ports, by container.
    ports: Vec<u16>,
    /// CLOCK_MONOTONIC of the run's start: warm-up and end are measured from it.
    start_ns: u64,
    warmup: Duration,
    duration: Duration,
    pub(crate) vocabulary: usize,
    /// With acking (`relay_acked.rs`), each spout's window of trees in flight; 0 without.
    pub(crate) window: usize,
    /// The CPU this process runs on, if pinned.
    cpu: Option<usize>,
}

impl Node {
    fn parse(args: &[String]) -> Result<Node, String> {
        let (mut role, mut container, mut ports, mut start_ns) = (None, None, Vec::new(), None);
        let (mut warmup, mut duration, mut window, mut cpu) = (None, None, 0, None);
        let mut vocabulary = crate::common::sentences::WORDS.len();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let v = it
                .next()
                .ok_or_else(|| format!("{NODE_COMMAND}: {a} needs a value"))?;
            let bad = || format!("{NODE_COMMAND}: bad value {v:?} for {a}");
            match a.as_str() {
                "--role" => role = Some(Role::parse(v).ok_or_else(bad)?),
                "--container" => container = Some(v.parse().map_err(|_| bad())?),
                "--ports" => {
                    ports = v
                        .split(',')
                        .map(|p| p.parse::<u16>().map_err(|_| bad()))
                        .collect::<Result<_, _>>()?
                }
                "--start-ns" => start_ns = Some(v.parse().map_err(|_| bad())?),
                "--warmup-ms" => {
                    warmup = Some(Duration::from_millis(v.parse().map_err(|_| bad())?))
                }
                "--duration-ms" => {
                    duration = Some(Duration::from_millis(v.parse().map_err(|_| bad())?))
                }
                "--vocabulary" => vocabulary = v.parse().map_err(|_| bad())?,
                "--window" => window = v.parse().map_err(|_| bad())?,
                "--cpu" => cpu = Some(v.parse().map_err(|_| bad())?),
                _ => return Err(format!("{NODE_COMMAND}: unknown argument {a:?}")),
            }
        }
        match (role, container, start_ns, warmup, duration) {
            (Some(role), Some(container), Some(start_ns), Some(warmup), Some(duration))
                if ports.len() == CONTAINERS as usize && container < CONTAINERS =>
            {
                Ok(Node {
                    role,
                    container,
                    ports,
                    start_ns,
                    warmup,
                    duration,
                    vocabulary: vocabulary.max(1),
                    window,
                    cpu,
                })
            }
            _ => Err(format!(
                "{NODE_COMMAND}: needs --role, --container (< {CONTAINERS}), --ports (one per \
                 container), --start-ns, --warmup-ms and --duration-ms"
            )),
        }
    }

    /// The port of `container`'s stream manager.
    pub(crate) fn port(&self, container: u32) -> u16 {
        self.ports[container as usize]
    }

    fn elapsed(&self) -> Duration {
        Duration::from_nanos(now_ns().saturating_sub(self.start_ns))
    }

    pub(crate) fn done(&self) -> bool {
        self.elapsed() >= self.duration
    }

    /// Connects to a stream manager and says who this is.
    pub(crate) fn connect(&self, container: u32, me: Role) -> io::Result<TcpStream> {
        connect(self.ports[container as usize], me, self.container)
    }
}

/// Connects to the stream manager listening on `port` (retrying while it starts) and says
/// who this is: `me` of container `mine`.
pub(crate) fn connect(port: u16, me: Role, mine: u32) -> io::Result<TcpStream> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut s = loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => break s,
            Err(e) if Instant::now() > deadline => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    s.set_nodelay(true)?;
    let mut hello = [0u8; 5];
    hello[0] = me.byte();
    hello[1..].copy_from_slice(&mine.to_le_bytes());
    s.write_all(&hello)?;
    Ok(s)
}

/// Starts a frame of `kind` (a destination role's byte, or `relay_acked`'s kinds) for task
/// `task` at the end of `out`; [`end_frame`] writes its length.
pub(crate) fn begin_frame(out: &mut Vec<u8>, kind: u8, task: u32) -> usize {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    out.push(kind);
    out.extend_from_slice(&task.to_le_bytes());
    at
}

pub(crate) fn end_frame(out: &mut [u8], at: usize) {
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

/// The count task of `word`: an FNV-1a hash of it (as the timely peer's), modulo the tasks.
pub(crate) fn count_task(word: &[u8]) -> u32 {
    let hash = word.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (hash % u64::from(CONTAINERS)) as u32
}

/// The records of a spout's frame (its body, after [`HEADER`]): `[u16 length][sentence]`
/// then 8 bytes (a timestamp; with acking, the root), as (sentence, those 8 bytes).
pub(crate) fn sentence_records(mut rec: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
    std::iter::from_fn(move || {
        if rec.len() < 2 {
            return None;
        }
        let n = u16::from_le_bytes([rec[0], rec[1]]) as usize;
        let (sentence, tail) = (&rec[2..2 + n], &rec[2 + n..2 + n + 8]);
        rec = &rec[2 + n + 8..];
        Some((sentence, tail))
    })
}

/// A sentence's words: its pieces between ASCII whitespace, empty ones skipped.
pub(crate) fn words(sentence: &[u8]) -> impl Iterator<Item = &[u8]> + '_ {
    sentence
        .split(|b| b.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
}

/// Writes `out` whole, if it holds anything, and empties it.
pub(crate) fn flush(s: &mut TcpStream, out: &mut Vec<u8>) -> io::Result<()> {
    if !out.is_empty() {
        s.write_all(out)?;
        out.clear();
    }
    Ok(())
}

/// Reads whole frames from a socket whose reads time out every [`POLL`].
pub(crate) struct FrameReader {
    buf: Vec<u8>,
    end: usize,
}

impl FrameReader {
    pub(crate) fn new() -> FrameReader {
        FrameReader {
            buf: vec![0; READ_BYTES],
            end: 0,
        }
    }

    /// One read; then `each(kind, task, frame)` for every whole frame read (the frame with its
    /// header). `Ok(false)` at the end of the stream.
    pub(crate) fn read(
        &mut self,
        s: &mut TcpStream,
        mut each: impl FnMut(u8, u32, &[u8]),
    ) -> io::Result<bool> {
        if self.end == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        match s.read(&mut self.buf[self.end..]) {
            Ok(0) => return Ok(false),
            Ok(n) => self.end += n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Ok(true)
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => return Ok(true),
            Err(e) => return Err(e),
        }
        let mut at = 0;
        while self.end - at >= 4 {
            let len =
                u32::from_le_bytes(self.buf[at..at + 4].try_into().expect("4 bytes")) as usize;
            if len < HEADER - 4 {
                return Err(io::Error::new(ErrorKind::InvalidData, "short frame"));
            }
            if self.end - at < 4 + len {
                break;
            }
            let frame = &self.buf[at..at + 4 + len];
            let task = u32::from_le_bytes(frame[5..9].try_into().expect("4 bytes"));
            each(frame[4], task, frame);
            at += 4 + len;
        }
        self.buf.copy_within(at..self.end, 0);
        self.end -= at;
        Ok(true)
    }
}

/// Runs one relay process (`bench relay-node --role ROLE --container C --ports P0,P1
/// --start-ns T --warmup-ms W --duration-ms D [--vocabulary N] [--window N] [--cpu C]`). Returns the
/// exit code.
pub fn node_main(args: &[String]) -> i32 {
    let node = match Node::parse(args) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    if let Some(cpu) = node.cpu {
        if let Err(e) = crate::hop_cost::pin(cpu) {
            eprintln!("{NODE_COMMAND} {}: {e}", node.role.name());
            return 2;
        }
    }
    let result = match (node.role, node.window > 0) {
        (role, true) => crate::relay_acked::run_role(&node, role),
        (Role::Stmgr, false) => stmgr(&node),
        (Role::Spout, false) => spout(&node),
        (Role::Split, false) => split(&node),
        (Role::Count, false) => count(&node, &mut Timestamps),
    };
    match result {
        Ok(()) => 0,
        // the driver kills the forwarding processes once the counts report
        Err(_) if node.done() => 0,
        Err(e) => {
            eprintln!("{NODE_COMMAND} {}: {e}", node.role.name());
            1
        }
    }
}

fn spout(node: &Node) -> io::Result<()> {
    let mut s = node.connect(node.container, Role::Spout)?;
    let seed = 0x5EED ^ u64::from(node.container);
    let mut sentences = Sentences::with_vocabulary(seed, node.vocabulary);
    let mut batch = Vec::with_capacity(BATCH_BYTES + 1024);
    let mut task = node.container;
    while !node.done() {
        batch.clear();
        let at = begin_frame(&mut batch, Role::Split.byte(), task);
        while batch.len() < BATCH_BYTES {
            let sentence = sentences.next_sentence();
            let ts = now_ns();
            batch.extend_from_slice(&(sentence.len() as u16).to_le_bytes());
            batch.extend_from_slice(sentence.as_bytes());
            batch.extend_from_slice(&ts.to_le_bytes());
        }
        end_frame(&mut batch, at);
        s.write_all(&batch)?;
        task = (task + 1) % CONTAINERS;
    }
    Ok(())
}

fn split(node: &Node) -> io::Result<()> {
    let mut s = node.connect(node.container, Role::Split)?;
    s.set_read_timeout(Some(POLL))?;
    let mut reader = FrameReader::new();
    let mut out = vec![Vec::with_capacity(BATCH_BYTES + 1024); CONTAINERS as usize];
    let mut starts = vec![None; CONTAINERS as usize];
    let mut write = Vec::with_capacity(4 * BATCH_BYTES);
    while !node.done() {
        let open = reader.read(&mut s, |_, _, frame| {
            for (sentence, ts) in sentence_records(&frame[HEADER..]) {
                for word in words(sentence) {
                    let task = count_task(word) as usize;
                    let batch = &mut out[task];
                    if starts[task].is_none() {
                        starts[task] = Some(begin_frame(batch, Role::Count.byte(), task as u32));
                    }
                    batch.push(word.len() as u8);
                    batch.extend_from_slice(word);
                    batch.extend_from_slice(ts);
                    if batch.len() >= BATCH_BYTES {
                        end_frame(batch, starts[task].take().expect("begun"));
                        write.extend_from_slice(batch);
                        batch.clear();
                    }
                }
            }
        })?;
        // what this read brought is written before the next read, in one write
        for (task, batch) in out.iter_mut().enumerate() {
            if let Some(at) = starts[task].take() {
                end_frame(batch, at);
                write.extend_from_slice(batch);
                batch.clear();
            }
        }
        flush(&mut s, &mut write)?;
        if !open {
            break;
        }
    }
    Ok(())
}

/// What a count does with the bytes that follow each word in its record, and after each read.
pub(crate) trait WordTail {
    /// How many bytes follow each word.
    const LEN: usize;
    /// One word's tail.
    fn word(&mut self, tail: &[u8]);
    /// After each read's words: write what they produced.
    fn after_read(&mut self, s: &mut TcpStream) -> io::Result<()>;
}

/// Without acking a word is followed by its sentence's timestamp, which the count ignores.
struct Timestamps;

impl WordTail for Timestamps {
    const LEN: usize = 8;
    fn word(&mut self, _: &[u8]) {}
    fn after_read(&mut self, _: &mut TcpStream) -> io::Result<()> {
        Ok(())
    }
}

/// What a count process prints at the end: `relay-node words W secs S total T`. It reports
/// once the run's duration is over, also when the stream ends or breaks at that moment (the
/// splits stop at the same deadline, and the stream manager leaves when its writes to them
/// fail; a count that was waiting in a read then sees the stream end, not the clock).
pub(crate) fn count<T: WordTail>(node: &Node, tail: &mut T) -> io::Result<()> {
    let mut s = node.connect(node.container, Role::Count)?;
    s.set_read_timeout(Some(POLL))?;
    let mut reader = FrameReader::new();
    let mut counts: HashMap<String, u64> = HashMap::new();
    let mut total = 0u64;
    let mut mark: Option<(u64, u64)> = None;
    let report = |total: u64, mark: Option<(u64, u64)>| {
        let now = now_ns();
        let (t0, c0) = mark.unwrap_or((node.start_ns, 0));
        println!(
            "{NODE_COMMAND} words {} secs {} total {total}",
            total - c0,
            (now - t0) as f64 / 1e9
        );
    };
    loop {
        let now = now_ns();
        let elapsed = Duration::from_nanos(now.saturating_sub(node.start_ns));
        if mark.is_none() && elapsed >= node.warmup {
            mark = Some((now, total));
        }
        if elapsed >= node.duration {
            report(total, mark);
            return Ok(());
        }
        let read = reader.read(&mut s, |_, _, frame| {
            let mut rec = &frame[HEADER..];
            while let Some(&n) = rec.first() {
                let n = usize::from(n);
                let word = &rec[1..1 + n];
                tail.word(&rec[1 + n..1 + n + T::LEN]);
                rec = &rec[1 + n + T::LEN..];
                if let Ok(word) = std::str::from_utf8(word) {
                    match counts.get_mut(word) {
                        Some(c) => *c += 1,
                        None => {
                            counts.insert(word.to_string(), 1);
                        }
                    }
                }
                total += 1;
            }
        });
        let read = read.and_then(|open| tail.after_read(&mut s).map(|()| open));
        match read {
            Ok(true) => {}
            _ if node.done() => {
                report(total, mark);
                return Ok(());
            }
            Ok(false) => {
                return Err(io::Error::new(
                    ErrorKind::UnexpectedEof,
                    "the stream manager left",
                ))
            }
            Err(e) => return Err(e),
        }
    }
}

/// The writers a stream manager forwards to: its local split and count, and the other
/// container's stream manager on two connections, one for sentences and one for words.
/// One connection for both would deadlock: each stream manager blocked writing words to the
/// other, whose reader is blocked writing sentences to its split, which is blocked writing
/// words. (Our stream manager buffers and applies back pressure instead.)
struct Outputs {
    split: Mutex<TcpStream>,
    count: Mutex<TcpStream>,
    peer_split: Mutex<TcpStream>,
    peer_count: Mutex<TcpStream>,
}

fn stmgr(node: &Node) -> io::Result<()> {
    let listener = TcpListener::bind(("127.0.0.1", node.ports[node.container as usize]))?;
    let other = (node.container + 1) % CONTAINERS;
    // the other stream manager accepts while we do: connect to it on the side
    let peer = {
        let (port, mine) = (node.ports[other as usize], node.container);
        std::thread::spawn(move || {
            Ok::<_, io::Error>((
                connect(port, Role::Stmgr, mine)?,
                connect(port, Role::Stmgr, mine)?,
            ))
        })
    };
    // inbound: the other stream manager (twice), the local spout and split; the count only
    // reads
    let (mut split, mut count, mut inbound) = (None, None, Vec::new());
    while split.is_none() || count.is_none() || inbound.len() < 4 {
        let (mut s, _) = listener.accept()?;
        s.set_nodelay(true)?;
        let mut hello = [0u8; 5];
        s.read_exact(&mut hello)?;
        match hello[0] {
            b if b == Role::Stmgr.byte() || b == Role::Spout.byte() => inbound.push(s),
            b if b == Role::Split.byte() => {
                split = Some(s.try_clone()?);
                inbound.push(s);
            }
            b if b == Role::Count.byte() => count = Some(s),
            b => return Err(io::Error::new(ErrorKind::InvalidData, format!("hello {b}"))),
        }
    }
    let (peer_split, peer_count) = peer
        .join()
        .map_err(|_| io::Error::other("the connecting thread panicked"))??;
    let outputs = Arc::new(Outputs {
        split: Mutex::new(split.expect("accepted")),
        count: Mutex::new(count.expect("accepted")),
        peer_split: Mutex::new(peer_split),
        peer_count: Mutex::new(peer_count),
    });
    let container = node.container;
    let threads: Vec<_> = inbound
        .into_iter()
        .map(|mut s| {
            let outputs = outputs.clone();
            std::thread::spawn(move || -> io::Result<()> {
                let mut reader = FrameReader::new();
                // what one read brought, by destination: local split, local count, the peer's
                // split, the peer's count
                let mut out = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
                loop {
                    let open = reader.read(&mut s, |kind, task, frame| {
                        let remote = if task == container { 0 } else { 2 };
                        let i = remote + usize::from(kind != Role::Split.byte());
                        out[i].extend_from_slice(frame);
                    })?;
                    for (i, bytes) in out.iter_mut().enumerate() {
                        if bytes.is_empty() {
                            continue;
                        }
                        let to = match i {
                            0 => &outputs.split,
                            1 => &outputs.count,
                            2 => &outputs.peer_split,
                            _ => &outputs.peer_count,
                        };
                        to.lock().expect("a writer").write_all(bytes)?;
                        bytes.clear();
                    }
                    if !open {
                        return Ok(());
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join()
            .map_err(|_| io::Error::other("a forwarding thread panicked"))??;
    }
    Ok(())
}

/// How a relay run is set up besides its duration.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    /// Words in the sentences' vocabulary.
    pub vocabulary: usize,
    /// With acking (`relay_acked.rs`): each spout's window of trees in flight; 0 without.
    pub window: usize,
    /// Each container's processes on one CPU (container `c` on CPU `c` modulo the CPUs), as
    /// `heron-rs.local.cpu.pinning=core` places ours.
    pub pinned: bool,
}

/// Runs the eight relay processes of `exe` for `duration` and sums the counts' rates after
/// `warmup`.
pub fn run(
    exe: &Path,
    duration: Duration,
    warmup: Duration,
    setup: Setup,
) -> Result<PeerResult, String> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let ports = (0..CONTAINERS)
        .map(|_| free_loopback_port())
        .collect::<io::Result<Vec<u16>>>()
        .map_err(|e| format!("relay peer: no free loopback port: {e}"))?;
    let ports = ports
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let start_ns = now_ns().to_string();
    // the counts exit by themselves; the others forward until `nodes` is dropped
    let mut nodes = Children::default();
    let mut counts = Vec::new();
    for role in [Role::Stmgr, Role::Count, Role::Split, Role::Spout] {
        for c in 0..CONTAINERS {
            let mut cmd = Command::new(exe);
            cmd.arg(NODE_COMMAND)
                .args(["--role", role.name()])
                .args(["--container", &c.to_string()])
                .args(["--ports", &ports])
                .args(["--start-ns", &start_ns])
                .args(["--warmup-ms", &warmup.as_millis().to_string()])
                .args(["--duration-ms", &duration.as_millis().to_string()])
                .args(["--vocabulary", &setup.vocabulary.to_string()])
                .args(["--window", &setup.window.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::piped());
            if setup.pinned {
                cmd.args(["--cpu", &(c as usize % cpus).to_string()]);
            }
            die_with_parent(&mut cmd);
            let mut child = cmd
                .spawn()
                .map_err(|e| format!("relay peer: cannot start {}: {e}", exe.display()))?;
            if role == Role::Count {
                let out = child.stdout.take().expect("piped stdout");
                counts.push(std::thread::spawn(move || {
                    BufReader::new(out)
                        .lines()
                        .map_while(Result::ok)
                        .find_map(|l| parse_report(&l))
                }));
            }
            nodes.0.push(child);
        }
    }
    let deadline = Instant::now() + duration + Duration::from_secs(60);
    let mut reports = Vec::new();
    for (i, r) in counts.into_iter().enumerate() {
        while !r.is_finished() {
            if Instant::now() > deadline {
                return Err(format!("relay peer: count {i} did not report"));
            }
            if let Some((j, status)) = nodes
                .0
                .iter_mut()
                .enumerate()
                .find_map(|(j, c)| Some((j, c.try_wait().ok()??)))
                .filter(|(_, s)| !s.success())
            {
                return Err(format!("relay peer: process {j} exited with {status}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        match r.join().ok().flatten() {
            Some(rep) => reports.push(rep),
            None => return Err(format!("relay peer: count {i} exited without a report")),
        }
    }
    Ok(PeerResult {
        name: "relay",
        words_per_sec: reports
            .iter()
            .map(|&(words, secs, _)| words as f64 / secs.max(1e-9))
            .sum(),
        total_words: reports.iter().map(|&(_, _, total)| total).sum(),
        latency: None,
    })
}

/// `relay-node words W secs S total T` → (W, S, T).
fn parse_report(line: &str) -> Option<(u64, f64, u64)> {
    let f: Vec<&str> = line
        .strip_prefix(NODE_COMMAND)?
        .split_whitespace()
        .collect();
    match f.as_slice() {
        ["words", w, "secs", s, "total", t] => {
            Some((w.parse().ok()?, s.parse().ok()?, t.parse().ok()?))
        }
        _ => None,
    }
}

/// `bench relay-run --duration-ms D --warmup-ms W [--vocabulary N] [--window N] [--pinned 1]`:
/// the relay alone.
pub fn run_main(args: &[String]) -> i32 {
    let (mut duration, mut warmup) = (None, None);
    let mut setup = Setup {
        vocabulary: crate::common::sentences::WORDS.len(),
        window: 0,
        pinned: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let v = it.next().and_then(|v| v.parse::<u64>().ok());
        match (a.as_str(), v) {
            ("--duration-ms", Some(v)) => duration = Some(Duration::from_millis(v)),
            ("--warmup-ms", Some(v)) => warmup = Some(Duration::from_millis(v)),
            ("--vocabulary", Some(v)) if v > 0 => setup.vocabulary = v as usize,
            ("--window", Some(v)) => setup.window = v as usize,
            ("--pinned", Some(v)) => setup.pinned = v != 0,
            _ => {
                eprintln!("{RUN_COMMAND}: bad argument {a:?}");
                return 2;
            }
        }
    }
    let (Some(duration), Some(warmup)) = (duration, warmup) else {
        eprintln!("{RUN_COMMAND}: needs --duration-ms and --warmup-ms");
        return 2;
    };
    match run(
        &std::env::current_exe().unwrap_or_default(),
        duration,
        warmup,
        setup,
    ) {
        Ok(r) => {
            println!("relay words_per_sec {}", r.words_per_sec);
            0
        }
        Err(e) => {
            eprintln!("{e}");
            1
        }
    }
}

#[cfg(test)]
mod tests;
