//! Fuzzing heron-rs: one entry point per decoder that input from outside reaches, each
//! driving the real code the daemon runs (the stream manager's and tmaster's decision cores,
//! the instance's gateway decoding, the checkpoint manager's handler, the multi-lang reader,
//! the Flux loader, checkpointed state and window snapshots, Streamlet elements, the tracker's routes over state
//! nodes, and the authentication handshake every listener starts with). `fuzz_targets/<name>.rs` hands libFuzzer's input to the function of that name.
//!
//! ```sh
//! scripts/fuzz.sh 60            # every target for 60 s (installs cargo-fuzz when missing)
//! scripts/fuzz.sh 600 stmgr     # one target for 10 minutes
//! ```
//!
//! Seeds live in `fuzz/corpus/<target>/` (written by `HERONRS_WRITE_FUZZ_SEEDS=1 cargo test
//! -p heron-fuzz --test replay`), and inputs that once crashed in `fuzz/regressions/<target>/`; `cargo test`
//! runs every target over both (`tests/replay.rs`), so a fixed crash stays fixed.
//!
//! ```
//! // any bytes: an error is fine, a panic is a bug
//! heron_fuzz::packet(b"\x00\x00\x00\x05junk!");
//! heron_fuzz::multilang(b"\x00{\"command\": \"emit\"}\nend\n");
//! ```

mod daemons;
mod handshake;
mod inputs;
pub mod seeds;

pub use daemons::{ckptmgr, stmgr};
pub use handshake::handshake;
pub use heron_instance::fuzz::from_stmgr as instance;
pub use heron_proto::fuzz::{packet, replay, tuple_sets};
pub use heron_tmaster::fuzz::stmgr_packets as tmaster;
pub use inputs::{element, flux, multilang, state, tracker};

/// A target's entry point: any bytes in, no panic out.
pub type Entry = fn(&[u8]);

/// Every target, by name, with its entry point.
pub const TARGETS: [(&str, Entry); 12] = [
    ("packet", packet),
    ("tuple_sets", tuple_sets),
    ("stmgr", stmgr),
    ("tmaster", tmaster),
    ("instance", instance),
    ("ckptmgr", ckptmgr),
    ("multilang", multilang),
    ("flux", flux),
    ("state", state),
    ("tracker", tracker),
    ("handshake", handshake),
    ("element", element),
];
