//! Salvage: re-encode the trusted frames of every session into a clean log.
//!
//! The header is kept (its damaged lines left out); every trusted frame and event is re-encoded in
//! file order. Where frames were lost, a logging-resume event carries the next iteration and time
//! so that every decoder accepts the jump, and the next main frame is an I frame (the only kind
//! trusted after a loss). An I frame kept after damaged bytes gets one too, even when no frame was
//! lost: its values are not compared with the frames before the damage. A session cut short gets
//! a log-end event. Bytes between sessions and padding are dropped.

use super::decoder::Validation;
use super::event::Event;
use super::evidence::listed_suspect::{SUSPECT_FRAMES, SuspectFrames};
use super::frame::FrameKind;
use super::header::{HeaderLine, LINE_FEEDS_CHECKED, LOG_START_MARKER};
use super::library::{Choice, HeaderLibrary};
use super::sink::{EventFrame, Frame, Sink};
use super::writer::SessionWriter;
use super::{Session, decode_with};
use crate::report::{FileReport, FrameCounts, Keep, Trust};
use crate::textmode::NewlineCounts;
use serde::Serialize;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

/// What salvage did with one session.
#[derive(Debug, Clone, Serialize)]
pub struct SalvagedSession {
    /// 1-based index in the input.
    pub index: usize,
    /// The session's bytes in the input.
    pub input_start: u64,
    pub input_end: u64,
    /// Where the session landed in its output file.
    pub output_start: u64,
    pub output_end: u64,
    /// Frames written, by type (events include the ones added).
    pub kept: FrameCounts,
    /// Main frames written that a value rule doubts (kept unless `--drop-suspect`), and those
    /// left out for it.
    pub suspect_kept: u64,
    pub suspect_dropped: u64,
    /// Logging-resume events written where frames were lost.
    pub resume_events_added: u64,
    /// Whether a log-end event was added because the session was cut short.
    pub log_end_added: bool,
    /// GPS frames left out because the session kept no other frame to write before them but its
    /// log-end event (right after the header an `H` frame would read as a header line, and nothing
    /// after a log-end event is read).
    pub gps_frames_dropped: u64,
    /// Trusted frames left out because the rewritten header does not define their type as the
    /// input's did (never expected: the fuzz checks hold it to 0).
    pub frames_undefinable: u64,
    /// Header lines left out: parts of frame definitions the damage left unusable.
    pub header_lines_dropped: usize,
    /// Input byte spans left out, with where the output continues after each.
    pub dropped: Vec<DroppedSpan>,
}

/// Bytes of the input that salvage left out.
#[derive(Debug, Clone, Serialize)]
pub struct DroppedSpan {
    pub input_start: u64,
    pub input_end: u64,
    pub reason: crate::report::DamageReason,
    /// Offset in the session's output where what follows the span was written.
    pub output_offset: u64,
}

/// One re-encoded session.
pub struct SalvagedBytes {
    pub summary: SalvagedSession,
    pub bytes: Vec<u8>,
}

/// Where salvaged sessions go as they are re-encoded: a session's bytes arrive in order, in
/// pieces, and sessions one after the other.
pub trait Output {
    /// The next bytes of session `session` (1-based, as numbered in the input).
    fn write(&mut self, session: usize, bytes: &[u8]) -> io::Result<()>;
    /// Forget every byte written: the output is written again from its start.
    fn restart(&mut self) -> io::Result<()>;
    /// The input before `offset` was searched for sessions (see [`Sink::searched`]).
    fn searched(&mut self, _offset: usize) {}
}

/// Sessions held in memory, one byte vector each in input order.
impl Output for Vec<(usize, Vec<u8>)> {
    fn write(&mut self, session: usize, bytes: &[u8]) -> io::Result<()> {
        match self.last_mut() {
            Some((index, held)) if *index == session => held.extend_from_slice(bytes),
            _ => self.push((session, bytes.to_vec())),
        }
        Ok(())
    }

    fn restart(&mut self) -> io::Result<()> {
        self.clear();
        Ok(())
    }
}

/// Re-encoded bytes are passed to the output in pieces of about this size, so that memory holds
/// one piece of a session rather than the whole of it.
const PIECE: usize = 1 << 16;

/// Whether a header line is worth keeping: `Field X …` lines only for frame types the header
/// still defines (a definition left half-damaged would make the salvaged header damaged too).
fn defines_usable(header: &super::header::Header, name: &str) -> bool {
    let Some(rest) = name.strip_prefix("Field ") else {
        return true;
    };
    let kind = rest.bytes().next().and_then(FrameKind::from_byte);
    // Names and signedness of P frames are the I frame's.
    kind.is_none_or(|k| header.def(k).is_some())
}

