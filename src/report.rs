//! What `check` finds in a file: sessions, frame counts, corrupt spans with reasons, and the
//! regions that are not damage. Every byte of a file is in exactly one region or corrupt span.

use crate::periodic::Blocks;
use crate::textmode::Conversion;
use serde::Serialize;
use std::collections::BTreeMap;

/// A flight-controller time (microseconds) as reports write it: seconds to the millisecond.
pub fn seconds(us: u64) -> String {
    format!("{:.3} s", us as f64 / 1e6)
}

/// Which firmware family wrote a log, as far as it tells (a Blackbox header's firmware type and
/// revision; DataFlash logs say `Unknown` here and name their firmware in a message).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Firmware {
    Betaflight,
    Inav,
    Cleanflight,
    Unknown,
}

/// Why a span of bytes could not be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DamageReason {
    /// Bytes that are not the start of any frame.
    Garbage,
    /// A frame decoded, but the byte after it does not start a frame.
    FrameRejectedNextByte,
    /// A frame would be longer than any frame can be.
    FrameTooLong,
    /// A field encoding that no encoder writes (e.g. an over-long varint).
    BadEncoding,
    /// A main frame's loopIteration moved backwards or jumped too far.
    ImplausibleIteration,
    /// A main frame's time moved backwards or jumped too far.
    ImplausibleTime,
    /// A main frame holds a value its field cannot take: a motor output, throttle or battery
    /// voltage beyond the bounds the header implies, a sensor or stick value beyond 16 bits.
    ImplausibleValue,
    /// A P frame whose prediction history was lost, or a GPS frame after damage that could have
    /// taken the main frame its time is predicted from.
    StalePFrame,
    /// A GPS frame with no GPS home frame before it, or one after damage (which may have taken a
    /// home frame) that does not continue the track of the last GPS frame accepted.
    NoGpsHome,
    /// An event id whose payload length is unknown.
    UnknownEvent,
    /// A frame type the header does not define.
    UndefinedFrameType,
    /// The data ends inside a frame.
    Truncated,
    /// A header line that is not `H name:value`, or a header that does not define the frames.
    HeaderDamaged,
    /// A frame in a session copied in text mode (no carriage return is left in it) whose line
    /// feeds could not be told apart from the carriage returns or CR LF pairs they may have been,
    /// or a main frame predicted from one.
    NewlineConverted,
    /// Main frames of an I-frame group that nothing corroborated (an I frame right after damage
    /// with too few P frames decoding from it and no clean I frame after it), whose I frame holds
    /// a value set apart from both neighbouring groups, or after which the next I frame comes
    /// later than the I/P schedule allows (main frames were lost inside the group) or after a time
    /// step far from the loop time (a time error carried on inside the group); or the frames of a
    /// group from a P frame whose value steps away and is taken back by the next I frame (an
    /// error carried on from that P frame).
    SuspectGroup,
    /// A frame holding bytes written over the log at a fixed stride (a download's chunk headers,
    /// see [`crate::periodic::written_over`]): the log's own bytes there are lost.
    WrittenOver,
}

