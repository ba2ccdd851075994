//! Every real DataFlash log of the corpus decodes to exactly the messages the reference reader
//! (pymavlink's sequential DFReader) accepts: same offsets, names, counts and digests, and the same
//! raw values for the first and last message of every type.

use crate::common;

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len() / 2)
        .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).expect("hex digits"))
        .collect()
}

/// One exported message.
struct Record {
    offset: u64,
    name: String,
    values: Vec<Value>,
}

/// Run `bbcheck export --jsonl` and parse its output.
fn export(log: &Path) -> (Value, Vec<Record>) {
    let out = Command::new(env!("CARGO_BIN_EXE_bbcheck"))
        .args(["export", "--jsonl"])
        .arg(log)
        .output()
        .expect("bbcheck runs");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}: exit {:?}: {}",
        log.display(),
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8 output");
    let mut lines = text.lines();
    let session: Value = serde_json::from_str(lines.next().expect("a session record")).unwrap();
    assert_eq!(session["type"], "session");
    let records = lines
        .map(|line| {
            let v: Value = serde_json::from_str(line).expect("a JSON record");
            assert_eq!(v["type"], "message", "{line}");
            Record {
                offset: v["offset"].as_u64().expect("offset"),
                name: v["name"].as_str().expect("name").to_owned(),
                values: v["values"].as_array().expect("values").clone(),
            }
        })
        .collect();
    (session, records)
}

fn integer(v: &Value) -> Option<i128> {
    v.as_i64()
        .map(i128::from)
        .or_else(|| v.as_u64().map(i128::from))
}

/// Whether two f32 (or f64) bit patterns are at most one unit in the last place apart.
fn within_ulp(a: u64, b: u64) -> bool {
    a == b || a.abs_diff(b) == 1
}

/// Compare one exported value with the reference's raw element for format character `c`.
fn same_value(c: char, ours: &Value, raw: &Value) -> bool {
    match c {
        'M' => match (integer(ours), integer(raw)) {
            // pymavlink reads the flight mode as int8; the logger stores a uint8.
            (Some(a), Some(b)) => a.rem_euclid(256) == b.rem_euclid(256),
            _ => false,
        },
        'b' | 'B' | 'h' | 'H' | 'i' | 'I' | 'q' | 'Q' | 'c' | 'C' | 'e' | 'E' | 'L' => {
            integer(ours).is_some() && integer(ours) == integer(raw)
        }
        'f' | 'g' | 'd' => match (ours.as_f64(), raw) {
            (None, Value::String(s)) => ours.is_null() && (s.contains("NaN") || s.contains("Inf")),
            (Some(a), raw) => match raw.as_f64() {
                Some(b) if c == 'd' => within_ulp(a.to_bits(), b.to_bits()),
                Some(b) => within_ulp(
                    u64::from((a as f32).to_bits()),
                    u64::from((b as f32).to_bits()),
                ),
                None => false,
            },
            _ => false,
        },
        'n' | 'N' | 'Z' => {
            let (Some(text), Some(stored)) = (ours.as_str(), raw.as_str()) else {
                return false;
            };
            let Some(stored) = stored.strip_prefix("hex:") else {
                return text == stored;
            };
            let bytes = unhex(stored);
            let cut = &bytes[..bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len())];
            text.as_bytes() == cut
                || (text.chars().all(|c| u32::from(c) < 256)
                    && text.chars().map(|c| c as u8).collect::<Vec<u8>>() == cut)
        }
        'a' => match (ours.as_array(), raw.as_array()) {
            (Some(a), Some(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y),
            _ => false,
        },
        _ => false,
    }
}

/// Differences between one log's export and its expected summary.
fn compare(expected: &Value, session: &Value, records: &[Record]) -> Vec<String> {
    let mut problems = Vec::new();
    let messages = &expected["messages"];
    let lines: Vec<String> = records
        .iter()
        .map(|r| format!("{}:{}\n", r.offset, r.name))
        .collect();
    let count = messages["count"].as_u64().unwrap() as usize;
    if lines.len() != count {
        problems.push(format!("{} messages, expected {count}", lines.len()));
    }
    let digest = hex(&Sha256::digest(lines.concat().as_bytes()));
    if digest != messages["sha256"].as_str().unwrap() {
        problems.push(format!("messages.sha256 {digest} differs"));
        let chunks = messages["chunk_sha256_16"].as_array().unwrap();
        for (i, chunk) in lines.chunks(1000).enumerate() {
            let ours = &hex(&Sha256::digest(chunk.concat().as_bytes()))[..16];
            if chunks.get(i).and_then(Value::as_str) != Some(ours) {
                problems.push(format!(
                    "first differing chunk {i} (lines {}..): starts with {:?}",
                    i * 1000,
                    chunk[0].trim_end()
                ));
                break;
            }
        }
    }
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for r in records {
        *counts.entry(&r.name).or_default() += 1;
    }
    let expected_counts: BTreeMap<&str, u64> = expected["counts"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_u64().unwrap()))
        .collect();
    if counts != expected_counts {
        problems.push(format!(
            "per-type counts differ: ours {counts:?}, expected {expected_counts:?}"
        ));
    }
    let end = records.last().map_or(0, |r| {
        let name = &r.name;
        r.offset + session["formats"][name]["length"].as_u64().unwrap_or(0)
    });
    if end != messages["end_offset"].as_u64().unwrap() {
        problems.push(format!(
            "messages end at {end}, expected {}",
            messages["end_offset"]
        ));
    }
    problems.extend(compare_samples(expected, records));
    problems
}

