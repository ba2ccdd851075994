//! A library of Blackbox headers, for frame data whose header is lost and that has no donor log
//! to borrow one from (`salvage`, `--header-from auto`).
//!
//! How frames decode is fixed by a firmware version, its debug mode and the fields it leaves
//! out: the `Field` lines, the data version and the firmware type. The library ([`LIBRARY`],
//! written by `bbcheck library`) holds one header per such layout, as a log writes it, without
//! the lines that name the craft or the flight; the headers follow each other, each starting with
//! the log start marker. Which I frames and P frames a log writes (its `I interval` and
//! `P interval`) is set per craft, and read from the frames (see [`HeaderLibrary::choose`]):
//! each layout is tried on the first [`PROBE`] bytes of the data, and the header under which the
//! most bytes form trusted frames is chosen.
//!
//! The constants some predictors add (`minthrottle` or `motorOutput` to the first motor,
//! `vbatref` to the battery voltage) are the craft's: the library's are those of the log the
//! entry came from, and the choice says so.

use super::decoder::Validation;
use super::frame::FrameKind;
use super::header::{HEADER_FROM, Header, LOG_START_MARKER};
use super::predictor::Predictor;
use super::sink::{Frame, Sink};
use crate::report::RegionKind;

/// The library shipped with bbcheck.
pub const LIBRARY: &str = include_str!("headers.txt");

/// Header lines left out of an entry: they name the craft or the flight, not the layout.
const PERSONAL: [&str; 2] = ["Craft name", "Log start datetime"];

/// The schedule header lines, set in each layout's header to what the frames show.
const SCHEDULE: [&str; 3] = ["I interval", "P interval", "P ratio"];

/// Bytes of frame data each candidate header is tried on.
pub const PROBE: usize = 256 << 10;

/// One header of the library: its text, from the log start marker to the last line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub text: String,
}

impl Entry {
    /// The firmware the header names (its revision, or its type).
    pub fn firmware(&self) -> String {
        firmware(&self.header())
    }

    fn header(&self) -> Header {
        Header::parse(self.text.as_bytes(), 0, self.text.len())
    }

    /// The lines that decide how frames decode, but for the schedule: one entry per layout.
    pub fn layout(&self) -> Vec<String> {
        self.text
            .lines()
            .filter(|l| {
                let name = l.strip_prefix("H ").and_then(|l| l.split(':').next());
                name.is_some_and(|n| {
                    n.starts_with("Field ") || ["Data version", "Firmware type"].contains(&n)
                })
            })
            .map(str::to_owned)
            .collect()
    }
}

/// The firmware `header` names (its revision, or its type).
fn firmware(header: &Header) -> String {
    header
        .firmware_revision
        .clone()
        .or_else(|| header.get("Firmware type").map(str::to_owned))
        .unwrap_or_else(|| "unknown firmware".to_owned())
}

/// The header `text` with its schedule lines set to I interval `i` and P interval `p` (`1/N` or
/// `N/M`).
fn with_schedule(text: &str, i: u32, p: &str) -> String {
    let mut text: String = text
        .lines()
        .filter(|l| {
            let name = l.strip_prefix("H ").and_then(|l| l.split(':').next());
            !name.is_some_and(|n| SCHEDULE.contains(&n))
        })
        .flat_map(|l| [l, "\n"])
        .collect();
    text.push_str(&format!("H I interval:{i}\nH P interval:{p}\n"));
    text
}

/// The data [`HeaderLibrary::choose`] tries headers on: the first [`PROBE`] bytes of `data`, up
/// to the next log start marker.
fn probe(data: &[u8]) -> &[u8] {
    let end = memchr::memmem::find(data, LOG_START_MARKER).unwrap_or(data.len());
    &data[..end.min(PROBE)]
}

/// A header borrowed for frame data (`header`, a donor log's) with its schedule set to what the
/// data's frames show, when they show one: a craft logs at its own rate.
pub fn fit_schedule(header: &[u8], data: &[u8]) -> Vec<u8> {
    let Ok(text) = std::str::from_utf8(header) else {
        return header.to_vec();
    };
    let mut schedule = Schedule::of(&Header::parse(header, 0, header.len()));
    let bytes = [header, probe(data)].concat();
    frame_data(&bytes, Validation::Reference, &mut schedule);
    match schedule.found() {
        Some((i, p)) if (i, &p) != (schedule.i_interval, &schedule.p) => {
            with_schedule(text, i, &p).into_bytes()
        }
        _ => header.to_vec(),
    }
}

/// The headers bbcheck knows, one per layout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeaderLibrary {
    pub entries: Vec<Entry>,
}

/// The header chosen for frame data, and how sure the choice is.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// The header to put in front of the data.
    pub header: Vec<u8>,
    /// The firmware the entry came from.
    pub firmware: String,
    pub i_interval: u32,
    pub p_interval: String,
    /// Bytes tried, and how many of them formed trusted frames under this header and under the
    /// best header of another layout.
    pub probed: u64,
    pub trusted: u64,
    pub runner_up: u64,
    /// The craft's constants the header's predictors add, as the entry's log set them, each
    /// with the main fields whose values rest on it: `(setting, value, fields)`.
    pub constants: Vec<(String, i64, Vec<String>)>,
}

