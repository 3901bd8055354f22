#![no_main]
//! cargo-fuzz target `stmgr`: [`heron_fuzz::stmgr`].
libfuzzer_sys::fuzz_target!(|data: &[u8]| heron_fuzz::stmgr(data));
