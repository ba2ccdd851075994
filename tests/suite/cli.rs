//! The `bbcheck` executable as a user drives it: exit codes, errors, output shapes, output files.

use crate::common;

use common::{TempDir, bbcheck, file_names};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn demo() -> PathBuf {
    common::own_corpus().join("generated/demo.bbl")
}

/// `bbcheck salvage INPUT -o OUT --header-from DONOR`.
fn salvage_with_header_from(input: &Path, out: &Path, donor: &Path) -> Output {
    bbcheck(&[
        "salvage",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--header-from",
        donor.to_str().unwrap(),
    ])
}

/// The demo log with `count` bytes removed at `at`: the dominant real fault.
fn damaged_demo(dir: &Path, at: usize, count: usize) -> PathBuf {
    let mut data = std::fs::read(demo()).unwrap();
    data.drain(at..at + count);
    let path = dir.join("damaged.bbl");
    std::fs::write(&path, data).unwrap();
    path
}

#[test]
fn a_clean_log_exits_zero_with_a_summary() {
    let out = bbcheck(&["check", demo().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("2 session(s): clean"), "{text}");
    assert!(
        text.contains("Betaflight 4.2.9 (synthetic) SYNTH"),
        "{text}"
    );
    assert!(
        text.contains("frames: I 16 P 496 S 2 G 6 H 1 E 4"),
        "{text}"
    );
    assert!(text.contains("loop 125.0 µs"), "{text}");
}

#[test]
fn json_report_has_the_documented_shape() {
    let out = bbcheck(&["check", "--json", demo().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["verdict"], "clean");
    assert_eq!(report["format"], "blackbox");
    assert_eq!(report["corrupt_spans"].as_array().unwrap().len(), 0);
    let sessions = report["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[0]["frames"]["G"], 6);
    assert_eq!(sessions[1]["log_end"], true);
    // The second flight starts 150 ms before the 32-bit microsecond clock wraps.
    assert!(sessions[1]["last_time_us"].as_u64().unwrap() > 1 << 32);
    assert_eq!(sessions[1]["duration_us"], 374_750);
}

#[test]
fn damage_exits_one_and_is_located() {
    let dir = TempDir::new("test-damage");
    let path = damaged_demo(&dir, 5000, 7);
    let out = bbcheck(&["check", "--json", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["verdict"], "damaged");
    let spans = report["corrupt_spans"].as_array().unwrap();
    assert!(!spans.is_empty());
    // The damage point lies inside a reported span or within one frame (at most 256 bytes) of one.
    let near = spans.iter().any(|s| {
        let (a, b) = (s["start"].as_u64().unwrap(), s["end"].as_u64().unwrap());
        a <= 5000 + 256 && 5000 <= b + 256
    });
    assert!(near, "{spans:?}");
    assert_eq!(
        report["sessions"][0]["corrupt_spans"],
        report["corrupt_spans"]
    );
    let human = bbcheck(&["check", path.to_str().unwrap()]);
    assert_eq!(human.status.code(), Some(1));
    let text = String::from_utf8(human.stdout).unwrap();
    assert!(
        text.contains(&format!("{}:", path.display())) && text.contains("damaged ["),
        "{text}"
    );
}

#[test]
fn a_file_that_is_not_a_log_is_an_error() {
    let dir = TempDir::new("test-notalog");
    let path = dir.join("notes.txt");
    std::fs::write(&path, b"just some text\n").unwrap();
    let out = bbcheck(&["check", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("notes.txt") && err.contains("offset 0") && err.contains("not a Blackbox log"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn missing_files_and_bad_arguments_exit_two() {
    let out = bbcheck(&["check", "/nonexistent/log.bbl"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/log.bbl"));
    assert_eq!(bbcheck(&["check"]).status.code(), Some(2));
    assert_eq!(bbcheck(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(
        bbcheck(&["export", demo().to_str().unwrap()]).status.code(),
        Some(2)
    );
    // One bad file among good ones still checks the good ones.
    let out = bbcheck(&["check", demo().to_str().unwrap(), "/nonexistent/log.bbl"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("clean"));
}

#[test]
fn jsonl_export_lists_sessions_frames_and_events_in_file_order() {
    let out = bbcheck(&["export", demo().to_str().unwrap(), "--jsonl"]);
    assert_eq!(out.status.code(), Some(0));
    let records: Vec<Value> = out
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    let first = &records[0];
    assert_eq!(first["type"], "session");
    assert_eq!(first["session"], 1);
    assert_eq!(first["offset"], 0);
    assert_eq!(first["fields"]["I"][0], "loopIteration");
    assert_eq!(first["fields"]["P"], first["fields"]["I"]);
    assert_eq!(first["fields"]["H"][1], "GPS_home[1]");
    assert_eq!(first["headers"]["I interval"], "256");
    let mut last_offset = 0;
    let mut last_time = 0;
    let mut session = 0;
    for r in &records {
        if r["type"] == "session" {
            session = r["session"].as_u64().unwrap();
            last_time = 0;
            continue;
        }
        assert_eq!(r["session"], session);
        let offset = r["offset"].as_u64().unwrap();
        assert!(offset > last_offset, "file order");
        last_offset = offset;
        if r["type"] == "I" || r["type"] == "P" {
            let time = r["values"][1].as_u64().unwrap();
            assert!(
                time > last_time,
                "time is monotonic across the 32-bit rollover"
            );
            last_time = time;
        }
    }
    let events: Vec<&Value> = records.iter().filter(|r| r["type"] == "E").collect();
    assert_eq!(events.len(), 8);
    assert_eq!(events[0]["name"], "sync_beep");
    assert_eq!(events[0]["data"]["time"], 30_000_000);
    assert_eq!(events[3]["event"], 255);
    assert_eq!(events[3]["name"], "log_end");
    let mains = records
        .iter()
        .filter(|r| r["type"] == "I" || r["type"] == "P")
        .count();
    assert_eq!(mains, 16 + 496 + 94 + 1406);
}

#[test]
fn csv_export_writes_one_file_per_session() {
    let dir = TempDir::new("test-csv");
    let out = bbcheck(&[
        "export",
        demo().to_str().unwrap(),
        "--csv",
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names = file_names(&dir);
    // The generated demo has GPS in its first session and events in both, so the C decoder's
    // GPS CSV, GPX and event files appear for those sessions only.
    assert_eq!(
        names,
        [
            "demo.01.csv",
            "demo.01.event",
            "demo.01.gps.csv",
            "demo.01.gps.gpx",
            "demo.02.csv",
            "demo.02.event"
        ]
    );
    let text = std::fs::read_to_string(dir.join("demo.01.csv")).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    assert!(
        header.starts_with("loopIteration, time (us), axisP[0]"),
        "{header}"
    );
    assert!(
        header.contains(", vbatLatest (V), amperageLatest (A), "),
        "{header}"
    );
    assert!(header.ends_with("motor[3], energyCumulative (mAh), flightModeFlags (flags), stateFlags (flags), failsafePhase (flags), rxSignalReceived, rxFlightChannelsValid"), "{header}");
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 16 + 496);
    // `%3u` pads to three characters.
    assert!(rows[0].starts_with("  0, 30000000, "), "{}", rows[0]);
    let columns = header.split(", ").count();
    assert!(rows.iter().all(|r| r.split(", ").count() == columns));
    let events = std::fs::read_to_string(dir.join("demo.01.event")).unwrap();
    assert_eq!(
        events,
        "{\"name\":\"Sync beep\", \"time\":30000000}\n{\"name\":\"Log clean end\", \"time\":30511000}\n"
    );
}

#[test]
fn export_takes_several_files_and_directories_as_check_does() {
    let dir = TempDir::new("test-export-many");
    let input = dir.join("in");
    for sub in ["a", "b"] {
        std::fs::create_dir_all(input.join(sub)).unwrap();
        std::fs::copy(demo(), input.join(sub).join("demo.bbl")).unwrap();
    }
    let dataflash = input.join("b/copter.bin");
    std::fs::write(&dataflash, bbcheck::testkit::dataflash::flight(1, 2)).unwrap();
    std::fs::write(input.join("notes.txt"), "not a log\n").unwrap();
    let out_dir = dir.join("out");
    let csv = |args: &[&str]| {
        let mut all = vec!["export", "--csv", "-o", out_dir.to_str().unwrap()];
        all.extend_from_slice(args);
        bbcheck(&all)
    };
    let out = csv(&[input.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // The file found that holds no log is named as skipped.
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("notes.txt: skipped (not a log)"), "{said}");
    let names = file_names(&out_dir);
    // Two inputs of one stem going to one directory: the second's files are `<stem>.2.*`.
    for name in [
        "demo.01.csv",
        "demo.2.01.csv",
        "demo.2.02.event",
        "copter.ATT.csv",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    let alone = dir.join("alone");
    let out = bbcheck(&[
        "export",
        "--csv",
        "-o",
        alone.to_str().unwrap(),
        demo().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        std::fs::read(out_dir.join("demo.2.01.csv")).unwrap(),
        std::fs::read(alone.join("demo.01.csv")).unwrap()
    );

    // JSON Lines: each log's records after one naming it, as one file's export gives them.
    let out = bbcheck(&["export", "--jsonl", input.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let files: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["type"] == "file")
        .collect();
    let paths: Vec<&str> = files.iter().map(|r| r["path"].as_str().unwrap()).collect();
    let expected = ["a/demo.bbl", "b/copter.bin", "b/demo.bbl"].map(|p| input.join(p));
    assert_eq!(
        paths,
        expected
            .iter()
            .map(|p| p.to_str().unwrap())
            .collect::<Vec<_>>()
    );
    let one = bbcheck(&["export", "--jsonl", demo().to_str().unwrap()]);
    let first = text.split("{\"type\":\"file\"").nth(1).unwrap();
    let first = &first[first.find('\n').unwrap() + 1..];
    assert_eq!(first, String::from_utf8(one.stdout).unwrap());

    // A file that cannot be read is reported; the others are still written, and the exit is 2.
    let missing = dir.join("missing.bbl");
    let again = dir.join("again");
    let out = bbcheck(&[
        "export",
        "--csv",
        "-o",
        again.to_str().unwrap(),
        missing.to_str().unwrap(),
        demo().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.bbl"));
    assert!(again.join("demo.01.csv").is_file());
    // A session number names a session of one file.
    let out = csv(&["--session", "1", input.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn failed_exports_leave_no_output_and_inputs_are_never_modified() {
    let dir = TempDir::new("test-nopartial");
    let input = dir.join("in.bbl");
    std::fs::copy(demo(), &input).unwrap();
    let before = std::fs::read(&input).unwrap();
    // A directory that cannot be made: a file stands where its parent would be.
    std::fs::write(dir.join("a-file"), b"").unwrap();
    let blocked = dir.join("a-file/csv");
    let out = bbcheck(&[
        "export",
        input.to_str().unwrap(),
        "--csv",
        "-o",
        blocked.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("a-file/csv"));
    assert!(!blocked.exists());
    let out = bbcheck(&["export", input.to_str().unwrap(), "--csv"]);
    assert_eq!(out.status.code(), Some(0));
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert_eq!(std::fs::read(&input).unwrap(), before);
}

#[test]
fn an_interrupted_salvage_leaves_no_file_behind() {
    let dir = TempDir::new("test-interrupt");
    // Long enough to be caught while writing: the demo log many times over.
    let demo = std::fs::read(demo()).unwrap();
    let input = dir.join("long.bbl");
    std::fs::write(&input, demo.repeat((64 << 20) / demo.len() + 1)).unwrap();
    for signal in ["INT", "TERM"] {
        let output = dir.join("salvaged.bbl");
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_bbcheck"))
            .args(["salvage", input.to_str().unwrap(), "--split", "-o"])
            .arg(&output)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let names = || -> Vec<String> {
            std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n != "long.bbl")
                .collect()
        };
        // Wait for the first session's temporary file, then interrupt.
        while names().is_empty() {
            assert!(child.try_wait().unwrap().is_none(), "salvage ended first");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let killed = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        assert_eq!(child.wait().unwrap().code(), Some(130), "SIG{signal}");
        assert_eq!(names(), Vec::<String>::new(), "SIG{signal}");
    }
}

#[test]
fn every_byte_is_accounted_for_once() {
    let dir = TempDir::new("test-accounting");
    let mut files = vec![demo(), damaged_demo(&dir, 20_000, 300)];
    if let Some(corpus) = common::corpus() {
        for entry in std::fs::read_dir(corpus.join("real/blackbox")).unwrap() {
            files.push(entry.unwrap().path());
        }
    }
    for path in files {
        let data = std::fs::read(&path).unwrap();
        let report = bbcheck::blackbox::decode(
            &path.display().to_string(),
            &data,
            |_, _| {},
            &mut bbcheck::blackbox::sink::Discard,
        );
        report
            .check_accounting()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

#[test]
fn salvage_writes_a_clean_log_and_never_its_input() {
    let dir = TempDir::new("test-salvage");
    let damaged = damaged_demo(&dir, 5000, 7);
    let before = std::fs::read(&damaged).unwrap();
    let out = dir.join("clean.bbl");
    let result = bbcheck(&[
        "salvage",
        damaged.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(result.status.code(), Some(0), "the salvaged log is written");
    let summary: Value = serde_json::from_slice(&result.stdout).unwrap();
    // Asked to, it says the input was damaged, and writes the same log.
    let strict = dir.join("strict.bbl");
    let failed = bbcheck(&[
        "salvage",
        damaged.to_str().unwrap(),
        "-o",
        strict.to_str().unwrap(),
        "--fail-on-damage",
    ]);
    assert_eq!(failed.status.code(), Some(1));
    assert_eq!(
        std::fs::read(&strict).unwrap(),
        std::fs::read(&out).unwrap()
    );
    for command in [&["export", "--jsonl"][..], &["info"]] {
        let path = damaged.to_str().unwrap();
        let plain = bbcheck(&[command, &[path]].concat());
        let strict = bbcheck(&[command, &[path, "--fail-on-damage"]].concat());
        assert_eq!(
            (plain.status.code(), strict.status.code()),
            (Some(0), Some(1)),
            "{command:?}"
        );
        assert_eq!(plain.stdout, strict.stdout, "{command:?}");
    }
    assert_eq!(
        summary["outputs"][0]["sessions"][0]["resume_events_added"],
        1
    );
    assert_eq!(summary["dropped"][0]["reason"], "frame-rejected-next-byte");
    // Each dropped span says where the output continues after it.
    let dropped = &summary["outputs"][0]["sessions"][0]["dropped"][0];
    assert_eq!(dropped["input_start"], summary["dropped"][0]["start"]);
    let output_offset = dropped["output_offset"].as_u64().unwrap();
    let clean = std::fs::read(&out).unwrap();
    assert_eq!(
        clean[output_offset as usize], b'E',
        "a logging-resume event bridges the gap"
    );
    assert_eq!(clean[output_offset as usize + 1], 14);
    assert_eq!(
        bbcheck(&["check", out.to_str().unwrap()]).status.code(),
        Some(0)
    );
    assert_eq!(std::fs::read(&damaged).unwrap(), before, "input untouched");
    // Writing over the input is refused, and leaves it as it was.
    let refused = bbcheck(&[
        "salvage",
        damaged.to_str().unwrap(),
        "-o",
        damaged.to_str().unwrap(),
    ]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("refusing"));
    assert_eq!(std::fs::read(&damaged).unwrap(), before);
    // `-o -` names no file: refused, and no file named `-` appears.
    let dash = Command::new(env!("CARGO_BIN_EXE_bbcheck"))
        .args(["salvage", damaged.to_str().unwrap(), "-o", "-"])
        .current_dir(&*dir)
        .output()
        .unwrap();
    assert_eq!(dash.status.code(), Some(2));
    assert!(dash.stdout.is_empty());
    assert!(!dir.join("-").exists());
    // One file per flight.
    let split = dir.join("flight.bbl");
    let result = bbcheck(&[
        "salvage",
        demo().to_str().unwrap(),
        "-o",
        split.to_str().unwrap(),
        "--split",
    ]);
    assert_eq!(result.status.code(), Some(0));
    for n in 1..=2 {
        let part = dir.join(format!("flight.{n:02}.bbl"));
        let out = bbcheck(&["check", "--json", part.to_str().unwrap()]);
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["sessions"].as_array().unwrap().len(), 1);
        assert_eq!(report["verdict"], "clean");
    }
    let missing = bbcheck(&[
        "salvage",
        demo().to_str().unwrap(),
        "-o",
        split.to_str().unwrap(),
        "--session",
        "9",
    ]);
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn hexdump_shows_the_damaged_bytes() {
    let dir = TempDir::new("test-hexdump");
    let path = damaged_demo(&dir, 5000, 7);
    let out = bbcheck(&["check", "--hexdump", path.to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    // Offsets in hex, bytes inside the span marked with `>`, and the ASCII column.
    assert!(text.contains("    00001380 "), "{text}");
    assert!(text.contains(">50"), "{text}");
    assert!(
        text.lines().any(|l| l.ends_with('|') && l.contains("  |")),
        "{text}"
    );
}

#[test]
fn damage_writes_a_copy_and_the_truth() {
    let dir = TempDir::new("test-damagecmd");
    let out = dir.join("d.bbl");
    let result = bbcheck(&[
        "damage",
        demo().to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--seed",
        "4",
        "--model",
        "drop-bytes",
    ]);
    assert_eq!(
        result.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let truth: Value =
        serde_json::from_slice(&std::fs::read(dir.join("d.bbl.truth.json")).unwrap()).unwrap();
    let changes = truth["changes"].as_array().unwrap();
    assert!(!changes.is_empty());
    let said = String::from_utf8(result.stdout).unwrap();
    assert!(
        said.starts_with(&format!(
            "wrote {}: {} changes (drop-bytes)",
            out.display(),
            changes.len()
        )),
        "{said}"
    );
    assert!(
        changes
            .iter()
            .all(|c| c["kind"] == "drop" && c["input_length"] == 1)
    );
    let size = std::fs::metadata(&out).unwrap().len();
    assert_eq!(
        size + changes.len() as u64,
        std::fs::metadata(demo()).unwrap().len()
    );
    assert_eq!(
        bbcheck(&["check", out.to_str().unwrap()]).status.code(),
        Some(1)
    );
}

#[test]
fn a_lost_header_is_borrowed_from_a_log_of_the_same_firmware() {
    let dir = TempDir::new("test-donor");
    let demo_bytes = std::fs::read(demo()).unwrap();
    let report: Value =
        serde_json::from_slice(&bbcheck(&["check", "--json", demo().to_str().unwrap()]).stdout)
            .unwrap();
    let (data_start, end) = (
        report["sessions"][0]["data_start"].as_u64().unwrap() as usize,
        report["sessions"][0]["end"].as_u64().unwrap() as usize,
    );
    // The first flight without its header: frame data that cannot be read on its own.
    let headless = dir.join("headless.bbl");
    std::fs::write(&headless, &demo_bytes[data_start..end]).unwrap();
    assert_eq!(
        bbcheck(&["check", headless.to_str().unwrap()])
            .status
            .code(),
        Some(1)
    );
    let out = dir.join("rescued.bbl");
    let result = salvage_with_header_from(&headless, &out, &demo());
    assert_eq!(
        result.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    // The rescued flight is the original one, byte for byte.
    assert_eq!(std::fs::read(&out).unwrap(), demo_bytes[..end]);
    // A donor that logs at another rate lends its layout; the schedule is the frames' own.
    let header = String::from_utf8(demo_bytes[..data_start].to_vec()).unwrap();
    assert!(header.contains("H P interval:8\n"));
    let faster = dir.join("faster.bbl");
    std::fs::write(
        &faster,
        header.replace("H P interval:8\n", "H P interval:2\n"),
    )
    .unwrap();
    let rescued = dir.join("rescued-faster.bbl");
    let result = salvage_with_header_from(&headless, &rescued, &faster);
    assert_eq!(result.status.code(), Some(0));
    let (got, want) = (check_json(rescued.to_str().unwrap()), &report);
    for key in ["frames", "first_iteration", "last_iteration", "duration_us"] {
        assert_eq!(got["sessions"][0][key], want["sessions"][0][key], "{key}");
    }
    assert_eq!(got["verdict"], "clean");
    // A donor whose layout does not fit is refused, and nothing is written.
    let other = dir.join("other.bbl");
    let header = String::from_utf8(demo_bytes[..data_start].to_vec()).unwrap();
    let p_encoding = header
        .lines()
        .find(|l| l.starts_with("H Field P encoding:"))
        .unwrap();
    let all_varints = format!(
        "H Field P encoding:{}",
        vec!["0"; p_encoding.split(',').count()].join(",")
    );
    std::fs::write(&other, header.replace(p_encoding, &all_varints)).unwrap();
    let refused_out = dir.join("refused.bbl");
    let refused = salvage_with_header_from(&headless, &refused_out, &other);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("does not decode"));
    assert!(!refused_out.exists());
}

#[test]
fn a_lost_header_comes_from_the_library_without_a_donor() {
    let dir = TempDir::new("test-library-header");
    let demo_bytes = std::fs::read(demo()).unwrap();
    let report = check_json(demo().to_str().unwrap());
    let first = &report["sessions"][0];
    let (data_start, end) = (
        first["data_start"].as_u64().unwrap() as usize,
        first["end"].as_u64().unwrap() as usize,
    );
    // The first flight without its header and its first bytes.
    let headless = dir.join("headless.bbl");
    std::fs::write(&headless, &demo_bytes[data_start + 40..end]).unwrap();
    // `check` says it is damaged, and which layout of the library reads it.
    let checked = bbcheck(&["check", headless.to_str().unwrap()]);
    assert_eq!(checked.status.code(), Some(1));
    let said = String::from_utf8_lossy(&checked.stderr);
    assert!(
        said.contains("(synthetic) SYNTH, from bbcheck's header library, reads it"),
        "{said}"
    );
    let out = dir.join("rescued.bbl");
    let args = [
        "salvage",
        headless.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    let result = bbcheck(&[&args[..], &["--json"]].concat());
    assert_eq!(
        result.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let summary: Value = serde_json::from_slice(&result.stdout).unwrap();
    let chosen = &summary["header_from_library"];
    assert!(
        chosen["firmware"].as_str().unwrap().contains("synthetic"),
        "{summary}"
    );
    assert_eq!(chosen["i_interval"], 256);
    let assumed = chosen["assumed"].as_array().unwrap();
    assert!(
        assumed.iter().any(|a| a["setting"] == "vbatref"),
        "{summary}"
    );
    // The rescued flight holds the first one's frames but the first I frame, cut, and the 31 P
    // frames of its interval.
    let rescued = check_json(out.to_str().unwrap());
    assert_eq!(rescued["verdict"], "clean", "{rescued}");
    // The salvaged log keeps saying where its header came from, and whose settings it holds.
    let from = rescued["sessions"][0]["header_from"].as_str().unwrap();
    assert!(
        from.contains("header library") && from.contains("vbatref"),
        "{from}"
    );
    let frames = |r: &Value, k: &str| r["sessions"][0]["frames"][k].as_u64().unwrap();
    assert_eq!(frames(&rescued, "I") + 1, frames(&report, "I"));
    assert_eq!(frames(&rescued, "P") + 31, frames(&report, "P"));
    // The summary says so in words.
    let said = bbcheck(&args);
    let said = String::from_utf8_lossy(&said.stdout);
    assert!(said.contains("header from bbcheck's library"), "{said}");
    // Frame data no layout of the library reads is refused, and nothing is written.
    let mut garbled = demo_bytes[data_start + 40..end].to_vec();
    for b in garbled.iter_mut().step_by(7) {
        *b ^= 0x5a;
    }
    let garbled_path = dir.join("garbled.bbl");
    std::fs::write(&garbled_path, &garbled).unwrap();
    let checked = bbcheck(&["check", garbled_path.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&checked.stderr);
    assert!(
        said.contains("No layout of bbcheck's header library reads it"),
        "{said}"
    );
    let refused_out = dir.join("refused.bbl");
    let refused = bbcheck(&[
        "salvage",
        garbled_path.to_str().unwrap(),
        "-o",
        refused_out.to_str().unwrap(),
    ]);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert!(said.contains("no header of bbcheck's library"), "{said}");
    assert!(!refused_out.exists());
}

#[test]
fn a_large_headless_input_is_salvaged_with_a_borrowed_header_as_if_it_had_its_own() {
    // Over 32 MiB: the input and its copy with the donor's header are mapped, not read whole.
    let dir = TempDir::new("test-donor-large");
    let flight = |iterations| {
        bbcheck::testkit::blackbox::flight(&bbcheck::testkit::blackbox::FlightSpec {
            iterations,
            ..bbcheck::testkit::blackbox::FlightSpec::new(
                bbcheck::testkit::blackbox::Layout::Betaflight4,
            )
        })
    };
    let log = flight(4_400_000);
    let data_start = bbcheck::blackbox::sessions(&log)[0].header.data_start as usize;
    let mut headless = log[data_start..].to_vec();
    assert!(headless.len() > 33 << 20, "{} bytes", headless.len());
    // Damage in the middle, for salvage to leave out.
    headless.drain(headless.len() / 2..headless.len() / 2 + 3);
    let donor = dir.join("donor.bbl");
    std::fs::write(&donor, flight(1000)).unwrap();
    let input = dir.join("headless.bbl");
    std::fs::write(&input, &headless).unwrap();
    let out = dir.join("rescued.bbl");
    let borrowed = salvage_with_header_from(&input, &out, &donor);
    assert_eq!(
        borrowed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&borrowed.stderr)
    );
    // The same bytes with the header written in front by hand.
    let whole = dir.join("whole.bbl");
    std::fs::write(&whole, [&log[..data_start], &headless[..]].concat()).unwrap();
    let expected = dir.join("expected.bbl");
    let own = bbcheck(&[
        "salvage",
        whole.to_str().unwrap(),
        "-o",
        expected.to_str().unwrap(),
    ]);
    assert_eq!(own.status.code(), Some(0));
    assert!(std::fs::read(&out).unwrap() == std::fs::read(&expected).unwrap());
    // Nothing but the inputs and outputs is left beside them.
    let names = file_names(&dir);
    assert_eq!(
        names,
        [
            "donor.bbl",
            "expected.bbl",
            "headless.bbl",
            "rescued.bbl",
            "whole.bbl"
        ]
    );
}

#[test]
fn bytes_after_a_log_end_event_are_not_damage() {
    // A flight controller sharing its port writes other traffic (here an MSP reply) between logs.
    let dir = TempDir::new("test-after-log-end");
    let log = std::fs::read(demo()).unwrap();
    let mut data = log.clone();
    data.extend_from_slice(b"$M>\x03\x01\x00\x01\x2e\x2d");
    data.extend_from_slice(&log);
    let path = dir.join("shared-port.bbl");
    std::fs::write(&path, &data).unwrap();
    let out = bbcheck(&["check", "--json", path.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let sessions = report["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 4);
    assert_eq!(sessions[1]["log_end"], true);
    let after = sessions[1]["regions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "after-log-end")
        .expect("the MSP bytes are a region after the log end");
    assert_eq!(after["end"], log.len() as u64 + 9);
}

#[test]
fn a_directory_is_checked_recursively_with_a_summary_table() {
    let dir = TempDir::new("test-batch");
    std::fs::create_dir_all(dir.join("b/c")).unwrap();
    std::fs::copy(demo(), dir.join("a.bbl")).unwrap();
    let damaged = damaged_demo(&dir, 20_000, 3);
    std::fs::rename(&damaged, dir.join("b/c/damaged.bbl")).unwrap();
    let dataflash = common::own_corpus().join("seeds/dataflash/copter-1s.bin");
    std::fs::copy(&dataflash, dir.join("b/flight.bin")).unwrap();
    std::fs::write(dir.join("b/notes.txt"), "not a log").unwrap();

    let out = bbcheck(&["check", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "damage in one file exits 1");
    let text = String::from_utf8(out.stdout).unwrap();
    // Reports come in path order, whatever order the workers finish in.
    let at = |name: &str| text.find(&format!("{name}: ")).unwrap_or(usize::MAX);
    let (a, f, d) = (at("a.bbl"), at("flight.bin"), at("damaged.bbl"));
    assert!(a < d && d < f && f < usize::MAX, "{text}");
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("file "))
        .collect();
    assert_eq!(table.len(), 5, "{text}");
    assert!(table[1].contains("a.bbl") && table[1].ends_with("clean"));
    assert!(table[2].contains("damaged.bbl") && table[2].ends_with("damaged"));
    assert!(table[3].contains("flight.bin") && table[3].contains("ardupilot-dataflash"));
    assert_eq!(
        table[4],
        "3 checked: 2 clean, 1 damaged; 1 skipped (not a log); 0 unreadable"
    );
    // Named on the command line, a file that is not a log is still an error.
    let out = bbcheck(&["check", dir.join("b/notes.txt").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    // JSON output stays one document per file, without the table.
    let out = bbcheck(&["check", "--json", dir.to_str().unwrap()]);
    let docs: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(docs.len(), 3);
    assert!(docs[0]["path"].as_str().unwrap().ends_with("a.bbl"));
    // A directory with no log is an error, empty or holding other files; each file skipped is
    // named.
    let out = bbcheck(&["check", dir.join("b/c").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    std::fs::remove_file(dir.join("b/c/damaged.bbl")).unwrap();
    for (command, extra) in [("check", None), ("export", Some("--jsonl"))] {
        let args = |path: &str| -> Vec<String> {
            let mut a = vec![command.to_owned(), path.to_owned()];
            a.extend(extra.map(str::to_owned));
            a
        };
        let empty = args(dir.join("b/c").to_str().unwrap());
        let out = bbcheck(&empty.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(out.status.code(), Some(2), "{command}");
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(said.contains("no log found (no file)"), "{command}: {said}");
        std::fs::write(dir.join("b/c/readme.txt"), "no log here").unwrap();
        let out = bbcheck(&empty.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(out.status.code(), Some(2), "{command}");
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            said.contains("readme.txt: skipped (not a log)"),
            "{command}: {said}"
        );
        assert!(
            said.contains("no log found (1 file, not a log)"),
            "{command}: {said}"
        );
        assert!(out.stdout.is_empty(), "{command}");
        std::fs::remove_file(dir.join("b/c/readme.txt")).unwrap();
    }
}

#[test]
fn a_dash_reads_standard_input() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_bbcheck"))
        .args(["check", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let data = std::fs::read(demo()).unwrap();
    child.stdin.take().unwrap().write_all(&data).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with(&format!(
            "<stdin>: {} bytes, 2 session(s): clean",
            data.len()
        )),
        "{text}"
    );
}

#[test]
fn csv_files_of_standard_input_are_named_stdin() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let dir = TempDir::new("test-stdin-csv");
    let mut child = Command::new(env!("CARGO_BIN_EXE_bbcheck"))
        .args(["export", "--csv", "-", "-o", dir.to_str().unwrap()])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let data = std::fs::read(demo()).unwrap();
    child.stdin.take().unwrap().write_all(&data).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let names = file_names(&dir);
    assert!(names.contains(&"stdin.01.csv".to_owned()), "{names:?}");
    assert!(names.contains(&"stdin.02.csv".to_owned()), "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("stdin.")), "{names:?}");
}

#[test]
fn a_file_too_large_to_read_whole_reports_as_if_read() {
    // Files from 32 MiB on are mapped and their pages released behind the decoder.
    let dir = TempDir::new("test-large");
    let one = std::fs::read(demo()).unwrap();
    let mut data = Vec::with_capacity((33 << 20) + one.len());
    while data.len() < 33 << 20 {
        data.extend_from_slice(&one);
    }
    // Damage in the middle, far from both ends.
    data.drain(data.len() / 2..data.len() / 2 + 3);
    let path = dir.join("large.bbl");
    std::fs::write(&path, &data).unwrap();
    let out = bbcheck(&["check", "--json", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let mapped: Value = serde_json::from_slice(&out.stdout).unwrap();
    let read = bbcheck::blackbox::decode(
        path.to_str().unwrap(),
        &data,
        |_, _| {},
        &mut bbcheck::blackbox::sink::Discard,
    );
    assert_eq!(mapped, serde_json::to_value(&read).unwrap());
    assert!(!read.corrupt_spans.is_empty());
}

#[test]
fn help_is_there_however_it_is_asked_for() {
    let top = bbcheck(&["--help"]);
    assert_eq!(top.status.code(), Some(0));
    let top = String::from_utf8(top.stdout).unwrap();
    assert!(top.contains("Exit status:") && top.contains("130"), "{top}");
    for asked in [
        &["help"][..],
        &["help", "--help"],
        &["help", "check"],
        &["check", "--help"],
    ] {
        let out = bbcheck(asked);
        assert_eq!(out.status.code(), Some(0), "{asked:?}");
        assert!(
            String::from_utf8(out.stdout)
                .unwrap()
                .contains("Usage: bbcheck"),
            "{asked:?}"
        );
    }
    let check = String::from_utf8(bbcheck(&["help", "check"]).stdout).unwrap();
    assert!(check.contains("Usage: bbcheck check"), "{check}");
    assert_eq!(bbcheck(&["help", "nope"]).status.code(), Some(2));
}

#[test]
fn frame_data_whose_header_is_lost_is_a_damaged_log_with_a_way_out() {
    let dir = TempDir::new("test-headless");
    let log = bbcheck::testkit::blackbox::flight(&bbcheck::testkit::blackbox::FlightSpec {
        iterations: 8000,
        ..bbcheck::testkit::blackbox::FlightSpec::new(
            bbcheck::testkit::blackbox::Layout::Betaflight4,
        )
    });
    let data_start = bbcheck::blackbox::sessions(&log)[0].header.data_start as usize;
    let headless = dir.join("headless.bbl");
    std::fs::write(&headless, &log[data_start + 100..]).unwrap();
    let out = bbcheck(&["check", headless.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "damaged, not unreadable");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("without its header") && said.contains("--header-from"),
        "{said}"
    );
    // Random bytes are no log; in a directory the headless file is counted, not skipped.
    let mut x = 7u32;
    let noise: Vec<u8> = (0..100_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect();
    let random = dir.join("noise.bin");
    std::fs::write(&random, &noise).unwrap();
    assert_eq!(
        bbcheck(&["check", random.to_str().unwrap()]).status.code(),
        Some(2)
    );
    let all = bbcheck(&["check", dir.to_str().unwrap()]);
    assert_eq!(all.status.code(), Some(1));
    let summary = String::from_utf8(all.stdout).unwrap();
    assert!(
        summary.contains("1 skipped (not a log)") && summary.contains("1 without their header"),
        "{summary}"
    );
}

#[test]
fn a_salvaged_log_that_lost_its_carriage_returns_is_not_read_as_a_text_mode_copy() {
    // The damaged stretches of this log held most of its carriage returns: left out, the rest
    // would pass for a text-mode copy, whose line feeds are in doubt.
    let input =
        common::own_corpus().join("regressions/blackbox_salvage/output-read-as-text-mode-copy");
    let input = input.to_str().unwrap();
    assert_eq!(check_json(input)["verdict"], "damaged");
    let dir = TempDir::new("test-salvage-lf");
    let whole = dir.join("whole.bbl");
    let split = dir.join("split.bbl");
    for args in [
        vec!["salvage", input, "-o", whole.to_str().unwrap()],
        vec!["salvage", input, "-o", split.to_str().unwrap(), "--split"],
    ] {
        assert_eq!(bbcheck(&args).status.code(), Some(0), "{args:?}");
    }
    let names = file_names(&dir);
    // Three sessions: the second's start marker is lost, and its header lines start it.
    assert_eq!(
        names,
        ["split.01.bbl", "split.02.bbl", "split.03.bbl", "whole.bbl"]
    );
    for name in names {
        let path = dir.join(&name);
        let report = check_json(path.to_str().unwrap());
        // The frames the input's value rules doubt stay suspect; nothing is damage.
        assert_eq!(report["corrupt_spans"], serde_json::json!([]), "{name}");
        assert!(
            ["clean", "suspect"].contains(&report["verdict"].as_str().unwrap()),
            "{name}: {report}"
        );
        assert!(
            report.get("text_mode_copy").is_none_or(Value::is_null),
            "{name}"
        );
    }
}

/// The `check --json` report of `path`.
fn check_json(path: &str) -> Value {
    serde_json::from_slice(&bbcheck(&["check", "--json", path]).stdout).unwrap()
}

#[test]
fn stats_count_what_damage_cost() {
    // `export --stats` prints blackbox_decode's statistics: frames of each type, and where bytes
    // were damaged, the spans, the main frames they cost and the logged iterations missing.
    let dir = TempDir::new("test-stats");
    let path = damaged_demo(&dir, 5000, 7);
    let file = path.to_str().unwrap();
    let out = bbcheck(&["export", file, "--jsonl", "--stats"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stderr).unwrap();
    let report = check_json(file);
    let sessions = report["sessions"].as_array().unwrap();
    assert_eq!(
        text.matches("\nStatistics\n").count(),
        sessions.len(),
        "{text}"
    );
    let spans = report["corrupt_spans"].as_array().unwrap();
    assert!(!spans.is_empty());
    let lost: u64 = spans
        .iter()
        .map(|s| s["frames_lost"].as_u64().unwrap())
        .sum();
    let line = format!(
        "{} frames failed to decode, rendering {lost} loop iterations unreadable. ",
        spans.len()
    );
    let at = text
        .find(&line)
        .unwrap_or_else(|| panic!("{line:?} in {text}"));
    // The iterations missing follow on the same line.
    let rest = &text[at + line.len()..];
    assert!(
        rest.contains(" iterations are missing in total ("),
        "{text}"
    );
    let first = &sessions[0]["frames"];
    let i_line = format!("I frames {:7}", first["I"].as_u64().unwrap());
    assert!(text.contains(&i_line), "{i_line:?} in {text}");
    // Without the option, standard error holds none of it.
    let quiet = bbcheck(&["export", demo().to_str().unwrap(), "--jsonl"]);
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("Statistics"));
}