/// Whether the output, read as it is written, would pass for a text-mode copy though no header
/// says its line feeds were checked: leaving out the damaged stretches that held a log's carriage
/// returns can make it look like one. The data of the whole output (after its first header) and
/// of each session (written to a file of its own, with `--split`) are judged apart.
#[derive(Default)]
struct NewlineWatch {
    /// The whole output's data, once its first header is written.
    output: Option<NewlineCounts>,
    /// Whether the output's first header says its line feeds were checked.
    output_checked: bool,
    session: NewlineCounts,
    session_checked: bool,
    /// Bytes of the current session's header still to come.
    header_left: usize,
    /// Whether some session, or the whole output, read as a copy.
    converted: bool,
}

impl NewlineWatch {
    fn start_session(&mut self, header_len: usize, checked: bool) {
        self.session = NewlineCounts::default();
        self.session_checked = checked;
        self.header_left = header_len;
        if self.output.is_none() {
            self.output_checked = checked;
        }
    }

    fn add(&mut self, bytes: &[u8]) {
        let (header, data) = bytes.split_at(self.header_left.min(bytes.len()));
        self.header_left -= header.len();
        match &mut self.output {
            Some(output) => output.add(header),
            None if self.header_left == 0 => self.output = Some(NewlineCounts::default()),
            None => {}
        }
        if let Some(output) = &mut self.output {
            output.add(data);
        }
        self.session.add(data);
    }

    fn end_session(&mut self) {
        self.converted |= !self.session_checked && self.session.is_newline_converted();
    }

    /// Whether the output as written would read as a text-mode copy.
    fn converted(&self) -> bool {
        self.converted
            || !self.output_checked && self.output.is_some_and(|o| o.is_newline_converted())
    }
}

/// Re-encodes what a session decodes to.
struct Reencoder<'a> {
    writer: Option<SessionWriter>,
    /// The iteration the next main frame continues from without a loss.
    expected_iteration: Option<u32>,
    /// H and G frames waiting for any other frame: right after the header an `H` would read as a
    /// header line.
    held: Vec<(FrameKind, Vec<i64>)>,
    wrote_frame: bool,
    /// Whether the session's log-end event was written.
    ended: bool,
    summary: Option<SalvagedSession>,
    /// End of the last input frame written, and (input offset, output offset) wherever the
    /// input skipped bytes between two written frames.
    last_input_end: Option<u64>,
    anchors: Vec<(u64, u64)>,
    /// Sessions written, with their anchors.
    done: Vec<(SalvagedSession, Vec<(u64, u64)>)>,
    output: &'a mut dyn Output,
    /// The first error the output gave; nothing more is written after it.
    error: Option<io::Error>,
    select: Option<usize>,
    /// Which frames to write.
    keep: Keep,
    /// Whether every header says its line feeds were checked: when the input was copied in text
    /// mode (decided at its first session), or when the output would otherwise read as one.
    mark_line_feeds: Option<bool>,
    /// Line feeds and carriage returns written, while no header says they were checked.
    newlines: NewlineWatch,
    /// Per session (by index, from 1), the main frames to list as suspect in its header.
    listing: &'a [SuspectFrames],
    /// The main frames of the current session written as suspect, and whether the last main
    /// frame written was.
    suspect_written: SuspectFrames,
    last_main_suspect: bool,
    /// The current session's listing in `listing`, for looking iterations up: a frame of an
    /// iteration it lists reads as suspect in the log written.
    listed: SuspectFrames,
    /// Per session written, the main frames it wrote as suspect.
    suspect_by_session: Vec<(usize, SuspectFrames)>,
    /// The input offset decoding has reached (for progress bars and releasing mapped pages).
    reached: &'a AtomicU64,
}

