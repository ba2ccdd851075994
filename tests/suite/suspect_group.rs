//! A value shifted through a whole I-frame group (what a byte lost inside an I frame's field
//! leaves behind), or from a P frame to the next I frame (a flipped bit), is reported: its frames
//! are kept as suspect, with the rule, field and score that doubt them, or refused as a
//! suspect-group span when the score reaches the corrupt bound. No trusted frame holds it.

use crate::common;

use bbcheck::blackbox::event::Event;
use bbcheck::blackbox::frame::FrameKind;
use bbcheck::blackbox::sink::{Frame, Sink};
use bbcheck::blackbox::writer::SessionWriter;
use bbcheck::report::{DamageReason, FileReport, Rule, Trust};
use bbcheck::testkit::fuzzing::{Collect, Record};

fn decode(data: &[u8]) -> (Collect, FileReport) {
    let mut records = Collect::default();
    let report = bbcheck::blackbox::decode("t", data, |_, _| {}, &mut records);
    (records, report)
}

/// The values of the trusted main frames, and of the suspect ones.
#[derive(Default)]
struct ByTrust {
    trusted: Vec<Vec<i64>>,
    suspect: Vec<Vec<i64>>,
}

impl Sink for ByTrust {
    fn frame(&mut self, frame: &Frame<'_>) {
        if matches!(frame.kind, FrameKind::I | FrameKind::P) {
            match frame.trust {
                Trust::Trusted => self.trusted.push(frame.values.to_vec()),
                Trust::Suspect => self.suspect.push(frame.values.to_vec()),
            }
        }
    }
}

fn by_trust(data: &[u8]) -> ByTrust {
    let mut frames = ByTrust::default();
    bbcheck::blackbox::decode("t", data, |_, _| {}, &mut frames);
    frames
}

/// The report holds one suspect span, of `rule` on `field`, over `range`, and no corrupt span;
/// the frames it keeps in doubt are `frames`, and no trusted frame holds `field` other than `at`
/// (when given).
fn assert_suspect(
    data: &[u8],
    rule: Rule,
    (field, name): (usize, &str),
    range: &std::ops::Range<usize>,
    frames: usize,
    at: Option<i64>,
) {
    let (_, report) = decode(data);
    assert!(report.is_clean(), "{:?}", report.corrupt_spans);
    assert_eq!(report.verdict, "suspect");
    let spans = &report.suspect_spans;
    assert_eq!(spans.len(), 1, "{spans:?}");
    let span = &spans[0];
    assert_eq!(span.evidence.rule, rule);
    assert_eq!(span.evidence.field.as_deref(), Some(name));
    assert!(span.evidence.score >= 1.0, "{span:?}");
    assert!(span.start as usize <= range.start && range.end <= span.end as usize);
    assert_eq!(span.frames as usize, frames);
    let kept = by_trust(data);
    assert_eq!(kept.suspect.len(), frames);
    if let Some(at) = at {
        assert!(kept.trusted.iter().all(|v| v[field] == at));
    }
}

/// The demo log's first session, re-written with `shift` added to field `field` of every main
/// frame of the `group`-th I-frame group, after a logging-resume event if `pause`; with
/// `at_rest`, the field is 0 in every main frame before the shift. Also the byte range that
/// group's main frames take.
fn rewrite(
    group: usize,
    field: usize,
    shift: i64,
    pause: bool,
    at_rest: bool,
) -> (Vec<u8>, std::ops::Range<usize>) {
    rewrite_with(group, pause, |g, values| {
        if at_rest {
            values[field] = 0;
        }
        if g == group {
            values[field] += shift;
        }
    })
}