/// The craft's constants that the main-frame predictors of `header` add, each with the fields
/// whose values rest on it (a motor predicted from the first motor rests on the first motor's).
fn constants(header: &Header) -> Vec<(String, i64, Vec<String>)> {
    let Some(def) = header.i.as_ref() else {
        return Vec::new();
    };
    let mut constants: Vec<(String, i64, Vec<String>)> = Vec::new();
    let mut rests_on = |setting: &str, value: i64, field: usize| {
        let name = def.names[field].clone();
        match constants.iter_mut().find(|(s, _, _)| s == setting) {
            Some((_, _, fields)) => fields.push(name),
            None => constants.push((setting.to_owned(), value, vec![name])),
        }
    };
    for (f, spec) in def.fields.iter().enumerate() {
        let (setting, value) = match spec.predictor {
            Predictor::MinThrottle(v) => ("minthrottle", v),
            Predictor::MinMotor(v) => ("motorOutput", v),
            Predictor::VbatRef(v) => ("vbatref", v),
            Predictor::Motor0(m) => match def.fields.get(m).map(|s| s.predictor) {
                Some(Predictor::MinThrottle(v)) => ("minthrottle", v),
                Some(Predictor::MinMotor(v)) => ("motorOutput", v),
                _ => continue,
            },
            _ => continue,
        };
        rests_on(setting, value, f);
    }
    constants
}

/// The header line that says where a header from the library came from and which of the craft's
/// settings in it are that log's, so that a log written with it keeps saying so.
fn provenance(firmware: &str, constants: &[(String, i64, Vec<String>)]) -> String {
    let assumed: Vec<String> = constants
        .iter()
        .map(|(setting, value, _)| format!("{setting} {value}"))
        .collect();
    format!(
        "H {HEADER_FROM}:bbcheck's header library, the layout of {firmware}; that log's {}\n",
        match assumed.is_empty() {
            true => "settings".to_owned(),
            false => assumed.join(", "),
        }
    )
}

impl Choice {
    /// The runner-up's trusted bytes over the choice's.
    pub fn runner_up_share(&self) -> f64 {
        self.runner_up as f64 / self.trusted.max(1) as f64
    }
}

impl HeaderLibrary {
    /// The library shipped with bbcheck.
    pub fn builtin() -> HeaderLibrary {
        HeaderLibrary::parse(LIBRARY)
    }

    /// Read a library's text: headers, each from a log start marker on; lines starting with `#`
    /// before the first are comments.
    pub fn parse(text: &str) -> HeaderLibrary {
        let marker = std::str::from_utf8(LOG_START_MARKER).expect("the marker is text");
        let entries = text
            .match_indices(marker)
            .map(|(at, _)| at)
            .collect::<Vec<_>>();
        let ends = entries.iter().skip(1).copied().chain([text.len()]);
        let entries = entries
            .iter()
            .zip(ends)
            .map(|(&start, end)| Entry {
                text: text[start..end].to_owned(),
            })
            .collect();
        HeaderLibrary { entries }
    }

    /// The library as its file holds it.
    pub fn text(&self) -> String {
        let mut text = String::from(
            "# bbcheck's Blackbox header library: one header per frame layout, written by\n\
             # `bbcheck library LOG... --to FILE`.\n",
        );
        for entry in &self.entries {
            text.push_str(&entry.text);
        }
        text
    }

    /// Add the header of a session of a log (`file[start..end]`), without the lines that name
    /// the craft or the flight, replacing the entry of the same layout; `None` when the header
    /// does not define I frames or has problems.
    pub fn add(&mut self, file: &[u8], start: usize, end: usize) -> Option<&Entry> {
        let header = Header::parse(file, start, end);
        if header.i.is_none() || !header.problems.is_empty() {
            return None;
        }
        let mut text = std::str::from_utf8(LOG_START_MARKER).ok()?.to_owned();
        for line in &header.lines {
            if line.name == "Product" || PERSONAL.contains(&line.name.as_str()) {
                continue;
            }
            text.push_str(&format!("H {}:{}\n", line.name, line.value));
        }
        let entry = Entry { text };
        let layout = entry.layout();
        match self.entries.iter().position(|e| e.layout() == layout) {
            Some(i) => {
                self.entries[i] = entry;
                Some(&self.entries[i])
            }
            None => {
                self.entries.push(entry);
                self.entries.last()
            }
        }
    }