impl Reencoder<'_> {
    fn start(&mut self, file: &[u8], session: &Session) {
        self.finish();
        // The line feeds of a text-mode copy that salvage keeps were judged: the output says so,
        // or it would read as a text-mode copy again.
        let mark = *self
            .mark_line_feeds
            .get_or_insert_with(|| super::copied_in_text_mode(file, session))
            && !session.header.line_feeds_checked();
        if self.select.is_some_and(|s| s != session.bounds.index) {
            return;
        }
        let header = &session.header;
        let start = session.bounds.start;
        let data_start = (header.data_start as usize).clamp(start, session.bounds.end);
        let (name, value) = LINE_FEEDS_CHECKED;
        // The frames this session writes as suspect are listed anew (a salvaged input's listing
        // is not copied).
        let listing = session
            .bounds
            .index
            .checked_sub(1)
            .and_then(|i| self.listing.get(i))
            .map_or_else(String::new, SuspectFrames::header_lines);
        let listed = |l: &&HeaderLine| l.name == SUSPECT_FRAMES;
        // A header read as it is but for its log start marker (damaged, or lost: a session
        // found by its header lines) is copied as it is, behind a whole marker.
        let first_line = header
            .lines
            .first()
            .map_or(data_start, |l| (l.offset as usize).clamp(start, data_start));
        let whole = !header.mended && header.problems.iter().all(|p| p.end as usize <= first_line);
        let (writer, dropped) = if whole {
            let mut bytes = Vec::with_capacity(data_start - start + listing.len());
            let mut at = start;
            if !file[start..].starts_with(LOG_START_MARKER) {
                bytes.extend_from_slice(LOG_START_MARKER);
                at = first_line;
            }
            for line in header.lines.iter().filter(listed) {
                let (from, to) = (line.offset as usize, line.end as usize);
                bytes.extend_from_slice(&file[at..from.clamp(at, data_start)]);
                at = to.clamp(at, data_start);
            }
            bytes.extend_from_slice(&file[at..data_start]);
            if mark {
                bytes.extend_from_slice(format!("H {name}:{value}\n").as_bytes());
            }
            bytes.extend_from_slice(listing.as_bytes());
            (SessionWriter::from_header_bytes(&bytes), 0)
        } else {
            // Lines that did not parse are gone already; lines with bytes that are not text are
            // kept as the decoder read them, with those bytes replaced, so the frames they define
            // re-encode the same: a control character that is white space (which the decoder
            // trims from a value, as in `0,0\x0C`) by a space, any other by U+FFFD.
            let text = |t: &str| -> String {
                t.chars()
                    .map(|c| match c {
                        '\t' => c,
                        c if c.is_control() && c.is_whitespace() => ' ',
                        c if c.is_control() => '\u{FFFD}',
                        c => c,
                    })
                    .collect()
            };
            // A setting whose value was refused is left out: the decoder used its default.
            // A setting whose value was refused is left out, every line of that name: the
            // decoder used its default.
            let refused: Vec<&str> = header
                .lines
                .iter()
                .filter(|l| {
                    header.problems.iter().any(|p| {
                        p.message != super::header::NOT_TEXT && (p.start..p.end).contains(&l.offset)
                    })
                })
                .map(|l| l.name.as_str())
                .collect();
            let mut good: Vec<(String, String)> = header
                .lines
                .iter()
                .filter(|l| l.name != "Product" && defines_usable(header, &l.name))
                .filter(|l| !listed(l))
                .filter(|l| l.name.starts_with("Field ") || !refused.contains(&l.name.as_str()))
                .map(|l| (text(&l.name), text(&l.value)))
                .collect();
            // The schedule and data version are written as the decoder used them (a refused
            // value fell back to its default).
            let used = ["Data version", "I interval", "P interval", "P ratio"];
            good.retain(|(name, _)| !used.contains(&name.as_str()));
            if mark {
                good.push((name.to_owned(), value.to_owned()));
            }
            good.extend(listing.lines().filter_map(|line| {
                let (n, v) = line.strip_prefix("H ")?.split_once(':')?;
                Some((n.to_owned(), v.to_owned()))
            }));
            good.splice(
                0..0,
                [
                    ("Data version".to_owned(), header.data_version.to_string()),
                    ("I interval".to_owned(), header.i_interval.to_string()),
                    (
                        "P interval".to_owned(),
                        format!("{}/{}", header.p_num, header.p_denom),
                    ),
                ],
            );
            // Whatever the rewritten header still finds wrong goes too, and a line that reads as
            // (some of) a log start marker, which would start a session of its own, until
            // nothing does (each round drops at least one line, so this ends).
            let stray_markers = |writer: &SessionWriter| -> Vec<std::ops::Range<u64>> {
                super::header::markers_in(writer.bytes())
                    .filter(|&at| at > 0)
                    .map(|at| at as u64..(at + LOG_START_MARKER.len()) as u64)
                    .collect()
            };
            let mut writer = SessionWriter::new(&good);
            loop {
                let markers = stray_markers(&writer);
                let h = writer.header();
                if (h.problems.is_empty() && markers.is_empty()) || good.is_empty() {
                    break;
                }
                let flagged: Vec<usize> = h
                    .lines
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| {
                        h.problems
                            .iter()
                            .any(|p| (p.start..p.end).contains(&l.offset))
                            || markers.iter().any(|m| m.start < l.end && l.offset < m.end)
                    })
                    .map(|(i, _)| i)
                    .collect();
                // Line 0 of the rewritten header is the log start marker, not one of `good`.
                let flagged: Vec<usize> = flagged
                    .into_iter()
                    .filter_map(|i| i.checked_sub(1))
                    .collect();
                if flagged.is_empty() {
                    break;
                }
                let mut index = 0;
                good.retain(|_| {
                    index += 1;
                    !flagged.contains(&(index - 1))
                });
                writer = SessionWriter::new(&good);
            }
            let kept = good
                .iter()
                .filter(|(n, _)| n != name && n != SUSPECT_FRAMES)
                .count();
            let dropped = header.lines.len().saturating_sub(kept + 1);
            (writer, dropped)
        };
        debug_assert!(writer.bytes().starts_with(LOG_START_MARKER));
        self.newlines
            .start_session(writer.bytes().len(), writer.header().line_feeds_checked());
        self.writer = Some(writer);
        self.expected_iteration = None;
        self.held.clear();
        self.wrote_frame = false;
        self.ended = false;
        self.last_input_end = None;
        self.anchors.clear();
        self.suspect_written = SuspectFrames::default();
        self.last_main_suspect = false;
        self.listed = session
            .bounds
            .index
            .checked_sub(1)
            .and_then(|i| self.listing.get(i))
            .map_or_else(SuspectFrames::default, SuspectFrames::for_lookup);
        self.summary = Some(SalvagedSession {
            index: session.bounds.index,
            input_start: start as u64,
            input_end: session.bounds.end as u64,
            output_start: 0,
            output_end: 0,
            kept: FrameCounts::default(),
            suspect_kept: 0,
            suspect_dropped: 0,
            resume_events_added: 0,
            log_end_added: false,
            header_lines_dropped: dropped,
            gps_frames_dropped: 0,
            frames_undefinable: 0,
            dropped: Vec::new(),
        });
    }

    /// Remember where the output stands when the input skipped bytes before `start`.
    fn note_position(&mut self, start: u64, end: u64) {
        self.reached.store(start, Ordering::Relaxed);
        let Some(w) = &self.writer else { return };
        if self.last_input_end != Some(start) {
            self.anchors.push((start, w.written()));
        }
        self.last_input_end = Some(end);
    }

    fn count(&mut self, kind: FrameKind) {
        if let Some(s) = &mut self.summary {
            let c = &mut s.kept;
            match kind {
                FrameKind::I => c.i += 1,
                FrameKind::P => c.p += 1,
                FrameKind::S => c.s += 1,
                FrameKind::G => c.g += 1,
                FrameKind::H => c.h += 1,
                FrameKind::E => c.e += 1,
            }
        }
    }

    fn write_event(&mut self, event: &Event) {
        let Some(w) = &mut self.writer else { return };
        w.event(event);
        self.wrote_frame = true;
        match *event {
            Event::LoggingResume { iteration, .. } => self.expected_iteration = Some(iteration),
            Event::LogEnd { .. } => self.ended = true,
            _ => {}
        }
        self.count(FrameKind::E);
        // Nothing after a log-end event is read: GPS frames still held are dropped (and counted).
        if !self.ended {
            self.release_held();
        }
    }

    fn release_held(&mut self) {
        let held = std::mem::take(&mut self.held);
        for (kind, values) in held {
            if let Some(w) = &mut self.writer {
                w.other(kind, &values);
            }
            self.count(kind);
        }
    }

    /// Pass what the session's writer holds to the output once it holds a piece, or whatever it
    /// holds when `all`.
    fn pass_on(&mut self, all: bool) {
        let (Some(w), Some(summary)) = (&mut self.writer, &self.summary) else {
            return;
        };
        if !all && w.bytes().len() < PIECE {
            return;
        }
        let output = &mut *self.output;
        let newlines = &mut self.newlines;
        let result = w.take(|bytes| match &self.error {
            None => {
                newlines.add(bytes);
                output.write(summary.index, bytes)
            }
            Some(_) => Ok(()),
        });
        if let Err(e) = result {
            self.error.get_or_insert(e);
        }
    }

    fn finish(&mut self) {
        let Some(summary) = &mut self.summary else {
            return;
        };
        summary.gps_frames_dropped = self.held.len() as u64;
        self.held.clear();
        let Some(w) = &mut self.writer else { return };
        self.anchors.push((summary.input_end, w.written()));
        if !self.ended {
            w.event(&Event::LogEnd {
                disarm_reason: None,
            });
            summary.log_end_added = true;
            summary.kept.e += 1;
        }
        summary.output_end = w.written();
        self.pass_on(true);
        self.newlines.end_session();
        let summary = self.summary.take().expect("checked above");
        let written = std::mem::take(&mut self.suspect_written);
        self.suspect_by_session.push((summary.index, written));
        self.writer = None;
        let anchors = std::mem::take(&mut self.anchors);
        self.done.push((summary, anchors));
    }

    fn write_frame(&mut self, frame: &Frame<'_>) {
        // A frame left out (only main frames are suspect) is a loss like damage: the next one
        // written marks the seam.
        if !self.keep.keeps(frame.trust) {
            if let Some(s) = &mut self.summary {
                s.suspect_dropped += 1;
            }
            return;
        }
        // Damaged bytes came between this frame and the last one kept.
        let after_damage = self.last_input_end.is_some_and(|end| end != frame.offset);
        self.note_position(frame.offset, frame.offset + frame.len as u64);
        let Some(w) = &mut self.writer else { return };
        let values = frame.values;
        if w.header()
            .def(frame.kind)
            .is_none_or(|d| d.len() != values.len())
        {
            // The rewritten header no longer defines this frame the same way: never panic on it,
            // and say so.
            if let Some(s) = &mut self.summary {
                s.frames_undefinable += 1;
            }
            return;
        }
        match frame.kind {
            FrameKind::I | FrameKind::P => {
                let header = w.header();
                let index = header
                    .i
                    .as_ref()
                    .and_then(|d| d.index_of("loopIteration"))
                    .unwrap_or(0);
                let time_index = header
                    .i
                    .as_ref()
                    .and_then(|d| d.index_of("time"))
                    .unwrap_or(1);
                let iteration = values[index] as u32;
                // Where frames were lost, or an I frame follows damage (its values need not
                // continue from the last frame kept), a logging-resume event says so.
                let seam = self.expected_iteration.is_some_and(|e| {
                    e != iteration || (frame.kind == FrameKind::I && after_damage)
                });
                if seam {
                    let resume = Event::LoggingResume {
                        iteration,
                        time: values[time_index] as u32,
                    };
                    w.event(&resume);
                    if let Some(s) = &mut self.summary {
                        s.resume_events_added += 1;
                        s.kept.e += 1;
                    }
                }
                let w = self.writer.as_mut().expect("checked above");
                w.main(frame.kind, values);
                let suspect = frame.trust == Trust::Suspect;
                if let Some(s) = &mut self.summary {
                    s.suspect_kept += u64::from(suspect);
                }
                // Listed as the log written will read: a trusted frame of an iteration the
                // listing names (one written twice) reads as suspect there.
                let reads_suspect = suspect || self.listed.contains(iteration);
                self.suspect_written
                    .note(iteration, reads_suspect, self.last_main_suspect);
                self.last_main_suspect = reads_suspect;
                self.expected_iteration = Some(
                    iteration
                        .wrapping_add(1)
                        .wrapping_add(w.header().skipped_after(iteration)),
                );
                self.wrote_frame = true;
                self.count(frame.kind);
                self.release_held();
            }
            FrameKind::H | FrameKind::G if !self.wrote_frame => {
                self.held.push((frame.kind, values.to_vec()));
            }
            kind => {
                w.other(kind, values);
                self.wrote_frame = true;
                self.count(kind);
                self.release_held();
            }
        }
    }
}

