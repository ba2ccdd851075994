//! The files the reference C decoder (`blackbox_decode` of blackbox-tools, default options) writes
//! for one session: `<stem>.NN.csv`, `<stem>.NN.gps.csv`, `<stem>.NN.gps.gpx` and
//! `<stem>.NN.event`, byte for byte.
//!
//! The decoder exists in two flavours that format differently: Betaflight's (also used for
//! Cleanflight and unknown firmware) and INAV's. [`Flavour::of`] picks the one for the log's
//! firmware. Everything here formats into a caller's buffer; nothing allocates per frame.
//!
//! Some state of the C decoder lives for the whole file rather than for one session (the
//! integrated current meter, the log start date, the firmware version, which slow fields are
//! flags, INAV's overlay columns); [`ReferenceCsv`] carries it the same way.

use crate::blackbox::Session;
use crate::blackbox::event::{AdjustmentValue, Event};
use crate::blackbox::frame::FrameKind;
use crate::blackbox::header::{Firmware, Header};
use crate::blackbox::sink::Frame;
use crate::decimal::{NUMBER_ROOM, put_int, put_number, write_number};
use std::io::Write;

/// Which reference decoder's formatting applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// betaflight/blackbox-tools (Betaflight, Cleanflight and unknown firmware).
    Betaflight,
    /// iNavFlight/blackbox-tools.
    Inav,
}

impl Flavour {
    /// The flavour for logs of `firmware`.
    pub fn of(firmware: Firmware) -> Flavour {
        match firmware {
            Firmware::Inav => Flavour::Inav,
            _ => Flavour::Betaflight,
        }
    }
}

/// Betaflight's flight-mode flag names (the tool prints the first ten bits only).
const BF_FLIGHT_MODES: [&str; 10] = [
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

/// Betaflight's state flag names.
const BF_STATES: [&str; 5] = [
    "GPS_FIX_HOME",
    "GPS_FIX",
    "CALIBRATE_MAG",
    "SMALL_ANGLE",
    "FIXED_WING",
];

/// Betaflight's failsafe phase names. The tool's table lacks a comma after `LANDED`, so phase 3
/// prints as the two names run together, and it knows four phases.
const BF_FAILSAFE_PHASES: [&str; 4] = [
    "IDLE",
    "RX_LOSS_DETECTED",
    "LANDING",
    "LANDEDFAILSAFE_RX_LOSS_MONITORING",
];

/// INAV's mode names (boxId_e) for INAV 8.0 (from May 2024) and later.
const INAV_FLIGHT_MODES: [&str; 60] = [
    "ARM",
    "ANGLE",
    "HORIZON",
    "NAVALTHOLD",
    "HEADINGHOLD",
    "HEADFREE",
    "HEADADJ",
    "CAMSTAB",
    "NAVRTH",
    "NAVPOSHOLD",
    "MANUAL",
    "BEEPERON",
    "LEDLOW",
    "LIGHTS",
    "NAVLAUNCH",
    "OSD",
    "TELEMETRY",
    "BLACKBOX",
    "FAILSAFE",
    "NAVWP",
    "AIRMODE",
    "HOMERESET",
    "GCSNAV",
    "**REMOVED**",
    "SURFACE",
    "FLAPERON",
    "TURNASSIST",
    "AUTOTRIM",
    "AUTOTUNE",
    "CAMERA1",
    "CAMERA2",
    "CAMERA3",
    "OSDALT1",
    "OSDALT2",
    "OSDALT3",
    "NAVCOURSEHOLD",
    "BRAKING",
    "USER1",
    "USER2",
    "FPVANGLEMIX",
    "LOITERDIRCHN",
    "MSPRCOVERRIDE",
    "PREARM",
    "TURTLE",
    "NAVCRUISE",
    "AUTOLEVEL",
    "PLANWPMISSION",
    "SOARING",
    "USER3",
    "USER4",
    "CHANGEMISSION",
    "BEEPERMUTE",
    "MULTIFUNCTION",
    "MIXERPROFILE",
    "MIXERTRANSITION",
    "ANGLEHOLD",
    "GIMBALTLOCK",
    "GIMBALRLOCK",
    "GIMBALCENTER",
    "GIMBALHTRK",
];

/// INAV's mode names before INAV 8: the first 56, with KILLSWITCH where INAV 8 retired bit 23.
const INAV_LEGACY_FLIGHT_MODES: [&str; 56] = {
    let mut names = [""; 56];
    let mut i = 0;
    while i < names.len() {
        names[i] = INAV_FLIGHT_MODES[i];
        i += 1;
    }
    names[23] = "KILLSWITCH";
    names
};

/// INAV's state flag names (stateFlags_t).
const INAV_STATES: [&str; 29] = [
    "GPS_FIX_HOME",
    "GPS_FIX",
    "CALIBRATE_MAG",
    "SMALL_ANGLE",
    "FIXED_WING_LEGACY",
    "ANTI_WINDUP",
    "FLAPERON_AVAILABLE",
    "NAV_MOTOR_STOP_OR_IDLE",
    "COMPASS_CALIBRATED",
    "ACCELEROMETER_CALIBRATED",
    "PWM_DRIVER_AVAILABLE",
    "NAV_CRUISE_BRAKING",
    "NAV_CRUISE_BRAKING_BOOST",
    "NAV_CRUISE_BRAKING_LOCKED",
    "NAV_EXTRA_ARMING_SAFETY_BYPASSED",
    "AIRMODE_ACTIVE",
    "ESC_SENSOR_ENABLED",
    "AIRPLANE",
    "MULTIROTOR",
    "ROVER",
    "BOAT",
    "ALTITUDE_CONTROL",
    "MOVE_FORWARD_ONLY",
    "SET_REVERSIBLE_MOTORS_FORWARD",
    "FW_HEADING_USE_YAW",
    "ANTI_WINDUP_DEACTIVATED",
    "LANDING_DETECTED",
    "IN_FLIGHT_EMERG_REARM",
    "TAILSITTER",
];

/// INAV's failsafe phase names.
const INAV_FAILSAFE_PHASES: [&str; 8] = [
    "IDLE",
    "RX_LOSS_DETECTED",
    "RX_LOSS_IDLE",
    "RETURN_TO_HOME",
    "LANDING",
    "LANDED",
    "RX_LOSS_MONITORING",
    "RX_LOSS_RECOVERED",
];

/// In-flight adjustment function names, as both tools print them in event files.
const ADJUSTMENT_FUNCTIONS: [&str; 21] = [
    "NONE",
    "RC_RATE",
    "RC_EXPO",
    "THROTTLE_EXPO",
    "PITCH_ROLL_RATE",
    "YAW_RATE",
    "PITCH_ROLL_P",
    "PITCH_ROLL_I",
    "PITCH_ROLL_D",
    "YAW_P",
    "YAW_I",
    "YAW_D",
    "RATE_PROFILE",
    "PITCH_RATE",
    "ROLL_RATE",
    "PITCH_P",
    "PITCH_I",
    "PITCH_D",
    "ROLL_P",
    "ROLL_I",
    "ROLL_D",
];

/// GPS points with fewer satellites than this stay out of the GPX track.
pub const MIN_GPX_SATELLITES: i64 = 5;

/// The start of a GPX file as Betaflight's tool writes it, before its first point.
const GPX_PREAMBLE: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
<gpx creator=\"Blackbox flight data recorder\" version=\"1.1\" xmlns=\"http://www.topografix.com/GPX/1/1\" \
xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
xsi:schemaLocation=\"http://www.topografix.com/GPX/1/1 http://www.topografix.com/GPX/1/1/gpx.xsd\">\n\
<metadata><name>Blackbox flight log</name></metadata>\n\
<trk><name>Blackbox flight log</name><trkseg>\n";

/// The same as INAV's tool (version 9.0.0) writes it: its creator line names the tool, and its
/// metadata links to it.
const INAV_GPX_PREAMBLE: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
<gpx creator=\"blackbox_decode v9.0.0 INAV 1918a75\" version=\"1.1\" xmlns=\"http://www.topografix.com/GPX/1/1\" \
xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
xsi:schemaLocation=\"http://www.topografix.com/GPX/1/1 http://www.topografix.com/GPX/1/1/gpx.xsd\">\n\
<metadata><name>Blackbox flight log</name>\n \
<link href=\"https://github.com/iNavFlight/blackbox-tools\">\n \
<text>INAV Blackbox Tools</text>\n \
</link>\n\
</metadata>\n\
<trk><name>Blackbox flight log</name><trkseg>\n";

/// The end of a GPX file, after its last point.
pub const GPX_TRAILER: &str = "</trkseg></trk>\n</gpx>";

/// How a main-frame column is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MainColumn {
    /// `%3d` of the 32-bit value.
    Signed,
    /// `%3u` of the 32-bit value.
    Unsigned,
    /// The 64-bit monotonic time in µs.
    Time,
    /// Battery voltage in volts.
    Vbat,
    /// Current in amps.
    Amperage,
    /// Barometer altitude in cm, as stored.
    BaroAlt,
}

