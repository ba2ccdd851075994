//! DataFlash recovery quality over the real corpus: every damage model, many seeds (one for a
//! text-mode copy, which the seed does not change), measured against the truth the damage
//! generator records, and salvage checked on every damaged copy. Prints one table row per model
//! (run with `--nocapture`).
//!
//! - ceiling: clean messages whose bytes, and the bytes of the FMT that defines their type,
//!   survived the damage;
//! - recall: trusted messages that are a clean message, moved but unchanged, over the ceiling;
//! - wrong: trusted messages that are not (changed bytes, or read out of step); material: those
//!   off by more than the flight's own motion ([`Truth::material`]), never more than the
//!   reference's;
//! - suspect: messages kept but marked suspect (a value rule doubts them), and how many of them
//!   are wrong;
//! - localisation: damage points inside a reported corrupt span or within 256 bytes of one, or
//!   undone (inside a message read back into its clean bytes: a text-mode copy's line feed read
//!   as the carriage return it was);
//! - the reference columns read the same files by pymavlink's rules.
//!
//! `BBCHECK_QUALITY_MODELS=newline,drop-runs` measures those models only;
//! `BBCHECK_QUALITY_MATERIAL=1` prints every material wrong message trusted, with the columns off.
//!
//! Salvage of every damaged copy re-checks clean, holds exactly the accepted messages, and
//! salvaging it again changes nothing.

use crate::common;

use bbcheck::dataflash::fmt::Formats;
use bbcheck::dataflash::message::Value;
use bbcheck::dataflash::{self, Message, Rules, Sink};
use bbcheck::report::Trust;
use bbcheck::testkit::damage::{self, Change, Model};
use common::input_offset;
use std::collections::{HashMap, HashSet};

const SEEDS: u64 = 24;

/// The seeds a model is measured with: one when the seed changes nothing.
fn seeds(model: Model) -> u64 {
    if model.uses_seed() { SEEDS } else { 1 }
}

/// Accepted messages: offset, length, the offset of the FMT that defined their type, whether
/// they are trusted, and a digest of their bytes as read (a text-mode copy's line feeds may read
/// as carriage returns); and their values.
#[derive(Default)]
struct Messages(Vec<(u64, u64, Option<u64>, Trust, u64)>, Values);

/// The values of each message as read: its type and the range of `all` its values take.
#[derive(Default)]
struct Values {
    of: Vec<(u8, std::ops::Range<usize>)>,
    all: Vec<Num>,
    /// Each type's name and columns.
    names: HashMap<u8, (String, Vec<String>)>,
}

/// One value, for telling how far a wrong message is off: numbers as stored, text and arrays by
/// digest.
#[derive(Clone, Copy, Debug)]
enum Num {
    Integer(f64),
    Float(f64),
    Text(u64),
}

impl Sink for Messages {
    fn message(&mut self, m: &Message<'_>) {
        self.0.push((
            m.offset,
            m.bytes.len() as u64,
            m.format.defined_at,
            m.trust,
            digest(m.bytes),
        ));
        let start = self.1.all.len();
        self.1.all.extend(m.fields().map(|v| match v {
            Value::Signed(v) => Num::Integer(v as f64),
            Value::Unsigned(v) => Num::Integer(v as f64),
            Value::F32(v) => Num::Float(v.into()),
            Value::F64(v) => Num::Float(v),
            Value::Text(t) | Value::Int16Array(t) => Num::Text(digest(t)),
        }));
        self.1.of.push((m.format.type_id, start..self.1.all.len()));
        self.1
            .names
            .entry(m.format.type_id)
            .or_insert_with(|| (m.format.name.clone(), m.format.columns.clone()));
    }
}

/// A clean log's messages, found by offset and placed among the messages of their type.
struct Truth<'a> {
    clean: &'a Messages,
    at: HashMap<u64, usize>,
    by_type: HashMap<u8, Vec<usize>>,
    place: Vec<usize>,
}