impl Sink for Reencoder<'_> {
    fn frame(&mut self, frame: &Frame<'_>) {
        self.write_frame(frame);
        self.pass_on(false);
    }

    fn event(&mut self, event: &EventFrame<'_>) {
        self.note_position(event.offset, event.offset + event.len as u64);
        self.write_event(event.event);
        self.pass_on(false);
    }

    fn searched(&mut self, offset: usize) {
        self.output.searched(offset);
    }
}

/// Salvage `file`: every session (or only `select`), each re-encoded on its own (suspect frames
/// kept) and held in memory, and the report of what the input held.
pub fn salvage(path: &str, file: &[u8], select: Option<usize>) -> (FileReport, Vec<SalvagedBytes>) {
    let mut held: Vec<(usize, Vec<u8>)> = Vec::new();
    let (report, sessions) =
        salvage_into(path, file, select, Keep::All, &AtomicU64::new(0), &mut held)
            .expect("writing to memory cannot fail");
    let bytes = held.into_iter().map(|(_, bytes)| bytes);
    let salvaged = sessions
        .into_iter()
        .zip(bytes)
        .map(|(summary, bytes)| SalvagedBytes { summary, bytes })
        .collect();
    (report, salvaged)
}

/// Salvage `file` into `output` as it decodes: every session (or only `select`), each re-encoded
/// on its own with the frames `keep` names; the report of what the input held, and what was written of each session (its
/// `output_start` is 0, its `output_end` its length). The input offset decoding has reached goes
/// to `reached` as it goes. Stops writing at the output's first error, and returns it.
pub fn salvage_into(
    path: &str,
    file: &[u8],
    select: Option<usize>,
    keep: Keep,
    reached: &AtomicU64,
    output: &mut dyn Output,
) -> io::Result<(FileReport, Vec<SalvagedSession>)> {
    let mut plan = Plan::default();
    let mut writings = 0;
    loop {
        writings += 1;
        let (report, sessions, outcome) =
            salvage_once(path, file, select, keep, &plan, reached, output)?;
        // The output would read as a text-mode copy, or holds suspect frames its headers do not
        // list: written again, every header saying its line feeds were checked, or listing them.
        // (The second writing decodes the same frames; its added lines can only make the third
        // mark the line feeds.)
        let next = Plan {
            mark_line_feeds: match outcome.converted {
                true => Some(true),
                false => plan.mark_line_feeds,
            },
            listing: outcome.suspect,
        };
        let listed = next.listing.iter().any(|l| !l.is_empty());
        if next == plan || (!listed && !outcome.converted) || writings == 3 {
            return Ok((report, sessions));
        }
        output.restart()?;
        plan = next;
    }
}

