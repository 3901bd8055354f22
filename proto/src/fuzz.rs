//! Fuzzing entry points (`fuzz/`, cargo-fuzz) for the decoders of this crate, and the
//! helpers the other crates' entry points share: [`packets`] turns fuzz bytes into the packets
//! a daemon would read from a socket, [`replay`] runs an entry point over the corpus and
//! regression inputs kept in the repository (what `cargo test` runs). Not a stable API.

use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};

use crate::codec::{HeronCodec, Packet};
use crate::tuple::{
    parse_tuple_set2, read_acks, scan_tuple, split_data_set, split_set2, split_tuple_set,
    walk_data_tuple,
};

/// The packet size limit the fuzzed daemons use (the stream manager's default is larger;
/// a smaller one keeps inputs small).
pub const MAX_PACKET: usize = 1 << 20;

/// The packets `data` holds, read with [`HeronCodec`] as a daemon reads its socket: up to
/// the first framing error (where the daemon closes the connection) or the end.
pub fn packets(data: &[u8]) -> Vec<Packet> {
    let codec = HeronCodec::new(MAX_PACKET);
    let mut buf = BytesMut::from(data);
    let mut out = Vec::new();
    while let Ok(Some(p)) = codec.decode_packet(&mut buf) {
        out.push(p);
    }
    out
}

/// Target `packet`: the framing codec, then every packet's payload through the in-place
/// tuple readers.
pub fn packet(data: &[u8]) {
    for p in packets(data) {
        let _ = p.type_name();
        tuple_payload(&p.payload);
    }
}

/// Target `tuple_sets`: `data` as a tuple set payload (`HeronTupleSet2`, `HeronTupleSet`,
/// their data and control parts, single tuples), read by every in-place reader.
pub fn tuple_sets(data: &[u8]) {
    tuple_payload(&Bytes::copy_from_slice(data));
}

fn tuple_payload(payload: &Bytes) {
    if let Ok(set) = parse_tuple_set2(payload) {
        if let Some(d) = set.data {
            let _ = (d.stream_id(), d.component(), d.len());
            for t in d.tuples() {
                one_tuple(t);
            }
        }
        if let Some(c) = set.control {
            acks(&c);
        }
    }
    if let Ok(parts) = split_set2(payload) {
        if let Some(c) = parts.control {
            acks(c);
        }
    }
    if let Ok(parts) = split_tuple_set(payload) {
        if let Some(d) = parts.data.and_then(|d| split_data_set(d).ok()) {
            if let Ok(Some((block, n))) = d.tuple_block() {
                assert_eq!(u64::from(n), d.count(), "a block holds every tuple");
                assert!(block.len() <= payload.len());
            }
            let _ = d.for_each_tuple(|t| {
                one_tuple(t);
                Ok(())
            });
        }
        if let Some(c) = parts.control {
            acks(c);
        }
    }
    one_tuple(payload);
}

fn one_tuple(t: &[u8]) {
    let _ = scan_tuple(t);
    let _ = walk_data_tuple(t, |_, _| {}, |_| Ok(()));
}

fn acks(control: &[u8]) {
    let mut out = Vec::new();
    if read_acks(control, &mut out).is_ok() {
        for a in &out {
            a.for_each_root(control, |_, _| {});
        }
    }
}

/// The directories whose files are kept inputs of fuzz target `target`:
/// `fuzz/corpus/<target>` (seeds) and `fuzz/regressions/<target>` (inputs that once crashed).
pub fn kept_inputs(target: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    ["corpus", "regressions"]
        .iter()
        .map(|d| root.join(d).join(target))
        .collect()
}

/// Runs `entry` over every kept input of `target`; the number of inputs run. A panic names
/// the input's file.
pub fn replay(target: &str, entry: impl Fn(&[u8])) -> usize {
    let mut n = 0;
    for dir in kept_inputs(target) {
        let Ok(files) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = files.flatten().map(|e| e.path()).collect();
        files.sort();
        for f in files {
            let data = std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            let name = f.display().to_string();
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| entry(&data)));
            assert!(outcome.is_ok(), "fuzz input {name} panics");
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    #[test]
    fn kept_packet_inputs_decode_without_panicking() {
        assert!(super::replay("packet", super::packet) > 0, "seeds are kept");
    }

    #[test]
    fn kept_tuple_set_inputs_decode_without_panicking() {
        assert!(
            super::replay("tuple_sets", super::tuple_sets) > 0,
            "seeds are kept"
        );
    }
}
