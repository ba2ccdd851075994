//! The Blackbox format written by Betaflight, Cleanflight and INAV.
//!
//! A file holds one or more sessions, each a text header followed by frames. [`decode`] finds the
//! sessions, parses each header and decodes its frames in file order.

pub mod codec;
pub mod decoder;
pub mod event;
pub mod evidence;
pub mod export;
pub mod frame;
pub(crate) mod group;
pub mod header;
mod ledger;
pub mod library;
mod mended_header;
mod parallel;
pub mod predictor;
pub mod salvage;
pub mod sink;
pub mod stats;
pub mod writer;

use crate::periodic::{self, Blocks};
use crate::report::{DamageReason, FileReport, Region, RegionKind, SessionReport};
use decoder::{SessionBounds, SessionDecoder, Validation};
use header::{Header, LOG_START_MARKER, MAX_HEADER};
use mended_header::Mended;
pub use parallel::{MIN_PIECE, Splits, decode_in_parallel, decode_in_pieces};
use sink::Sink;

/// Byte ranges of the sessions in `file`: each starts at a log start marker (or one with a few
/// bytes lost, see [`header::holed_marker_at`]) and runs to the next.
pub fn find_sessions(file: &[u8]) -> Vec<SessionBounds> {
    find_sessions_telling(file, Markers::Holed, &mut |_| {})
}

/// Which log start markers start a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Markers {
    /// Only whole ones (as the reference decoders find them).
    Whole,
    /// Also those with a stretch of a few bytes lost.
    Holed,
}

/// Bytes searched for log start markers between two calls of [`find_sessions_telling`]'s `searched`.
const SEARCH_STEP: usize = 4 << 20;

/// [`find_sessions`] of `markers`, telling `searched` how far the search has gone every
/// [`SEARCH_STEP`] bytes (so that a mapped file's pages behind can be released as it goes).
fn find_sessions_telling(
    file: &[u8],
    markers: Markers,
    searched: &mut dyn FnMut(usize),
) -> Vec<SessionBounds> {
    let finder = memchr::memmem::Finder::new(LOG_START_MARKER);
    let definition = memchr::memmem::Finder::new(I_FRAME_DEFINITION);
    let mut starts = Vec::new();
    let mut definitions = Vec::new();
    let mut from = 0;
    while from < file.len() {
        let to = from.saturating_add(SEARCH_STEP).min(file.len());
        // A marker starting before `to` may end after it.
        let window = &file[from..to
            .saturating_add(LOG_START_MARKER.len() - 1)
            .min(file.len())];
        match markers {
            Markers::Whole => starts.extend(finder.find_iter(window).map(|at| from + at)),
            Markers::Holed => {
                let found = starts.len();
                starts.extend(
                    header::markers_in(window)
                        .map(|at| from + at)
                        .filter(|at| (from..to).contains(at)),
                );
                starts[found..].sort_unstable();
                starts.dedup();
                definitions.extend(
                    definition
                        .find_iter(window)
                        .map(|at| from + at)
                        .filter(|&at| at < to),
                );
            }
        }
        searched(to);
        from = to;
    }
    if markers == Markers::Holed {
        drop_overlapping_markers(file, &mut starts);
        let lost = headers_without_marker(file, &starts, &definitions);
        if !lost.is_empty() {
            starts.extend(lost.into_iter().map(|at| marker_place(file, at)));
            starts.sort_unstable();
            starts.dedup();
        }
    }
    starts
        .iter()
        .enumerate()
        .map(|(i, &start)| SessionBounds {
            index: i + 1,
            start,
            end: starts.get(i + 1).copied().unwrap_or(file.len()),
        })
        .collect()
}

/// Keeps one of log start markers at sorted `starts` that overlap (a line of a marker's bytes
/// read twice, a marker's end repeated after it): a whole marker over a holed one, else the first.
fn drop_overlapping_markers(file: &[u8], starts: &mut Vec<usize>) {
    let whole = |at: usize| file[at..].starts_with(LOG_START_MARKER);
    starts.dedup_by(|later, kept| {
        let overlaps = *later - *kept < LOG_START_MARKER.len();
        if overlaps && whole(*later) && !whole(*kept) {
            *kept = *later;
        }
        overlaps
    });
}

