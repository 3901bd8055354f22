#![no_main]
//! cargo-fuzz target `tracker`: [`heron_fuzz::tracker`].
libfuzzer_sys::fuzz_target!(|data: &[u8]| heron_fuzz::tracker(data));