/// Messages of its type on either side of a clean message whose changes make a column's local
/// envelope.
const ENVELOPE_MESSAGES: usize = 32;

impl<'a> Truth<'a> {
    fn new(clean: &'a Messages) -> Self {
        let mut by_type: HashMap<u8, Vec<usize>> = HashMap::new();
        let mut place = Vec::with_capacity(clean.0.len());
        for (i, (type_id, _)) in clean.1.of.iter().enumerate() {
            let list = by_type.entry(*type_id).or_default();
            place.push(list.len());
            list.push(i);
        }
        let at = clean.0.iter().enumerate().map(|(i, m)| (m.0, i)).collect();
        Truth {
            clean,
            at,
            by_type,
            place,
        }
    }

    /// The length of the clean message at input offset `at`, if one starts there.
    fn length_at(&self, at: u64) -> Option<u64> {
        self.at.get(&at).map(|&i| self.clean.0[i].1)
    }

    /// Whether message `i` of `got`, read wrong, is materially wrong: no clean message of its type
    /// starts where its first byte came from, or a column is off by more than its local envelope
    /// (the largest change between consecutive messages of the type within
    /// [`ENVELOPE_MESSAGES`] either side, plus 2 for an integer, plus a millionth for a float), a
    /// text changed, or a NaN stands where there was none or is missing.
    fn material(&self, got: &Messages, i: usize, changes: &[Change], print: bool) -> bool {
        let off = self.columns_off(got, i, changes);
        if print && !off.is_empty() {
            let (type_id, _) = &got.1.of[i];
            let name = got.1.names.get(type_id).map_or("?", |(n, _)| n);
            println!("material message at {}: {name} {off:?}", got.0[i].0);
        }
        !off.is_empty()
    }

    /// The columns of message `i` of `got` that make it material (see [`Truth::material`]), as
    /// (column, value read, clean value); `["no clean message"]` where none stands behind it.
    fn columns_off(&self, got: &Messages, i: usize, changes: &[Change]) -> Vec<String> {
        let clean = input_offset(changes, got.0[i].0, 1).and_then(|at| self.at.get(&at));
        let Some(&c) = clean else {
            return vec!["no clean message".into()];
        };
        let ((got_type, got_range), (clean_type, clean_range)) =
            (&got.1.of[i], &self.clean.1.of[c]);
        if got_type != clean_type || got_range.len() != clean_range.len() {
            return vec!["another type".into()];
        }
        let list = &self.by_type[clean_type];
        let k = self.place[c];
        let window =
            &list[k.saturating_sub(ENVELOPE_MESSAGES)..(k + ENVELOPE_MESSAGES + 1).min(list.len())];
        let value = |m: usize, col: usize| self.clean.1.all[self.clean.1.of[m].1.start + col];
        let envelope = |col: usize| {
            window
                .windows(2)
                .filter_map(|w| match (value(w[0], col), value(w[1], col)) {
                    (Num::Integer(a) | Num::Float(a), Num::Integer(b) | Num::Float(b)) => {
                        Some((b - a).abs()).filter(|d| d.is_finite())
                    }
                    _ => None,
                })
                .fold(0.0, f64::max)
        };
        let names = self.clean.1.names.get(clean_type).map(|(_, c)| c);
        let column = |col: usize| names.and_then(|n| n.get(col)).map_or("?", |n| n.as_str());
        let off = |col: usize| match (got.1.all[got_range.start + col], value(c, col)) {
            (Num::Text(a), Num::Text(b)) => a != b,
            (Num::Integer(a), Num::Integer(b)) => (a - b).abs() > envelope(col) + 2.0,
            (Num::Float(a), Num::Float(b)) if a.is_nan() || b.is_nan() => a.is_nan() != b.is_nan(),
            (Num::Float(a), Num::Float(b)) => {
                (a - b).abs() > envelope(col) + 1e-6 * b.abs().max(1.0)
            }
            _ => true,
        };
        (0..clean_range.len())
            .filter(|&col| off(col))
            .map(|col| {
                format!(
                    "{}: {:?} for {:?}",
                    column(col),
                    got.1.all[got_range.start + col],
                    value(c, col)
                )
            })
            .collect()
    }
}

