//! Blackbox frame data that lost its header with the start of the log, and no donor log: the
//! header library holds one header per frame layout of the corpus, as its log wrote it, and
//! salvage reads such data with the one under which it decodes, or refuses with no wrong frame.

use crate::common;

use bbcheck::blackbox::frame::FrameKind;
use bbcheck::blackbox::library::{Entry, HeaderLibrary};
use bbcheck::blackbox::salvage::{borrow_from_library, lacks_header};
use bbcheck::blackbox::sink::{Frame, Sink};
use bbcheck::report::{RegionKind, Trust};
use std::collections::HashMap;

/// Main frames, by (iteration, time), with their values and whether they are trusted.
#[derive(Default)]
struct Mains {
    /// The main-frame field names of the session being read.
    names: Vec<String>,
    frames: Vec<(u64, Vec<i64>, bool, Vec<String>)>,
}

impl Sink for Mains {
    fn frame(&mut self, frame: &Frame<'_>) {
        if matches!(frame.kind, FrameKind::I | FrameKind::P) {
            let trusted = frame.trust == Trust::Trusted;
            let names = self.names.clone();
            self.frames
                .push((frame.offset, frame.values.to_vec(), trusted, names));
        }
    }
}

fn mains(data: &[u8]) -> Mains {
    let mut m = Mains::default();
    bbcheck::blackbox::decode(
        "t",
        data,
        |session, m: &mut Mains| {
            m.names = session
                .header
                .i
                .as_ref()
                .map_or_else(Vec::new, |d| d.names.clone());
        },
        &mut m,
    );
    m
}

/// The values that identify a main frame (iteration and time) and the others, but for the
/// fields named in `assumed` (those a predictor adds a craft's own constant to, which a header of
/// another craft sets otherwise).
fn key_and_values(
    values: &[i64],
    names: &[String],
    assumed: &[String],
) -> Option<((i64, i64), Vec<i64>)> {
    let at = |name: &str| names.iter().position(|n| n == name);
    let (i, t) = (at("loopIteration")?, at("time")?);
    let kept = values
        .iter()
        .zip(names)
        .filter(|(_, n)| !assumed.contains(n))
        .map(|(&v, _)| v)
        .collect();
    Some(((*values.get(i)?, *values.get(t)?), kept))
}

fn clean_logs() -> Vec<(String, Vec<u8>)> {
    let Some(corpus) = common::corpus() else {
        return Vec::new();
    };
    let mut logs = Vec::new();
    for entry in std::fs::read_dir(corpus.join("real/blackbox")).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let report = bbcheck::blackbox::decode("t", &data, |_, _| {}, &mut Mains::default());
        if report.is_clean() {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            logs.push((name, data));
        }
    }
    logs.sort();
    logs
}

