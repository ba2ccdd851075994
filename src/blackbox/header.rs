//! The text header of a session: `H name:value` lines, kept raw and parsed into frame definitions.

use super::codec::{Encoding, Encoding10};
use super::frame::{FieldSpec, FrameDef, FrameKind, max_frame_len};
use super::predictor::{Context, MainHistory, Predictor};
use nom::IResult;
use nom::bytes::complete::{tag, take_till};
use nom::character::complete::u32 as dec_u32;
use nom::sequence::separated_pair;

/// The line every session starts with.
pub const LOG_START_MARKER: &[u8] =
    b"H Product:Blackbox flight data recorder by Nicholas Sherlock\n";

/// The most bytes of a log start marker, in one stretch, that may differ for the marker to be
/// found still: a block of a download's chunk headers written over it, a few bytes gone bad.
/// The rest of the marker (44 bytes or more) holds at least one of its two ends whole.
pub const MARKER_HOLE: usize = 16;

/// The bytes at either end of the log start marker one of which a hole of at most
/// [`MARKER_HOLE`] bytes leaves whole: a holed marker is looked for by them.
pub const MARKER_ENDS: [&[u8]; 2] = [
    LOG_START_MARKER.split_at(MARKER_END).0,
    LOG_START_MARKER
        .split_at(LOG_START_MARKER.len() - MARKER_END)
        .1,
];
const MARKER_END: usize = (LOG_START_MARKER.len() - MARKER_HOLE) / 2;

/// Whether the bytes at `at` are the log start marker with one stretch of at most
/// [`MARKER_HOLE`] bytes in it differing (and some differing: not the marker itself).
pub fn holed_marker_at(file: &[u8], at: usize) -> bool {
    let Some(bytes) = at
        .checked_add(LOG_START_MARKER.len())
        .and_then(|end| file.get(at..end))
    else {
        return false;
    };
    let differs = |i: &usize| bytes[*i] != LOG_START_MARKER[*i];
    let mut differing = (0..bytes.len()).filter(differs);
    match (differing.next(), differing.next_back()) {
        (Some(first), last) => last.unwrap_or(first) - first < MARKER_HOLE,
        (None, _) => false,
    }
}

/// Whether the bytes at `at` are the log start marker, whole or with a hole (see
/// [`holed_marker_at`]).
pub fn marker_at(file: &[u8], at: usize) -> bool {
    file.get(at..)
        .is_some_and(|b| b.starts_with(LOG_START_MARKER))
        || holed_marker_at(file, at)
}

/// Where log start markers, whole or holed, start in `bytes`, each found by an end of it that is
/// whole (so a marker may be given twice), in no order.
pub fn markers_in(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    MARKER_ENDS
        .iter()
        .enumerate()
        .flat_map(move |(end, needle)| {
            let back = end * (LOG_START_MARKER.len() - needle.len());
            memchr::memmem::find_iter(bytes, needle)
                .filter_map(move |at| at.checked_sub(back))
                .filter(move |&at| marker_at(bytes, at))
        })
}

/// The longest header: a log start marker lies less than this before its last line.
pub const MAX_HEADER: usize = 64 << 10;

/// Header lines longer than this are damage (the longest real ones are about 1.2 KB).
pub const MAX_HEADER_LINE: usize = 64 * 1024;

/// More fields than this in one frame type is damage (real logs have at most about 100).
pub const MAX_FIELDS: usize = 1024;

/// An I interval above this is damage (firmware writes at most a few thousand).
pub const MAX_I_INTERVAL: u32 = 1 << 16;

/// The problem of a header line that parsed but holds bytes that are not text.
pub const NOT_TEXT: &str = "header line holds bytes that are not text";
/// The header line salvage adds to a log recovered from a text-mode copy: its line feeds were
/// judged to be line feeds, and a log holding no carriage return reads the same after another
/// text-mode copy.
pub const LINE_FEEDS_CHECKED: (&str, &str) = ("Line feeds", "checked");
/// The name of the header line by which a header salvage took from bbcheck's header library says
/// so (see [`crate::blackbox::library`]).
pub const HEADER_FROM: &str = "Header from";