/// FNV-1a of `bytes`.
fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn read(data: &[u8], rules: Rules) -> (Messages, dataflash::DataflashReport) {
    let mut messages = Messages::default();
    let report = dataflash::decode_with(rules, Formats::new(), "quality", data, &mut messages);
    (messages, report)
}

/// Whether the input range `[start, end)` survived `changes`.
fn untouched(changes: &[Change], start: u64, end: u64) -> bool {
    !changes.iter().any(|c| {
        let (a, b) = (c.input_offset, c.input_offset + c.input_length);
        if c.input_length == 0 {
            start < a && a < end
        } else {
            a < end && start < b
        }
    })
}

#[derive(Default, Clone, Copy)]
struct Tally {
    cases: u64,
    clean: u64,
    ceiling: u64,
    recovered: u64,
    wrong: u64,
    material: u64,
    suspect: u64,
    suspect_wrong: u64,
    reference_recovered: u64,
    reference_wrong: u64,
    reference_material: u64,
    /// Trusted messages that are a clean message trusted before (a block read twice).
    twice: u64,
    points: u64,
    localised: u64,
}

/// Trusted messages that are a clean one (by input offset and length), and the others; suspect
/// messages, and those of them that are not a clean one.
///
/// A message that overlaps a change but holds exactly the bytes of the clean message it stands
/// for (its first or its last byte unchanged), as when an inserted byte happens to equal the one
/// it displaced, is neither: it is right, but its bytes did not survive.
fn score(
    input: &[u8],
    damaged: &[u8],
    truth: &Truth<'_>,
    changes: &[Change],
    got: &Messages,
    intact: &HashMap<u64, bool>,
    print: bool,
) -> Score {
    let mut s = Score::default();
    // A clean message trusted twice (read again where a block was written twice) is wrong the
    // second time: the log has it once.
    let mut trusted = HashSet::new();
    for (i, &(offset, len, _, trust, read)) in got.0.iter().enumerate() {
        let suspect = trust == Trust::Suspect;
        s.suspect += u64::from(suspect);
        match input_offset(changes, offset, len) {
            Some(at) if !suspect && !trusted.insert(at) => {
                s.wrong += 1;
                s.twice += 1;
            }
            Some(at)
                if truth.length_at(at) == Some(len)
                    && digest(&damaged[offset as usize..(offset + len) as usize]) == read =>
            {
                s.recovered += u64::from(intact.get(&at) == Some(&true) && !suspect);
            }
            _ => {
                let first = input_offset(changes, offset, 1);
                let last = input_offset(changes, offset + len - 1, 1)
                    .and_then(|end| (end + 1).checked_sub(len));
                let right = [first, last].into_iter().flatten().any(|at| {
                    truth.length_at(at) == Some(len)
                        && digest(&input[at as usize..(at + len) as usize]) == read
                });
                match suspect {
                    true => s.suspect_wrong += u64::from(!right),
                    false => {
                        s.wrong += u64::from(!right);
                        s.material += u64::from(!right && truth.material(got, i, changes, print));
                    }
                }
                let as_damaged = digest(&damaged[offset as usize..(offset + len) as usize]);
                if right && as_damaged != read {
                    s.restored.push((offset, offset + len));
                }
            }
        }
    }
    s
}

/// What [`score`] counts.
#[derive(Default)]
struct Score {
    recovered: u64,
    wrong: u64,
    /// Of the wrong, those that are a clean message trusted before.
    twice: u64,
    /// Wrong trusted messages off by more than the flight's own motion ([`Truth::material`]).
    material: u64,
    suspect: u64,
    suspect_wrong: u64,
    /// Messages read otherwise than their damaged bytes, into the clean message's bytes.
    restored: Vec<(u64, u64)>,
}

