//! `bbcheck info`: what a pilot reads about a log before flying through its data.

use crate::common;

use common::{TempDir, bbcheck};
use serde_json::Value;

fn json(args: &[&str]) -> Value {
    let out = bbcheck(args);
    assert!(out.status.code().is_some_and(|c| c < 2), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The `H name:value` lines of each session, read straight from the file's bytes.
fn header_lines(data: &[u8]) -> Vec<Vec<(String, String)>> {
    let marker = b"H Product:Blackbox flight data recorder by Nicholas Sherlock\n";
    let mut sessions = Vec::new();
    let mut at = 0;
    while let Some(found) = data[at..].windows(marker.len()).position(|w| w == marker) {
        let mut lines = Vec::new();
        let mut pos = at + found;
        while data[pos..].starts_with(b"H ") {
            let end = pos + data[pos..].iter().position(|&b| b == b'\n').unwrap();
            let line = String::from_utf8_lossy(&data[pos + 2..end]).into_owned();
            let (name, value) = line.split_once(':').unwrap();
            lines.push((name.to_owned(), value.to_owned()));
            pos = end + 1;
        }
        sessions.push(lines);
        at = pos;
    }
    sessions
}

#[test]
fn blackbox_info_names_firmware_board_craft_settings_and_duration() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let path = corpus.join("real/blackbox/betaflight-4.5.3-bucksaw-btfl_005.bbl");
    let path = path.to_str().unwrap();
    let out = bbcheck(&["info", path]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    for expected in [
        "Blackbox log, 3039232 bytes, 3 sessions, clean",
        "  firmware     Betaflight 4.5.3 (0e533ba76) STM32F7X2, built Nov 23 2025 11:03:42",
        "  board        IFRC IFLIGHT_BLITZ_F722",
        "  craft        Chimera7 Pro V2",
        "  started      2025-12-24T20:10:06.682+00:00",
        "  PIDs         rollPID 75,60,75  pitchPID 88,70,95  yawPID 90,100,0",
        "  rates        rates_type 3 (ACTUAL)  rc_rates 3,3,1  rc_expo 35,35,15",
    ] {
        assert!(text.contains(expected), "{expected:?} missing in\n{text}");
    }
    // Three minutes of flight in the last session, shown in seconds and as minutes.
    assert!(text.contains("174.709 s (2:54.709)"), "{text}");

    // The JSON holds every header line of every session, in file order, and the same duration
    // check reports.
    let info = json(&["info", "--json", path]);
    let check = json(&["check", "--json", path]);
    let data = std::fs::read(path).unwrap();
    let expected = header_lines(&data);
    let sessions = info["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), expected.len());
    for (i, (session, lines)) in sessions.iter().zip(&expected).enumerate() {
        let headers: Vec<(String, String)> = session["headers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["name"].as_str().unwrap().to_owned(),
                    h["value"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(&headers, lines, "session {}", i + 1);
        assert_eq!(
            session["duration_us"],
            check["sessions"][i]["duration_us"],
            "session {}",
            i + 1
        );
        assert_eq!(session["firmware_kind"], "betaflight");
        // This log keeps one loop in 16 (`P interval:16`): a logged frame every 16 loops.
        let (every, looptime) = (
            session["frame_interval_us"].as_f64().unwrap(),
            session["loop_time_us"].as_f64().unwrap(),
        );
        assert!(
            (every / looptime - 16.0).abs() < 0.2,
            "{every} µs, loop {looptime} µs"
        );
    }
}

#[test]
fn inav_pids_carry_their_feedforward_term() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let path = corpus.join("real/blackbox/inav-9.0.1-inav-toolkit-blackbox_log_2026-02-21.TXT");
    let info = json(&["info", "--json", path.to_str().unwrap()]);
    let session = &info["sessions"][0];
    assert_eq!(session["firmware_kind"], "inav");
    assert_eq!(session["craft_name"], "NAZGUL 10");
    let pids: Vec<(&str, &str)> = session["pids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["value"].as_str().unwrap()))
        .collect();
    assert_eq!(
        &pids[..3],
        &[
            ("rollPID", "32,82,32,100"),
            ("pitchPID", "35,90,35,110"),
            ("yawPID", "40,84,0,100")
        ]
    );
}

/// The names of a session's PID settings, in the order `info` lists them.
fn pid_names(session: &Value) -> Vec<&str> {
    session["pids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect()
}

#[test]
fn dataflash_info_lists_rate_gains_in_axis_order_and_every_parameter() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let path = corpus.join("real/ardupilot/ardupilot-plane-4.2.3-flightdata-center_0003.bin");
    let path = path.to_str().unwrap();
    let info = json(&["info", "--json", path]);
    let session = &info["sessions"][0];
    assert_eq!(session["firmware"], "ArduPlane V4.2.3 (55685c43)");
    assert_eq!(
        pid_names(session),
        [
            "RLL_RATE_P",
            "RLL_RATE_I",
            "RLL_RATE_D",
            "RLL_RATE_FF",
            "PTCH_RATE_P",
            "PTCH_RATE_I",
            "PTCH_RATE_D",
            "PTCH_RATE_FF"
        ]
    );
    // Before 4.1, a plane's rate gains were RLL2SRV_* and PTCH2SRV_*.
    let older =
        corpus.join("real/ardupilot/ardupilot-plane-3.8.2-dev-pymavlink-test-truncated.BIN");
    let older = json(&["info", "--json", older.to_str().unwrap()]);
    let names = pid_names(&older["sessions"][0]);
    assert_eq!(
        &names[..4],
        ["RLL2SRV_P", "RLL2SRV_I", "RLL2SRV_D", "RLL2SRV_FF"]
    );
    assert_eq!(
        &names[4..8],
        ["PTCH2SRV_P", "PTCH2SRV_I", "PTCH2SRV_D", "PTCH2SRV_FF"]
    );
    // Values as ArduPilot stored them (32-bit floats), without widening noise.
    let parameters = session["parameters"].as_object().unwrap();
    assert_eq!(parameters["RLL_RATE_FF"], 0.345);
    assert_eq!(parameters.len(), 1081);
    let check = json(&["check", "--json", path]);
    assert_eq!(session["duration_us"], check["sessions"][0]["duration_us"]);

    let out = bbcheck(&["info", "--all", path]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("  parameters   1081\n"), "{text}");
    assert!(text.contains("\n    RLL_RATE_FF 0.345\n"), "{text}");
    assert!(
        text.contains("  messages:\n    ArduPlane V4.2.3 (55685c43)\n"),
        "{text}"
    );
}

#[test]
fn info_on_what_is_not_a_log_is_an_error() {
    let dir = TempDir::new("info");
    let path = dir.join("notes.txt");
    std::fs::write(&path, "just some text\n").unwrap();
    let out = bbcheck(&["info", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let error = String::from_utf8(out.stderr).unwrap();
    assert!(
        error.contains("notes.txt: offset 0: not a Blackbox log"),
        "{error}"
    );
}

#[test]
fn a_log_timed_in_milliseconds_has_a_duration() {
    // ArduPilot before 3.3 timed its messages with `TimeMS`, milliseconds of the same clock.
    use bbcheck::testkit::dataflash::{fmt, message};
    let mut log = fmt(0x81, 3 + 10, "ATT", "Ihhh", "TimeMS,Roll,Pitch,Yaw");
    for ms in [1_000u32, 2_000, 31_500] {
        let mut body = ms.to_le_bytes().to_vec();
        body.extend_from_slice(&[0; 6]);
        log.extend(message(0x81, &body));
    }
    let dir = TempDir::new("info-timems");
    let path = dir.join("copter-3.2.bin");
    std::fs::write(&path, &log).unwrap();
    let path = path.to_str().unwrap();
    let info = json(&["info", "--json", "--format", "dataflash", path]);
    assert_eq!(info["sessions"][0]["duration_us"], 30_500_000);
    let check = json(&["check", "--json", "--format", "dataflash", path]);
    assert_eq!(check["sessions"][0]["first_time_us"], 1_000_000);
    let out = bbcheck(&["info", "--format", "dataflash", path]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("unknown (no timed frame)"), "{text}");
}
