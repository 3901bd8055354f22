//! The acked relay floor (`--peer relay --reliability atleast`): the relay of `relay_peer.rs`
//! with Heron's acking and nothing else, so that our ATLEAST_ONCE word count can be judged
//! against the least this layout needs for it, in the same run.
//!
//! What each process does on top of the relay's work:
//! - The spout keeps at most a window of sentences in flight (our
//!   `topology.max.spout.pending`, 100 unless set). Once the window is full it waits until
//!   as much of it is free as ours wait for (`heron_instance::refill_slots`: all of a window
//!   of 100), without ours' 1-ms bound, which only matters when acks are slow or lost. Then
//!   it fills the window again, shuffling one sentence at a time over the two split tasks.
//!   Each sentence carries its tree's root, which is also its key.
//! - The spout's stream manager starts each tree as it forwards the spout's sentences (the
//!   root's XOR is set to the sentence's key), and keeps the trees of its spout's roots in a
//!   map. Acks for them, from either container, are XORed in; a tree that reaches 0 is
//!   complete, and its root goes back to the spout in one frame per round of the event loop.
//!   Acks for the other container's roots are forwarded there.
//! - The split gives each word a random key and acks its sentence with the sentence's key XOR
//!   the words' keys (Storm's acker update: the input acked and its anchored children born,
//!   in one value). The words carry their root and key.
//! - The count acks each word, one value per root for the words of one read that share it
//!   (as our bolts merge consecutive acks of one root).
//!
//! Acks travel as our bolts' do: instance → its stream manager → the root's stream manager →
//! spout. The stream manager is one thread on `epoll`, as ours is one tokio thread; with at
//! most two windows in flight nothing waits on a full socket, so it buffers without limit.
//! The frames are the relay's (`[u32 length][u8 kind][u32 task][records]`), with two kinds
//! more: [`ACKS`] (task: the roots' container) and [`DONE`] (task: the spout's container).
//! No protobuf, no tuples, no timeouts, no failures, no metrics.