impl DamageReason {
    /// The reason as written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            DamageReason::Garbage => "garbage",
            DamageReason::FrameRejectedNextByte => "frame-rejected-next-byte",
            DamageReason::FrameTooLong => "frame-too-long",
            DamageReason::BadEncoding => "bad-encoding",
            DamageReason::ImplausibleIteration => "implausible-iteration",
            DamageReason::ImplausibleTime => "implausible-time",
            DamageReason::ImplausibleValue => "implausible-value",
            DamageReason::StalePFrame => "stale-p-frame",
            DamageReason::NoGpsHome => "no-gps-home",
            DamageReason::UnknownEvent => "unknown-event",
            DamageReason::UndefinedFrameType => "undefined-frame-type",
            DamageReason::Truncated => "truncated",
            DamageReason::HeaderDamaged => "header-damaged",
            DamageReason::SuspectGroup => "suspect-group",
            DamageReason::NewlineConverted => "newline-converted",
            DamageReason::WrittenOver => "written-over",
        }
    }

    /// The reason in a pilot's words.
    pub fn in_words(self) -> &'static str {
        match self {
            DamageReason::Garbage => "bytes that are no part of the log",
            DamageReason::FrameRejectedNextByte => {
                "bytes lost or changed: the next frame does not start where this one ends"
            }
            DamageReason::FrameTooLong => "a frame longer than any frame can be",
            DamageReason::BadEncoding => "a value written in a way no logger writes",
            DamageReason::ImplausibleIteration => "the loop counter jumps",
            DamageReason::ImplausibleTime => "the clock jumps",
            DamageReason::ImplausibleValue => {
                "a value its field cannot take (motor, throttle, battery, sensor or stick)"
            }
            DamageReason::StalePFrame => "frames predicted from frames that were lost",
            DamageReason::NoGpsHome => "GPS positions with no home to read them from",
            DamageReason::UnknownEvent => "an event whose length is unknown",
            DamageReason::UndefinedFrameType => "a frame type the header does not define",
            DamageReason::Truncated => "the data ends inside a frame",
            DamageReason::HeaderDamaged => "the header is damaged",
            DamageReason::NewlineConverted => {
                "line feeds that may have been carriage returns (a text-mode copy)"
            }
            DamageReason::SuspectGroup => "frames right after damage that nothing confirms",
            DamageReason::WrittenOver => {
                "bytes written over the log at a fixed stride (a download's chunk headers)"
            }
        }
    }
}

/// How far an accepted frame can be trusted. Frames with structural evidence against them
/// (they cannot be read in step) are not accepted at all: they lie in corrupt spans.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trust {
    /// Nothing speaks against the frame.
    #[default]
    Trusted,
    /// Read in step, but its values are in doubt: a value rule fired (see [`Evidence`]).
    Suspect,
}

impl Trust {
    /// The word for the level: `trusted` or `suspect`.
    pub fn as_str(self) -> &'static str {
        match self {
            Trust::Trusted => "trusted",
            Trust::Suspect => "suspect",
        }
    }
}

/// Which accepted frames an export or a salvaged log holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Keep {
    /// Trusted and suspect frames (suspect ones marked where the output can say so).
    #[default]
    All,
    /// Trusted frames only (`--drop-suspect`).
    Trusted,
}

impl Keep {
    /// What `--drop-suspect` (`drop`) asks to keep.
    pub fn dropping_suspect(drop: bool) -> Keep {
        if drop { Keep::Trusted } else { Keep::All }
    }

    /// Whether a frame of `trust` is kept.
    pub fn keeps(self, trust: Trust) -> bool {
        self == Keep::All || trust == Trust::Trusted
    }
}

/// The rule behind a [`SuspectSpan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// A group's I frame steps away from the group before it, and the next I frame takes the
    /// step back, by far more than the field changes inside the groups.
    IFrameOffset,
    /// A field steps away at a P frame and the next I frame takes it back, by far more than the
    /// field's recent motion.
    PFrameOffset,
    /// Main frames were lost, or the time drifted, later in the I frame's group: the damage may
    /// have begun inside the I frame, which still ended where a frame starts.
    DamageAfterIFrame,
    /// A DataFlash float far outside every value its column has held in the log.
    ValueRange,
    /// NaN or an infinity in a DataFlash float column that held only finite values.
    NotANumber,
    /// A DataFlash value its unit cannot take (a latitude past 90°, say).
    PhysicalRange,
    /// In a text-mode copy, a line feed that may have been a carriage return, where the frames
    /// around it show neither reading: the values read are the reading that joins them better.
    LineFeed,
    /// The header of a log that salvage wrote lists the frame among those it kept as suspect
    /// (evidence that writing the log may have removed, such as a line feed's reading).
    ListedSuspect,
    /// The frame holds bytes written over the log at a fixed stride (a download's chunk
    /// headers), or is predicted from one that does: the values read from the log's bytes lost
    /// under them are off.
    WrittenOver,
}

impl Rule {
    /// The rule as written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::IFrameOffset => "i-frame-offset",
            Rule::PFrameOffset => "p-frame-offset",
            Rule::DamageAfterIFrame => "damage-after-i-frame",
            Rule::ValueRange => "value-range",
            Rule::NotANumber => "not-a-number",
            Rule::PhysicalRange => "physical-range",
            Rule::LineFeed => "line-feed",
            Rule::ListedSuspect => "listed-suspect",
            Rule::WrittenOver => "written-over",
        }
    }
}

