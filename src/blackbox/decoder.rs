//! Decoding one session: frames in file order, validated as they come, with every byte accounted
//! for in an accepted frame, a region that is not damage, or a corrupt span.
//!
//! Validation follows the spec's "Log validation": after a frame decodes, the next byte must start
//! a frame (or the data must end); `loopIteration` and `time` may not move backwards or leap ahead;
//! a rejected frame makes P frames unusable until an I frame validates.

use super::codec::CodecErrorKind;
use super::event::{Event, EventError};
use super::frame::{FrameKind, MAX_FRAME_LEN};
use super::header::Header;
use super::predictor::Context;
use crate::report::{CorruptSpan, DamageReason, FrameCounts, Region, RegionKind, SessionReport};
use std::collections::BTreeMap;

/// A main frame may not advance more iterations than this (the reference decoders' limit).
pub const MAX_ITERATION_JUMP: u32 = 5000;
/// A main frame may not advance more time than this, in µs.
pub const MAX_TIME_JUMP_US: u32 = 10_000_000;
/// Padding shorter than this at the end of a session is counted with the damage before it.
const MIN_PADDING: usize = 8;

/// Which rules decide what to trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validation {
    /// The reference decoders' rules, exactly: the baseline to measure against.
    Reference,
    /// The reference rules plus the checks that keep damaged values out.
    Thorough,
}

/// An accepted I, P, S, G or H frame.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    pub kind: FrameKind,
    /// Absolute offset of the type byte.
    pub offset: u64,
    /// Length, type byte included.
    pub len: usize,
    /// One value per field after predictors, normalised to 32 bits by the field's signed flag.
    pub values: &'a [i64],
    /// The `time` field's index and its 64-bit monotonic value (I, P and G frames).
    pub time: Option<(usize, u64)>,
}

/// An accepted event.
#[derive(Debug, Clone, Copy)]
pub struct EventFrame<'a> {
    pub offset: u64,
    pub len: usize,
    pub event: &'a Event,
}

/// Receives what a session decodes to, in file order.
pub trait Sink {
    /// An accepted data frame.
    fn frame(&mut self, _frame: &Frame<'_>) {}
    /// An accepted event.
    fn event(&mut self, _event: &EventFrame<'_>) {}
}

/// A sink that keeps nothing (for `check`).
pub struct Discard;
impl Sink for Discard {}

/// Byte range of a session in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionBounds {
    /// 1-based index.
    pub index: usize,
    pub start: usize,
    pub end: usize,
}

/// Main-frame history: the frame being decoded and the two before it, in three reused buffers.
struct History {
    bufs: [Vec<i64>; 3],
    cur: usize,
    prev: Option<usize>,
    prev2: Option<usize>,
}

impl History {
    fn new(fields: usize) -> History {
        History {
            bufs: [vec![0; fields], vec![0; fields], vec![0; fields]],
            cur: 0,
            prev: None,
            prev2: None,
        }
    }

    fn free_slot(&self) -> usize {
        (0..3)
            .find(|&i| Some(i) != self.prev && Some(i) != self.prev2)
            .unwrap_or(0)
    }