use crate::common::sentences::Sentences;
use crate::relay_peer::{
    begin_frame, connect, count, count_task, end_frame, flush, sentence_records, words,
    FrameReader, Node, Role, WordTail, CONTAINERS, HEADER, POLL,
};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{self, ErrorKind, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;

/// A frame of acks: `[u64 root][u64 xor]` records, for the roots' container.
pub(crate) const ACKS: u8 = 0x10;
/// A frame of completed roots (`u64` each), for the spout of its task's container.
pub(crate) const DONE: u8 = 0x11;
/// A root's top byte is its spout's container.
const ROOT_SHIFT: u32 = 56;
/// A sentence record: `[u16 length][sentence][u64 root]`; a word record: `[u8 length][word]`
/// then [`WORD_TAIL`] bytes, `[u64 root][u64 key]`.
const WORD_TAIL: usize = 16;

fn root_container(root: u64) -> u32 {
    (root >> ROOT_SHIFT) as u32
}

fn u64_at(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
}

/// Runs `role` of an acked relay process.
pub(crate) fn run_role(node: &Node, role: Role) -> io::Result<()> {
    match role {
        Role::Stmgr => stmgr(node),
        Role::Spout => spout(node),
        Role::Split => split(node),
        Role::Count => count(node, &mut WordAcks::new()),
    }
}

/// Frames being filled, one per task of one kind, each begun at its first record.
struct Frames {
    kind: u8,
    bufs: Vec<(Vec<u8>, Option<usize>)>,
}

impl Frames {
    fn new(kind: u8, tasks: usize) -> Frames {
        Frames {
            kind,
            bufs: (0..tasks).map(|_| (Vec::new(), None)).collect(),
        }
    }

    /// The open frame for `task`, to append records to.
    fn at(&mut self, task: u32) -> &mut Vec<u8> {
        let (buf, start) = &mut self.bufs[task as usize];
        if start.is_none() {
            *start = Some(begin_frame(buf, self.kind, task));
        }
        buf
    }

    /// Closes the open frames and moves them to the end of `out`.
    fn close_into(&mut self, out: &mut Vec<u8>) {
        for (buf, start) in &mut self.bufs {
            if let Some(at) = start.take() {
                end_frame(buf, at);
                out.extend_from_slice(buf);
                buf.clear();
            }
        }
    }
}

/// A cheap generator of word keys (xorshift64*).
struct Keys(u64);

impl Keys {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

fn spout(node: &Node) -> io::Result<()> {
    let mut s = node.connect(node.container, Role::Spout)?;
    s.set_read_timeout(Some(POLL))?;
    let mut sentences =
        Sentences::with_vocabulary(0x5EED ^ u64::from(node.container), node.vocabulary);
    let mut reader = FrameReader::new();
    let mut frames = Frames::new(Role::Split.byte(), CONTAINERS as usize);
    let mut out = Vec::new();
    let (mut next_root, mut task) = (u64::from(node.container) << ROOT_SHIFT, node.container);
    let (window, refill) = (node.window, heron_instance::refill_slots(node.window));
    let (mut in_flight, mut held) = (0usize, false);
    while !node.done() {
        // our spouts' rule: once the window is full, wait until enough of it is free
        if held && window - in_flight >= refill {
            held = false;
        }
        while !held && in_flight < window {
            let sentence = sentences.next_sentence();
            let rec = frames.at(task);
            rec.extend_from_slice(&(sentence.len() as u16).to_le_bytes());
            rec.extend_from_slice(sentence.as_bytes());
            rec.extend_from_slice(&next_root.to_le_bytes());
            next_root += 1;
            task = (task + 1) % CONTAINERS;
            in_flight += 1;
            held = in_flight == window;
        }
        frames.close_into(&mut out);
        flush(&mut s, &mut out)?;
        let mut bad = false;
        let open = reader.read(&mut s, |kind, _, frame| {
            if kind == DONE {
                in_flight = in_flight.saturating_sub((frame.len() - HEADER) / 8);
            } else {
                bad = true;
            }
        })?;
        if bad {
            return Err(io::Error::new(ErrorKind::InvalidData, "a spout got data"));
        }
        if !open {
            break;
        }
    }
    Ok(())
}

fn split(node: &Node) -> io::Result<()> {
    let mut s = node.connect(node.container, Role::Split)?;
    s.set_read_timeout(Some(POLL))?;
    let mut reader = FrameReader::new();
    let mut out_words = Frames::new(Role::Count.byte(), CONTAINERS as usize);
    let mut acks = Frames::new(ACKS, CONTAINERS as usize);
    let mut keys = Keys(0x9E37_79B9_7F4A_7C15 ^ u64::from(node.container + 1));
    let mut out = Vec::new();
    while !node.done() {
        let open = reader.read(&mut s, |_, _, frame| {
            for (sentence, root) in sentence_records(&frame[HEADER..]) {
                // the sentence's key is its root
                let mut xor = u64_at(root);
                for word in words(sentence) {
                    let key = keys.next();
                    xor ^= key;
                    let rec = out_words.at(count_task(word));
                    rec.push(word.len() as u8);
                    rec.extend_from_slice(word);
                    rec.extend_from_slice(root);
                    rec.extend_from_slice(&key.to_le_bytes());
                }
                let rec = acks.at(root_container(u64_at(root)));
                rec.extend_from_slice(root);
                rec.extend_from_slice(&xor.to_le_bytes());
            }
        })?;
        // the words before the acks, so that no tree completes before its words are out
        out_words.close_into(&mut out);
        acks.close_into(&mut out);
        flush(&mut s, &mut out)?;
        if !open {
            break;
        }
    }
    Ok(())
}

/// The count's acks: one record per run of words with the same root.
struct WordAcks {
    acks: Frames,
    /// The last record's root and where its value is.
    last: Option<(u64, u32, usize)>,
    out: Vec<u8>,
}

impl WordAcks {
    fn new() -> WordAcks {
        WordAcks {
            acks: Frames::new(ACKS, CONTAINERS as usize),
            last: None,
            out: Vec::new(),
        }
    }
}

impl WordTail for WordAcks {
    const LEN: usize = WORD_TAIL;

    fn word(&mut self, tail: &[u8]) {
        let (root, key) = (u64_at(tail), u64_at(&tail[8..]));
        if let Some((last, c, at)) = self.last {
            if last == root {
                let buf = self.acks.at(c);
                let merged = u64_at(&buf[at..]) ^ key;
                buf[at..at + 8].copy_from_slice(&merged.to_le_bytes());
                return;
            }
        }
        let c = root_container(root);
        let buf = self.acks.at(c);
        buf.extend_from_slice(&root.to_le_bytes());
        self.last = Some((root, c, buf.len()));
        buf.extend_from_slice(&key.to_le_bytes());
    }

    fn after_read(&mut self, s: &mut TcpStream) -> io::Result<()> {
        self.last = None;
        self.acks.close_into(&mut self.out);
        flush(s, &mut self.out)
    }
}

/// A hasher for the roots, which are a container's byte over a counter: one multiply.
#[derive(Default)]
struct RootHasher(u64);

impl Hasher for RootHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("roots hash as u64")
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
    }
}

