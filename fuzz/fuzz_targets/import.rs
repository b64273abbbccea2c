#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ksim_fuzz::run("import", data));