pub use crate::report::Firmware;

/// One `H name:value` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderLine {
    /// Absolute offset of the `H`.
    pub offset: u64,
    /// Absolute offset just past the line's newline (the bytes as read: `name` and `value` may be
    /// longer, where bytes that are not text became U+FFFD).
    pub end: u64,
    pub name: String,
    pub value: String,
}

/// Something wrong in the header, with the absolute byte range it covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderProblem {
    pub start: u64,
    pub end: u64,
    pub message: String,
}

/// A parsed session header.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// Every line, in file order (a repeated name appears as often as it was written).
    pub lines: Vec<HeaderLine>,
    /// Absolute offset of the first byte after the header.
    pub data_start: u64,
    pub data_version: u32,
    pub firmware: Firmware,
    /// `H Firmware revision`, e.g. `Betaflight 4.2.9 (e097f4ab7) STM32F7X2`.
    pub firmware_revision: Option<String>,
    pub i_interval: u32,
    /// P frames are logged for `p_num` out of every `p_denom` iterations.
    pub p_num: u32,
    pub p_denom: u32,
    /// Which meaning encoding id 10 has in this log.
    pub encoding10: Encoding10,
    pub i: Option<FrameDef>,
    pub p: Option<FrameDef>,
    pub s: Option<FrameDef>,
    pub g: Option<FrameDef>,
    pub h: Option<FrameDef>,
    pub problems: Vec<HeaderProblem>,
    /// Read from the file's bytes with holes filled (see `mended_header`): the lines are the
    /// header, not the bytes of the file.
    pub mended: bool,
}

/// How one header line parsed.
enum Line<'a> {
    /// `H name:value\n`
    Entry(&'a [u8], &'a [u8]),
    /// Starts like a line but is not one; skip this many bytes.
    Damaged(usize),
}

fn entry(input: &[u8]) -> IResult<&[u8], (&[u8], &[u8])> {
    let (rest, _) = tag("H ")(input)?;
    let (rest, line) = take_till(|b| b == b'\n' || b == 0)(rest)?;
    let (rest, _) = tag("\n")(rest)?;
    let (_, pair) =
        separated_pair(take_till(|b| b == b':'), tag(":"), nom::combinator::rest)(line)?;
    Ok((rest, pair))
}

fn header_line(input: &[u8]) -> Line<'_> {
    let window = &input[..input.len().min(MAX_HEADER_LINE)];
    match entry(window) {
        Ok((_, (name, value))) => Line::Entry(name, value),
        Err(_) => {
            // Skip to the end of the broken line when it is text, else just its `H`.
            let len = window
                .iter()
                .position(|&b| b == b'\n' || (b < 0x20 && b != b'\t'))
                .filter(|&p| window[p] == b'\n')
                .map_or(1, |p| p + 1);
            Line::Damaged(len)
        }
    }
}

/// Whether the bytes are all erased flash (0xFF) or all zero: a session cut after its header.
fn is_padding(bytes: &[u8]) -> bool {
    bytes
        .first()
        .is_some_and(|&p| (p == 0 || p == 0xFF) && bytes.iter().all(|&b| b == p))
}

/// Whether a header holds this byte as text: ASCII text or white space, or a byte UTF-8 uses (a
/// value may hold a craft name in UTF-8; erased flash, 0xFF, is none).
pub fn is_text_byte(b: u8) -> bool {
    b.is_ascii_graphic() || b.is_ascii_whitespace() || matches!(b, 0x80..=0xBF | 0xC2..=0xF4)
}

