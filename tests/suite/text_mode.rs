//! A Unix → Windows text-mode copy (every line feed became CR LF) loses nothing: every real log
//! of both formats, copied so, checks, exports and salvages exactly as the log itself, and the
//! report says it was such a copy.

use crate::common;

use common::{TempDir, bbcheck};
use serde_json::Value;
use std::path::Path;

/// `data` as a Unix → Windows text-mode copy writes it.
fn to_crlf(data: &[u8]) -> Vec<u8> {
    let mut copy = Vec::with_capacity(data.len() + data.len() / 128);
    for &b in data {
        if b == b'\n' {
            copy.push(b'\r');
        }
        copy.push(b);
    }
    copy
}

/// The `check --json` report of `path`, with the path and what the copy changes left out.
fn report(path: &Path) -> (Value, Option<Value>) {
    let out = bbcheck(&["check", "--json", path.to_str().unwrap()]);
    let mut report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let object = report.as_object_mut().unwrap();
    object.remove("path");
    let copy = object.remove("text_mode_copy");
    (report, copy)
}

/// What `args` (with the log's path last but for `-o`) print to standard output.
fn stdout(args: &[&str]) -> Vec<u8> {
    let out = bbcheck(args);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{args:?}");
    out.stdout
}

#[test]
fn a_crlf_copy_of_every_real_log_reads_as_the_log() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let dir = TempDir::new("text-mode");
    let mut logs = 0;
    for format in ["blackbox", "ardupilot"] {
        for entry in std::fs::read_dir(corpus.join("real").join(format)).unwrap() {
            let log = entry.unwrap().path();
            let data = std::fs::read(&log).unwrap();
            let copy = dir.join("copy");
            std::fs::write(&copy, to_crlf(&data)).unwrap();
            let name = log.display();
            let (intact, none) = report(&log);
            let (copied, conversion) = report(&copy);
            assert_eq!(none, None, "{name}");
            assert_eq!(copied, intact, "{name}");
            let conversion = conversion.unwrap_or_else(|| panic!("{name}: not seen as a copy"));
            assert_eq!(conversion["conversion"], "lf-to-crlf", "{name}");
            assert_eq!(conversion["input_size"], to_crlf(&data).len(), "{name}");
            let (log, copy) = (log.to_str().unwrap(), copy.to_str().unwrap());
            assert!(
                stdout(&["export", "--jsonl", copy]) == stdout(&["export", "--jsonl", log]),
                "{name}: export differs"
            );
            let (from_log, from_copy) = (dir.join("log.out"), dir.join("copy.out"));
            for (input, output) in [(log, &from_log), (copy, &from_copy)] {
                stdout(&["salvage", input, "-o", output.to_str().unwrap()]);
            }
            assert!(
                std::fs::read(&from_copy).unwrap() == std::fs::read(&from_log).unwrap(),
                "{name}: salvage differs"
            );
            logs += 1;
        }
    }
    assert!(logs >= 20, "{logs} real logs");
}
