//! A main frame holding a motor output, throttle, battery voltage or sensor reading its field
//! cannot take (what a byte dropped or inserted inside the frame leaves when the frame still reads
//! in step) is refused, and so are the P frames predicted from it. So is a slow frame holding a failsafe phase or a receiver flag its field
//! cannot take (garbage read as a slow frame).

use crate::common;

use bbcheck::blackbox::frame::FrameKind;
use bbcheck::blackbox::writer::SessionWriter;
use bbcheck::report::{DamageReason, FileReport};
use bbcheck::testkit::blackbox::{self as synth, FlightSpec, Layout};
use bbcheck::testkit::fuzzing::{Collect, Record};
use common::Located;

fn decode(data: &[u8]) -> (Collect, FileReport) {
    let mut records = Collect::default();
    let report = bbcheck::blackbox::decode("t", data, |_, _| {}, &mut records);
    (records, report)
}

/// The demo log's first session with `motorOutput` replaced (and `maxthrottle` added when given),
/// re-written with `field` of its `nth` main frame (a P frame) set to `value`; also where that
/// frame is.
fn rewrite_field(
    motor_output: &str,
    max_throttle: Option<u32>,
    field: &str,
    nth: usize,
    value: i64,
) -> (Vec<u8>, usize) {
    let data = std::fs::read(common::own_corpus().join("generated/demo.bbl")).unwrap();
    let (records, report) = decode(&data);
    assert!(report.is_clean(), "the demo log is clean");
    let session = &report.sessions[0];
    let throttle = max_throttle.map_or(String::new(), |t| format!("H maxthrottle:{t}\n"));
    let header = String::from_utf8_lossy(&data[..session.data_start as usize]).replace(
        "H motorOutput:158,2047\n",
        &format!("H motorOutput:{motor_output}\n{throttle}"),
    );
    let mut writer = SessionWriter::from_header_bytes(header.as_bytes());
    let index = writer.header().i.as_ref().unwrap().index_of(field).unwrap();
    let (mut mains, mut at) = (0, 0);
    for record in &records.0 {
        match record {
            Record::Frame(kind @ (FrameKind::I | FrameKind::P), values) => {
                let mut values = values.clone();
                if mains == nth {
                    assert_eq!(*kind, FrameKind::P);
                    values[index] = value;
                    at = writer.bytes().len();
                }
                writer.main(*kind, &values);
                mains += 1;
            }
            Record::Frame(kind, values) => writer.other(*kind, values),
            Record::Event(event) => writer.event(event),
        }
        if writer.bytes().len() as u64 >= session.end {
            break;
        }
    }
    (writer.finish(), at)
}

fn rewrite(motor_output: &str, nth: usize, value: i64) -> (Vec<u8>, usize) {
    rewrite_field(motor_output, None, "motor[0]", nth, value)
}

/// The reason of the one corrupt span of `data` and where it starts.
fn only_span(data: &[u8]) -> Option<(DamageReason, u64)> {
    let (_, report) = decode(data);
    match report.corrupt_spans.as_slice() {
        [] => None,
        [span] => Some((span.reason, span.start)),
        spans => panic!("{spans:?}"),
    }
}

#[test]
fn throttle_battery_voltage_and_sensors_have_bounds_too() {
    let implausible = |at: usize| Some((DamageReason::ImplausibleValue, at as u64));
    // Throttle: twice `maxthrottle`, when the header declares it.
    let (data, _) = rewrite_field("158,2047", Some(2000), "rcCommand[3]", 41, 4000);
    assert_eq!(only_span(&data), None);
    let (data, at) = rewrite_field("158,2047", Some(2000), "rcCommand[3]", 41, 4001);
    assert_eq!(only_span(&data), implausible(at));
    let (data, _) = rewrite_field("158,2047", None, "rcCommand[3]", 41, 4001);
    assert_eq!(only_span(&data), None);
    // Battery voltage: 16 bits in every firmware.
    let (data, _) = rewrite_field("158,2047", None, "vbatLatest", 41, 65535);
    assert_eq!(only_span(&data), None);
    let (data, at) = rewrite_field("158,2047", None, "vbatLatest", 41, 65536);
    assert_eq!(only_span(&data), implausible(at));
    // Gyro and accelerometer: 16-bit integers in every firmware.
    for field in ["gyroADC[1]", "accSmooth[2]"] {
        for value in [32768, -32768] {
            let (data, _) = rewrite_field("158,2047", None, field, 41, value);
            assert_eq!(only_span(&data), None, "{field} {value}");
            let beyond = value + value.signum();
            let (data, at) = rewrite_field("158,2047", None, field, 41, beyond);
            assert_eq!(only_span(&data), implausible(at), "{field} {beyond}");
        }
    }
}

