//! `export --csv` on real Blackbox logs writes the files of the reference C decoder
//! (`blackbox_decode`): header lines derived here from each log's own field names and the
//! decoder's unit rules, one row per accepted main frame (counted in `export --jsonl`), values
//! formatted as it formats them, and the GPS CSV, GPX and event files exactly when it writes them.

use crate::common;

use common::{TempDir, bbcheck, corpus, file_names};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    export_csv_with(path, dir, &[]);
}

/// `export --csv` with blackbox_decode's `options`.
fn export_csv_with(path: &Path, dir: &Path, options: &[&str]) {
    let mut args = vec![
        "export",
        path.to_str().unwrap(),
        "--csv",
        "-o",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(options);
    let out = bbcheck(&args);
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

/// Unpack a reference archive (or one file of it) into `dir`.
fn unpack(archive: &Path, dir: &Path, member: Option<&str>) {
    let unpacked = std::process::Command::new("tar")
        .arg("-xJf")
        .arg(archive)
        .arg("-C")
        .arg(dir)
        .args(member)
        .status()
        .unwrap();
    assert!(unpacked.success(), "{}: tar -xJf", archive.display());
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
        unpack(&archive, &dir, None);
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
    // blackbox_decode's name for it.
    let index = bbcheck(&["export", file, "--jsonl", "--index", "2"]);
    assert_eq!(index.stdout, second.stdout);
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
        unpack(
            &archive,
            &dir,
            Some(&format!("{name}/blackbox_decode.stderr")),
        );
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

/// The demo log and, with the corpus, a real log of each kind the unit options treat apart:
/// Betaflight 4.2 (tenths of a volt, BaroAlt, GPS), 4.5 (hundredths), 2025.12 (firmware type
/// `Betaflight`), Cleanflight (a gyro scale of its own) and INAV.
fn unit_logs() -> Vec<PathBuf> {
    demo_and(&[
        "betaflight-4.2.0-fc-blackbox-LOG00037.BFL",
        "betaflight-4.5.3-bucksaw-btfl_005.bbl",
        "betaflight-2025.12.2-propwash-btfl_027.bbl",
        "cleanflight-1.6.0-propwash-LOG00568.TXT",
        "inav-9.0.1-inav-toolkit-blackbox_log_2026-02-21.TXT",
    ])
}

/// The demo log and, with the corpus, the real Blackbox logs `names`.
fn demo_and(names: &[&str]) -> Vec<PathBuf> {
    let mut logs = vec![common::own_corpus().join("generated/demo.bbl")];
    if let Some(corpus) = corpus() {
        logs.extend(names.iter().map(|n| corpus.join("real/blackbox").join(n)));
    }
    logs
}

/// Whether the session is INAV's, which its tool formats.
fn is_inav(session: &Session) -> bool {
    session
        .headers
        .get("Firmware revision")
        .is_some_and(|r| r.starts_with("INAV"))
}

/// A CSV table's heading cells and rows' cells, split at the flavour's separator; `None` when
/// the file is missing.
fn cells(path: &Path, inav: bool) -> Option<(Vec<String>, Vec<Vec<String>>)> {
    let text = std::fs::read_to_string(path).ok()?;
    let sep = if inav { "," } else { ", " };
    let mut lines = text
        .lines()
        .map(|l| l.split(sep).map(str::to_owned).collect());
    let heading = lines.next().unwrap_or_default();
    Some((heading, lines.collect()))
}

/// A heading cell without its ` (unit)`.
fn field_name(heading: &str) -> &str {
    match heading.strip_suffix(')').and_then(|h| h.rsplit_once(" (")) {
        Some((name, _)) => name,
        None => heading,
    }
}

/// Radians per second of one gyro unit: `gyro_scale` is degrees per second in Cleanflight and
/// the firmware after it (radians per µs, kept as a float, in Baseflight), 1 rad/µs without it.
fn gyro_scale(session: &Session) -> f64 {
    let value = session
        .headers
        .get("gyro_scale")
        .or(session.headers.get("gyro.scale"));
    let Some(value) = value else {
        return 1e6;
    };
    let bits = u32::from_str_radix(value.trim_start_matches("0x"), 16).unwrap();
    let scale = f32::from_bits(bits);
    let scale = match session.headers.get("Firmware type").map(String::as_str) {
        Some("Baseflight") => scale,
        _ => (f64::from(scale) * (std::f64::consts::PI / 180.0) * 1e-6) as f32,
    };
    f64::from(scale) * 1e6
}

fn number(cell: &str) -> f64 {
    cell.trim()
        .parse()
        .unwrap_or_else(|e| panic!("{cell:?}: {e}"))
}

#[test]
fn unit_options_rescale_their_columns_by_the_units_factor() {
    // Two runs give every unit but the defaults; every other column is the plain export's.
    let runs: [&[&str]; 2] = [
        &[
            "--unit-amperage",
            "mA",
            "--unit-vbat",
            "mV",
            "--unit-frame-time",
            "s",
            "--unit-height",
            "m",
            "--unit-rotation",
            "deg/s",
            "--unit-acceleration",
            "g",
            "--unit-gps-speed",
            "kph",
            "--unit-flags",
            "raw",
        ],
        &[
            "--unit-amperage",
            "raw",
            "--unit-vbat",
            "raw",
            "--unit-frame-time",
            "ms",
            "--unit-height",
            "ft",
            "--unit-rotation",
            "rad/s",
            "--unit-acceleration",
            "m/s2",
            "--unit-gps-speed",
            "mph",
        ],
    ];
    let (mut columns, mut gyro_checked) = (0, 0);
    for path in unit_logs() {
        let name = stem(&path);
        let sessions = jsonl(&path);
        let plain = TempDir::new("units-plain");
        export_csv(&path, &plain);
        for (run, options) in runs.iter().enumerate() {
            let unit = |option: &str| {
                let at = options.iter().position(|o| *o == option);
                at.map_or("default", |i| options[i + 1])
            };
            let dir = TempDir::new(&format!("units-{run}"));
            export_csv_with(&path, &dir, options);
            assert_eq!(file_names(&dir), file_names(&plain), "{name}");
            for (index, session) in &sessions {
                let inav = is_inav(session);
                let file = format!("{name}.{index:02}.csv");
                let (Some((plain_heading, plain_rows)), Some((heading, rows))) = (
                    cells(&plain.join(&file), inav),
                    cells(&dir.join(&file), inav),
                ) else {
                    panic!("{file}: missing");
                };
                assert_eq!(rows.len(), plain_rows.len(), "{file}");
                assert_eq!(heading.len(), plain_heading.len(), "{file}");
                let (main, slow) = (&session.fields["I"], &session.fields["S"]);
                let acc_1g: f64 = session.headers["acc_1G"].parse().unwrap();
                let scale = gyro_scale(session);
                let flags2 = slow.iter().position(|f| f == "flightModeFlags2");
                for (c, plain_head) in plain_heading.iter().enumerate() {
                    let field = field_name(plain_head);
                    let vbat = if inav { "vbat" } else { "vbatLatest" };
                    let amperage = if inav { "amperage" } else { "amperageLatest" };
                    let column = |r: usize| -> (&str, &str) {
                        (plain_rows[r][c].as_str(), rows[r][c].as_str())
                    };
                    // The unit a column gets, and what its cells become from the plain ones.
                    let (suffix, want): (Option<&str>, Box<dyn Fn(usize) -> String>) =
                        match (field, unit_of(field, unit)) {
                            ("time", u @ ("s" | "ms")) => (
                                Some(u),
                                Box::new(move |r| {
                                    let us = number(column(r).0);
                                    if u == "s" {
                                        format!("{:.6}", us / 1e6)
                                    } else {
                                        format!("{:.3}", us / 1e3)
                                    }
                                }),
                            ),
                            (f, "mV" | "mA") if f == vbat || f == amperage => (
                                Some(if f == vbat { "mV" } else { "mA" }),
                                // Volts and amps times 1000, exactly: their decimals are all
                                // there are.
                                Box::new(move |r| {
                                    let milli = (number(column(r).0) * 1000.0).round() as i64;
                                    if inav {
                                        milli.to_string()
                                    } else {
                                        format!("{milli:3}")
                                    }
                                }),
                            ),
                            (f, "raw") if f == vbat || f == amperage => {
                                let at = main.iter().position(|n| n == f).unwrap();
                                (
                                    None,
                                    Box::new(move |r| {
                                        let v = session.mains[r].0[at];
                                        if inav {
                                            v.to_string()
                                        } else {
                                            format!("{v:3}")
                                        }
                                    }),
                                )
                            }
                            ("BaroAlt", u @ ("m" | "ft")) => (
                                Some(u),
                                Box::new(move |r| {
                                    let metres = number(column(r).0) / 100.0;
                                    if u == "m" {
                                        format!("{metres:.2}")
                                    } else {
                                        format!("{:.2}", metres * 3.28084)
                                    }
                                }),
                            ),
                            (f, u @ ("deg/s" | "rad/s")) if is_gyro(f) => (
                                Some(u),
                                Box::new(move |r| {
                                    let radians = scale * number(column(r).0);
                                    if u == "rad/s" {
                                        format!("{radians:.2}")
                                    } else {
                                        format!("{:.2}", radians * (180.0 / std::f64::consts::PI))
                                    }
                                }),
                            ),
                            (f, u @ ("g" | "m/s2")) if f.starts_with("accSmooth[") => (
                                Some(if u == "g" { "g" } else { "m/s/s" }),
                                Box::new(move |r| {
                                    let gs = number(column(r).0) / acc_1g;
                                    if u == "g" {
                                        format!("{gs:.2}")
                                    } else {
                                        format!("{:.2}", gs * 9.80665)
                                    }
                                }),
                            ),
                            ("flightModeFlags" | "stateFlags" | "failsafePhase", "raw") => {
                                let at = slow.iter().position(|n| n == field).unwrap();
                                let modes = field == "flightModeFlags";
                                (
                                    None,
                                    Box::new(move |r| {
                                        let values = &session.mains[r].1;
                                        let high = flags2.filter(|_| inav && modes);
                                        let high = high.map_or(0, |h| (values[h] as u64) << 32);
                                        (values[at] as u64 | high).to_string()
                                    }),
                                )
                            }
                            _ => (
                                plain_head
                                    .strip_suffix(')')
                                    .and_then(|h| h.rsplit_once(" ("))
                                    .map(|(_, u)| u),
                                Box::new(move |r| column(r).0.to_owned()),
                            ),
                        };
                    let want_heading = match suffix {
                        Some(u) => format!("{field} ({u})"),
                        None => field.to_owned(),
                    };
                    assert_eq!(heading[c], want_heading, "{file} column {c}");
                    for r in 0..rows.len() {
                        assert_eq!(column(r).1, want(r), "{file} {want_heading} row {r}");
                    }
                    // A gyro scale of 1 is one degree per second a unit.
                    if unit("--unit-rotation") == "deg/s"
                        && is_gyro(field)
                        && session.headers.get("gyro_scale").map(String::as_str)
                            == Some("0x3f800000")
                    {
                        for r in 0..rows.len() {
                            let (raw, rate) = (number(column(r).0), number(column(r).1));
                            assert!((rate - raw).abs() <= raw.abs() * 1e-6 + 0.01, "{rate}");
                        }
                        gyro_checked += 1;
                    }
                    columns += 1;
                }
                check_gps_units(&plain, &dir, &name, *index, session, unit);
            }
        }
    }
    assert!(columns > 100, "{columns} columns compared");
    assert!(gyro_checked > 0 || corpus().is_none());
}

/// Whether `field` is a gyro rate (Cleanflight logs name them `gyroData`).
fn is_gyro(field: &str) -> bool {
    field.starts_with("gyroADC[") || field.starts_with("gyroData[")
}

/// The unit `unit` gives `field`'s column, `default` for its tool's default.
fn unit_of<'a>(field: &str, unit: impl Fn(&str) -> &'a str) -> &'a str {
    match field {
        "time" => unit("--unit-frame-time"),
        "vbat" | "vbatLatest" => unit("--unit-vbat"),
        "amperage" | "amperageLatest" => unit("--unit-amperage"),
        "BaroAlt" => unit("--unit-height"),
        "flightModeFlags" | "stateFlags" | "failsafePhase" => unit("--unit-flags"),
        f if is_gyro(f) => unit("--unit-rotation"),
        f if f.starts_with("accSmooth[") => unit("--unit-acceleration"),
        _ => "default",
    }
}

/// The GPS CSV of a session exported with units: the time in its unit, the speed converted from
/// cm/s as the tools convert it, every other column as in the plain export.
fn check_gps_units<'a>(
    plain: &Path,
    dir: &Path,
    name: &str,
    index: u64,
    session: &Session,
    unit: impl Fn(&str) -> &'a str,
) {
    let inav = is_inav(session);
    let file = format!("{name}.{index:02}.gps.csv");
    let (Some((plain_heading, plain_rows)), Some((heading, rows))) = (
        cells(&plain.join(&file), inav),
        cells(&dir.join(&file), inav),
    ) else {
        assert!(session.gps.is_empty(), "{file}");
        return;
    };
    assert_eq!(rows.len(), session.gps.len(), "{file}");
    let speed = session.fields["G"]
        .iter()
        .position(|f| f == "GPS_speed")
        .unwrap();
    let time_unit = unit("--unit-frame-time");
    for (c, plain_head) in plain_heading.iter().enumerate() {
        let want_heading = match field_name(plain_head) {
            "time" => format!("time ({time_unit})"),
            "GPS_speed" if unit("--unit-gps-speed") == "kph" => "GPS_speed (km/h)".into(),
            "GPS_speed" if unit("--unit-gps-speed") == "mph" => "GPS_speed (mi/h)".into(),
            _ => plain_head.clone(),
        };
        assert_eq!(heading[c], want_heading, "{file}");
        for (r, row) in rows.iter().enumerate() {
            let want = match field_name(plain_head) {
                "time" => {
                    let us = number(&plain_rows[r][c]);
                    match time_unit {
                        "s" => format!("{:.6}", us / 1e6),
                        "ms" => format!("{:.3}", us / 1e3),
                        _ => plain_rows[r][c].clone(),
                    }
                }
                "GPS_speed" => {
                    let metres = session.gps[r][speed] as f64 / 100.0;
                    match unit("--unit-gps-speed") {
                        "kph" => format!("{:.2}", metres * 60.0 * 60.0 / 1000.0),
                        "mph" => format!("{:.2}", metres * 0.00062137 * 60.0 * 60.0),
                        _ => plain_rows[r][c].clone(),
                    }
                }
                _ => plain_rows[r][c].clone(),
            };
            assert_eq!(row[c], want, "{file} {want_heading} row {r}");
        }
    }
}

