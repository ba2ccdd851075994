//! `export --mcap`, read with the official `mcap` Python reader (`tests/oracle/mcap_read.py`):
//! every real log's recordings hold a message per frame or message JSON Lines exports, on the
//! channel of its kind, stamped with its time and with its values; events, MSG texts and damaged
//! spans are `foxglove.Log` entries and GPS positions `foxglove.LocationFix` ones, whose schemas
//! Foxglove knows by name. Skipped without Python and `mcap`, failing under CI.

use crate::common;

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn jsonl(log: &Path) -> Vec<Value> {
    String::from_utf8(common::export(log, &["--jsonl"]))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What the reader finds in each of `files`, with the messages of `topics`.
fn read(python: &Path, files: &[PathBuf], topics: &str) -> Vec<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle/mcap_read.py");
    let out = Command::new(python)
        .arg(script)
        .args(files)
        .args(["--topics", topics])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The values of a frame as the recording writes them, back in header order: arrays flattened.
fn flattened(message: &Value, names: &[Value]) -> Vec<i64> {
    let mut values = Vec::new();
    let object = message.as_object().unwrap();
    let mut seen = std::collections::HashSet::new();
    for name in names {
        let name = name.as_str().unwrap();
        let base = name.split('[').next().unwrap();
        match object.get(name).or_else(|| object.get(base)) {
            Some(Value::Array(items)) => {
                if seen.insert(base.to_owned()) {
                    values.extend(items.iter().map(|v| v.as_i64().unwrap()));
                }
            }
            Some(v) => values.push(v.as_i64().unwrap()),
            None => panic!("no member for {name}"),
        }
    }
    values
}

#[test]
fn blackbox_recordings_hold_every_frame_event_and_span() {
    let Some(python) = common::python("mcap.reader") else {
        return;
    };
    let dir = common::TempDir::new("mcap-blackbox");
    let mut logs = common::real_logs("blackbox");
    logs.push(common::own_corpus().join("generated/demo.bbl"));
    logs.push(common::own_corpus().join("damaged/betaflight4-gps-p4.lost-blocks.1.bbl"));
    let mut frames = 0;
    for log in &logs {
        let out = dir.join(log.file_stem().unwrap());
        common::export(log, &["--mcap", "-o", out.to_str().unwrap()]);
        let records = jsonl(log);
        let check: Value = serde_json::from_slice(
            &common::bbcheck(&["check", "--json", log.to_str().unwrap()]).stdout,
        )
        .unwrap();
        let sessions: Vec<&Value> = records.iter().filter(|r| r["type"] == "session").collect();
        let files: Vec<PathBuf> = sessions
            .iter()
            .map(|s| {
                let stem = log.file_stem().unwrap().to_string_lossy();
                out.join(format!("{stem}.{:02}.mcap", s["session"].as_u64().unwrap()))
            })
            .collect();
        // Values of every main frame for the small logs; counts for all.
        let small = std::fs::metadata(log).unwrap().len() < 1 << 20;
        let topics = if small { "/main,/log,/gps/fix" } else { "/log" };
        for (session, recording) in sessions.iter().zip(read(&python, &files, topics)) {
            let index = session["session"].as_u64().unwrap();
            let mine: Vec<&Value> = records.iter().filter(|r| r["session"] == index).collect();
            let count = |kinds: &[&str]| {
                mine.iter()
                    .filter(|r| kinds.contains(&r["type"].as_str().unwrap()))
                    .count() as u64
            };
            let spans = ["corrupt_spans", "suspect_spans"]
                .iter()
                .flat_map(|k| check[k].as_array().into_iter().flatten())
                .filter(|s| s["session"] == index)
                .count();
            let want = [
                ("/main", count(&["I", "P"])),
                ("/slow", count(&["S"])),
                ("/gps", count(&["G"])),
                ("/home", count(&["H"])),
                ("/log", count(&["E"]) + spans as u64),
            ];
            let counts = &recording["counts"];
            for (topic, n) in want {
                assert_eq!(
                    counts[topic].as_u64().unwrap_or(0),
                    n,
                    "{} session {index}: {topic}",
                    log.display()
                );
            }
            frames += counts["/main"].as_u64().unwrap_or(0);
            let schemas = &recording["schemas"];
            if counts.get("/log").is_some() {
                assert_eq!(schemas["/log"][0], "foxglove.Log");
            }
            if counts.get("/gps/fix").is_some() {
                assert_eq!(schemas["/gps/fix"][0], "foxglove.LocationFix");
                assert_eq!(schemas["/gps/fix"][2], "json");
            }
            if !small {
                continue;
            }
            // Every main frame: its time, and its values in header order.
            let names = session["fields"]["I"].as_array().unwrap();
            let main: Vec<&&Value> = mine
                .iter()
                .filter(|r| r["type"] == "I" || r["type"] == "P")
                .collect();
            let messages = recording["messages"]["/main"].as_array().unwrap();
            assert_eq!(messages.len(), main.len());
            let time = names.iter().position(|n| n == "time").unwrap();
            for (record, message) in main.iter().zip(messages) {
                let values: Vec<i64> = record["values"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_i64().unwrap())
                    .collect();
                assert_eq!(flattened(&message[1], names), values, "{}", log.display());
                assert_eq!(message[0].as_i64().unwrap(), values[time] * 1000);
                let suspect = record.get("trust").is_some();
                assert_eq!(message[1].get("trust").is_some(), suspect);
            }
            // Positions in degrees, on the map.
            for fix in recording["messages"]["/gps/fix"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let (lat, lon) = (
                    fix[1]["latitude"].as_f64().unwrap(),
                    fix[1]["longitude"].as_f64().unwrap(),
                );
                assert!(lat.abs() <= 90.0 && lon.abs() <= 180.0 && (lat, lon) != (0.0, 0.0));
            }
            // Damage warns at the flight time before it.
            for entry in recording["messages"]["/log"]
                .as_array()
                .into_iter()
                .flatten()
            {
                if entry[1]["name"] == "damage" {
                    assert_eq!(entry[1]["level"], 3);
                    assert!(
                        entry[1]["message"]
                            .as_str()
                            .unwrap()
                            .starts_with("damaged [")
                    );
                }
            }
        }
    }
    assert!(frames > 0);
}

#[test]
fn dataflash_recordings_hold_every_message_scaled() {
    let Some(python) = common::python("mcap.reader") else {
        return;
    };
    let dir = common::TempDir::new("mcap-dataflash");
    for log in common::real_logs("ardupilot") {
        let out = dir.join(log.file_stem().unwrap());
        common::export(&log, &["--mcap", "-o", out.to_str().unwrap()]);
        let stem = log.file_stem().unwrap().to_string_lossy().into_owned();
        let file = out.join(format!("{stem}.mcap"));
        let recording = &read(&python, &[file], "/ATT,/GPS,/gps/fix")[0];
        let mut want: BTreeMap<String, u64> = BTreeMap::new();
        let mut msg = 0;
        let mut att = Vec::new();
        let records = jsonl(&log);
        let att_format = records.iter().find(|r| r["formats"]["ATT"].is_object());
        let roll = att_format
            .and_then(|r| r["formats"]["ATT"]["columns"].as_array())
            .and_then(|c| c.iter().position(|c| c == "Roll"));
        // What pymavlink divides the stored value by: 100 for `c C e E`.
        let divisor = match (att_format, roll) {
            (Some(r), Some(i)) => {
                match r["formats"]["ATT"]["format"].as_str().unwrap().as_bytes()[i] {
                    b'c' | b'C' | b'e' | b'E' => 100.0,
                    _ => 1.0,
                }
            }
            _ => 1.0,
        };
        for r in records.iter().filter(|r| r["type"] == "message") {
            let name = r["name"].as_str().unwrap();
            *want.entry(name.to_owned()).or_default() += 1;
            msg += u64::from(name == "MSG");
            if name == "ATT" {
                att.push(r["values"].clone());
            }
        }
        let check: Value = serde_json::from_slice(
            &common::bbcheck(&["check", "--json", log.to_str().unwrap()]).stdout,
        )
        .unwrap();
        let spans = check["corrupt_spans"].as_array().map_or(0, Vec::len) as u64;
        let mut got: BTreeMap<String, u64> = BTreeMap::new();
        for (topic, n) in recording["counts"].as_object().unwrap() {
            if topic == "/log" || topic == "/gps/fix" {
                continue;
            }
            let name = topic[1..].split('.').next().unwrap();
            *got.entry(name.to_owned()).or_default() += n.as_u64().unwrap();
        }
        assert_eq!(got, want, "{}", log.display());
        assert_eq!(
            recording["counts"]["/log"].as_u64().unwrap_or(0),
            msg + spans,
            "{}",
            log.display()
        );
        // ATT scaled as pymavlink scales it (`c` columns in degrees): stored / 100.
        let messages = recording["messages"]["/ATT"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(messages.len(), att.len());
        let schema = &recording["schemas"]["/ATT"][3]["properties"];
        for (stored, message) in att.iter().zip(&messages) {
            let time = stored[0].as_i64().unwrap();
            assert_eq!(
                message[0].as_i64().unwrap(),
                time * 1000,
                "{}",
                log.display()
            );
            if let Some(roll) = roll {
                let got = message[1]["Roll"].as_f64().unwrap();
                let want = stored[roll].as_f64().unwrap() / divisor;
                assert!(
                    (got - want).abs() <= 1e-6 * want.abs().max(1.0),
                    "{got} {want}"
                );
            }
        }
        if !messages.is_empty() && divisor != 1.0 {
            assert_eq!(schema["Roll"], json!({"type": "number"}));
        }
        let gps = recording["messages"]["/GPS"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let fixes = recording["messages"]["/gps/fix"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let located = gps
            .iter()
            .filter(|m| {
                m[1]["Lat"].as_f64().unwrap_or(0.0) != 0.0
                    || m[1]["Lng"].as_f64().unwrap_or(0.0) != 0.0
            })
            .count();
        assert_eq!(fixes.len(), located, "{}", log.display());
        for (fix, message) in fixes.iter().zip(
            gps.iter()
                .filter(|m| m[1]["Lat"].as_f64().unwrap_or(0.0) != 0.0),
        ) {
            assert_eq!(fix[1]["latitude"], message[1]["Lat"]);
        }
    }
}

#[test]
fn an_mcap_export_needs_a_directory() {
    let demo = common::own_corpus().join("generated/demo.bbl");
    let run = common::bbcheck(&["export", demo.to_str().unwrap(), "--mcap", "-o", "-"]);
    assert_eq!(run.status.code(), Some(2));
}
