//! Decoding one session: frames in file order, validated as they come, with every byte accounted
//! for in an accepted frame, a region that is not damage, or a corrupt span.
//!
//! Validation follows the spec's "Log validation": after a frame decodes, the next byte must start
//! a frame (or the data must end); `loopIteration` and `time` may not move backwards or leap ahead;
//! a rejected frame makes P frames unusable until an I frame validates.

use super::codec::{CodecErrorKind, Encoding};
use super::event::{Dialect, Event, EventError};
use super::evidence::gps_track::{GpsFields, GpsFix};
use super::evidence::listed_suspect::SuspectFrames;
use super::evidence::p_frame_offset::Motion;
use super::evidence::value_bounds::{value_bounds, within};
use super::evidence::{CORRUPT_SCORE, Suspicion};
use super::frame::FrameKind;
use super::group::{Group, Item, LineFeedValue, Neighbours, Untrusted};
use super::header::{HEADER_FROM, Header};
use super::ledger::{self, Layout, Ledger};
use super::predictor::{Context, MainHistory, Predictor};
use super::sink::Sink;
use crate::periodic::Blocks;
use crate::report::{DamageReason, FrameCounts, RegionKind, Rule, SessionReport, Trust};
use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, Sender};

/// A main frame may not advance more iterations than this (the reference decoders' limit).
pub const MAX_ITERATION_JUMP: u32 = 5000;
/// A main frame may not advance more time than this, in µs.
pub const MAX_TIME_JUMP_US: u32 = 10_000_000;
/// How many times the loop time (or a fraction of it) the step from a group's last main frame to
/// the next I frame may take, per iteration.
const JOIN_TIME_FACTOR: f64 = 2.5;

/// How many I intervals before a group's I frame the last trusted main frame may lie for the
/// group's line feeds to be judged from it: damage may have taken the group between.
const LINE_FEED_REACH: u32 = 2;
/// The loop time is the mean of this many first samples, then a moving average that gives each new
/// sample this weight's inverse (so the first sample, often off, does not hold it for long).
const LOOP_TIME_SAMPLES: u32 = 16;
/// Padding shorter than this at the end of a session is counted with the damage before it.
const MIN_PADDING: usize = 8;

/// Bytes after a log's end, other than erased or zeroed flash, that are damage (real logs leave
/// at most one: a line feed, a stray byte).
const MIN_STRAY_BYTES: usize = 16;

/// Which rules decide what to trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validation {
    /// The reference decoders' rules, exactly: the baseline to measure against.
    Reference,
    /// The reference rules plus the checks that keep damaged values out.
    Thorough,
}

/// Byte range of a session in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionBounds {
    /// 1-based index.
    pub index: usize,
    pub start: usize,
    pub end: usize,
}

/// Main-frame history: the frame being decoded and the two before it, in three reused buffers.
/// Under thorough validation the P frames of a valid stream decode straight into their group
/// instead (see [`Group::next_main`]); then the group holds the last two main frames.
struct History {
    bufs: [Vec<i64>; 3],
    cur: usize,
    prev: Option<usize>,
    prev2: Option<usize>,
    /// The last main frame accepted decoded into the group: the group's last two main frames
    /// are the history, not the buffers.
    in_group: bool,
}

impl History {
    fn new(fields: usize) -> History {
        History {
            bufs: [vec![0; fields], vec![0; fields], vec![0; fields]],
            cur: 0,
            prev: None,
            prev2: None,
            in_group: false,
        }
    }

    fn free_slot(&self) -> usize {
        (0..3)
            .find(|&i| Some(i) != self.prev && Some(i) != self.prev2)
            .unwrap_or(0)
    }

    /// After an I frame both history slots hold it.
    fn push_intra(&mut self) {
        self.in_group = false;
        self.prev = Some(self.cur);
        self.prev2 = Some(self.cur);
        self.cur = self.free_slot();
    }

    /// After a P frame the history shifts by one.
    fn push_inter(&mut self) {
        self.prev2 = self.prev;
        self.prev = Some(self.cur);
        self.cur = self.free_slot();
    }

    /// The last two main frames, when they are in the buffers.
    fn last_two(&self) -> MainHistory<'_> {
        let slot = |i: Option<usize>| i.map(|i| self.bufs[i].as_slice());
        (slot(self.prev), slot(self.prev2))
    }

    /// Take the last two main frames from the group into the buffers, where they stay when the
    /// group goes.
    fn take_from(&mut self, group: &Group) {
        if !self.in_group {
            return;
        }
        self.in_group = false;
        let (last, penultimate) = group.last_mains();
        for (slot, frame) in [(0, last), (1, penultimate)] {
            self.bufs[slot].clear();
            self.bufs[slot].extend_from_slice(frame.unwrap_or_default());
        }
        self.prev = Some(0);
        self.prev2 = Some(1);
        self.cur = 2;
    }
}

/// What decoding the bytes after a type byte gave.
enum Decoded {
    /// A data frame whose fields are in the kind's buffer.
    Fields,
    Event(Event),
    UnknownEvent,
}

/// How a frame holding line feeds reads in a text-mode copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineFeeds {
    /// As read: no other reading ends where a frame may start, or the group judges the values.
    Read,
    /// Another reading ends in the same place with other values, in a frame no group judges.
    InStep,
    /// Another reading ends elsewhere, where a frame may start.
    Unreadable,
}

/// A decoder's state right after an accepted I frame (so with a valid stream): everything that
/// decides how the rest of the session decodes, but not the report so far. Two decoders in equal
/// states decode what follows alike, so a session split between threads joins where they meet
/// one.
#[derive(Debug, Clone, PartialEq)]
pub struct State {
    /// Where the next frame starts.
    pub offset: usize,
    limit: usize,
    previous: Option<Vec<i64>>,
    previous2: Option<Vec<i64>>,
    home: Vec<i64>,
    home_valid: bool,
    gps_time_lost: bool,
    gps_fix: Option<GpsFix>,
    last_iteration: Option<u32>,
    last_time: Option<u32>,
    /// The loop time's bits: equal only when exactly equal.
    loop_time: Option<u64>,
    loop_samples: u32,
    scan_gap: Option<DamageReason>,
    group: Group,
    /// What the offset check reads of the last trusted group (see [`Group::offset_summary`]).
    before: (Vec<i64>, Vec<i64>),
    before_line_feeds: Vec<i64>,
    before_doubtful: Vec<(usize, i64)>,
    motion: Motion,
    ledger: ledger::State,
}

impl State {
    /// Whether reports can be joined here: no corrupt span waits for what it cost, and a main
    /// frame was recorded (so the report before this point knows where the flight starts).
    fn joinable(&self) -> bool {
        self.ledger.awaiting == 0 && self.ledger.last_main.is_some()
    }
}

/// What part of a session a decoder takes when the session is split between threads.
#[derive(Default)]
pub struct Piece {
    /// Start here rather than at the session's data (a later piece).
    pub from: Option<usize>,
    /// Where to send the states after this piece's first accepted I frames, and where the next
    /// piece starts (none are sent from there on): for the piece before.
    pub publish: Option<(Sender<State>, usize)>,
    /// The next piece's states, and where it starts: this piece stops at the first of them it
    /// reaches.
    pub join: Option<(Receiver<State>, usize)>,
}

/// How a piece ended.
pub struct PieceEnd {
    /// The report up to [`PieceEnd::joined_at`], or of the whole rest of the session.
    pub report: SessionReport,
    /// Where this piece met the next one's state, if it did.
    pub joined_at: Option<usize>,
    /// The states this piece published, in file order.
    pub published: Vec<Published>,
}

