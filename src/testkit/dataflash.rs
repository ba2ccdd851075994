//! Synthetic DataFlash logs: small and deterministic, with the message layout ArduPilot writes
//! (FMT for every type, UNIT, MULT and FMTU, the firmware MSG, parameters, then attitude, IMU and
//! GPS messages at their rates), used as the project's own corpus and fuzzing seeds.

use crate::dataflash::fmt::{Definition, FMT_LENGTH, FMT_TYPE, Format, HEADER};
use crate::dataflash::salvage::fmt_message;
use crate::testkit::blackbox::Noise;

/// The types a synthetic log defines: id, name, format characters, columns, unit and multiplier
/// ids (one per column, as FMTU gives them).
const TYPES: [(u8, &str, &str, &str, &str, &str); 8] = [
    (
        FMT_TYPE,
        "FMT",
        "BBnNZ",
        "Type,Length,Name,Format,Columns",
        "",
        "",
    ),
    (0x40, "UNIT", "QbZ", "TimeUS,Id,Label", "s--", "F--"),
    (0x41, "MULT", "Qbd", "TimeUS,Id,Mult", "s--", "F--"),
    (
        0x42,
        "FMTU",
        "QBNN",
        "TimeUS,FmtType,UnitIds,MultIds",
        "s---",
        "F---",
    ),
    (0x43, "MSG", "QZ", "TimeUS,Message", "s-", "F-"),
    (0x44, "PARM", "QNf", "TimeUS,Name,Value", "s--", "F--"),
    (
        0x45,
        "ATT",
        "QccccCCCC",
        "TimeUS,DesRoll,Roll,DesPitch,Pitch,DesYaw,Yaw,ErrRP,ErrYaw",
        "sddddhhdh",
        "FBBBBBBBB",
    ),
    (
        0x46,
        "GPS",
        "QBIHBcLLefffB",
        "TimeUS,Status,GMS,GWk,NSats,HDop,Lat,Lng,Alt,Spd,GCrs,VZ,U",
        "s---SmDUmnhn-",
        "F---0BGGB000-",
    ),
];

/// The IMU type is written apart: its layout has the `a`-free float columns most logs carry.
const IMU: (u8, &str, &str, &str, &str, &str) = (
    0x47,
    "IMU",
    "QffffffIIfBB",
    "TimeUS,GyrX,GyrY,GyrZ,AccX,AccY,AccZ,EG,EA,T,GH,AH",
    "sEEEooo--O--",
    "F000000-----",
);

const UNITS: [(u8, &str); 10] = [
    (b'-', ""),
    (b's', "s"),
    (b'd', "deg"),
    (b'h', "degheading"),
    (b'm', "m"),
    (b'n', "m/s"),
    (b'D', "deglatitude"),
    (b'U', "deglongitude"),
    (b'E', "rad/s"),
    (b'o', "m/s/s"),
];

const MULTS: [(u8, f64); 5] = [
    (b'-', 0.0),
    (b'0', 1.0),
    (b'B', 1e-2),
    (b'F', 1e-6),
    (b'G', 1e-7),
];

/// A character array of `size` bytes holding `text`.
pub fn text(text: &str, size: usize) -> Vec<u8> {
    let mut field = text.as_bytes().to_vec();
    field.resize(size, 0);
    field
}

/// The format of a type entry.
fn format_of(entry: &(u8, &str, &str, &str, &str, &str)) -> Format {
    let (type_id, name, format, columns, _, _) = *entry;
    let size: usize = format
        .bytes()
        .filter_map(crate::dataflash::fmt::FieldType::from_char)
        .map(|f| f.size())
        .sum();
    let definition = Definition {
        type_value: type_id.into(),
        length: (size + 3) as i128,
        name: name.as_bytes(),
        format: format.as_bytes(),
        columns: columns.as_bytes(),
    };
    match Format::define(&definition, None) {
        Ok((format, None)) => format,
        _ => unreachable!("the synthetic types are valid"),
    }
}

/// A message of `type_id` with `body`.
pub fn message(type_id: u8, body: &[u8]) -> Vec<u8> {
    let mut m = HEADER.to_vec();
    m.push(type_id);
    m.extend_from_slice(body);
    m
}

/// A FMT message in the predefined layout (type 0x80) defining `type_id`.
pub fn fmt(type_id: u8, length: u8, name: &str, format: &str, columns: &str) -> Vec<u8> {
    let mut m = message(FMT_TYPE, &[type_id, length]);
    for (field, size) in [(name, 4), (format, 16), (columns, 64)] {
        m.extend(text(field, size));
    }
    m
}