/// What a writing of the salvaged log adds to its headers.
#[derive(Debug, Default, PartialEq)]
struct Plan {
    /// Whether every header says its line feeds were checked (decided at the first session when
    /// `None`).
    mark_line_feeds: Option<bool>,
    /// Per session (by index, from 1), the main frames listed as suspect.
    listing: Vec<SuspectFrames>,
}

/// What one writing found of itself.
struct Outcome {
    /// Whether the output would read as a text-mode copy.
    converted: bool,
    /// Per session (by index, from 1), the main frames written as suspect.
    suspect: Vec<SuspectFrames>,
}

/// [`salvage_into`] once, as `plan` says; and what it found of its output.
fn salvage_once(
    path: &str,
    file: &[u8],
    select: Option<usize>,
    keep: Keep,
    plan: &Plan,
    reached: &AtomicU64,
    output: &mut dyn Output,
) -> io::Result<(FileReport, Vec<SalvagedSession>, Outcome)> {
    let mut sink = Reencoder {
        keep,
        writer: None,
        expected_iteration: None,
        held: Vec::new(),
        wrote_frame: false,
        ended: false,
        summary: None,
        last_input_end: None,
        anchors: Vec::new(),
        done: Vec::new(),
        output,
        error: None,
        select,
        mark_line_feeds: plan.mark_line_feeds,
        newlines: NewlineWatch::default(),
        listing: &plan.listing,
        suspect_written: SuspectFrames::default(),
        last_main_suspect: false,
        listed: SuspectFrames::default(),
        suspect_by_session: Vec::new(),
        reached,
    };
    let report = decode_with(
        Validation::Thorough,
        path,
        file,
        |session, sink: &mut Reencoder<'_>| sink.start(file, session),
        &mut sink,
    );
    sink.finish();
    if let Some(e) = sink.error {
        return Err(e);
    }
    let mut suspect = Vec::new();
    for (index, frames) in std::mem::take(&mut sink.suspect_by_session) {
        if let Some(i) = index.checked_sub(1) {
            if suspect.len() <= i {
                suspect.resize(i + 1, SuspectFrames::default());
            }
            suspect[i] = frames;
        }
    }
    let outcome = Outcome {
        converted: sink.newlines.converted(),
        suspect,
    };
    let sessions = sink
        .done
        .into_iter()
        .map(|(mut summary, anchors)| {
            let session = &report.sessions[summary.index - 1];
            summary.dropped = session
                .corrupt_spans
                .iter()
                .map(|span| DroppedSpan {
                    input_start: span.start,
                    input_end: span.end,
                    reason: span.reason,
                    output_offset: anchors
                        .iter()
                        .find(|&&(input, _)| input >= span.end)
                        .map_or(summary.output_end, |&(_, output)| output),
                })
                .collect();
            summary
        })
        .collect();
    Ok((report, sessions, outcome))
}

