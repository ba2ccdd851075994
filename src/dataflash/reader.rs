//! The scan: which messages of a file are accepted.
//!
//! [`Rules::Reference`] are the rules of pymavlink's sequential reader. From offset 0: at each position, `A3 95` followed by a type byte that has a definition starts a
//! message of the type's declared length. A message that runs past the end of the file ends the
//! scan (it is dropped). A message whose body does not unpack (its type's declared length is not
//! what its format needs) is skipped by its 3 header bytes: the scan resumes at the body start. Any
//! other position is skipped by one byte. FMT messages define or redefine types as they are read; a
//! FMT whose definition is rejected (an unknown format character) is not read and the scan resumes
//! at its body start. A message is at least its 3 header bytes, so the scan always moves forward.
//!
//! [`Rules::Thorough`] add what keeps damaged messages out. A message has no length field and no
//! checksum, so a message whose bytes were dropped or inserted still unpacks, from its header to
//! wherever its declared length ends, into wrong values. It is accepted only when it ends in sync:
//! where another message starts (`A3 95` and a defined type), where the file ends, or where the
//! erased-flash or zero tail starts. Otherwise the scan backtracks into it, one byte after its
//! first, to try every candidate header inside, and the corrupt span starts where the garbled
//! message started. In a file copied in text mode (line feeds but not one carriage return in a
//! long stretch), a message holding a line feed is suspect, or refused where the line feed lies
//! in its header or time (see [`super::evidence::line_feed`]): each may have been a carriage
//! return.

use super::evidence::Judge;
use super::evidence::line_feed::{self, LineFeeds};
use super::fmt::{
    FMT_TYPE, Format, FormatProblem, Formats, HEADER, HEADER_LEN, ProblemKind, Role, decode_name,
    line_feed_lengths,
};
use super::message::{
    Fields, Message, definition_from_values, fmtu_from_values, mult_from_values, unit_from_values,
};
use super::undefined::{self, Lengths};
use crate::report::{DamageReason, Evidence, Trust};
use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Which rules decide what to accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rules {
    /// pymavlink's sequential reader, exactly: the baseline to measure against.
    Reference,
    /// The reference rules plus the checks that keep damaged messages out.
    Thorough,
}

/// Receives every accepted message, in file order.
pub trait Sink {
    fn message(&mut self, message: &Message<'_>);
    /// A new log (session) starts at `offset`, with the message about to be passed on: the log
    /// restarted, or another log was appended to the file.
    fn session(&mut self, _offset: u64) {}
}

/// A sink that ignores messages.
pub struct Discard;

impl Sink for Discard {
    fn message(&mut self, _: &Message<'_>) {}
}

/// A sink that notes the offset of each message, for progress bars and for releasing the pages of
/// a mapped file behind the scan.
pub struct Noting<'a>(pub &'a AtomicU64);

impl Sink for Noting<'_> {
    #[inline]
    fn message(&mut self, message: &Message<'_>) {
        self.0.store(message.offset, Ordering::Relaxed);
    }
}

impl<A: Sink, B: Sink> Sink for (&mut A, &mut B) {
    #[inline]
    fn message(&mut self, message: &Message<'_>) {
        self.0.message(message);
        self.1.message(message);
    }

    fn session(&mut self, offset: u64) {
        self.0.session(offset);
        self.1.session(offset);
    }
}

/// A message cut short by the end of the file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TruncatedMessage {
    /// Offset of its `0xA3` byte.
    pub offset: u64,
    /// Its type byte and name, when the header is complete.
    #[serde(rename = "type")]
    pub type_id: Option<u8>,
    pub name: Option<String>,
    pub declared_length: Option<i64>,
    pub bytes_present: u64,
}

/// Recorded format problems beyond this many are only counted.
pub const MAX_PROBLEMS: usize = 1000;

/// Type names counted one by one; messages of further names are counted under [`OTHER_NAMES`].
pub const MAX_NAMES: usize = 4096;

/// The count key of the names beyond [`MAX_NAMES`].
pub const OTHER_NAMES: &str = "(other names)";

/// Gaps between accepted messages recorded one by one; beyond this many, each later gap extends
/// the last one (with the messages between them), so a file damaged throughout reports a bounded
/// number of spans.
pub const MAX_GAPS: usize = 100_000;

/// Suspect runs recorded one by one; beyond this many, each later run extends the last one.
pub const MAX_SUSPECT_RUNS: usize = 100_000;

/// Consecutive messages read in step whose values are in doubt.
#[derive(Debug, Clone, PartialEq)]
pub struct SuspectRun {
    /// From the first message's start to the last one's end.
    pub start: u64,
    pub end: u64,
    pub messages: u64,
    /// The `TimeUS` of the first and last of them that have one.
    pub first_time_us: Option<u64>,
    pub last_time_us: Option<u64>,
    /// What the first message's values showed.
    pub evidence: Evidence,
}

/// What a scan found.
#[derive(Debug, Clone)]
pub struct Scan {
    /// The format table at the end of the file.
    pub formats: Formats,
    /// Accepted messages.
    pub messages: u64,
    /// Bytes in accepted messages.
    pub message_bytes: u64,
    /// Accepted messages per type name (at most [`MAX_NAMES`] names and [`OTHER_NAMES`]).
    pub counts: BTreeMap<String, u64>,
    /// Byte ranges `[start, end)` between accepted messages (from offset 0 to the last message end),
    /// at most [`MAX_GAPS`], with why their first bytes were rejected.
    pub gaps: Vec<Gap>,
    /// Gaps beyond [`MAX_GAPS`], merged into the last one.
    pub gaps_merged: u64,
    /// End of the last accepted message (0 when none).
    pub end_offset: u64,
    /// The message the file ends inside, if any (a message running past the end of the file, or
    /// `A3 95` with no room for a type byte).
    pub truncated: Option<TruncatedMessage>,
    /// FMT messages with problems (the first [`MAX_PROBLEMS`]).
    pub problems: Vec<FormatProblem>,
    /// Problems beyond [`MAX_PROBLEMS`].
    pub problems_omitted: u64,
    /// Headers of defined types whose body could not be unpacked (skipped by 3 bytes).
    pub unreadable_headers: u64,
    /// Where each log (session) starts: 0, then every FMT that defines FMT itself after other
    /// messages (a restarted or appended log starts by writing its formats again).
    pub sessions: Vec<u64>,
    /// The format table at the end of each session (sessions that end with the same table share
    /// it: a card of appended logs holds one).
    pub session_formats: Vec<Rc<Formats>>,
    /// Byte ranges `[start, end)` holding an earlier log's messages after a log's end: from where
    /// TimeUS jumps back (and the messages after agree) to the next log's start or the end of the
    /// data. Not damage, and not read.
    pub old_data: Vec<(u64, u64)>,
    /// Runs of accepted messages whose values are in doubt (the thorough rules'
    /// [`evidence`](super::evidence)), at most [`MAX_SUSPECT_RUNS`].
    pub suspects: Vec<SuspectRun>,
    /// Byte ranges `[start, end)` of messages of types no FMT defines, stepped over by the length
    /// their headers' spacing shows ([`undefined`]), at most [`MAX_GAPS`].
    pub undefined: Vec<(u64, u64)>,
    /// Per type stepped over: the first such message's offset, its inferred length, and how many.
    pub undefined_types: Vec<UndefinedType>,
    /// Messages of a text-mode copy whose line feeds were read by their columns' last values and
    /// the clock (see [`super::evidence::line_feed`]), trusted as they read.
    pub line_feeds_read: u64,
}

/// A type whose messages no FMT defines, stepped over by its inferred length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct UndefinedType {
    #[serde(rename = "type")]
    pub type_id: u8,
    /// Offset of its first message stepped over.
    pub first: u64,
    /// The length its headers' spacing shows, header included.
    pub length: usize,
    /// Its messages stepped over.
    pub messages: u64,
}

impl std::fmt::Display for UndefinedType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "type {} (first at {}): no FMT; length {} inferred from its headers, {} message(s) \
             unreadable without a definition (salvage takes one from its format library or from \
             --fmt-from DONOR)",
            self.type_id, self.first, self.length, self.messages
        )
    }
}

