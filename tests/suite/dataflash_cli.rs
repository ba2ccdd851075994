//! `bbcheck check`, `export` and `salvage` on DataFlash logs: format detection, exit codes, spans,
//! raw values, salvaged output, and inputs that must neither crash nor hang.

use crate::common;

use bbcheck::testkit::dataflash::{fmt, message, text};
use common::{TempDir, bbcheck};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Type 0x40 `ATT` (`QccL`, 19 bytes) and type 0x41 `MSG` (`QZ`, 75 bytes).
fn header() -> Vec<u8> {
    let mut log = fmt(0x40, 19, "ATT", "QccL", "TimeUS,Roll,Pitch,Lat");
    log.extend(fmt(0x41, 75, "MSG", "QZ", "TimeUS,Message"));
    log
}

fn att(time: u64, roll: i16) -> Vec<u8> {
    let mut body = time.to_le_bytes().to_vec();
    body.extend_from_slice(&roll.to_le_bytes());
    body.extend_from_slice(&(-61i16).to_le_bytes());
    body.extend_from_slice(&(-713_657_293i32).to_le_bytes());
    message(0x40, &body)
}

/// A clean log: the formats, a firmware message, then 100 attitude messages.
fn clean_log() -> Vec<u8> {
    let mut log = header();
    let mut body = 1_000u64.to_le_bytes().to_vec();
    body.extend(text("ArduCopter V4.5.0 (abcdef12)", 64));
    log.extend(message(0x41, &body));
    for i in 0..100 {
        log.extend(att(2_000 + i * 2_500, i as i16 - 50));
    }
    log
}

fn write(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, data).unwrap();
    path
}

fn check_json(path: &Path) -> (Option<i32>, Value) {
    let out = bbcheck(&["check", "--json", path.to_str().unwrap()]);
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), report)
}

/// Regions and spans of a JSON report, sorted: they must tile the file.
fn assert_tiles(report: &Value) {
    let mut pieces: Vec<(u64, u64)> = report["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["regions"].as_array().unwrap().iter())
        .chain(report["corrupt_spans"].as_array().unwrap())
        .map(|p| (p["start"].as_u64().unwrap(), p["end"].as_u64().unwrap()))
        .collect();
    pieces.sort_unstable();
    let mut pos = 0;
    for (start, end) in pieces {
        assert_eq!(start, pos, "{report}");
        assert!(end > start);
        pos = end;
    }
    assert_eq!(pos, report["size"].as_u64().unwrap());
}

/// Run `bbcheck` with a time limit; a run past it is a hang.
fn run_with_limit(args: &[&str], limit: Duration) -> (Option<i32>, Vec<u8>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bbcheck"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("bbcheck runs");
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut stdout = stdout;
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut out).unwrap();
        out
    });
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status.code(), reader.join().unwrap());
        }
        if start.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("bbcheck {args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_clean_log_exits_zero_with_a_summary() {
    let dir = TempDir::new("df-clean");
    let path = write(&dir, "clean.bin", &clean_log());
    let out = bbcheck(&["check", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("ArduPilot DataFlash: clean"), "{text}");
    assert!(
        text.contains("ArduCopter V4.5.0 (abcdef12) (Copter)"),
        "{text}"
    );
    assert!(text.contains("ATT 100, FMT 2, MSG 1"), "{text}");
    let (code, report) = check_json(&path);
    assert_eq!(code, Some(0));
    assert_eq!(report["format"], "ardupilot-dataflash");
    assert_eq!(report["verdict"], "clean");
    assert_eq!(report["dataflash"]["messages"], 103);
    assert_eq!(report["dataflash"]["vehicle"], "Copter");
    assert_eq!(report["dataflash"]["counts"]["ATT"], 100);
    assert_eq!(report["sessions"][0]["first_time_us"], 1_000);
    assert_eq!(report["sessions"][0]["last_time_us"], 2_000 + 99 * 2_500);
    assert_tiles(&report);
}

/// The region of `kind` that ends a JSON report's last session.
fn last_region<'a>(report: &'a Value, kind: &str) -> &'a Value {
    let regions = report["sessions"].as_array().unwrap().last().unwrap()["regions"]
        .as_array()
        .unwrap();
    let last = regions.last().unwrap();
    assert_eq!(last["kind"], kind, "{regions:?}");
    last
}

#[test]
fn a_log_that_stops_inside_its_last_message_is_clean() {
    // Logging stopped at disarm or power-off in the middle of writing a message.
    let dir = TempDir::new("df-truncated");
    let log = clean_log();
    let cut = log.len() - 9;
    let path = write(&dir, "cut.bin", &log[..cut]);
    let (code, report) = check_json(&path);
    assert_eq!(code, Some(0));
    assert_eq!(report["verdict"], "clean");
    assert!(report["corrupt_spans"].as_array().unwrap().is_empty());
    let region = last_region(&report, "cut-short");
    assert_eq!(region["start"], log.len() - 19);
    assert_eq!(region["end"], cut);
    let last = &report["dataflash"]["truncated_last_message"];
    assert_eq!(last["name"], "ATT");
    assert_eq!(last["declared_length"], 19);
    assert_eq!(last["bytes_present"], 10);
    assert_tiles(&report);
    let out = bbcheck(&["check", path.to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("stops inside its last message: ATT"),
        "{text}"
    );
    // Bytes before the cut message that start no message are damage, and so is the cut then.
    let mut garbled = log[..log.len() - 19].to_vec();
    garbled.extend_from_slice(&[0x55; 5]);
    garbled.extend_from_slice(&log[log.len() - 19..cut]);
    let path = write(&dir, "garbled.bin", &garbled);
    let (code, report) = check_json(&path);
    assert_eq!(code, Some(1));
    let spans = report["corrupt_spans"].as_array().unwrap();
    assert_eq!(spans.last().unwrap()["reason"], "truncated", "{spans:?}");
    assert_tiles(&report);
}

#[test]
fn a_corpus_log_cut_anywhere_stops_inside_its_last_message() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let source = corpus.join("real/ardupilot/ardupilot-copter-3.6.4-log-diagnosis-sample.bin");
    let data = std::fs::read(source).unwrap();
    let dir = TempDir::new("df-truncated-corpus");
    let path = write(&dir, "cut.bin", &data[..500_000]);
    let (code, report) = check_json(&path);
    assert_eq!(code, Some(0));
    assert!(report["corrupt_spans"].as_array().unwrap().is_empty());
    assert_eq!(last_region(&report, "cut-short")["end"], 500_000);
    assert_tiles(&report);
}