    /// After an I frame both history slots hold it.
    fn push_intra(&mut self) {
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

    fn previous(&self) -> Option<&[i64]> {
        self.prev.map(|i| self.bufs[i].as_slice())
    }
}

/// Turns 32-bit timestamps into a monotonic 64-bit time across rollovers.
#[derive(Default)]
struct Clock {
    epoch: u64,
    last: Option<u32>,
}

impl Clock {
    fn advance(&mut self, t: u32) -> u64 {
        if let Some(last) = self.last
            && t < last
            && last - t > 1 << 31
        {
            self.epoch += 1 << 32;
        }
        self.last = Some(t);
        self.epoch + u64::from(t)
    }
}

/// What decoding the bytes after a type byte gave.
enum Decoded {
    /// A data frame whose fields are in the kind's buffer.
    Fields,
    Event(Event),
    UnknownEvent,
}

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
    home: Vec<i64>,
    home_valid: bool,
    stream_valid: bool,
    last_iteration: Option<u32>,
    last_time: Option<u32>,
    main_clock: Clock,
    gps_clock: Clock,
    /// Count of logged iterations below `n % i_interval` within one I interval.
    logged_prefix: Vec<u32>,
    /// Field indices of `loopIteration` and `time` in main frames, and of `time` in G frames.
    iteration_index: usize,
    time_index: usize,
    gps_time_index: Option<usize>,
    // Accounting.
    accounted: usize,
    gap_reason: Option<DamageReason>,
    awaiting_main: Vec<usize>,
    last_main: Option<(u32, u64)>,
    report: SessionReport,
}

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
        let mut logged_prefix = Vec::with_capacity(header.i_interval as usize + 1);
        let mut count = 0;
        for n in 0..=header.i_interval {
            logged_prefix.push(count);
            if n < header.i_interval && header.is_logged(n) {
                count += 1;
            }
        }
        let main_index = |name| header.i.as_ref().and_then(|d| d.index_of(name));
        let report = SessionReport {
            index: bounds.index,
            start: bounds.start as u64,
            end: bounds.end as u64,
            data_start: data_start as u64,
            firmware: header.firmware,
            firmware_revision: header.firmware_revision.clone(),
            craft_name: header.craft_name().map(str::to_owned),
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
            regions: Vec::new(),
        };
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
            home_valid: false,
            stream_valid: false,
            last_iteration: None,
            last_time: None,
            main_clock: Clock::default(),
            gps_clock: Clock::default(),
            logged_prefix,
            iteration_index: main_index("loopIteration").unwrap_or(0),
            time_index: main_index("time").unwrap_or(1),
            gps_time_index: header.g.as_ref().and_then(|d| d.index_of("time")),
            accounted: data_start,
            gap_reason: None,
            awaiting_main: Vec::new(),
            last_main: None,
            report,
        }
    }

    /// Decode every frame, passing accepted ones to `sink`, and return the session's report.
    pub fn run(mut self, sink: &mut impl Sink) -> SessionReport {
        self.account_header();
        let mut pos = self.accounted;
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
            let body_end = self.bounds.end.min(start + MAX_FRAME_LEN);
            let body = &self.file[start + 1..body_end];
            let (decoded, len) = match self.decode(kind, body) {
                Ok(ok) => ok,
                Err(kind) => {
                    let reason = match kind {
                        CodecErrorKind::Eof if body_end == self.bounds.end => {
                            DamageReason::Truncated
                        }
                        CodecErrorKind::Eof => DamageReason::FrameTooLong,
                        _ => DamageReason::BadEncoding,
                    };
                    self.reject(reason);
                    pos += 1;
                    continue;
                }
            };
            let next = start + 1 + len;
            if !self.starts_frame_or_ends(next) {
                self.reject(DamageReason::FrameRejectedNextByte);
                pos += 1;
                continue;
            }
            self.complete(kind, decoded, start, next, sink);
            pos = next;
        }
        self.finish()
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
        let codec = |e: super::codec::CodecError| e.kind;
        match kind {
            FrameKind::I | FrameKind::P => {
                let def = header.def(kind).expect("checked by the caller");
                let h = &mut self.history;
                let mut cur = std::mem::take(&mut h.bufs[h.cur]);
                let ctx = if kind == FrameKind::I {
                    Context::default()
                } else {
                    Context {
                        previous: h.prev.map(|i| h.bufs[i].as_slice()),
                        previous2: h.prev2.map(|i| h.bufs[i].as_slice()),
                        skipped: self.last_iteration.map_or(0, |l| header.skipped_after(l)),
                        ..Context::default()
                    }
                };
                let result = def.decode(body, &ctx, &mut cur);
                h.bufs[h.cur] = cur;
                result.map(|len| (Decoded::Fields, len)).map_err(codec)
            }
            FrameKind::S => {
                let def = header.def(kind).expect("checked by the caller");
                let len = def
                    .decode(body, &Context::default(), &mut self.slow)
                    .map_err(codec)?;
                Ok((Decoded::Fields, len))
            }
            FrameKind::H => {
                let def = header.def(kind).expect("checked by the caller");
                let mut home = std::mem::take(&mut self.home);
                let result = def.decode(body, &Context::default(), &mut home);
                self.home = home;
                result.map(|len| (Decoded::Fields, len)).map_err(codec)
            }
            FrameKind::G => {
                let def = header.def(kind).expect("checked by the caller");
                let ctx = Context {
                    home: Some(&self.home),
                    last_main_time: self.history.previous().map_or(0, |p| p[self.time_index]),
                    ..Context::default()
                };
                let len = def.decode(body, &ctx, &mut self.gps).map_err(codec)?;
                Ok((Decoded::Fields, len))
            }
            FrameKind::E => match Event::decode(body, header.firmware) {
                Ok((event, len)) => Ok((Decoded::Event(event), len)),
                Err(EventError::UnknownId(_)) => Ok((Decoded::UnknownEvent, 1)),
                Err(EventError::Codec(e)) => Err(e.kind),
            },
        }
    }

    /// A complete frame from `start` to `end`: decide whether to trust it.
    fn complete(
        &mut self,
        kind: FrameKind,
        decoded: Decoded,
        start: usize,
        end: usize,
        sink: &mut impl Sink,
    ) {
        match (kind, decoded) {
            (FrameKind::I, _) => self.complete_intra(start, end, sink),
            (FrameKind::P, _) => self.complete_inter(start, end, sink),
            (FrameKind::S, _) => {
                self.accept(start, end);
                self.report.frames.s += 1;
                let frame = self.data_frame(FrameKind::S, start, end, &self.slow, None);
                sink.frame(&frame);
            }
            (FrameKind::H, _) => {
                self.accept(start, end);
                self.home_valid = true;
                self.report.frames.h += 1;
                let frame = self.data_frame(FrameKind::H, start, end, &self.home, None);
                sink.frame(&frame);
            }
            (FrameKind::G, _) => {
                if !self.home_valid {
                    self.reject(DamageReason::NoGpsHome);
                    return;
                }
                self.accept(start, end);
                self.report.frames.g += 1;
                let time = self
                    .gps_time_index
                    .map(|t| (t, self.gps_clock.advance(self.gps[t] as u32)));
                let frame = self.data_frame(FrameKind::G, start, end, &self.gps, time);
                sink.frame(&frame);
            }
            (FrameKind::E, Decoded::Event(event)) => {
                self.accept(start, end);
                self.report.frames.e += 1;
                *self
                    .report
                    .events
                    .entry(event.name().to_owned())
                    .or_default() += 1;
                match event {
                    Event::LoggingResume { iteration, time } => {
                        self.last_iteration = Some(iteration);
                        self.last_time = Some(time);
                    }
                    Event::LogEnd { .. } => {
                        self.report.log_end = true;
                        self.limit = end;
                    }
                    _ => {}
                }
                sink.event(&EventFrame {
                    offset: start as u64,
                    len: end - start,
                    event: &event,
                });
            }
            (FrameKind::E, _) => self.reject(DamageReason::UnknownEvent),
        }
    }

    fn data_frame<'b>(
        &self,
        kind: FrameKind,
        start: usize,
        end: usize,
        values: &'b [i64],
        time: Option<(usize, u64)>,
    ) -> Frame<'b> {
        Frame {
            kind,
            offset: start as u64,
            len: end - start,
            values,
            time,
        }
    }

    fn complete_intra(&mut self, start: usize, end: usize, sink: &mut impl Sink) {
        let (it_index, time_index) = (self.iteration_index, self.time_index);
        let values = &self.history.bufs[self.history.cur];
        let (iteration, time) = (values[it_index] as u32, values[time_index] as u32);
        self.history.push_intra();
        let verdict = match (self.last_iteration, self.last_time) {
            (Some(li), _) if iteration.wrapping_sub(li) >= MAX_ITERATION_JUMP => {
                Err(DamageReason::ImplausibleIteration)
            }
            (_, Some(lt)) if time.wrapping_sub(lt) >= MAX_TIME_JUMP_US => {
                Err(DamageReason::ImplausibleTime)
            }
            _ => Ok(()),
        };
        match verdict {
            Ok(()) => {
                self.stream_valid = true;
                self.report.frames.i += 1;
                self.accept_main(FrameKind::I, start, end, iteration, time, time_index, sink);
            }
            Err(reason) => {
                self.stream_valid = false;
                self.reject(reason);
            }
        }
    }

    fn complete_inter(&mut self, start: usize, end: usize, sink: &mut impl Sink) {
        if !self.stream_valid {
            self.reject(DamageReason::StalePFrame);
            return;
        }
        let (it_index, time_index) = (self.iteration_index, self.time_index);
        let values = &self.history.bufs[self.history.cur];
        let (iteration, time) = (values[it_index] as u32, values[time_index] as u32);
        let verdict = match (self.last_iteration, self.last_time) {
            (Some(li), _) if iteration.wrapping_sub(li) > MAX_ITERATION_JUMP => {
                Err(DamageReason::ImplausibleIteration)
            }
            (_, Some(lt)) if time.wrapping_sub(lt) > MAX_TIME_JUMP_US => {
                Err(DamageReason::ImplausibleTime)
            }
            _ => Ok(()),
        };
        match verdict {
            Ok(()) => {
                self.history.push_inter();
                self.report.frames.p += 1;
                self.accept_main(FrameKind::P, start, end, iteration, time, time_index, sink);
            }
            Err(reason) => {
                self.stream_valid = false;
                self.reject(reason);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn accept_main(
        &mut self,
        kind: FrameKind,
        start: usize,
        end: usize,
        iteration: u32,
        time: u32,
        time_index: usize,
        sink: &mut impl Sink,
    ) {
        self.accept(start, end);
        self.last_iteration = Some(iteration);
        self.last_time = Some(time);
        let time64 = self.main_clock.advance(time);
        self.close_awaiting(iteration, time64);
        self.last_main = Some((iteration, time64));
        let r = &mut self.report;
        r.first_iteration.get_or_insert(iteration);
        r.first_time_us.get_or_insert(time64);
        r.last_iteration = Some(iteration);
        r.last_time_us = Some(time64);
        let values = self.history.previous().expect("just pushed");
        sink.frame(&Frame {
            kind,
            offset: start as u64,
            len: end - start,
            values,
            time: Some((time_index, time64)),
        });
    }

    /// Logged iterations in `[0, n)` under the I/P schedule.
    fn logged_below(&self, n: u64) -> u64 {
        let interval = u64::from(self.header.i_interval);
        let per_interval = u64::from(self.logged_prefix[self.header.i_interval as usize]);
        (n / interval) * per_interval + u64::from(self.logged_prefix[(n % interval) as usize])
    }

    /// Spans since the last trusted main frame learn how much flight they cost.
    fn close_awaiting(&mut self, iteration: u32, time64: u64) {
        let lost = self.last_main.map(|(last, _)| {
            let (a, b) = (u64::from(last), u64::from(iteration));
            let frames = if b > a {
                self.logged_below(b)
                    .saturating_sub(self.logged_below(a + 1))
            } else {
                0
            };
            (frames, b.saturating_sub(a).saturating_sub(1))
        });
        for (n, &i) in self.awaiting_main.iter().enumerate() {
            let span = &mut self.report.corrupt_spans[i];
            span.time_end_us = Some(time64);
            if n == 0
                && let Some((frames, iterations)) = lost
            {
                span.frames_lost = frames;
                span.iterations_lost = iterations;
            }
        }
        self.awaiting_main.clear();
    }

    /// Something at the current position could not be trusted.
    fn reject(&mut self, reason: DamageReason) {
        if reason != DamageReason::UnknownEvent {
            self.stream_valid = false;
        }
        self.gap_reason.get_or_insert(reason);
    }

    /// Bytes `[start, end)` hold a trusted frame.
    fn accept(&mut self, start: usize, end: usize) {
        if start > self.accounted {
            let reason = self.gap_reason.unwrap_or(DamageReason::Garbage);
            self.push_corrupt(self.accounted, start, reason);
        }
        self.gap_reason = None;
        self.push_region(start, end, RegionKind::Frames);
        self.accounted = end;
    }

    fn push_corrupt(&mut self, start: usize, end: usize, reason: DamageReason) {
        self.awaiting_main.push(self.report.corrupt_spans.len());
        self.report.corrupt_spans.push(CorruptSpan {
            start: start as u64,
            end: end as u64,
            reason,
            session: self.bounds.index,
            frames_lost: 0,
            iterations_lost: 0,
            time_start_us: self.last_main.map(|(_, t)| t),
            time_end_us: None,
        });
    }

    /// Add a region, merging it with the previous one of the same kind when they touch.
    fn push_region(&mut self, start: usize, end: usize, kind: RegionKind) {
        if start >= end {
            return;
        }
        if let Some(last) = self.report.regions.last_mut()
            && last.kind == kind
            && last.end == start as u64
        {
            last.end = end as u64;
            return;
        }
        self.report.regions.push(Region {
            start: start as u64,
            end: end as u64,
            kind,
        });
    }

    /// The header is a region, except for damaged lines, which are corrupt spans.
    fn account_header(&mut self) {
        let mut pos = self.bounds.start;
        let data_start = self.accounted;
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
            self.push_region(pos, s, RegionKind::Header);
            self.push_corrupt(s, e, DamageReason::HeaderDamaged);
            pos = e;
        }
        self.push_region(pos, data_start, RegionKind::Header);
        let unusable = self.header.i.is_none() && data_start < self.bounds.end;
        if unusable && self.header.problems.is_empty() {
            self.report
                .header_problems
                .push("the header defines no I frames".into());
        }
    }

    /// Account for what follows the last trusted frame and finish the report.
    fn finish(mut self) -> SessionReport {
        let end = self.bounds.end;
        if self.report.log_end {
            self.push_region(self.limit, end, RegionKind::AfterLogEnd);
        } else if self.accounted < end {
            let pad_start = self.tail_start.max(self.accounted);
            let padding = end - pad_start >= MIN_PADDING;
            let damage_end = if padding { pad_start } else { end };
            if self.accounted < damage_end {
                let reason = self.gap_reason.unwrap_or(DamageReason::Truncated);
                let reason = if reason == DamageReason::Garbage && damage_end == end {
                    DamageReason::Truncated
                } else {
                    reason
                };
                self.push_corrupt(self.accounted, damage_end, reason);
            }
            if padding {
                let kind = if self.file[pad_start] == 0xFF {
                    RegionKind::ErasedFlash
                } else {
                    RegionKind::ZeroFill
                };
                self.push_region(pad_start, end, kind);
            }
        }
        let r = &mut self.report;
        if let (Some(t0), Some(t1)) = (r.first_time_us, r.last_time_us) {
            r.duration_us = Some(t1 - t0);
            if let (Some(i0), Some(i1)) = (r.first_iteration, r.last_iteration)
                && i1 > i0
            {
                r.loop_time_us = Some((t1 - t0) as f64 / f64::from(i1 - i0));
            }
        }
        r.regions.sort_by_key(|g| g.start);
        self.report
    }
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