/// Whether header bytes are text: UTF-8 without control characters other than tab.
fn is_text(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok_and(|t| !t.chars().any(|c| c.is_control() && c != '\t'))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Parse a comma-separated list of integers.
fn int_list(value: &str) -> Option<Vec<i64>> {
    value
        .split(',')
        .map(|v| v.trim().parse::<i64>().ok())
        .collect()
}

impl Header {
    /// Parse the header of a session that starts at `start` in `file` and ends before `end`.
    /// Parsing never fails: what cannot be understood is listed in `problems`.
    pub fn parse(file: &[u8], start: usize, end: usize) -> Header {
        let mut lines = Vec::new();
        let mut problems = Vec::new();
        let mut pos = start;
        // A marker some of whose bytes were lost still starts the session, and says nothing.
        if start + LOG_START_MARKER.len() <= end && holed_marker_at(file, start) {
            pos += LOG_START_MARKER.len();
            problems.push(HeaderProblem {
                start: start as u64,
                end: pos as u64,
                message: "the log start marker is damaged".into(),
            });
        } else if !file[start..end].starts_with(LOG_START_MARKER) {
            // A session found by its header lines starts where its marker stood, if the marker
            // was erased or zeroed (see `find_sessions`).
            let place = file[start..end]
                .iter()
                .take(LOG_START_MARKER.len())
                .take_while(|&&b| matches!(b, 0x00 | 0xFF))
                .count();
            if place > 0 {
                pos += place;
                problems.push(HeaderProblem {
                    start: start as u64,
                    end: pos as u64,
                    message: "the log start marker is lost".into(),
                });
            }
        }
        while pos < end {
            let b = file[pos];
            if b == b'H' {
                match header_line(&file[pos..end]) {
                    Line::Entry(name, value) => {
                        let len = 2 + name.len() + 1 + value.len() + 1;
                        if !is_text(name) || !is_text(value) {
                            problems.push(HeaderProblem {
                                start: pos as u64,
                                end: (pos + len) as u64,
                                message: NOT_TEXT.into(),
                            });
                        }
                        lines.push(HeaderLine {
                            offset: pos as u64,
                            end: (pos + len) as u64,
                            name: text(name),
                            value: text(value),
                        });
                        pos += len;
                    }
                    Line::Damaged(len) => {
                        problems.push(HeaderProblem {
                            start: pos as u64,
                            end: (pos + len) as u64,
                            message: "header line is not `H name:value`".into(),
                        });
                        pos += len;
                    }
                }
            } else if FrameKind::from_byte(b).is_some() || is_padding(&file[pos..end]) {
                break;
            } else {
                let len = file[pos..end]
                    .iter()
                    .position(|&c| c == b'H' || FrameKind::from_byte(c).is_some())
                    .unwrap_or(end - pos);
                problems.push(HeaderProblem {
                    start: pos as u64,
                    end: (pos + len) as u64,
                    message: "bytes between header lines".into(),
                });
                pos += len;
            }
        }
        Header::from_lines(lines, pos as u64, problems)
    }

    /// The header as read from bytes that stood `by` bytes further on in the file.
    pub fn shift(&mut self, by: u64) {
        self.data_start += by;
        for line in &mut self.lines {
            line.offset += by;
            line.end += by;
        }
        for problem in &mut self.problems {
            problem.start += by;
            problem.end += by;
        }
    }

    /// The last value written for `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.lines
            .iter()
            .rev()
            .find(|l| l.name == name)
            .map(|l| l.value.as_str())
    }

    fn from_lines(lines: Vec<HeaderLine>, data_start: u64, problems: Vec<HeaderProblem>) -> Header {
        let mut header = Header {
            lines,
            data_start,
            data_version: 2,
            firmware: Firmware::Unknown,
            firmware_revision: None,
            i_interval: 32,
            p_num: 1,
            p_denom: 1,
            encoding10: Encoding10::Tag2_3SVariable,
            i: None,
            p: None,
            s: None,
            g: None,
            h: None,
            problems,
            mended: false,
        };
        header.read_settings();
        header.i = header.frame_def(FrameKind::I, "I", "I");
        header.p = header.frame_def(FrameKind::P, "I", "P");
        header.s = header.frame_def(FrameKind::S, "S", "S");
        header.g = header.frame_def(FrameKind::G, "G", "G");
        header.h = header.frame_def(FrameKind::H, "H", "H");
        header.check_main_fields();
        header
    }

    fn problem(&mut self, name: &str, message: String) {
        let (start, end) = self
            .lines
            .iter()
            .rev()
            .find(|l| l.name == name)
            .map(|l| (l.offset, l.end))
            .unwrap_or((self.data_start, self.data_start));
        self.problems.push(HeaderProblem {
            start,
            end,
            message,
        });
    }

    fn read_settings(&mut self) {
        if let Some(v) = self.get("Data version") {
            match v.trim().parse() {
                Ok(v @ 1..=2) => self.data_version = v,
                _ => {
                    let msg = format!("unknown Data version `{v}`");
                    self.problem("Data version", msg);
                }
            }
        }
        let fw_type = self.get("Firmware type").unwrap_or("").to_owned();
        self.firmware_revision = self.get("Firmware revision").map(str::to_owned);
        let revision = self.firmware_revision.as_deref().unwrap_or("");
        self.firmware = if revision.starts_with("INAV") {
            Firmware::Inav
        } else if revision.starts_with("Betaflight") || fw_type == "Betaflight" {
            Firmware::Betaflight
        } else if fw_type == "Cleanflight" {
            Firmware::Cleanflight
        } else {
            Firmware::Unknown
        };
        // Encoding 10 is Elias gamma only in logs of the original Cleanflight, whose revision is
        // a bare git hash; Betaflight and INAV write TAG2_3SVARIABLE there.
        self.encoding10 = if self.firmware == Firmware::Cleanflight {
            Encoding10::EliasGamma
        } else {
            Encoding10::Tag2_3SVariable
        };
        if let Some(v) = self.get("I interval") {
            match v.trim().parse::<u32>() {
                Ok(n) if n <= MAX_I_INTERVAL => self.i_interval = n.max(1),
                _ => {
                    let msg = format!("I interval `{v}` is not a number up to {MAX_I_INTERVAL}");
                    self.problem("I interval", msg);
                }
            }
        }
        if let Some(v) = self.get("P interval").map(str::to_owned) {
            let fraction: IResult<&str, (u32, u32)> =
                separated_pair(dec_u32, tag("/"), dec_u32)(v.trim());
            let parsed = match fraction {
                Ok(("", (n, d))) => Some((n, d)),
                _ => v.trim().parse::<u32>().ok().map(|d| (1, d)),
            };
            match parsed {
                Some((n, d)) if n >= 1 && d >= 1 && n <= d && d <= MAX_I_INTERVAL => {
                    self.p_num = n;
                    self.p_denom = d;
                }
                _ => self.problem("P interval", format!("P interval `{v}` is not N/M or N")),
            }
        }
    }

    /// The integer value of a setting, or a problem when a predictor needs it and it is missing.
    fn constant(&mut self, name: &str, index: usize, frame: &str) -> Option<i64> {
        let value = self
            .get(name)
            .and_then(|v| v.split(',').nth(index))
            .and_then(|v| v.trim().parse::<i64>().ok());
        if value.is_none() {
            let msg = format!("H Field {frame} predictor needs `H {name}`, which is missing");
            self.problem(&format!("Field {frame} predictor"), msg);
        }
        value
    }

    fn frame_def(
        &mut self,
        kind: FrameKind,
        names_from: &str,
        layout_from: &str,
    ) -> Option<FrameDef> {
        let names_line = format!("Field {names_from} name");
        let names: Vec<String> = self
            .get(&names_line)?
            .split(',')
            .map(str::to_owned)
            .collect();
        let pred_line = format!("Field {layout_from} predictor");
        let enc_line = format!("Field {layout_from} encoding");
        let signed_line = format!("Field {names_from} signed");
        if self.get(&pred_line).is_none() && self.get(&enc_line).is_none() {
            // Names without a layout: the log has no frames of this type (P frames share the
            // I names), which is not damage.
            return None;
        }
        let predictors = self.get(&pred_line).and_then(int_list);
        let encodings = self.get(&enc_line).and_then(int_list);
        let signed = self
            .get(&signed_line)
            .and_then(int_list)
            .unwrap_or_default();
        let (Some(predictors), Some(encodings)) = (predictors, encodings) else {
            let msg =
                format!("frame {layout_from} has names but no readable predictor/encoding lists");
            self.problem(&names_line, msg);
            return None;
        };
        if names.len() > MAX_FIELDS
            || predictors.len() != names.len()
            || encodings.len() != names.len()
        {
            let msg = format!(
                "frame {layout_from}: {} names, {} predictors, {} encodings",
                names.len(),
                predictors.len(),
                encodings.len()
            );
            self.problem(&pred_line, msg);
            return None;
        }
        let motor0 = names.iter().position(|n| n == "motor[0]");
        let mut fields = Vec::with_capacity(names.len());
        let mut home_coords = 0;
        for (i, (&p, &e)) in predictors.iter().zip(&encodings).enumerate() {
            let predictor = match p {
                0 => Predictor::Zero,
                1 => Predictor::Previous,
                2 => Predictor::StraightLine,
                3 => Predictor::Average2,
                4 => Predictor::MinThrottle(self.constant("minthrottle", 0, layout_from)?),
                5 => match motor0 {
                    Some(m) if m < i => Predictor::Motor0(m),
                    _ => {
                        let msg =
                            format!("frame {layout_from}: predictor 5 without an earlier motor[0]");
                        self.problem(&pred_line, msg);
                        return None;
                    }
                },
                6 => Predictor::Increment,
                7 => {
                    home_coords += 1;
                    Predictor::HomeCoord((home_coords - 1) % 2)
                }
                8 => Predictor::Fixed1500,
                9 => Predictor::VbatRef(self.constant("vbatref", 0, layout_from)?),
                10 => Predictor::LastMainFrameTime,
                11 => Predictor::MinMotor(self.constant("motorOutput", 0, layout_from)?),
                other => {
                    let msg = format!("frame {layout_from}: unknown predictor {other}");
                    self.problem(&pred_line, msg);
                    return None;
                }
            };
            let Some(encoding) = u32::try_from(e)
                .ok()
                .and_then(|e| Encoding::from_id(e, self.encoding10))
            else {
                let msg = format!("frame {layout_from}: unknown encoding {e}");
                self.problem(&enc_line, msg);
                return None;
            };
            fields.push(FieldSpec {
                predictor,
                encoding,
                signed: signed.get(i).is_some_and(|&s| s != 0),
            });
        }
        Some(FrameDef::new(kind, names, fields, self.data_version))
    }

    /// Main frames need `loopIteration` and `time` to be checked at all.
    fn check_main_fields(&mut self) {
        if self.i.is_none() {
            // P frames take their names and history from I frames.
            self.p = None;
        }
        if let Some(i) = &self.i
            && (i.index_of("loopIteration").is_none() || i.index_of("time").is_none())
        {
            self.problem(
                "Field I name",
                "frame I has no loopIteration or time field".into(),
            );
            self.i = None;
            self.p = None;
        }
    }

    /// How long a frame of this layout can be (see [`max_frame_len`]).
    pub fn max_frame_len(&self) -> usize {
        let widest = FrameKind::ALL
            .iter()
            .filter_map(|&k| self.def(k))
            .map(|d| d.len())
            .max()
            .unwrap_or(0);
        max_frame_len(widest)
    }

    /// The definition of a frame type, if the header gives a usable one.
    pub fn def(&self, kind: FrameKind) -> Option<&FrameDef> {
        match kind {
            FrameKind::I => self.i.as_ref(),
            FrameKind::P => self.p.as_ref(),
            FrameKind::S => self.s.as_ref(),
            FrameKind::G => self.g.as_ref(),
            FrameKind::H => self.h.as_ref(),
            FrameKind::E => None,
        }
    }

    /// Whether iteration `n` is logged at all under the I/P schedule.
    pub fn is_logged(&self, n: u32) -> bool {
        let phase = n % self.i_interval;
        phase == 0 || (phase + self.p_num - 1) % self.p_denom < self.p_num
    }

    /// How many iterations the I/P schedule logs below any iteration.
    pub fn logged_count(&self) -> LoggedCount {
        let mut prefix = Vec::with_capacity(self.i_interval as usize + 1);
        let mut count = 0;
        for n in 0..=self.i_interval {
            prefix.push(count);
            if n < self.i_interval && self.is_logged(n) {
                count += 1;
            }
        }
        LoggedCount {
            i_interval: self.i_interval,
            prefix,
        }
    }

    /// Iterations skipped on purpose after iteration `last` before the next logged one: the
    /// nearer of the next P-logged phase and the next I frame (computed, not searched, as every P
    /// frame needs it).
    pub fn skipped_after(&self, last: u32) -> u32 {
        let next = last.wrapping_add(1);
        let phase = next % self.i_interval;
        if phase == 0 || self.p_num == 0 || self.p_denom == 0 {
            return self.search_skipped_after(last);
        }
        // Within the interval a phase is logged when (phase + p_num - 1) mod p_denom < p_num.
        let within = (phase + self.p_num - 1) % self.p_denom;
        let to_p = if within < self.p_num {
            0
        } else {
            self.p_denom - within
        };
        let skipped = to_p.min(self.i_interval - phase);
        if next.checked_add(skipped).is_none() {
            // The iteration counter wraps on the way: phases restart at 0.
            return self.search_skipped_after(last);
        }
        skipped
    }

    /// What a P frame is predicted from: the last two main frames, and the iterations the I/P
    /// schedule skips after `last_iteration`.
    #[inline]
    pub fn inter_context<'a>(
        &self,
        (previous, previous2): MainHistory<'a>,
        last_iteration: Option<u32>,
    ) -> Context<'a> {
        Context {
            previous,
            previous2,
            skipped: last_iteration.map_or(0, |l| self.skipped_after(l)),
            ..Context::default()
        }
    }

    /// What a frame of `kind` is predicted from: for a P frame the last two main frames and the
    /// iterations the I/P schedule skips after `last_iteration` (that of the last main frame, or
    /// of a logging-resume event after it); for a G frame the last home and the last main frame's
    /// time; nothing for the others.
    #[inline]
    pub fn context<'a>(
        &self,
        kind: FrameKind,
        history: MainHistory<'a>,
        last_iteration: Option<u32>,
        home: &'a [i64],
        last_main_time: impl FnOnce() -> i64,
    ) -> Context<'a> {
        match kind {
            FrameKind::P => self.inter_context(history, last_iteration),
            FrameKind::G => Context {
                home: Some(home),
                last_main_time: last_main_time(),
                ..Context::default()
            },
            _ => Context::default(),
        }
    }

    /// [`Header::skipped_after`] by trying each iteration in turn.
    fn search_skipped_after(&self, last: u32) -> u32 {
        let mut skipped = 0;
        let mut n = last.wrapping_add(1);
        // Iteration 0 of every I interval is logged, so this ends within one interval.
        while !self.is_logged(n) && skipped < self.i_interval {
            skipped += 1;
            n = n.wrapping_add(1);
        }
        skipped
    }

    /// Whether the header says salvage judged the log's line feeds (see [`LINE_FEEDS_CHECKED`]).
    pub fn line_feeds_checked(&self) -> bool {
        self.get(LINE_FEEDS_CHECKED.0) == Some(LINE_FEEDS_CHECKED.1)
    }

    /// The value of a header line that names the craft.
    pub fn craft_name(&self) -> Option<&str> {
        self.get("Craft name").filter(|s| !s.is_empty())
    }
}

