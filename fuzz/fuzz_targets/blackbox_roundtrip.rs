#![no_main]

use bbcheck::fuzzing::LogModel;

libfuzzer_sys::fuzz_target!(|model: LogModel| bbcheck::fuzzing::blackbox_roundtrip(&model));