#[test]
fn a_message_not_followed_by_another_is_not_trusted() {
    // Bytes inserted after a message look exactly like bytes dropped from it: its declared length
    // no longer ends where a message starts, so it is part of the corrupt span.
    let dir = TempDir::new("df-garbage");
    let mut log = header();
    log.extend(att(1, 1));
    let at = log.len();
    log.extend(att(2, 2));
    log.extend_from_slice(&[0x55; 13]);
    log.extend(att(3, 3));
    let path = write(&dir, "garbage.bin", &log);
    let (code, report) = check_json(&path);
    assert_eq!(code, Some(1));
    let spans = report["corrupt_spans"].as_array().unwrap();
    assert_eq!(spans.len(), 1);
    assert_eq!(spans[0]["reason"], "frame-rejected-next-byte");
    let second = att(2, 2).len();
    assert_eq!(
        (spans[0]["start"].as_u64(), spans[0]["end"].as_u64()),
        (Some(at as u64), Some((at + second + 13) as u64))
    );
    assert_eq!(report["dataflash"]["counts"]["ATT"], 2);
    assert_tiles(&report);
}

#[test]
fn a_message_missing_bytes_is_dropped_and_the_next_one_kept() {
    // A byte dropped inside a message: read by its declared length it would swallow the next
    // message's header; the scan backtracks into it and resumes at that header.
    let dir = TempDir::new("df-dropped");
    let mut log = header();
    log.extend(att(1, 1));
    let at = log.len();
    let mut cut = att(2, 2);
    cut.remove(7);
    log.extend(&cut);
    log.extend(att(3, 3));
    log.extend(att(4, 4));
    let path = write(&dir, "dropped.bin", &log);
    let (code, report) = check_json(&path);
    assert_eq!(code, Some(1));
    let spans = report["corrupt_spans"].as_array().unwrap();
    assert_eq!(spans.len(), 1, "{spans:?}");
    assert_eq!(
        (spans[0]["start"].as_u64(), spans[0]["end"].as_u64()),
        (Some(at as u64), Some((at + cut.len()) as u64))
    );
    assert_eq!(report["dataflash"]["counts"]["ATT"], 3);
    // The flight time lost: between the messages on either side.
    assert_eq!(
        (&spans[0]["time_start_us"], &spans[0]["time_end_us"]),
        (&Value::from(1), &Value::from(3))
    );
    assert_tiles(&report);
}

#[test]
fn messages_the_logger_dropped_are_reported() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let input = corpus.join("real/ardupilot/ardupilot-copter-3.6.4-log-diagnosis-sample.bin");
    let (code, report) = check_json(&input);
    assert_eq!(code, Some(0));
    // Its last DSF message counts 7 dropped messages: data lost, but no byte damaged.
    assert_eq!(report["dataflash"]["logger_dropped"], 7);
    let out = bbcheck(&["check", input.to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("the logger dropped 7 messages"), "{text}");
}

#[test]
fn trailing_padding_is_a_region_not_damage() {
    let dir = TempDir::new("df-padding");
    for (fill, kind) in [(0xFFu8, "erased-flash"), (0x00, "zero-fill")] {
        let mut log = clean_log();
        let end = log.len() as u64;
        log.extend(std::iter::repeat_n(fill, 4000));
        let path = write(&dir, "padded.bin", &log);
        let (code, report) = check_json(&path);
        assert_eq!(code, Some(0), "{report}");
        let regions = report["sessions"][0]["regions"].as_array().unwrap();
        let last = regions.last().unwrap();
        assert_eq!(last["kind"], kind);
        assert_eq!(last["start"], end);
        assert_tiles(&report);
    }
}

