#![no_main]
//! cargo-fuzz target `tuple_sets`: [`heron_fuzz::tuple_sets`].
libfuzzer_sys::fuzz_target!(|data: &[u8]| heron_fuzz::tuple_sets(data));