/// The trees of this container's spout: root → XOR of what is still out.
type Trees = HashMap<u64, u64, BuildHasherDefault<RootHasher>>;

/// The stream manager's connections, by index.
const SPOUT: usize = 0;
const SPLIT: usize = 1;
const COUNT: usize = 2;
/// The other stream manager's connection to us (read only).
const PEER_IN: usize = 3;
/// Our connection to the other stream manager (write only).
const PEER_OUT: usize = 4;
const LINKS: usize = 5;

/// One stream manager: a thread on `epoll` over its five connections (level-triggered: a
/// connection with bytes left is read again next round), with a buffer per connection for
/// what waits to be written.
fn stmgr(node: &Node) -> io::Result<()> {
    let me = node.container;
    let listener = TcpListener::bind(("127.0.0.1", node.port(me)))?;
    let other = (me + 1) % CONTAINERS;
    let port = node.port(other);
    let peer = std::thread::spawn(move || connect(port, Role::Stmgr, me));
    let mut accepted: [Option<TcpStream>; PEER_IN + 1] = Default::default();
    while accepted.iter().any(Option::is_none) {
        let (mut s, _) = listener.accept()?;
        s.set_nodelay(true)?;
        let mut hello = [0u8; 5];
        io::Read::read_exact(&mut s, &mut hello)?;
        let i = match hello[0] {
            b if b == Role::Spout.byte() => SPOUT,
            b if b == Role::Split.byte() => SPLIT,
            b if b == Role::Count.byte() => COUNT,
            b if b == Role::Stmgr.byte() => PEER_IN,
            b => return Err(io::Error::new(ErrorKind::InvalidData, format!("hello {b}"))),
        };
        accepted[i] = Some(s);
    }
    let peer_out = peer
        .join()
        .map_err(|_| io::Error::other("the connecting thread panicked"))??;
    let mut links: Vec<TcpStream> = accepted.into_iter().flatten().collect();
    links.push(peer_out);
    for s in &links {
        s.set_nonblocking(true)?;
    }
    Shell::new(me, links)?.run(node)
}

/// The stream manager's state: the connections, their read and write buffers, and the trees.
struct Shell {
    me: u32,
    links: Vec<TcpStream>,
    readers: Vec<FrameReader>,
    outs: Vec<Vec<u8>>,
    /// Whether a link is registered for writability (its buffer did not drain).
    want_write: [bool; LINKS],
    trees: Trees,
    done: Frames,
    epoll: i32,
}