/// What a value rule saw.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    pub rule: Rule,
    /// The field whose values are in doubt, when the rule looks at one.
    pub field: Option<String>,
    /// The step (or fitted error) the rule measured.
    pub offset: i64,
    /// What the step had to reach for the rule to fire.
    pub threshold: i64,
    /// `offset / threshold` in magnitude: 1 at the threshold.
    pub score: f64,
}

impl Evidence {
    /// Evidence of `rule` on `field`, scored.
    pub fn new(rule: Rule, field: Option<String>, offset: i64, threshold: i64) -> Evidence {
        let score = offset.unsigned_abs() as f64 / threshold.unsigned_abs().max(1) as f64;
        Evidence {
            rule,
            field,
            offset,
            threshold,
            score: (score * 100.0).round() / 100.0,
        }
    }

    /// Evidence of a rule that measures nothing, only sees (score 1).
    pub fn seen(rule: Rule, field: Option<String>) -> Evidence {
        Evidence {
            rule,
            field,
            offset: 0,
            threshold: 0,
            score: 1.0,
        }
    }
}

/// Frames (or DataFlash messages) read in step whose values are in doubt: kept in exports and
/// salvage, marked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuspectSpan {
    /// From the first suspect frame's start to the last one's end (half-open, absolute).
    pub start: u64,
    pub end: u64,
    /// Session the span belongs to (1-based).
    pub session: usize,
    /// Main frames (Blackbox) or messages (DataFlash) in doubt.
    pub frames: u64,
    /// Flight time (µs, 64-bit monotonic) of the first and last suspect main frames; the
    /// `TimeUS` of the first and last suspect messages.
    pub time_start_us: Option<u64>,
    pub time_end_us: Option<u64>,
    pub evidence: Evidence,
}

/// Bytes that are not damage, by what they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RegionKind {
    /// Session header lines.
    Header,
    /// Accepted frames.
    Frames,
    /// Bytes before the first session (other users of the storage).
    NonLogData,
    /// Bytes after a log-end event.
    AfterLogEnd,
    /// Erased flash (0xFF) at the end of a session.
    ErasedFlash,
    /// Zero bytes at the end of a session.
    ZeroFill,
    /// The last frame or message, cut short where logging stopped (power lost, the file copied
    /// while written), right after the last one read.
    CutShort,
    /// Messages of an earlier log after the end of this one (DataFlash: space the logger had
    /// preallocated or not erased; their TimeUS jumps back and the messages after agree).
    OldData,
    /// DataFlash messages of a type whose FMT is lost: intact, stepped over by the length their
    /// headers' spacing shows, unreadable without a definition (`--fmt-from` gives one). The
    /// file they are in is damaged.
    UndefinedType,
    /// Blackbox frame data before the first session, whose header is lost with the start of the
    /// log: intact frames that cannot be read without one (`salvage` gives it one from bbcheck's
    /// library, or `--header-from` from a donor). The file it is in is damaged.
    HeaderLost,
}

/// A half-open byte range `[start, end)` with what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Region {
    pub start: u64,
    pub end: u64,
    pub kind: RegionKind,
}

/// A damaged byte range: half-open, absolute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CorruptSpan {
    pub start: u64,
    pub end: u64,
    /// The first problem found in the span.
    pub reason: DamageReason,
    /// Session the span belongs to (1-based).
    pub session: usize,
    /// Main frames the I/P schedule says were logged in the span but could not be trusted. When
    /// trusted S, G, H or E frames split the damage between two trusted main frames into several
    /// spans, each holds the untrusted main frames decoded from its bytes, and the first also
    /// those that left no bytes to decode.
    pub frames_lost: u64,
    /// Loop iterations between the last trusted main frame before the span and the first after,
    /// shared between such spans where the first frame each later span holds was logged.
    pub iterations_lost: u64,
    /// Flight time (µs, 64-bit monotonic) of the last trusted main frame before the span.
    pub time_start_us: Option<u64>,
    /// Flight time of the first trusted main frame after the span.
    pub time_end_us: Option<u64>,
}

