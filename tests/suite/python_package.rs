//! The Python package (`python/`, installed into the project's `.venv` by `.ci/run` with
//! `pip install ./python`): pytest runs `tests/python/` against this build's command line, so a
//! package built from other sources than the command line fails here. Skipped without that
//! Python, failing under CI.

use crate::common;
use std::path::Path;
use std::process::Command;

#[test]
fn the_python_package_does_what_the_commands_do() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let Some(python) =
        common::python("bbcheck, pytest, pymavlink.DFReader, dask.distributed, duckdb")
    else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(root.join("tests/python"))
        .env("BBCHECK_BIN", env!("CARGO_BIN_EXE_bbcheck"))
        .env("BBCHECK_CORPUS", &corpus)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pytest failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