impl Shell {
    fn new(me: u32, links: Vec<TcpStream>) -> io::Result<Shell> {
        // SAFETY: epoll_create1 has no memory arguments.
        let epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if epoll < 0 {
            return Err(io::Error::last_os_error());
        }
        let shell = Shell {
            me,
            readers: (0..LINKS).map(|_| FrameReader::new()).collect(),
            outs: vec![Vec::new(); LINKS],
            want_write: [false; LINKS],
            trees: Trees::default(),
            done: Frames::new(DONE, CONTAINERS as usize),
            epoll,
            links,
        };
        for i in 0..LINKS {
            let events = if i == PEER_OUT { 0 } else { libc::EPOLLIN };
            shell.ctl(libc::EPOLL_CTL_ADD, i, events)?;
        }
        Ok(shell)
    }

    fn ctl(&self, op: i32, link: usize, events: i32) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: events as u32,
            u64: link as u64,
        };
        // SAFETY: a valid epoll fd, a socket this shell owns, and an event on the stack.
        let rc = unsafe { libc::epoll_ctl(self.epoll, op, self.links[link].as_raw_fd(), &mut ev) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn run(mut self, node: &Node) -> io::Result<()> {
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; LINKS];
        loop {
            // SAFETY: `events` has room for LINKS events.
            let n = unsafe {
                libc::epoll_wait(
                    self.epoll,
                    events.as_mut_ptr(),
                    LINKS as i32,
                    POLL.as_millis() as i32,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if n == 0 && node.done() {
                return Ok(());
            }
            for ev in &events[..n as usize] {
                let link = ev.u64 as usize;
                if link != PEER_OUT && ev.events & (libc::EPOLLIN | libc::EPOLLHUP) as u32 != 0 {
                    self.read(link)?;
                }
            }
            self.done.close_into(&mut self.outs[SPOUT]);
            self.write_all()?;
        }
    }

    /// One read of `link`, and every whole frame in it routed.
    fn read(&mut self, link: usize) -> io::Result<()> {
        let Shell {
            me,
            links,
            readers,
            outs,
            trees,
            done,
            ..
        } = self;
        let me = *me;
        let mut bad = None;
        let open = readers[link].read(&mut links[link], |kind, task, frame| {
            let local = task == me;
            match kind {
                k if k == Role::Split.byte() => {
                    if link == SPOUT {
                        start_trees(trees, &frame[HEADER..]);
                    }
                    outs[if local { SPLIT } else { PEER_OUT }].extend_from_slice(frame);
                }
                k if k == Role::Count.byte() => {
                    outs[if local { COUNT } else { PEER_OUT }].extend_from_slice(frame)
                }
                ACKS if local => apply_acks(trees, &frame[HEADER..], done.at(me)),
                ACKS => outs[PEER_OUT].extend_from_slice(frame),
                k => bad = Some(k),
            }
        })?;
        if let Some(k) = bad {
            return Err(io::Error::new(
                ErrorKind::InvalidData,
                format!("a frame of kind {k}"),
            ));
        }
        if !open {
            return Err(io::Error::new(ErrorKind::UnexpectedEof, "a link closed"));
        }
        Ok(())
    }

    /// Writes what each link has waiting, as far as its socket takes it; a link left with
    /// bytes is watched for writability.
    fn write_all(&mut self) -> io::Result<()> {
        for link in 0..LINKS {
            let out = &mut self.outs[link];
            let mut written = 0;
            while written < out.len() {
                match self.links[link].write(&out[written..]) {
                    Ok(n) => written += n,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            out.drain(..written);
            let want = !out.is_empty();
            if want != self.want_write[link] {
                let read = if link == PEER_OUT { 0 } else { libc::EPOLLIN };
                let write = if want { libc::EPOLLOUT } else { 0 };
                self.ctl(libc::EPOLL_CTL_MOD, link, read | write)?;
                self.want_write[link] = want;
            }
        }
        Ok(())
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        // SAFETY: the epoll fd this shell created, closed once.
        unsafe { libc::close(self.epoll) };
    }
}

/// Starts the tree of each sentence in a spout's frame: its XOR is its key, the root.
fn start_trees(trees: &mut Trees, records: &[u8]) {
    for (_, root) in sentence_records(records) {
        let root = u64_at(root);
        trees.insert(root, root);
    }
}

/// XORs each ack into its tree; a tree that reaches 0 is complete and its root goes to `done`.
fn apply_acks(trees: &mut Trees, mut rec: &[u8], done: &mut Vec<u8>) {
    while rec.len() >= 16 {
        let (root, xor) = (u64_at(rec), u64_at(&rec[8..]));
        rec = &rec[16..];
        if let Some(value) = trees.get_mut(&root) {
            *value ^= xor;
            if *value == 0 {
                trees.remove(&root);
                done.extend_from_slice(&root.to_le_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sentence_frame(roots: &[(u64, &str)]) -> Vec<u8> {
        let mut f = Vec::new();
        for (root, s) in roots {
            f.extend_from_slice(&(s.len() as u16).to_le_bytes());
            f.extend_from_slice(s.as_bytes());
            f.extend_from_slice(&root.to_le_bytes());
        }
        f
    }

    #[test]
    fn a_tree_completes_when_its_acks_xor_to_its_key_and_not_before() {
        let mut trees = Trees::default();
        let (a, b) = (7u64, (1u64 << ROOT_SHIFT) | 3);
        start_trees(&mut trees, &sentence_frame(&[(a, "x y"), (b, "z")]));
        assert_eq!(trees.len(), 2);
        // the split acks a's sentence and gives birth to two words, keys 5 and 9
        let mut acks = Vec::new();
        let mut done = Vec::new();
        for (root, xor) in [(a, a ^ 5 ^ 9), (a, 5)] {
            acks.extend_from_slice(&root.to_le_bytes());
            acks.extend_from_slice(&u64::to_le_bytes(xor));
        }
        apply_acks(&mut trees, &acks, &mut done);
        assert!(done.is_empty(), "the word keyed 9 is still out");
        let mut last = 8u64.to_le_bytes().to_vec(); // a stranger's root is ignored
        last.extend_from_slice(&1u64.to_le_bytes());
        last.extend_from_slice(&a.to_le_bytes());
        last.extend_from_slice(&9u64.to_le_bytes());
        apply_acks(&mut trees, &last, &mut done);
        assert_eq!(done, a.to_le_bytes());
        assert_eq!(trees.keys().copied().collect::<Vec<_>>(), [b]);
        assert_eq!(root_container(b), 1);
    }

    #[test]
    fn the_counts_acks_merge_the_words_of_one_root_and_go_to_its_container() {
        let mut acks = WordAcks::new();
        let word = |root: u64, key: u64| {
            let mut t = root.to_le_bytes().to_vec();
            t.extend_from_slice(&key.to_le_bytes());
            t
        };
        let other = 1u64 << ROOT_SHIFT;
        for (root, key) in [(4, 1), (4, 2), (other, 8), (4, 16)] {
            acks.word(&word(root, key));
        }
        let mut out = Vec::new();
        acks.acks.close_into(&mut out);
        // container 0's frame: root 4 with 1^2, then root 4 again with 16; container 1's: 8
        let mut frames = Vec::new();
        let mut rest = &out[..];
        while !rest.is_empty() {
            let len = u32::from_le_bytes(rest[..4].try_into().unwrap()) as usize;
            frames.push((rest[4], u32_at(&rest[5..]), rest[HEADER..4 + len].to_vec()));
            rest = &rest[4 + len..];
        }
        let recs = |pairs: &[(u64, u64)]| {
            pairs
                .iter()
                .flat_map(|(r, x)| [r.to_le_bytes(), x.to_le_bytes()].concat())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            frames,
            [
                (ACKS, 0, recs(&[(4, 3), (4, 16)])),
                (ACKS, 1, recs(&[(other, 8)]))
            ]
        );
    }

    fn u32_at(b: &[u8]) -> u32 {
        u32::from_le_bytes(b[..4].try_into().unwrap())
    }

    #[test]
    fn keys_do_not_repeat_soon() {
        let mut keys = Keys(1);
        let seen: std::collections::HashSet<u64> = (0..10_000).map(|_| keys.next()).collect();
        assert_eq!(seen.len(), 10_000);
    }
}