/// Frames accepted, by type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct FrameCounts {
    #[serde(rename = "I")]
    pub i: u64,
    #[serde(rename = "P")]
    pub p: u64,
    #[serde(rename = "S")]
    pub s: u64,
    #[serde(rename = "G")]
    pub g: u64,
    #[serde(rename = "H")]
    pub h: u64,
    #[serde(rename = "E")]
    pub e: u64,
}

impl FrameCounts {
    /// Add the frames counted from `then` to `now`.
    pub fn add_since(&mut self, now: &FrameCounts, then: &FrameCounts) {
        let since = |a: u64, b: u64| a.saturating_sub(b);
        self.i += since(now.i, then.i);
        self.p += since(now.p, then.p);
        self.s += since(now.s, then.s);
        self.g += since(now.g, then.g);
        self.h += since(now.h, then.h);
        self.e += since(now.e, then.e);
    }
}

/// What one session holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionReport {
    /// 1-based, in file order.
    pub index: usize,
    pub start: u64,
    pub end: u64,
    /// First byte after the header.
    pub data_start: u64,
    pub firmware: Firmware,
    pub firmware_revision: Option<String>,
    pub craft_name: Option<String>,
    /// Blackbox: where the header came from, when salvage gave the session one from bbcheck's
    /// header library (its `Header from` line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_from: Option<String>,
    pub frames: FrameCounts,
    /// Accepted events by name.
    pub events: BTreeMap<String, u64>,
    pub first_iteration: Option<u32>,
    pub last_iteration: Option<u32>,
    pub first_time_us: Option<u64>,
    pub last_time_us: Option<u64>,
    pub duration_us: Option<u64>,
    /// Mean loop time measured from accepted main frames.
    pub loop_time_us: Option<f64>,
    /// Whether the session ends with a log-end event.
    pub log_end: bool,
    pub header_problems: Vec<String>,
    pub corrupt_spans: Vec<CorruptSpan>,
    pub suspect_spans: Vec<SuspectSpan>,
    pub regions: Vec<Region>,
}

impl SessionReport {
    /// Derive the flight's duration and mean loop time from its first and last main frames, and
    /// put the regions in file order.
    pub fn settle(&mut self) {
        if let (Some(t0), Some(t1)) = (self.first_time_us, self.last_time_us) {
            self.duration_us = Some(t1.saturating_sub(t0));
            if let (Some(i0), Some(i1)) = (self.first_iteration, self.last_iteration)
                && i1 > i0
            {
                self.loop_time_us = Some(t1.saturating_sub(t0) as f64 / f64::from(i1 - i0));
            }
        }
        self.regions.sort_by_key(|g| g.start);
    }

    /// Add a region after the others, merged with the last one when it has the same kind and
    /// touches it; an empty one is left out.
    pub fn push_region(&mut self, start: u64, end: u64, kind: RegionKind) {
        if start >= end {
            return;
        }
        match self.regions.last_mut() {
            Some(last) if last.kind == kind && last.end == start => last.end = end,
            _ => self.regions.push(Region { start, end, kind }),
        }
    }
}

impl SessionReport {
    /// Whether nothing in the session is damaged: no corrupt span, and no bytes left unreadable
    /// because their definitions were lost.
    pub fn is_clean(&self) -> bool {
        self.corrupt_spans.is_empty() && !self.regions.iter().any(|r| r.kind.is_unreadable())
    }

    /// The session's verdict: `clean`, `suspect` or `damaged`.
    pub fn verdict(&self) -> &'static str {
        verdict(self.is_clean(), &self.suspect_spans)
    }
}

impl RegionKind {
    /// Whether the region holds intact bytes that cannot be read because what defines them was
    /// lost (a file holding one is damaged).
    pub fn is_unreadable(self) -> bool {
        matches!(self, RegionKind::UndefinedType | RegionKind::HeaderLost)
    }
}

/// A verdict: `damaged` unless `clean`, then `suspect` when values are in doubt.
fn verdict(clean: bool, suspect: &[SuspectSpan]) -> &'static str {
    match (clean, suspect.is_empty()) {
        (false, _) => "damaged",
        (true, false) => "suspect",
        (true, true) => "clean",
    }
}

