//! S, G, H and E frames are trusted only as far as what they rest on: a G frame's time is
//! predicted from the main frame before it, and nothing vouches for a frame read right after
//! damage and followed right by damage.

use crate::common;

use bbcheck::blackbox::frame::FrameKind;
use bbcheck::report::FileReport;
use bbcheck::testkit::blackbox::{self as synth, FlightSpec, Layout};
use common::Located;

fn decode(data: &[u8]) -> (Located, FileReport) {
    let mut frames = Located::default();
    let report = bbcheck::blackbox::decode("t", data, |_, _| {}, &mut frames);
    (frames, report)
}

/// A Betaflight 4 flight of a few seconds with GPS.
fn flight() -> Vec<u8> {
    synth::flight(&FlightSpec {
        iterations: 16384,
        ..FlightSpec::new(Layout::Betaflight4)
    })
}

/// A Betaflight 4 flight with GPS, clean, and its frames.
fn gps_flight() -> (Vec<u8>, Located) {
    let data = flight();
    let (frames, report) = decode(&data);
    assert!(report.is_clean(), "{:?}", report.corrupt_spans);
    assert!(frames.0.iter().filter(|f| f.0 == FrameKind::G).count() > 10);
    (data, frames)
}

/// Whether a corrupt span of `report` covers the bytes `[start, end)`.
fn covered(report: &FileReport, start: usize, end: usize) -> bool {
    report
        .corrupt_spans
        .iter()
        .any(|s| s.start <= start as u64 && end as u64 <= s.end)
}

#[test]
fn a_gps_frame_after_a_cut_that_leaves_it_in_step_is_refused() {
    // Cut from the end of a P frame to a G frame two groups on: every frame after the cut reads
    // in step, the G frame's time predicted from the P frame before the cut, the P frames after
    // it from the frames before the cut. Only the next I frame shows frames were lost.
    let (data, clean) = gps_flight();
    let main_before = |i: usize| {
        clean.0[..i]
            .iter()
            .rev()
            .find(|f| matches!(f.0, FrameKind::I | FrameKind::P))
            .map(|f| f.0)
    };
    let gps: Vec<usize> = (0..clean.0.len())
        .filter(|&i| clean.0[i].0 == FrameKind::G && main_before(i) == Some(FrameKind::P))
        .collect();
    // After the first home, so that the GPS frames have one.
    let home = clean.0.iter().position(|f| f.0 == FrameKind::H).unwrap();
    let p = home
        + clean.0[home..]
            .iter()
            .position(|f| f.0 == FrameKind::P)
            .unwrap();
    let target = *gps
        .iter()
        .find(|&&g| clean.0[g].1 > clean.0[p].2 + 2000)
        .unwrap();
    assert!(!clean.0[p..target].iter().any(|f| f.0 == FrameKind::H));
    let (cut_from, cut_to) = (clean.0[p].2, clean.0[target].1);
    let mut damaged = data[..cut_from].to_vec();
    damaged.extend_from_slice(&data[cut_to..]);

    let (got, report) = decode(&damaged);
    let (start, end) = (cut_from, cut_from + clean.0[target].2 - clean.0[target].1);
    assert!(
        !got.0.iter().any(|f| f.1 == start),
        "the GPS frame after the cut is refused"
    );
    assert!(covered(&report, start, end), "{:?}", report.corrupt_spans);
    // Every GPS frame accepted is a clean one, time included.
    let clean_gps: Vec<&Vec<i64>> = clean
        .0
        .iter()
        .filter(|f| f.0 == FrameKind::G)
        .map(|f| &f.3)
        .collect();
    for f in got.0.iter().filter(|f| f.0 == FrameKind::G) {
        assert!(
            clean_gps.contains(&&f.3),
            "GPS frame at {} is not a clean one",
            f.1
        );
    }
}