/// The number of iterations an I/P schedule logs below an iteration, from a table of one I
/// interval (see [`Header::logged_count`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedCount {
    i_interval: u32,
    /// Logged iterations below each phase of the I interval (one more entry than phases).
    prefix: Vec<u32>,
}

impl LoggedCount {
    /// Logged iterations in `[0, n)`.
    pub fn below(&self, n: u64) -> u64 {
        let interval = u64::from(self.i_interval);
        let per_interval = u64::from(self.prefix[self.prefix.len() - 1]);
        (n / interval) * per_interval + u64::from(self.prefix[(n % interval) as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(text: &str) -> Header {
        let bytes = text.as_bytes();
        Header::parse(bytes, 0, bytes.len())
    }

    const BASE: &str = "H Product:Blackbox flight data recorder by Nicholas Sherlock\n\
H Data version:2\n\
H I interval:32\n\
H Field I name:loopIteration,time,motor[0],motor[1]\n\
H Field I signed:0,0,0,0\n\
H Field I predictor:0,0,11,5\n\
H Field I encoding:1,1,1,0\n\
H Field P predictor:6,2,1,1\n\
H Field P encoding:9,0,0,0\n\
H motorOutput:48,2047\n";

    #[test]
    fn frame_definitions_and_settings() {
        let h = header(&format!("{BASE}H P interval:1/4\nI"));
        assert_eq!(
            h.data_start as usize,
            BASE.len() + "H P interval:1/4\n".len()
        );
        let i = h.i.as_ref().unwrap();
        assert_eq!(i.fields[2].predictor, Predictor::MinMotor(48));
        assert_eq!(i.fields[3].predictor, Predictor::Motor0(2));
        assert_eq!(h.p.as_ref().unwrap().names, i.names);
        assert_eq!((h.p_num, h.p_denom), (1, 4));
        assert!(h.problems.is_empty(), "{:?}", h.problems);
    }

    #[test]
    fn a_problem_covers_its_line_as_read_even_where_bytes_are_not_text() {
        // S names with bytes that are not text (each shown as a three-byte U+FFFD) and no
        // encodings: the problem covers that line, not the start of the next.
        let mut bytes = format!("{BASE}H Field S name:fl").into_bytes();
        bytes.extend([0xFF; 10]);
        bytes.extend(b"ag\nH Field S predictor:0\nH Firmware type:Cleanflight\nI");
        let h = Header::parse(&bytes, 0, bytes.len());
        let line = |name: &str| h.lines.iter().find(|l| l.name == name).unwrap();
        let names = line("Field S name");
        assert_eq!(
            names.end - names.offset,
            "H Field S name:flag\n".len() as u64 + 10
        );
        let next = line("Field S predictor");
        assert_eq!(names.end, next.offset);
        let problem = h
            .problems
            .iter()
            .find(|p| p.message.contains("frame S"))
            .expect("the S layout is unreadable");
        assert_eq!((problem.start, problem.end), (names.offset, names.end));
        assert_eq!(h.firmware, Firmware::Cleanflight);
    }

    #[test]
    fn p_interval_both_forms() {
        let h = header(&format!("{BASE}H P interval:16\nH P ratio:16\nI"));
        assert_eq!((h.p_num, h.p_denom), (1, 16));
        // 1/16 within an I interval of 32: iterations 0 and 16 are logged.
        assert_eq!(h.skipped_after(0), 15);
        assert_eq!(h.skipped_after(16), 15);
        let h = header(&format!("{BASE}H P interval:2/3\nI"));
        assert_eq!((h.p_num, h.p_denom), (2, 3));
        // Pattern from the spec for 2/3: I.PP.PP...
        let pattern: String = (0..8)
            .map(|n| if h.is_logged(n) { 'L' } else { '.' })
            .collect();
        assert_eq!(pattern, "L.LL.LL.");
    }

    #[test]
    fn skipped_iterations_are_computed_as_the_search_finds_them() {
        let mut h = header(&format!("{BASE}I"));
        for (i_interval, p_num, p_denom) in [
            (32, 1, 1),
            (32, 1, 4),
            (256, 1, 16),
            (128, 2, 3),
            (7, 3, 5),
            (1, 1, 1),
            (10, 1, 64),
        ] {
            (h.i_interval, h.p_num, h.p_denom) = (i_interval, p_num, p_denom);
            for last in (0..600).chain(u32::MAX - 300..=u32::MAX) {
                assert_eq!(
                    h.skipped_after(last),
                    h.search_skipped_after(last),
                    "{i_interval} {p_num}/{p_denom} after {last}"
                );
            }
        }
    }

    #[test]
    fn damaged_lines_are_problems_not_failures() {
        let text = format!("{BASE}H broken line without colon\nHX\u{1}\nI");
        let h = header(&text);
        assert!(h.i.is_some());
        assert_eq!(h.problems.len(), 3, "{:?}", h.problems);
    }

    #[test]
    fn inconsistent_layouts_are_rejected() {
        let text = BASE.replace("H Field I encoding:1,1,1,0", "H Field I encoding:1,1,1");
        let h = header(&format!("{text}I"));
        assert!(h.i.is_none());
        assert!(!h.problems.is_empty());
    }
}
