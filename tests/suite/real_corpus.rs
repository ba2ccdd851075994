//! Exactness on real logs: the digests of `bbcheck export --jsonl` equal, for every session the
//! corpus labels `ground_truth`, what the reference decoders accepted (see the corpus's
//! `expected/README.md` for the canonical lines these digests are computed over).

use crate::common;

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Canonical lines per session and group (`main`, `S`, `G`, `H`, `E`).
type Groups = BTreeMap<(u64, String), Vec<String>>;

fn norm(v: i64, signed: bool) -> i64 {
    let u = v.rem_euclid(1 << 32);
    if signed && u >= 1 << 31 {
        u - (1 << 32)
    } else {
        u
    }
}

fn signed_flags(session: &Value, group: &str) -> Vec<bool> {
    let key = if group == "main" {
        "signed_I".to_owned()
    } else {
        format!("signed_{group}")
    };
    session[&key]
        .as_array()
        .map(|a| a.iter().map(|v| v.as_i64() != Some(0)).collect())
        .unwrap_or_default()
}

/// Group the export's records into canonical lines, as the corpus README defines them.
fn canonical_lines(export: &str, expected: &Value) -> Groups {
    let sessions: BTreeMap<u64, &Value> = expected["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["index"].as_u64().unwrap(), s))
        .collect();
    let mut groups = Groups::new();
    for line in export.lines() {
        let record: Value = serde_json::from_str(line).expect("every export line is JSON");
        let kind = record["type"].as_str().unwrap();
        if kind == "session" {
            continue;
        }
        let session = record["session"].as_u64().unwrap();
        let offset = record["offset"].as_u64().unwrap();
        let group = match kind {
            "I" | "P" => "main",
            other => other,
        };
        let text = if group == "E" {
            format!("{offset}:{}\n", record["event"].as_u64().unwrap())
        } else {
            let flags = sessions
                .get(&session)
                .map(|s| signed_flags(s, group))
                .unwrap_or_default();
            let values: Vec<String> = record["values"]
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let v = v.as_i64().or_else(|| v.as_u64().map(|u| u as i64)).unwrap();
                    norm(v, flags.get(i).copied().unwrap_or(false)).to_string()
                })
                .collect();
            format!("{offset}:{}\n", values.join(","))
        };
        groups
            .entry((session, group.to_owned()))
            .or_default()
            .push(text);
    }
    groups
}

fn sha256(lines: &[String]) -> String {
    let mut h = Sha256::new();
    for l in lines {
        h.update(l.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Compare one log; returns the mismatches found.
fn compare(log: &Path, expected: &Value) -> Vec<String> {
    let out = common::bbcheck(&["export", log.to_str().unwrap(), "--jsonl"]);
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "export failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let export = String::from_utf8(out.stdout).unwrap();
    let mut groups = canonical_lines(&export, expected);
    let mut problems = Vec::new();
    for session in expected["sessions"].as_array().unwrap() {
        if session["label"] != "ground_truth" {
            continue;
        }
        let index = session["index"].as_u64().unwrap();
        // INAV's `End of log (disarm reason:N)` marker is a log end that no reference decoder
        // accepts; the corpus lists it apart, so it is left out of the E comparison.
        let unaccepted_ends: BTreeSet<u64> = session["log_end_markers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["accepted_by_primary"] == false)
            .map(|m| m["offset"].as_u64().unwrap())
            .collect();
        if let Some(events) = groups.get_mut(&(index, "E".to_owned())) {
            events.retain(|l| {
                let offset: u64 = l.split(':').next().unwrap().parse().unwrap();
                !unaccepted_ends.contains(&offset)
            });
        }
        for group in ["main", "S", "G", "H", "E"] {
            let want = &session["frames"][group];
            let lines = groups
                .get(&(index, group.to_owned()))
                .cloned()
                .unwrap_or_default();
            let (count, digest) = (lines.len() as u64, sha256(&lines));
            if Some(count) != want["count"].as_u64()
                || Some(digest.as_str()) != want["sha256"].as_str()
            {
                let mut detail = format!(
                    "{}: session {index} {group}: {count} frames, expected {}",
                    log.display(),
                    want["count"]
                );
                if let Some(chunks) = want["chunk_sha256_16"].as_array() {
                    let first_bad = lines
                        .chunks(1000)
                        .zip(chunks)
                        .position(|(c, want)| sha256(c)[..16] != *want.as_str().unwrap());
                    if let Some(k) = first_bad {
                        detail +=
                            &format!("; first differing chunk {k}: {}", lines[k * 1000].trim());
                    }
                }
                problems.push(detail);
            }
        }
    }
    problems
}

#[test]
fn every_ground_truth_session_matches_the_reference_decoders() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let expected_dir = corpus.join("real/expected");
    let mut problems = Vec::new();
    let mut sessions = 0;
    for entry in std::fs::read_dir(&expected_dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let expected: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        if expected["format"] != "blackbox" {
            continue;
        }
        let log = corpus
            .join("real/blackbox")
            .join(expected["file"].as_str().unwrap());
        sessions += expected["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["label"] == "ground_truth")
            .count();
        problems.extend(compare(&log, &expected));
    }
    assert!(
        sessions >= 60,
        "only {sessions} ground-truth sessions found"
    );
    assert!(
        problems.is_empty(),
        "{} mismatches:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn session_bounds_and_header_ends_match_the_corpus() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    for entry in std::fs::read_dir(corpus.join("real/expected")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let expected: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        if expected["format"] != "blackbox" {
            continue;
        }
        let log = corpus
            .join("real/blackbox")
            .join(expected["file"].as_str().unwrap());
        let data = std::fs::read(&log).unwrap();
        let sessions = bbcheck::blackbox::sessions(&data);
        let want = expected["sessions"].as_array().unwrap();
        assert_eq!(sessions.len(), want.len(), "{}", log.display());
        for (s, w) in sessions.iter().zip(want) {
            assert_eq!(s.bounds.start as u64, w["offset"].as_u64().unwrap());
            assert_eq!(s.bounds.end as u64, w["end"].as_u64().unwrap());
            // The reference reads erased flash after a header as more header; here the header
            // ends where the padding starts, so the two may differ only by padding bytes.
            let ours = s.header.data_start as usize;
            let theirs = w["data_start"].as_u64().unwrap() as usize;
            assert!(
                ours == theirs || (ours < theirs && data[ours..theirs].iter().all(|&b| b == 0xFF)),
                "{} session {}: header ends at {ours}, reference at {theirs}",
                log.display(),
                s.bounds.index
            );
        }
    }
}