/// The header line every session that decodes main frames holds.
const I_FRAME_DEFINITION: &[u8] = b"H Field I name:";

/// Whether `at` starts a line of `file`.
fn starts_line(file: &[u8], at: usize) -> bool {
    at == 0 || file[at - 1] == b'\n'
}

/// Where the log start marker stood before header lines at `at` whose marker was lost: the
/// erased or zeroed bytes (at most a marker's length) right before them, which the header's
/// reading reports (see [`Header::parse`]).
fn marker_place(file: &[u8], at: usize) -> usize {
    let before = &file[at.saturating_sub(LOG_START_MARKER.len())..at];
    let erased = match before.last() {
        Some(&last @ (0x00 | 0xFF)) => before.iter().rev().take_while(|&&b| b == last).count(),
        _ => 0,
    };
    at - erased
}

/// Bytes outside header lines a header may hold (written over, gone bad) and still be one.
const HEADER_DAMAGE: usize = 64;

/// Where the sessions start whose log start marker was lost (written over beyond a hole, erased):
/// an I-frame definition at `definitions` that no marker in `starts` heads (no marker less than
/// [`MAX_HEADER`] before it with header lines, but for [`HEADER_DAMAGE`] bytes, up to it) starts
/// a session at the first of the header lines that run up to it.
fn headers_without_marker(file: &[u8], starts: &[usize], definitions: &[usize]) -> Vec<usize> {
    let mut lost = Vec::new();
    // Bytes outside header lines counted from the marker last compared, and up to where.
    let mut counted: Option<(usize, usize, usize)> = None;
    // The last definition not headed, and where its header lines start.
    let mut last_lost: Option<(usize, usize)> = None;
    for &at in definitions {
        if !starts_line(file, at) {
            continue;
        }
        // The marker before it, if near, and the bytes outside header lines from it (counted
        // once over).
        let marker = starts[..starts.partition_point(|&s| s <= at)]
            .last()
            .filter(|&&s| at - s <= MAX_HEADER);
        if let Some(&s) = marker {
            let (from, before) = match counted {
                Some((marker, until, count)) if marker == s => (until, count),
                _ => ((s + LOG_START_MARKER.len()).min(at), 0),
            };
            let count = before + outside_header_lines(&file[from..at]);
            counted = Some((s, at, count));
            if count <= HEADER_DAMAGE {
                continue;
            }
        }
        // Back over whole header lines, each after a newline or a byte that is not text, or
        // into those of the last definition found so.
        let floor = at.saturating_sub(MAX_HEADER);
        let mut start = at;
        while let Some(line) = file[floor..start]
            .strip_suffix(b"\n")
            .and_then(|before| {
                let end = before
                    .iter()
                    .rposition(|&b| b == b'\n' || !header::is_text_byte(b));
                end.map(|p| floor + p + 1).or((floor == 0).then_some(0))
            })
            .filter(|&line| file[line..].starts_with(b"H "))
        {
            start = line;
            if let Some((definition, its_start)) = last_lost
                && start <= definition
            {
                start = its_start;
                break;
            }
        }
        last_lost = Some((at, start));
        lost.push(start);
    }
    lost
}

/// The bytes of the lines in `bytes` that are not header lines (`H `, text, a newline).
fn outside_header_lines(bytes: &[u8]) -> usize {
    bytes
        .split_inclusive(|&b| b == b'\n')
        .filter(|line| !(line.starts_with(b"H ") && line.iter().all(|&b| header::is_text_byte(b))))
        .map(<[u8]>::len)
        .sum()
}

/// Whether the bytes contain a Blackbox session at all: a log start marker (whole or with a few
/// bytes lost) or the header lines of a session whose marker was lost.
pub fn is_blackbox(file: &[u8]) -> bool {
    header::markers_in(file).next().is_some()
        || memchr::memmem::find_iter(file, I_FRAME_DEFINITION).any(|at| starts_line(file, at))
}

