//! A block of the log written twice (a download that fetched a chunk again and kept both): the
//! frames read a second time are refused, none is trusted twice or with another's values.

use crate::common;

use bbcheck::blackbox::decoder::Validation;
use bbcheck::blackbox::frame::FrameKind;
use bbcheck::blackbox::sink::{Frame, Sink};
use bbcheck::report::{FileReport, Trust};
use std::collections::{HashMap, HashSet};

/// Main frames as (offset, length, values, trust).
#[derive(Default)]
struct Mains(Vec<(u64, usize, Vec<i64>, Trust)>, Vec<FrameKind>);

impl Sink for Mains {
    fn frame(&mut self, frame: &Frame<'_>) {
        if matches!(frame.kind, FrameKind::I | FrameKind::P) {
            self.0
                .push((frame.offset, frame.len, frame.values.to_vec(), frame.trust));
            self.1.push(frame.kind);
        }
    }
}

fn decode(data: &[u8]) -> (Mains, FileReport) {
    let mut mains = Mains::default();
    let report =
        bbcheck::blackbox::decode_with(Validation::Thorough, "t", data, |_, _| {}, &mut mains);
    (mains, report)
}

#[test]
fn an_i_frame_read_again_after_the_frames_it_starts_is_refused() {
    let data = std::fs::read(common::own_corpus().join("generated/demo.bbl")).unwrap();
    let (clean, _) = decode(&data);
    let truth: HashMap<(i64, i64), &Vec<i64>> = clean
        .0
        .iter()
        .map(|(_, _, v, _)| ((v[0], v[1]), v))
        .collect();
    let i_frames = (0..clean.0.len()).filter(|&i| clean.1[i] == FrameKind::I);
    let mut cases = 0;
    for i in i_frames.skip(1).take(12) {
        let (start, len, _, _) = clean.0[i];
        let end = start as usize + len;
        // The copy starts at the I frame, the block before it ends inside the frame after it.
        let next = clean.0[i + 1].1;
        for cut in 1..next {
            let mut copy = data[..end + cut].to_vec();
            copy.extend_from_slice(&data[start as usize..]);
            let (got, report) = decode(&copy);
            assert!(!report.is_clean(), "I frame {i}, cut {cut}");
            let mut seen = HashSet::new();
            for (offset, _, values, trust) in &got.0 {
                let key = (values[0], values[1]);
                assert!(
                    seen.insert(key),
                    "I frame {i}, cut {cut}: {key:?} twice at {offset}"
                );
                if *trust == Trust::Trusted {
                    assert_eq!(truth.get(&key), Some(&values), "I frame {i}, cut {cut}");
                }
            }
            cases += 1;
        }
    }
    assert!(cases >= 12, "{cases} cases");
}