impl MainColumn {
    /// The unit the C decoder appends to the column name.
    fn unit(self) -> Option<&'static str> {
        match self {
            MainColumn::Time => Some("us"),
            MainColumn::Vbat => Some("V"),
            MainColumn::Amperage => Some("A"),
            MainColumn::BaroAlt => Some("cm"),
            MainColumn::Signed | MainColumn::Unsigned => None,
        }
    }
}

/// How a GPS column is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GpsColumn {
    Integer,
    /// Degrees × 10⁷, printed as degrees with seven decimals.
    Coordinate,
    /// Degrees × 10, printed with one decimal.
    Course,
    /// m/s × 100, printed with two decimals.
    Speed,
}

/// How INAV's tool reads the battery fields: already in centi-units (INAV 2.0 and later), or as
/// ADC readings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InavBattery {
    Centi,
    Adc,
}

/// Which mode-name table INAV's tool applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InavModes {
    Current,
    Legacy,
    /// The header is not Cleanflight-type: the tool prints nothing for the flags.
    None,
}

/// The current meter of the tools' battery.c: integrates milliamps over the time stamps it is
/// given, in milliamp-hours. It is never reset: a session's first frames carry on from the last
/// session's.
#[derive(Debug, Clone, Copy, Default)]
struct CurrentMeter {
    last_time: u64,
    energy_mah: f64,
}

impl CurrentMeter {
    /// Add `milliamps` over the time since the last update. The tools pass the previous main
    /// frame's time (−1 before a session's first one), and an unset last time means nothing is
    /// added. Betaflight's tools take the current as a 16-bit and the time as a 32-bit number
    /// (both wrap); INAV's as they come.
    fn update(&mut self, milliamps: i32, time: u64, flavour: Flavour) {
        let (milliamps, time) = match flavour {
            Flavour::Betaflight => (i32::from(milliamps as i16), u64::from(time as u32)),
            Flavour::Inav => (milliamps, time),
        };
        if self.last_time != 0 {
            let elapsed = match flavour {
                Flavour::Betaflight => (time as u32).wrapping_sub(self.last_time as u32) as f64,
                Flavour::Inav => time.wrapping_sub(self.last_time) as f64,
            };
            self.energy_mah += f64::from(milliamps) * elapsed / 3_600_000_000.0;
        }
        self.last_time = time;
    }

    /// `(int) round(energy)` as x86-64 computes it (out of range gives `INT_MIN`).
    fn rounded(&self) -> i32 {
        let r = self.energy_mah.round();
        if r.is_nan() || r < f64::from(i32::MIN) || r > f64::from(i32::MAX) {
            i32::MIN
        } else {
            r as i32
        }
    }
}

/// A calendar date and time of day as the tools read a `Log start datetime` header.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct StartTime {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
}

impl StartTime {
    /// Read the leading integers of `YYYY-MM-DDTHH:MM:SS...`, as `sscanf("%d-%d-%dT%d:%d:%d")`
    /// does; fields it cannot read stay zero.
    fn parse(text: &str) -> StartTime {
        const LIMIT: i64 = 1 << 31;
        let mut parts = [0i64; 6];
        let mut rest = text;
        let separators = ['-', '-', 'T', ':', ':'];
        for (i, part) in parts.iter_mut().enumerate() {
            let trimmed = rest.trim_start();
            let digits = trimmed
                .char_indices()
                .take_while(|&(j, c)| c.is_ascii_digit() || (j == 0 && (c == '-' || c == '+')))
                .count();
            let Ok(value) = trimmed[..digits].parse::<i64>() else {
                break;
            };
            // Far beyond any calendar use; keeps the date arithmetic inside 64 bits.
            *part = value.clamp(-LIMIT, LIMIT);
            rest = &trimmed[digits..];
            match separators.get(i) {
                Some(&sep) if rest.starts_with(sep) => rest = &rest[1..],
                Some(_) => break,
                None => {}
            }
        }
        let [year, month, day, hour, minute, second] = parts;
        StartTime {
            year,
            month,
            day,
            hour,
            minute,
            second,
        }
    }

    /// Seconds since 1970 of this time in UTC, normalising out-of-range fields as `mktime` does.
    fn unix_seconds(&self) -> i64 {
        let months = self.month - 1;
        let year = self.year + months.div_euclid(12);
        let month = months.rem_euclid(12) + 1;
        let days = days_from_civil(year, month, 1) + self.day - 1;
        days * 86_400 + self.hour * 3600 + self.minute * 60 + self.second
    }
}

