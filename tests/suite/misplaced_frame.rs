//! A byte inserted or dropped inside a frame can leave it reading one byte too many or too few
//! and still ending on a frame-type byte. The frame after it then does not decode: a P frame
//! before the failure is not trusted, and the corrupt span starts where it starts.

use crate::common;

use bbcheck::blackbox::decoder::Validation;
use bbcheck::blackbox::frame::FrameKind;
use bbcheck::blackbox::sink::{Frame, Sink};
use bbcheck::report::{DamageReason, FileReport};

/// Main frames as (offset, length, values), and which of them are P frames.
#[derive(Default)]
struct Mains(Vec<(u64, usize, Vec<i64>)>, Vec<bool>);

impl Sink for Mains {
    fn frame(&mut self, frame: &Frame<'_>) {
        if matches!(frame.kind, FrameKind::I | FrameKind::P) {
            self.0
                .push((frame.offset, frame.len, frame.values.to_vec()));
            self.1.push(frame.kind == FrameKind::P);
        }
    }
}

fn decode(validation: Validation, data: &[u8]) -> (Mains, FileReport) {
    let mut mains = Mains::default();
    let report = bbcheck::blackbox::decode_with(validation, "t", data, |_, _| {}, &mut mains);
    (mains, report)
}

/// Whether the reason is a frame that did not decode where it was looked for.
fn decode_failure(reason: DamageReason) -> bool {
    matches!(
        reason,
        DamageReason::BadEncoding
            | DamageReason::FrameRejectedNextByte
            | DamageReason::FrameTooLong
    )
}

#[test]
fn the_p_frame_before_one_that_does_not_decode_is_not_trusted() {
    let data = std::fs::read(common::own_corpus().join("generated/demo.bbl")).unwrap();
    // The first 100 main frames are enough, and quick to decode many times.
    let (clean, _) = decode(Validation::Thorough, &data);
    let (offset, _, _) = clean.0[100];
    let data = &data[..offset as usize];
    let (clean, report) = decode(Validation::Thorough, data);
    assert!(
        report.corrupt_spans.is_empty(),
        "{:?}",
        report.corrupt_spans
    );
    // The main frames the damaged copies can hold, by (iteration, time).
    let truth: std::collections::HashMap<(i64, i64), &Vec<i64>> =
        clean.0.iter().map(|(_, _, v)| ((v[0], v[1]), v)).collect();
    let mut cases = 0;
    // One byte inserted inside each of 30 P frames, every value it can take.
    let p_frames = clean.0.iter().zip(&clean.1).filter(|(_, p)| **p);
    for ((offset, len, _), _) in p_frames.skip(10).take(30) {
        let (offset, len) = (*offset as usize, *len);
        for at in offset + 1..offset + len {
            for byte in 0..=255u8 {
                let mut damaged = data.to_vec();
                damaged.insert(at, byte);
                // The reference rules accept the frame (its next byte starts a frame), the frame
                // after it fails, and the accepted frame holds values no clean frame has.
                let (reference, reference_report) = decode(Validation::Reference, &damaged);
                let Some((_, got_len, values)) =
                    reference.0.iter().find(|(o, _, _)| *o as usize == offset)
                else {
                    continue;
                };
                let failure_after = reference_report.corrupt_spans.first().is_some_and(|s| {
                    s.start as usize == offset + got_len && decode_failure(s.reason)
                });
                if !failure_after || truth.get(&(values[0], values[1])) == Some(&values) {
                    continue;
                }
                cases += 1;
                let (mains, report) = decode(Validation::Thorough, &damaged);
                assert!(
                    mains
                        .0
                        .iter()
                        .all(|(_, _, v)| truth.get(&(v[0], v[1])) == Some(&v)),
                    "byte {byte:#04x} inserted at {at}: a frame with values no clean frame has"
                );
                let span = &report.corrupt_spans[0];
                assert_eq!(
                    span.start as usize, offset,
                    "byte {byte:#04x} inserted at {at}: the span starts at the frame"
                );
                assert!(decode_failure(span.reason), "{span:?}");
            }
        }
    }
    assert!(
        cases >= 10,
        "only {cases} insertions leave a frame reading in step"
    );
}