/// Every record of `export --jsonl`, in file order: session, type and values.
fn records(path: &Path) -> Vec<(u64, String, Vec<i64>)> {
    let out = bbcheck(&["export", path.to_str().unwrap(), "--jsonl"]);
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let r: Value = serde_json::from_str(line).unwrap();
            let values = r["values"]
                .as_array()
                .map(|v| v.iter().map(|x| x.as_i64().unwrap()).collect())
                .unwrap_or_default();
            let kind = r["type"].as_str().unwrap().to_owned();
            (r["session"].as_u64().unwrap(), kind, values)
        })
        .collect()
}

/// Degrees × 10⁷ as the tools write a coordinate.
fn coordinate(v: i64) -> String {
    let sign = if v < 0 && v / 10_000_000 == 0 {
        "-"
    } else {
        ""
    };
    format!(
        "{sign}{}.{:07}",
        v / 10_000_000,
        v.unsigned_abs() % 10_000_000
    )
}

/// The current meter of the tools with `--merge-gps`, which integrate each main frame's current
/// over the time since the frame before it (without the option: the step before that).
#[derive(Default)]
struct MergedMeter {
    last: i64,
    milliamp_hours: f64,
}

impl MergedMeter {
    fn update(&mut self, milliamps: i32, time: i64, inav: bool) {
        // Betaflight's tool: a 16-bit current and 32-bit times.
        let (milliamps, time) = if inav {
            (milliamps, time)
        } else {
            (i32::from(milliamps as i16), i64::from(time as u32))
        };
        if self.last != 0 {
            let elapsed = if inav {
                (time - self.last) as f64
            } else {
                (time as u32).wrapping_sub(self.last as u32) as f64
            };
            self.milliamp_hours += f64::from(milliamps) * elapsed / 3_600_000_000.0;
        }
        self.last = time;
    }
}

