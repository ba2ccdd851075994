//! A session whose log start marker lost a few bytes (a download's chunk header written over it,
//! a few bytes gone bad) is still found and read: the rest of the marker says where it starts.
//! One whose marker is lost starts at its header lines, or where the marker stood if it was
//! erased or zeroed; salvage writes the marker back.

use bbcheck::blackbox::decoder::Validation;
use bbcheck::blackbox::header::{LOG_START_MARKER, MARKER_HOLE};
use bbcheck::blackbox::sink::{EventFrame, Frame, Sink};
use bbcheck::report::{DamageReason, FileReport, Trust};
use bbcheck::testkit::blackbox::{self as synth, FlightSpec, Layout};

/// Every frame and event read, with its trust.
#[derive(Default, PartialEq, Debug)]
struct Read(Vec<String>);

impl Sink for Read {
    fn frame(&mut self, frame: &Frame<'_>) {
        let trust = match frame.trust {
            Trust::Trusted => "",
            _ => " suspect",
        };
        self.0
            .push(format!("{:?} {:?}{trust}", frame.kind, frame.values));
    }
    fn event(&mut self, event: &EventFrame<'_>) {
        self.0.push(format!("{:?}", event.event));
    }
}

fn read(data: &[u8], validation: Validation) -> (Read, FileReport) {
    let mut frames = Read::default();
    let report = bbcheck::blackbox::decode_with(validation, "t", data, |_, _| {}, &mut frames);
    (frames, report)
}

/// Two sessions of different firmware, and where the second starts.
fn two_sessions() -> (Vec<u8>, usize) {
    let spec = |layout| FlightSpec {
        iterations: 4096,
        ..FlightSpec::new(layout)
    };
    let first = synth::flight(&spec(Layout::Betaflight4));
    let log = synth::flights(&[spec(Layout::Betaflight4), spec(Layout::Inav)]);
    assert_eq!(log[..first.len()], first[..]);
    (log, first.len())
}

#[test]
fn a_session_whose_start_marker_lost_a_few_bytes_is_read_whole() {
    let (log, second) = two_sessions();
    let (clean, report) = read(&log, Validation::Thorough);
    assert!(report.is_clean() && report.sessions.len() == 2);
    let holes: [(usize, &[u8]); 4] = [
        (0, b"\x00\x08\x00"),
        (20, b"\x00\x08\x00\x00\x00\x00"),
        (LOG_START_MARKER.len() - MARKER_HOLE, &[0xA5; MARKER_HOLE]),
        (11, b"x"),
    ];
    for (at, hole) in holes {
        let mut damaged = log.clone();
        damaged[second + at..second + at + hole.len()].copy_from_slice(hole);
        assert!(bbcheck::blackbox::is_blackbox(&damaged[second..]));
        let (frames, report) = read(&damaged, Validation::Thorough);
        // Every frame of both sessions, as the clean log reads them; the marker's bytes are the
        // damage reported.
        assert_eq!(frames, clean, "hole at {at}");
        assert_eq!(report.sessions.len(), 2);
        let spans = &report.corrupt_spans;
        assert_eq!(spans.len(), 1, "{spans:?}");
        assert_eq!(spans[0].reason, DamageReason::HeaderDamaged);
        assert_eq!(
            (spans[0].start, spans[0].end),
            (second as u64, (second + LOG_START_MARKER.len()) as u64)
        );
        // The reference decoders' rules know the whole marker only: the second session is lost.
        let (_, reference) = read(&damaged, Validation::Reference);
        assert_eq!(reference.sessions.len(), 1, "hole at {at}");
    }
}

#[test]
fn a_session_whose_start_marker_is_lost_starts_at_its_header_lines() {
    let (log, second) = two_sessions();
    let (clean, _) = read(&log, Validation::Thorough);
    // Too much of the marker lost to find it by: its header lines still say a session starts.
    let mut damaged = log.clone();
    damaged[second + 8..second + 9 + MARKER_HOLE].fill(0);
    let (frames, report) = read(&damaged, Validation::Thorough);
    assert_eq!(frames, clean);
    assert_eq!(report.sessions.len(), 2);
    assert_eq!(
        report.sessions[1].start,
        (second + LOG_START_MARKER.len()) as u64
    );
    // What is left of the marker lies after the first session's end: damage, not a clean file.
    let spans = &report.corrupt_spans;
    assert_eq!(spans.len(), 1, "{spans:?}");
    assert_eq!(
        (spans[0].reason, spans[0].session),
        (DamageReason::Garbage, 1)
    );
    assert_eq!(
        (spans[0].start, spans[0].end),
        (second as u64, (second + LOG_START_MARKER.len()) as u64)
    );
    let (_, reference) = read(&damaged, Validation::Reference);
    assert_eq!(reference.sessions.len(), 1);
    // A header line damaged inside a header does not start a session of its own.
    let mut damaged = log.clone();
    let line = second + LOG_START_MARKER.len() + 5;
    damaged[line..line + 3].copy_from_slice(b"\x00\x08\x00");
    assert_eq!(read(&damaged, Validation::Thorough).1.sessions.len(), 2);
}

/// The salvaged bytes of every session of `data`, one after the other.
fn salvaged(data: &[u8]) -> Vec<u8> {
    let (_, sessions) = bbcheck::blackbox::salvage::salvage("t", data, None);
    sessions.into_iter().flat_map(|s| s.bytes).collect()
}

#[test]
fn a_session_whose_start_marker_was_erased_starts_where_it_stood() {
    let (log, second) = two_sessions();
    let only_first = &log[..second];
    // The second session's marker, the first's, and that of a file's only session.
    let cases = [
        (&log[..], second, 2, 2),
        (&log[..], 0, 1, 2),
        (only_first, 0, 1, 1),
    ];
    for (intact, at, session, sessions) in cases {
        for erased in [0x00, 0xFF] {
            let mut damaged = intact.to_vec();
            damaged[at..at + LOG_START_MARKER.len()].fill(erased);
            assert!(bbcheck::blackbox::is_blackbox(&damaged), "{at} {erased}");
            let (clean, _) = read(intact, Validation::Thorough);
            let (frames, report) = read(&damaged, Validation::Thorough);
            assert_eq!(frames, clean, "{at} {erased}");
            assert_eq!(report.sessions.len(), sessions);
            // The marker's place is the damage, in the session it starts.
            let spans = &report.corrupt_spans;
            assert_eq!(spans.len(), 1, "{at} {erased}: {spans:?}");
            assert_eq!(
                (
                    spans[0].reason,
                    spans[0].session,
                    spans[0].start,
                    spans[0].end
                ),
                (
                    DamageReason::HeaderDamaged,
                    session,
                    at as u64,
                    (at + LOG_START_MARKER.len()) as u64
                )
            );
            assert_eq!(report.sessions[session - 1].start, at as u64);
            // Salvage writes the marker back: the log as salvaged from the intact file.
            assert_eq!(salvaged(&damaged), salvaged(intact), "{at} {erased}");
        }
    }
}