/// INAV's tool (`get_utc_time`): `Log start datetime` in microseconds since 1970, read at fixed
/// places: the year's last two digits at byte 2 (as 20xx), month, day, hour and minute after it,
/// seconds with their fraction at byte 17, then the first signed offset after them, in hours and
/// (after a colon) minutes, taken off. The fraction's microseconds are truncated from its binary
/// value, as C does.
fn inav_log_start(text: &str) -> i64 {
    const LIMIT: i64 = 1 << 31;
    let from = |at: usize| text.get(at..).unwrap_or("");
    let int = |at: usize| leading_int(from(at)).clamp(-LIMIT, LIMIT);
    let seconds_text = from(17);
    let number_len = seconds_text
        .char_indices()
        .take_while(|&(i, c)| c.is_ascii_digit() || c == '.' || (i == 0 && (c == '-' || c == '+')))
        .count();
    let seconds: f64 = seconds_text[..number_len].parse().unwrap_or(0.0);
    let seconds = seconds.clamp(-LIMIT as f64, LIMIT as f64);
    let rest = &seconds_text[number_len..];
    let offset_minutes = rest.find(['+', '-']).map_or(0, |at| {
        let zone = &rest[at..];
        let hours = leading_int(zone).clamp(-LIMIT, LIMIT);
        let digits = zone[1..].chars().take_while(char::is_ascii_digit).count();
        let minutes = match zone[1 + digits..].strip_prefix(':') {
            Some(m) => leading_int(m).clamp(-LIMIT, LIMIT),
            None => 0,
        };
        hours * 60 + minutes
    });
    let time = StartTime {
        year: 2000 + int(2),
        month: int(5),
        day: int(8),
        hour: int(11),
        minute: int(14),
        second: seconds.trunc() as i64,
    };
    let micros = ((seconds - seconds.trunc()) * 1e6) as i64;
    (time.unix_seconds() - offset_minutes * 60) * 1_000_000 + micros
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian (year, month, day) of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The leading integer of `text` as C's `atoi`/`strtol` read it (0 when there is none).
fn leading_int(text: &str) -> i64 {
    let t = text.trim_start();
    let len = t
        .char_indices()
        .take_while(|&(i, c)| c.is_ascii_digit() || (i == 0 && (c == '-' || c == '+')))
        .count();
    t[..len].parse().unwrap_or(0)
}

/// What the C decoder keeps from one session to the next in the same file.
#[derive(Debug, Clone, Default)]
struct Carry {
    meter: CurrentMeter,
    /// Betaflight's tool: `Log start datetime` as seconds since 1970 (0 until a header gives it).
    date_time: i64,
    /// Betaflight's tool: the version word of `Firmware revision` (empty when not Betaflight).
    fc_version: String,
    /// INAV's tool: `Log start datetime` in microseconds since 1970 (see [`inav_log_start`]).
    inav_start: i64,
    /// Indices of flightModeFlags, stateFlags and failsafePhase among the slow fields; never
    /// reset, and 0 before any header names them.
    slow_flags: [usize; 3],
}

/// The column layout of one session.
#[derive(Debug, Clone)]
struct Layout {
    flavour: Flavour,
    main_names: Vec<String>,
    main: Vec<MainColumn>,
    amperage: Option<usize>,
    /// Between two columns: `, ` (Betaflight's tool) or `,` (INAV's).
    separator: &'static [u8],
    slow_names: Vec<String>,
    /// INAV's tool: the slow field holding the flight modes past the first 32
    /// (`flightModeFlags2`), which it writes as part of `flightModeFlags`.
    slow_modes_high: Option<usize>,
    slow_signed: Vec<bool>,
    gps_names: Vec<String>,
    gps: Vec<GpsColumn>,
    gps_time: Option<usize>,
    gps_speed: Option<usize>,
    gps_lat: Option<usize>,
    gps_lon: Option<usize>,
    gps_altitude: Option<usize>,
    gps_sats: Option<usize>,
    home_lat: Option<usize>,
    home_lon: Option<usize>,
    /// Milliamps from an amperage ADC reading: the header's `currentMeter` offset and scale.
    current_offset: i64,
    current_scale: i64,
    vbat_scale: i64,
    /// Betaflight 4.3.0 and later log the battery voltage in hundredths of a volt (before, in
    /// tenths): the tools read the version from the firmware revision.
    vbat_centivolts: bool,
    inav_battery: InavBattery,
    inav_modes: InavModes,
    inav_states: bool,
    /// Betaflight's tool: GPS altitude unit, 0.01 m before Betaflight 4 and 0.1 m since.
    altitude_factor: f32,
}

/// The last index of any of `names` in `fields`.
fn last_index(fields: &[String], names: &[&str]) -> Option<usize> {
    fields.iter().rposition(|f| names.contains(&f.as_str()))
}

/// INAV's version numbers from `INAV x.y.z ...`.
fn inav_version(revision: &str) -> (i64, i64, i64) {
    let rest = revision.get(5..).unwrap_or("");
    let mut parts = rest.splitn(3, '.');
    let major = leading_int(parts.next().unwrap_or(""));
    let minor = leading_int(parts.next().unwrap_or(""));
    let micro = leading_int(parts.next().unwrap_or(""));
    (major, minor, micro)
}

/// Whether `version` is at least `target` as the tools' semver.c compares them: `+metadata` and
/// then `-prerelease` cut off, up to four dot-separated integers (major, minor, patch counted),
/// and a prerelease before its release; a version that does not parse (or none) is not.
fn semver_at_least(version: &str, target: (i64, i64, i64)) -> bool {
    let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+');
    if version.is_empty() || version.len() > 255 || !version.chars().all(valid) {
        return false;
    }
    let version = version.split('+').next().unwrap_or("");
    let (numbers, prerelease) = match version.split_once('-') {
        Some((numbers, pre)) => (numbers, Some(pre)),
        None => (version, None),
    };
    let mut parts = [0i64; 3];
    for (i, slice) in numbers.split('.').take(4).enumerate() {
        let digits = slice.strip_prefix(['-', '+']).unwrap_or(slice);
        if !digits.chars().all(|c| c.is_ascii_digit()) {
            return false;
        }
        let value = slice.parse::<i64>().unwrap_or(0);
        if let Some(part) = parts.get_mut(i) {
            *part = value;
        }
    }
    let parts = (parts[0], parts[1], parts[2]);
    parts > target || parts == target && prerelease.is_none()
}

impl Layout {
    fn new(header: &Header, carry: &mut Carry) -> Layout {
        let flavour = Flavour::of(header.firmware);
        let names = |kind| header.def(kind).map_or_else(Vec::new, |d| d.names.clone());
        let main_names = names(FrameKind::I);
        let slow_names = names(FrameKind::S);
        let gps_names = names(FrameKind::G);
        let home_names = names(FrameKind::H);
        let slow_signed = header
            .def(FrameKind::S)
            .map_or_else(Vec::new, |d| d.fields.iter().map(|f| f.signed).collect());
        let main_signed: Vec<bool> = header
            .def(FrameKind::I)
            .map_or_else(Vec::new, |d| d.fields.iter().map(|f| f.signed).collect());
        let inav = flavour == Flavour::Inav;
        let vbat = if inav {
            last_index(&main_names, &["vbatLatest", "vbat"])
        } else {
            last_index(&main_names, &["vbatLatest"])
        };
        let amperage = if inav {
            last_index(&main_names, &["amperageLatest", "amperage"])
        } else {
            last_index(&main_names, &["amperageLatest"])
        };
        let baro = last_index(&main_names, &["BaroAlt"]);
        let time = last_index(&main_names, &["time"]);
        let main = (0..main_names.len())
            .map(|i| {
                if Some(i) == time {
                    MainColumn::Time
                } else if Some(i) == vbat {
                    MainColumn::Vbat
                } else if Some(i) == amperage {
                    MainColumn::Amperage
                } else if Some(i) == baro {
                    MainColumn::BaroAlt
                } else if main_signed.get(i).copied().unwrap_or(false) {
                    MainColumn::Signed
                } else {
                    MainColumn::Unsigned
                }
            })
            .collect();
        for (slot, name) in ["flightModeFlags", "stateFlags", "failsafePhase"]
            .iter()
            .enumerate()
        {
            if let Some(i) = last_index(&slow_names, &[name]) {
                carry.slow_flags[slot] = i;
            }
        }
        let gps = gps_names
            .iter()
            .map(|n| match n.as_str() {
                "GPS_coord[0]" | "GPS_coord[1]" => GpsColumn::Coordinate,
                "GPS_speed" => GpsColumn::Speed,
                "GPS_ground_course" => GpsColumn::Course,
                _ => GpsColumn::Integer,
            })
            .collect();
        let setting = |name: &str, index: usize| {
            header
                .get(name)
                .and_then(|v| v.split(',').nth(index))
                .map(leading_int)
        };
        let revision = header.firmware_revision.as_deref().unwrap_or("");
        let firmware_date = header.get("Firmware date").unwrap_or("");
        let date_month = firmware_date.get(..3).unwrap_or("");
        let date_day = leading_int(firmware_date.get(4..).unwrap_or(""));
        let date_year = leading_int(firmware_date.get(7..).unwrap_or(""));
        let (major, minor, micro) = inav_version(revision);
        let inav_battery = if major > 2
            || (major == 2 && (minor != 0 || micro != 0))
            || (major == 2
                && date_year == 2018
                && !(matches!(date_month, "Apr" | "May" | "Jun")
                    || (date_month == "Jul" && date_day < 8)))
        {
            InavBattery::Centi
        } else {
            InavBattery::Adc
        };
        let cleanflight_type = header.get("Firmware type") == Some("Cleanflight");
        let current_modes = major > 8
            || (major == 8 && (minor != 0 || micro != 0))
            || (major == 8
                && date_year == 2024
                && !(matches!(date_month, "Jan" | "Feb" | "Mar" | "Apr")
                    || (date_month == "May" && date_day < 23)));
        let inav_modes = match (cleanflight_type, current_modes) {
            (false, _) => InavModes::None,
            (true, true) => InavModes::Current,
            (true, false) => InavModes::Legacy,
        };
        if let Some(v) = header.get("Log start datetime") {
            carry.date_time = StartTime::parse(v).unix_seconds();
            carry.inav_start = inav_log_start(v);
        }
        if header.get("Firmware revision").is_some() {
            let mut words = revision.split(' ').filter(|w| !w.is_empty());
            carry.fc_version = match (words.next(), words.next()) {
                (Some("Betaflight"), Some(version)) => version.to_owned(),
                _ => String::new(),
            };
        }
        let major_version = if carry.fc_version.is_empty() {
            -1
        } else {
            leading_int(carry.fc_version.split('.').next().unwrap_or(""))
        };
        Layout {
            flavour,
            main,
            amperage,
            separator: if inav { b"," } else { b", " },
            slow_modes_high: last_index(&slow_names, &["flightModeFlags2"]).filter(|_| inav),
            main_names,
            slow_signed,
            slow_names,
            gps,
            gps_time: last_index(&gps_names, &["time"]),
            gps_speed: last_index(&gps_names, &["GPS_speed"]),
            home_lat: last_index(&home_names, &["GPS_home[0]"]),
            home_lon: last_index(&home_names, &["GPS_home[1]"]),
            gps_lat: last_index(&gps_names, &["GPS_coord[0]"]),
            gps_lon: last_index(&gps_names, &["GPS_coord[1]"]),
            gps_altitude: last_index(&gps_names, &["GPS_altitude"]),
            gps_sats: last_index(&gps_names, &["GPS_numSat"]),
            gps_names,
            current_offset: setting("currentMeter", 0).unwrap_or(0),
            current_scale: setting("currentMeter", 1).unwrap_or(400),
            vbat_scale: setting("vbatscale", 0).unwrap_or(110),
            vbat_centivolts: semver_at_least(&carry.fc_version, (4, 3, 0)),
            inav_battery,
            inav_modes,
            inav_states: cleanflight_type,
            altitude_factor: if major_version < 4 { 0.01 } else { 0.1 },
        }
    }

    /// Milliamps from an amperage ADC reading, as both tools convert it.
    fn adc_milliamps(&self, adc: u16) -> i32 {
        let millivolts = (i64::from(adc) * 33 * 100 / 4095) as i32;
        let millivolts = i64::from(millivolts) - i64::from(self.current_offset as i16);
        let scale = i64::from(self.current_scale as i16);
        if scale == 0 {
            return 0;
        }
        (millivolts * 10_000 / scale) as i32
    }

    /// The current a main frame's amperage field stands for, in milliamps.
    fn milliamps(&self, value: i64) -> i32 {
        match (self.flavour, self.inav_battery) {
            (Flavour::Inav, InavBattery::Centi) => value.wrapping_mul(10) as i32,
            _ => self.adc_milliamps(value as u16),
        }
    }
}

/// Write `names` separated by `|` for the set bits of `flags`, or `0` when none is set.
fn write_flags(out: &mut Vec<u8>, flags: u64, names: &[&str]) {
    let mut any = false;
    for (i, name) in names.iter().enumerate() {
        if flags & (1 << i) != 0 {
            if any {
                out.push(b'|');
            }
            out.extend_from_slice(name.as_bytes());
            any = true;
        }
    }
    if !any {
        out.push(b'0');
    }
}

/// Write the name of an enumerated value, or its number when the table has none.
fn write_enum(out: &mut Vec<u8>, value: u8, names: &[&str]) {
    match names.get(usize::from(value)) {
        Some(name) => out.extend_from_slice(name.as_bytes()),
        None => {
            let _ = write!(out, "{value}");
        }
    }
}

/// Write an integer.
fn write_int(out: &mut Vec<u8>, value: impl Into<i128>) {
    let value = value.into();
    // Every value written is within 64 bits either way.
    write_number(out, value < 0, value.unsigned_abs() as u64, 0, b' ');
}

/// Write `value` with leading zeros to `width` digits.
fn write_padded_zeros(out: &mut Vec<u8>, value: u64, width: usize) {
    write_number(out, false, value, width, b'0');
}

/// Bytes [`put_decimal`] may write from its position.
const DECIMAL_ROOM: usize = 2 * NUMBER_ROOM + 2;

/// Write `value / 10^decimals` with exactly `decimals` (at most 8) decimals into `buf` at `at`,
/// as `{:.decimals$}` writes the `f64` nearest that quotient (exact for any 32-bit value, as the
/// quotient's decimals are all there are); returns the end. `buf` must hold [`DECIMAL_ROOM`]
/// bytes from `at`.
#[inline(always)]
fn put_decimal(buf: &mut [u8], mut at: usize, value: i64, decimals: u32) -> usize {
    let scale = 10u64.pow(decimals);
    if value < 0 {
        buf[at] = b'-';
        at += 1;
    }
    let magnitude = value.unsigned_abs();
    let at = put_number(buf, at, false, magnitude / scale, 0, b' ');
    buf[at] = b'.';
    put_number(
        buf,
        at + 1,
        false,
        magnitude % scale,
        decimals as usize,
        b'0',
    )
}

/// Write a fixed-point value `value / scale` as `int.frac` the way the tools do for GPS speed and
/// course: the integer part by truncating division (so a small negative value loses its sign),
/// the fraction from the absolute value.
fn write_fixed(out: &mut Vec<u8>, value: i64, scale: i64, digits: usize) {
    write_int(out, value / scale);
    out.push(b'.');
    write_padded_zeros(out, value.unsigned_abs() % scale.unsigned_abs(), digits);
}

/// Write degrees × 10⁷ as degrees with seven decimals.
fn write_coordinate(out: &mut Vec<u8>, value: i64) {
    let degrees = value / 10_000_000;
    if value < 0 && degrees == 0 {
        out.push(b'-');
    }
    write_int(out, degrees as i32);
    out.push(b'.');
    write_padded_zeros(out, value.unsigned_abs() % 10_000_000, 7);
}

/// C's `%g` (six significant digits, trailing zeros dropped).
fn write_general(out: &mut Vec<u8>, value: f64) {
    if value.is_nan() {
        out.extend_from_slice(if value.is_sign_negative() {
            b"-nan"
        } else {
            b"nan"
        });
        return;
    }
    if value.is_infinite() {
        out.extend_from_slice(if value < 0.0 { b"-inf" } else { b"inf" });
        return;
    }
    if value == 0.0 {
        out.extend_from_slice(if value.is_sign_negative() {
            b"-0"
        } else {
            b"0"
        });
        return;
    }
    let scientific = format!("{value:.5e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s.to_owned()
        }
    };
    if (-4..6).contains(&exponent) {
        let decimals = (5 - exponent) as usize;
        out.extend_from_slice(trim(&format!("{value:.decimals$}")).as_bytes());
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        let _ = write!(out, "{}e{sign}{:02}", trim(mantissa), exponent.abs());
    }
}