/// Bytes between accepted messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap {
    pub start: u64,
    pub end: u64,
    pub reason: DamageReason,
}

/// FMT problems, the first [`MAX_PROBLEMS`] kept.
#[derive(Default)]
struct Problems {
    kept: Vec<FormatProblem>,
    omitted: u64,
}

impl Problems {
    fn push(&mut self, offset: usize, type_value: Option<i128>, name: &str, kind: ProblemKind) {
        if self.kept.len() >= MAX_PROBLEMS {
            self.omitted = self.omitted.saturating_add(1);
            return;
        }
        self.kept.push(FormatProblem {
            offset: offset as u64,
            type_value: type_value.and_then(|t| i64::try_from(t).ok()),
            name: name.to_owned(),
            problem: kind.to_string(),
        });
    }
}

/// What a FMTU, UNIT or MULT message says, read before the table is changed.
enum Metadata {
    Unit(char, String),
    Mult(char, f64),
    Fmtu(i128, String, String),
}

/// Read the definition a format-defining message carries: `Err` when it is rejected and the
/// message must not be read (the problem is recorded), with the type id it names if that is one;
/// otherwise what it defines, if anything usable, and its problem.
fn read_definition(
    problems: &mut Problems,
    offset: usize,
    format: &Format,
    body: &[u8],
) -> Result<Definition, Option<u8>> {
    if !format.defines_formats() {
        problems.push(offset, None, "", ProblemKind::NotADefinition);
        return Err(None);
    }
    let Some(definition) = definition_from_values(Fields::new(&format.fields, body)) else {
        problems.push(offset, None, "", ProblemKind::NotADefinition);
        return Err(None);
    };
    let type_value = Some(definition.type_value);
    match Format::define(&definition, Some(offset as u64)) {
        Err(kind) => {
            problems.push(offset, type_value, &decode_name(definition.name), kind);
            Err(u8::try_from(definition.type_value).ok())
        }
        Ok((new, None)) => Ok(Definition {
            format: Some(new),
            problem: None,
        }),
        Ok((new, Some(kind))) => {
            let usable = !matches!(kind, ProblemKind::TypeOutOfRange(_));
            let problem = (offset, type_value, new.name.clone(), kind);
            Ok(Definition {
                format: usable.then_some(new),
                problem: Some(problem),
            })
        }
    }
}

/// What a FMT message that is read defines, and the problem to report once it is accepted.
struct Definition {
    format: Option<Format>,
    problem: Option<(usize, Option<i128>, String, ProblemKind)>,
}

/// Read a FMTU, UNIT or MULT message.
fn read_metadata(format: &Format, body: &[u8]) -> Option<Metadata> {
    let fields = Fields::new(&format.fields, body);
    match format.role {
        Role::Unit => unit_from_values(fields).map(|(id, label)| Metadata::Unit(id, label)),
        Role::Mult => mult_from_values(fields).map(|(id, mult)| Metadata::Mult(id, mult)),
        Role::Fmtu => fmtu_from_values(fields).map(|(t, u, m)| Metadata::Fmtu(t, u, m)),
        Role::Data | Role::Fmt | Role::Msg | Role::LoggerStats => None,
    }
}

/// Add a suspect message to the run it continues, or start a run.
fn note_suspect(
    suspects: &mut Vec<SuspectRun>,
    message: &Message<'_>,
    time: Option<u64>,
    evidence: Evidence,
) {
    let end = message.offset + message.bytes.len() as u64;
    let full = suspects.len() >= MAX_SUSPECT_RUNS;
    match suspects.last_mut() {
        Some(run) if run.end == message.offset || full => {
            run.end = end;
            run.messages = run.messages.saturating_add(1);
            run.first_time_us = run.first_time_us.or(time);
            run.last_time_us = time.or(run.last_time_us);
        }
        _ => suspects.push(SuspectRun {
            start: message.offset,
            end,
            messages: 1,
            first_time_us: time,
            last_time_us: time,
            evidence,
        }),
    }
}

/// The scanner's state.
struct Scanner<'a> {
    data: &'a [u8],
    rules: Rules,
    /// Start of the trailing run of 0x00 or 0xFF bytes (the data's length when there is none).
    tail_start: usize,
    /// Why the bytes since the last accepted message were rejected.
    gap_reason: Option<DamageReason>,
    /// The file was copied in text mode: no message holding a line feed can be trusted.
    newline_converted: bool,
    formats: Formats,
    /// Type ids named by a FMT whose definition was refused (its format characters damaged, say):
    /// their messages cannot be read, but a message that ends where one starts ends in step.
    refused_types: [bool; 256],
    problems: Problems,
    messages: u64,
    message_bytes: u64,
    counts: BTreeMap<String, u64>,
    /// Accepted messages per type byte since the type was last (re)defined.
    counts_by_type: Vec<u64>,
    gaps: Vec<Gap>,
    gaps_merged: u64,
    end_offset: u64,
    truncated: Option<TruncatedMessage>,
    unreadable_headers: u64,
    sessions: Vec<u64>,
    session_formats: SessionTables,
    /// Messages accepted in the current session.
    session_messages: u64,
    /// The TimeUS of the last accepted message that has one, in the current session.
    last_time: Option<u64>,
    /// The TimeUS before it, when it paused (lay more than [`TIME_BACK_US`], and at most
    /// [`TIME_AHEAD_US`], after it).
    pause_from: Option<u64>,
    /// Where the old data being skipped starts (see [`Scan::old_data`]).
    old_from: Option<usize>,
    old_data: Vec<(u64, u64)>,
    /// Judges the values of the messages the thorough rules accept.
    judge: Judge,
    suspects: Vec<SuspectRun>,
    /// The lengths headers' spacing shows, inferred when a header no FMT defines is first met.
    inferred: OnceCell<Lengths>,
    undefined: Vec<(u64, u64)>,
    undefined_types: Vec<UndefinedType>,
    line_feeds_read: u64,
}

/// The longest message there can be: the length is one byte.
const MAX_MESSAGE_LEN: u64 = 255;

/// What follows a message whose TimeUS jumps.
enum Witness {
    /// A message that will be accepted whatever else happens, with its TimeUS if it has one, and
    /// where it ends.
    Message(Option<u64>, usize),
    /// The end of the data (or its padding, or a message it cuts).
    End,
    /// Anything else: bytes that start no message, a FMT (its definition may yet be refused), a
    /// message that does not end in step.
    Unfit,
}

/// What a message's TimeUS says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timing {
    /// It fits the messages around it.
    Plausible,
    /// It jumps and the messages after it do not: damage in the TimeUS.
    Damaged,
    /// It jumps back and the messages after it agree: an earlier log's data starts here.
    OldData,
}

/// How far a message's TimeUS may lie before the last accepted TimeUS (loggers write some
/// messages with their sample's time, a few milliseconds old) without the messages after it
/// sharing the jump.
const TIME_BACK_US: u64 = 1_000_000;

/// How far it may lie after it (a log written while disarmed is sparse: seconds between messages).
const TIME_AHEAD_US: u64 = 60_000_000;

/// Messages looked at after one whose TimeUS jumps, for one that has a TimeUS to agree or not.
const TIME_WITNESSES: usize = 4;

/// Whether a TimeUS `after_last` µs after the last one pauses: it lies further ahead than a late
/// sample could, but not so far that the messages after it must share the jump.
fn is_pause(after_last: i64) -> bool {
    (TIME_BACK_US as i64 + 1..=TIME_AHEAD_US as i64).contains(&after_last)
}

/// How far `time` lies after `reference` (negative: before it); a 32-bit TimeUS (`narrow`)
/// wraps.
fn time_after(reference: u64, time: u64, narrow: bool) -> i64 {
    if narrow {
        i64::from((time as u32).wrapping_sub(reference as u32) as i32)
    } else {
        time.wrapping_sub(reference) as i64
    }
}

