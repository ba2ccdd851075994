//! Recovery quality over the real corpus: every damage model, many seeds (one for a text-mode
//! copy, which the seed does not change), measured against the truth the damage generator
//! records. Prints one table row per model (run with `--nocapture`).
//!
//! - ceiling: clean main frames whose bytes, and the bytes of every frame their prediction chain
//!   goes back through to its I frame, survived the damage;
//! - recall: trusted main frames equal to a ceiling frame, over the ceiling;
//! - wrong: trusted main frames with the iteration and time of a clean frame but other values;
//! - bogus: trusted main frames whose iteration and time no clean frame has;
//! - material: wrong or bogus trusted frames with a field whose error exceeds that field's local
//!   envelope in the clean log (its largest frame-to-frame change within 32 frames either side,
//!   plus 2; a bogus frame is compared with the clean frame of its iteration, and is material
//!   when there is none);
//! - suspect: main frames kept but marked suspect (a value rule doubts them), and how many of
//!   them are wrong or bogus;
//! - lost: clean main frames missing between two accepted ones of a session, against the frames
//!   lost the corrupt spans report;
//! - wrong others: accepted S, G, H and E frames that are not a clean one (by where their bytes
//!   were in the input, and their values);
//! - localisation: damage points inside a reported corrupt span or within one frame (256 bytes),
//!   or, for a cut at the end of the file, where a session the report marks as stopping without
//!   its log-end event stops;
//! - held: clean frames a salvaged log holds, over all clean frames (salvage writes exactly the
//!   trusted frames, `tests/suite/salvage.rs`);
//! - for a text-mode copy, recall apart for the ceiling frames whose chain holds no line-feed byte
//!   (nothing in them can have been a carriage return) and for the others.
//!
//! The "reference" columns decode the same files with the reference decoders' rules.
//! `BBCHECK_QUALITY_MODELS=newline,bit-flips` measures only the models named;
//! `BBCHECK_QUALITY_MATERIAL=1` prints every material trusted frame, `BBCHECK_QUALITY_MATERIAL=all`
//! every wrong or bogus one.

use crate::common;

use bbcheck::blackbox::decoder::Validation;
use bbcheck::blackbox::event::Event;
use bbcheck::blackbox::frame::FrameKind;
use bbcheck::blackbox::sink::{EventFrame, Frame, Sink};
use bbcheck::report::Trust;
use bbcheck::testkit::damage::{self, Model};
use std::collections::{HashMap, HashSet};

const SEEDS: u64 = 6;

/// The seeds a model is measured with: one when the seed changes nothing.
fn seeds(model: Model) -> u64 {
    if model.uses_seed() { SEEDS } else { 1 }
}

/// Main frames of a decode: key (iteration, 32-bit time) → values; and their byte ranges. And the
/// other frames.
#[derive(Default)]
struct Mains {
    frames: Vec<MainFrame>,
    others: Vec<OtherFrame>,
}

/// An S, G, H or E frame.
#[derive(PartialEq)]
struct OtherFrame {
    kind: FrameKind,
    start: u64,
    len: u64,
    values: Vec<i64>,
    event: Option<Event>,
}

struct MainFrame {
    kind: FrameKind,
    trust: Trust,
    start: u64,
    end: u64,
    key: (i64, i64),
    values: Vec<i64>,
}

impl Sink for Mains {
    fn frame(&mut self, frame: &Frame<'_>) {
        if !matches!(frame.kind, FrameKind::I | FrameKind::P) {
            self.others.push(OtherFrame {
                kind: frame.kind,
                start: frame.offset,
                len: frame.len as u64,
                values: frame.values.to_vec(),
                event: None,
            });
            return;
        }
        let (t, _) = frame.time.expect("main frames have a time");
        self.frames.push(MainFrame {
            kind: frame.kind,
            trust: frame.trust,
            start: frame.offset,
            end: frame.offset + frame.len as u64,
            key: (frame.values[0], frame.values[t]),
            values: frame.values.to_vec(),
        });
    }

    fn event(&mut self, event: &EventFrame<'_>) {
        self.others.push(OtherFrame {
            kind: FrameKind::E,
            start: event.offset,
            len: event.len as u64,
            values: Vec::new(),
            event: Some(event.event.clone()),
        });
    }
}