/// The session being written and what carries over to the next one.
#[derive(Debug, Clone, Default)]
pub struct ReferenceCsv {
    carry: Carry,
    layout: Option<Layout>,
    /// The previous main frame's time in this session (−1 before the first).
    last_frame_time: i64,
    /// The 2³² multiples the 32-bit clock has wrapped by, added to event times.
    rollover: i64,
    slow: Vec<i64>,
    /// The slow fields' part of a main row, and whether `slow` changed since it was written.
    slow_text: Vec<u8>,
    slow_text_stale: bool,
    /// Room for one row's main columns, reused.
    cells: Vec<u8>,
    /// INAV's tool: the home position of the session's last H frame (`GPS_home[0]`, `GPS_home[1]`).
    home: Option<(i64, i64)>,
    /// INAV's tool: the log start less the session's first time written in a CSV file, from which
    /// GPX times count.
    gps_start: Option<i64>,
}

impl ReferenceCsv {
    /// A writer for the sessions of one file, in file order.
    pub fn new() -> ReferenceCsv {
        ReferenceCsv::default()
    }

    /// Start `session` of `file`. Returns whether the C decoder writes a CSV header line for it:
    /// when the main frames are defined and the session's bytes after its header hold a frame
    /// type byte, where the decoder announces the layout.
    pub fn start_session(&mut self, session: &Session, file: &[u8]) -> bool {
        let (header, bounds) = (&session.header, &session.bounds);
        let data_start = (header.data_start as usize).clamp(bounds.start, bounds.end);
        let data = &file[data_start..bounds.end];
        let layout = Layout::new(header, &mut self.carry);
        // INAV's tool starts each session's current meter from nothing; Betaflight's carries on.
        if layout.flavour == Flavour::Inav {
            self.carry.meter = CurrentMeter::default();
        }
        self.home = None;
        self.gps_start = None;
        self.slow = vec![0; layout.slow_names.len()];
        self.slow_text_stale = true;
        // The main columns and energyCumulative.
        self.cells = vec![0; (layout.main.len() + 1) * (2 + DECIMAL_ROOM)];
        self.last_frame_time = -1;
        self.rollover = 0;
        let has_main = !layout.main_names.is_empty();
        self.layout = Some(layout);
        has_main && data.iter().any(|&b| FrameKind::from_byte(b).is_some())
    }

