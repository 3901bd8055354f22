#![no_main]
//! cargo-fuzz target `tmaster`: [`heron_fuzz::tmaster`].
libfuzzer_sys::fuzz_target!(|data: &[u8]| heron_fuzz::tmaster(data));