/// The merged rows of one session as the tools build them from the plain export's rows: each
/// main row waits for the frame after it; it is written with the last GPS frame's fields (zeros
/// before one) when a main or slow frame follows, or a GPS frame of another time, or the session
/// ends. Betaflight's tool writes a row at every GPS frame too: the last main frame with the GPS
/// frame's time (the row still waiting, if the times are equal). The current meter is a
/// `MergedMeter`; a session without GPS frame definitions is not merged, and its meter takes each
/// frame's current over the step before, as without the option.
fn merged_rows(
    session: &Session,
    frames: &[&(u64, String, Vec<i64>)],
    (main_rows, gps_rows): (&[Vec<String>], &[Vec<String>]),
    energy_column: Option<usize>,
    meter: &mut MergedMeter,
) -> Vec<String> {
    let inav = is_inav(session);
    let sep = if inav { "," } else { ", " };
    let main = &session.fields["I"];
    let gps = session.fields.get("G").cloned().unwrap_or_default();
    let merges = !gps.is_empty();
    let time = main.iter().position(|f| f == "time").unwrap();
    let gps_time = gps.iter().position(|f| f == "time");
    let amperage = main
        .iter()
        .position(|f| f == if inav { "amperage" } else { "amperageLatest" });
    // Betaflight's ADC conversion below takes the default scale.
    assert!(inav || !session.headers.contains_key("currentMeter"));
    let home_fields = session.fields.get("H");
    let mut gps_cells: Vec<String> = gps
        .iter()
        .filter(|f| *f != "time")
        .map(|f| match f.as_str() {
            "GPS_coord[0]" | "GPS_coord[1]" => "0.0000000".into(),
            "GPS_ground_course" => "0.0".into(),
            "GPS_speed" => "0.00".into(),
            _ => "0".into(),
        })
        .collect();
    let mut home = (0, 0);
    let (mut rows, mut m, mut g) = (Vec::new(), 0, 0);
    let (mut pending, mut last_time, mut row_time) = (false, -1i64, -1i64);
    let mut emit = |m: usize, row_time: i64, gps_cells: &[String], home: (i64, i64), mah: f64| {
        let mut cells = main_rows[m - 1].clone();
        cells[time] = row_time.to_string();
        if let Some(c) = energy_column {
            cells[c] = (mah.round() as i32).to_string();
        }
        if merges {
            cells.extend(gps_cells.iter().cloned());
            if inav {
                cells.extend([coordinate(home.0), coordinate(home.1)]);
            }
        }
        rows.push(cells.join(sep));
    };
    for (_, kind, values) in frames {
        match kind.as_str() {
            "I" | "P" => {
                if pending {
                    emit(m, row_time, &gps_cells, home, meter.milliamp_hours);
                }
                m += 1;
                let previous = last_time;
                last_time = values[time];
                row_time = last_time;
                if let Some(a) = amperage {
                    // INAV: centiamps; Betaflight: an ADC reading, 3.3 V and 400 mV/10 A.
                    let milliamps = if inav {
                        (values[a] * 10) as i32
                    } else {
                        ((values[a] as u16 as i64 * 3300 / 4095) * 10_000 / 400) as i32
                    };
                    let at = if merges { last_time } else { previous };
                    meter.update(milliamps, at, inav);
                }
                pending = true;
                if !merges {
                    emit(m, row_time, &gps_cells, home, meter.milliamp_hours);
                    pending = false;
                }
            }
            "S" if pending => {
                emit(m, row_time, &gps_cells, home, meter.milliamp_hours);
                pending = false;
            }
            "H" => {
                let h = home_fields.unwrap();
                let at = |n: &str| h.iter().position(|f| f == n).unwrap();
                home = (values[at("GPS_home[0]")], values[at("GPS_home[1]")]);
            }
            "G" => {
                let t = values[gps_time.unwrap()];
                if t != last_time && pending {
                    emit(m, row_time, &gps_cells, home, meter.milliamp_hours);
                    pending = false;
                }
                row_time = if t != last_time { t } else { last_time };
                let row = &gps_rows[g];
                let end = row.len() - if inav { 2 } else { 0 };
                gps_cells = row[1..end].to_vec();
                g += 1;
                if !inav {
                    assert!(m > 0, "a GPS frame before the first main frame");
                    emit(m, row_time, &gps_cells, home, meter.milliamp_hours);
                    pending = false;
                }
            }
            _ => {}
        }
    }
    if pending {
        emit(m, row_time, &gps_cells, home, meter.milliamp_hours);
    }
    rows
}

