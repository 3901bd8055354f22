#![no_main]
//! cargo-fuzz target `state`: [`heron_fuzz::state`].
libfuzzer_sys::fuzz_target!(|data: &[u8]| heron_fuzz::state(data));