/// Bytes a file must hold to be judged headless frame data.
const HEADLESS_MIN_LEN: usize = 4096;

/// Whether `file`, which holds no log start marker, looks like Blackbox frame data whose header
/// was lost (the start of a log cut off): it holds the log-end event (`End of log`, which INAV
/// follows with the disarm reason), or it is binary data in which the P frame marker is at least
/// 2.5 times as frequent as in random bytes (one byte in 256): every P frame starts with one,
/// and they are 15 to 100 bytes long.
pub fn is_headless_frame_data(file: &[u8]) -> bool {
    const LOG_END: &[u8] = b"\xffEnd of log";
    if file.len() < HEADLESS_MIN_LEN || is_blackbox(file) {
        return false;
    }
    if memchr::memmem::find(file, LOG_END).is_some_and(|at| at > 0 && file[at - 1] == b'E') {
        return true;
    }
    let sample = &file[..file.len().min(1 << 20)];
    let text = sample
        .iter()
        .filter(|&&b| b.is_ascii_graphic() || b.is_ascii_whitespace())
        .count();
    let markers = memchr::memchr_iter(b'P', sample).count();
    text * 2 < sample.len() && markers * 100 >= sample.len()
}

/// One session, ready to decode.
#[derive(Debug, Clone)]
pub struct Session {
    pub bounds: SessionBounds,
    pub header: Header,
}

/// Parse the headers of every session in `file`.
pub fn sessions(file: &[u8]) -> Vec<Session> {
    find_sessions(file)
        .into_iter()
        .map(|bounds| Session {
            header: Header::parse(file, bounds.start, bounds.end),
            bounds,
        })
        .collect()
}

/// Whether `file`, whose first session is `first`, was copied in text mode (decided on that
/// session's data, unless salvage wrote it and checked its line feeds).
pub fn copied_in_text_mode(file: &[u8], first: &Session) -> bool {
    let data_start = (first.header.data_start as usize).min(file.len());
    !first.header.line_feeds_checked() && crate::textmode::is_newline_converted(&file[data_start..])
}

/// Decode every session of `file`, passing accepted frames to `sink` (told which session each
/// belongs to by `on_session`), and report what was found.
pub fn decode<S: Sink>(
    path: &str,
    file: &[u8],
    on_session: impl FnMut(&Session, &mut S),
    sink: &mut S,
) -> FileReport {
    decode_with(Validation::Thorough, path, file, on_session, sink)
}

/// [`decode`] with a choice of validation rules.
pub fn decode_with<S: Sink>(
    validation: Validation,
    path: &str,
    file: &[u8],
    mut on_session: impl FnMut(&Session, &mut S),
    sink: &mut S,
) -> FileReport {
    let plan = Plan::of(file, sink, validation);
    let reports = (0..plan.bounds.len())
        .map(|index| {
            let session = plan.session(file, index);
            on_session(&session, sink);
            let report = plan.decoder(file, &session, validation).run(sink);
            sink.decoded(&report);
            report
        })
        .collect();
    plan.report(path, file, reports)
}

/// Sessions on either side of one whose header blocks were written over whose headers may fill
/// its holes (see [`mended_header::mend`]).
const MENDING_SESSIONS: usize = 4;

/// Blocks written over a log's frames by which its reading must be damaged: one in this many
/// (in the damage model's cases, one in 2.8 at least).
const WRITTEN_OVER_SHARE: u64 = 4;

/// What decoding a file takes before its sessions: where they are, and whether the file was
/// copied in text mode (decided on the first session's data).
struct Plan {
    bounds: Vec<SessionBounds>,
    text_mode: bool,
    /// Blocks written over the log at a fixed stride (see [`crate::periodic::written_over`]).
    written_over: Option<Blocks>,
    /// The headers they lie in, by session, mended.
    mended: Vec<(usize, Mended)>,
}