/// Start of the trailing run of identical 0x00 or 0xFF bytes (`data.len()` when there is none).
pub fn padding_start(data: &[u8]) -> usize {
    match data.last() {
        Some(&fill @ (0x00 | 0xFF)) => {
            data.len() - data.iter().rev().take_while(|&&b| b == fill).count()
        }
        _ => data.len(),
    }
}

/// How many of the latest distinct format tables a session's table is compared with: files that
/// alternate between a few firmwares keep one copy of each table, and a file of sessions that all
/// differ costs no more than this many comparisons a session.
const TABLES_COMPARED: usize = 8;

/// The format table each session ends with, equal tables shared.
#[derive(Default)]
struct SessionTables {
    tables: Vec<Rc<Formats>>,
    /// The latest distinct tables, most recent first.
    recent: Vec<Rc<Formats>>,
}

impl SessionTables {
    /// Keep the table a session ends with, shared with an earlier session's when equal.
    fn push(&mut self, formats: &Formats) {
        let table = match self.recent.iter().position(|t| t.same_definitions(formats)) {
            Some(i) => self.recent.remove(i),
            None => Rc::new(formats.clone()),
        };
        self.recent.insert(0, Rc::clone(&table));
        self.recent.truncate(TABLES_COMPARED);
        self.tables.push(table);
    }
}

