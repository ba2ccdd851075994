//! `export --csv` on real Blackbox logs writes the files of the reference C decoder
//! (`blackbox_decode`): header lines derived here from each log's own field names and the
//! decoder's unit rules, one row per accepted main frame (counted in `export --jsonl`), values
//! formatted as it formats them, and the GPS CSV, GPX and event files exactly when it writes them.

use crate::common;

use common::{TempDir, bbcheck, corpus, file_names};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// What `export --jsonl` says about one session.
#[derive(Default)]
struct Session {
    fields: BTreeMap<String, Vec<String>>,
    headers: BTreeMap<String, String>,
    /// Main frames with the slow values in force when each was accepted.
    mains: Vec<(Vec<i64>, Vec<i64>)>,
    gps: Vec<Vec<i64>>,
    events: Vec<Value>,
}

fn jsonl(path: &Path) -> BTreeMap<u64, Session> {
    let out = bbcheck(&["export", path.to_str().unwrap(), "--jsonl"]);
    assert!(
        out.status.code().unwrap() <= 1,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut sessions: BTreeMap<u64, Session> = BTreeMap::new();
    let mut slow = Vec::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        let index = r["session"].as_u64().unwrap();
        let values = || -> Vec<i64> {
            r["values"]
                .as_array()
                .map(|v| v.iter().map(|x| x.as_i64().unwrap()).collect())
                .unwrap_or_default()
        };
        let s = sessions.entry(index).or_default();
        match r["type"].as_str().unwrap() {
            "session" => {
                slow.clear();
                for (kind, names) in r["fields"].as_object().unwrap() {
                    let names = names.as_array().unwrap();
                    let names = names
                        .iter()
                        .map(|n| n.as_str().unwrap().to_owned())
                        .collect();
                    s.fields.insert(kind.clone(), names);
                }
                for (name, value) in r["headers"].as_object().unwrap() {
                    s.headers
                        .insert(name.clone(), value.as_str().unwrap().to_owned());
                }
                slow = vec![0; s.fields["S"].len()];
            }
            "S" => slow = values(),
            "I" | "P" => s.mains.push((values(), slow.clone())),
            "G" => s.gps.push(values()),
            "E" => s.events.push(r),
            _ => {}
        }
    }
    sessions
}