    fn layout(&self) -> Option<&Layout> {
        self.layout.as_ref()
    }

    /// Whether `index` of the slow fields is printed as flags, and as which.
    fn slow_flag(&self, index: usize) -> Option<usize> {
        self.carry.slow_flags.iter().position(|&i| i == index)
    }

    /// The CSV header line (with its line feed).
    pub fn write_header(&self, out: &mut Vec<u8>) {
        let Some(layout) = self.layout() else {
            return;
        };
        let sep = layout.separator;
        for (i, (name, column)) in layout.main_names.iter().zip(&layout.main).enumerate() {
            if i > 0 {
                out.extend_from_slice(sep);
            }
            out.extend_from_slice(name.as_bytes());
            if let Some(unit) = column.unit() {
                let _ = write!(out, " ({unit})");
            }
        }
        if layout.amperage.is_some() {
            out.extend_from_slice(sep);
            out.extend_from_slice(b"energyCumulative (mAh)");
        }
        for (i, name) in layout.slow_names.iter().enumerate() {
            if Some(i) == layout.slow_modes_high {
                continue;
            }
            out.extend_from_slice(sep);
            out.extend_from_slice(name.as_bytes());
            if self.slow_flag(i).is_some() {
                out.extend_from_slice(b" (flags)");
            }
        }
        out.push(b'\n');
    }

    /// Keep the values of an accepted S frame for the main rows that follow.
    pub fn slow_frame(&mut self, frame: &Frame<'_>) {
        let n = self.slow.len().min(frame.values.len());
        self.slow[..n].copy_from_slice(&frame.values[..n]);
        self.slow_text_stale = true;
    }

    /// Note the clock wrap a frame's 64-bit time shows.
    fn note_time(&mut self, time: u64) {
        self.rollover = (time & !0xFFFF_FFFF) as i64;
    }