    /// The header under which the most of `data` (frame data without its header) forms trusted
    /// frames, tried on its first [`PROBE`] bytes (up to the next log start marker) with every
    /// layout; `None` when none makes half of those bytes trusted frames, nor any trusted main
    /// frame.
    ///
    /// A layout is first read by the reference decoders' rules, which do not hold frames to a
    /// schedule: the I frames' iterations (written whole) show the I interval, and the P frames
    /// between two of them the P interval. Layouts that read less than half as much as the best
    /// are left there; the others are read again with that schedule, by every rule.
    pub fn choose(&self, data: &[u8]) -> Option<Choice> {
        let probe = probe(data);
        let mut bytes = Vec::with_capacity(probe.len() + 16384);
        let mut read = |text: &str, validation, schedule: &mut Schedule| {
            bytes.clear();
            bytes.extend_from_slice(text.as_bytes());
            bytes.extend_from_slice(probe);
            frame_data(&bytes, validation, schedule)
        };
        let first_reads: Vec<(&Entry, Header, u64, Schedule)> = self
            .entries
            .iter()
            .map(|entry| {
                let header = entry.header();
                let mut schedule = Schedule::of(&header);
                let bytes = read(&entry.text, Validation::Reference, &mut schedule);
                (entry, header, bytes, schedule)
            })
            .collect();
        let most = first_reads.iter().map(|r| r.2).max().unwrap_or(0);
        // Each layout read again with its schedule: (trusted bytes, text, parsed, I, P interval).
        let mut candidates: Vec<(u64, String, Header, u32, String)> = first_reads
            .into_iter()
            .filter(|&(_, _, b, _)| b > 0 && b * 2 >= most)
            .map(|(entry, header, _, schedule)| {
                let (i, p) = schedule
                    .found()
                    .unwrap_or((schedule.i_interval, schedule.p));
                let text = with_schedule(&entry.text, i, &p);
                let trusted = read(&text, Validation::Thorough, &mut Schedule::default());
                (trusted, text, header, i, p)
            })
            .collect();
        // The most trusted; of equals, the first.
        candidates.sort_by_key(|c| std::cmp::Reverse(c.0));
        let mut candidates = candidates.into_iter();
        let (trusted, mut text, header, i_interval, p_interval) = candidates.next()?;
        let runner_up = candidates.next().map_or(0, |c| c.0);
        if trusted * 2 < probe.len() as u64 {
            return None;
        }
        let (firmware, constants) = (firmware(&header), constants(&header));
        text.push_str(&provenance(&firmware, &constants));
        Some(Choice {
            header: text.into_bytes(),
            firmware,
            i_interval,
            p_interval,
            probed: probe.len() as u64,
            trusted,
            runner_up,
            constants,
        })
    }
}

/// The schedule a header sets, and the one its frames show: the step between the iterations of
/// consecutive I frames, and the P frames between them.
#[derive(Debug, Default)]
struct Schedule {
    iteration_index: usize,
    i_interval: u32,
    /// The header's P interval, `N/M`.
    p: String,
    last_i: Option<u32>,
    p_since_i: u32,
    /// How often each (I-frame step, P frames between) was seen.
    seen: Vec<((u32, u32), u32)>,
}

impl Schedule {
    fn of(header: &Header) -> Schedule {
        Schedule {
            iteration_index: header
                .i
                .as_ref()
                .and_then(|d| d.index_of("loopIteration"))
                .unwrap_or(0),
            i_interval: header.i_interval,
            p: format!("{}/{}", header.p_num, header.p_denom),
            ..Schedule::default()
        }
    }

    /// The schedule seen most often, as an I interval and a P interval `1/N`, when one was seen
    /// and its P frames divide the I interval evenly.
    fn found(&self) -> Option<(u32, String)> {
        let &((step, p_frames), _) = self.seen.iter().max_by_key(|(_, n)| *n)?;
        let logged = p_frames.checked_add(1)?;
        (step > 0 && step.is_multiple_of(logged)).then(|| (step, format!("1/{}", step / logged)))
    }
}

impl Sink for Schedule {
    fn frame(&mut self, frame: &Frame<'_>) {
        match frame.kind {
            FrameKind::I => {
                let Some(&iteration) = frame.values.get(self.iteration_index) else {
                    return;
                };
                let iteration = iteration as u32;
                if let Some(step) = self.last_i.and_then(|last| iteration.checked_sub(last)) {
                    let key = (step, self.p_since_i);
                    match self.seen.iter().position(|(k, _)| *k == key) {
                        Some(at) => self.seen[at].1 += 1,
                        // A bounded tally: damage makes odd steps.
                        None if self.seen.len() < 64 => self.seen.push((key, 1)),
                        None => {}
                    }
                }
                self.last_i = Some(iteration);
                self.p_since_i = 0;
            }
            FrameKind::P => self.p_since_i = self.p_since_i.saturating_add(1),
            _ => {}
        }
    }
}

/// Bytes of `bytes` (a header, then frame data) that decode to frames kept by `validation`'s
/// rules, when some main frame is; `sink` sees the frames.
fn frame_data(bytes: &[u8], validation: Validation, sink: &mut impl Sink) -> u64 {
    let report = super::decode_with(validation, "library", bytes, |_, _| {}, sink);
    let Some(session) = report.sessions.first() else {
        return 0;
    };
    if session.frames.i + session.frames.p == 0 {
        return 0;
    }
    session
        .regions
        .iter()
        .filter(|r| r.kind == RegionKind::Frames)
        .map(|r| r.end - r.start)
        .sum()
}