#[test]
fn dataflash_recovery_quality_per_damage_model() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let mut logs = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(corpus.join("real/ardupilot"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    for path in paths {
        let data = std::fs::read(&path).unwrap();
        let (messages, report) = read(&data, Rules::Thorough);
        // Truncated logs have no clean truth to measure against.
        if report.is_clean() {
            logs.push((data, messages));
        }
    }
    assert!(logs.len() >= 5, "the corpus has clean DataFlash logs");
    println!(
        "\n{:<15} {:>5} {:>8} {:>8} {:>8} {:>6} {:>6} {:>7} {:>7} {:>7} {:>6} {:>7} {:>7}",
        "model",
        "cases",
        "ceiling",
        "recall%",
        "ref%",
        "wrong",
        "mat",
        "ref wr",
        "ref mat",
        "suspect",
        "s-wr",
        "ceil%",
        "local%"
    );
    let mut failures = Vec::new();
    let only = std::env::var("BBCHECK_QUALITY_MODELS").ok();
    let wanted = |m: Model| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|n| n == m.name()))
    };
    let truths: Vec<Truth<'_>> = logs.iter().map(|(_, clean)| Truth::new(clean)).collect();
    let print = std::env::var_os("BBCHECK_QUALITY_MATERIAL").is_some();
    for model in Model::ALL.into_iter().filter(|&m| wanted(m)) {
        let mut t = Tally::default();
        for ((data, clean), truth) in logs.iter().zip(&truths) {
            for seed in 0..seeds(model) {
                let d = damage::damage(data, model, seed);
                let intact: HashMap<u64, bool> = clean
                    .0
                    .iter()
                    .map(|&(o, l, fmt, ..)| {
                        let fmt_ok = fmt.is_none_or(|f| {
                            truth
                                .length_at(f)
                                .is_some_and(|fl| untouched(&d.changes, f, f + fl))
                        });
                        (o, untouched(&d.changes, o, o + l) && fmt_ok)
                    })
                    .collect();
                let (got, report) = read(&d.data, Rules::Thorough);
                let (reference, _) = read(&d.data, Rules::Reference);
                let ours = score(data, &d.data, truth, &d.changes, &got, &intact, print);
                let theirs = score(data, &d.data, truth, &d.changes, &reference, &intact, false);
                t.cases += 1;
                t.clean += clean.0.len() as u64;
                t.ceiling += intact.values().filter(|&&x| x).count() as u64;
                t.recovered += ours.recovered;
                t.wrong += ours.wrong;
                t.twice += ours.twice;
                t.material += ours.material;
                t.reference_material += theirs.material;
                t.suspect += ours.suspect;
                t.suspect_wrong += ours.suspect_wrong;
                t.reference_recovered += theirs.recovered;
                t.reference_wrong += theirs.wrong;
                for c in &d.changes {
                    // A file cut where a message ends leaves no trace to find.
                    if c.kind == "truncate" && truth.length_at(c.input_offset).is_some() {
                        continue;
                    }
                    t.points += 1;
                    // A suspect span marks the damage as well as a corrupt one.
                    let file = &report.file;
                    let spans = file.corrupt_spans.iter().map(|s| (s.start, s.end));
                    let suspect = file.suspect_spans.iter().map(|s| (s.start, s.end));
                    let near = spans.chain(suspect).any(|(start, end)| {
                        start <= c.offset + c.length.max(1) + 256 && c.offset < end + 256
                    });
                    // A cut inside a message: the log says it stops inside its last message.
                    let cut_short = report
                        .file
                        .sessions
                        .iter()
                        .flat_map(|s| &s.regions)
                        .any(|r| {
                            r.kind == bbcheck::report::RegionKind::CutShort && r.end == c.offset
                        });
                    // A message read back into its clean bytes undid the change.
                    let restored = ours
                        .restored
                        .iter()
                        .any(|&(a, b)| (a..b).contains(&c.offset));
                    t.localised += u64::from(near || cut_short || restored);
                }
                check_salvage(&d.data, &got, model, seed, &mut failures);
            }
        }
        let pct = |a: u64, b: u64| {
            if b == 0 {
                100.0
            } else {
                100.0 * a as f64 / b as f64
            }
        };
        let (recall, local) = (pct(t.recovered, t.ceiling), pct(t.localised, t.points));
        println!(
            "{:<15} {:>5} {:>8} {:>8.3} {:>8.3} {:>6} {:>6} {:>7} {:>7} {:>7} {:>6} {:>7.2} {:>7.2}",
            model.name(),
            t.cases,
            t.ceiling,
            recall,
            pct(t.reference_recovered, t.ceiling),
            t.wrong,
            t.material,
            t.reference_wrong,
            t.reference_material,
            t.suspect,
            t.suspect_wrong,
            pct(t.ceiling, t.clean),
            local,
        );
        if t.material > t.reference_material {
            failures.push(format!(
                "{}: {} material wrong messages, reference {}",
                model.name(),
                t.material,
                t.reference_material
            ));
        }
        // A block written twice is read twice: the copy's TimeUS steps back less than a late
        // sample's may (open; measured, and held to the reference's bars only).
        let read_twice = model == Model::RepeatedBlocks;
        if t.twice > 0 && !read_twice {
            failures.push(format!(
                "{}: {} messages trusted twice",
                model.name(),
                t.twice
            ));
        }
        if t.wrong > t.reference_wrong {
            failures.push(format!(
                "{}: {} wrong messages, reference {}",
                model.name(),
                t.wrong,
                t.reference_wrong
            ));
        }
        // Bytes changed in place inside a message leave it in step, so only the models that remove
        // or insert bytes are held to the wrong-message and localisation bars. Even there a cut can
        // join the head of one message to the tail of another that ends in step (about one case in
        // twenty): nothing in the bytes tells, so the bar is a twentieth of the reference's wrong
        // messages, not zero.
        let in_place =
            matches!(model, Model::BitFlips | Model::ZeroRuns) || model.is_text_mode_copy();
        let held = !in_place && !read_twice;
        if held && t.wrong * 20 > t.reference_wrong.max(1) {
            failures.push(format!(
                "{}: {} wrong messages, reference {}",
                model.name(),
                t.wrong,
                t.reference_wrong
            ));
        }
        // Damage in place loses no more than the messages it touched, except in a file copied in
        // text mode, where every message holding a line feed is doubtful.
        if !model.is_text_mode_copy() && recall < 99.5 {
            failures.push(format!("{}: recall {recall:.3} %", model.name()));
        }
        if held && local < 97.5 {
            failures.push(format!("{}: localisation {local:.2} %", model.name()));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Salvage the damaged copy: clean on re-check, the accepted messages exactly, idempotent.
fn check_salvage(data: &[u8], got: &Messages, model: Model, seed: u64, failures: &mut Vec<String>) {
    let (_, salvaged) = dataflash::salvage::salvage("quality", data, Formats::new());
    let (kept, report) = read(&salvaged.bytes, Rules::Thorough);
    let case = format!("{} seed {seed}", model.name());
    if !report.is_clean() {
        failures.push(format!(
            "{case}: salvaged output has corrupt spans {:?}",
            report.file.corrupt_spans.first()
        ));
    }
    let read_as = |m: &Messages| -> Vec<(u64, Trust)> {
        m.0.iter().map(|&(.., trust, read)| (read, trust)).collect()
    };
    // Without a donor nothing is added: the output is the accepted messages as read, in order,
    // judged alike (then, maybe, the FMT and message saying how its line feeds stand).
    let mut written = read_as(&kept);
    if salvaged.summary.line_feeds_marked {
        written.truncate(written.len().saturating_sub(2));
    }
    if written != read_as(got) {
        failures.push(format!(
            "{case}: salvaged messages (or their trust) differ from the accepted ones"
        ));
    }
    let (_, again) = dataflash::salvage::salvage("quality", &salvaged.bytes, Formats::new());
    if again.bytes != salvaged.bytes {
        failures.push(format!("{case}: salvage is not idempotent"));
    }
}
