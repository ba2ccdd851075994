#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bbcheck::fuzzing::dataflash_export(data));