#[test]
fn merge_gps_appends_the_last_gps_frame_to_each_main_row() {
    let logs = demo_and(&[
        "betaflight-4.2.0-fc-blackbox-LOG00037.BFL",
        // Its first session defines GPS frames and has none.
        "betaflight-4.5.3-bucksaw-btfl_005.bbl",
        "inav-9.0.1-inav-toolkit-blackbox_log_2026-02-21.TXT",
    ]);
    let mut duplicated = 0;
    for path in logs {
        let name = stem(&path);
        let (plain, merged) = (TempDir::new("merge-plain"), TempDir::new("merge-merged"));
        export_csv(&path, &plain);
        export_csv_with(&path, &merged, &["--merge-gps"]);
        // No GPS CSV; the GPX track and the events are the plain export's.
        let mut expected = file_names(&plain);
        expected.retain(|f| !f.ends_with(".gps.csv"));
        assert_eq!(file_names(&merged), expected, "{name}");
        for file in expected.iter().filter(|f| !f.ends_with(".csv")) {
            let read = |dir: &Path| std::fs::read(dir.join(file)).unwrap();
            assert!(read(&merged) == read(&plain), "{file}");
        }
        let records = records(&path);
        // The Betaflight tool's current meter runs on from one session to the next.
        let mut meter = MergedMeter::default();
        for (index, session) in jsonl(&path) {
            let inav = is_inav(&session);
            if inav {
                meter = MergedMeter::default();
            }
            let file = format!("{name}.{index:02}.csv");
            let (plain_heading, main_rows) = cells(&plain.join(&file), inav).unwrap();
            let gps_file = plain.join(format!("{name}.{index:02}.gps.csv"));
            let gps_rows = cells(&gps_file, inav).map_or_else(Vec::new, |(_, rows)| rows);
            let sep = if inav { "," } else { ", " };
            let mut heading = plain_heading.join(sep);
            let gps = session.fields.get("G").cloned().unwrap_or_default();
            for field in gps.iter().filter(|f| *f != "time") {
                heading.push_str(sep);
                heading.push_str(field);
                if field == "GPS_speed" {
                    heading.push_str(" (m/s)");
                }
            }
            if inav && !gps.is_empty() {
                heading.push_str(",GPS_home_lat,GPS_home_lon");
            }
            let energy = plain_heading
                .iter()
                .position(|h| h == "energyCumulative (mAh)");
            let frames: Vec<_> = records.iter().filter(|r| r.0 == index).collect();
            let mut want = vec![heading];
            let tables = (main_rows.as_slice(), gps_rows.as_slice());
            want.extend(merged_rows(&session, &frames, tables, energy, &mut meter));
            let text = std::fs::read_to_string(merged.join(&file)).unwrap();
            let got: Vec<&str> = text.lines().collect();
            assert_eq!(got.len(), want.len(), "{file}: rows");
            for (r, (a, b)) in got.iter().zip(&want).enumerate() {
                assert_eq!(a, b, "{file} row {r}");
            }
            duplicated += got.len() - 1 - main_rows.len();
        }
    }
    // Betaflight's tool repeats main frames at GPS times.
    assert!(duplicated > 0);
}

