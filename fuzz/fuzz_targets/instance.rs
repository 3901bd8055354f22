#![no_main]
//! cargo-fuzz target `instance`: [`heron_fuzz::instance`].
libfuzzer_sys::fuzz_target!(|data: &[u8]| heron_fuzz::instance(data));