/// A flight of `seconds` (at least 1) with noise from `seed`: a clean DataFlash log.
pub fn flight(seed: u64, seconds: u32) -> Vec<u8> {
    let mut noise = Noise::new(seed);
    let fmt_layout = Format::fmt();
    debug_assert_eq!(fmt_layout.message_len(), Some(FMT_LENGTH));
    let mut out = Vec::new();
    let entries: Vec<_> = TYPES.iter().chain([&IMU]).collect();
    for entry in &entries {
        let bytes = fmt_message(&fmt_layout, &format_of(entry)).expect("fits the FMT layout");
        out.extend(bytes);
    }
    let mut time: u64 = 1_500_000 + noise.next() % 1_000_000;
    for (id, label) in UNITS {
        let mut body = time.to_le_bytes().to_vec();
        body.push(id);
        body.extend(text(label, 64));
        out.extend(message(0x40, &body));
    }
    for (id, mult) in MULTS {
        let mut body = time.to_le_bytes().to_vec();
        body.push(id);
        body.extend(mult.to_le_bytes());
        out.extend(message(0x41, &body));
    }
    for (type_id, _, _, _, units, mults) in entries.iter().copied().skip(1) {
        let mut body = time.to_le_bytes().to_vec();
        body.push(*type_id);
        body.extend(text(units, 16));
        body.extend(text(mults, 16));
        out.extend(message(0x42, &body));
    }
    let mut body = time.to_le_bytes().to_vec();
    body.extend(text("ArduCopter V4.5.7 (2a3dc4b7)", 64));
    out.extend(message(0x43, &body));
    for (name, value) in [
        ("ATC_RAT_RLL_P", 0.135f32),
        ("INS_GYRO_FILTER", 40.0),
        ("LOG_BITMASK", 176126.0),
    ] {
        let mut body = time.to_le_bytes().to_vec();
        body.extend(text(name, 16));
        body.extend(value.to_le_bytes());
        out.extend(message(0x44, &body));
    }
    // 50 Hz IMU, 10 Hz attitude, 5 Hz GPS.
    let (mut roll, mut pitch, mut yaw) = (0i64, 0i64, 9000i64);
    let (mut lat, mut lng, mut alt) = (-353_632_610i64, 1_491_652_300i64, 58_400i64);
    for tick in 0..seconds.max(1) * 50 {
        time += 20_000 + (noise.next() % 200);
        let mut body = time.to_le_bytes().to_vec();
        for amplitude in [0.02f32, 0.02, 0.01, 0.3, 0.3, 9.81] {
            let v = amplitude * (1.0 + noise.jitter(100) as f32 / 1000.0);
            body.extend(v.to_le_bytes());
        }
        body.extend(0u32.to_le_bytes());
        body.extend(0u32.to_le_bytes());
        body.extend((31.5f32 + noise.jitter(5) as f32 / 10.0).to_le_bytes());
        body.extend([1, 1]);
        out.extend(message(0x47, &body));
        if tick % 5 == 0 {
            roll = (roll + noise.jitter(40)).clamp(-4500, 4500);
            pitch = (pitch + noise.jitter(40)).clamp(-4500, 4500);
            yaw = (yaw + noise.jitter(30)).rem_euclid(36_000);
            let mut body = time.to_le_bytes().to_vec();
            for v in [
                roll,
                roll + noise.jitter(20),
                pitch,
                pitch + noise.jitter(20),
            ] {
                body.extend((v as i16).to_le_bytes());
            }
            for v in [yaw, yaw + noise.jitter(10), 3, 5] {
                body.extend((v as u16).to_le_bytes());
            }
            out.extend(message(0x45, &body));
        }
        if tick % 10 == 0 {
            lat += noise.jitter(30);
            lng += noise.jitter(30);
            alt += noise.jitter(10);
            let mut body = time.to_le_bytes().to_vec();
            body.push(3);
            body.extend(((time / 1000) as u32).to_le_bytes());
            body.extend(2350u16.to_le_bytes());
            body.push(14);
            body.extend(78i16.to_le_bytes());
            body.extend((lat as i32).to_le_bytes());
            body.extend((lng as i32).to_le_bytes());
            body.extend((alt as i32).to_le_bytes());
            for v in [1.5f32, 182.0, -0.2] {
                body.extend(v.to_le_bytes());
            }
            body.push(1);
            out.extend(message(0x46, &body));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataflash;
    use crate::dataflash::export::csv::Values;

    #[test]
    fn a_synthetic_flight_is_clean_with_units_for_every_column() {
        let log = flight(7, 3);
        assert_eq!(log, flight(7, 3), "deterministic");
        let report = dataflash::check("synth", &log);
        assert!(report.is_clean(), "{:?}", report.file.corrupt_spans);
        let counts = &report.dataflash.counts;
        assert_eq!(counts["IMU"], 150);
        assert_eq!(counts["ATT"], 30);
        assert_eq!(counts["GPS"], 15);
        assert_eq!(counts["FMT"], 9);
        assert_eq!(
            report.dataflash.firmware.as_deref(),
            Some("ArduCopter V4.5.7 (2a3dc4b7)")
        );
        let scan = dataflash::scan(&log, &mut dataflash::reader::Discard);
        let att = scan.formats.iter().find(|f| f.name == "ATT").unwrap();
        let stored = dataflash::export::csv::headings(&scan.formats, att, Values::Stored);
        assert_eq!(stored[0], "TimeUS [1e-6 s]");
        assert_eq!(stored[2], "Roll [0.01 deg]");
        assert_eq!(stored[6], "Yaw [0.01 degheading]");
        let scaled = dataflash::export::csv::headings(&scan.formats, att, Values::Scaled);
        assert_eq!(scaled[0], "TimeUS [1e-6 s]");
        assert_eq!(scaled[2], "Roll [deg]");
        assert_eq!(scaled[6], "Yaw [degheading]");
    }
}