/// Microseconds since 1970 of `YYYY-MM-DDTHH:MM:SS.ffffff` (at least the milliseconds; what
/// follows is ignored), read as UTC.
fn utc_micros(text: &str) -> i64 {
    let int = |range: std::ops::Range<usize>| text[range].parse::<i64>().unwrap();
    let (year, month, day) = (int(0..4), int(5..7), int(8..10));
    // Days since 1970 of a Gregorian date (March-based years).
    let (y, m) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let days =
        365 * y + y.div_euclid(4) - y.div_euclid(100) + y.div_euclid(400) + (153 * m + 2) / 5 + day
            - 719_469;
    let fraction: String = text[20..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let micros = format!("{fraction:0<6}")[..6].parse::<i64>().unwrap();
    ((days * 24 + int(11..13)) * 60 + int(14..16)) * 60_000_000 + int(17..19) * 1_000_000 + micros
}

#[test]
fn datetime_adds_the_utc_time_of_each_row() {
    // `--datetime` writes after each time, in the main and the GPS CSV, the log start plus the
    // time since the session's first row: every row's date and time less its own time is one
    // instant, within a microsecond of `Log start datetime` at the first row.
    let logs = demo_and(&[
        "betaflight-4.5.3-bucksaw-btfl_005.bbl",
        "betaflight-4.2.0-fc-blackbox-LOG00037.BFL",
        "inav-9.0.1-inav-toolkit-blackbox_log_2026-02-21.TXT",
    ]);
    let mut rows_checked = 0;
    for path in logs {
        let name = stem(&path);
        let (plain, dated) = (
            TempDir::new("datetime-plain"),
            TempDir::new("datetime-dated"),
        );
        export_csv(&path, &plain);
        export_csv_with(&path, &dated, &["--datetime", "--unit-frame-time", "ms"]);
        assert_eq!(file_names(&dated), file_names(&plain), "{name}");
        for (index, session) in jsonl(&path) {
            let inav = is_inav(&session);
            // A log without the header counts from 1970.
            let start = session
                .headers
                .get("Log start datetime")
                .map_or(0, |s| utc_micros(s));
            let mut instant = None;
            for suffix in [".csv", ".gps.csv"] {
                let file = format!("{name}.{index:02}{suffix}");
                let (Some((plain_heading, plain_rows)), Some((heading, rows))) = (
                    cells(&plain.join(&file), inav),
                    cells(&dated.join(&file), inav),
                ) else {
                    continue;
                };
                let time = plain_heading.iter().position(|h| h == "time (us)").unwrap();
                let mut want_heading = plain_heading.clone();
                want_heading[time] = "time (ms)".into();
                want_heading.insert(time + 1, "dateTime".into());
                // INAV's tool starts its GPS CSV with `time (us), dateTime,`.
                if inav && suffix == ".gps.csv" {
                    want_heading[time + 1] = " dateTime".into();
                }
                assert_eq!(heading, want_heading, "{file}");
                assert_eq!(rows.len(), plain_rows.len(), "{file}");
                for (row, plain_row) in rows.iter().zip(&plain_rows) {
                    let us: i64 = plain_row[time].trim().parse().unwrap();
                    let mut want = plain_row.clone();
                    want[time] = format!("{:.3}", us as f64 / 1000.0);
                    want.insert(time + 1, row[time + 1].clone());
                    assert_eq!(row, &want, "{file}");
                    let date_time = &row[time + 1];
                    assert!(
                        date_time.ends_with('Z') && date_time.len() == 27,
                        "{date_time}"
                    );
                    let at = utc_micros(date_time) - us;
                    let first = *instant.get_or_insert(at);
                    assert_eq!(at, first, "{file}: {date_time} at {us} µs");
                    rows_checked += 1;
                }
                if suffix == ".csv" && !plain_rows.is_empty() {
                    let first_row: i64 = plain_rows[0][time].trim().parse().unwrap();
                    // INAV's tool reads the start's fraction of a second as a float and cuts it.
                    let off = start - (instant.unwrap() + first_row);
                    assert!(
                        (0..=1).contains(&off),
                        "{file}: {off} µs from the log start"
                    );
                }
            }
        }
    }
    assert!(rows_checked > 1000);
}

#[test]
fn blackbox_decode_options_are_for_the_blackbox_csv_alone() {
    let dir = TempDir::new("decode-options");
    let dataflash = dir.join("flight.bin");
    std::fs::write(&dataflash, bbcheck::testkit::dataflash::flight(7, 2)).unwrap();
    let demo = common::own_corpus().join("generated/demo.bbl");
    let out_dir = dir.join("out");
    for option in [
        &["--unit-vbat", "mV"][..],
        &["--unit-flags", "raw"],
        &["--merge-gps"],
        &["--datetime"],
    ] {
        // A DataFlash CSV has units of its own: a usage error, and nothing written.
        let mut args = vec!["export", dataflash.to_str().unwrap(), "--csv"];
        args.extend_from_slice(&["-o", out_dir.to_str().unwrap()]);
        args.extend_from_slice(option);
        let out = bbcheck(&args);
        assert_eq!(out.status.code(), Some(2), "{option:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(option[0]) && stderr.contains("applies to Blackbox logs"),
            "{stderr}"
        );
        assert!(!out_dir.exists());
        // JSON Lines hold the values as logged.
        let mut args = vec!["export", demo.to_str().unwrap(), "--jsonl"];
        args.extend_from_slice(option);
        let out = bbcheck(&args);
        assert_eq!(out.status.code(), Some(2), "{option:?}");
        assert!(out.stdout.is_empty());
    }
    // The units take the tool's spellings, in any case.
    let out = bbcheck(&[
        "export",
        demo.to_str().unwrap(),
        "--csv",
        "-o",
        out_dir.to_str().unwrap(),
        "--unit-gps-speed",
        "KM/H",
        "--unit-vbat",
        "mv",
        "--unit-height",
        "FT",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let main = read_lines(&out_dir.join("demo.01.csv"));
    assert!(main[0].contains(", vbatLatest (mV), "), "{}", main[0]);
    let gps = read_lines(&out_dir.join("demo.01.gps.csv"));
    assert!(gps[0].contains(", GPS_speed (km/h), "), "{}", gps[0]);
    let out = bbcheck(&[
        "export",
        demo.to_str().unwrap(),
        "--csv",
        "--unit-vbat",
        "mAh",
    ]);
    assert_eq!(out.status.code(), Some(2));
}