impl Plan {
    /// Find the sessions, telling `sink` how far the search has gone. Blocks written over the
    /// log are looked for under the thorough rules only (the reference decoders know none).
    fn of(file: &[u8], sink: &mut impl Sink, validation: Validation) -> Plan {
        // The reference decoders know whole markers only.
        let markers = match validation {
            Validation::Thorough => Markers::Holed,
            Validation::Reference => Markers::Whole,
        };
        let bounds = find_sessions_telling(file, markers, &mut |offset| sink.searched(offset));
        let text_mode = bounds
            .first()
            .is_some_and(|&b| copied_in_text_mode(file, &Plan::parse(file, b)));
        let mut plan = Plan {
            bounds,
            text_mode,
            written_over: None,
            mended: Vec::new(),
        };
        if validation == Validation::Thorough {
            let written_over = plan
                .written_over_headers(file)
                .or_else(|| plan.written_over_frames(file));
            if let Some(blocks) = written_over {
                plan.mended = plan.mend(file, &blocks);
                plan.written_over = Some(blocks);
            }
        }
        plan
    }

    /// Blocks written over the log that show where they stand in a header's text (see
    /// [`periodic::written_over`]).
    fn written_over_headers(&self, file: &[u8]) -> Option<Blocks> {
        let damaged_headers: Vec<_> = self
            .bounds
            .iter()
            .filter(|&&b| !Plan::parse(file, b).header.problems.is_empty())
            .map(|&b| mended_header::reach(b))
            .collect();
        match damaged_headers.is_empty() {
            true => None,
            false => periodic::written_over(file, &damaged_headers),
        }
    }

    /// Blocks written over the log's frames alone (its headers end before the first): the same
    /// bytes recurring over the whole file (see [`periodic::find`]), near at least one in
    /// [`WRITTEN_OVER_SHARE`] of which the reading is damaged. (The rest leave frames that read
    /// in step, their values changed: the frames under them are then suspect.) Looked for only
    /// where the bytes the search reads (see [`periodic::SEARCHED`]) read with damage. Blocks
    /// inserted read better without them, which the command line sees first; taken for written
    /// over, each costs the frame it cut, as it would anyway.
    fn written_over_frames(&self, file: &[u8]) -> Option<Blocks> {
        let searched = &file[..file.len().min(periodic::SEARCHED)];
        if self.corrupt_ranges(searched).is_empty() {
            return None;
        }
        let candidates = periodic::find(file);
        if candidates.is_empty() {
            return None;
        }
        let spans = self.corrupt_ranges(file);
        candidates
            .into_iter()
            .find(|blocks| periodic::disturbed(blocks, &spans) * WRITTEN_OVER_SHARE >= blocks.count)
    }

    /// The corrupt spans of a plain reading of `data`, the file or its start (where the data
    /// ending inside a frame is no damage).
    fn corrupt_ranges(&self, data: &[u8]) -> Vec<(u64, u64)> {
        let mut spans = Vec::new();
        for &bounds in self.bounds.iter().take_while(|b| b.start < data.len()) {
            let end = bounds.end.min(data.len());
            let session = Plan::parse(data, SessionBounds { end, ..bounds });
            let decoder = self.decoder(data, &session, Validation::Thorough);
            let report = decoder.run(&mut sink::Discard);
            spans.extend(
                report
                    .corrupt_spans
                    .iter()
                    .filter(|s| s.reason != DamageReason::Truncated)
                    .map(|s| (s.start, s.end)),
            );
        }
        spans
    }

    /// The headers under `blocks`, each mended from the headers of the sessions nearest it.
    fn mend(&self, file: &[u8], blocks: &Blocks) -> Vec<(usize, Mended)> {
        let headers: Vec<_> = self
            .bounds
            .iter()
            .map(|&b| b.start..(Plan::parse(file, b).header.data_start as usize).min(b.end))
            .collect();
        (0..self.bounds.len())
            .filter_map(|i| {
                // The nearest sessions' headers are those most like it.
                let near = i.saturating_sub(MENDING_SESSIONS)..(i + MENDING_SESSIONS + 1);
                let others: Vec<_> = near
                    .filter(|&j| j != i)
                    .filter_map(|j| headers.get(j).cloned())
                    .collect();
                mended_header::mend(file, self.bounds[i], blocks, &others).map(|m| (i, m))
            })
            .collect()
    }