/// The demo log's first session, re-written with `edit` applied to the values of every main
/// frame (given the count of I frames so far), after a logging-resume event at the `group`-th
/// I frame if `pause`. Also the byte range the `group`-th I-frame group's main frames take.
fn rewrite_with(
    group: usize,
    pause: bool,
    edit: impl Fn(usize, &mut [i64]),
) -> (Vec<u8>, std::ops::Range<usize>) {
    let data = std::fs::read(common::own_corpus().join("generated/demo.bbl")).unwrap();
    let (_, report) = decode(&data);
    assert!(report.is_clean(), "the demo log is clean");
    // Its first session alone (frames after a log end are damage).
    let data = &data[..report.sessions[0].end as usize];
    let (records, _) = decode(data);
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
                edit(groups, &mut values);
                let start = writer.bytes().len();
                if groups == group && *kind == FrameKind::I {
                    range.start = start;
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

fn field_index(name: &str) -> usize {
    let data = std::fs::read(common::own_corpus().join("generated/demo.bbl")).unwrap();
    let header = bbcheck::blackbox::header::Header::parse(&data, 0, data.len());
    header.i.unwrap().index_of(name).unwrap()
}

fn gyro_x() -> usize {
    field_index("gyroADC[0]")
}

#[test]
fn an_i_frame_group_shifted_from_both_neighbours_is_a_suspect_group() {
    let field = gyro_x();
    let (clean, _) = rewrite(5, field, 0, false, false);
    let (clean_records, clean_report) = decode(&clean);
    assert!(clean_report.is_clean(), "{:?}", clean_report.corrupt_spans);

    let (shifted, range) = rewrite(5, field, 20_000, false, false);
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
fn an_i_frame_group_of_a_field_at_rest_offset_by_a_flipped_bit_is_a_suspect_group() {
    // 4, a flipped bit's error, is the smallest offset the test tells from a field at rest
    // (4 × (0 + 1)); 2 is not.
    let field = gyro_x();
    let (clean, _) = rewrite(5, field, 0, false, true);
    assert!(decode(&clean).1.is_clean());
    let (two, _) = rewrite(5, field, 2, false, true);
    let (_, two_report) = decode(&two);
    assert!(two_report.is_clean() && two_report.suspect_spans.is_empty());
    for error in [4, 8] {
        let (shifted, range) = rewrite(5, field, error, false, true);
        // The group's 32 main frames are kept, marked.
        assert_suspect(
            &shifted,
            Rule::IFrameOffset,
            (field, "gyroADC[0]"),
            &range,
            32,
            Some(0),
        );
    }
}

#[test]
fn an_i_frame_group_that_flight_moves_other_fields_into_is_not_an_offset() {
    // A throttle punch at an I frame: one field steps into the group and back out at the next
    // I frame, while two others step with it, as far past their own change (all at rest: 0),
    // and stay. With a step of 8 the field passes its threshold (4) twice over, and so do the
    // others at 8 (past their bar of 4): flight. Offset by 64, it passes its threshold 16 times,
    // further than the others move: damage.
    let field = gyro_x();
    let others = [field_index("axisP[0]"), field_index("axisP[1]")];
    let punch = |step: i64, others_step: i64| {
        rewrite_with(5, false, |g, values| {
            values[field] = if g == 5 { step } else { 0 };
            for &o in &others {
                values[o] = if g >= 5 { others_step } else { 0 };
            }
        })
    };
    let (flight, _) = punch(8, 8);
    let (_, report) = decode(&flight);
    assert!(
        report.is_clean() && report.suspect_spans.is_empty(),
        "{report:?}"
    );
    // Alone, the same step is an offset; and so it is where the others move less than it.
    for (step, others_step) in [(8, 0), (64, 8)] {
        let (shifted, range) = punch(step, others_step);
        assert_suspect(
            &shifted,
            Rule::IFrameOffset,
            (field, "gyroADC[0]"),
            &range,
            32,
            Some(0),
        );
    }
}

#[test]
fn a_group_after_a_logging_pause_is_not_compared_with_the_frames_before_it() {
    let field = gyro_x();
    let (paused, _) = rewrite(5, field, 20_000, true, false);
    let (_, report) = decode(&paused);
    assert!(report.is_clean(), "{:?}", report.corrupt_spans);
}

#[test]
fn a_shifted_group_right_after_damage_is_compared_with_the_last_trusted_group_before_it() {
    let field = gyro_x();
    // Two bytes dropped from the last P frame before the 5th group: its I frame follows damage.
    let drop_before = |data: Vec<u8>, at: usize| [&data[..at - 3], &data[at - 1..]].concat();
    let (clean, range) = rewrite(5, field, 0, false, false);
    let (_, report) = decode(&drop_before(clean, range.start));
    assert_eq!(report.corrupt_spans.len(), 1, "{:?}", report.corrupt_spans);
    let damage = report.corrupt_spans[0].clone();
    assert!(damage.end as usize <= range.start - 2, "{damage:?}");

    let (shifted, range) = rewrite(5, field, 20_000, false, false);
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

/// The demo log's second session alone (long enough for the motion of its fields to be learnt).
fn second_session() -> Vec<u8> {
    let data = std::fs::read(common::own_corpus().join("generated/demo.bbl")).unwrap();
    let (_, report) = decode(&data);
    data[report.sessions[1].start as usize..].to_vec()
}

/// The demo log's second session, re-written with `error` put into the stored delta of field
/// `field` in the `frame`-th main frame (a P frame) of the `group`-th I-frame group, as a flipped
/// bit there leaves it: the decoder's own predictor carries the error on through the P frames
/// after it, up to the next I frame. With `rest_from`, the field is 0 in every main frame from
/// that I-frame group on (the first is 1), the error aside. Also the byte range from that P frame
/// to the group's end, and where each main frame in it starts.
fn flip_delta(
    group: usize,
    frame: usize,
    field: usize,
    error: i64,
    rest_from: Option<usize>,
) -> (Vec<u8>, std::ops::Range<usize>, Vec<usize>) {
    let data = second_session();
    let (records, report) = decode(&data);
    let data_start = report.sessions[0].data_start as usize;
    let mut clean = SessionWriter::from_header_bytes(&data[..data_start]);
    let mut damaged = SessionWriter::from_header_bytes(&data[..data_start]);
    let predictor = clean.header().p.as_ref().unwrap().fields[field].predictor;
    let (mut groups, mut mains, mut range, mut damaged_frames) = (0, 0, 0..0, Vec::new());
    for record in &records.0 {
        match record {
            Record::Frame(kind @ (FrameKind::I | FrameKind::P), values) => {
                if *kind == FrameKind::I {
                    groups += 1;
                    mains = 0;
                }
                mains += 1;
                let mut values = values.clone();
                if rest_from.is_some_and(|from| groups >= from) {
                    values[field] = 0;
                }
                let mut written = values.clone();
                if groups == group && mains >= frame {
                    assert_eq!(*kind, FrameKind::P);
                    let delta = values[field]
                        - predictor.predict(field, &clean.context(FrameKind::P), &values);
                    let predicted =
                        predictor.predict(field, &damaged.context(FrameKind::P), &written);
                    written[field] = predicted + delta + if mains == frame { error } else { 0 };
                    if mains == frame {
                        range.start = damaged.bytes().len();
                    }
                    damaged_frames.push(damaged.bytes().len());
                }
                clean.main(*kind, &values);
                damaged.main(*kind, &written);
                if groups == group {
                    range.end = damaged.bytes().len();
                }
            }
            Record::Frame(kind, values) => {
                clean.other(*kind, values);
                damaged.other(*kind, values);
            }
            Record::Event(event) => {
                clean.event(event);
                damaged.event(event);
            }
        }
    }
    (damaged.finish(), range, damaged_frames)
}

/// The report holds the suspect-group stretch `range` alone (slow frames inside it stand, so it
/// can be several spans), and each span states the main frames whose bytes it holds (`frames`:
/// where each starts).
fn assert_suspect_stretch(
    name: &str,
    report: &FileReport,
    range: &std::ops::Range<usize>,
    frames: &[usize],
) {
    let spans = &report.corrupt_spans;
    assert!(!spans.is_empty(), "{name}: the offset is not reported");
    assert!(
        spans.iter().all(|s| s.reason == DamageReason::SuspectGroup),
        "{name}: {spans:?}"
    );
    assert_eq!(
        (spans[0].start as usize, spans[spans.len() - 1].end as usize),
        (range.start, range.end),
        "{name}: {spans:?}"
    );
    for span in spans {
        let held = frames
            .iter()
            .filter(|&&at| (span.start..span.end).contains(&(at as u64)))
            .count();
        assert_eq!(span.frames_lost as usize, held, "{name}: {span:?}");
    }
}

#[test]
fn a_value_offset_from_a_p_frame_to_the_next_i_frame_is_a_suspect_group() {
    let data = second_session();
    let header = bbcheck::blackbox::header::Header::parse(&data, 0, data.len());
    let def = header.i.unwrap();
    // One field the P frames predict from the frame before, one from the average of two (a
    // gyro, kept in 16 bits: an offset past them is a value it cannot take).
    for (name, offset) in [("axisP[0]", 1 << 22), ("gyroADC[0]", 1 << 14)] {
        let field = def.index_of(name).unwrap();
        let (clean, _, _) = flip_delta(47, 10, field, 0, None);
        let (clean_records, clean_report) = decode(&clean);
        assert!(clean_report.is_clean(), "{:?}", clean_report.corrupt_spans);

        // Far past the corrupt bound: refused.
        let (flipped, range, damaged_frames) = flip_delta(47, 10, field, offset, None);
        let lost = damaged_frames.len();
        assert!(lost > 2, "the P frame flipped is not the group's last");
        let (records, report) = decode(&flipped);
        // The flipped P frame and those predicted from it.
        assert_suspect_stretch(name, &report, &range, &damaged_frames);
        let spans = &report.corrupt_spans;
        // The frames before the flipped one are kept; those from it on are not.
        let mains = |r: &Collect| {
            r.0.iter()
                .filter(|r| matches!(r, Record::Frame(FrameKind::I | FrameKind::P, _)))
                .count()
        };
        assert!(
            spans.len() > 1,
            "{name}: slow frames split the stretch: {spans:?}"
        );
        // Each span is given the loop iterations up to the next span's first frame.
        assert_eq!(mains(&records) + lost, mains(&clean_records), "{name}");
        let iteration = |i: usize| match &clean_records.0[i] {
            Record::Frame(FrameKind::I | FrameKind::P, v) => Some(v[0]),
            _ => None,
        };
        let kept = (0..clean_records.0.len())
            .filter_map(iteration)
            .filter(|i| {
                records.0.iter().any(
                    |r| matches!(r, Record::Frame(FrameKind::I | FrameKind::P, v) if v[0] == *i),
                )
            })
            .collect::<Vec<_>>();
        let gap = kept.windows(2).map(|w| w[1] - w[0] - 1).max().unwrap();
        let iterations: u64 = spans.iter().map(|s| s.iterations_lost).sum();
        assert_eq!(iterations as i64, gap, "{name}: {spans:?}");
        assert!(
            spans.iter().all(|s| s.iterations_lost >= s.frames_lost),
            "{name}: {spans:?}"
        );
        let clean_values: Vec<_> = clean_records.0.iter().collect();
        assert!(
            records.0.iter().all(|r| clean_values.contains(&r)),
            "{name}: every frame kept is a clean one"
        );
    }
}

#[test]
fn a_field_that_holds_and_jumps_either_way_is_not_an_offset() {
    // A current sensor read every few frames: the field holds its value, then jumps up or down,
    // at the same place in every group, as a flipped bit in a P frame would leave one group.
    let data = second_session();
    let (records, report) = decode(&data);
    let data_start = report.sessions[0].data_start as usize;
    let mut writer = SessionWriter::from_header_bytes(&data[..data_start]);
    let field = writer
        .header()
        .i
        .as_ref()
        .unwrap()
        .index_of("amperageLatest")
        .unwrap();
    let (mut mains, mut level, mut seed) = (0u32, 1000i64, 7u64);
    for record in &records.0 {
        match record {
            Record::Frame(kind @ (FrameKind::I | FrameKind::P), values) => {
                if *kind == FrameKind::I {
                    mains = 0;
                }
                if mains == 5 || *kind == FrameKind::I {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let jump = 300 + (seed >> 40) as i64 % 900;
                    level += if seed >> 63 == 0 { jump } else { -jump };
                }
                mains += 1;
                let mut values = values.clone();
                values[field] = level;
                writer.main(*kind, &values);
            }
            Record::Frame(kind, values) => writer.other(*kind, values),
            Record::Event(event) => writer.event(event),
        }
    }
    let (_, report) = decode(&writer.finish());
    assert!(report.is_clean(), "{:?}", report.corrupt_spans);
}

#[test]
fn a_field_at_rest_offset_by_a_flipped_bit_is_a_suspect_group() {
    // A flipped bit's error is a power of two: 2 is the smallest that the offset test tells
    // from a field at rest (3 × 0 + 2), whether it rested all along or moved until a few I-frame
    // intervals before (a field is judged by its recent motion, not by the flight's); 1 is not.
    let data = second_session();
    let header = bbcheck::blackbox::header::Header::parse(&data, 0, data.len());
    let field = header.i.unwrap().index_of("axisP[0]").unwrap();
    for (rest_from, error) in [(1, 2), (1, 8), (47 - 8, 2), (47 - 8, 64)] {
        let (clean, _, _) = flip_delta(47, 10, field, 0, Some(rest_from));
        let (_, clean_report) = decode(&clean);
        assert!(clean_report.is_clean(), "{:?}", clean_report.corrupt_spans);
        let (unit, _, _) = flip_delta(47, 10, field, 1, Some(rest_from));
        let (_, unit_report) = decode(&unit);
        assert!(
            unit_report.suspect_spans.is_empty(),
            "{:?}",
            unit_report.suspect_spans
        );
        let (flipped, range, damaged_frames) = flip_delta(47, 10, field, error, Some(rest_from));
        // From the flipped P frame to the group's end, kept and marked.
        let first = *damaged_frames.first().unwrap();
        let range = first..range.end;
        assert_suspect(
            &flipped,
            Rule::PFrameOffset,
            (field, "axisP[0]"),
            &range,
            damaged_frames.len(),
            (rest_from == 1).then_some(0),
        );
    }
}

#[test]
fn suspect_frames_are_kept_and_marked_unless_dropped() {
    let (shifted, _) = rewrite(5, gyro_x(), 8, false, true);
    let dir = common::TempDir::new("suspect-cli");
    let log = dir.join("shifted.bbl");
    std::fs::write(&log, &shifted).unwrap();
    let log = log.to_str().unwrap();
    // Clean bytes with values in doubt: exit 0, unless asked to be strict.
    assert_eq!(common::bbcheck(&["check", log]).status.code(), Some(0));
    assert_eq!(
        common::bbcheck(&["check", "--strict", log]).status.code(),
        Some(1)
    );
    let info = common::bbcheck(&["info", log]);
    assert_eq!(info.status.code(), Some(0));
    assert!(
        String::from_utf8(info.stdout)
            .unwrap()
            .contains(", suspect")
    );
    let jsonl = |extra: &[&str]| {
        let out = common::bbcheck(&[&["export", "--jsonl", log], extra].concat());
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8(out.stdout).unwrap();
        let mains = text
            .lines()
            .filter(|l| l.starts_with("{\"type\":\"I\"") || l.starts_with("{\"type\":\"P\""));
        let (all, marked): (Vec<&str>, Vec<&str>) = (mains.clone().collect(), {
            mains
                .filter(|l| l.ends_with(",\"trust\":\"suspect\"}"))
                .collect()
        });
        (all.len(), marked.len())
    };
    let (all, marked) = jsonl(&[]);
    assert_eq!(marked, 32);
    assert_eq!(jsonl(&["--drop-suspect"]), (all - 32, 0));
    // Salvage keeps them (the output reads as the input did); --drop-suspect leaves them out.
    let kept = dir.join("kept.bbl");
    let dropped = dir.join("dropped.bbl");
    let salvage = |out: &std::path::Path, extra: &[&str]| {
        let args = [&["salvage", log, "-o", out.to_str().unwrap()], extra].concat();
        let run = common::bbcheck(&args);
        assert_eq!(run.status.code(), Some(0));
        let said = String::from_utf8(run.stdout).unwrap();
        let (_, report) = decode(&std::fs::read(out).unwrap());
        (report, said)
    };
    let (report, said) = salvage(&kept, &[]);
    assert_eq!(report.verdict, "suspect");
    assert!(said.contains("(32 suspect: values in doubt)"), "{said}");
    let (input, output) = (by_trust(&shifted), by_trust(&std::fs::read(&kept).unwrap()));
    assert_eq!(output.suspect, input.suspect);
    assert_eq!(output.trusted, input.trusted);
    let (report, said) = salvage(&dropped, &["--drop-suspect"]);
    assert_eq!(report.verdict, "clean");
    assert!(said.contains("; left out 32 suspect main frames"), "{said}");
    assert_eq!(
        by_trust(&std::fs::read(&dropped).unwrap()).trusted.len(),
        all - 32
    );
}