/// What one file holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileReport {
    pub path: String,
    pub size: u64,
    pub format: &'static str,
    /// `clean`, `suspect` (every byte read in step, some values in doubt) or `damaged`.
    pub verdict: &'static str,
    pub sessions: Vec<SessionReport>,
    /// Regions outside every session (bytes before the first one).
    pub regions: Vec<Region>,
    /// Every corrupt span of every session, in file order.
    pub corrupt_spans: Vec<CorruptSpan>,
    /// Every suspect span of every session, in file order.
    pub suspect_spans: Vec<SuspectSpan>,
    /// How the file was copied in text mode, when it was read restored: offsets, `size` and
    /// every span are the restored log's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_mode_copy: Option<TextModeCopy>,
    /// The blocks inserted at a fixed stride that were taken out, when the file was read without
    /// them: offsets, `size` and every span are the log's without them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub periodic_insertions: Option<Box<Blocks>>,
    /// Blocks at a fixed stride written over the log (a download's chunk headers): the frames
    /// that hold some of them are refused (`written-over`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub periodic_overwrites: Option<Box<Blocks>>,
}

/// A text-mode copy read as it was before the copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TextModeCopy {
    pub conversion: Conversion,
    /// The size of the file as copied.
    pub input_size: u64,
}

impl FileReport {
    /// The byte ranges of the corrupt spans, as `(start, end)`.
    pub fn corrupt_ranges(&self) -> Vec<(u64, u64)> {
        self.corrupt_spans
            .iter()
            .map(|s| (s.start, s.end))
            .collect()
    }

    /// Build the file report from its sessions.
    pub fn new(
        path: String,
        size: u64,
        sessions: Vec<SessionReport>,
        regions: Vec<Region>,
    ) -> Self {
        let corrupt_spans: Vec<CorruptSpan> = sessions
            .iter()
            .flat_map(|s| s.corrupt_spans.iter().cloned())
            .collect();
        let suspect_spans: Vec<SuspectSpan> = sessions
            .iter()
            .flat_map(|s| s.suspect_spans.iter().cloned())
            .collect();
        // The file's spans are its sessions'.
        let clean = sessions.iter().all(SessionReport::is_clean)
            && !regions.iter().any(|r| r.kind.is_unreadable());
        FileReport {
            path,
            size,
            format: "blackbox",
            verdict: verdict(clean, &suspect_spans),
            sessions,
            regions,
            corrupt_spans,
            suspect_spans,
            text_mode_copy: None,
            periodic_insertions: None,
            periodic_overwrites: None,
        }
    }

    /// Whether nothing in the file is damaged (see [`SessionReport::is_clean`]).
    pub fn is_clean(&self) -> bool {
        self.corrupt_spans.is_empty()
            && self.sessions.iter().all(SessionReport::is_clean)
            && !self.regions.iter().any(|r| r.kind.is_unreadable())
    }
}

impl FileReport {
    /// Verify that regions and corrupt spans tile `[0, size)` exactly: sorted, disjoint, every byte
    /// counted once. Returns the first violation found.
    pub fn check_accounting(&self) -> Result<(), String> {
        let mut pieces: Vec<(u64, u64, &str)> = self
            .regions
            .iter()
            .chain(self.sessions.iter().flat_map(|s| s.regions.iter()))
            .map(|r| (r.start, r.end, "region"))
            .chain(
                self.corrupt_spans
                    .iter()
                    .map(|c| (c.start, c.end, c.reason.as_str())),
            )
            .collect();
        pieces.sort_unstable();
        let mut pos = 0;
        for (start, end, what) in pieces {
            if start >= end {
                return Err(format!("empty or reversed {what} [{start}..{end})"));
            }
            if start != pos {
                return Err(format!("{what} starts at {start}, expected {pos}"));
            }
            pos = end;
        }
        if pos != self.size {
            return Err(format!(
                "accounting ends at {pos}, file has {} bytes",
                self.size
            ));
        }
        let spans = &self.corrupt_spans;
        if spans.windows(2).any(|w| w[0].end > w[1].start) {
            return Err("corrupt spans are not sorted and disjoint".into());
        }
        Ok(())
    }
}
