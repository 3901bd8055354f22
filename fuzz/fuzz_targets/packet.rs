#![no_main]
//! cargo-fuzz target `packet`: [`heron_fuzz::packet`].
libfuzzer_sys::fuzz_target!(|data: &[u8]| heron_fuzz::packet(data));
