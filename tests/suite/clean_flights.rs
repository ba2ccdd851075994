//! A clean flight is never called damaged. No clean log gets a corrupt span, and at most one
//! main frame or message in 10,000 (one per log under 10,000) is marked suspect, however hard it
//! flies.
//! This covers every clean real log of the corpus, whatever its firmware family (the manifest
//! names the damaged ones), and generated flights in every firmware layout with a throttle punch,
//! sensors read every few frames, a sharp transient with a motor at each end of its range, a
//! crash and scheduler slips. Value evidence on them stays well under the score from which it
//! refuses frames.

use crate::common;

use bbcheck::blackbox::evidence::CORRUPT_SCORE;
use bbcheck::report::FileReport;
use bbcheck::testkit::blackbox::{self as synth, FlightSpec, Layout};

/// How far under [`CORRUPT_SCORE`] the evidence on clean flights must stay.
const MARGIN: f64 = 4.0;

/// Hard flights in every layout, four seeds each, about 10,000 main frames apiece.
fn hard_flights() -> Vec<(String, Vec<u8>)> {
    let mut flights = Vec::new();
    for layout in [
        Layout::Betaflight3,
        Layout::Betaflight4,
        Layout::Inav,
        Layout::Reduced,
    ] {
        for seed in 1..=4 {
            let base = FlightSpec::new(layout);
            let logged = match layout {
                Layout::Betaflight3 => 4,
                Layout::Betaflight4 => 4,
                Layout::Inav => 2,
                Layout::Reduced => 8,
            };
            let spec = FlightSpec {
                seed,
                iterations: 10_000 * logged,
                hazards: true,
                ..base
            };
            flights.push((format!("{layout:?} seed {seed}"), synth::flight(&spec)));
        }
    }
    flights
}

/// Main frames and suspect main frames of a Blackbox report, and its highest evidence score.
fn tally(report: &FileReport) -> (u64, u64, f64) {
    let mains = report
        .sessions
        .iter()
        .map(|s| s.frames.i + s.frames.p)
        .sum();
    let suspect = report.suspect_spans.iter().map(|s| s.frames).sum();
    let score = report
        .suspect_spans
        .iter()
        .map(|s| s.evidence.score)
        .fold(0.0, f64::max);
    (mains, suspect, score)
}

#[test]
fn clean_flights_are_never_called_damaged() {
    let mut failures = Vec::new();
    let (mut all_mains, mut all_suspect, mut top) = (0, 0, 0.0f64);
    let (mut all_messages, mut all_suspect_messages) = (0, 0);
    let logs = common::clean_real_logs();
    let real = logs.len();
    for (name, data) in logs.into_iter().chain(hard_flights()) {
        let (report, mains, suspect) = if name.starts_with("ardupilot/") {
            let report = bbcheck::dataflash::check(&name, &data);
            let messages = report.dataflash.messages;
            let suspect = report.file.suspect_spans.iter().map(|s| s.frames).sum();
            println!("{name}: {messages} messages, {suspect} suspect");
            (all_messages, all_suspect_messages) =
                (all_messages + messages, all_suspect_messages + suspect);
            (report.file, messages, suspect)
        } else {
            let report = bbcheck::blackbox::decode(
                &name,
                &data,
                |_, _| {},
                &mut bbcheck::blackbox::sink::Discard,
            );
            let (mains, suspect, score) = tally(&report);
            println!("{name}: {mains} main frames, {suspect} suspect, top score {score:.2}");
            (all_mains, all_suspect, top) =
                (all_mains + mains, all_suspect + suspect, top.max(score));
            (report, mains, suspect)
        };
        if !report.corrupt_spans.is_empty() {
            failures.push(format!("{name}: {:?}", report.corrupt_spans));
        }
        if suspect > mains.div_ceil(10_000).max(1) {
            failures.push(format!(
                "{name}: {suspect} suspect of {mains} main frames or messages: {:?}",
                report.suspect_spans
            ));
        }
    }
    println!(
        "{real} real logs and the hard flights: {all_mains} main frames, {all_suspect} suspect, top score {top:.2}; \
         {all_messages} DataFlash messages, {all_suspect_messages} suspect"
    );
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(
        top * MARGIN <= CORRUPT_SCORE,
        "evidence on clean flights reached {top:.2}, too near the corrupt bound {CORRUPT_SCORE}"
    );
}
