#![no_main]
//! cargo-fuzz target `element`: [`heron_fuzz::element`].
libfuzzer_sys::fuzz_target!(|data: &[u8]| heron_fuzz::element(data));
