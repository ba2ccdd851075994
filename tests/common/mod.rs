//! Shared helpers for the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// The real-log corpus (`BBCHECK_CORPUS`, default `../shared/corpus`), or `None` when it is missing
/// outside CI. Under CI (`CI=true`) a missing corpus fails the test.
pub fn corpus() -> Option<PathBuf> {
    let dir = std::env::var_os("BBCHECK_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    if dir.join("real").is_dir() {
        return Some(dir);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!(
            "the real-log corpus is missing at {} (set BBCHECK_CORPUS)",
            dir.display()
        );
    }
    eprintln!(
        "SKIPPED: no real-log corpus at {} (set BBCHECK_CORPUS)",
        dir.display()
    );
    None
}

/// Run the built `bbcheck` binary.
pub fn bbcheck(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bbcheck"))
        .args(args)
        .output()
        .expect("bbcheck runs")
}

/// The project's own shipped corpus directory.
pub fn own_corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus")
}