impl Scanner<'_> {
    /// Give a name its place in the counts when its type is defined, while there is room.
    fn reserve_name(&mut self, name: &str) {
        if self.counts.len() < MAX_NAMES && !self.counts.contains_key(name) {
            self.counts.insert(name.to_owned(), 0);
        }
    }

    /// Move the count of `type_id` under its current name into the per-name counts.
    fn flush_count(&mut self, type_id: u8) {
        let count = std::mem::take(&mut self.counts_by_type[usize::from(type_id)]);
        if count == 0 {
            return;
        }
        let Some(format) = self.formats.get(type_id) else {
            return;
        };
        // Names are admitted as their types are defined (see `reserve_name`).
        let key = if self.counts.contains_key(&format.name) {
            format.name.as_str()
        } else {
            OTHER_NAMES
        };
        match self.counts.get_mut(key) {
            Some(total) => *total = total.saturating_add(count),
            None => {
                self.counts.insert(key.to_owned(), count);
            }
        }
    }

    /// Something at the current position could not be accepted.
    fn reject(&mut self, reason: DamageReason) {
        self.gap_reason.get_or_insert(reason);
    }

    /// Record the bytes from the end of the last accepted message to `start`, where the next one
    /// starts, as a gap.
    fn close_gap(&mut self, start: u64) {
        let reason = self.gap_reason.take();
        if start <= self.end_offset {
            return;
        }
        let full = self.gaps.len() >= MAX_GAPS;
        match self.gaps.last_mut() {
            Some(last) if full => {
                last.end = start;
                self.gaps_merged = self.gaps_merged.saturating_add(1);
            }
            _ => self.gaps.push(Gap {
                start: self.end_offset,
                end: start,
                reason: reason.unwrap_or(DamageReason::Garbage),
            }),
        }
        self.end_offset = start;
    }

    /// The message at `at` as a witness of the time.
    fn witness_at(&self, at: usize) -> Witness {
        if at >= self.tail_start {
            return Witness::End;
        }
        let rest = &self.data[at..];
        if !rest.starts_with(&HEADER) {
            // Only the start of a header fits before the end: the data ends there.
            return if rest.len() < HEADER_LEN && HEADER.starts_with(rest) {
                Witness::End
            } else {
                Witness::Unfit
            };
        }
        let Some((format, len)) = rest
            .get(2)
            .and_then(|&t| self.formats.get(t))
            .and_then(|f| Some((f, f.message_len()?)))
        else {
            return Witness::Unfit;
        };
        let Some(bytes) = rest.get(..len) else {
            // A message cut by the end of the data.
            return Witness::End;
        };
        if format.role == Role::Fmt {
            // The note a salvage appends on the line feeds it read (a FMT and one message of
            // it) is no witness: the data ends before it.
            let note = self.data.get(at + len..self.tail_start).unwrap_or_default();
            return match note.len() <= MAX_MESSAGE_LEN as usize
                && (says_line_feeds_stand(note) || says_line_feeds_in_doubt(note))
            {
                true => Witness::End,
                false => Witness::Unfit,
            };
        }
        if !self.ends_in_sync(at + len, None) {
            return Witness::Unfit;
        }
        let message = Message {
            offset: at as u64,
            format,
            bytes,
            trust: Trust::Trusted,
        };
        Witness::Message(message.time_us(), at + len)
    }

    /// What a message's TimeUS `time` says: plausible when at most [`TIME_BACK_US`] before the last
    /// accepted TimeUS or [`TIME_AHEAD_US`] after it, or when the messages right after it share the
    /// jump (a gap in the log: lost data or a pause); a jump back they share is where an earlier
    /// log's data starts. Only messages that will be accepted whatever else happens witness it
    /// (they share its time, and end in step), so the verdict is the same where the bytes between
    /// accepted messages are gone (a salvaged log); a jump with no witness is damage, except at
    /// the end of the data.
    fn timing(&self, time: u64, narrow: bool, end: usize) -> Timing {
        let Some(last) = self.last_time else {
            return Timing::Plausible;
        };
        let after_last = time_after(last, time, narrow);
        if (-(TIME_BACK_US as i64)..=TIME_AHEAD_US as i64).contains(&after_last) {
            return Timing::Plausible;
        }
        // Back to where the last message paused from: that pause was a damaged TimeUS (a high bit
        // flipped moves it 16 s or more ahead), and this is no earlier log's data.
        if let Some(from) = self.pause_from
            && (-(TIME_BACK_US as i64)..=TIME_AHEAD_US as i64)
                .contains(&time_after(from, time, narrow))
        {
            return Timing::Plausible;
        }
        let mut at = end;
        for _ in 0..TIME_WITNESSES {
            match self.witness_at(at) {
                Witness::Message(Some(next), _) => {
                    let shared = time_after(time, next, narrow).unsigned_abs() <= TIME_BACK_US;
                    return match shared {
                        true if after_last < 0 => Timing::OldData,
                        true => Timing::Plausible,
                        false => Timing::Damaged,
                    };
                }
                Witness::Message(None, next_at) => at = next_at,
                // Nothing after it to tell, here or where the damaged bytes are gone.
                Witness::End => return Timing::Plausible,
                Witness::Unfit => return Timing::Damaged,
            }
        }
        Timing::Damaged
    }

    /// Whether a message ending at `at` ends in sync: another message starts there (`A3 95` and a
    /// type defined by the table or by `defining`, the FMT being accepted, or named by a refused
    /// FMT), the file ends inside such a header, or the padding tail or the end of the file starts
    /// there.
    fn ends_in_sync(&self, at: usize, defining: Option<u8>) -> bool {
        if at >= self.tail_start {
            return true;
        }
        let rest = &self.data[at..];
        if rest.len() < HEADER_LEN {
            return HEADER.starts_with(rest);
        }
        let type_id = rest[2];
        rest.starts_with(&HEADER)
            && (self.formats.get(type_id).is_some()
                || defining == Some(type_id)
                || self.refused_types[usize::from(type_id)]
                || self.inferred_length(type_id).is_some())
    }

    /// The length of a type no FMT defines (nor a refused one names), inferred from its headers'
    /// spacing (thorough rules only).
    fn inferred_length(&self, type_id: u8) -> Option<usize> {
        if self.rules != Rules::Thorough
            || self.formats.get(type_id).is_some()
            || self.refused_types[usize::from(type_id)]
        {
            return None;
        }
        let lengths = self.inferred.get_or_init(|| undefined::infer(self.data));
        lengths.get(type_id).map(|i| i.length)
    }

    /// Step over a message of a type no FMT defines, `[start, end)`, beside the messages read.
    fn step_over_undefined(&mut self, type_id: u8, start: usize, end: usize) {
        self.close_gap(start as u64);
        self.end_offset = end as u64;
        let (start, end) = (start as u64, end as u64);
        let full = self.undefined.len() >= MAX_GAPS;
        match self.undefined.last_mut() {
            Some(last) if last.1 == start || full => last.1 = end,
            _ => self.undefined.push((start, end)),
        }
        match self
            .undefined_types
            .iter_mut()
            .find(|u| u.type_id == type_id)
        {
            Some(u) => u.messages = u.messages.saturating_add(1),
            None => self.undefined_types.push(UndefinedType {
                type_id,
                first: start,
                length: (end - start) as usize,
                messages: 1,
            }),
        }
    }

    fn run<S: Sink>(mut self, sink: &mut S) -> Scan {
        // The table the scan starts from: FMT, and any definitions borrowed from a donor.
        let names: Vec<String> = self.formats.iter().map(|f| f.name.clone()).collect();
        for name in &names {
            self.reserve_name(name);
        }
        let data = self.data;
        let len = data.len();
        let mut pos = 0usize;
        // A text-mode copy's message as its line feeds read (a message is at most 255 bytes).
        let mut restored = [0u8; 256];
        loop {
            // Find `A3 95 <defined type>`.
            if len - pos < HEADER_LEN {
                if data[pos..].starts_with(&HEADER) {
                    // `A3 95` with no room for a type byte.
                    self.truncated = Some(TruncatedMessage {
                        offset: pos as u64,
                        type_id: None,
                        name: None,
                        declared_length: None,
                        bytes_present: (len - pos) as u64,
                    });
                }
                break;
            }
            if data[pos] != HEADER[0] || data[pos + 1] != HEADER[1] {
                self.reject(DamageReason::Garbage);
                pos = match memchr::memmem::find(&data[pos + 1..], &HEADER) {
                    Some(at) => pos + 1 + at,
                    // Nothing left that can start a message.
                    None => len,
                };
                continue;
            }
            let type_id = data[pos + 2];
            let Some(format) = self.formats.get(type_id) else {
                // A type whose FMT is lost: stepped over by the length its headers show, when
                // the next message starts there.
                // (In a text-mode copy, not one holding a line feed: it may have been changed.)
                if let Some(length) = self.inferred_length(type_id)
                    && pos + length <= self.tail_start
                    && self.ends_in_sync(pos + length, None)
                    && !(self.newline_converted
                        && memchr::memchr(b'\n', &data[pos..pos + length]).is_some())
                {
                    if self.old_from.is_none() {
                        self.step_over_undefined(type_id, pos, pos + length);
                    }
                    pos += length;
                    continue;
                }
                self.reject(DamageReason::UndefinedFrameType);
                pos += 1;
                continue;
            };
            // A message running past the end of the file ends the scan.
            if let Ok(declared) = usize::try_from(format.declared_length)
                && declared >= HEADER_LEN
                && declared > len - pos
            {
                self.truncated = Some(TruncatedMessage {
                    offset: pos as u64,
                    type_id: Some(type_id),
                    name: Some(format.name.clone()),
                    declared_length: Some(format.declared_length),
                    bytes_present: (len - pos) as u64,
                });
                break;
            }
            let Some(message_len) = format.message_len() else {
                // The body does not unpack: resume at the body start.
                self.reject(DamageReason::BadEncoding);
                self.unreadable_headers = self.unreadable_headers.saturating_add(1);
                pos += HEADER_LEN;
                continue;
            };
            let bytes = &data[pos..pos + message_len];
            let body = &bytes[HEADER_LEN..];
            // A format-defining message is read only if its definition is accepted.
            let defined = if format.role == Role::Fmt {
                // No logger makes the FMT type anything but FMT, nor a FMT whose messages cannot
                // be read: a definition that would is damaged (a flipped bit in the first
                // message's name), not the end of every definition after it.
                let unmakes_fmt = |d: &Definition| {
                    self.rules == Rules::Thorough
                        && d.format.as_ref().is_some_and(|f| {
                            f.type_id == FMT_TYPE
                                && (!f.defines_formats() || f.message_len().is_none())
                        })
                };
                match read_definition(&mut self.problems, pos, format, body) {
                    Ok(definition) if !unmakes_fmt(&definition) => Some(definition),
                    Ok(_) => {
                        self.reject(DamageReason::HeaderDamaged);
                        pos += HEADER_LEN;
                        continue;
                    }
                    Err(named) => {
                        if let Some(type_id) = named {
                            self.refused_types[usize::from(type_id)] = true;
                        }
                        self.reject(DamageReason::HeaderDamaged);
                        pos += HEADER_LEN;
                        continue;
                    }
                }
            } else {
                None
            };
            let mut message = Message {
                offset: pos as u64,
                format,
                bytes,
                trust: Trust::Trusted,
            };
            // In a text-mode copy, what its line feeds leave in doubt.
            let mut line_feed = None;
            // Only the thorough rules read TimeUS; once per message.
            let mut time = match self.rules {
                Rules::Thorough => message.time_us(),
                Rules::Reference => None,
            };
            // A 32-bit TimeUS wraps.
            let narrow = format.fields.first().is_some_and(|f| f.size() < 8);
            if self.rules == Rules::Thorough {
                let defining = defined
                    .as_ref()
                    .and_then(|d| d.format.as_ref())
                    .map(|f| f.type_id);
                if !self.ends_in_sync(pos + message_len, defining) {
                    // Backtrack: a header may start inside the garbled message.
                    self.reject(DamageReason::FrameRejectedNextByte);
                    pos += 1;
                    continue;
                }
                if self.newline_converted {
                    let verdict = line_feed::judge(format, bytes);
                    let readable = matches!(verdict, LineFeeds::Suspect(_) | LineFeeds::InTime);
                    if readable
                        && self
                            .judge
                            .read_line_feeds(&message, &self.formats, &mut restored)
                    {
                        message.bytes = &restored[..message_len];
                        time = message.time_us();
                        self.line_feeds_read += 1;
                    } else {
                        match verdict {
                            LineFeeds::None => {}
                            LineFeeds::Suspect(evidence) => line_feed = Some(evidence),
                            LineFeeds::InTime | LineFeeds::Refused => {
                                self.reject(DamageReason::NewlineConverted);
                                pos += message_len;
                                continue;
                            }
                        }
                    }
                }
                let timing = match time {
                    Some(time) if defined.is_none() && self.old_from.is_none() => {
                        self.timing(time, narrow, pos + message_len)
                    }
                    _ => Timing::Plausible,
                };
                match timing {
                    Timing::Plausible => {}
                    Timing::Damaged => {
                        self.reject(DamageReason::ImplausibleTime);
                        pos += 1;
                        continue;
                    }
                    Timing::OldData => {
                        // Less than a message between the last message and the old data is the
                        // cut end of an old message; more stays a gap.
                        let after_last = pos as u64 - self.end_offset;
                        if after_last <= MAX_MESSAGE_LEN {
                            self.gap_reason = None;
                            self.old_from = Some(self.end_offset as usize);
                        } else {
                            self.close_gap(pos as u64);
                            self.old_from = Some(pos);
                        }
                        pos += message_len;
                        continue;
                    }
                }
            }
            let defines_fmt = defined
                .as_ref()
                .and_then(|d| d.format.as_ref())
                .is_some_and(|f| f.type_id == FMT_TYPE && f.role == Role::Fmt);
            if let Some(from) = self.old_from {
                if !defines_fmt {
                    // An earlier log's message: skipped, with whatever lies between them.
                    pos += message_len;
                    continue;
                }
                // The next log starts: the old data ends here.
                self.old_data.push((from as u64, pos as u64));
                self.old_from = None;
                self.gap_reason = None;
                self.end_offset = pos as u64;
            }
            if defines_fmt && self.session_messages > 0 {
                // Every log starts by defining FMT itself: a new one starts here.
                self.session_formats.push(&self.formats);
                self.sessions.push(pos as u64);
                self.session_messages = 0;
                self.last_time = None;
                self.judge.forget_all();
                sink.session(pos as u64);
            }
            self.session_messages += 1;
            if let Some(t) = time {
                self.pause_from = self
                    .last_time
                    .filter(|&last| is_pause(time_after(last, t, narrow)));
                self.last_time = time;
            }
            // The values learned: a line feed's doubt comes first.
            let value_evidence = match self.rules {
                Rules::Thorough => self.judge.judge(&message, &self.formats),
                Rules::Reference => None,
            };
            if self.newline_converted {
                match line_feed {
                    None => self.judge.learn_numbers(&message, &self.formats),
                    Some(_) => self.judge.miss(&message, &self.formats),
                }
                if let Some(t) = message.clock_us() {
                    self.judge.learn_clock(t);
                }
            }
            if let Some(evidence) = line_feed.or(value_evidence) {
                message.trust = Trust::Suspect;
                note_suspect(&mut self.suspects, &message, time, evidence);
            }
            sink.message(&message);
            let metadata = match format.role {
                Role::Unit | Role::Mult | Role::Fmtu => read_metadata(format, body),
                Role::Data | Role::Fmt | Role::Msg | Role::LoggerStats => None,
            };
            self.close_gap(pos as u64);
            self.messages += 1;
            self.message_bytes += message_len as u64;
            self.counts_by_type[usize::from(type_id)] += 1;
            pos += message_len;
            self.end_offset = pos as u64;
            match metadata {
                Some(Metadata::Unit(id, label)) => {
                    self.formats.define_unit(id, label);
                }
                Some(Metadata::Mult(id, mult)) => {
                    self.formats.multipliers.insert(id, mult);
                }
                Some(Metadata::Fmtu(type_value, units, mults)) => {
                    self.formats.set_units(type_value, units, mults);
                }
                None => {}
            }
            let defined = defined.and_then(|d| {
                if let Some((offset, type_value, name, kind)) = d.problem {
                    self.problems.push(offset, type_value, &name, kind);
                }
                d.format
            });
            if let Some(new) = defined {
                self.flush_count(new.type_id);
                self.reserve_name(&new.name);
                self.judge.forget_type(new.type_id);
                self.formats.install(new);
            }
        }
        if let Some(from) = self.old_from.take() {
            // Old data to the end: whatever it ends in is part of it, up to the padding tail.
            let end = self.tail_start.max(from);
            self.old_data.push((from as u64, end as u64));
            self.truncated = None;
            self.gap_reason = None;
            self.end_offset = end as u64;
        }
        for type_id in 0..=u8::MAX {
            self.flush_count(type_id);
        }
        self.counts.retain(|_, count| *count > 0);
        self.session_formats.push(&self.formats);
        Scan {
            formats: self.formats,
            messages: self.messages,
            message_bytes: self.message_bytes,
            counts: self.counts,
            gaps: self.gaps,
            gaps_merged: self.gaps_merged,
            end_offset: self.end_offset,
            truncated: self.truncated,
            problems: self.problems.kept,
            problems_omitted: self.problems.omitted,
            unreadable_headers: self.unreadable_headers,
            sessions: self.sessions,
            session_formats: self.session_formats.tables,
            old_data: self.old_data,
            suspects: self.suspects,
            undefined: self.undefined,
            undefined_types: self.undefined_types,
            line_feeds_read: self.line_feeds_read,
        }
    }
}