/// Where a piece published its state, and what its report held by then.
pub struct Published {
    pub offset: usize,
    /// Bytes before this were accounted for in the report.
    pub accounted: usize,
    pub frames: FrameCounts,
    pub events: BTreeMap<String, u64>,
}

/// States a piece publishes at most.
const MAX_PUBLISHED: usize = 2048;

/// Decodes one session.
pub struct SessionDecoder<'a> {
    file: &'a [u8],
    header: &'a Header,
    bounds: SessionBounds,
    validation: Validation,
    /// Where scanning stops: the start of the padding tail, or the end of a log-end event.
    limit: usize,
    /// Start of the trailing run of 0x00 or 0xFF bytes.
    tail_start: usize,
    history: History,
    slow: Vec<i64>,
    gps: Vec<i64>,
    /// The GPS home of the last H frame accepted, and the values of the H frame being read.
    home: Vec<i64>,
    home_read: Vec<i64>,
    home_valid: bool,
    gps_fields: Option<GpsFields>,
    /// Damage came after the last main frame accepted: the main frame a GPS frame's time is
    /// predicted from may be lost.
    gps_time_lost: bool,
    /// The last GPS frame accepted.
    gps_fix: Option<GpsFix>,
    /// Whether P frames can be trusted: an I frame validated since the last rejection.
    stream_valid: bool,
    last_iteration: Option<u32>,
    last_time: Option<u32>,
    /// Whether `last_iteration` is a logging-resume event's, which the next main frame may share.
    after_resume: bool,
    /// Mean µs per loop iteration between consecutive main frames.
    loop_time: Option<f64>,
    /// Samples the loop time is the mean of, up to [`LOOP_TIME_SAMPLES`].
    loop_samples: u32,
    /// The session was copied in text mode: every line feed may have been a carriage return or a
    /// CR LF pair.
    newline_converted: bool,
    /// Blocks written over the log: a frame that holds some of one is in doubt, or refused.
    written_over: Option<Blocks>,
    /// Whether they left a line of the header the decoding reads in doubt.
    header_in_doubt: bool,
    /// The current frame's values that would differ had a line feed been a carriage return.
    line_feed_values: Vec<LineFeedValue>,
    /// Scratch space for reading a frame with a line feed replaced.
    alternative_body: Vec<u8>,
    alternative_values: Vec<i64>,
    /// Whose event ids the E frames use (the reference decoders know Betaflight's and INAV's
    /// only).
    dialect: Dialect,
    /// The P frame's predictor of each main field (so also the P frame's length).
    p_predictors: Vec<Predictor>,
    /// The P frame's fields' high bits (see [`super::predictor::high_bits`]).
    p_high_bits: Vec<i64>,
    iteration_index: usize,
    time_index: usize,
    /// Why bytes since the last accepted frame were rejected.
    scan_gap: Option<DamageReason>,
    /// A frame other than a main one read right after damage with no group open: trusted once
    /// the next frame follows it in step (see [`SessionDecoder::accept`]).
    pending: Option<Pending>,
    /// Where the frame cut short by the end of the data starts.
    cut_at: Option<usize>,
    group: Group,
    /// The last group, when it was trusted whole: what the next group's I frame steps from.
    before: Group,
    /// The last main frame whose values stand (but for `before_doubtful`): what the line feeds
    /// of a group soon after it are judged from (see [`SessionDecoder::before_is_recent`]).
    before_line_feeds: Vec<i64>,
    /// Fields of `before_line_feeds` whose values rest on a line feed that was not settled, with
    /// the difference reading it otherwise makes.
    before_doubtful: Vec<(usize, i64)>,
    /// Per main field, the largest size its values can take (`u64::MAX` where the header bounds
    /// none); empty where no field is bounded, and under the reference rules.
    value_bounds: Vec<u64>,
    /// How long a frame of the session's layout can be.
    max_frame_len: usize,
    /// The same for the slow fields.
    slow_bounds: Vec<u64>,
    /// Main fields whose I-frame values are variable-byte codes (where a dropped byte shifts one
    /// value and leaves the frame in step), other than iteration and time.
    offset_fields: Vec<bool>,
    /// How far each main field moved in the recent trusted groups.
    motion: Motion,
    /// The main frames the header lists as kept suspect by the salvage that wrote the log.
    listed_suspect: SuspectFrames,
    ledger: Ledger,
}

/// A frame held back until the next shows whether it was read in step.
struct Pending {
    item: Item,
    values: Vec<i64>,
    /// Damage came after it.
    refused: bool,
}

/// How far (in the log's units: 10⁻⁷ degree, about a kilometre) a home read after damage may
/// lie from the session's home.
const HOME_MOVE: u64 = 100_000;

impl<'a> SessionDecoder<'a> {
    /// Prepare to decode the session `bounds` of `file` whose header is `header`.
    pub fn new(
        file: &'a [u8],
        header: &'a Header,
        bounds: SessionBounds,
        validation: Validation,
    ) -> Self {
        let data_start = (header.data_start as usize).clamp(bounds.start, bounds.end);
        let tail_start = data_start
            + trailing_padding_start(&file[data_start..bounds.end])
                .unwrap_or(bounds.end - data_start);
        let fields = |kind| header.def(kind).map_or(0, |d| d.len());
        let main_index = |name| header.i.as_ref().and_then(|d| d.index_of(name));
        let layout = Layout {
            iteration_index: main_index("loopIteration").unwrap_or(0),
            time_index: main_index("time").unwrap_or(1),
            gps_time_index: header.g.as_ref().and_then(|d| d.index_of("time")),
            logged: header.logged_count(),
        };
        let report = SessionReport {
            index: bounds.index,
            start: bounds.start as u64,
            end: bounds.end as u64,
            data_start: data_start as u64,
            firmware: header.firmware,
            firmware_revision: header.firmware_revision.clone(),
            craft_name: header.craft_name().map(str::to_owned),
            header_from: header.get(HEADER_FROM).map(str::to_owned),
            frames: FrameCounts::default(),
            events: BTreeMap::new(),
            first_iteration: None,
            last_iteration: None,
            first_time_us: None,
            last_time_us: None,
            duration_us: None,
            loop_time_us: None,
            log_end: false,
            header_problems: header.problems.iter().map(|p| p.message.clone()).collect(),
            corrupt_spans: Vec::new(),
            suspect_spans: Vec::new(),
            regions: Vec::new(),
        };
        let (iteration_index, time_index) = (layout.iteration_index, layout.time_index);
        // The reference decoders bound no value.
        let bounds_of = |kind| match validation {
            Validation::Thorough => value_bounds(header, kind),
            Validation::Reference => Vec::new(),
        };
        let offset_fields = header.i.as_ref().map_or_else(Vec::new, |def| {
            def.fields
                .iter()
                .enumerate()
                .map(|(f, spec)| {
                    f != iteration_index
                        && f != time_index
                        && matches!(spec.encoding, Encoding::SignedVb | Encoding::UnsignedVb)
                })
                .collect()
        });
        let motion = Motion::new(&offset_fields);
        SessionDecoder {
            file,
            header,
            bounds,
            validation,
            limit: tail_start,
            tail_start,
            history: History::new(fields(FrameKind::I)),
            slow: vec![0; fields(FrameKind::S)],
            gps: vec![0; fields(FrameKind::G)],
            home: vec![0; fields(FrameKind::H)],
            home_read: vec![0; fields(FrameKind::H)],
            // Until the firmware sets a home it predicts GPS frames from (0, 0), and logs them
            // (Indiflight does); the reference decoders wait for a home frame.
            home_valid: validation == Validation::Thorough,
            gps_fields: GpsFields::of(header),
            gps_time_lost: false,
            gps_fix: None,
            stream_valid: false,
            last_iteration: None,
            last_time: None,
            after_resume: false,
            loop_time: None,
            loop_samples: 0,
            newline_converted: false,
            written_over: None,
            header_in_doubt: false,
            pending: None,
            line_feed_values: Vec::new(),
            alternative_body: Vec::new(),
            alternative_values: Vec::new(),
            dialect: match (Dialect::of(header), validation) {
                (Dialect::Rotorflight, Validation::Reference) => Dialect::Betaflight,
                (dialect, _) => dialect,
            },
            p_predictors: header
                .p
                .as_ref()
                .map_or_else(Vec::new, |d| d.fields.iter().map(|f| f.predictor).collect()),
            p_high_bits: header
                .p
                .as_ref()
                .map_or_else(Vec::new, |d| d.high_bits().to_vec()),
            iteration_index,
            time_index,
            scan_gap: None,
            cut_at: None,
            group: Group::default(),
            before: Group::default(),
            before_line_feeds: Vec::new(),
            before_doubtful: Vec::new(),
            offset_fields,
            motion,
            listed_suspect: match validation {
                Validation::Thorough => SuspectFrames::from_header(header),
                Validation::Reference => SuspectFrames::default(),
            },
            value_bounds: bounds_of(FrameKind::I),
            max_frame_len: header.max_frame_len(),
            slow_bounds: bounds_of(FrameKind::S),
            ledger: Ledger::new(report, layout, data_start),
        }
    }