    /// The session at `bounds`, its header parsed (one at a time: a file of many sessions never
    /// holds them all).
    fn parse(file: &[u8], bounds: SessionBounds) -> Session {
        Session {
            header: Header::parse(file, bounds.start, bounds.end),
            bounds,
        }
    }

    /// Session `index`, its header parsed, or mended where blocks were written over it.
    fn session(&self, file: &[u8], index: usize) -> Session {
        let bounds = self.bounds[index];
        match self.mended.iter().find(|(i, _)| *i == index) {
            Some((_, m)) => Session {
                header: m.header.clone(),
                bounds,
            },
            None => Plan::parse(file, bounds),
        }
    }

    fn decoder<'a>(
        &self,
        file: &'a [u8],
        session: &'a Session,
        validation: Validation,
    ) -> SessionDecoder<'a> {
        let in_doubt = self
            .mended
            .iter()
            .any(|(i, m)| self.bounds[*i] == session.bounds && m.in_doubt);
        SessionDecoder::new(file, &session.header, session.bounds, validation)
            .text_mode(self.text_mode)
            .written_over(self.written_over.as_ref(), in_doubt)
    }

    /// The file's report: its sessions' reports, and the bytes before the first session.
    fn report(&self, path: &str, file: &[u8], reports: Vec<SessionReport>) -> FileReport {
        let mut regions = Vec::new();
        let first_start = self.bounds.first().map_or(file.len(), |b| b.start);
        if first_start > 0 {
            // Frame data there lost its header with the start of the log.
            let kind = match is_headless_frame_data(&file[..first_start]) {
                true => RegionKind::HeaderLost,
                false => RegionKind::NonLogData,
            };
            regions.push(Region {
                start: 0,
                end: first_start as u64,
                kind,
            });
        }
        let mut report = FileReport::new(path.to_owned(), file.len() as u64, reports, regions);
        report.periodic_overwrites = self.written_over.clone().map(Box::new);
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_across_the_search_steps_are_found_once_and_the_search_tells_its_progress() {
        let mut file = vec![0u8; 3 * SEARCH_STEP + 100];
        let starts = [
            0,
            SEARCH_STEP - 10,
            2 * SEARCH_STEP - 1,
            2 * SEARCH_STEP + 500,
        ];
        for &at in &starts {
            file[at..at + LOG_START_MARKER.len()].copy_from_slice(LOG_START_MARKER);
        }
        let mut told = Vec::new();
        let bounds = find_sessions_telling(&file, Markers::Holed, &mut |offset| told.push(offset));
        let found: Vec<usize> = bounds.iter().map(|b| b.start).collect();
        assert_eq!(found, starts);
        assert_eq!(bounds.last().map(|b| b.end), Some(file.len()));
        assert_eq!(
            told,
            [SEARCH_STEP, 2 * SEARCH_STEP, 3 * SEARCH_STEP, file.len()]
        );
    }

    #[test]
    fn a_marker_overlapping_another_starts_no_session_of_its_own() {
        // A marker's end written again after it reads as a holed marker inside the whole one.
        let end = &LOG_START_MARKER[14..];
        let mut file = [LOG_START_MARKER, end, b"H a:1\n"].concat();
        let starts =
            |file: &[u8]| -> Vec<usize> { find_sessions(file).iter().map(|b| b.start).collect() };
        assert_eq!(starts(&file), [0]);
        // The whole marker stands over a holed one before it.
        file = [
            &LOG_START_MARKER[..LOG_START_MARKER.len() - 10],
            LOG_START_MARKER,
            b"H a:1\n",
        ]
        .concat();
        assert_eq!(starts(&file), [LOG_START_MARKER.len() - 10]);
    }
}