#[test]
fn random_bytes_with_a_fmt_header_inside_get_a_clear_result() {
    let dir = TempDir::new("df-random");
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut data: Vec<u8> = (0..200_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect();
    // Bare FMT headers amid the noise: not enough to call the file DataFlash, unless forced.
    for at in [1_000usize, 50_000, 150_000] {
        data[at..at + 3].copy_from_slice(&[0xA3, 0x95, 0x80]);
    }
    let path = write(&dir, "noise.bin", &data);
    let out = bbcheck(&["check", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nor a DataFlash log"));
    let (code, out) = run_with_limit(
        &[
            "check",
            "--json",
            "--format",
            "dataflash",
            path.to_str().unwrap(),
        ],
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(1));
    let report: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(report["verdict"], "damaged");
    assert_tiles(&report);
    // With consistent FMTs, the file is read as DataFlash; the first ends in sync with the next.
    let mut valid = fmt(0x33, 7, "RND", "I", "V");
    valid.extend(fmt(0x34, 7, "RNE", "I", "V"));
    data[100_000..100_000 + valid.len()].copy_from_slice(&valid);
    let path = write(&dir, "random.bin", &data);
    let (code, out) = run_with_limit(
        &["check", "--json", path.to_str().unwrap()],
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(1));
    let report: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(report["format"], "ardupilot-dataflash");
    assert_eq!(report["verdict"], "damaged");
    assert!(report["dataflash"]["messages"].as_u64().unwrap() >= 1);
    assert_tiles(&report);
    let (code, out) = run_with_limit(
        &["export", "--jsonl", path.to_str().unwrap()],
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(0));
    for line in String::from_utf8(out).unwrap().lines() {
        serde_json::from_str::<Value>(line).expect("every line is JSON");
    }
}

#[test]
fn fmts_declaring_lengths_0_and_2_do_not_hang() {
    let dir = TempDir::new("df-short");
    for length in [0u8, 2] {
        let mut log = fmt(0x40, length, "ZER", "", "");
        log.extend(fmt(0x41, 4, "ONE", "B", "V"));
        for i in 0..10_000u32 {
            log.extend(message(0x40, &[]));
            log.extend(message(0x41, &[i as u8]));
        }
        let path = write(&dir, "short.bin", &log);
        let (code, out) = run_with_limit(
            &["check", "--json", path.to_str().unwrap()],
            Duration::from_secs(20),
        );
        let report: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(code, Some(1), "{length}");
        assert_eq!(report["dataflash"]["counts"]["ONE"], 10_000);
        let problems = report["dataflash"]["format_problems"].as_array().unwrap();
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0]["problem"]
                .as_str()
                .unwrap()
                .contains(&format!("declares length {length}"))
        );
        assert_tiles(&report);
        let (code, _) = run_with_limit(
            &["export", "--jsonl", path.to_str().unwrap()],
            Duration::from_secs(20),
        );
        assert_eq!(code, Some(0));
    }
}

#[test]
fn export_writes_raw_values() {
    let dir = TempDir::new("df-export");
    let mut log = fmt(
        0x50,
        3 + 2 + 4 + 8 + 64 + 16 + 1,
        "RAW",
        "gfdaNM",
        "H,F,D,A,N,M",
    );
    let mut body = 0x3C00u16.to_le_bytes().to_vec();
    body.extend_from_slice(&f32::NAN.to_le_bytes());
    body.extend_from_slice(&0.1f64.to_le_bytes());
    body.extend((0..32i16).flat_map(|v| (v - 16).to_le_bytes()));
    body.extend_from_slice(b"caf\xe9\0garbage\xff\xfe\0\0");
    body.push(200);
    log.extend(message(0x50, &body));
    log.extend(clean_log());
    let path = write(&dir, "raw.bin", &log);
    let out = bbcheck(&["export", "--jsonl", path.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let session = &records[0];
    assert_eq!(session["type"], "session");
    assert_eq!(session["formats"]["ATT"]["id"], 0x40);
    assert_eq!(session["formats"]["ATT"]["length"], 19);
    assert_eq!(session["formats"]["ATT"]["format"], "QccL");
    assert_eq!(session["formats"]["ATT"]["columns"][3], "Lat");
    assert_eq!(records[1]["name"], "FMT");
    assert_eq!(records[1]["values"][2], "RAW");
    let raw = &records[2];
    assert_eq!(raw["offset"], 89);
    assert_eq!(raw["name"], "RAW");
    let values = raw["values"].as_array().unwrap();
    assert_eq!(values[0], 1.0);
    assert!(values[1].is_null());
    assert_eq!(values[2], 0.1);
    assert_eq!(values[3].as_array().unwrap().len(), 32);
    assert_eq!(values[3][0], -16);
    assert_eq!(values[4], "café");
    assert_eq!(values[5], 200);
    let att = records.iter().find(|r| r["name"] == "ATT").unwrap();
    // Unscaled: centidegrees and degrees × 1e7 as stored.
    assert_eq!(att["values"][1], -50);
    assert_eq!(att["values"][2], -61);
    assert_eq!(att["values"][3], -713_657_293);
    let msg = records.iter().find(|r| r["name"] == "MSG").unwrap();
    assert_eq!(msg["values"][1], "ArduCopter V4.5.0 (abcdef12)");
    assert_eq!(records.len(), 1 + 1 + 1 + 103);
}

#[test]
fn the_format_is_detected_or_forced() {
    let dir = TempDir::new("df-format");
    let df = write(&dir, "log.bin", &clean_log());
    let blackbox = common::own_corpus().join("generated/demo.bbl");
    // A DataFlash log read as Blackbox has no Blackbox session: an error.
    let out = bbcheck(&["check", "--format", "blackbox", df.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a Blackbox log"));
    // A Blackbox log read as DataFlash holds no message: all damage, no crash.
    let out = bbcheck(&[
        "check",
        "--json",
        "--format",
        "dataflash",
        blackbox.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["format"], "ardupilot-dataflash");
    assert_eq!(report["dataflash"]["messages"], 0);
    assert_tiles(&report);
    // Detected from the content, whatever the name.
    let out = bbcheck(&["check", "--json", blackbox.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["format"], "blackbox");
    // A FMT after other bytes still makes a DataFlash log.
    let mut late = vec![0u8; 1000];
    late.extend(clean_log());
    let late = write(&dir, "late.bbl", &late);
    let (code, report) = check_json(&late);
    assert_eq!(code, Some(1));
    assert_eq!(report["format"], "ardupilot-dataflash");
    assert_eq!(report["corrupt_spans"][0]["end"], 1000);
    // Neither format.
    let other = write(&dir, "notes.txt", b"just some text\n");
    let out = bbcheck(&["check", other.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not a Blackbox log") && err.contains("DataFlash"),
        "{err}"
    );
    // Several files: the worst outcome wins.
    let out = bbcheck(&["check", df.to_str().unwrap(), late.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
}

/// Offsets of the accepted messages.
struct Offsets(Vec<u64>);

impl bbcheck::dataflash::Sink for Offsets {
    fn message(&mut self, m: &bbcheck::dataflash::Message<'_>) {
        self.0.push(m.offset);
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Damage a log: returns the damaged copy and the first offset changed.
fn damage(log: &[u8], kind: usize, rng: &mut Rng) -> (Vec<u8>, usize) {
    let mut data = log.to_vec();
    let at = rng.below(data.len() - 600);
    match kind {
        // A run of bytes dropped.
        0 => {
            data.drain(at..at + 1 + rng.below(64));
        }
        // Random bytes inserted.
        1 => {
            let junk: Vec<u8> = (0..1 + rng.below(300)).map(|_| rng.next() as u8).collect();
            data.splice(at..at, junk);
        }
        // Bits flipped.
        2 => {
            for i in 0..8 {
                data[at + i * 37] ^= 1 << rng.below(8);
            }
        }
        // A run of zeros.
        3 => data[at..at + 512].fill(0),
        // Cut short.
        4 => data.truncate(at),
        // Bytes of the FMT area changed: lengths, types, format characters.
        _ => {
            let area = data.len().min(20_000);
            let first = (0..16)
                .map(|_| {
                    let i = rng.below(area);
                    data[i] = rng.next() as u8;
                    i
                })
                .min()
                .unwrap();
            return (data, first);
        }
    }
    (data, at)
}

#[test]
fn damaged_logs_never_panic_and_keep_every_message_before_the_damage() {
    let logs: Vec<Vec<u8>> = match common::corpus() {
        Some(corpus) => std::fs::read_dir(corpus.join("real/ardupilot"))
            .unwrap()
            .map(|e| std::fs::read(e.unwrap().path()).unwrap())
            .collect(),
        None => vec![clean_log().repeat(8)],
    };
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    for log in &logs {
        let mut clean = Offsets(Vec::new());
        let clean_report = bbcheck::dataflash::decode("clean", log, &mut clean);
        clean_report.file.check_accounting().unwrap();
        for round in 0..60 {
            let (data, first_change) = damage(log, round % 6, &mut rng);
            let mut offsets = Offsets(Vec::new());
            let report = bbcheck::dataflash::decode("damaged", &data, &mut offsets);
            report
                .file
                .check_accounting()
                .unwrap_or_else(|e| panic!("round {round}: {e}"));
            assert_eq!(report.dataflash.messages, offsets.0.len() as u64);
            // The scan is sequential: what lies wholly before the first change is read as before.
            let kept: Vec<u64> = clean
                .0
                .iter()
                .copied()
                .take_while(|&o| o as usize + 256 < first_change)
                .collect();
            assert_eq!(offsets.0[..kept.len()], kept[..], "round {round}");
            let mut out = Vec::new();
            let exported = bbcheck::dataflash::export::jsonl::write_jsonl(
                "damaged",
                &data,
                &Default::default(),
                &mut out,
                &Default::default(),
            )
            .unwrap();
            assert_eq!(exported, report);
            assert_eq!(
                out.iter().filter(|&&b| b == b'\n').count() as u64,
                report.dataflash.messages + report.file.sessions.len() as u64
            );
            if round % 6 == 5 {
                // Damaged definitions give odd names and strings: still valid JSON.
                for line in String::from_utf8(out).expect("UTF-8").lines() {
                    serde_json::from_str::<Value>(line).expect("a JSON record");
                }
            }
        }
    }
}

fn salvage(args: &[&str]) -> (Option<i32>, Value, String) {
    let mut all = vec!["salvage", "--json"];
    all.extend_from_slice(args);
    let out = bbcheck(&all);
    let summary = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.code(),
        summary,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn salvage_keeps_the_trusted_messages_and_rechecks_clean() {
    let dir = TempDir::new("df-salvage");
    let mut log = clean_log();
    // Drop a byte inside the tenth attitude message and insert garbage after the fiftieth.
    let att_len = att(0, 0).len();
    let first_att = header().len() + 3 + 8 + 64;
    let dropped_at = first_att + 9 * att_len + 5;
    log.remove(dropped_at);
    let inserted_at = first_att + 50 * att_len - 1;
    log.splice(inserted_at..inserted_at, [0x55u8; 7]);
    let input = write(&dir, "damaged.bin", &log);
    let output = dir.join("salvaged.bin");
    let (code, summary, stderr) =
        salvage(&[input.to_str().unwrap(), "-o", output.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        std::fs::read(&input).unwrap(),
        log,
        "the input is never modified"
    );
    // The message with the dropped byte and the one before the garbage are left out.
    assert_eq!(summary["messages_kept"], 3 + 98);
    let dropped = summary["dropped"].as_array().unwrap();
    assert_eq!(dropped.len(), 2, "{summary}");
    assert_eq!(dropped[0]["input_start"], first_att + 9 * att_len);
    assert_eq!(dropped[0]["output_offset"], first_att + 9 * att_len);
    assert_eq!(dropped[1]["output_offset"], first_att + 48 * att_len);
    let (code, report) = check_json(&output);
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["dataflash"]["counts"]["ATT"], 98);
}

#[test]
fn salvage_refuses_to_overwrite_its_input_and_leaves_no_partial_output() {
    let dir = TempDir::new("df-salvage-refuse");
    let log = clean_log();
    let input = write(&dir, "log.bin", &log);
    let (code, _, stderr) = salvage(&[input.to_str().unwrap(), "-o", input.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("refusing"), "{stderr}");
    assert_eq!(std::fs::read(&input).unwrap(), log);
    // Options that only apply to Blackbox logs are refused, and nothing is written.
    let output = dir.join("out.bin");
    for extra in [&["--session", "1"][..], &["--split"]] {
        let mut args = vec![input.to_str().unwrap(), "-o", output.to_str().unwrap()];
        args.extend_from_slice(extra);
        let (code, _, stderr) = salvage(&args);
        assert_eq!(code, Some(2), "{extra:?}");
        assert!(stderr.contains("salvaged whole"), "{stderr}");
        assert!(!output.exists());
    }
    // An unreadable donor is an error, and nothing is written.
    let missing = dir.join("missing.bin");
    let (code, _, _) = salvage(&[
        input.to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
        "--fmt-from",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2));
    assert!(!output.exists());
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        1,
        "no temporary file left"
    );
}

#[test]
fn salvage_borrows_lost_formats_from_a_donor() {
    let dir = TempDir::new("df-salvage-donor");
    let donor = write(&dir, "donor.bin", &clean_log());
    // The ATT FMT is garbled: its format characters are no longer valid.
    let mut log = clean_log();
    log[9] = 0xC3;
    let input = write(&dir, "lost-fmt.bin", &log);
    let output = dir.join("salvaged.bin");
    let (code, summary, _) = salvage(&[input.to_str().unwrap(), "-o", output.to_str().unwrap()]);
    assert_eq!(code, Some(0));
    assert_eq!(summary["formats_added"], serde_json::json!([]));
    let (_, report) = check_json(&output);
    assert!(report["dataflash"]["counts"]["ATT"].is_null(), "{report}");
    let (code, summary, stderr) = salvage(&[
        input.to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
        "--fmt-from",
        donor.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(summary["formats_added"], serde_json::json!(["ATT"]));
    let (code, report) = check_json(&output);
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["dataflash"]["counts"]["ATT"], 100);
    // The output starts with the borrowed definition, before the first ATT message.
    let salvaged = std::fs::read(&output).unwrap();
    let att_fmt = fmt(0x40, 19, "ATT", "QccL", "TimeUS,Roll,Pitch,Lat");
    let at = salvaged.windows(att_fmt.len()).position(|w| w == att_fmt);
    let first_att = salvaged.windows(3).position(|w| w == [0xA3, 0x95, 0x40]);
    assert!(at.is_some() && at < first_att, "{at:?} {first_att:?}");
}

#[test]
fn salvage_of_every_real_log_is_its_messages() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let dir = TempDir::new("df-salvage-corpus");
    for entry in std::fs::read_dir(corpus.join("real/ardupilot")).unwrap() {
        let input = entry.unwrap().path();
        let data = std::fs::read(&input).unwrap();
        let output = dir.join("out.bin");
        let (code, summary, stderr) =
            salvage(&[input.to_str().unwrap(), "-o", output.to_str().unwrap()]);
        assert!(matches!(code, Some(0 | 1)), "{}: {stderr}", input.display());
        // Where the last whole message ends: before what was dropped, or the cut message.
        let (_, report) = check_json(&input);
        let cut = report["sessions"].as_array().unwrap().last().unwrap()["regions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["kind"] == "cut-short")
            .map(|r| r["start"].as_u64().unwrap());
        let end = summary["dropped"]
            .as_array()
            .unwrap()
            .first()
            .map(|d| d["input_start"].as_u64().unwrap())
            .or(cut)
            .unwrap_or(data.len() as u64);
        // Clean logs come out byte for byte; a truncated one up to its last whole message.
        assert_eq!(
            std::fs::read(&output).unwrap(),
            data[..end as usize],
            "{}",
            input.display()
        );
        let (code, _) = check_json(&output);
        assert_eq!(code, Some(0), "{}", input.display());
    }
}

#[test]
fn csv_export_writes_one_table_per_type_with_units_in_the_headings() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let input = corpus.join("real/ardupilot/ardupilot-copter-3.6.4-log-diagnosis-sample.bin");
    let dir = TempDir::new("df-csv-tables");
    let out = bbcheck(&[
        "export",
        "--csv",
        "--raw",
        "-o",
        dir.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_, report) = check_json(&input);
    let counts = report["dataflash"]["counts"].as_object().unwrap();
    let tables: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(
        tables.len(),
        counts.len(),
        "one file per type, no temporary file left"
    );
    for (name, count) in counts {
        let path = dir.join(format!(
            "ardupilot-copter-3.6.4-log-diagnosis-sample.{name}.csv"
        ));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text.lines().count() as u64,
            1 + count.as_u64().unwrap(),
            "{name}"
        );
    }
    let att =
        std::fs::read_to_string(dir.join("ardupilot-copter-3.6.4-log-diagnosis-sample.ATT.csv"))
            .unwrap();
    let heading = att.lines().next().unwrap();
    assert!(
        heading.starts_with("TimeUS [1e-6 s],DesRoll [0.01 deg],Roll [0.01 deg]"),
        "{heading}"
    );
    // Stored values (`--raw`): the first attitude row as the JSON Lines export has it.
    let jsonl = bbcheck(&["export", "--jsonl", input.to_str().unwrap()]);
    let first_att = String::from_utf8(jsonl.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["name"] == "ATT")
        .unwrap();
    let row: Vec<String> = first_att["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(Value::to_string)
        .collect();
    assert_eq!(att.lines().nth(1).unwrap(), row.join(","));
    // By default, scaled as pymavlink scales them: centidegrees in degrees, and the heading says so.
    let scaled = dir.join("scaled");
    let args = [
        "export",
        "--csv",
        "--types",
        "ATT",
        "-o",
        scaled.to_str().unwrap(),
    ];
    assert_eq!(
        bbcheck(&[&args[..], &[input.to_str().unwrap()]].concat())
            .status
            .code(),
        Some(0)
    );
    assert_eq!(
        common::file_names(&scaled),
        ["ardupilot-copter-3.6.4-log-diagnosis-sample.ATT.csv"]
    );
    let att =
        std::fs::read_to_string(scaled.join("ardupilot-copter-3.6.4-log-diagnosis-sample.ATT.csv"))
            .unwrap();
    assert!(
        att.starts_with("TimeUS [1e-6 s],DesRoll [deg],Roll [deg]"),
        "{att:.80}"
    );
    // The one table on standard output.
    let piped = bbcheck(&[
        "export",
        "--csv",
        "--types",
        "ATT",
        "-o",
        "-",
        input.to_str().unwrap(),
    ]);
    assert_eq!(piped.status.code(), Some(0));
    assert_eq!(String::from_utf8(piped.stdout).unwrap(), att);
    let several = bbcheck(&["export", "--csv", "-o", "-", input.to_str().unwrap()]);
    assert_eq!(
        several.status.code(),
        Some(2),
        "standard output takes one table"
    );
    let values = &first_att["values"];
    let expected = format!(
        "{},{},{}",
        values[0],
        values[1].as_f64().unwrap() / 100.0,
        values[2].as_f64().unwrap() / 100.0
    );
    assert!(
        att.lines()
            .nth(1)
            .unwrap()
            .starts_with(&format!("{expected},")),
        "{expected}"
    );
    // A directory that does not exist is created.
    let missing = dir.join("new/tables");
    let out = bbcheck(&[
        "export",
        "--csv",
        "-o",
        missing.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(std::fs::read_dir(&missing).unwrap().count(), counts.len());
    // One that cannot be created (a file is in the way): an error, and nothing written.
    let blocked = dir.join("blocked");
    std::fs::write(&blocked, b"").unwrap();
    let out = bbcheck(&[
        "export",
        "--csv",
        "-o",
        blocked.join("tables").to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("blocked/tables"));
}

#[test]
fn appended_logs_are_sessions_of_their_own() {
    let dir = TempDir::new("df-sessions");
    let first = bbcheck::testkit::dataflash::flight(1, 1);
    let second = bbcheck::testkit::dataflash::flight(2, 2);
    let mut data = first.clone();
    data.extend(&second);
    let path = write(&dir, "two-logs.bin", &data);
    let (code, report) = check_json(&path);
    assert_eq!(code, Some(0), "{report}");
    let sessions = report["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[1]["start"], first.len() as u64);
    assert_eq!(sessions[1]["end"], data.len() as u64);
    // Each log's own clock: the second starts again near boot.
    let (a, b) = (&sessions[0], &sessions[1]);
    assert!(
        b["first_time_us"].as_u64() < a["last_time_us"].as_u64(),
        "{report}"
    );
    assert_tiles(&report);
    let out = bbcheck(&["check", path.to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("; 2 logs"), "{text}");
    assert!(
        text.contains(&format!("log 2 [{}..{})", first.len(), data.len())),
        "{text}"
    );
    // The export starts a session record where the second log starts.
    let out = bbcheck(&["export", "--jsonl", path.to_str().unwrap()]);
    let records: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let starts: Vec<&Value> = records.iter().filter(|r| r["type"] == "session").collect();
    assert_eq!(starts.len(), 2);
    assert_eq!(starts[1]["offset"], first.len() as u64);
    assert_eq!(starts[1]["session"], 2);
    let second_messages = records
        .iter()
        .filter(|r| r["type"] == "message" && r["session"] == 2)
        .count();
    let (_, alone) = check_json(&write(&dir, "second.bin", &second));
    assert_eq!(
        second_messages as u64,
        alone["dataflash"]["messages"].as_u64().unwrap()
    );
    // Salvage keeps both logs.
    let output = dir.join("salvaged.bin");
    let (code, _, _) = salvage(&[path.to_str().unwrap(), "-o", output.to_str().unwrap()]);
    assert_eq!(code, Some(0));
    assert_eq!(std::fs::read(&output).unwrap(), data);
}

/// The first line of each `<stem>.<TYPE>.csv` in `dir`, by type.
fn csv_headings(dir: &Path) -> std::collections::BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let table = name.trim_end_matches(".csv").rsplit('.').next().unwrap();
            let text = std::fs::read_to_string(&path).unwrap();
            (table.to_owned(), text.lines().next().unwrap().to_owned())
        })
        .collect()
}

#[test]
fn salvage_borrows_the_units_of_the_formats_it_borrows() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let dir = TempDir::new("df-salvage-units");
    let original = corpus.join("real/ardupilot/ardupilot-plane-4.2.3-flightdata-center_0003.bin");
    // The start of the log is lost: every FMT, FMTU, UNIT and MULT message with it.
    let data = std::fs::read(&original).unwrap();
    let input = write(&dir, "headless.bin", &data[20_000..]);
    let output = dir.join("salvaged.bin");
    let (code, summary, stderr) = salvage(&[
        input.to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
        "--fmt-from",
        original.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let added = summary["formats_added"].as_array().unwrap();
    for support in ["UNIT", "MULT", "FMTU"] {
        assert!(added.iter().any(|n| n == support), "{support}: {added:?}");
    }
    let (code, report) = check_json(&output);
    assert_eq!(code, Some(0), "{report}");
    // Each type's CSV headings, units and multipliers included, are those of the intact log.
    let (whole, salvaged) = (dir.join("whole"), dir.join("salvaged"));
    for (log, to) in [(&original, &whole), (&output, &salvaged)] {
        let out = bbcheck(&[
            "export",
            "--csv",
            "-o",
            to.to_str().unwrap(),
            log.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0));
    }
    let (whole, salvaged) = (csv_headings(&whole), csv_headings(&salvaged));
    let mut compared = 0;
    for (table, headings) in &salvaged {
        if matches!(table.as_str(), "FMT" | "FMTU" | "UNIT" | "MULT") {
            continue;
        }
        assert_eq!(Some(headings), whole.get(table), "{table}");
        compared += 1;
    }
    assert!(compared > 20, "{compared} types compared");
    assert!(
        salvaged["ATT"].contains(",Roll [deg],"),
        "{}",
        salvaged["ATT"]
    );
}

#[test]
fn an_earlier_flight_left_after_the_log_is_old_data_not_damage() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let dir = TempDir::new("df-old-data");
    let original = corpus.join("real/ardupilot/ardupilot-plane-4.2.3-flightdata-center_0003.bin");
    let data = std::fs::read(&original).unwrap();
    // Storage the logger had written before: the middle of the same flight, cut anywhere.
    let mut log = data.clone();
    log.extend_from_slice(&data[300_001..500_000]);
    let input = write(&dir, "with-old-data.bin", &log);
    let (code, report) = check_json(&input);
    assert_eq!(code, Some(0), "{report}");
    let regions = report["sessions"][0]["regions"].as_array().unwrap();
    let old = regions.last().unwrap();
    assert_eq!(old["kind"], "old-data");
    assert_eq!(old["end"], log.len());
    // It starts at the flight's end, less its last message, which the cut left out of step.
    let start = old["start"].as_u64().unwrap();
    assert!(
        (data.len() as u64 - 255..=data.len() as u64).contains(&start),
        "{start}"
    );
    let (_, whole) = check_json(&original);
    let messages = report["dataflash"]["messages"].as_u64().unwrap();
    assert_eq!(
        messages + 1,
        whole["dataflash"]["messages"].as_u64().unwrap()
    );
    assert_eq!(
        report["sessions"][0]["last_time_us"],
        whole["sessions"][0]["last_time_us"]
    );
}

/// Type 0x42 `BARO` (`Qf`, 15 bytes): a float column.
fn baro(time: u64, alt: f32) -> Vec<u8> {
    let mut body = time.to_le_bytes().to_vec();
    body.extend_from_slice(&alt.to_le_bytes());
    message(0x42, &body)
}

/// A log of 40 barometer messages whose 31st reads `odd` (a float from bytes that belong
/// elsewhere, say): every byte in step.
fn baro_log(odd: f32) -> Vec<u8> {
    let mut log = fmt(0x42, 15, "BARO", "Qf", "TimeUS,Alt");
    for i in 0..40u64 {
        let alt = if i == 30 {
            odd
        } else {
            12.5 + (i as f32) / 8.0
        };
        log.extend(baro(1_000 + i * 10_000, alt));
    }
    log
}

#[test]
fn a_float_far_outside_its_column_is_kept_marked_suspect() {
    let dir = TempDir::new("df-suspect");
    let path = write(&dir, "odd.bin", &baro_log(3.0e12));
    let odd_offset = 89 + 30 * 15;
    let (code, report) = check_json(&path);
    assert_eq!(code, Some(0), "values in doubt are not damage");
    assert_eq!(report["verdict"], "suspect");
    let spans = report["suspect_spans"].as_array().unwrap();
    assert_eq!(spans.len(), 1, "{spans:?}");
    assert_eq!(spans[0]["start"], odd_offset);
    assert_eq!(spans[0]["frames"], 1);
    assert_eq!(spans[0]["evidence"]["rule"], "value-range");
    assert_eq!(spans[0]["evidence"]["field"], "BARO.Alt");
    assert_eq!(spans[0]["evidence"]["threshold"], 16);
    let text = bbcheck(&["check", path.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!(
            ":{odd_offset}: suspect [{odd_offset}..{}), session 1: value-range, BARO.Alt 37 octaves above",
            odd_offset + 15
        )) && text.contains("1 message kept, values in doubt"),
        "{text}"
    );
    assert_eq!(
        bbcheck(&["check", "--strict", path.to_str().unwrap()])
            .status
            .code(),
        Some(1)
    );

    // Exported marked, or left out.
    let lines = |drop: bool| {
        let mut args = vec!["export", "--jsonl", path.to_str().unwrap()];
        args.extend(drop.then_some("--drop-suspect"));
        let out = bbcheck(&args);
        String::from_utf8(out.stdout).unwrap()
    };
    let all = lines(false);
    let marked: Vec<&str> = all.lines().filter(|l| l.contains("\"trust\"")).collect();
    assert_eq!(marked.len(), 1);
    assert!(
        marked[0].contains(&format!("\"offset\":{odd_offset},"))
            && marked[0].ends_with(",\"trust\":\"suspect\"}"),
        "{}",
        marked[0]
    );
    assert_eq!(lines(true).lines().count() + 1, all.lines().count());

    // Salvaged kept, and judged the same; or left out, and the salvaged log is clean.
    for (drop, verdict, messages) in [(false, "suspect", 41), (true, "clean", 40)] {
        let out = dir.join(format!("salvaged-{drop}.bin"));
        let mut args = vec![
            "salvage",
            path.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend(drop.then_some("--drop-suspect"));
        assert_eq!(bbcheck(&args).status.code(), Some(0));
        let (_, again) = check_json(&out);
        assert_eq!(again["verdict"], verdict);
        assert_eq!(again["dataflash"]["messages"], messages);
    }
}

#[test]
fn a_float_column_turning_to_a_nan_no_arithmetic_makes_is_suspect_once() {
    let dir = TempDir::new("df-nan");
    // A signalling NaN: bytes from elsewhere, never a computation's result.
    let signalling = f32::from_bits(0x7FA0_0001);
    let mut log = baro_log(signalling);
    // It reads NaN from then on: doubted at the first only.
    let mut t = 500_000u64;
    for _ in 0..5 {
        log.extend(baro(t, signalling));
        t += 10_000;
    }
    let path = write(&dir, "nan.bin", &log);
    let (code, report) = check_json(&path);
    assert_eq!(code, Some(0));
    let spans = report["suspect_spans"].as_array().unwrap();
    assert_eq!(spans.len(), 1, "{spans:?}");
    assert_eq!(spans[0]["evidence"]["rule"], "not-a-number");
    assert_eq!(spans[0]["evidence"]["score"], 1.0);
    // Within range again after it: trusted.
    let (_, clean) = check_json(&write(&dir, "fine.bin", &baro_log(30.0)));
    assert_eq!(clean["verdict"], "clean");
    // A quiet NaN, what a computation makes of a quantity it does not know, for one message
    // (a real ArduCopter 4.7 log's `AHR2.Alt`): flight.
    let quiet = f32::from_bits(0x7FC0_4152);
    let (_, clean) = check_json(&write(&dir, "quiet.bin", &baro_log(quiet)));
    assert_eq!(clean["verdict"], "clean");
}

/// The offsets of the messages of type `name` in `log`.
fn offsets_of(log: &[u8], name: &str) -> Vec<usize> {
    struct Offsets<'a>(&'a str, Vec<usize>);
    impl bbcheck::dataflash::reader::Sink for Offsets<'_> {
        fn message(&mut self, m: &bbcheck::dataflash::message::Message<'_>) {
            if m.format.name == self.0 {
                self.1.push(m.offset as usize);
            }
        }
    }
    let mut offsets = Offsets(name, Vec::new());
    bbcheck::dataflash::scan(log, &mut offsets);
    offsets.1
}

#[test]
fn a_value_its_unit_cannot_take_is_suspect() {
    // A GPS fix of a generated flight at latitude -178.4° (FMTU: degrees of latitude, stored in
    // units of 1e-7): every byte in step.
    let dir = TempDir::new("df-physical");
    let mut log = bbcheck::testkit::dataflash::flight(3, 10);
    let gps = offsets_of(&log, "GPS");
    let at = gps[30];
    // TimeUS, Status, GMS, GWk, NSats, HDop come before Lat.
    let lat = at + 3 + 8 + 1 + 4 + 2 + 1 + 2;
    log[lat..lat + 4].copy_from_slice(&(-1_784_479_743i32).to_le_bytes());
    let path = write(&dir, "south.bin", &log);
    let (code, report) = check_json(&path);
    assert_eq!(code, Some(0), "values in doubt are not damage");
    assert_eq!(report["verdict"], "suspect");
    let spans = report["suspect_spans"].as_array().unwrap();
    assert_eq!(spans.len(), 1, "{spans:?}");
    assert_eq!(spans[0]["start"], at);
    let evidence = &spans[0]["evidence"];
    assert_eq!(evidence["rule"], "physical-range");
    assert_eq!(evidence["field"], "GPS.Lat");
    assert_eq!(
        (&evidence["offset"], &evidence["threshold"]),
        (&(-178).into(), &(-90).into())
    );
    let text = bbcheck(&["check", path.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(
            "physical-range, GPS.Lat reads -178, past what its unit allows (-90, score 1.98)"
        ),
        "{text}"
    );
    // Salvaged with it left out, the log is clean; the flight without it was clean too.
    let out = dir.join("salvaged.bin");
    let salvage = [
        "salvage",
        path.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--drop-suspect",
    ];
    assert_eq!(bbcheck(&salvage).status.code(), Some(0));
    assert_eq!(check_json(&out).1["verdict"], "clean");
    let clean = bbcheck::testkit::dataflash::flight(3, 10);
    assert_eq!(
        check_json(&write(&dir, "flight.bin", &clean)).1["verdict"],
        "clean"
    );
}

#[test]
fn the_firmware_is_the_message_that_names_a_vehicle() {
    // ArduPlane 4.0 logs "Ground start" before its firmware string.
    let dir = TempDir::new("df-firmware");
    let mut log = header();
    for (time, text_of) in [
        (1_000u64, "Ground start"),
        (2_000, "ArduPlane V4.0.9 (2fe1b9e7)"),
    ] {
        let mut body = time.to_le_bytes().to_vec();
        body.extend(text(text_of, 64));
        log.extend(message(0x41, &body));
    }
    for i in 0..20 {
        log.extend(att(3_000 + i * 2_500, 0));
    }
    let (code, report) = check_json(&write(&dir, "plane.bin", &log));
    assert_eq!(code, Some(0));
    assert_eq!(
        report["dataflash"]["firmware"],
        "ArduPlane V4.0.9 (2fe1b9e7)"
    );
    assert_eq!(report["dataflash"]["vehicle"], "Plane");
}

/// The cells of a CSV line, quotes undone.
fn csv_cells(line: &str) -> Vec<String> {
    let (mut cells, mut cell, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cell.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => cells.push(std::mem::take(&mut cell)),
            _ => cell.push(c),
        }
    }
    cells.push(cell);
    cells
}

#[test]
fn a_combined_csv_holds_every_table_row_for_row() {
    // `--combined`: one table, a `type` column, then every type's columns as `NAME.column`; each
    // row holds its message's cells, in its type's columns, as the type's own table writes them.
    let log = crate::common::own_corpus().join("seeds/dataflash/copter-1s.bin");
    let log = log.to_str().unwrap();
    let dir = crate::common::TempDir::new("df-combined");
    let out = crate::common::bbcheck(&["export", log, "--csv", "-o", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let combined = crate::common::bbcheck(&["export", log, "--csv", "--combined", "-o", "-"]);
    assert_eq!(combined.status.code(), Some(0));
    let text = String::from_utf8(combined.stdout).unwrap();
    let mut lines = text.lines();
    let heading = csv_cells(lines.next().unwrap());
    assert_eq!(heading[0], "type");
    // Each type's table, and where its columns stand in the combined heading.
    let mut tables = std::collections::BTreeMap::new();
    for name in crate::common::file_names(&dir) {
        let table = name
            .trim_start_matches("copter-1s.")
            .trim_end_matches(".csv")
            .to_owned();
        let text = std::fs::read_to_string(dir.join(&name)).unwrap();
        let mut rows = text
            .lines()
            .map(str::to_owned)
            .collect::<Vec<_>>()
            .into_iter();
        let own_heading = csv_cells(&rows.next().unwrap());
        let prefixed: Vec<String> = own_heading.iter().map(|h| format!("{table}.{h}")).collect();
        let start = heading
            .iter()
            .position(|h| *h == prefixed[0])
            .unwrap_or_else(|| panic!("{table} in {heading:?}"));
        assert_eq!(heading[start..start + prefixed.len()], prefixed, "{table}");
        tables.insert(table, (start, prefixed.len(), rows));
    }
    let mut rows = 0;
    for line in lines {
        let cells = csv_cells(line);
        assert_eq!(cells.len(), heading.len(), "{line}");
        let (start, len, own) = tables.get_mut(&cells[0]).unwrap();
        assert_eq!(
            cells[*start..*start + *len],
            csv_cells(&own.next().unwrap())
        );
        let others = cells[1..*start].iter().chain(&cells[*start + *len..]);
        assert!(others.clone().all(|c| c.is_empty()), "{line}");
        rows += 1;
    }
    for (table, (_, _, mut own)) in tables {
        assert!(own.next().is_none(), "{table}: rows left");
    }
    assert!(rows > 50, "{rows} rows");
}

#[test]
fn a_salvaged_log_that_lost_its_carriage_returns_says_its_line_feeds_stand() {
    // A text-mode copy of a log with carriage returns appended (so the whole is not read as a
    // copy): salvage leaves out the appended bytes, and its output would read as a copy, whose
    // line feeds are doubted. It ends with a message saying they stand as written, re-checks
    // clean, and salvages to itself; a plain log gets no such message.
    use bbcheck::dataflash::{self, fmt::Formats};
    use bbcheck::testkit::damage::{Model, damage};
    let log = bbcheck::testkit::dataflash::flight(1, 60);
    let mut input = damage(&log, Model::Newline, 0).data;
    let line_feeds = input.iter().filter(|&&b| b == b'\n').count();
    assert!(input.len() > 16 << 10 && line_feeds > 200, "{line_feeds}");
    input.extend(vec![b'\r'; line_feeds / 8 + 100]);
    assert!(!dataflash::reader::copied_in_text_mode(&input));
    let (_, salvaged) = dataflash::salvage::salvage("t", &input, Formats::new());
    assert!(salvaged.summary.line_feeds_marked);
    assert!(bbcheck::textmode::is_newline_converted(&salvaged.bytes));
    let report = dataflash::check("t", &salvaged.bytes);
    assert!(report.is_clean(), "{:?}", report.file.corrupt_spans.first());
    let (_, again) = dataflash::salvage::salvage("t", &salvaged.bytes, Formats::new());
    assert_eq!(again.bytes, salvaged.bytes);
    let (_, plain) = dataflash::salvage::salvage("t", &log, Formats::new());
    assert!(!plain.summary.line_feeds_marked);
    assert_eq!(plain.bytes, log);
    let says = dataflash::reader::says_line_feeds_stand;
    assert!(says(&salvaged.bytes) && !says(&plain.bytes));
}
