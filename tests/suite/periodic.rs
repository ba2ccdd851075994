//! Blocks inserted at a fixed stride (a download's chunk headers, a container's blocks) are
//! recognised and taken out exactly: every clean real log, of both formats, with blocks of 2–64
//! bytes every 512–8192 bytes (`damage --model periodic-insertions`), checks as the log it was,
//! exports the same records and salvages to the same bytes; a log without them is read as it is.
//! Blocks whose bytes differ (`differing-insertions`, a signed log's signatures) show only in
//! the damage they do: most are found, and every one found is taken out exactly.

use crate::common::{self, TempDir, bbcheck};
use bbcheck::testkit::damage::{self, Model};
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

/// The log `salvage` writes of `path` (which it must write: the log keeps its header).
fn salvage(path: &Path, out: &Path) -> Vec<u8> {
    let _ = std::fs::remove_file(out);
    let run = bbcheck(&[
        "salvage",
        path.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        run.status.code().is_some_and(|c| c <= 1),
        "{}: {}",
        path.display(),
        String::from_utf8_lossy(&run.stderr)
    );
    std::fs::read(out).unwrap_or_else(|e| panic!("{}: nothing salvaged: {e}", path.display()))
}

/// Whether `copy` (`d` of a clean log whose check is `report`, export `exported` and salvage
/// `salvaged`) was read without its blocks; every block found must be one inserted, and the log
/// then reads as the clean one.
fn taken_out(
    dir: &Path,
    d: &damage::Damaged,
    (report, exported, salvaged): (&Value, &[u8], &[u8]),
    case: &str,
) -> bool {
    let copy = dir.join("copy");
    std::fs::write(&copy, &d.data).unwrap();
    let got = check_json(&copy);
    let found = &got["periodic_insertions"];
    if found.is_null() {
        return false;
    }
    let (first, second) = (&d.changes[0], &d.changes[1]);
    assert_eq!(found["count"], d.changes.len(), "{case}");
    assert_eq!(found["length"], first.length, "{case}");
    assert_eq!(found["first"], first.offset, "{case}");
    assert_eq!(found["stride"], second.offset - first.offset, "{case}");
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
    true
}

#[test]
fn periodic_insertions_are_taken_out_exactly() {
    let dir = TempDir::new("periodic");
    // Per model and format (Blackbox, DataFlash): cases, cases found, blocks found.
    let mut tally = [[[0usize; 3]; 2]; 2];
    for (name, data) in common::clean_real_logs() {
        let clean = dir.join("clean");
        std::fs::write(&clean, &data).unwrap();
        let report = check_json(&clean);
        assert!(report.get("periodic_insertions").is_none(), "{name}");
        let (exported, salvaged) = (export(&clean), salvage(&clean, &dir.join("clean.out")));
        let format = usize::from(name.starts_with("ardupilot/"));
        for (m, model) in Model::PERIODIC.into_iter().enumerate() {
            for seed in 0..SEEDS {
                let d = damage::damage(&data, model, seed);
                let case = format!("{name} {} seed {seed}", model.name());
                let found = taken_out(&dir, &d, (&report, &exported, &salvaged), &case);
                // Blocks of the same bytes are found from the bytes alone.
                assert!(
                    found || model == Model::DifferingInsertions,
                    "{case}: not found"
                );
                let t = &mut tally[m][format];
                t[0] += 1;
                t[1] += usize::from(found);
                t[2] += if found { d.changes.len() } else { 0 };
            }
        }
    }
    for (model, per_format) in Model::PERIODIC.into_iter().zip(tally) {
        for (format, [cases, found, blocks]) in
            ["Blackbox", "DataFlash"].into_iter().zip(per_format)
        {
            println!(
                "{}, {format}: {found} of {cases} cases found, {blocks} blocks taken out exactly",
                model.name()
            );
        }
    }
    // Blocks of differing bytes are found where the damage they do recurs at their stride: in
    // most DataFlash logs (not where one cuts a FMT message, whose type's messages then show as
    // damage between them), in Blackbox logs unless the damage runs from one block to the next.
    let [blackbox, dataflash] = tally[1];
    assert!(dataflash[1] * 20 >= dataflash[0] * 17, "{dataflash:?}");
    assert!(blackbox[1] * 10 >= blackbox[0] * 6, "{blackbox:?}");
}

/// A signed DataFlash log's layout: a 64-byte block before every 4032 bytes of the log (the first
/// at the start of the file), each of other bytes, and a 100-byte trailer. The blocks are found
/// and taken out; what stays damaged is the trailer.
#[test]
fn a_signed_logs_blocks_are_taken_out_and_its_trailer_stays() {
    let dir = TempDir::new("signed");
    let mut noise = 0x2545_F491_4F6C_DD1Du64;
    let mut bytes = |n: usize| -> Vec<u8> {
        (0..n)
            .map(|_| {
                noise ^= noise << 13;
                noise ^= noise >> 7;
                noise ^= noise << 17;
                (noise >> 56) as u8
            })
            .collect()
    };
    let (mut logs, mut found) = (0, 0);
    for (name, log) in common::clean_real_logs() {
        if !name.starts_with("ardupilot/") {
            continue;
        }
        let mut signed = Vec::new();
        for chunk in log.chunks(4032) {
            signed.extend(bytes(64));
            signed.extend_from_slice(chunk);
        }
        signed.extend(bytes(100));
        let path = dir.join("signed.bin");
        std::fs::write(&path, &signed).unwrap();
        let got = check_json(&path);
        logs += 1;
        let blocks = &got["periodic_insertions"];
        if blocks.is_null() {
            continue;
        }
        found += 1;
        let expected = serde_json::json!({
            "first": 0, "stride": 4096, "length": 64, "count": log.len().div_ceil(4032),
            "input_size": signed.len(),
        });
        assert_eq!(blocks, &expected, "{name}");
        let damaged: u64 = got["corrupt_spans"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["end"].as_u64().unwrap() - s["start"].as_u64().unwrap())
            .sum();
        // The trailer, and the last message it cut into.
        assert!(
            (100..=100 + 255).contains(&damaged),
            "{name}: {damaged} bytes damaged"
        );
    }
    println!("signed layout: blocks found and taken out in {found} of {logs} DataFlash logs");
    assert!(found * 10 >= logs * 8, "{found} of {logs}");
}

/// The records of a JSON Lines export by offset, without their trust and session (a block over a
/// session's start marker joins it to the one before).
fn records(exported: &[u8]) -> std::collections::HashMap<u64, Value> {
    exported
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .filter_map(|l| {
            let mut r: Value = serde_json::from_slice(l).unwrap();
            let offset = r.get("offset")?.as_u64()?;
            (r["type"] != "session").then(|| {
                let fields = r.as_object_mut().unwrap();
                fields.remove("trust");
                fields.remove("session");
                (offset, r)
            })
        })
        .collect()
}

/// A download that writes a 3-byte chunk header (`00 08 00`) over the first bytes of every
/// 2048-byte chunk, as a phone app does: where a block lands in a session's header, the blocks
/// are named, the header is read as far as the file shows it, no frame is trusted that is not
/// the clean log's (a frame holding a block, and those predicted from it, are suspect), and
/// the salvaged log reads without a corrupt span.
#[test]
fn blocks_written_over_a_log_are_named_and_no_frame_under_them_is_trusted() {
    let dir = TempDir::new("written-over");
    let (first, stride) = (1869, 2051);
    let (mut logs, mut suspect) = (0, 0);
    for (name, data) in common::clean_real_logs() {
        if name.starts_with("ardupilot/") {
            continue;
        }
        let sessions = bbcheck::blackbox::sessions(&data);
        let in_header = sessions
            .iter()
            .any(|s| (s.bounds.start..s.header.data_start as usize).contains(&first));
        let mut copy = data.clone();
        for at in (first..copy.len()).step_by(stride) {
            let end = (at + 3).min(copy.len());
            copy[at..end].copy_from_slice(&b"\x00\x08\x00"[..end - at]);
        }
        let (clean, damaged) = (dir.join("clean"), dir.join("copy"));
        std::fs::write(&clean, &data).unwrap();
        std::fs::write(&damaged, &copy).unwrap();
        let report = check_json(&damaged);
        let blocks = &report["periodic_overwrites"];
        if !in_header {
            continue;
        }
        logs += 1;
        let count = (copy.len() - first).div_ceil(stride);
        let expected = serde_json::json!({
            "first": first, "stride": stride, "length": 3, "count": count, "bytes": "000800",
            "input_size": copy.len(),
        });
        assert_eq!(blocks, &expected, "{name}");
        suspect += none_trusted_wrong(&name, &clean, &damaged, &dir);
    }
    println!("blocks written over {logs} logs' headers found; {suspect} frames kept suspect");
    assert!(logs >= 8, "{logs} logs with a block in the header");
}

/// Checks that every frame `damaged` exports as trusted is the frame `clean` holds at its
/// offset, and that its salvaged log reads without a corrupt span; returns the frames kept
/// suspect.
fn none_trusted_wrong(name: &str, clean: &Path, damaged: &Path, dir: &TempDir) -> usize {
    let truth = records(&export(clean));
    let exported = export(damaged);
    let mut suspect = 0;
    for line in exported.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let mut r: Value = serde_json::from_slice(line).unwrap();
        if r["type"] == "session" {
            continue;
        }
        if r.get("trust").is_some() {
            suspect += 1;
            continue;
        }
        r.as_object_mut().unwrap().remove("session");
        let offset = r["offset"].as_u64().unwrap();
        assert_eq!(truth.get(&offset), Some(&r), "{name}: trusted at {offset}");
    }
    salvage(damaged, &dir.join("copy.out"));
    let again = check_json(&dir.join("copy.out"));
    assert_eq!(again["corrupt_spans"], serde_json::json!([]), "{name}");
    suspect
}

