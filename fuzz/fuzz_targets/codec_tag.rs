#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bbcheck::testkit::fuzzing::codec_tag(data));
