#![no_main]
//! cargo-fuzz target `handshake`: [`heron_fuzz::handshake`].
libfuzzer_sys::fuzz_target!(|data: &[u8]| heron_fuzz::handshake(data));