#[test]
fn a_motor_output_beyond_twice_the_highest_is_refused_with_its_p_frames() {
    // Main frame 41 of the demo log is a P frame inside its group.
    let (within, _) = rewrite("158,2047", 41, 4094);
    let (_, report) = decode(&within);
    assert!(report.is_clean(), "{:?}", report.corrupt_spans);

    let (beyond, at) = rewrite("158,2047", 41, 4095);
    let (records, report) = decode(&beyond);
    let span = &report.corrupt_spans[0];
    assert_eq!(span.reason, DamageReason::ImplausibleValue);
    assert_eq!(span.start, at as u64, "the span starts at the frame");
    // The rest of the group is predicted from it: refused up to the next I frame.
    let (clean, _) = decode(&within);
    let mains: Vec<FrameKind> = clean
        .0
        .iter()
        .filter_map(|r| match r {
            Record::Frame(kind @ (FrameKind::I | FrameKind::P), _) => Some(*kind),
            _ => None,
        })
        .collect();
    let rest_of_group = mains[41..]
        .iter()
        .take_while(|&&k| k == FrameKind::P)
        .count();
    assert!(rest_of_group > 1);
    assert_eq!(span.frames_lost, rest_of_group as u64, "{span:?}");
    assert_eq!(report.corrupt_spans.len(), 1, "{:?}", report.corrupt_spans);
    let motor = |values: &Vec<i64>| values[values.len() - 4];
    assert!(
        records.0.iter().all(|r| match r {
            Record::Frame(FrameKind::I | FrameKind::P, values) => motor(values) <= 2047,
            _ => true,
        }),
        "no frame with the value is accepted"
    );

    // A header that declares no highest output bounds nothing.
    let (no_highest, _) = rewrite("158", 41, 4095);
    let (_, report) = decode(&no_highest);
    assert!(report.is_clean(), "{:?}", report.corrupt_spans);
}

/// A Betaflight 4 flight re-written with `field` of its last slow frame set to `value`; also where
/// that frame is.
fn rewrite_slow(field: &str, value: i64) -> (Vec<u8>, usize) {
    let data = synth::flight(&FlightSpec {
        iterations: 16384,
        ..FlightSpec::new(Layout::Betaflight4)
    });
    let mut frames = Located::default();
    let report = bbcheck::blackbox::decode("t", &data, |_, _| {}, &mut frames);
    let start = report.sessions[0].data_start as usize;
    let mut writer = SessionWriter::from_header_bytes(&data[..start]);
    let index = writer.header().s.as_ref().unwrap().index_of(field).unwrap();
    let last = frames.0.iter().rposition(|f| f.0 == FrameKind::S).unwrap();
    let mut at = None;
    for (i, (kind, from, to, values)) in frames.0.iter().enumerate() {
        match kind {
            FrameKind::I | FrameKind::P => writer.main(*kind, values),
            FrameKind::S if i == last => {
                let mut values = values.clone();
                values[index] = value;
                at = Some(writer.bytes().len());
                writer.other(FrameKind::S, &values);
            }
            FrameKind::E => writer.raw(&data[*from..*to]),
            kind => writer.other(*kind, values),
        }
    }
    (writer.finish(), at.unwrap())
}

#[test]
fn a_slow_frame_holding_a_value_its_field_cannot_take_is_refused() {
    for (field, highest) in [
        ("failsafePhase", 15),
        ("rxSignalReceived", 1),
        ("rxFlightChannelsValid", 1),
    ] {
        let (data, _) = rewrite_slow(field, highest);
        assert_eq!(only_span(&data), None, "{field} {highest}");
        let (data, at) = rewrite_slow(field, highest + 1);
        let implausible = Some((DamageReason::ImplausibleValue, at as u64));
        assert_eq!(only_span(&data), implausible, "{field} {}", highest + 1);
    }
}
