#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bbcheck::testkit::fuzzing::blackbox_parquet_mcap(data));