fn decode(data: &[u8], validation: Validation) -> (Mains, bbcheck::report::FileReport) {
    let mut mains = Mains::default();
    let report = bbcheck::blackbox::decode_with(validation, "quality", data, |_, _| {}, &mut mains);
    (mains, report)
}

#[derive(Default, Clone, Copy)]
struct Tally {
    cases: u64,
    clean_frames: u64,
    ceiling: u64,
    recovered: u64,
    wrong: u64,
    bogus: u64,
    /// Wrong or bogus trusted frames beyond the field's local envelope.
    material: u64,
    /// Suspect frames, and those of them that are wrong or bogus.
    suspect: u64,
    suspect_wrong: u64,
    reference_material: u64,
    reference_recovered: u64,
    reference_wrong: u64,
    reference_bogus: u64,
    points: u64,
    localised: u64,
    /// Clean main frames missing between two accepted ones of a session, and the frames lost the
    /// corrupt spans report.
    lost: u64,
    reported_lost: u64,
    /// Accepted S, G, H and E frames that are not a clean one.
    wrong_others: u64,
    reference_wrong_others: u64,
    /// Clean frames the salvaged log holds (salvage writes exactly the trusted frames).
    held: u64,
    /// Ceiling frames whose prediction chain holds no line-feed byte (in a text-mode copy every
    /// line feed may have been a carriage return), and those of them recovered.
    plain_ceiling: u64,
    plain_recovered: u64,
    /// Cases whose report names blocks written over the log, and the trusted main frames wrong or
    /// bogus and other frames wrong there.
    written_over_found: u64,
    written_over_wrong: u64,
    written_over_others: u64,
}

/// The clean frames whose bytes and prediction chain survived `changes`.
fn ceiling(clean: &Mains, changes: &[damage::Change]) -> Vec<bool> {
    let touched = |start: u64, end: u64| {
        changes.iter().any(|c| {
            let (a, b) = (c.input_offset, c.input_offset + c.input_length);
            if c.input_length == 0 {
                start < a && a < end
            } else {
                a < end && start < b
            }
        })
    };
    let mut intact = Vec::with_capacity(clean.frames.len());
    let mut chain_ok = false;
    for f in &clean.frames {
        let ok = !touched(f.start, f.end);
        chain_ok = match f.kind {
            FrameKind::I => ok,
            _ => chain_ok && ok,
        };
        intact.push(chain_ok);
    }
    intact
}

/// Per clean frame, whether no byte of it or of the frames its prediction chain goes back through
/// is a line feed.
fn without_line_feeds(data: &[u8], clean: &Mains) -> Vec<bool> {
    let mut plain = false;
    clean
        .frames
        .iter()
        .map(|f| {
            let own = !data[f.start as usize..f.end as usize].contains(&b'\n');
            plain = own && (f.kind == FrameKind::I || plain);
            plain
        })
        .collect()
}

/// Clean frames by key: their index and values; and the index of each iteration's frame.
struct Truth<'a> {
    by_key: HashMap<(i64, i64), (usize, &'a [i64])>,
    by_iteration: HashMap<i64, usize>,
    clean: &'a Mains,
}

impl Truth<'_> {
    fn get(&self, key: &(i64, i64)) -> Option<&(usize, &[i64])> {
        self.by_key.get(key)
    }

    /// Whether `values`, standing for clean frame `i`, has a field off by more than the field's
    /// largest frame-to-frame change within [`ENVELOPE`] frames either side, plus 2.
    fn material(&self, i: usize, values: &[i64]) -> bool {
        let frames = &self.clean.frames;
        values.iter().enumerate().any(|(f, &v)| {
            frames[i]
                .values
                .get(f)
                .is_none_or(|&truth| (v - truth).abs() > self.envelope(i, f) + 2)
        })
    }

    /// Field `f`'s largest frame-to-frame change within [`ENVELOPE`] frames of clean frame `i`.
    fn envelope(&self, i: usize, f: usize) -> i64 {
        let frames = &self.clean.frames;
        let (from, to) = (
            i.saturating_sub(ENVELOPE),
            (i + ENVELOPE).min(frames.len() - 1),
        );
        (from..to)
            .filter_map(|j| {
                let (a, b) = (frames[j].values.get(f)?, frames[j + 1].values.get(f)?);
                Some((b - a).abs())
            })
            .max()
            .unwrap_or(0)
    }
}

/// Frames either side of a clean frame whose changes make a field's envelope.
const ENVELOPE: usize = 32;