    /// Tell the decoder that the file was copied in text mode (see [`crate::textmode::is_newline_converted`]).
    pub fn text_mode(mut self, converted: bool) -> Self {
        self.newline_converted = converted && self.validation == Validation::Thorough;
        self
    }

    /// Tell the decoder which bytes were written over the log (see
    /// [`crate::periodic::written_over`]), and whether they left the session's header in doubt
    /// (then no frame is read as the log wrote it).
    pub fn written_over(mut self, blocks: Option<&Blocks>, header_in_doubt: bool) -> Self {
        let thorough = self.validation == Validation::Thorough;
        self.written_over = blocks.filter(|_| thorough).cloned();
        self.header_in_doubt = header_in_doubt && thorough;
        self
    }

    /// Decode every frame, passing trusted ones to `sink`, and return the session's report.
    pub fn run(self, sink: &mut impl Sink) -> SessionReport {
        self.run_piece(Piece::default(), sink).report
    }

    /// Decode the frames of one piece of the session (see [`Piece`]), passing trusted ones to
    /// `sink`.
    pub fn run_piece(mut self, mut piece: Piece, sink: &mut impl Sink) -> PieceEnd {
        let mut pos = match piece.from {
            Some(from) => {
                let from = from.clamp(self.ledger.accounted, self.bounds.end);
                self.ledger.accounted = from;
                from
            }
            None => {
                self.account_header();
                self.ledger.accounted
            }
        };
        let end = piece.join.as_ref().map_or(self.limit, |&(_, next)| next);
        sink.started(pos..end.max(pos));
        let mut published = Vec::new();
        let mut pending: Option<State> = None;
        while pos < self.limit {
            let start = pos;
            let byte = self.file[start];
            let Some(kind) = FrameKind::from_byte(byte) else {
                self.reject(DamageReason::Garbage);
                pos += 1;
                continue;
            };
            if kind != FrameKind::E && self.header.def(kind).is_none() {
                let reason = if self.header.problems.is_empty() {
                    DamageReason::UndefinedFrameType
                } else {
                    DamageReason::HeaderDamaged
                };
                self.reject(reason);
                pos += 1;
                continue;
            }
            let body_end = self.bounds.end.min(start + self.max_frame_len);
            let body = &self.file[start + 1..body_end];
            let (decoded, len) = match self.decode(kind, body) {
                Ok(ok) => ok,
                Err(kind) => {
                    match kind {
                        // A frame cut by the end of the data says nothing of the one before.
                        CodecErrorKind::Eof if body_end == self.bounds.end => {
                            self.cut_at.get_or_insert(start);
                            self.reject(DamageReason::Truncated)
                        }
                        CodecErrorKind::Eof => {
                            self.reject_undecodable(start, DamageReason::FrameTooLong)
                        }
                        _ => self.reject_undecodable(start, DamageReason::BadEncoding),
                    }
                    pos += 1;
                    continue;
                }
            };
            let next = start + 1 + len;
            // A log-end event ends the session: whatever follows is not log data.
            let log_end = matches!(decoded, Decoded::Event(Event::LogEnd { .. }));
            if !log_end && !self.starts_frame_or_ends(next) {
                self.reject_undecodable(start, DamageReason::FrameRejectedNextByte);
                pos += 1;
                continue;
            }
            let line_feeds = if self.newline_converted && self.file[start..next].contains(&b'\n') {
                self.read_line_feeds(kind, start, next)
            } else {
                LineFeeds::Read
            };
            if line_feeds == LineFeeds::InStep {
                // The frames after it are in step: only this frame's values are in doubt.
                if kind == FrameKind::H {
                    self.home_valid = false;
                }
                self.scan_gap.get_or_insert(DamageReason::NewlineConverted);
                pos = next;
                continue;
            }
            if line_feeds == LineFeeds::Unreadable {
                self.reject(DamageReason::NewlineConverted);
                pos = next;
                continue;
            }
            self.complete(kind, decoded, start, next, sink);
            if !self.line_feed_values.is_empty() {
                self.group.note_line_feeds(start, &self.line_feed_values);
                self.line_feed_values.clear();
            }
            pos = next;
            if kind == FrameKind::I && self.stream_valid {
                self.publish(&mut piece, next, &mut published);
                if self.meets(&mut piece, next, &mut pending) {
                    return PieceEnd {
                        report: self.ledger.report,
                        joined_at: Some(next),
                        published,
                    };
                }
            }
        }
        drop(piece.publish.take());
        PieceEnd {
            report: self.finish(sink),
            joined_at: None,
            published,
        }
    }

    /// After an accepted I frame ending at `next`: send the state to the piece before, while this
    /// piece publishes.
    fn publish(&self, piece: &mut Piece, next: usize, published: &mut Vec<Published>) {
        let Some((sender, until)) = &piece.publish else {
            return;
        };
        if next >= *until || published.len() >= MAX_PUBLISHED {
            // Done before this piece may wait on the next: the piece before never waits on one
            // that waits.
            piece.publish = None;
            return;
        }
        let state = self.state(next);
        if !state.joinable() {
            return;
        }
        let report = &self.ledger.report;
        published.push(Published {
            offset: next,
            accounted: state.ledger.accounted,
            frames: report.frames,
            events: report.events.clone(),
        });
        if sender.send(state).is_err() {
            piece.publish = None;
        }
    }

    /// After an accepted I frame ending at `next`: whether the next piece was in this state here.
    /// `pending` holds the next piece's first state not yet passed.
    fn meets(&self, piece: &mut Piece, next: usize, pending: &mut Option<State>) -> bool {
        let Some((receiver, from)) = &piece.join else {
            return false;
        };
        if next <= *from {
            return false;
        }
        while pending.as_ref().is_none_or(|s| s.offset < next) {
            match receiver.recv() {
                Ok(state) => *pending = Some(state),
                Err(_) => {
                    // The next piece published all it will.
                    piece.join = None;
                    return false;
                }
            }
        }
        pending
            .as_ref()
            .is_some_and(|s| s.offset == next && *s == self.state(next))
    }

