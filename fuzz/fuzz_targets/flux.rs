#![no_main]
//! cargo-fuzz target `flux`: [`heron_fuzz::flux`].
libfuzzer_sys::fuzz_target!(|data: &[u8]| heron_fuzz::flux(data));