fn export_csv(path: &Path, dir: &Path) {
    let out = bbcheck(&[
        "export",
        path.to_str().unwrap(),
        "--csv",
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.code().unwrap() <= 1,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn stem(path: &Path) -> String {
    path.file_stem().unwrap().to_string_lossy().into_owned()
}

/// The main CSV header as the C decoder builds it: unit suffixes on the four fields it knows,
/// energyCumulative after the main fields when there is a current sensor, then the slow fields
/// with the three flag fields marked (INAV: without `flightModeFlags2`).
fn expected_header(session: &Session, inav: bool) -> String {
    let is = |name: &str, candidates: &[&str]| candidates.contains(&name);
    let vbat: &[&str] = if inav {
        &["vbatLatest", "vbat"]
    } else {
        &["vbatLatest"]
    };
    let amperage: &[&str] = if inav {
        &["amperageLatest", "amperage"]
    } else {
        &["amperageLatest"]
    };
    let mut columns: Vec<String> = session.fields["I"]
        .iter()
        .map(|n| match n.as_str() {
            "time" => "time (us)".to_owned(),
            "BaroAlt" => "BaroAlt (cm)".to_owned(),
            n if is(n, vbat) => format!("{n} (V)"),
            n if is(n, amperage) => format!("{n} (A)"),
            n => n.to_owned(),
        })
        .collect();
    if session.fields["I"].iter().any(|n| is(n, amperage)) {
        columns.push("energyCumulative (mAh)".into());
    }
    for n in &session.fields["S"] {
        match n.as_str() {
            "flightModeFlags" | "stateFlags" | "failsafePhase" => {
                columns.push(format!("{n} (flags)"))
            }
            // INAV's tool writes these modes as part of flightModeFlags.
            "flightModeFlags2" if inav => {}
            _ => columns.push(n.clone()),
        }
    }
    columns.join(if inav { "," } else { ", " })
}

/// Betaflight's tool's flag names (ten flight modes, five states, four failsafe phases with its
/// missing comma).
const FLIGHT_MODES: [&str; 10] = [
    "ANGLE_MODE",
    "HORIZON_MODE",
    "MAG",
    "BARO",
    "GPS_HOME",
    "GPS_HOLD",
    "HEADFREE",
    "UNUSED",
    "PASSTHRU",
    "RANGEFINDER_MODE",
];
const STATES: [&str; 5] = [
    "GPS_FIX_HOME",
    "GPS_FIX",
    "CALIBRATE_MAG",
    "SMALL_ANGLE",
    "FIXED_WING",
];
const PHASES: [&str; 4] = [
    "IDLE",
    "RX_LOSS_DETECTED",
    "LANDING",
    "LANDEDFAILSAFE_RX_LOSS_MONITORING",
];

fn flags(value: i64, names: &[&str]) -> String {
    let set: Vec<&str> = (0..names.len())
        .filter(|&i| value as u32 & (1 << i) != 0)
        .map(|i| names[i])
        .collect();
    if set.is_empty() {
        "0".into()
    } else {
        set.join("|")
    }
}

fn split(line: &str) -> Vec<&str> {
    line.split(", ").collect()
}

fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Check every row of a Betaflight session against values from `export --jsonl`.
fn check_betaflight_rows(session: &Session, lines: &[String], name: &str) {
    let main = &session.fields["I"];
    let slow = &session.fields["S"];
    let signed: Vec<bool> = session
        .headers
        .get("Field I signed")
        .map(|s| s.split(',').map(|v| v.trim() == "1").collect())
        .unwrap_or_default();
    let at = |n: &str| main.iter().position(|f| f == n);
    let extra = usize::from(at("amperageLatest").is_some());
    // Betaflight 4.3.0 and later log the voltage in hundredths of a volt.
    let revision = session
        .headers
        .get("Firmware revision")
        .map_or("", String::as_str);
    let centivolts = match revision.split(' ').collect::<Vec<_>>()[..] {
        ["Betaflight", version, ..] => {
            let (numbers, prerelease) = version.split_once('-').unwrap_or((version, ""));
            let n: Vec<i64> = numbers.split('.').map(|p| p.parse().unwrap_or(0)).collect();
            let n = (
                n[0],
                n.get(1).copied().unwrap_or(0),
                n.get(2).copied().unwrap_or(0),
            );
            n > (4, 3, 0) || n == (4, 3, 0) && prerelease.is_empty()
        }
        _ => false,
    };
    assert_eq!(
        lines.len(),
        session.mains.len() + 1,
        "{name}: one row per accepted main frame"
    );
    for (row, (values, slow_values)) in lines[1..].iter().zip(&session.mains) {
        let cols = split(row);
        assert_eq!(cols.len(), main.len() + extra + slow.len(), "{name}: {row}");
        for (i, field) in main.iter().enumerate() {
            let v = values[i];
            let want = match field.as_str() {
                "time" | "BaroAlt" => v.to_string(),
                "vbatLatest" if centivolts => format!("{:.2}", v as f64 / 100.0),
                "vbatLatest" => format!("{:.1}", v as f64 / 10.0),
                "amperageLatest" => format!("{:.2}", v as f64 / 100.0),
                _ if signed.get(i) == Some(&true) => format!("{:3}", v as i32),
                _ => format!("{:3}", v as u32),
            };
            assert_eq!(cols[i], want, "{name}: column {field} of {row}");
        }
        let base = main.len() + extra;
        for (j, field) in slow.iter().enumerate() {
            let v = slow_values[j];
            let want = match field.as_str() {
                "flightModeFlags" => flags(v, &FLIGHT_MODES),
                "stateFlags" => flags(v, &STATES),
                "failsafePhase" => PHASES
                    .get(v as u8 as usize)
                    .map_or_else(|| (v as u8).to_string(), |s| s.to_string()),
                _ => (v as u64).to_string(),
            };
            assert_eq!(cols[base + j], want, "{name}: slow column {field} of {row}");
        }
    }
}

/// A strict check that `text` is well-formed XML (declaration, balanced elements, quoted
/// attributes, no stray `<` or `&`); returns the number of `trkpt` elements.
fn well_formed_gpx(text: &str) -> usize {
    let mut rest = text
        .strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
        .expect("XML declaration");
    let mut stack: Vec<&str> = Vec::new();
    let mut points = 0;
    let mut seen_root = false;
    while !rest.is_empty() {
        if let Some(tag) = rest.strip_prefix('<') {
            let end = tag.find('>').expect("tag closes");
            let inner = &tag[..end];
            rest = &tag[end + 1..];
            if let Some(name) = inner.strip_prefix('/') {
                assert_eq!(stack.pop(), Some(name), "end tag matches");
                continue;
            }
            let (inner, empty) = match inner.strip_suffix('/') {
                Some(i) => (i, true),
                None => (inner, false),
            };
            let name_end = inner.find(char::is_whitespace).unwrap_or(inner.len());
            let name = &inner[..name_end];
            assert!(!name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == ':'));
            let mut attrs = inner[name_end..].trim();
            while !attrs.is_empty() {
                let eq = attrs.find("=\"").expect("attribute value quoted");
                assert!(attrs[..eq].chars().all(|c| c.is_alphanumeric() || c == ':'));
                let after = &attrs[eq + 2..];
                let close = after.find('"').expect("attribute closes");
                assert!(!after[..close].contains(['<', '&']));
                attrs = after[close + 1..].trim_start();
            }
            if stack.is_empty() {
                assert!(!seen_root, "one root element");
                seen_root = true;
            }
            if name == "trkpt" {
                points += 1;
            }
            if !empty {
                stack.push(name);
            }
        } else {
            let end = rest.find('<').unwrap_or(rest.len());
            let text = &rest[..end];
            assert!(!text.contains('&'));
            assert!(
                !stack.is_empty() || text.trim().is_empty(),
                "text outside the root"
            );
            rest = &rest[end..];
        }
    }
    assert!(stack.is_empty() && seen_root, "elements balanced");
    points
}

/// The C decoder's file set for one session: the CSV always; the GPS CSV when there are GPS
/// frames; the event file when there are events its parser reads (sync beep, in-flight
/// adjustment, logging resume, a plain end of log).
fn expected_files(stem: &str, index: u64, session: &Session) -> Vec<String> {
    let mut files = vec![format!("{stem}.{index:02}.csv")];
    let read_events = session.events.iter().any(|e| {
        matches!(e["event"].as_u64(), Some(0 | 13 | 14))
            || (e["event"] == 255 && e["data"].get("disarmReason").is_none())
    });
    if read_events {
        files.push(format!("{stem}.{index:02}.event"));
    }
    if !session.gps.is_empty() {
        files.push(format!("{stem}.{index:02}.gps.csv"));
    }
    files
}

#[test]
fn betaflight_logs_match_the_c_decoder_column_for_column() {
    let Some(corpus) = corpus() else { return };
    for file in [
        "betaflight-3.1.5-pid-analyzer-example_smooth_tune.BBL",
        "betaflight-4.2.0-fc-blackbox-LOG00037.BFL",
        "betaflight-4.5.3-bucksaw-btfl_005.bbl",
        "betaflight-2026.6.0-alpha-blackbox-log-viewer-LOG00007.BFL",
    ] {
        let path = corpus.join("real/blackbox").join(file);
        let dir = TempDir::new(&format!("csv-{}", stem(&path)));
        export_csv(&path, &dir);
        for (index, session) in jsonl(&path) {
            let lines = read_lines(&dir.join(format!("{}.{index:02}.csv", stem(&path))));
            assert_eq!(
                lines[0],
                expected_header(&session, false),
                "{file} session {index}"
            );
            check_betaflight_rows(&session, &lines, file);
        }
    }
}

#[test]
fn a_literal_header_read_off_the_c_source() {
    let Some(corpus) = corpus() else { return };
    let path = corpus.join("real/blackbox/betaflight-4.5.3-bucksaw-btfl_005.bbl");
    let dir = TempDir::new("csv-literal");
    export_csv(&path, &dir);
    let lines = read_lines(&dir.join("betaflight-4.5.3-bucksaw-btfl_005.01.csv"));
    // Betaflight 4.5 writes `baroAlt`, which the C decoder does not know as BaroAlt: no unit.
    assert_eq!(
        lines[0],
        "loopIteration, time (us), axisP[0], axisP[1], axisP[2], axisI[0], axisI[1], axisI[2], \
         axisD[0], axisD[1], axisF[0], axisF[1], axisF[2], rcCommand[0], rcCommand[1], \
         rcCommand[2], rcCommand[3], setpoint[0], setpoint[1], setpoint[2], setpoint[3], \
         vbatLatest (V), amperageLatest (A), baroAlt, rssi, gyroADC[0], gyroADC[1], gyroADC[2], \
         gyroUnfilt[0], gyroUnfilt[1], gyroUnfilt[2], accSmooth[0], accSmooth[1], accSmooth[2], \
         debug[0], debug[1], debug[2], debug[3], debug[4], debug[5], debug[6], debug[7], \
         motor[0], motor[1], motor[2], motor[3], eRPM[0], eRPM[1], eRPM[2], eRPM[3], \
         energyCumulative (mAh), flightModeFlags (flags), stateFlags (flags), \
         failsafePhase (flags), rxSignalReceived, rxFlightChannelsValid"
    );
}

#[test]
fn energy_is_integrated_like_the_tools_current_meter() {
    let Some(corpus) = corpus() else { return };
    let path = corpus.join("real/blackbox/betaflight-4.2.0-fc-blackbox-LOG00037.BFL");
    let dir = TempDir::new("csv-energy");
    export_csv(&path, &dir);
    let sessions = jsonl(&path);
    let session = &sessions[&1];
    let lines = read_lines(&dir.join("betaflight-4.2.0-fc-blackbox-LOG00037.01.csv"));
    let main = &session.fields["I"];
    let amperage = main.iter().position(|f| f == "amperageLatest").unwrap();
    let time = main.iter().position(|f| f == "time").unwrap();
    let energy_column = main.len();
    // battery.c: each frame adds its current over the time between the two frames before it
    // (the tool passes the previous frame's time); the first adds nothing and the second adds
    // over (previous time + 1) µs, from the unsigned −1 it started with. Betaflight's tool reads
    // the field as an ADC value: (adc · 3300 / 4095) mV · 10000 / 400 (no `currentMeter` header),
    // and takes it as a 16-bit number, the time as a 32-bit one.
    let mut energy = 0.0f64;
    let mut last: u32 = 0;
    let mut previous_time: i64 = -1;
    for (row, (values, _)) in lines[1..].iter().zip(&session.mains) {
        let adc = values[amperage] as u16;
        let milliamps = i32::from(((i64::from(adc) * 3300 / 4095) * 10_000 / 400) as i16);
        let now = previous_time as u32;
        if last != 0 {
            energy += f64::from(milliamps) * now.wrapping_sub(last) as f64 / 3_600_000_000.0;
        }
        last = now;
        previous_time = values[time];
        assert_eq!(
            split(row)[energy_column],
            (energy.round() as i32).to_string(),
            "{row}"
        );
    }
    assert!(energy != 0.0, "the flight draws current");
}

#[test]
fn inav_log_uses_the_inav_tools_units_flags_and_columns() {
    let Some(corpus) = corpus() else { return };
    let path = corpus.join("real/blackbox/inav-9.0.1-inav-toolkit-blackbox_log_2026-02-21.TXT");
    let dir = TempDir::new("csv-inav");
    export_csv(&path, &dir);
    let stem = stem(&path);
    let sessions = jsonl(&path);
    let mut expected = Vec::new();
    for (&index, session) in &sessions {
        expected.extend(expected_files(&stem, index, session));
        let lines = read_lines(&dir.join(format!("{stem}.{index:02}.csv")));
        assert_eq!(lines[0], expected_header(session, true));
        assert_eq!(lines.len(), session.mains.len() + 1);
        let main = &session.fields["I"];
        let vbat = main.iter().position(|f| f == "vbat").unwrap();
        let amperage = main.iter().position(|f| f == "amperage").unwrap();
        let slow = &session.fields["S"];
        let heading: Vec<&str> = lines[0].split(',').collect();
        let state = heading
            .iter()
            .position(|h| *h == "stateFlags (flags)")
            .unwrap();
        for (row, (values, slow_values)) in lines[1..].iter().zip(&session.mains) {
            let cols: Vec<&str> = row.split(',').collect();
            // INAV 2.0 and later log centivolts and centiamps; the tool prints three decimals.
            assert_eq!(
                cols[vbat],
                format!("{:.3}", f64::from(values[vbat] as u16) / 100.0)
            );
            assert_eq!(
                cols[amperage],
                format!("{:.3}", f64::from(values[amperage] as u16) / 100.0)
            );
            let s = slow_values[slow.iter().position(|f| f == "stateFlags").unwrap()];
            // INAV's state names run past Betaflight's five: bit 18 is MULTIROTOR.
            assert_eq!(
                cols[state].contains("MULTIROTOR"),
                s & (1 << 18) != 0,
                "{row}"
            );
        }
        let gps_lines = read_lines(&dir.join(format!("{stem}.{index:02}.gps.csv")));
        // INAV's tool separates columns by a comma alone, and adds the home position.
        let names: Vec<&str> = session.fields["G"]
            .iter()
            .map(String::as_str)
            .filter(|n| *n != "time")
            .collect();
        let names: Vec<String> = names
            .iter()
            .map(|n| {
                if *n == "GPS_speed" {
                    "GPS_speed (m/s)".to_owned()
                } else {
                    n.to_string()
                }
            })
            .collect();
        assert_eq!(
            gps_lines[0],
            format!("time (us),{},GPS_home_lat,GPS_home_lon", names.join(","))
        );
        assert_eq!(gps_lines.len(), session.gps.len() + 1);
        let gpx = std::fs::read_to_string(dir.join(format!("{stem}.{index:02}.gps.gpx"))).unwrap();
        let sats = session.fields["G"]
            .iter()
            .position(|f| f == "GPS_numSat")
            .unwrap();
        let good = session.gps.iter().filter(|g| g[sats] >= 5).count();
        assert_eq!(well_formed_gpx(&gpx), good);
        // The date comes from the session's `Log start datetime`.
        let date = &session.headers["Log start datetime"][..10];
        assert!(gpx.contains(&format!("<time>{date}T")), "{date}");
    }
    for index in sessions.keys() {
        let gpx = format!("{stem}.{index:02}.gps.gpx");
        if dir.join(&gpx).exists() {
            expected.push(gpx);
        }
    }
    expected.sort();
    assert_eq!(file_names(&dir), expected);
}

#[test]
fn gps_files_and_events_appear_exactly_when_the_c_decoder_writes_them() {
    let Some(corpus) = corpus() else { return };
    for file in [
        "betaflight-4.2.0-fc-blackbox-LOG00037.BFL",
        "betaflight-4.2.9-gimbal-ghost-btfl_002.bbl",
        "betaflight-4.2.8-fc-blackbox-btfl_all-44sessions.bbl",
        "betaflight-3.1.5-pid-analyzer-example_smooth_tune.BBL",
    ] {
        let path = corpus.join("real/blackbox").join(file);
        let dir = TempDir::new(&format!("csv-files-{}", stem(&path)));
        export_csv(&path, &dir);
        let stem = stem(&path);
        let mut expected = Vec::new();
        for (index, session) in jsonl(&path) {
            expected.extend(expected_files(&stem, index, &session));
            if session.gps.is_empty() {
                continue;
            }
            let gps_lines = read_lines(&dir.join(format!("{stem}.{index:02}.gps.csv")));
            assert_eq!(gps_lines.len(), session.gps.len() + 1, "{file} {index}");
            let g = &session.fields["G"];
            let lat = g.iter().position(|f| f == "GPS_coord[0]").unwrap();
            let speed = g.iter().position(|f| f == "GPS_speed").unwrap();
            let course = g.iter().position(|f| f == "GPS_ground_course").unwrap();
            let skip_time = |i: usize| i - usize::from(g[0] == "time");
            for (line, values) in gps_lines[1..].iter().zip(&session.gps) {
                let cols = split(line);
                let v = values[lat];
                let sign = if v < 0 && v / 10_000_000 == 0 {
                    "-"
                } else {
                    ""
                };
                let want = format!(
                    "{sign}{}.{:07}",
                    v / 10_000_000,
                    v.unsigned_abs() % 10_000_000
                );
                assert_eq!(cols[1 + skip_time(lat)], want, "{line}");
                let v = values[speed];
                assert_eq!(
                    cols[1 + skip_time(speed)],
                    format!("{}.{:02}", v / 100, v.unsigned_abs() % 100)
                );
                let v = values[course];
                assert_eq!(
                    cols[1 + skip_time(course)],
                    format!("{}.{}", v / 10, v.unsigned_abs() % 10)
                );
            }
            let gpx_path = dir.join(format!("{stem}.{index:02}.gps.gpx"));
            let sats = g.iter().position(|f| f == "GPS_numSat").unwrap();
            let good = session.gps.iter().filter(|v| v[sats] >= 5).count();
            if good > 0 {
                let gpx = std::fs::read_to_string(&gpx_path).unwrap();
                assert_eq!(well_formed_gpx(&gpx), good, "{file} {index}");
                expected.push(format!("{stem}.{index:02}.gps.gpx"));
            } else {
                assert!(
                    !gpx_path.exists(),
                    "no GPX without a point with five satellites"
                );
            }
        }
        expected.sort();
        assert_eq!(file_names(&dir), expected, "{file}");
    }
}

#[test]
fn event_lines_are_the_c_decoders_json() {
    let Some(corpus) = corpus() else { return };
    let path = corpus.join("real/blackbox/betaflight-4.2.0-fc-blackbox-LOG00037.BFL");
    let dir = TempDir::new("csv-events");
    export_csv(&path, &dir);
    let sessions = jsonl(&path);
    let session = &sessions[&1];
    let lines = read_lines(&dir.join("betaflight-4.2.0-fc-blackbox-LOG00037.01.event"));
    let beep = session.events.iter().find(|e| e["event"] == 0).unwrap();
    assert_eq!(
        lines[0],
        format!(
            "{{\"name\":\"Sync beep\", \"time\":{}}}",
            beep["data"]["time"]
        )
    );
    // The end of the log carries the last main frame's time.
    let time = session.fields["I"]
        .iter()
        .position(|f| f == "time")
        .unwrap();
    let last = session.mains.last().unwrap().0[time];
    assert_eq!(
        lines.last().unwrap(),
        &format!("{{\"name\":\"Log clean end\", \"time\":{last}}}")
    );
}

/// The rows of a reference CSV table: its heading, and each row's cells as written (padding
/// included).
fn table(text: &str) -> (String, Vec<Vec<String>>) {
    let mut lines = text.lines();
    let heading = lines.next().unwrap_or_default().to_owned();
    let rows = lines
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect();
    (heading, rows)
}

#[test]
fn export_writes_the_files_blackbox_decode_writes_today() {
    // Betaflight's reference decoder does not know the flight-mode and disarm events (types 30
    // and 15): it reads their payloads as frame markers, calls its stream invalid and writes no P
    // frame until the next I frame; INAV's loses a few frames at some events the same way.
    // bbcheck writes those frames. Everything else in its files (the
    // same files, headings, units, values, energy, events, GPS) is what it writes, but for the
    // P frames' loopIteration in logs with a P ratio (it numbers them 1, 2, … from the I frame)
    // and what follows from the frames it leaves out: the energy integrated over them, the time
    // of the log-end event and of GPS frames predicted from them.
    let Some(corpus) = corpus() else { return };
    let archives = corpus.join("real/expected/reference-csv");
    let clean: Vec<String> = common::clean_real_logs()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let (mut files, mut rows, mut extra) = (0, 0, 0);
    for (name, _) in clean
        .iter()
        .filter_map(|n| n.strip_prefix("blackbox/").map(|b| (b, ())))
    {
        let archive = archives.join(format!("{name}.tar.xz"));
        if !archive.exists() {
            continue;
        }
        let dir = TempDir::new("reference-csv");
        let unpacked = std::process::Command::new("tar")
            .arg("-xJf")
            .arg(&archive)
            .arg("-C")
            .arg(&*dir)
            .status()
            .unwrap();
        assert!(unpacked.success(), "{name}: tar -xJf");
        let reference = dir.join(name);
        let ours = dir.join("ours");
        std::fs::create_dir_all(&ours).unwrap();
        export_csv(&corpus.join("real/blackbox").join(name), &ours);
        let mut expected = file_names(&reference);
        expected.retain(|f| !f.starts_with("blackbox_decode."));
        assert_eq!(file_names(&ours), expected, "{name}: the files");
        // Per session stem: whether bbcheck wrote frames the reference left out.
        let mut more = BTreeMap::new();
        // The current meter runs on from one session to the next.
        let mut drifted = false;
        for file in expected
            .iter()
            .filter(|f| f.ends_with(".csv") && !f.ends_with(".gps.csv"))
        {
            let read = |d: &Path| std::fs::read_to_string(d.join(file)).unwrap();
            let ((heading, theirs), (our_heading, mine)) =
                (table(&read(&reference)), table(&read(&ours)));
            // A session with no frame at all (its header, then erased flash): the reference
            // writes the heading, bbcheck an empty table.
            if theirs.is_empty() && mine.is_empty() && our_heading.is_empty() {
                continue;
            }
            assert_eq!(our_heading, heading, "{file}: heading");
            let energy = heading
                .split(',')
                .position(|h| h.trim() == "energyCumulative (mAh)");
            // Every row the reference writes is one of ours, in order.
            let mut at = 0;
            for (i, row) in theirs.iter().enumerate() {
                let found = mine[at..].iter().position(|m| m[1].trim() == row[1].trim());
                let Some(skip) = found else {
                    panic!("{file}: no row at time {} (after row {at})", row[1]);
                };
                at += skip;
                let m = &mine[at];
                for (c, (a, b)) in row.iter().zip(m).enumerate().skip(1) {
                    // Energy integrated over rows the reference left out drifts by a rounding.
                    drifted |= at > i;
                    let value = |cell: &str| cell.trim().parse::<i64>().unwrap();
                    let near = Some(c) == energy && drifted && (value(a) - value(b)).abs() <= 2;
                    assert!(
                        a == b || near,
                        "{file} time {}: column {c}: {a} vs {b}",
                        row[1]
                    );
                }
                at += 1;
            }
            let added = mine.len() - theirs.len();
            // The P frames up to the next I frame after each event it does not know.
            assert!(
                added <= 64 + mine.len() / 100,
                "{file}: {added} rows more than the reference's {}",
                theirs.len()
            );
            more.insert(
                file.trim_end_matches(".csv").to_owned(),
                (added, mine.last().map(|r| r[1].trim().to_owned())),
            );
            (files, rows, extra) = (files + 1, rows + theirs.len(), extra + added);
        }
        for file in expected
            .iter()
            .filter(|f| !f.ends_with(".csv") || f.ends_with(".gps.csv"))
        {
            let stem = file
                .split(".gps.")
                .next()
                .unwrap()
                .trim_end_matches(".event");
            let (added, last_time) = more.get(stem).cloned().unwrap_or((0, None));
            let (a, b) = (
                std::fs::read_to_string(reference.join(file)).unwrap(),
                std::fs::read_to_string(ours.join(file)).unwrap(),
            );
            if added == 0 {
                assert_eq!(b, a, "{file}");
                continue;
            }
            // The log-end event carries the time of the last row; GPS times may stand on frames
            // the reference left out.
            assert_eq!(a.lines().count(), b.lines().count(), "{file}");
            for (x, y) in a.lines().zip(b.lines()) {
                if x.contains("Log clean end") {
                    assert!(
                        y.contains(&format!("\"time\":{}", last_time.clone().unwrap())),
                        "{file}: {y}"
                    );
                } else if file.ends_with(".event") {
                    assert_eq!(x, y, "{file}");
                }
            }
        }
    }
    println!(
        "reference CSV: {files} tables, {rows} rows of the reference's all written alike; {extra} rows more"
    );
    assert!(files > 10, "the reference files were read");
}

#[test]
fn one_session_is_exported_as_the_decoder_exports_one_log() {
    // `--session N` writes session N alone, as `blackbox_decode --index N` does: the same
    // records and rows as in the whole export, but for the current meter, which then starts from
    // nothing. A session the file does not have is a usage error, and nothing is written.
    let Some(corpus) = corpus() else { return };
    let path = corpus.join("real/blackbox/betaflight-4.5.3-bucksaw-btfl_005.bbl");
    let file = path.to_str().unwrap();
    let whole = bbcheck(&["export", file, "--jsonl"]).stdout;
    let second = bbcheck(&["export", file, "--jsonl", "--session", "2"]);
    assert_eq!(second.status.code(), Some(0));
    let of_second: Vec<&[u8]> = whole
        .split(|&b| b == b'\n')
        .filter(|l| l.windows(12).any(|w| w == b"\"session\":2,"))
        .collect();
    let lines: Vec<&[u8]> = second
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    assert!(of_second.len() > 1000);
    assert_eq!(lines, of_second);

    let (all, one) = (TempDir::new("session-all"), TempDir::new("session-one"));
    export_csv(&path, &all);
    let out = bbcheck(&[
        "export",
        file,
        "--csv",
        "--session",
        "2",
        "-o",
        one.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let stem = stem(&path);
    let expected: Vec<String> = file_names(&all)
        .into_iter()
        .filter(|f| f.starts_with(&format!("{stem}.02.")))
        .collect();
    assert_eq!(file_names(&one), expected);
    let read = |dir: &Path| std::fs::read_to_string(dir.join(format!("{stem}.02.csv"))).unwrap();
    let (a, b) = (read(&all), read(&one));
    let energy = a
        .lines()
        .next()
        .unwrap()
        .split(", ")
        .position(|h| h == "energyCumulative (mAh)")
        .unwrap();
    let without_energy = |text: &str| -> Vec<String> {
        text.lines()
            .map(|l| {
                let mut cells: Vec<&str> = l.split(',').collect();
                cells.remove(energy);
                cells.join(",")
            })
            .collect()
    };
    assert_eq!(without_energy(&a), without_energy(&b));
    // The meter runs on from session 1 in the whole export; alone, session 2 starts from 0.
    let first_energy = |text: &str| {
        text.lines()
            .nth(1)
            .unwrap()
            .split(',')
            .nth(energy)
            .unwrap()
            .trim()
            .to_owned()
    };
    assert_eq!(first_energy(&b), "0");
    assert_ne!(first_energy(&a), "0");
    for format in ["--jsonl", "--csv"] {
        let none = TempDir::new("session-none");
        // A directory `-o` would make is not left behind.
        let made = none.join("made");
        let out = bbcheck(&[
            "export",
            file,
            format,
            "--session",
            "4",
            "-o",
            made.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(2), "{format}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("there is no session 4 (the file has 3)")
        );
        assert!(
            out.stdout.is_empty() && file_names(&none).is_empty(),
            "{format}"
        );
    }
}

/// The statistics blocks of `blackbox_decode`'s standard error (or of `export --stats`): per
/// session, each line keyed by what it tells.
fn statistics(text: &str) -> Vec<BTreeMap<String, String>> {
    let mut sessions: Vec<BTreeMap<String, String>> = Vec::new();
    for line in text.lines() {
        // The reference runs `Statistics` into a `Log` line that has no times.
        let line = line.trim_end_matches("Statistics");
        let key = if line.starts_with("Log ") {
            sessions.push(BTreeMap::new());
            "Log".to_owned()
        } else if line.contains("frames failed to decode") {
            "failed".to_owned()
        } else if line.contains("iterations are missing") {
            "missing".to_owned()
        } else if line.contains("weren't logged") {
            "not logged".to_owned()
        } else if let Some(head) = ["frames", "Frames", "Data rate", "Looptime"]
            .iter()
            .find_map(|k| line.find(k).map(|at| &line[..at + k.len()]))
        {
            head.to_owned()
        } else {
            continue;
        };
        if let Some(session) = sessions.last_mut() {
            session.insert(key, line.to_owned());
        }
    }
    sessions
}

#[test]
fn stats_are_blackbox_decodes_counted_from_the_frames_read() {
    // Beside the frames the reference loses at the events it does not know (P frames, and those
    // events), and its loop time of P frames numbered 1, 2, … in logs with a P ratio (which then
    // calls the iterations the schedule skips missing), `--stats` prints what it prints.
    let Some(corpus) = corpus() else { return };
    let archives = corpus.join("real/expected/reference-csv");
    let mut compared = 0;
    for (name, _) in common::clean_real_logs() {
        let Some(name) = name.strip_prefix("blackbox/") else {
            continue;
        };
        let archive = archives.join(format!("{name}.tar.xz"));
        if !archive.exists() {
            continue;
        }
        let dir = TempDir::new("reference-stats");
        let unpacked = std::process::Command::new("tar")
            .arg("-xJf")
            .arg(&archive)
            .arg("-C")
            .arg(&*dir)
            .arg(format!("{name}/blackbox_decode.stderr"))
            .status()
            .unwrap();
        assert!(unpacked.success(), "{name}: tar -xJf");
        let theirs =
            std::fs::read_to_string(dir.join(name).join("blackbox_decode.stderr")).unwrap();
        let path = corpus.join("real/blackbox").join(name);
        let out = bbcheck(&["export", path.to_str().unwrap(), "--jsonl", "--stats"]);
        assert_eq!(out.status.code(), Some(0), "{name}");
        let ours = String::from_utf8(out.stderr).unwrap();
        let (theirs, ours) = (statistics(&theirs), statistics(&ours));
        assert_eq!(ours.len(), theirs.len(), "{name}: sessions");
        for (session, (a, b)) in theirs.iter().zip(&ours).enumerate() {
            let at = format!("{name} session {}", session + 1);
            for key in ["I frames", "S frames", "G frames", "H frames", "not logged"] {
                // Iterations the schedule skips, the reference counts only without a P ratio.
                if key == "not logged" && a.get(key).is_none() {
                    continue;
                }
                assert_eq!(b.get(key), a.get(key), "{at}: {key}");
            }
            let count = |s: &BTreeMap<String, String>, key: &str| -> u64 {
                s.get(key)
                    .map_or(0, |l| l.split_whitespace().nth(2).unwrap().parse().unwrap())
            };
            let (p, our_p) = (count(a, "P frames"), count(b, "P frames"));
            assert!(
                our_p >= p && our_p - p <= 64 + p / 100,
                "{at}: {p} P frames, ours {our_p}"
            );
            // Start, end and duration; bytes a second and baud, from the session's bytes and
            // duration. Frames the reference lost at the end of a session make it end earlier.
            let rate = |s: &BTreeMap<String, String>| -> Vec<String> {
                let words: Vec<String> = s["Data rate"]
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect();
                words[3..].to_vec()
            };
            let start =
                |s: &BTreeMap<String, String>| s["Log"].split(", end").next().unwrap().to_owned();
            assert_eq!(start(b), start(a), "{at}");
            if our_p == p {
                assert_eq!(b["Log"], a["Log"], "{at}");
                assert_eq!(rate(b), rate(a), "{at}: data rate");
            }
            // A clean log misses nothing.
            assert!(
                b.get("missing").is_none() && b.get("failed").is_none(),
                "{at}: {b:?}"
            );
            compared += 1;
        }
    }
    assert!(compared > 20, "{compared} sessions compared");
}