/// A stretch of the input carried into a file whose headers were borrowed.
#[derive(Debug, Clone, Copy)]
struct Segment {
    /// Whether the donor's header goes in front of it.
    borrowed: bool,
    /// Where it lands in the written bytes.
    start: usize,
    input_start: usize,
    len: usize,
}

/// The input with every unusable (or missing) header replaced by a donor's: what goes where, for
/// [`Borrowed::write_to`] to write and [`Borrowed::check`] to judge.
pub struct Borrowed {
    /// The donor's first header that defines I frames.
    header: Vec<u8>,
    /// Stretches of the input, in order.
    segments: Vec<Segment>,
    /// Sessions (1-based, in the written bytes) whose header came from the donor.
    pub replaced: Vec<usize>,
}

/// Bytes of the input written between two calls of [`Borrowed::write_to`]'s progress function.
const WRITE_CHUNK: usize = 4 << 20;

impl Borrowed {
    /// The input offset of an offset in the written bytes; a borrowed header maps to where its
    /// data starts.
    pub fn input_offset(&self, offset: u64) -> u64 {
        let offset = offset as usize;
        for s in &self.segments {
            if offset < s.start {
                return s.input_start as u64;
            }
            if offset < s.start + s.len {
                return (s.input_start + offset - s.start) as u64;
            }
        }
        self.segments
            .last()
            .map_or(0, |s| (s.input_start + s.len) as u64)
    }

