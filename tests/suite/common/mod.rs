//! Shared helpers for the integration tests.
#![allow(dead_code)]

use bbcheck::blackbox::frame::FrameKind;
use bbcheck::blackbox::sink::{EventFrame, Frame, Sink};
use std::ops::Deref;
use std::path::{Path, PathBuf};
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
    skipped(&format!(
        "no real-log corpus at {} (set BBCHECK_CORPUS)",
        dir.display()
    ));
    None
}

/// Say that the running test skips its checks, and why, in the test run's normal output (the
/// harness keeps what tests print to itself unless they fail).
pub fn skipped(why: &str) {
    use std::io::Write;
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED {test}: {why}");
}

/// The clean real logs: those whose manifest notes say nothing of damage.
pub fn clean_real_logs() -> Vec<(String, Vec<u8>)> {
    let Some(corpus) = corpus() else {
        return Vec::new();
    };
    let manifest = std::fs::read_to_string(corpus.join("real/MANIFEST.tsv")).unwrap();
    manifest
        .lines()
        .skip(1)
        .filter_map(|line| {
            let columns: Vec<&str> = line.split('\t').collect();
            let notes = columns.last()?.to_lowercase();
            (!notes.contains("damage")).then(|| columns[0].to_owned())
        })
        .map(|file| {
            let data = std::fs::read(corpus.join("real").join(&file)).unwrap();
            (file, data)
        })
        .collect()
}

/// Where the bytes `[offset, offset + len)` of a damaged copy were in its input, when they are an
/// unchanged stretch of it (or of a block written again).
pub fn input_offset(
    changes: &[bbcheck::testkit::damage::Change],
    offset: u64,
    len: u64,
) -> Option<u64> {
    // Unchanged stretches: (damaged start, input start), each up to the next change.
    let (mut out, mut input) = (0u64, 0u64);
    for c in changes {
        if offset >= out && offset + len <= c.offset {
            return Some(input + (offset - out));
        }
        // A block written again holds the bytes right before it.
        if c.kind == "repeat" && offset >= c.offset && offset + len <= c.offset + c.length {
            return Some(c.input_offset - c.length + (offset - c.offset));
        }
        out = c.offset + c.length;
        input = c.input_offset + c.input_length;
    }
    (offset >= out).then(|| input + (offset - out))
}

/// Every accepted Blackbox frame and event: its kind, where it starts and ends, and its values
/// (none for an event).
#[derive(Default)]
pub struct Located(pub Vec<(FrameKind, usize, usize, Vec<i64>)>);

impl Sink for Located {
    fn frame(&mut self, f: &Frame<'_>) {
        let start = f.offset as usize;
        self.0
            .push((f.kind, start, start + f.len, f.values.to_vec()));
    }

    fn event(&mut self, e: &EventFrame<'_>) {
        let start = e.offset as usize;
        self.0
            .push((FrameKind::E, start, start + e.len, Vec::new()));
    }
}

/// Run the built `bbcheck` binary.
pub fn bbcheck(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bbcheck"))
        .args(args)
        .output()
        .expect("bbcheck runs")
}

/// A Python that imports `modules` (comma-separated): `BBCHECK_PYTHON`, or `.venv/bin/python` in
/// the project, which `.ci/run` sets up. Without one the test is skipped, except under CI
/// (`CI=true`), where it fails.
pub fn python(modules: &str) -> Option<PathBuf> {
    let python = std::env::var_os("BBCHECK_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python"));
    let works = Command::new(&python)
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if works {
        return Some(python);
    }
    let message = format!(
        "no Python with {modules} at {} (set BBCHECK_PYTHON)",
        python.display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{message}");
    }
    skipped(&message);
    None
}

/// The real logs of the corpus in `real/<dir>` (`blackbox`, `ardupilot`), in name order; none
/// without the corpus (see [`corpus`]).
pub fn real_logs(dir: &str) -> Vec<PathBuf> {
    let Some(corpus) = corpus() else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = std::fs::read_dir(corpus.join("real").join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
}

/// Run `bbcheck export LOG ARGS…`, which must succeed; its standard output.
pub fn export(log: &Path, args: &[&str]) -> Vec<u8> {
    let mut all = vec!["export", log.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = bbcheck(&all);
    assert!(
        out.status.success(),
        "{}: {}",
        log.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The project's own shipped corpus directory.
pub fn own_corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// The names of the files in `dir`, sorted.
pub fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A fresh scratch directory `bbcheck-<name>-<pid>` under the system temporary directory, removed
/// (with everything in it) when dropped, also when the test panics. Give each test binary its own
/// name prefix so binaries running in parallel never share one.
pub struct TempDir(PathBuf);

impl TempDir {
    /// Create the directory, removing any leftover of an earlier run first.
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("bbcheck-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Deref for TempDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
