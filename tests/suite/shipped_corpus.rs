//! The logs the project ships under `corpus/generated/` are exactly what the generator makes
//! (set `BBCHECK_BLESS=1` to rewrite them after a deliberate change), and they check clean.

use crate::common;

#[test]
fn demo_log_is_what_the_generator_makes() {
    let path = common::own_corpus().join("generated/demo.bbl");
    let generated = bbcheck::testkit::blackbox::demo_log();
    if std::env::var("BBCHECK_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, &generated).unwrap();
    }
    let shipped = std::fs::read(&path).expect("corpus/generated/demo.bbl is shipped");
    assert!(
        shipped == generated,
        "corpus/generated/demo.bbl differs from synth::demo_log()"
    );
}