fn truth(clean: &Mains) -> Truth<'_> {
    Truth {
        by_key: clean
            .frames
            .iter()
            .enumerate()
            .map(|(i, f)| (f.key, (i, f.values.as_slice())))
            .collect(),
        by_iteration: clean
            .frames
            .iter()
            .enumerate()
            .rev()
            .map(|(i, f)| (f.key.0, i))
            .collect(),
        clean,
    }
}

/// Frames counted by [`score`].
#[derive(Default)]
struct Score {
    /// Accepted frames equal to a ceiling frame.
    recovered: u64,
    /// Those of them whose chain holds no line feed (see [`without_line_feeds`]).
    plain: u64,
    wrong: u64,
    bogus: u64,
    material: u64,
    suspect: u64,
    suspect_wrong: u64,
    /// Accepted frames equal to a clean one.
    held: u64,
}

fn score(truth: &Truth<'_>, intact: &[bool], plain: &[bool], got: &Mains) -> Score {
    let mut s = Score::default();
    // A frame of the flight trusted twice (read again where a block was written twice) stands
    // where the flight has none: bogus.
    let mut trusted = HashSet::new();
    for f in &got.frames {
        let exact = match truth.get(&f.key) {
            Some(&(i, values)) if values == f.values.as_slice() => Some(i),
            _ => None,
        };
        if f.trust == Trust::Suspect {
            s.suspect += 1;
            s.suspect_wrong += u64::from(exact.is_none());
            continue;
        }
        if !trusted.insert(f.key) {
            s.bogus += 1;
            continue;
        }
        match (exact, truth.get(&f.key)) {
            (Some(i), _) => {
                s.recovered += u64::from(intact[i]);
                s.plain += u64::from(intact[i] && plain[i]);
                s.held += 1;
            }
            (None, Some(&(i, _))) => {
                s.wrong += 1;
                s.material += u64::from(truth.material(i, &f.values));
            }
            (None, None) => {
                s.bogus += 1;
                let same_iteration = truth.by_iteration.get(&f.key.0);
                s.material +=
                    u64::from(same_iteration.is_none_or(|&i| truth.material(i, &f.values)));
            }
        }
    }
    s
}

/// Prints each material trusted frame of `got` (see [`score`]): its kind, iteration, and every
/// field it gets wrong as `f<index>:<error>/<envelope>`.
fn print_material(truth: &Truth<'_>, got: &Mains, case: &str, all: bool) {
    let frames = &truth.clean.frames;
    for f in got.frames.iter().filter(|f| f.trust == Trust::Trusted) {
        let i = match (truth.get(&f.key), truth.by_iteration.get(&f.key.0)) {
            (Some(&(i, _)), _) | (None, Some(&i)) => i,
            (None, None) => {
                println!("{case}: {:?} iteration {} exists nowhere", f.kind, f.key.0);
                continue;
            }
        };
        let clean = frames[i].values.as_slice();
        if clean == f.values.as_slice() || !(all || truth.material(i, &f.values)) {
            continue;
        }
        let fields: Vec<String> = f
            .values
            .iter()
            .zip(clean)
            .enumerate()
            .filter(|(_, (v, c))| v != c)
            .map(|(field, (v, c))| format!("f{field}:{:+}/{}", v - c, truth.envelope(i, field)))
            .collect();
        println!(
            "{case}: {:?} {} @{} {}",
            f.kind,
            f.key.0,
            f.start,
            fields.join(" ")
        );
    }
}

/// Clean main frames missing between two accepted ones of the same session of `report`.
fn lost_between(truth: &Truth<'_>, got: &Mains, report: &bbcheck::report::FileReport) -> u64 {
    let session = |offset: u64| report.sessions.partition_point(|s| s.start <= offset);
    // A suspect frame may carry a wrong time: it stands for the clean frame of its iteration
    // that follows the last one accepted.
    let frames = &truth.clean.frames;
    let mut accepted: Vec<(usize, usize)> = Vec::new();
    for f in &got.frames {
        let i = match truth.get(&f.key) {
            Some(&(i, _)) => Some(i),
            None if f.trust == Trust::Suspect => {
                let from = accepted.last().map_or(0, |&(_, i)| i + 1);
                (from..frames.len().min(from + 1024)).find(|&i| frames[i].key.0 == f.key.0)
            }
            None => None,
        };
        if let Some(i) = i {
            accepted.push((session(f.start), i));
        }
    }
    accepted
        .windows(2)
        .filter(|w| w[0].0 == w[1].0 && w[1].1 > w[0].1)
        .map(|w| (w[1].1 - w[0].1 - 1) as u64)
        .sum()
}

