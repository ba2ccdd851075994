//! Blocks inserted at a fixed stride (a download's chunk headers, a container's blocks) are
//! recognised and taken out exactly: every clean real log, of both formats, with blocks of 2–64
//! bytes every 512–8192 bytes (`damage --model periodic-insertions`), checks as the log it was,
//! exports the same records and salvages to the same bytes; a log without them is read as it is.

use crate::common::{self, TempDir, bbcheck};
use bbcheck::damage::{self, Model};
use serde_json::Value;
use std::path::Path;

const SEEDS: u64 = 3;

fn check_json(path: &Path) -> Value {
    let out = bbcheck(&["check", "--json", path.to_str().unwrap()]);
    serde_json::from_slice(&out.stdout).unwrap()
}

fn export(path: &Path) -> Vec<u8> {
    bbcheck(&["export", "--jsonl", path.to_str().unwrap()]).stdout
}

fn salvage(path: &Path, out: &Path) -> Vec<u8> {
    bbcheck(&[
        "salvage",
        path.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    std::fs::read(out).unwrap()
}

#[test]
fn periodic_insertions_are_taken_out_exactly() {
    let dir = TempDir::new("periodic");
    let (mut cases, mut blocks) = (0, 0);
    for (name, data) in common::clean_real_logs() {
        let clean = dir.join("clean");
        std::fs::write(&clean, &data).unwrap();
        let report = check_json(&clean);
        assert!(report.get("periodic_insertions").is_none(), "{name}");
        let (exported, salvaged) = (export(&clean), salvage(&clean, &dir.join("clean.out")));
        for seed in 0..SEEDS {
            let d = damage::damage(&data, Model::PeriodicInsertions, seed);
            let case = format!("{name} seed {seed}");
            let copy = dir.join("copy");
            std::fs::write(&copy, &d.data).unwrap();
            let got = check_json(&copy);
            let found = &got["periodic_insertions"];
            let first = &d.changes[0];
            assert_eq!(found["count"], d.changes.len(), "{case}");
            assert_eq!(found["length"], first.length, "{case}");
            assert_eq!(found["first"], first.offset, "{case}");
            assert_eq!(found["input_size"], d.data.len(), "{case}");
            // The log as it was: the same report, records and salvaged bytes.
            for key in [
                "verdict",
                "size",
                "sessions",
                "corrupt_spans",
                "suspect_spans",
            ] {
                assert_eq!(got[key], report[key], "{case}: {key}");
            }
            assert!(export(&copy) == exported, "{case}: export differs");
            assert!(
                salvage(&copy, &dir.join("copy.out")) == salvaged,
                "{case}: salvage differs"
            );
            cases += 1;
            blocks += d.changes.len();
        }
    }
    println!("periodic insertions: {cases} cases, {blocks} blocks, every one taken out exactly");
}