/// Scan `data` by the reference rules, passing every accepted message to `sink` in file order.
pub fn scan<S: Sink>(data: &[u8], sink: &mut S) -> Scan {
    scan_with(data, Rules::Reference, Formats::new(), sink)
}

/// The text of the message by which a salvaged log says its line feeds stand as written (see
/// [`copied_in_text_mode`]).
pub const LINE_FEEDS_CHECKED: &[u8] = b"bbcheck salvage: line feeds stand as written";

/// The text of the message by which a log salvaged from a text-mode copy says its line feeds are
/// still in doubt, where its own counts would not show it to be a copy (see
/// [`copied_in_text_mode`]).
pub const LINE_FEEDS_IN_DOUBT: &[u8] = b"bbcheck salvage: line feeds in doubt";

/// Whether `data` was copied in text mode (see [`crate::textmode::is_newline_converted`]), unless
/// it holds the message by which salvage says its line feeds were checked (leaving out damaged
/// stretches that held a log's carriage returns can make a salvaged log look like a copy), or
/// the one by which it says they are in doubt (a salvaged copy keeps its messages that hold line
/// feeds, suspect, and may hold too few of them to show it is one).
///
/// Counts alone can mislead: a vehicle at rest logs the same values again and again, and the
/// bytes of one of them may be line feeds (an ArduRover log holds 14 line feeds a carriage
/// return so). Such a log keeps its CR LF pairs, which a copy makes line feeds: one that holds
/// far more of them than a copy can keep (about 7 CR² / bytes) and reads in step from end to end
/// as it is was not copied.
pub fn copied_in_text_mode(data: &[u8]) -> bool {
    if says_line_feeds_in_doubt(data) {
        return true;
    }
    let mut counts = crate::textmode::NewlineCounts::default();
    counts.add(data);
    let binary = || {
        let pairs = memchr::memchr_iter(b'\n', data)
            .filter(|&at| at > 0 && data[at - 1] == b'\r')
            .count();
        pairs as f64 > pairs_a_copy_keeps(&counts) && reads_in_step(data)
    };
    shows_copy(&counts, || line_feed_lengths(data)) && !says_line_feeds_stand(data) && !binary()
}

/// The most CR LF pairs a copy with `counts` is taken to hold. A copy makes each pair one line
/// feed; one that kept some carriage returns (a few in eight) holds a pair where it kept one
/// before a carriage return it made a line feed: about 7 CR² / bytes of them, here twice that
/// and 8 more.
fn pairs_a_copy_keeps(counts: &crate::textmode::NewlineCounts) -> f64 {
    let cr = counts.carriage_returns() as f64;
    2.0 * 7.0 * cr * cr / counts.bytes().max(1) as f64 + 8.0
}

/// Whether `data`, read as it is by the thorough rules, holds no damage.
fn reads_in_step(data: &[u8]) -> bool {
    let scan = Scanner::new(data, Rules::Thorough, Formats::new(), false).run(&mut Discard);
    scan.gaps.is_empty() && scan.gaps_merged == 0
}

/// Whether data with `counts` of line feeds and carriage returns, whose FMT messages declare
/// `line_feed_lengths()` line feeds for carriage returns ([`line_feed_lengths`], counted only
/// where the counts leave it open), shows a text-mode copy (see [`copied_in_text_mode`]).
pub fn shows_copy(
    counts: &crate::textmode::NewlineCounts,
    line_feed_lengths: impl FnOnce() -> usize,
) -> bool {
    counts.is_newline_converted()
        || counts.may_be_newline_converted() && line_feed_lengths() >= LINE_FEED_LENGTHS
}

/// FMT messages declaring a line feed for the length where their format needs a carriage
/// return that, with line feeds outnumbering carriage returns, show a small log to be a text-mode
/// copy. Loggers declare the size of the structure they write, which is never less than its
/// format needs (a firmware's slip, as BAR3 of one ArduCopter 3.6 declaring 33 bytes for 29,
/// adds padding): 10 for 13 is a carriage return made a line feed.
const LINE_FEED_LENGTHS: usize = 1;

/// Whether `data` holds the message [`LINE_FEEDS_CHECKED`].
pub fn says_line_feeds_stand(data: &[u8]) -> bool {
    memchr::memmem::find(data, LINE_FEEDS_CHECKED).is_some()
}

/// Whether `data` holds the message [`LINE_FEEDS_IN_DOUBT`].
pub fn says_line_feeds_in_doubt(data: &[u8]) -> bool {
    memchr::memmem::find(data, LINE_FEEDS_IN_DOUBT).is_some()
}

/// Scan `data` by `rules`, starting from the format table `formats` (FMT alone, or definitions
/// borrowed from another log), passing every accepted message to `sink` in file order.
pub fn scan_with<S: Sink>(data: &[u8], rules: Rules, formats: Formats, sink: &mut S) -> Scan {
    let newline_converted = rules == Rules::Thorough && copied_in_text_mode(data);
    Scanner::new(data, rules, formats, newline_converted).run(sink)
}

