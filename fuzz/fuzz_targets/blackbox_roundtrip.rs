#![no_main]

use bbcheck::testkit::fuzzing::LogModel;

libfuzzer_sys::fuzz_target!(|model: LogModel| bbcheck::testkit::fuzzing::blackbox_roundtrip(&model));