    /// Write `input` (the file this was planned for) with the donor's header in front of each
    /// session that lost its own, calling `written` with the input offset reached every few MiB.
    pub fn write_to(
        &self,
        input: &[u8],
        out: &mut impl io::Write,
        mut written: impl FnMut(usize),
    ) -> io::Result<()> {
        for s in &self.segments {
            if s.borrowed {
                out.write_all(&self.header)?;
            }
            let (start, end) = (s.input_start, s.input_start + s.len);
            for chunk_start in (start..end).step_by(WRITE_CHUNK) {
                let chunk_end = end.min(chunk_start + WRITE_CHUNK);
                out.write_all(&input[chunk_start..chunk_end])?;
                written(chunk_end);
            }
        }
        Ok(())
    }

    /// Refuse the written `bytes` when the donor's layout does not decode a session given its
    /// header plausibly: less than half of its data bytes in trusted frames, or no trusted main
    /// frame. `sink` follows the decoding.
    pub fn check(&self, bytes: &[u8], sink: &mut impl Sink) -> Result<(), String> {
        let report = super::decode("borrowed", bytes, |_, _| {}, sink);
        for &index in &self.replaced {
            let Some(s) = report.sessions.get(index - 1) else {
                return Err(format!("session {index} is missing from the written bytes"));
            };
            let data = s.end - s.data_start;
            let trusted: u64 = s
                .regions
                .iter()
                .filter(|r| r.kind == crate::report::RegionKind::Frames)
                .map(|r| r.end - r.start)
                .sum();
            if s.frames.i + s.frames.p == 0 || trusted * 2 < data {
                return Err(format!(
                    "the donor's field layout does not decode session {index}: {trusted} of its \
                     {data} data bytes form trusted frames"
                ));
            }
        }
        Ok(())
    }
}

/// Bytes of a session read for its header when borrowing one (headers are a few KiB).
const DONOR_HEADER_WINDOW: usize = 1 << 20;

/// The first header in `donor` that defines I frames. Only headers are read: each is parsed up to
/// the next log start marker within [`DONOR_HEADER_WINDOW`] bytes.
fn donor_header(donor: &[u8]) -> Option<&[u8]> {
    let finder = memchr::memmem::Finder::new(LOG_START_MARKER);
    finder.find_iter(donor).find_map(|start| {
        let window = &donor[start..donor.len().min(start + DONOR_HEADER_WINDOW)];
        let end = start + finder.find(&window[1..]).map_or(window.len(), |at| at + 1);
        let header = super::header::Header::parse(donor, start, end);
        let data_start = usize::try_from(header.data_start).ok()?;
        header.i.is_some().then(|| &donor[start..data_start])
    })
}

