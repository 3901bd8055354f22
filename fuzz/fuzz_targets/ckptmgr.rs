#![no_main]
//! cargo-fuzz target `ckptmgr`: [`heron_fuzz::ckptmgr`].
libfuzzer_sys::fuzz_target!(|data: &[u8]| heron_fuzz::ckptmgr(data));