    /// Note a time written in a CSV file: INAV's tool counts GPX times from the session's first.
    fn note_time_written(&mut self, time: i64) {
        if self.gps_start.is_none() {
            self.gps_start = Some(self.carry.inav_start.wrapping_sub(time));
        }
    }

    /// One CSV row (with its line feed) for an accepted I or P frame.
    pub fn write_main_row(&mut self, out: &mut Vec<u8>, frame: &Frame<'_>) {
        let Some(layout) = self.layout.as_ref() else {
            return;
        };
        let time = frame.time.map(|(_, t)| t);
        if let Some(i) = layout.amperage
            && let Some(&v) = frame.values.get(i)
        {
            let milliamps = layout.milliamps(v);
            self.carry
                .meter
                .update(milliamps, self.last_frame_time as u64, layout.flavour);
        }
        if let Some(t) = time {
            self.last_frame_time = t as i64;
            self.note_time(t);
            self.note_time_written(t as i64);
        }
        let Some(layout) = self.layout.as_ref() else {
            return;
        };
        // Each column is written with the separator before it into `cells`, which has room for
        // the widest value of every column and energyCumulative; the first separator is left out
        // of the row.
        let sep = layout.separator;
        let cells = self.cells.as_mut_slice();
        let mut at = 0;
        for (&column, &v) in layout.main.iter().zip(frame.values) {
            cells[at..at + sep.len()].copy_from_slice(sep);
            at += sep.len();
            at = match column {
                // INAV's tool writes the 64-bit value as it is, unpadded.
                MainColumn::Signed | MainColumn::Unsigned if layout.flavour == Flavour::Inav => {
                    put_int(cells, at, v, 0)
                }
                MainColumn::Signed => put_int(cells, at, i64::from(v as i32), 3),
                MainColumn::Unsigned => put_int(cells, at, i64::from(v as u32), 3),
                MainColumn::Time => put_int(cells, at, time.map_or(v, |t| t as i64), 0),
                MainColumn::BaroAlt => put_int(cells, at, v, 0),
                MainColumn::Vbat => match layout.flavour {
                    Flavour::Betaflight if layout.vbat_centivolts => put_decimal(cells, at, v, 2),
                    Flavour::Betaflight => put_decimal(cells, at, v, 1),
                    Flavour::Inav => {
                        let millivolts = match layout.inav_battery {
                            InavBattery::Centi => i64::from(v as u16) * 10,
                            InavBattery::Adc => {
                                let mv = i64::from(v as u16) * 33 * 10 * layout.vbat_scale / 0xFFF;
                                i64::from(mv as u32)
                            }
                        };
                        put_decimal(cells, at, millivolts, 3)
                    }
                },
                MainColumn::Amperage => match layout.flavour {
                    Flavour::Betaflight => put_decimal(cells, at, v, 2),
                    Flavour::Inav => {
                        let milliamps = match layout.inav_battery {
                            InavBattery::Centi => i64::from(v as u16) * 10,
                            InavBattery::Adc => i64::from(layout.adc_milliamps(v as u16)),
                        };
                        put_decimal(cells, at, milliamps, 3)
                    }
                },
            };
        }
        if layout.amperage.is_some() {
            cells[at..at + sep.len()].copy_from_slice(sep);
            at = put_int(cells, at + sep.len(), self.carry.meter.rounded().into(), 0);
        }
        out.extend_from_slice(cells.get(sep.len()..at).unwrap_or_default());
        if !layout.slow_names.is_empty() {
            if self.slow_text_stale {
                self.write_slow_text();
            }
            out.extend_from_slice(&self.slow_text);
        }
        out.push(b'\n');
    }

    /// Format the slow fields in force, each after a separator, into `slow_text`: main rows
    /// repeat them until the next S frame.
    fn write_slow_text(&mut self) {
        self.slow_text_stale = false;
        let out = &mut self.slow_text;
        out.clear();
        let Some(layout) = self.layout.as_ref() else {
            return;
        };
        let high_modes = layout.slow_modes_high.and_then(|i| self.slow.get(i));
        for (i, &v) in self.slow.iter().enumerate() {
            if Some(i) == layout.slow_modes_high {
                continue;
            }
            out.extend_from_slice(layout.separator);
            let flag = self.carry.slow_flags.iter().position(|&f| f == i);
            // INAV's tool: the modes past the first 32 above those of `flightModeFlags`.
            let v = match (flag, high_modes) {
                (Some(0), Some(&high)) => v | high << 32,
                _ => v,
            };
            match (layout.flavour, flag) {
                (Flavour::Betaflight, Some(0)) => {
                    write_flags(out, u64::from(v as u32), &BF_FLIGHT_MODES)
                }
                (Flavour::Betaflight, Some(1)) => write_flags(out, u64::from(v as u32), &BF_STATES),
                (Flavour::Betaflight, Some(_)) => write_enum(out, v as u8, &BF_FAILSAFE_PHASES),
                (Flavour::Inav, Some(0)) => match layout.inav_modes {
                    InavModes::Current => write_flags(out, v as u64, &INAV_FLIGHT_MODES),
                    InavModes::Legacy => write_flags(out, v as u64, &INAV_LEGACY_FLIGHT_MODES),
                    InavModes::None => {}
                },
                (Flavour::Inav, Some(1)) => {
                    let names: &[&str] = if layout.inav_states {
                        &INAV_STATES
                    } else {
                        &BF_STATES
                    };
                    write_flags(out, v as u64, names)
                }
                (Flavour::Inav, Some(_)) => write_enum(out, v as u8, &INAV_FAILSAFE_PHASES),
                (Flavour::Inav, None) if layout.slow_signed.get(i) == Some(&true) => {
                    write_int(out, v)
                }
                (_, None) => write_int(out, v as u64),
            }
        }
    }

    /// Keep the home position of an accepted H frame for the GPS rows that follow.
    pub fn home_frame(&mut self, frame: &Frame<'_>) {
        let Some(layout) = self.layout() else {
            return;
        };
        let field = |i: Option<usize>| i.and_then(|i| frame.values.get(i).copied());
        if let (Some(lat), Some(lon)) = (field(layout.home_lat), field(layout.home_lon)) {
            self.home = Some((lat, lon));
        }
    }