/// Blocks written over a session's frames alone (every header ends before the first) show
/// nowhere in its text: they are found by their bytes recurring where the reading is damaged,
/// named, and no frame under them is trusted.
#[test]
fn blocks_written_over_frames_alone_are_found_by_their_recurrence() {
    let dir = TempDir::new("written-over-frames");
    let (block, stride) = (b"\x06\x00\x10\x00\x00", 9001);
    let (mut logs, mut suspect) = (0, 0);
    for (name, data) in common::clean_real_logs() {
        if name.starts_with("ardupilot/") {
            continue;
        }
        // The first session alone, its blocks from a little after its header.
        let sessions = bbcheck::blackbox::sessions(&data);
        let Some(first_session) = sessions.first() else {
            continue;
        };
        let data = &data[..sessions.get(1).map_or(data.len(), |s| s.bounds.start)];
        let first = first_session.header.data_start as usize + 300;
        if first >= stride || data.len() < first + 8 * stride {
            continue;
        }
        let mut copy = data.to_vec();
        let mut count = 0;
        for at in (first..=copy.len() - block.len()).step_by(stride) {
            copy[at..at + block.len()].copy_from_slice(block);
            count += 1;
        }
        let (clean, damaged) = (dir.join("clean"), dir.join("copy"));
        std::fs::write(&clean, data).unwrap();
        std::fs::write(&damaged, &copy).unwrap();
        let report = check_json(&damaged);
        let expected = serde_json::json!({
            "first": first, "stride": stride, "length": block.len(), "count": count,
            "bytes": "0600100000", "input_size": copy.len(),
        });
        assert_eq!(report["periodic_overwrites"], expected, "{name}");
        suspect += none_trusted_wrong(&name, &clean, &damaged, &dir);
        logs += 1;
    }
    println!("blocks written over {logs} logs' frames found; {suspect} frames kept suspect");
    assert!(logs >= 8, "{logs} logs");
}