/// The first and last message of every type against the reference's raw values.
fn compare_samples(expected: &Value, records: &[Record]) -> Vec<String> {
    let mut problems = Vec::new();
    let formats: BTreeMap<&str, &str> = expected["formats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["name"].as_str().unwrap(), f["format"].as_str().unwrap()))
        .collect();
    let mut first: BTreeMap<&str, &Record> = BTreeMap::new();
    let mut last: BTreeMap<&str, &Record> = BTreeMap::new();
    for r in records {
        first.entry(&r.name).or_insert(r);
        last.insert(&r.name, r);
    }
    let mut compared = 0;
    for (name, sample) in expected["samples_first_last"].as_object().unwrap() {
        let Some(format) = formats.get(name.as_str()) else {
            continue;
        };
        for (which, ours) in [
            ("first", first.get(name.as_str())),
            ("last", last.get(name.as_str())),
        ] {
            let reference = &sample[which];
            let Some(ours) = ours else {
                problems.push(format!("no {name} message"));
                continue;
            };
            if Some(ours.offset) != reference["offset"].as_u64() {
                problems.push(format!(
                    "{which} {name} at {}, expected {}",
                    ours.offset, reference["offset"]
                ));
                continue;
            }
            let raw = reference["raw"].as_array().unwrap();
            if raw.len() != ours.values.len() {
                problems.push(format!(
                    "{which} {name} at {}: {} values, expected {}",
                    ours.offset,
                    ours.values.len(),
                    raw.len()
                ));
                continue;
            }
            for ((c, value), stored) in format.chars().zip(&ours.values).zip(raw) {
                if !same_value(c, value, stored) {
                    problems.push(format!(
                        "{which} {name} at {}: '{c}' value {value}, expected {stored}",
                        ours.offset
                    ));
                }
            }
            compared += 1;
        }
    }
    if compared == 0 {
        problems.push("no sample compared".into());
    }
    problems
}

#[test]
fn every_dataflash_log_matches_the_reference_digests() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let expected_dir = corpus.join("real/expected");
    let mut checked = 0;
    let mut failures = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&expected_dir)
        .expect("expected/ is readable")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    entries.sort();
    for path in entries {
        let expected: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        if expected["format"] != "ardupilot-dataflash" {
            continue;
        }
        let file = expected["file"].as_str().unwrap();
        let log = corpus.join("real/ardupilot").join(file);
        let data = std::fs::read(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
        assert_eq!(
            data.len() as u64,
            expected["size"].as_u64().unwrap(),
            "{file}"
        );
        let (session, records) = export(&log);
        let mut problems = compare(&expected, &session, &records);
        // The check report accounts for every byte, and a cut last message is a truncated span.
        let report = bbcheck::dataflash::check(file, &data);
        if let Err(e) = report.file.check_accounting() {
            problems.push(format!("accounting: {e}"));
        }
        if report.dataflash.messages != records.len() as u64 {
            problems.push("check and export accept different messages".into());
        }
        let truncated = &expected["truncated_last_message"];
        let ours = report.dataflash.truncated_last_message.as_ref();
        if truncated.is_null() != ours.is_none()
            || ours.is_some_and(|t| {
                Some(t.offset) != truncated["offset"].as_u64()
                    || Some(t.bytes_present) != truncated["bytes_present"].as_u64()
            })
        {
            problems.push(format!(
                "truncated last message {ours:?}, expected {truncated}"
            ));
        }
        let trailing = expected["trailing_bytes"].as_u64().unwrap();
        // A log that stops inside its last message ends with that message's bytes, not damage.
        let cut_bytes: u64 = report
            .file
            .sessions
            .iter()
            .flat_map(|s| &s.regions)
            .filter(|r| r.kind == bbcheck::report::RegionKind::CutShort)
            .map(|r| r.end - r.start)
            .sum();
        if cut_bytes != trailing || !report.file.corrupt_spans.is_empty() {
            problems.push(format!(
                "{cut_bytes} bytes cut short, expected {trailing} trailing bytes; corrupt spans {:?}",
                report.file.corrupt_spans
            ));
        }
        eprintln!(
            "{file}: {} messages, {} problems",
            records.len(),
            problems.len()
        );
        if !problems.is_empty() {
            failures.push(format!("{file}:\n  {}", problems.join("\n  ")));
        }
        checked += 1;
    }
    assert!(
        checked > 0,
        "no DataFlash log in {}",
        expected_dir.display()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