    /// The start of the session's GPX file, before its first point.
    pub fn gpx_preamble(&self) -> &'static str {
        match self.layout().map(|l| l.flavour) {
            Some(Flavour::Inav) => INAV_GPX_PREAMBLE,
            _ => GPX_PREAMBLE,
        }
    }

    /// The GPS CSV header line (with its line feed). INAV's tool adds the home position.
    pub fn write_gps_header(&self, out: &mut Vec<u8>) {
        let Some(layout) = self.layout() else {
            return;
        };
        let sep = layout.separator;
        out.extend_from_slice(b"time (us)");
        for (i, name) in layout.gps_names.iter().enumerate() {
            if name == "time" {
                continue;
            }
            out.extend_from_slice(sep);
            out.extend_from_slice(name.as_bytes());
            if Some(i) == layout.gps_speed {
                out.extend_from_slice(b" (m/s)");
            }
        }
        if layout.flavour == Flavour::Inav {
            out.extend_from_slice(b",GPS_home_lat,GPS_home_lon");
        }
        out.push(b'\n');
    }

    /// The time the tools give a GPS frame: its own time field, or else the last main frame's.
    fn gps_time(&mut self, frame: &Frame<'_>) -> i64 {
        match (self.layout().and_then(|l| l.gps_time), frame.time) {
            (Some(_), Some((_, t))) => {
                self.note_time(t);
                t as i64
            }
            (Some(i), None) => frame.values.get(i).copied().unwrap_or(-1),
            (None, _) => self.last_frame_time,
        }
    }

    /// One GPS CSV row (with its line feed) for an accepted G frame.
    pub fn write_gps_row(&mut self, out: &mut Vec<u8>, frame: &Frame<'_>) {
        let time = self.gps_time(frame);
        self.note_time_written(time);
        let Some(layout) = self.layout() else {
            return;
        };
        write_int(out, time);
        for (i, (&column, &v)) in layout.gps.iter().zip(frame.values).enumerate() {
            if Some(i) == layout.gps_time {
                continue;
            }
            out.extend_from_slice(layout.separator);
            match column {
                GpsColumn::Integer => write_int(out, v),
                GpsColumn::Coordinate => write_coordinate(out, v),
                GpsColumn::Course => write_fixed(out, v, 10, 1),
                GpsColumn::Speed => write_fixed(out, v, 100, 2),
            }
        }
        if layout.flavour == Flavour::Inav {
            // 0.0000000 for both until the session's first home frame.
            let (lat, lon) = self.home.unwrap_or((0, 0));
            out.push(b',');
            write_coordinate(out, lat);
            out.push(b',');
            write_coordinate(out, lon);
        }
        out.push(b'\n');
    }

    /// The GPX track point (with its line feed) for an accepted G frame, when the frame has a
    /// position and altitude and, if it counts satellites, at least [`MIN_GPX_SATELLITES`].
    /// Returns whether a point was written.
    pub fn write_gpx_point(&mut self, out: &mut Vec<u8>, frame: &Frame<'_>) -> bool {
        let time = self.gps_time(frame);
        let Some(layout) = self.layout() else {
            return false;
        };
        let field = |i: Option<usize>| i.and_then(|i| frame.values.get(i).copied());
        let (Some(lat), Some(lon), Some(altitude)) = (
            field(layout.gps_lat),
            field(layout.gps_lon),
            field(layout.gps_altitude),
        ) else {
            return false;
        };
        if field(layout.gps_sats).is_some_and(|s| s < MIN_GPX_SATELLITES) {
            return false;
        }
        out.extend_from_slice(b"  <trkpt lat=\"");
        write_coordinate(out, i64::from(lat as i32));
        out.extend_from_slice(b"\" lon=\"");
        write_coordinate(out, i64::from(lon as i32));
        out.extend_from_slice(b"\"><ele>");
        match layout.flavour {
            Flavour::Betaflight => {
                let metres = (altitude as f32) * layout.altitude_factor + 0.0f32;
                let _ = write!(out, "{:.2}", f64::from(metres));
            }
            Flavour::Inav => write_int(out, altitude as i16),
        }
        out.extend_from_slice(b"</ele>");
        if time != -1 {
            let (at, micros) = match layout.flavour {
                // Betaflight's tool: the log start date plus whole seconds, as UTC.
                Flavour::Betaflight => (
                    self.carry.date_time + i64::from((time / 1_000_000) as u32),
                    (time % 1_000_000) as i32,
                ),
                // INAV's tool: the log start plus the time since the session's first time
                // written (C's division and remainder, toward zero).
                Flavour::Inav => {
                    let since = self.gps_start.unwrap_or(-1).wrapping_add(time);
                    (since / 1_000_000, (since % 1_000_000) as i32)
                }
            };
            let (year, month, day) = civil_from_days(at.div_euclid(86_400));
            let seconds = at.rem_euclid(86_400);
            let _ = write!(
                out,
                "<time>{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z</time>",
                year as u32,
                month as u32,
                day as u32,
                seconds / 3600,
                seconds / 60 % 60,
                seconds % 60,
                micros
            );
        }
        out.extend_from_slice(b"</trkpt>\n");
        true
    }

    /// The event file line (with its line feed) for an accepted event, when the flavour's parser
    /// knows the event; returns whether one was written.
    pub fn write_event(&mut self, out: &mut Vec<u8>, event: &Event) -> bool {
        let Some(layout) = self.layout() else {
            return false;
        };
        let inav = layout.flavour == Flavour::Inav;
        let last = self.last_frame_time;
        let rollover = self.rollover;
        let _ = match *event {
            Event::SyncBeep { time } => writeln!(
                out,
                "{{\"name\":\"Sync beep\", \"time\":{}}}",
                i64::from(time) + rollover
            ),
            Event::InflightAdjustment { function, value } => {
                let _ = write!(
                    out,
                    "{{\"name\":\"Inflight adjustment\", \"time\":{last}, \"data\":{{\"adjustmentFunction\":\""
                );
                match ADJUSTMENT_FUNCTIONS.get(usize::from(function & 0x7F)) {
                    Some(name) => out.extend_from_slice(name.as_bytes()),
                    None => write_int(out, function & 0x7F),
                }
                out.extend_from_slice(b"\",\"value\":");
                match value {
                    AdjustmentValue::Float(v) => write_general(out, f64::from(v)),
                    AdjustmentValue::Int(v) => write_int(out, v),
                }
                out.extend_from_slice(b"}}");
                Ok(())
            }
            Event::LoggingResume { iteration, time } => writeln!(
                out,
                "{{\"name\":\"Logging resume\", \"time\":{}, \"data\":{{\"logIteration\":{}}}}}",
                i64::from(time) + rollover,
                iteration as i32
            ),
            Event::LogEnd {
                disarm_reason: None,
            } => writeln!(out, "{{\"name\":\"Log clean end\", \"time\":{last}}}"),
            Event::AutotuneCycleStart {
                phase,
                cycle,
                rising,
                p,
                i,
                d,
            } if inav => writeln!(
                out,
                "{{\"name\":\"Autotune cycle start\", \"time\":{last}, \"data\":{{\"phase\":{phase},\"cycle\":{cycle},\"p\":{p},\"i\":{i},\"d\":{d},\"rising\":{}}}}}",
                u8::from(rising)
            ),
            Event::AutotuneCycleResult { overshot, p, i, d } if inav => writeln!(
                out,
                "{{\"name\":\"Autotune cycle result\", \"time\":{last}, \"data\":{{\"overshot\":{},\"timedout\":{},\"p\":{p},\"i\":{i},\"d\":{d}}}}}",
                overshot & 1 != 0,
                overshot & 2 != 0
            ),
            Event::AutotuneTargets {
                current_angle,
                target_angle,
                target_angle_at_peak,
                first_peak_angle,
                second_peak_angle,
            } if inav => writeln!(
                out,
                "{{\"name\":\"Autotune cycle targets\", \"time\":{last}, \"data\":{{\"currentAngle\":{:.1},\"targetAngle\":{target_angle},\"targetAngleAtPeak\":{target_angle_at_peak},\"firstPeakAngle\":{:.1},\"secondPeakAngle\":{:.1}}}}}",
                f64::from(current_angle) / 10.0,
                f64::from(first_peak_angle) / 10.0,
                f64::from(second_peak_angle) / 10.0
            ),
            Event::GtuneCycleResult {
                axis,
                gyro_avg,
                new_p,
            } if inav => writeln!(
                out,
                "{{\"name\":\"Gtune result\", \"time\":{last}, \"data\":{{\"axis\":{axis},\"gyroAVG\":{gyro_avg},\"newP\":{new_p}}}}}\n"
            ),
            // The tools' parsers do not decode the other events (or INAV's end marker with a
            // disarm reason): they never reach the event file.
            _ => return false,
        };
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decimal::append;

    #[test]
    fn integer_decimals_are_what_float_formatting_writes() {
        let text = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut out = Vec::new();
            f(&mut out);
            String::from_utf8(out).unwrap()
        };
        // How a main row writes its columns, at the end of a buffer.
        let write_padded = |out: &mut Vec<u8>, value: i64, width: usize| {
            append(out, NUMBER_ROOM, |buf, at| put_int(buf, at, value, width))
        };
        let write_decimal = |out: &mut Vec<u8>, value: i64, decimals: u32| {
            append(out, DECIMAL_ROOM, |buf, at| {
                put_decimal(buf, at, value, decimals)
            })
        };
        let edges = [
            i64::from(i32::MIN),
            i64::from(i32::MAX),
            i64::from(u32::MAX),
            -1,
            0,
            1,
        ];
        for v in (-200_000..200_000)
            .chain(edges)
            .chain((0..64).map(|k| 7919 * (1 << k) / 3))
        {
            let v = v.clamp(-(1 << 40), 1 << 40);
            assert_eq!(
                text(&|o| write_decimal(o, v, 1)),
                format!("{:.1}", v as f64 / 10.0)
            );
            assert_eq!(
                text(&|o| write_decimal(o, v, 2)),
                format!("{:.2}", v as f64 / 100.0)
            );
            assert_eq!(
                text(&|o| write_decimal(o, v, 3)),
                format!("{:.3}", v as f64 / 1000.0)
            );
            assert_eq!(
                text(&|o| write_padded(o, (v as i32).into(), 3)),
                format!("{:3}", v as i32)
            );
            assert_eq!(
                text(&|o| write_padded(o, (v as u32).into(), 3)),
                format!("{:3}", v as u32)
            );
        }
    }

    #[test]
    fn flags_and_enums_print_like_the_tools() {
        let mut out = Vec::new();
        write_flags(&mut out, 0b11, &BF_FLIGHT_MODES);
        assert_eq!(out, b"ANGLE_MODE|HORIZON_MODE");
        out.clear();
        // Bit 10 (FAILSAFE_MODE) is past the ten names Betaflight's tool prints.
        write_flags(&mut out, 1 << 10, &BF_FLIGHT_MODES);
        assert_eq!(out, b"0");
        out.clear();
        write_enum(&mut out, 3, &BF_FAILSAFE_PHASES);
        write_enum(&mut out, 4, &BF_FAILSAFE_PHASES);
        assert_eq!(out, b"LANDEDFAILSAFE_RX_LOSS_MONITORING4");
    }

    #[test]
    fn fixed_point_and_coordinates() {
        let mut out = Vec::new();
        write_coordinate(&mut out, -5_000_000);
        out.push(b' ');
        write_coordinate(&mut out, -473_456_789);
        out.push(b' ');
        write_fixed(&mut out, -57, 100, 2);
        out.push(b' ');
        write_fixed(&mut out, 1234, 10, 1);
        assert_eq!(out, b"-0.5000000 -47.3456789 0.57 123.4");
    }

    #[test]
    fn general_format() {
        for (v, want) in [
            (1.5, "1.5"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (-2.25, "-2.25"),
            (0.1f32 as f64, "0.1"),
        ] {
            let mut out = Vec::new();
            write_general(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), want, "{v}");
        }
    }

    #[test]
    fn versions_compare_as_the_tools_semver_does() {
        let at_least = |v| semver_at_least(v, (4, 3, 0));
        for v in [
            "4.3.0",
            "4.5.3",
            "2025.12.2",
            "2026.6.0-alpha",
            "4.3.0+abc",
            "5",
        ] {
            assert!(at_least(v), "{v}");
        }
        for v in ["4.2.11", "4.3.0-RC1", "3.1.5", "", "4.x.0", "v4.5.0"] {
            assert!(!at_least(v), "{v}");
        }
    }

    #[test]
    fn current_meter_starts_like_battery_c() {
        let mut meter = CurrentMeter::default();
        // First frame: nothing added, the last time becomes −1 as unsigned.
        meter.update(1000, -1i64 as u64, Flavour::Inav);
        assert_eq!(meter.energy_mah, 0.0);
        // Second frame: the previous frame's time minus (2^64 − 1), i.e. t + 1 µs.
        meter.update(3600, 999_999, Flavour::Inav);
        assert!((meter.energy_mah - 1.0).abs() < 1e-12);
        assert_eq!(meter.rounded(), 1);
        // Betaflight's tools: 32-bit time, so a later session's first frame adds the current
        // over 2^32 − 1 − the last time; a 16-bit current, so 47,850 mA counts as −17,686.
        let mut meter = CurrentMeter::default();
        meter.update(1000, 2_000_000, Flavour::Betaflight);
        meter.update(3600, -1i64 as u64, Flavour::Betaflight);
        let expected = 3600.0 * f64::from(u32::MAX - 2_000_000) / 3.6e9;
        assert!((meter.energy_mah - expected).abs() < 1e-9);
        let before = meter.energy_mah;
        meter.update(47_850, 999, Flavour::Betaflight);
        assert!((meter.energy_mah - before + 17_686.0 * 1000.0 / 3.6e9).abs() < 1e-9);
    }

    #[test]
    fn dates() {
        let start = StartTime::parse("2025-12-24T20:10:06.682+00:00");
        assert_eq!(start.unix_seconds(), 1_766_607_006);
        let zero = StartTime::parse("0000-01-01T00:00:00.000+00:00");
        assert_eq!(
            civil_from_days(zero.unix_seconds().div_euclid(86_400)),
            (0, 1, 1)
        );
        assert_eq!(civil_from_days(days_from_civil(2024, 2, 29)), (2024, 2, 29));
        // Hostile headers neither panic nor overflow.
        for text in [
            "99999999999999999999-99-99T99:99:99",
            "-9-x",
            "",
            "2024-13-45T25:61:61",
        ] {
            let t = StartTime::parse(text);
            civil_from_days(t.unix_seconds().div_euclid(86_400));
        }
    }
}