/// Accepted S, G, H and E frames in `got` that are not a clean one: at the input offset their bytes
/// came from (or, when a change touched them, where their first or last byte came from), the clean
/// decode holds no frame of their kind with their values.
fn wrong_others(clean: &Mains, changes: &[damage::Change], got: &Mains) -> u64 {
    let at: HashMap<u64, &OtherFrame> = clean.others.iter().map(|f| (f.start, f)).collect();
    let same = |f: &OtherFrame, start: Option<u64>| {
        start.and_then(|s| at.get(&s)).is_some_and(|c| {
            c.kind == f.kind && c.len == f.len && c.values == f.values && c.event == f.event
        })
    };
    let wrong = got.others.iter().filter(|f| {
        let whole = common::input_offset(changes, f.start, f.len);
        let first = common::input_offset(changes, f.start, 1);
        let last = common::input_offset(changes, f.start + f.len - 1, 1)
            .and_then(|end| (end + 1).checked_sub(f.len));
        !(same(f, whole) || same(f, first) || same(f, last))
    });
    wrong.count() as u64
}

fn measure() -> Option<Vec<(Model, Tally)>> {
    let corpus = common::corpus()?;
    let mut logs = Vec::new();
    for entry in std::fs::read_dir(corpus.join("real/blackbox")).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let (clean, report) = decode(&data, Validation::Thorough);
        // Damaged fixtures have no clean truth to measure against.
        if report.is_clean() {
            let plain = without_line_feeds(&data, &clean);
            logs.push((data, clean, plain));
        }
    }
    let mut table = Vec::new();
    let truths: Vec<Truth<'_>> = logs.iter().map(|(_, clean, _)| truth(clean)).collect();
    let only = std::env::var("BBCHECK_QUALITY_MODELS").ok();
    let print_material_frames = std::env::var("BBCHECK_QUALITY_MATERIAL").ok();
    let wanted = |m: Model| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|n| n == m.name()))
    };
    let models = Model::ALL.into_iter().chain(Model::WRITTEN_OVER);
    for model in models.filter(|&m| wanted(m)) {
        let mut t = Tally::default();
        for ((data, clean, plain), truth) in logs.iter().zip(&truths) {
            for seed in 0..seeds(model) {
                let d = damage::damage(data, model, seed);
                let intact = ceiling(clean, &d.changes);
                let (got, report) = decode(&d.data, Validation::Thorough);
                let (reference, _) = decode(&d.data, Validation::Reference);
                let ours = score(truth, &intact, plain, &got);
                if let Some(which) = &print_material_frames {
                    let all = which == "all";
                    let case = format!(
                        "{} {} seed {seed}, {} frames",
                        model.name(),
                        data.len(),
                        clean.frames.len()
                    );
                    print_material(truth, &got, &case, all);
                    if all {
                        for c in &d.changes {
                            println!("{case}: change {c:?}");
                        }
                    }
                }
                let theirs = score(truth, &intact, plain, &reference);
                t.held += ours.held;
                t.cases += 1;
                t.clean_frames += clean.frames.len() as u64;
                t.ceiling += intact.iter().filter(|&&x| x).count() as u64;
                t.plain_ceiling +=
                    intact.iter().zip(plain).filter(|(i, p)| **i && **p).count() as u64;
                t.recovered += ours.recovered;
                t.plain_recovered += ours.plain;
                t.wrong += ours.wrong;
                t.bogus += ours.bogus;
                t.material += ours.material;
                t.suspect += ours.suspect;
                t.suspect_wrong += ours.suspect_wrong;
                t.reference_material += theirs.material;
                t.reference_recovered += theirs.recovered;
                t.reference_wrong += theirs.wrong;
                t.reference_bogus += theirs.bogus;
                t.lost += lost_between(truth, &got, &report);
                t.reported_lost += report
                    .corrupt_spans
                    .iter()
                    .map(|s| s.frames_lost)
                    .sum::<u64>();
                let others = wrong_others(clean, &d.changes, &got);
                t.wrong_others += others;
                if report.periodic_overwrites.is_some() {
                    t.written_over_found += 1;
                    t.written_over_wrong += ours.wrong + ours.bogus;
                    t.written_over_others += others;
                }
                t.reference_wrong_others += wrong_others(clean, &d.changes, &reference);
                for c in &d.changes {
                    t.points += 1;
                    // A suspect span marks the damage as well as a corrupt one.
                    let spans = report.corrupt_spans.iter().map(|s| (s.start, s.end));
                    let suspect = report.suspect_spans.iter().map(|s| (s.start, s.end));
                    let near = spans.chain(suspect).any(|(start, end)| {
                        start <= c.offset + c.length.max(1) + 256 && c.offset < end + 256
                    });
                    // A cut between two frames leaves no damaged byte: the report says where the
                    // session stops and that it stops without its log-end event.
                    let cut_short = report.sessions.iter().any(|s| {
                        !s.log_end && s.end == c.offset && c.offset == d.data.len() as u64
                    });
                    t.localised += u64::from(near || cut_short);
                }
            }
        }
        table.push((model, t));
    }
    Some(table)
}

fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        100.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

#[test]
fn recovery_quality_per_damage_model() {
    let Some(table) = measure() else { return };
    println!(
        "\n{:<15} {:>5} {:>9} {:>8} {:>8} {:>6} {:>6} {:>5} {:>8} {:>7} {:>7} {:>6} {:>6} {:>7} {:>8} {:>8} {:>7} {:>7} {:>7} {:>7}",
        "model",
        "cases",
        "ceiling",
        "recall%",
        "ref%",
        "wrong",
        "bogus",
        "mat",
        "ref w+b",
        "ref mat",
        "suspect",
        "s-w+b",
        "others",
        "ref oth",
        "lost",
        "rep lost",
        "ceil%",
        "local%",
        "points",
        "held%"
    );
    for (model, t) in &table {
        println!(
            "{:<15} {:>5} {:>9} {:>8.3} {:>8.3} {:>6} {:>6} {:>5} {:>8} {:>7} {:>7} {:>6} {:>6} {:>7} {:>8} {:>8} {:>7.2} {:>7.2} {:>7} {:>7.2}",
            model.name(),
            t.cases,
            t.ceiling,
            pct(t.recovered, t.ceiling),
            pct(t.reference_recovered, t.ceiling),
            t.wrong,
            t.bogus,
            t.material,
            t.reference_wrong + t.reference_bogus,
            t.reference_material,
            t.suspect,
            t.suspect_wrong,
            t.wrong_others,
            t.reference_wrong_others,
            t.lost,
            t.reported_lost,
            pct(t.ceiling, t.clean_frames),
            pct(t.localised, t.points),
            t.points,
            pct(t.held, t.clean_frames),
        );
    }
    for (model, t) in table.iter().filter(|(m, _)| m.is_text_mode_copy()) {
        let rest = (t.ceiling - t.plain_ceiling, t.recovered - t.plain_recovered);
        println!(
            "{}: ceiling frames without a line feed in their chain {} ({:.2} %), recall {:.3} %; \
             with one {} (the byte may have been a carriage return), recall {:.3} %",
            model.name(),
            t.plain_ceiling,
            pct(t.plain_ceiling, t.ceiling),
            pct(t.plain_recovered, t.plain_ceiling),
            rest.0,
            pct(rest.1, rest.0),
        );
    }
    for (model, t) in table
        .iter()
        .filter(|(m, _)| Model::WRITTEN_OVER.contains(m))
    {
        println!(
            "{}: blocks found in {} of {} cases; there, {} main frames trusted wrong or bogus, \
             {} other frames wrong",
            model.name(),
            t.written_over_found,
            t.cases,
            t.written_over_wrong,
            t.written_over_others
        );
    }
    for (model, t) in &table {
        let name = model.name();
        let (recall, local) = (pct(t.recovered, t.ceiling), pct(t.localised, t.points));
        let (ours, reference) = (t.wrong + t.bogus, t.reference_wrong + t.reference_bogus);
        assert!(
            ours <= reference,
            "{name}: {ours} wrong or bogus frames, reference {reference}"
        );
        // What trusted frames get wrong matters to the flight no more often than the reference
        // decoders' errors do; damage that puts no frame out of step leaves no such error.
        assert!(
            t.material <= t.reference_material,
            "{name}: {} material errors, reference {}",
            t.material,
            t.reference_material
        );
        if !model.changes_values_in_place() && *model != Model::DropBytes {
            assert_eq!(t.material, 0, "{name}: material errors in trusted frames");
        }
        // An S, G, H or E frame stands on its own bytes, the main frame its time is predicted from
        // and the frames around it: none is trusted wrong, but in a text-mode copy, at most a
        // tenth of the reference decoders' count.
        // The frames lost a report states are the frames missing, but where bogus frames stand in
        // for clean ones.
        if t.bogus == 0 {
            assert_eq!(t.reported_lost, t.lost, "{name}: frames lost reported");
        }
        let others = (t.wrong_others, t.reference_wrong_others);
        if model.is_text_mode_copy() {
            assert!(
                others.0 * 10 <= others.1,
                "{name}: {others:?} wrong S, G, H, E frames"
            );
        } else if *model == Model::PeriodicOverwrites {
            // Thousands of places a log where the reading goes out of step: a short frame read
            // right after one of them can end where the next frame starts.
            assert!(
                others.0 * 10 <= others.1,
                "{name}: {others:?} wrong S, G, H, E frames"
            );
        } else {
            assert_eq!(others.0, 0, "{name}: wrong S, G, H, E frames");
        }
        match model {
            Model::BitFlips => {}
            Model::PeriodicOverwrites => {
                // Found from the header's text (a block over the log's start marker leaves most
                // of it, which still starts the session) wherever one falls in a header, else
                // from their bytes recurring where the reading is damaged; then no main frame is
                // trusted wrong, and at least as many are read right as the reference decoders
                // read, which know nothing of the blocks.
                assert_eq!(t.material, 0, "{name}: material errors in trusted frames");
                assert!(
                    t.written_over_found * 100 >= t.cases * 95,
                    "{name}: blocks found in {} of {} cases",
                    t.written_over_found,
                    t.cases
                );
                assert_eq!(t.written_over_wrong, 0, "{name}: trusted wrong where found");
                let reference_recall = pct(t.reference_recovered, t.ceiling);
                assert!(
                    recall >= reference_recall,
                    "{name}: recall {recall:.3} %, reference {reference_recall:.3} %"
                );
                assert!(
                    ours * 100 <= reference && t.material * 100 <= t.reference_material,
                    "{name}: {ours} wrong or bogus frames, reference {reference}"
                );
            }
            Model::Newline | Model::NewlineMixed => {
                // A line feed is read as one, or as a carriage return, only where the frames
                // around it show which: at most a tenth of the reference decoders' wrong frames,
                // and material errors in under 1 % of their wrong frames.
                assert!(
                    ours * 10 <= reference,
                    "{name}: {ours} wrong or bogus frames, reference {reference}"
                );
                assert!(
                    t.material * 100 <= reference,
                    "{name}: {} material errors, reference {reference} wrong or bogus frames",
                    t.material
                );
                // Where every carriage return became a line feed, more intact frames than the
                // reference decoders, and at least 65 % of them. (Where some were left, the reference decoders read the
                // intact frames, whose line feeds are all line feeds, right, with twice as many
                // wrong ones.)
                let reference_recall = pct(t.reference_recovered, t.ceiling);
                assert!(
                    *model != Model::Newline || recall > reference_recall.max(65.0),
                    "{name}: recall {recall:.3} %, reference {reference_recall:.3} %"
                );
                // Frames with no line feed anywhere in their chain leave nothing to doubt.
                let plain = pct(t.plain_recovered, t.plain_ceiling);
                assert!(
                    plain >= 95.0,
                    "{name}: recall {plain:.3} % of the frames without a line feed"
                );
                // A line feed read the wrong way and kept leaves its damage point outside any span.
                assert!(local >= 98.0, "{name}: localisation {local:.2} %");
            }
            _ => {
                assert!(
                    recall >= 99.5,
                    "{name}: recall {recall:.3} % of the ceiling"
                );
                // A byte dropped or zeroed inside a frame can leave it in step with one value
                // changed, with nothing to show where; every other damage is found, and no frame
                // it leaves is trusted.
                if matches!(model, Model::DropBytes | Model::ZeroRuns) {
                    assert!(local >= 96.0, "{name}: localisation {local:.2} %");
                } else {
                    assert!(local >= 99.0, "{name}: localisation {local:.2} %");
                    assert_eq!(ours, 0, "{name}: wrong or bogus frames");
                }
            }
        }
    }
}