    /// The state after the frame ending at `offset` (see [`State`]).
    fn state(&self, offset: usize) -> State {
        let (previous, previous2) = self.main_history();
        State {
            offset,
            limit: self.limit,
            previous: previous.map(<[i64]>::to_vec),
            previous2: previous2.map(<[i64]>::to_vec),
            home: self.home.clone(),
            home_valid: self.home_valid,
            gps_time_lost: self.gps_time_lost,
            gps_fix: self.gps_fix,
            last_iteration: self.last_iteration,
            last_time: self.last_time,
            loop_time: self.loop_time.map(f64::to_bits),
            loop_samples: self.loop_samples,
            scan_gap: self.scan_gap,
            group: self.group.snapshot(),
            before: self.before.offset_summary(),
            before_line_feeds: self.before_line_feeds.clone(),
            before_doubtful: self.before_doubtful.clone(),
            motion: self.motion.clone(),
            ledger: self.ledger.state(),
        }
    }

    /// Whether `pos` is where a frame may end: the data ends, padding starts, or a frame starts.
    fn starts_frame_or_ends(&self, pos: usize) -> bool {
        pos >= self.tail_start
            || pos >= self.bounds.end
            || FrameKind::from_byte(self.file[pos])
                .is_some_and(|k| k == FrameKind::E || self.header.def(k).is_some())
    }

    fn decode(&mut self, kind: FrameKind, body: &[u8]) -> Result<(Decoded, usize), CodecErrorKind> {
        let header = self.header;
        if kind == FrameKind::E {
            return match Event::decode(body, self.dialect) {
                Ok((event, len)) => Ok((Decoded::Event(event), len)),
                Err(EventError::UnknownId(_)) => Ok((Decoded::UnknownEvent, 1)),
                Err(EventError::Codec(e)) => Err(e.kind),
            };
        }
        let def = header.def(kind).expect("checked by the caller");
        let result = if self.decodes_in_group(kind) {
            let (history, out) = self.group.next_main(def.len());
            def.decode(
                body,
                &header.inter_context(history, self.last_iteration),
                out,
            )
        } else {
            let mut out = std::mem::take(self.values_mut(kind));
            let result = def.decode(body, &self.context(kind), &mut out);
            *self.values_mut(kind) = out;
            result
        };
        result.map(|len| (Decoded::Fields, len)).map_err(|e| e.kind)
    }

    /// Whether a frame of `kind` decodes straight into the group: a P frame in a valid stream
    /// under thorough validation (an I frame decodes apart, as it may close the group).
    #[inline]
    fn decodes_in_group(&self, kind: FrameKind) -> bool {
        kind == FrameKind::P && self.stream_valid && self.validation == Validation::Thorough
    }

