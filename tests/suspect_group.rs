//! A value shifted through a whole I-frame group (what a byte lost inside an I frame's field
//! leaves behind) is reported as a suspect group and its frames are not trusted.

mod common;

use bbcheck::blackbox::event::Event;
use bbcheck::blackbox::frame::FrameKind;
use bbcheck::blackbox::writer::SessionWriter;
use bbcheck::fuzzing::{Collect, Record};
use bbcheck::report::{DamageReason, FileReport};

fn decode(data: &[u8]) -> (Collect, FileReport) {
    let mut records = Collect::default();
    let report = bbcheck::blackbox::decode("t", data, |_, _| {}, &mut records);
    (records, report)
}

/// The demo log's first session, re-written with `shift` added to field `field` of every main
/// frame of the `group`-th I-frame group, after a logging-resume event if `pause`; also the byte
/// range that group's main frames take.
fn rewrite(
    group: usize,
    field: usize,
    shift: i64,
    pause: bool,
) -> (Vec<u8>, std::ops::Range<usize>) {
    let data = std::fs::read(common::own_corpus().join("generated/demo.bbl")).unwrap();
    let (records, report) = decode(&data);
    assert!(report.is_clean(), "the demo log is clean");
    let data_start = report.sessions[0].data_start as usize;
    let mut writer = SessionWriter::from_header_bytes(&data[..data_start]);
    let (mut groups, mut range) = (0, 0..0);
    for record in &records.0 {
        match record {
            Record::Frame(kind @ (FrameKind::I | FrameKind::P), values) => {
                if *kind == FrameKind::I {
                    groups += 1;
                    if pause && groups == group {
                        let at = |name| writer.header().i.as_ref().unwrap().index_of(name);
                        writer.event(&Event::LoggingResume {
                            iteration: values[at("loopIteration").unwrap()] as u32,
                            time: values[at("time").unwrap()] as u32,
                        });
                    }
                }
                let mut values = values.clone();
                let start = writer.bytes().len();
                if groups == group {
                    values[field] += shift;
                    if *kind == FrameKind::I {
                        range.start = start;
                    }
                }
                writer.main(*kind, &values);
                if groups == group {
                    range.end = writer.bytes().len();
                }
            }
            Record::Frame(kind, values) => writer.other(*kind, values),
            Record::Event(event) => writer.event(event),
        }
    }
    (writer.finish(), range)
}

fn gyro_x() -> usize {
    let data = std::fs::read(common::own_corpus().join("generated/demo.bbl")).unwrap();
    let header = bbcheck::blackbox::header::Header::parse(&data, 0, data.len());
    header.i.unwrap().index_of("gyroADC[0]").unwrap()
}

#[test]
fn an_i_frame_group_shifted_from_both_neighbours_is_a_suspect_group() {
    let field = gyro_x();
    let (clean, _) = rewrite(5, field, 0, false);
    let (clean_records, clean_report) = decode(&clean);
    assert!(clean_report.is_clean(), "{:?}", clean_report.corrupt_spans);

    let (shifted, range) = rewrite(5, field, 20_000, false);
    let (records, report) = decode(&shifted);
    let suspect: Vec<_> = report
        .corrupt_spans
        .iter()
        .filter(|s| s.reason == DamageReason::SuspectGroup)
        .collect();
    assert_eq!(suspect.len(), 1, "{:?}", report.corrupt_spans);
    assert_eq!(report.corrupt_spans.len(), 1);
    let span = suspect[0];
    assert!(
        span.start as usize <= range.start && range.end <= span.end as usize,
        "span {}..{} misses the shifted group {range:?}",
        span.start,
        span.end
    );
    let mains = |r: &Collect| {
        r.0.iter()
            .filter(|r| matches!(r, Record::Frame(FrameKind::I | FrameKind::P, _)))
            .count()
    };
    assert_eq!(span.frames_lost as usize, 32);
    assert_eq!(mains(&records) + 32, mains(&clean_records));
    // No frame holding the shifted value is trusted.
    assert!(records.0.iter().all(|r| match r {
        Record::Frame(FrameKind::I | FrameKind::P, v) => v[field].abs() < 10_000,
        _ => true,
    }));
}

#[test]
fn a_group_after_a_logging_pause_is_not_compared_with_the_frames_before_it() {
    let field = gyro_x();
    let (paused, _) = rewrite(5, field, 20_000, true);
    let (_, report) = decode(&paused);
    assert!(report.is_clean(), "{:?}", report.corrupt_spans);
}

#[test]
fn a_shifted_group_right_after_damage_is_compared_with_the_last_trusted_group_before_it() {
    let field = gyro_x();
    // Two bytes dropped from the last P frame before the 5th group: its I frame follows damage.
    let drop_before = |data: Vec<u8>, at: usize| [&data[..at - 3], &data[at - 1..]].concat();
    let (clean, range) = rewrite(5, field, 0, false);
    let (_, report) = decode(&drop_before(clean, range.start));
    assert_eq!(report.corrupt_spans.len(), 1, "{:?}", report.corrupt_spans);
    let damage = report.corrupt_spans[0].clone();
    assert!(damage.end as usize <= range.start - 2, "{damage:?}");

    let (shifted, range) = rewrite(5, field, 20_000, false);
    let (records, report) = decode(&drop_before(shifted, range.start));
    // The group joins the damage before it: one span, from where the damage starts.
    assert_eq!(report.corrupt_spans.len(), 1, "{:?}", report.corrupt_spans);
    let span = &report.corrupt_spans[0];
    assert_eq!(
        (span.start, span.end as usize, span.reason),
        (damage.start, range.end - 2, damage.reason)
    );
    assert_eq!(span.frames_lost, damage.frames_lost + 32);
    assert!(records.0.iter().all(|r| match r {
        Record::Frame(FrameKind::I | FrameKind::P, v) => v[field].abs() < 10_000,
        _ => true,
    }));
}