#[test]
fn a_frame_between_two_damaged_stretches_is_refused() {
    // Zero the frame before the first GPS home frame, and the one after it but for its type byte:
    // the home reads in step after the run of zeros, and the frame after it decodes but is not
    // followed by a frame. Nothing vouches for the home, and the GPS frames after it, whose
    // positions are predicted from it, wait for the next home.
    let (data, clean) = gps_flight();
    let h = clean.0.iter().position(|f| f.0 == FrameKind::H).unwrap();
    let (before, home, after) = (&clean.0[h - 1], &clean.0[h], &clean.0[h + 1]);
    let mut damaged = data.clone();
    damaged[before.1..before.2].fill(0);
    damaged[after.1 + 1..after.2].fill(0);

    let (got, report) = decode(&damaged);
    assert!(!got.0.iter().any(|f| f.1 == home.1), "the home is refused");
    assert!(
        covered(&report, before.1, after.2),
        "{:?}",
        report.corrupt_spans
    );
    let next_home = clean.0[h + 1..]
        .iter()
        .find(|f| f.0 == FrameKind::H)
        .unwrap()
        .1;
    assert!(
        !got.0
            .iter()
            .any(|f| f.0 == FrameKind::G && (home.1..next_home).contains(&f.1)),
        "GPS frames wait for the next home"
    );
    assert!(got.0.iter().any(|f| f.0 == FrameKind::G && f.1 > next_home));

    // With only one side damaged, the frame is read in step with the other and stands.
    let mut damaged = data.clone();
    damaged[after.1 + 1..after.2].fill(0);
    let (got, _) = decode(&damaged);
    assert!(got.0.iter().any(|f| f.0 == FrameKind::H && f.1 == home.1));
    let mut damaged = data;
    damaged[before.1..before.2].fill(0);
    let (got, _) = decode(&damaged);
    assert!(got.0.iter().any(|f| f.0 == FrameKind::H && f.1 == home.1));
}

/// A Betaflight 4 flight re-written with its firmware revision `revision` and one of
/// Rotorflight's own events (a governor's state, id 50; data and text of a length given in their
/// first byte, 100 and 101) after every 100th main frame, in turn; also the events written.
fn with_rotorflight_events(revision: &str) -> (Vec<u8>, Vec<bbcheck::blackbox::event::Event>) {
    use bbcheck::blackbox::event::Event;
    use bbcheck::blackbox::writer::SessionWriter;
    use bbcheck::testkit::fuzzing::{Collect, Record};
    let data = flight();
    let mut records = Collect::default();
    let report = bbcheck::blackbox::decode("t", &data, |_, _| {}, &mut records);
    let start = report.sessions[0].data_start as usize;
    let header = String::from_utf8_lossy(&data[..start]);
    let line = header
        .lines()
        .find(|l| l.starts_with("H Firmware revision:"))
        .unwrap();
    let header = header.replace(line, &format!("H Firmware revision:{revision}"));
    let mut writer = SessionWriter::from_header_bytes(header.as_bytes());
    let (mut mains, mut events) = (0, Vec::new());
    for record in &records.0 {
        match record {
            Record::Frame(kind @ (FrameKind::I | FrameKind::P), values) => {
                writer.main(*kind, values);
                mains += 1;
                if mains % 100 == 0 {
                    let n = mains / 100;
                    let event = match n % 3 {
                        0 => Event::GovernorState { state: n },
                        1 => Event::CustomData {
                            bytes: (0..n % 256).map(|b| b as u8).collect(),
                        },
                        _ => Event::CustomText {
                            text: format!("E{n}: headspeed").into_bytes().into(),
                        },
                    };
                    writer.event(&event);
                    events.push(event);
                }
            }
            Record::Frame(kind, values) => writer.other(*kind, values),
            Record::Event(event) => writer.event(event),
        }
    }
    (writer.finish(), events)
}

#[test]
fn a_rotorflight_logs_own_events_are_read() {
    use bbcheck::blackbox::event::Event;
    use bbcheck::testkit::fuzzing::{Collect, Record};
    let (data, written) = with_rotorflight_events("Rotorflight 4.3.0 (norevision) STM32F411");
    let mut records = Collect::default();
    let report = bbcheck::blackbox::decode("t", &data, |_, _| {}, &mut records);
    assert!(report.is_clean(), "{:?}", report.corrupt_spans);
    let own: Vec<&Event> = records
        .0
        .iter()
        .filter_map(|r| match r {
            Record::Event(
                e @ (Event::GovernorState { .. }
                | Event::CustomData { .. }
                | Event::CustomText { .. }),
            ) => Some(e),
            _ => None,
        })
        .collect();
    assert!(written.len() > 5, "{}", written.len());
    assert_eq!(own, written.iter().collect::<Vec<_>>());
    // The same bytes from another firmware: an event no decoder can step over.
    let (data, _) = with_rotorflight_events("Betaflight 4.5.1 (77d01ba3b) STM32F7X2");
    let (_, report) = decode(&data);
    assert!(!report.corrupt_spans.is_empty());
}