    /// The last main frame accepted and the one before it.
    fn main_history(&self) -> MainHistory<'_> {
        if self.history.in_group {
            self.group.last_mains()
        } else {
            self.history.last_two()
        }
    }

    /// What a data frame of `kind` is predicted from.
    fn context(&self, kind: FrameKind) -> Context<'_> {
        let history = self.main_history();
        self.header
            .context(kind, history, self.last_iteration, &self.home, || {
                history.0.map_or(0, |p| p[self.time_index])
            })
    }

    /// Where a data frame of `kind` decodes to.
    fn values_mut(&mut self, kind: FrameKind) -> &mut Vec<i64> {
        match kind {
            FrameKind::I | FrameKind::P => &mut self.history.bufs[self.history.cur],
            FrameKind::S => &mut self.slow,
            FrameKind::H => &mut self.home_read,
            _ => &mut self.gps,
        }
    }

    /// In a text-mode copy, how the frame from `start` to `next` reads with its line feeds as line
    /// feeds, given what a carriage return or a CR LF pair in place of each would give. Where a
    /// carriage return gives other values only, in a main frame, those values are noted in
    /// `line_feed_values` for the group to judge.
    fn read_line_feeds(&mut self, kind: FrameKind, start: usize, next: usize) -> LineFeeds {
        let header = self.header;
        let Some(def) = header.def(kind).filter(|_| kind != FrameKind::E) else {
            return LineFeeds::Unreadable;
        };
        let main = matches!(kind, FrameKind::I | FrameKind::P);
        let mut body = std::mem::take(&mut self.alternative_body);
        let mut other = std::mem::take(&mut self.alternative_values);
        let mut noted = std::mem::take(&mut self.line_feed_values);
        noted.clear();
        let body_end = self.bounds.end.min(start + self.max_frame_len);
        let mut reading = LineFeeds::Read;
        'feeds: for at in memchr::memchr_iter(b'\n', &self.file[start + 1..next]) {
            for pair in [false, true] {
                body.clear();
                body.extend_from_slice(&self.file[start + 1..body_end]);
                if pair {
                    body.insert(at, b'\r');
                } else {
                    body[at] = b'\r';
                }
                other.clear();
                other.resize(def.len(), 0);
                let Ok(len) = def.decode(&body, &self.context(kind), &mut other) else {
                    continue;
                };
                let end = start + 1 + len - usize::from(pair);
                let read = self.values(kind);
                if !self.starts_frame_or_ends(end)
                    || (main && !self.plausible_instead(kind, &other))
                {
                    continue;
                }
                if end != next {
                    reading = LineFeeds::Unreadable;
                    break 'feeds;
                }
                if !main {
                    if other != read {
                        reading = LineFeeds::InStep;
                    }
                    continue;
                }
                for (field, (&o, &r)) in other.iter().zip(read).enumerate() {
                    if o != r {
                        noted.push(LineFeedValue {
                            offset: start + 1 + at,
                            field,
                            // Values are 32 bits wide: the step between them wraps.
                            delta: i64::from(o.wrapping_sub(r) as i32),
                            pair,
                        });
                    }
                }
            }
        }
        if reading != LineFeeds::Read {
            noted.clear();
        }
        self.alternative_body = body;
        self.alternative_values = other;
        self.line_feed_values = noted;
        reading
    }

    /// The values a data frame of `kind` decoded to.
    #[inline]
    fn values(&self, kind: FrameKind) -> &[i64] {
        match kind {
            FrameKind::P if self.decodes_in_group(kind) => {
                self.group.next_values(self.p_predictors.len())
            }
            FrameKind::I | FrameKind::P => &self.history.bufs[self.history.cur],
            FrameKind::S => &self.slow,
            FrameKind::H => &self.home_read,
            _ => &self.gps,
        }
    }

    /// Whether a main frame of `kind` with `values` in place of the frame read would pass the
    /// iteration and time checks.
    fn plausible_instead(&self, kind: FrameKind, values: &[i64]) -> bool {
        let field = |i: usize| values.get(i).map(|&v| v as u32);
        let (Some(iteration), Some(time)) = (field(self.iteration_index), field(self.time_index))
        else {
            return false;
        };
        if (iteration, time) == self.main_values(kind) {
            return true;
        }
        let leaps = self
            .last_iteration
            .is_some_and(|l| iteration.wrapping_sub(l) >= MAX_ITERATION_JUMP)
            || self
                .last_time
                .is_some_and(|l| time.wrapping_sub(l) >= MAX_TIME_JUMP_US);
        let on_schedule = kind == FrameKind::P || iteration % self.header.i_interval == 0;
        !leaps && on_schedule && !self.repeats(iteration) && self.timing_consistent(iteration, time)
    }

    /// A complete frame from `start` to `end`: decide whether to accept it.
    fn complete(
        &mut self,
        kind: FrameKind,
        decoded: Decoded,
        start: usize,
        end: usize,
        sink: &mut impl Sink,
    ) {
        let item = |event| Item {
            kind,
            start,
            end,
            gap: None,
            values: 0..0,
            event,
        };
        // A main frame is read on, its values in doubt (see `written_over_suspicion`).
        if let Some(blocks) = &self.written_over
            && (self.header_in_doubt
                || !matches!(kind, FrameKind::I | FrameKind::P)
                    && blocks.overlaps(start as u64, end as u64))
        {
            return self.reject(DamageReason::WrittenOver);
        }
        match (kind, decoded) {
            (FrameKind::I, _) => self.complete_intra(start, end, sink),
            (FrameKind::P, _) => self.complete_inter(start, end, sink),
            (FrameKind::S, _) if !self.values_possible(kind) => {
                self.reject(DamageReason::ImplausibleValue)
            }
            (FrameKind::S, _) => {
                let slow = std::mem::take(&mut self.slow);
                self.accept(item(None), &slow, sink);
                self.slow = slow;
            }
            // After damage, a home other than the session's is bytes read as one.
            (FrameKind::H, _) if self.scan_gap.is_some() && self.home_moved() => {
                self.reject(DamageReason::Garbage)
            }
            (FrameKind::H, _) => {
                self.home_valid = true;
                self.home.clone_from(&self.home_read);
                let home = std::mem::take(&mut self.home);
                self.accept(item(None), &home, sink);
                self.home = home;
            }
            // Its time is predicted from the main frame before it, which damage may have taken.
            (FrameKind::G, _) if self.gps_time_lost => self.reject(DamageReason::StalePFrame),
            (FrameKind::G, _) if !self.home_valid && !self.gps_continues_track() => {
                // The track is broken: later GPS frames wait for the next home.
                self.gps_fix = None;
                self.reject(DamageReason::NoGpsHome)
            }
            (FrameKind::G, _) => {
                self.home_valid = true;
                self.gps_fix = self.gps_fields.as_ref().and_then(|f| f.fix(&self.gps));
                let gps = std::mem::take(&mut self.gps);
                self.accept(item(None), &gps, sink);
                self.gps = gps;
            }
            // Logging resumes later than it paused, and the sync beep sounds as logging starts:
            // one back in time (the beep: read after damage) is bytes read as an event.
            (FrameKind::E, Decoded::Event(Event::LoggingResume { iteration, time }))
                if self.validation == Validation::Thorough
                    && self.scan_gap.is_some()
                    && self.goes_back(iteration, time) =>
            {
                self.reject(DamageReason::Garbage)
            }
            (FrameKind::E, Decoded::Event(Event::SyncBeep { time }))
                if self.validation == Validation::Thorough
                    && self.scan_gap.is_some()
                    && self
                        .last_time
                        .is_some_and(|l| time.wrapping_sub(l) >= 1 << 31) =>
            {
                self.reject(DamageReason::Garbage)
            }
            (FrameKind::E, Decoded::Event(event)) => {
                match event {
                    Event::LoggingResume { iteration, time } => {
                        self.last_iteration = Some(iteration);
                        self.last_time = Some(time);
                        self.after_resume = true;
                    }
                    Event::LogEnd { .. } => self.limit = end,
                    _ => {}
                }
                self.accept(item(Some(event)), &[], sink);
            }
            (FrameKind::E, _) => self.reject(DamageReason::UnknownEvent),
        }
    }

    /// Whether `iteration` or `time` lies before the last main frame's (or resume's).
    fn goes_back(&self, iteration: u32, time: u32) -> bool {
        let back =
            |now: u32, last: Option<u32>| last.is_some_and(|l| now.wrapping_sub(l) >= 1 << 31);
        back(iteration, self.last_iteration) || back(time, self.last_time)
    }

    /// Whether an I frame at `iteration` repeats the last main frame's iteration: a firmware
    /// logs at most one main frame an iteration, so its bytes were read before (a download that
    /// wrote a block twice, say). The frame after a logging resume may share the event's. (A P
    /// frame's iteration is predicted onwards.)
    fn repeats(&self, iteration: u32) -> bool {
        !self.after_resume && self.last_iteration == Some(iteration)
    }

    /// Whether the H frame just decoded puts the home elsewhere than the last one accepted (by
    /// more than [`HOME_MOVE`] in a coordinate): a session keeps its home.
    fn home_moved(&self) -> bool {
        self.validation == Validation::Thorough
            && self.home.iter().any(|&v| v != 0)
            && self
                .home
                .iter()
                .zip(&self.home_read)
                .any(|(a, b)| a.abs_diff(*b) > HOME_MOVE)
    }

    /// Whether the GPS frame just decoded continues the track of the last one accepted, read with
    /// the home it had: then that home was not lost.
    fn gps_continues_track(&self) -> bool {
        let next = self.gps_fields.as_ref().and_then(|f| f.fix(&self.gps));
        matches!((self.gps_fix, next), (Some(last), Some(next)) if last.reaches(&next))
    }

    /// Whether a main frame's time advanced about as much as its iterations say.
    fn timing_consistent(&self, iteration: u32, time: u32) -> bool {
        self.timing_within(iteration, time, 4.0, 1000.0)
    }

    /// Whether a main frame's time advanced as much as its iterations say, within `factor` times
    /// or `slack_us` either way.
    fn timing_within(&self, iteration: u32, time: u32, factor: f64, slack_us: f64) -> bool {
        let (Some(li), Some(lt), Some(loop_time)) =
            (self.last_iteration, self.last_time, self.loop_time)
        else {
            return true;
        };
        let iterations = f64::from(iteration.wrapping_sub(li));
        let elapsed = f64::from(time.wrapping_sub(lt));
        let expected = iterations * loop_time;
        elapsed >= expected / factor - slack_us && elapsed <= expected * factor + slack_us
    }

    /// Learn the loop time from two consecutive main frames (see [`LOOP_TIME_SAMPLES`]).
    fn learn_loop_time(&mut self, iteration: u32, time: u32) {
        if let (Some(li), Some(lt)) = (self.last_iteration, self.last_time) {
            let iterations = iteration.wrapping_sub(li);
            if iterations > 0 && iterations < MAX_ITERATION_JUMP {
                let sample = f64::from(time.wrapping_sub(lt)) / f64::from(iterations);
                let n = (self.loop_samples + 1).min(LOOP_TIME_SAMPLES);
                let t = self.loop_time.unwrap_or(sample);
                self.loop_time = Some(t + (sample - t) / f64::from(n));
                self.loop_samples = n;
            }
        }
    }

    /// The iteration and time of the main frame of `kind` just decoded.
    #[inline]
    fn main_values(&self, kind: FrameKind) -> (u32, u32) {
        let values = self.values(kind);
        (
            values[self.iteration_index] as u32,
            values[self.time_index] as u32,
        )
    }

    /// Whether the main or slow frame of `kind` just decoded holds values its fields can take.
    #[inline]
    fn values_possible(&self, kind: FrameKind) -> bool {
        let values = self.values(kind);
        let bounds = match kind {
            FrameKind::S => &self.slow_bounds,
            _ => &self.value_bounds,
        };
        within(values, bounds)
    }

    fn complete_intra(&mut self, start: usize, end: usize, sink: &mut impl Sink) {
        let (iteration, time) = self.main_values(FrameKind::I);
        let possible = self.values_possible(FrameKind::I);
        self.history.push_intra();
        let plausible = match (self.last_iteration, self.last_time) {
            (Some(li), _) if iteration.wrapping_sub(li) >= MAX_ITERATION_JUMP => {
                Err(DamageReason::ImplausibleIteration)
            }
            (_, Some(lt)) if time.wrapping_sub(lt) >= MAX_TIME_JUMP_US => {
                Err(DamageReason::ImplausibleTime)
            }
            _ => Ok(()),
        };
        let anchor = match (self.validation, plausible) {
            (Validation::Reference, Err(reason)) => return self.reject(reason),
            (Validation::Reference, Ok(())) => false,
            (Validation::Thorough, _) if iteration % self.header.i_interval != 0 => {
                return self.reject(DamageReason::ImplausibleIteration);
            }
            (Validation::Thorough, _) if self.repeats(iteration) => {
                return self.reject(DamageReason::ImplausibleIteration);
            }
            (Validation::Thorough, _) if !self.timing_consistent(iteration, time) => {
                return self.reject(DamageReason::ImplausibleTime);
            }
            (Validation::Thorough, _) if !possible => {
                return self.reject(DamageReason::ImplausibleValue);
            }
            (Validation::Thorough, Ok(())) => false,
            // After damage, an I frame on the schedule whose time advanced as its iterations say
            // re-anchors the stream however far it jumped, once the frames after it agree.
            (Validation::Thorough, Err(_)) if !self.stream_valid => true,
            (Validation::Thorough, Err(reason)) => return self.reject(reason),
        };
        if self.validation == Validation::Thorough {
            // A clean next I frame corroborates the group before it, unless the group's I frame
            // is offset from both sides.
            let joined = self.stream_valid && self.group.is_open();
            // Across a logging pause the values need not continue.
            let resumed = self.group.resumed();
            let follows = joined && !resumed;
            // Main frames lost inside the group leave the P frames after them predicted from the
            // frames before, in step and a plausible iteration on: only the next I frame, further
            // on than the schedule allows, shows it.
            let lost_frames = follows
                && self.last_iteration.is_some_and(|last| {
                    iteration != last.wrapping_add(1 + self.header.skipped_after(last))
                });
            // Time predicted along a straight line carries an error on, growing: the step to the
            // next I frame takes it back (clean real logs step within 1.8 times the loop time).
            let time_drifted =
                follows && !self.timing_within(iteration, time, JOIN_TIME_FACTOR, 0.0);
            // Either leaves the group's I frame as it was: only the frames after it are refused.
            if lost_frames || time_drifted {
                self.group.drifted();
            }
            // The line feeds first: the values the other rules read may change.
            let (untrusted, line_feed, doubtful) = self.judge_line_feeds(follows);
            let next = self.history.last_two().0.filter(|_| follows);
            let offset = next.and_then(|next| {
                self.group
                    .offset_by_its_i_frame(&self.before, next, &self.offset_fields)
            });
            let in_step = joined || self.group.trusted_without_join(untrusted.from);
            let trusted = offset.is_none() && in_step;
            // A P frame offset from there to the next I frame.
            let p_offset = next
                .and_then(|next| {
                    self.group
                        .first_offset_p_frame(next, &self.p_predictors, &self.motion)
                })
                .filter(|&(from, _)| from < untrusted.from);
            // The first of the rules' suspicions.
            let suspicion = [
                offset.map(|offset| Suspicion::of(Rule::IFrameOffset, 0, offset)),
                p_offset.map(|(from, offset)| Suspicion::of(Rule::PFrameOffset, from, offset)),
                line_feed,
                self.written_over_suspicion(untrusted.from),
            ]
            .into_iter()
            .flatten()
            .min_by_key(|s| s.from);
            // The decoder goes on as if the group ended where its values come into doubt.
            let kept = suspicion.map_or(untrusted.from, |s| s.from.min(untrusted.from));
            // Frames a salvage kept as suspect teach nothing, as in the log it read.
            let settled = kept == self.group.items.len()
                && self
                    .group
                    .first_listed_suspect(&self.listed_suspect, self.iteration_index)
                    .is_none();
            if let Some(next) = next
                && trusted
                && settled
            {
                self.motion
                    .learn(&self.group, next, iteration, self.header.i_interval);
            }
            // The next group's I frame is compared with this group's frames when they are all
            // kept, trusted or suspect: a salvaged log holds the suspect ones, and there this
            // group may have nothing to be compared with (frames lost before it are marked as a
            // logging pause).
            let kept_whole = self.commit_group(in_step, untrusted, suspicion, doubtful, sink);
            if kept_whole && !resumed {
                std::mem::swap(&mut self.before, &mut self.group);
            } else {
                self.before.clear();
            }
            // The next group follows this one if this one's I frame is trusted.
            self.group.restart(joined && trusted && kept > 0, anchor);
        }
        self.learn_loop_time(iteration, time);
        self.stream_valid = true;
        self.last_iteration = Some(iteration);
        self.last_time = Some(time);
        self.after_resume = false;
        self.accept_main(FrameKind::I, start, end, sink);
    }

    fn complete_inter(&mut self, start: usize, end: usize, sink: &mut impl Sink) {
        if !self.stream_valid {
            return self.reject(DamageReason::StalePFrame);
        }
        let (iteration, time) = self.main_values(FrameKind::P);
        let implausible = match (self.last_iteration, self.last_time) {
            (Some(li), _) if iteration.wrapping_sub(li) > MAX_ITERATION_JUMP => {
                Some(DamageReason::ImplausibleIteration)
            }
            (_, Some(lt)) if time.wrapping_sub(lt) > MAX_TIME_JUMP_US => {
                Some(DamageReason::ImplausibleTime)
            }
            _ if self.validation == Validation::Thorough
                && !self.timing_consistent(iteration, time) =>
            {
                Some(DamageReason::ImplausibleTime)
            }
            _ if !self.values_possible(FrameKind::P) => Some(DamageReason::ImplausibleValue),
            _ => None,
        };
        if let Some(reason) = implausible {
            return self.reject(reason);
        }
        self.learn_loop_time(iteration, time);
        if !self.decodes_in_group(FrameKind::P) {
            self.history.push_inter();
        }
        self.last_iteration = Some(iteration);
        self.last_time = Some(time);
        self.after_resume = false;
        self.accept_main(FrameKind::P, start, end, sink);
    }

    fn accept_main(&mut self, kind: FrameKind, start: usize, end: usize, sink: &mut impl Sink) {
        self.gps_time_lost = false;
        let mut item = Item {
            kind,
            start,
            end,
            gap: None,
            values: 0..0,
            event: None,
        };
        if self.decodes_in_group(kind) {
            // Decoded in place: hold it where it is.
            item.gap = self.scan_gap.take();
            self.group.push_next(item, self.p_predictors.len());
            self.history.in_group = true;
            return;
        }
        let values = std::mem::take(&mut self.history.bufs[self.history.prev.expect("pushed")]);
        self.accept(item, &values, sink);
        let prev = self.history.prev.expect("pushed");
        self.history.bufs[prev] = values;
    }

    /// A frame the rules accept: held with its group, or recorded (when read right after damage
    /// with no group open, once the next frame shows whether it was read in step).
    fn accept(&mut self, mut item: Item, values: &[i64], sink: &mut impl Sink) {
        item.gap = self.scan_gap.take();
        self.settle_pending(item.gap.is_none(), sink);
        let is_main = matches!(item.kind, FrameKind::I | FrameKind::P);
        let thorough = self.validation == Validation::Thorough;
        item.values = 0..values.len();
        if thorough && (is_main || self.group.is_open()) {
            self.group.push(item, values);
        } else if thorough && item.gap.is_some() {
            self.pending = Some(Pending {
                item,
                values: values.to_vec(),
                refused: false,
            });
        } else {
            self.ledger
                .commit(&item, values, Some(Trust::Trusted), sink);
        }
    }

    /// Record the frame held back after damage: trusted when what came next followed it in step
    /// (`followed`) and nothing was refused since.
    fn settle_pending(&mut self, followed: bool, sink: &mut impl Sink) {
        // Checked first: taking moves the whole frame out, on every frame accepted.
        if self.pending.is_some()
            && let Some(p) = self.pending.take()
        {
            let trust = (followed && !p.refused).then_some(Trust::Trusted);
            self.ledger.commit(&p.item, &p.values, trust, sink);
        }
    }

    /// The frame at `at` did not decode. The P frame before it may have read a byte too many or
    /// too few and still ended on a frame-type byte: damage can start inside it, so it is let go
    /// too. (An I frame stays: the group before may rest on it. In a text-mode copy, only a frame
    /// holding a line feed can hold damage.)
    fn reject_undecodable(&mut self, at: usize, reason: DamageReason) {
        let was_valid = self.stream_valid;
        self.reject(reason);
        if was_valid
            && self.validation == Validation::Thorough
            && let Some(start) = self.group.p_frame_ending_at(at)
            && (!self.newline_converted || self.file[start..at].contains(&b'\n'))
        {
            self.group.let_go_of_last_p_frame();
        }
    }

    /// Something at the current position could not be trusted.
    fn reject(&mut self, reason: DamageReason) {
        if let Some(pending) = &mut self.pending {
            pending.refused = true;
        }
        if !matches!(reason, DamageReason::UnknownEvent | DamageReason::NoGpsHome) {
            // A frame in step whose iteration or time is implausible ends a stream that drifted:
            // damage earlier in the group left wrong values that predictions carried on.
            let drifted = matches!(
                reason,
                DamageReason::ImplausibleIteration | DamageReason::ImplausibleTime
            );
            if drifted && self.stream_valid && self.validation == Validation::Thorough {
                self.group.drifted();
            }
            self.stream_valid = false;
            // P frames are stale from here on, but still decode from the last main frames.
            self.history.take_from(&self.group);
            // A GPS home frame may have been lost here: G frames wait for the next one, or for
            // one that continues their track; and for the next main frame.
            if self.validation == Validation::Thorough {
                self.home_valid = false;
                self.gps_time_lost = true;
            }
        }
        self.scan_gap.get_or_insert(reason);
    }

    /// Record every frame the group held: main frames are kept as far as the group is read in
    /// step (`in_step`), up to `untrusted.from`, and are suspect from where `suspicion` puts
    /// their values in doubt (refused when its evidence is past [`CORRUPT_SCORE`]). The others
    /// stand on their own, except that nothing vouches for one read right after damage and
    /// followed right by damage (for the last one held, the damage before what closes the
    /// group), and a G frame is trusted only with the time of the main frame its time is
    /// predicted from.
    fn commit_group(
        &mut self,
        mut in_step: bool,
        mut untrusted: Untrusted,
        suspicion: Option<Suspicion>,
        doubtful: Vec<(usize, i64)>,
        sink: &mut impl Sink,
    ) -> bool {
        // Of a group that drifted with only its I frame kept, the I frame is in doubt too.
        let suspicion = suspicion.or(untrusted.after_i_frame.then_some(Suspicion {
            from: 0,
            rule: Rule::DamageAfterIFrame,
            offset: None,
        }));
        // Frames a salvage kept as suspect stay so, each of them (the groups of the log it
        // wrote need not be those that put them in doubt).
        let own_from = suspicion.map(|s| s.from);
        let listed = self
            .group
            .first_listed_suspect(&self.listed_suspect, self.iteration_index)
            .map(|from| Suspicion {
                from,
                rule: Rule::ListedSuspect,
                offset: None,
            });
        let suspicion = match (suspicion, listed) {
            (Some(s), Some(l)) if l.from < s.from => Some(l),
            (s, l) => s.or(l),
        };
        let names = self.header.def(FrameKind::I).map_or(&[][..], |d| &d.names);
        let (suspect_from, evidence) = match suspicion.map(|s| (s, s.evidence(names))) {
            // Evidence this strong refuses the frames, as the bytes would.
            Some((s, e)) if e.score >= CORRUPT_SCORE => {
                if s.rule == Rule::IFrameOffset {
                    in_step = false;
                } else {
                    untrusted.from = untrusted.from.min(s.from);
                    untrusted.reason = DamageReason::SuspectGroup;
                }
                (usize::MAX, None)
            }
            Some((_, e)) => (own_from.unwrap_or(usize::MAX), Some(e)),
            None => (usize::MAX, None),
        };
        let listed_frames = &self.listed_suspect;
        let iteration_index = self.iteration_index;
        // The I frame's values stand under the rest: an offset there, or damage that may begin
        // inside it, puts every time in doubt; so do bytes written over a main frame from there
        // on.
        let i_frame_doubted = suspicion
            .is_some_and(|s| matches!(s.rule, Rule::IFrameOffset | Rule::DamageAfterIFrame));
        let written_from = self
            .written_over_suspicion(untrusted.from)
            .map_or(usize::MAX, |s| s.from);
        let (group, ledger) = (&self.group, &mut self.ledger);
        let closed_in_step = followed_in_step(self.scan_gap);
        let mut time_trusted = true;
        let mut last_trusted = None;
        for (i, item) in group.items.iter().enumerate() {
            let trust = match item.kind {
                FrameKind::I | FrameKind::P => {
                    let kept = in_step && i < untrusted.from;
                    if in_step && !kept {
                        ledger.note_gap(untrusted.reason);
                    }
                    time_trusted =
                        kept && !i_frame_doubted && i < untrusted.time_from && i < written_from;
                    let listed = !listed_frames.is_empty()
                        && group
                            .values(item)
                            .get(iteration_index)
                            .is_some_and(|&it| listed_frames.contains(it as u32));
                    match (kept, i >= suspect_from || listed) {
                        (false, _) => None,
                        (true, false) => Some(Trust::Trusted),
                        (true, true) => Some(Trust::Suspect),
                    }
                }
                kind => {
                    let followed = group
                        .items
                        .get(i + 1)
                        .map_or(closed_in_step, |next| followed_in_step(next.gap));
                    let vouched = item.gap.is_none() || followed;
                    (vouched && (kind != FrameKind::G || time_trusted)).then_some(Trust::Trusted)
                }
            };
            if trust == Some(Trust::Trusted) && matches!(item.kind, FrameKind::I | FrameKind::P) {
                last_trusted = Some(item);
            }
            ledger.commit(item, group.values(item), trust, sink);
        }
        // What the next group's line feeds are judged from: the last main frame, but for fields
        // resting on unsettled line feeds, when nothing else put the group in doubt; else the last
        // main frame trusted.
        if self.newline_converted {
            let line_feeds_alone = in_step
                && suspicion.is_none_or(|s| s.rule == Rule::LineFeed)
                && (untrusted.from == group.items.len()
                    || untrusted.reason == DamageReason::NewlineConverted);
            let (before, doubtful) = match group.last_main() {
                // Across a logging pause the values need not continue.
                _ if group.resumed() => (None, Vec::new()),
                Some(last) if line_feeds_alone => (Some(last), doubtful),
                _ => (last_trusted.map(|item| group.values(item)), Vec::new()),
            };
            if before.is_some() || group.resumed() {
                self.before_line_feeds.clear();
                self.before_line_feeds.extend(before.into_iter().flatten());
                self.before_doubtful = doubtful;
            }
        }
        ledger.close_suspect(evidence);
        in_step && untrusted.from == group.items.len()
    }

    /// Whether the last main frame whose values stand lies at most [`LINE_FEED_REACH`] I
    /// intervals before the group's I frame.
    fn before_is_recent(&self) -> bool {
        let iteration = |frame: &[i64]| frame.get(self.iteration_index).map(|&i| i as u32);
        let reach = LINE_FEED_REACH.saturating_mul(self.header.i_interval);
        match (
            self.group.main_frames().next().and_then(iteration),
            iteration(&self.before_line_feeds),
        ) {
            (Some(now), Some(then)) => now.wrapping_sub(then) <= reach,
            _ => false,
        }
    }

    /// Judge the open group's line feeds by the frames around it (the next I frame when
    /// `with_next`): read as carriage returns those that join better so, and say from which frame
    /// the group is refused, which frames are in doubt, and the fields left in doubt for the next
    /// group (see [`Group::unsettled_fields`]).
    fn judge_line_feeds(
        &mut self,
        with_next: bool,
    ) -> (Untrusted, Option<Suspicion>, Vec<(usize, i64)>) {
        let around = Neighbours {
            before: if self.before_is_recent() {
                &self.before_line_feeds
            } else {
                &[]
            },
            before_doubtful: &self.before_doubtful,
            next: self.history.last_two().0.filter(|_| with_next),
            next_line_feeds: if with_next {
                &self.line_feed_values
            } else {
                &[]
            },
        };
        let timing = [self.iteration_index, self.time_index];
        let (predictors, high_bits) = (&self.p_predictors, &self.p_high_bits);
        self.group.read_carriage_returns(
            &around,
            predictors,
            high_bits,
            &self.value_bounds,
            timing,
        );
        let untrusted = self.group.first_untrusted(&around, predictors, timing);
        let mut doubtful = Vec::new();
        self.group
            .unsettled_fields(&around, predictors, &mut doubtful);
        let line_feed = self.line_feed_suspicion(&untrusted);
        (untrusted, line_feed, doubtful)
    }

    /// The suspicion of the first line feed in the group that its neighbours do not settle, when
    /// it comes before the frames refused.
    fn line_feed_suspicion(&self, untrusted: &Untrusted) -> Option<Suspicion> {
        let from = untrusted.line_feed_from;
        (from < untrusted.from)
            .then(|| self.group.line_feed_of(from))
            .flatten()
            .map(|value| Suspicion::of_line_feed(from, value))
    }

    /// The suspicion of the first main frame of the group, before item `before`, that holds
    /// bytes written over the log: its values, and those of the frames predicted from it, may be
    /// off where the bytes under the block were another field's.
    fn written_over_suspicion(&self, before: usize) -> Option<Suspicion> {
        let blocks = self.written_over.as_ref()?;
        let from = self.group.items[..before.min(self.group.items.len())]
            .iter()
            .position(|item| {
                matches!(item.kind, FrameKind::I | FrameKind::P)
                    && blocks.overlaps(item.start as u64, item.end as u64)
            })?;
        Some(Suspicion {
            from,
            rule: Rule::WrittenOver,
            offset: None,
        })
    }

    /// Close a group whose stream was broken before the next I frame.
    fn settle(&mut self, sink: &mut impl Sink) {
        if !self.stream_valid && !self.group.is_empty() {
            let (untrusted, line_feed, doubtful) = self.judge_line_feeds(false);
            let trusted = self.group.trusted_without_join(untrusted.from);
            let suspicion = [line_feed, self.written_over_suspicion(untrusted.from)]
                .into_iter()
                .flatten()
                .min_by_key(|s| s.from);
            self.commit_group(trusted, untrusted, suspicion, doubtful, sink);
            self.group.clear();
        }
    }

    /// The header is a region, except for damaged lines, which are corrupt spans.
    fn account_header(&mut self) {
        let mut pos = self.bounds.start;
        let data_start = self.ledger.accounted;
        let mut problems: Vec<_> = self
            .header
            .problems
            .iter()
            .map(|p| (p.start as usize, p.end as usize))
            .filter(|&(s, e)| s < e && s >= self.bounds.start && e <= data_start)
            .collect();
        problems.sort_unstable();
        for (s, e) in problems {
            if s < pos {
                continue;
            }
            self.ledger.push_region(pos, s, RegionKind::Header);
            self.ledger.push_corrupt(s, e, DamageReason::HeaderDamaged);
            pos = e;
        }
        self.ledger.push_region(pos, data_start, RegionKind::Header);
        let unusable = self.header.i.is_none() && data_start < self.bounds.end;
        if unusable && self.header.problems.is_empty() {
            self.ledger
                .report
                .header_problems
                .push("the header defines no I frames".into());
        }
    }

    /// Account for what follows the last trusted frame and finish the report.
    fn finish(mut self, sink: &mut impl Sink) -> SessionReport {
        self.stream_valid = false;
        self.settle_pending(self.scan_gap.is_none(), sink);
        self.settle(sink);
        let end = self.bounds.end;
        let accounted = self.ledger.accounted;
        let gap = self.ledger.pending_gap(self.scan_gap);
        let ledger = &mut self.ledger;
        if ledger.report.log_end {
            if self.limit > accounted {
                // Frames held back as suspect right before the log end.
                let reason = gap.unwrap_or(DamageReason::SuspectGroup);
                ledger.push_corrupt(accounted, self.limit, reason);
            }
            // Flash is erased (or zeroed) after a log's end; other bytes there are what is left
            // of something else: the start of a session whose marker they were (see
            // `headers_without_marker`), bytes written over the storage.
            let stray = |b: &u8| !matches!(b, 0x00 | 0xFF);
            let after = &self.file[self.limit.min(end)..end];
            match (after.iter().position(stray), after.iter().rposition(stray)) {
                (Some(first), Some(last))
                    if after.iter().filter(|b| stray(b)).count() >= MIN_STRAY_BYTES =>
                {
                    let (first, last) = (self.limit + first, self.limit + last + 1);
                    ledger.push_region(self.limit, first, RegionKind::AfterLogEnd);
                    ledger.push_corrupt(first, last, DamageReason::Garbage);
                    ledger.push_region(last, end, RegionKind::AfterLogEnd);
                }
                _ => ledger.push_region(self.limit, end, RegionKind::AfterLogEnd),
            }
        } else if accounted < end {
            let pad_start = self.tail_start.max(accounted);
            let padding = end - pad_start >= MIN_PADDING;
            let damage_end = if padding { pad_start } else { end };
            // Logging stopped inside the frame right after the last one trusted: a normal end.
            let cut_short = damage_end == end
                && gap == Some(DamageReason::Truncated)
                && self.cut_at == Some(accounted);
            if cut_short {
                ledger.push_region(accounted, end, RegionKind::CutShort);
            } else if accounted < damage_end {
                let reason = match gap {
                    None | Some(DamageReason::Garbage) if damage_end == end => {
                        DamageReason::Truncated
                    }
                    other => other.unwrap_or(DamageReason::Garbage),
                };
                ledger.push_corrupt(accounted, damage_end, reason);
            }
            if padding {
                let kind = if self.file[pad_start] == 0xFF {
                    RegionKind::ErasedFlash
                } else {
                    RegionKind::ZeroFill
                };
                ledger.push_region(pad_start, end, kind);
            }
        }
        ledger.report.settle();
        self.ledger.report
    }
}

/// Whether a frame is followed in step by what comes after it, given why the bytes after it were
/// rejected: nothing was, or the first of them was a frame that decoded in step and was refused
/// only for resting on history that damage took.
fn followed_in_step(gap: Option<DamageReason>) -> bool {
    gap.is_none_or(|reason| reason == DamageReason::StalePFrame)
}

/// Start of the trailing run of identical 0x00 or 0xFF bytes, if the data ends in one.
fn trailing_padding_start(data: &[u8]) -> Option<usize> {
    let &last = data.last()?;
    if last != 0x00 && last != 0xFF {
        return None;
    }
    let run = data.iter().rev().take_while(|&&b| b == last).count();
    Some(data.len() - run)
}