/// Plan putting `donor`'s first header that defines I frames, its I and P interval set to what the
/// frames show (see [`super::library::fit_schedule`]), in front of the data of every session of
/// `input` whose header does not (and of frame data before the first session, or of the whole
/// input when it has no session at all), telling `searched` how far the search of
/// `input` for sessions has gone. The input is not copied: [`Borrowed::write_to`] writes the
/// result, and [`Borrowed::check`] refuses it when the donor's layout does not fit.
pub fn borrow_header(
    input: &[u8],
    donor: &[u8],
    searched: &mut dyn FnMut(usize),
) -> Result<Borrowed, String> {
    let header =
        donor_header(donor).ok_or("the donor has no session whose header defines I frames")?;
    let pieces = headerless_pieces(input, searched);
    // The donor's craft may log at another rate: the schedule is the one the frames show.
    let header = match pieces.iter().find(|(borrow, _, _)| *borrow) {
        Some(&(_, start, end)) => super::library::fit_schedule(header, &input[start..end]),
        None => header.to_vec(),
    };
    Ok(borrowing(&pieces, &header))
}

/// [`borrow_header`] with the header from `library` under which the most of the first frame
/// data without a header forms trusted frames (see [`HeaderLibrary::choose`]).
pub fn borrow_from_library(
    input: &[u8],
    library: &HeaderLibrary,
    searched: &mut dyn FnMut(usize),
) -> Result<(Borrowed, Choice), String> {
    let pieces = headerless_pieces(input, searched);
    let Some(&(_, start, end)) = pieces.iter().find(|(borrow, _, _)| *borrow) else {
        return Err("every session has a header that defines I frames".to_owned());
    };
    let choice = library.choose(&input[start..end]).ok_or_else(|| {
        format!(
            "no header of bbcheck's library ({} frame layouts) makes half of the first {} bytes \
             of frame data trusted frames",
            library.entries.len(),
            (end - start).min(super::library::PROBE)
        )
    })?;
    Ok((borrowing(&pieces, &choice.header), choice))
}

/// Whether some frame data of `input` has no header that defines I frames, telling `searched`
/// how far the search for sessions has gone.
pub fn lacks_header(input: &[u8], searched: &mut dyn FnMut(usize)) -> bool {
    headerless_pieces(input, searched)
        .iter()
        .any(|&(borrow, _, _)| borrow)
}

/// The stretches of `input` to keep: (whether a header must go in front, start, end). A
/// session's header is judged as its decoding reads it: mended where blocks were written over
/// it.
fn headerless_pieces(input: &[u8], searched: &mut dyn FnMut(usize)) -> Vec<(bool, usize, usize)> {
    /// Tells the search's progress on.
    struct Searching<'a>(&'a mut dyn FnMut(usize));
    impl Sink for Searching<'_> {
        fn searched(&mut self, offset: usize) {
            (self.0)(offset)
        }
    }
    let plan = super::Plan::of(input, &mut Searching(searched), Validation::Thorough);
    let mut pieces: Vec<(bool, usize, usize)> = Vec::new();
    let first = plan.bounds.first().map_or(input.len(), |s| s.start);
    if plan.bounds.is_empty() || super::is_headless_frame_data(&input[..first]) {
        pieces.push((true, 0, first));
    }
    for index in 0..plan.bounds.len() {
        let Session { bounds, header } = plan.session(input, index);
        let data_start = (header.data_start as usize).clamp(bounds.start, bounds.end);
        if header.i.is_some() {
            pieces.push((false, bounds.start, bounds.end));
        } else {
            pieces.push((true, data_start, bounds.end));
        }
    }
    pieces
}

/// The plan that writes `pieces` with `header` in front of those that need one.
fn borrowing(pieces: &[(bool, usize, usize)], header: &[u8]) -> Borrowed {
    let mut written = 0;
    let mut segments = Vec::new();
    let mut replaced = Vec::new();
    for (index, &(borrow, start, end)) in pieces.iter().enumerate() {
        if borrow {
            written += header.len();
            replaced.push(index + 1);
        }
        segments.push(Segment {
            borrowed: borrow,
            start: written,
            input_start: start,
            len: end - start,
        });
        written += end - start;
    }
    Borrowed {
        header: header.to_vec(),
        segments,
        replaced,
    }
}