impl<'a> Scanner<'a> {
    /// A scan of `data` by `rules` from the format table `formats`, reading its line feeds as a
    /// text-mode copy's when `newline_converted`.
    fn new(data: &'a [u8], rules: Rules, formats: Formats, newline_converted: bool) -> Self {
        let tail_start = match rules {
            Rules::Reference => data.len(),
            Rules::Thorough => padding_start(data),
        };
        Scanner {
            data,
            rules,
            tail_start,
            gap_reason: None,
            newline_converted,
            formats,
            refused_types: [false; 256],
            problems: Problems::default(),
            messages: 0,
            message_bytes: 0,
            counts: BTreeMap::new(),
            counts_by_type: vec![0; 256],
            gaps: Vec::new(),
            gaps_merged: 0,
            end_offset: 0,
            truncated: None,
            unreadable_headers: 0,
            sessions: vec![0],
            session_formats: SessionTables::default(),
            session_messages: 0,
            last_time: None,
            pause_from: None,
            old_from: None,
            old_data: Vec::new(),
            judge: Judge::default(),
            suspects: Vec::new(),
            inferred: OnceCell::new(),
            undefined: Vec::new(),
            undefined_types: Vec::new(),
            line_feeds_read: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::dataflash::{fmt, message};

    /// Offsets and names of the accepted messages.
    struct Collect(Vec<(u64, String)>);

    impl Sink for Collect {
        fn message(&mut self, m: &Message<'_>) {
            self.0.push((m.offset, m.format.name.clone()));
        }
    }

    fn accepted(data: &[u8]) -> (Vec<(u64, String)>, Scan) {
        let mut sink = Collect(Vec::new());
        let scan = scan(data, &mut sink);
        (sink.0, scan)
    }

    #[test]
    fn sessions_alternating_between_two_logs_keep_two_format_tables() {
        let log = |name: &str| {
            let mut log = fmt(0x80, 89, "FMT", "BBnNZ", "Type,Length,Name,Format,Columns");
            log.extend(fmt(0x40, 11, name, "Q", "TimeUS"));
            for t in 0..4u64 {
                log.extend(message(0x40, &(1000 + t).to_le_bytes()));
            }
            log
        };
        let (a, b) = (log("AAA"), log("BBB"));
        let file: Vec<u8> = [&a, &b, &a, &b, &a, &b]
            .into_iter()
            .flatten()
            .copied()
            .collect();
        let (_, scan) = accepted(&file);
        let tables = &scan.session_formats;
        assert_eq!(tables.len(), 6);
        for (i, table) in tables.iter().enumerate() {
            assert!(Rc::ptr_eq(table, &tables[i % 2]), "session {}", i + 1);
        }
        assert!(!Rc::ptr_eq(&tables[0], &tables[1]));
    }

    /// A log of `TST` messages (64-bit TimeUS, or 32-bit when `narrow`) at the given times.
    fn timed(times: &[u64], narrow: bool) -> Vec<u8> {
        let mut log = if narrow {
            fmt(0x40, 7, "TST", "I", "TimeUS")
        } else {
            fmt(0x40, 11, "TST", "Q", "TimeUS")
        };
        for &t in times {
            let bytes = t.to_le_bytes();
            log.extend(message(0x40, &bytes[..if narrow { 4 } else { 8 }]));
        }
        log
    }

    /// Offsets and names of the messages the thorough rules accept.
    fn thorough(data: &[u8]) -> (Vec<(u64, String)>, Scan) {
        let mut sink = Collect(Vec::new());
        let scan = scan_with(data, Rules::Thorough, Formats::new(), &mut sink);
        (sink.0, scan)
    }

    fn times_accepted(log: &[u8], narrow: bool) -> Vec<u64> {
        let (messages, _) = thorough(log);
        let len = if narrow { 7 } else { 11 };
        messages
            .iter()
            .filter(|(_, name)| name == "TST")
            .map(|&(offset, _)| {
                let at = offset as usize + 3;
                let mut bytes = [0u8; 8];
                bytes[..len - 3].copy_from_slice(&log[at..offset as usize + len]);
                u64::from_le_bytes(bytes)
            })
            .collect()
    }

    #[test]
    fn a_timeus_jump_the_next_messages_do_not_share_is_damage() {
        // Damaged TimeUS bytes: far ahead, then far behind, of both neighbours.
        let times = [1_000_000, 1_010_000, 900_000_000, 1_030_000, 5, 1_050_000];
        let log = timed(&times, false);
        assert_eq!(
            times_accepted(&log, false),
            [1_000_000, 1_010_000, 1_030_000, 1_050_000]
        );
        let (_, scan) = thorough(&log);
        assert_eq!(scan.gaps.len(), 2);
        assert!(
            scan.gaps
                .iter()
                .all(|g| g.reason == DamageReason::ImplausibleTime)
        );
        // The reference rules take every message as it comes.
        let mut sink = Collect(Vec::new());
        scan_with(&log, Rules::Reference, Formats::new(), &mut sink);
        assert_eq!(sink.0.len(), 1 + times.len());
    }

    #[test]
    fn a_timeus_flipped_a_few_seconds_ahead_does_not_make_the_rest_old_data() {
        // One bit flipped in the fourth TimeUS byte moves it 16.8 s ahead, inside the pause a
        // log may hold, so it is taken. The messages after it lie 16.8 s behind it, as an earlier
        // log's data would, but they continue from before the pause: the log goes on.
        let flipped = 1_020_000 + (1 << 24);
        let times = [
            1_000_000, 1_010_000, flipped, 1_030_000, 1_040_000, 1_050_000,
        ];
        let log = timed(&times, false);
        assert_eq!(times_accepted(&log, false), times);
        let (_, scan) = thorough(&log);
        assert_eq!(scan.old_data, []);
        assert_eq!(scan.gaps, []);
        // Likewise with damage after the next message.
        let next = 89 + 3 * 11;
        let mut garbled = log[..next + 11].to_vec();
        garbled.extend_from_slice(&[0x55; 300]);
        garbled.extend_from_slice(&log[next + 11..]);
        assert_eq!(
            times_accepted(&garbled, false),
            [1_000_000, 1_010_000, flipped, 1_040_000, 1_050_000]
        );
        assert_eq!(thorough(&garbled).1.old_data, []);
        // A real pause followed by an earlier log's data is still old data.
        let mut log = timed(&[100_000_000, 100_010_000, 104_000_000], false);
        log.extend_from_slice(&timed(&[20_000_000, 20_010_000], false)[89..]);
        assert_eq!(
            times_accepted(&log, false),
            [100_000_000, 100_010_000, 104_000_000]
        );
        assert_eq!(thorough(&log).1.old_data[0].0, 89 + 33);
    }

    #[test]
    fn gaps_pauses_and_wraps_of_timeus_are_not_damage() {
        // A pause of a minute that the messages after it share; a message alone in a sparse
        // stretch, between its neighbours; an out-of-order sample a few milliseconds old.
        let times = [
            1_000_000, 61_000_000, 61_010_000, 80_000_000, 95_000_000, 94_998_000, 95_010_000,
        ];
        assert_eq!(times_accepted(&timed(&times, false), false), times);
        // A 32-bit TimeUS wraps after 71 minutes.
        let times = [u64::from(u32::MAX) - 5_000, 10_000, 20_000];
        assert_eq!(times_accepted(&timed(&times, true), true), times);
        // Extreme differences do not overflow: half the range away is far (the first 0 is
        // refused), and 0 is a microsecond after u64::MAX.
        let times = [1 << 63, 0, 1 << 63, u64::MAX, 0, i64::MAX as u64];
        assert_eq!(
            times_accepted(&timed(&times, false), false),
            [1 << 63, 1 << 63, u64::MAX, 0, i64::MAX as u64]
        );
        // The last message has nothing after it to disagree.
        let times = [1_000_000, 1_010_000, 700_000_000];
        assert_eq!(times_accepted(&timed(&times, false), false), times);
    }

    #[test]
    fn an_earlier_logs_messages_after_the_end_are_old_data() {
        // A flight at 100-109 s, then what the storage held before: the same types from a flight
        // at 20-29 s, starting inside a message; then a new log.
        let flight = timed(
            &(0..10)
                .map(|i| 100_000_000 + i * 1_000_000)
                .collect::<Vec<_>>(),
            false,
        );
        let old = timed(
            &(0..10)
                .map(|i| 20_000_000 + i * 1_000_000)
                .collect::<Vec<_>>(),
            false,
        );
        let mut log = flight.clone();
        log.extend_from_slice(&old[89 + 5..]);
        let old_end = log.len();
        // A log starts by defining FMT itself.
        log.extend(fmt(
            0x80,
            89,
            "FMT",
            "BBnNZ",
            "Type,Length,Name,Format,Columns",
        ));
        log.extend(timed(&[5_000, 6_000], false));
        let (messages, scan) = thorough(&log);
        // The flight's last message, cut by the old data, ends out of step: it goes with it.
        let last = flight.len() as u64 - 11;
        assert_eq!(scan.old_data, [(last, old_end as u64)]);
        assert_eq!(scan.gaps, []);
        assert_eq!(scan.sessions, [0, old_end as u64]);
        // The flight's messages and the next log's; none of the old ones.
        assert_eq!(messages.len(), 10 + 4);
        assert!(
            messages
                .iter()
                .all(|&(o, _)| o < last || o >= old_end as u64)
        );
        // Old data to the end of the file, before its erased tail.
        // Old data that starts with a whole message, to the end of the file before its erased
        // tail: the flight keeps every message.
        let mut log = flight.clone();
        log.extend_from_slice(&old[89..]);
        let end = log.len() as u64;
        log.extend_from_slice(&[0xFF; 64]);
        let (messages, scan) = thorough(&log);
        assert_eq!(messages.len(), 11);
        assert_eq!(scan.old_data, [(flight.len() as u64, end)]);
        assert_eq!(scan.end_offset, end);
        assert!(scan.truncated.is_none());
    }

    #[test]
    fn messages_follow_their_fmt_and_gaps_are_recorded() {
        let mut log = fmt(0x40, 7, "TST", "I", "V");
        log.extend(message(0x40, &[1, 0, 0, 0]));
        log.extend_from_slice(b"junk");
        log.extend(message(0x41, &[9; 4])); // undefined type: skipped
        log.extend(message(0x40, &[2, 0, 0, 0]));
        let (messages, scan) = accepted(&log);
        assert_eq!(
            messages,
            [(0, "FMT".into()), (89, "TST".into()), (107, "TST".into())]
        );
        assert_eq!(
            scan.gaps,
            [Gap {
                start: 96,
                end: 107,
                reason: DamageReason::Garbage
            }]
        );
        assert_eq!(scan.end_offset, log.len() as u64);
        assert_eq!(scan.counts["TST"], 2);
        assert!(scan.truncated.is_none());
    }

    #[test]
    fn a_message_before_one_of_a_type_whose_fmt_was_refused_ends_in_step() {
        // The FMT of type 0x41 has a damaged format character: its messages cannot be read, but
        // the TST messages before them are whole.
        let mut log = fmt(0x40, 7, "TST", "I", "V");
        let mut refused = fmt(0x41, 7, "BAD", "I", "V");
        let at = refused.len() - 64 - 16;
        refused[at] = 0xC9;
        log.extend(refused);
        for v in 1..=3u8 {
            log.extend(message(0x40, &[v, 0, 0, 0]));
            log.extend(message(0x41, &[v; 4]));
        }
        let (messages, scan) = thorough(&log);
        assert_eq!(scan.problems.len(), 1);
        let tst: Vec<u64> = messages
            .iter()
            .filter(|(_, name)| name == "TST")
            .map(|&(offset, _)| offset)
            .collect();
        assert_eq!(tst, [178, 192, 206]);
        // The refused FMT and the unreadable messages between the TST ones are gaps (the last
        // lies after the last accepted message).
        assert_eq!(scan.gaps.len(), 3);
    }

    #[test]
    fn a_body_that_does_not_unpack_resumes_at_the_body_start() {
        // Declared 10 bytes, the format needs 7: each header is skipped by 3 bytes, and a message
        // inside the body is found.
        let mut log = fmt(0x40, 10, "BAD", "I", "V");
        log.extend(fmt(0x41, 4, "ONE", "B", "V"));
        log.extend(message(0x40, &message(0x41, &[5])));
        // Room for the declared length, or the first header would end the scan.
        log.extend_from_slice(&[0; 8]);
        let (messages, scan) = accepted(&log);
        assert_eq!(messages.last(), Some(&(181, "ONE".into())));
        assert_eq!(scan.unreadable_headers, 1);
        assert_eq!(scan.problems.len(), 1);
        assert!(scan.problems[0].problem.contains("declares length 10"));
    }

    #[test]
    fn a_message_past_the_end_ends_the_scan() {
        let mut log = fmt(0x40, 7, "TST", "I", "V");
        log.extend(message(0x40, &[1, 0]));
        let (messages, scan) = accepted(&log);
        assert_eq!(messages.len(), 1);
        let cut = scan.truncated.expect("cut message");
        assert_eq!((cut.offset, cut.bytes_present), (89, 5));
        assert_eq!(cut.declared_length, Some(7));
        // Only `A3 95` left.
        let mut log = fmt(0x40, 7, "TST", "I", "V");
        log.extend_from_slice(&[0xA3, 0x95]);
        let cut = accepted(&log).1.truncated.expect("cut header");
        assert_eq!((cut.offset, cut.type_id, cut.bytes_present), (89, None, 2));
    }

    #[test]
    fn short_and_zero_lengths_do_not_stall_the_scan() {
        for length in [0, 1, 2] {
            let mut log = fmt(0x40, length, "ZER", "", "");
            for _ in 0..1000 {
                log.extend(message(0x40, &[]));
            }
            let (messages, scan) = accepted(&log);
            assert_eq!(messages.len(), 1, "length {length}");
            assert_eq!(scan.unreadable_headers, 1000);
        }
        // An empty format with length 3 is a 3-byte message.
        let mut log = fmt(0x40, 3, "EMP", "", "");
        log.extend(message(0x40, &[]));
        assert_eq!(accepted(&log).0.len(), 2);
    }

    #[test]
    fn damage_everywhere_gives_a_bounded_number_of_gaps() {
        let mut log = fmt(0x40, 3, "EMP", "", "");
        for _ in 0..MAX_GAPS + 500 {
            log.push(0);
            log.extend(message(0x40, &[]));
        }
        let (messages, scan) = accepted(&log);
        assert_eq!(messages.len(), MAX_GAPS + 501);
        assert_eq!(scan.gaps.len(), MAX_GAPS);
        assert_eq!(scan.gaps_merged, 500);
        assert_eq!(scan.gaps.last().unwrap().end, log.len() as u64 - 3);
    }

    #[test]
    fn counts_keep_a_bounded_number_of_names() {
        let mut log = Vec::new();
        for i in 0..MAX_NAMES + 100 {
            log.extend(fmt(0x40, 3, &format!("{i:04x}"), "", ""));
            log.extend(message(0x40, &[]));
        }
        let (messages, scan) = accepted(&log);
        assert_eq!(scan.counts.len(), MAX_NAMES + 1);
        assert_eq!(scan.counts.values().sum::<u64>(), messages.len() as u64);
        assert_eq!(scan.counts["FMT"], (MAX_NAMES + 100) as u64);
        assert_eq!(scan.counts[OTHER_NAMES], 101);
    }

    #[test]
    fn a_fmt_with_an_unknown_character_is_not_read() {
        let mut log = fmt(0x40, 7, "BAD", "Ix", "V");
        log.extend(message(0x40, &[1, 0, 0, 0]));
        let (messages, scan) = accepted(&log);
        assert!(messages.is_empty());
        assert_eq!(scan.problems.len(), 1);
        assert!(
            scan.problems[0]
                .problem
                .contains("unknown format character 'x'")
        );
        assert_eq!(scan.gaps, []);
        assert_eq!(scan.end_offset, 0);
    }

    #[test]
    fn types_are_redefined_as_fmts_are_read() {
        let mut log = fmt(0x40, 4, "ONE", "B", "V");
        log.extend(message(0x40, &[1]));
        log.extend(fmt(0x40, 5, "TWO", "H", "V"));
        log.extend(message(0x40, &[1, 2]));
        let (messages, scan) = accepted(&log);
        let names: Vec<&str> = messages.iter().map(|m| m.1.as_str()).collect();
        assert_eq!(names, ["FMT", "ONE", "FMT", "TWO"]);
        assert_eq!(scan.counts["ONE"], 1);
        assert_eq!(scan.counts["TWO"], 1);
        assert_eq!(scan.counts["FMT"], 2);
        assert_eq!(scan.end_offset, log.len() as u64);
    }

    #[test]
    fn a_fmt_of_fmt_can_redefine_fmt() {
        // FMT redefined with a 16-bit length column; then a FMT in the new layout.
        let mut log = fmt(0x80, 90, "FMT", "BHnNZ", "Type,Length,Name,Format,Columns");
        let mut wide = vec![0xA3, 0x95, 0x80, 0x40, 4, 0];
        for (text, size) in [("ONE", 4), ("B", 16), ("V", 64)] {
            let mut field = text.as_bytes().to_vec();
            field.resize(size, 0);
            wide.extend_from_slice(&field);
        }
        log.extend(wide);
        log.extend(message(0x40, &[7]));
        let (messages, scan) = accepted(&log);
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[2], (179, "ONE".into()));
        assert_eq!(scan.end_offset, log.len() as u64);
    }

    #[test]
    fn a_definition_whose_carriage_return_became_a_line_feed_shows_a_small_copy() {
        // A small log: too few line feeds to tell by their count alone.
        let mut log = fmt(0x80, 89, "FMT", "BBnNZ", "Type,Length,Name,Format,Columns");
        let values = |log: &mut Vec<u8>, lf: usize, cr: usize| {
            for _ in 0..lf {
                log.extend(message(0x40, &[b'\n', 1, 2, 3]));
            }
            for _ in 0..cr {
                log.extend(message(0x40, &[b'\r', 1, 2, 3]));
            }
        };
        values(&mut log, 40, 2);
        assert!(!copied_in_text_mode(&log));
        // "Ihhh" needs 13 bytes, and declares 10: a text-mode copy.
        let mut copy = log.clone();
        copy.extend(fmt(0x41, b'\n', "GMB3", "Ihhh", "TimeMS,a,b,c"));
        assert!(copied_in_text_mode(&copy));
        // The same definition amid as many carriage returns as line feeds: no copy.
        let mut binary = copy.clone();
        values(&mut binary, 0, 40);
        assert!(!copied_in_text_mode(&binary));
        // A length of 13 declared as 13, or one too long, is no mark.
        for length in [13, 17] {
            let mut log = log.clone();
            log.extend(fmt(0x41, length, "GMB3", "Ihhh", "TimeMS,a,b,c"));
            assert!(!copied_in_text_mode(&log), "length {length}");
        }
    }

    #[test]
    fn a_log_at_rest_whose_values_are_line_feeds_is_no_copy() {
        // A value logged again and again whose bytes are line feeds, and now and then a CR LF
        // pair: line feeds outnumber carriage returns as in a copy.
        let mut log = fmt(0x80, 89, "FMT", "BBnNZ", "Type,Length,Name,Format,Columns");
        log.extend(fmt(0x40, 15, "REST", "QI", "TimeUS,Value"));
        for i in 0..2100u64 {
            let value: u32 = if i % 21 == 0 {
                0x0A0A_0A0D
            } else {
                0x0A0A_0A0A
            };
            let mut body = (1_000_000 + i * 10_000).to_le_bytes().to_vec();
            body.extend_from_slice(&value.to_le_bytes());
            log.extend(message(0x40, &body));
        }
        let mut counts = crate::textmode::NewlineCounts::default();
        counts.add(&log);
        assert!(counts.is_newline_converted());
        assert!(!copied_in_text_mode(&log));
        let (accepted, scan) = thorough(&log);
        assert_eq!((accepted.len(), scan.gaps.len()), (2102, 0));
        // Copied, it holds no pair, and is one.
        assert!(copied_in_text_mode(&copied(&log)));
    }

    /// `log` copied in text mode: CR LF → LF, then CR → LF.
    fn copied(log: &[u8]) -> Vec<u8> {
        let mut copy = Vec::with_capacity(log.len());
        let mut bytes = log.iter().peekable();
        while let Some(&b) = bytes.next() {
            match b {
                b'\r' if bytes.peek() == Some(&&b'\n') => {}
                b'\r' => copy.push(b'\n'),
                b => copy.push(b),
            }
        }
        copy
    }

    #[test]
    fn a_copys_times_past_the_line_feed_in_their_high_byte_read_as_their_type_went_on() {
        // From TimeUS 0x0A00_0000 (167.8 s) on for 16.8 s, every TimeUS holds a line feed in its
        // fourth byte: read as a carriage return it would jump 50 s ahead.
        let mut log = fmt(0x80, 89, "FMT", "BBnNZ", "Type,Length,Name,Format,Columns");
        log.extend(fmt(0x41, 15, "ALT", "QI", "TimeUS,Alt"));
        let start = 0x09FF_0000u64;
        let times: Vec<u64> = (0..1200u64).map(|i| start + 2500 * i).collect();
        for &t in &times {
            let mut body = t.to_le_bytes().to_vec();
            body.extend(100u32.to_le_bytes());
            log.extend(message(0x41, &body));
        }
        let copy = copied(&log);
        assert!(copied_in_text_mode(&copy));
        struct Kept(Vec<(Option<u64>, Trust)>);
        impl Sink for Kept {
            fn message(&mut self, m: &Message<'_>) {
                self.0.push((m.time_us(), m.trust));
            }
        }
        let mut kept = Kept(Vec::new());
        let scan = scan_with(&copy, Rules::Thorough, Formats::new(), &mut kept);
        // Every message kept is trusted with the time it was logged at: a line feed in the
        // high byte reads as the type went on, one that may have been a CR in the lowest two
        // (readings 3 or 768 µs apart, both within the 2500 µs the type moves by) is refused,
        // and so is a message that lost a CR LF pair's CR.
        let alts = &kept.0[2..];
        assert!(alts.iter().all(|&(_, trust)| trust == Trust::Trusted));
        assert!(
            alts.iter()
                .all(|(t, _)| t.is_some_and(|t| times.contains(&t)))
        );
        let in_window = alts
            .iter()
            .filter(|(t, _)| t.is_some_and(|t| t >= 0x0A00_0000))
            .count();
        assert!(in_window > 1000, "{in_window}");
        assert_eq!(scan.line_feeds_read, in_window as u64);
        let ambiguous = |t: &u64| t.to_le_bytes()[..2].contains(&b'\n');
        assert!(alts.len() + times.iter().filter(|t| ambiguous(t)).count() <= times.len());
    }

    #[test]
    fn a_definition_that_would_unmake_the_fmt_type_is_damage() {
        // The log's first message, FMT defining itself, with a bit flipped in its name.
        let mut log = fmt(0x80, 89, "FMT", "BBnNZ", "Type,Length,Name,Format,Columns");
        log[5 + 2] ^= 0x08;
        log.extend(fmt(0x41, 7, "ALT", "I", "Alt"));
        for alt in 0..20u32 {
            log.extend(message(0x41, &alt.to_le_bytes()));
        }
        let scan = scan_with(&log, Rules::Thorough, Formats::new(), &mut Discard);
        assert_eq!(scan.messages, 1 + 20);
        assert_eq!(scan.gaps.len(), 1);
        assert_eq!((scan.gaps[0].start, scan.gaps[0].end), (0, 89));
        // By the reference rules, FMT is redefined and nothing after it is defined.
        let reference = scan_with(&log, Rules::Reference, Formats::new(), &mut Discard);
        assert_eq!(reference.messages, 2);
    }
}