#[test]
fn the_header_library_holds_each_corpus_layout_as_a_log_wrote_it() {
    // `bbcheck library ../shared/corpus/real/blackbox/* corpus/generated/*.bbl --to
    // src/blackbox/headers.txt` made it; adding a firmware version is that one command.
    let Some(corpus) = common::corpus() else {
        return;
    };
    let builtin = HeaderLibrary::builtin();
    let mut logs: Vec<_> = std::fs::read_dir(corpus.join("real/blackbox"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    logs.push(common::own_corpus().join("generated/demo.bbl"));
    let mut written: Vec<Entry> = Vec::new();
    for path in logs {
        let data = std::fs::read(&path).unwrap();
        for bounds in bbcheck::blackbox::find_sessions(&data) {
            let mut one = HeaderLibrary::default();
            if let Some(entry) = one.add(&data, bounds.start, bounds.end) {
                written.push(entry.clone());
            }
        }
    }
    for entry in &builtin.entries {
        assert!(
            written.contains(entry),
            "{}: no corpus session wrote this header",
            entry.firmware()
        );
    }
    for entry in &written {
        assert!(
            builtin.entries.iter().any(|e| e.layout() == entry.layout()),
            "{}: layout missing from the library",
            entry.firmware()
        );
    }
    let layouts: Vec<Vec<String>> = builtin.entries.iter().map(Entry::layout).collect();
    assert!(
        (1..layouts.len()).all(|i| !layouts[..i].contains(&layouts[i])),
        "one entry per layout"
    );
}

/// What salvaging `data` (a log without its first `cut` bytes) with a header from `library` kept.
struct Outcome {
    refused: bool,
    /// Main frames of the intact log after the cut, those recovered trusted as they were, and
    /// trusted frames whose values differ from the intact frame of their iteration and time (or
    /// that have none).
    after_cut: u64,
    exact: u64,
    wrong: u64,
}

fn recover(intact: &[u8], cut: usize, library: &HeaderLibrary) -> Option<Outcome> {
    let clean = mains(intact);
    let after_cut = clean
        .frames
        .iter()
        .filter(|(offset, ..)| *offset >= cut as u64)
        .count() as u64;
    let data = &intact[cut..];
    // A cut that leaves too little of a session to tell frame data by leaves nothing to borrow
    // for.
    if !lacks_header(data, &mut |_| {}) {
        return None;
    }
    let Ok((borrowed, choice)) = borrow_from_library(data, library, &mut |_| {}) else {
        return Some(Outcome {
            refused: true,
            after_cut,
            exact: 0,
            wrong: 0,
        });
    };
    let assumed: Vec<String> = choice
        .constants
        .iter()
        .flat_map(|(_, _, fields)| fields.iter().cloned())
        .collect();
    let truth: HashMap<(i64, i64), Vec<i64>> = clean
        .frames
        .iter()
        .filter_map(|(_, v, _, names)| key_and_values(v, names, &assumed))
        .collect();
    let mut bytes = Vec::new();
    borrowed.write_to(data, &mut bytes, |_| {}).unwrap();
    let (mut exact, mut wrong) = (0, 0);
    for (_, values, trusted, names) in mains(&bytes).frames {
        let Some((key, values)) = key_and_values(&values, &names, &assumed).filter(|_| trusted)
        else {
            continue;
        };
        match truth.get(&key) {
            Some(t) if *t == values => exact += 1,
            _ => wrong += 1,
        }
    }
    Some(Outcome {
        refused: false,
        after_cut,
        exact,
        wrong,
    })
}

#[test]
fn frame_data_that_lost_its_start_is_read_with_a_header_from_the_library() {
    let library = HeaderLibrary::builtin();
    let (mut after_cut, mut exact, mut cases) = (0, 0, 0);
    for (name, data) in clean_logs() {
        for cut in [1 << 10, 16 << 10, 64 << 10] {
            if cut * 2 > data.len() {
                continue;
            }
            let Some(got) = recover(&data, cut, &library) else {
                continue;
            };
            let case = format!("{name} without its first {cut} bytes");
            assert!(!got.refused, "{case}: refused");
            assert_eq!(got.wrong, 0, "{case}: wrong trusted frames");
            // Frames of the first I-frame interval after the cut have no I frame to start from.
            assert!(
                got.exact * 100 >= got.after_cut * 97,
                "{case}: {} of {} frames",
                got.exact,
                got.after_cut
            );
            (after_cut, exact, cases) = (after_cut + got.after_cut, exact + got.exact, cases + 1);
        }
    }
    if cases > 0 {
        println!(
            "{cases} logs cut: {exact} of {after_cut} main frames after the cut recovered ({:.3} %)",
            100.0 * exact as f64 / after_cut as f64
        );
    }
}

#[test]
fn a_layout_the_library_lacks_is_refused_without_a_wrong_frame() {
    let builtin = HeaderLibrary::builtin();
    let (mut refused, mut cases) = (0, 0);
    for (name, data) in clean_logs() {
        let cut = 16 << 10;
        if cut * 2 > data.len() {
            continue;
        }
        // The library without the layout of the log's first session.
        let session = bbcheck::blackbox::find_sessions(&data)[0];
        let mut own = HeaderLibrary::default();
        let Some(own) = own.add(&data, session.start, session.end).cloned() else {
            continue;
        };
        let mut library = builtin.clone();
        library.entries.retain(|e| e.layout() != own.layout());
        let Some(got) = recover(&data, cut, &library) else {
            continue;
        };
        assert_eq!(
            got.wrong, 0,
            "{name}: wrong trusted frames under another layout"
        );
        refused += u64::from(got.refused);
        cases += 1;
    }
    println!("{refused} of {cases} logs refused without their layout in the library");
}

#[test]
fn frame_data_before_the_first_session_is_a_lost_header_not_other_data() {
    let mut cases = 0;
    for (name, data) in clean_logs() {
        let sessions = bbcheck::blackbox::find_sessions(&data);
        let Some(second) = sessions.get(1) else {
            continue;
        };
        // The first session without its header and first I frames, leaving enough to tell.
        let cut = sessions[0].start + 8192;
        if second.start < cut + 8192 {
            continue;
        }
        let report = bbcheck::blackbox::decode("t", &data[cut..], |_, _| {}, &mut Mains::default());
        let region = report.regions.first().map(|r| (r.start, r.end, r.kind));
        let expected = (0, (second.start - cut) as u64, RegionKind::HeaderLost);
        assert_eq!(region, Some(expected), "{name}");
        assert!(!report.is_clean() && report.verdict == "damaged", "{name}");
        cases += 1;
    }
    assert!(
        common::corpus().is_none() || cases >= 3,
        "{cases} logs of several sessions"
    );
}
