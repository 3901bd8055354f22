#![no_main]
//! cargo-fuzz target `multilang`: [`heron_fuzz::multilang`].
libfuzzer_sys::fuzz_target!(|data: &[u8]| heron_fuzz::multilang(data));
