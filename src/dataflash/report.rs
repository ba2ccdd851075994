//! What `check` finds in a DataFlash log, in the shared report types: one session per log in the
//! file (a restarted or appended log starts another), accepted messages as regions, the bytes
//! between them as corrupt spans, trailing padding as a region; plus what only DataFlash has
//! (message counts per type, the firmware's first MSG, messages the logger dropped).

use super::fmt::{FormatProblem, Role};
use super::message::{Message, Text};
use super::reader::{Scan, Sink, TruncatedMessage, UndefinedType};
use crate::report::{
    CorruptSpan, DamageReason, FileReport, Firmware, FrameCounts, Region, RegionKind,
    SessionReport, SuspectSpan, seconds,
};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{self, Write};

/// The `format` of DataFlash reports.
pub const FORMAT_NAME: &str = "ardupilot-dataflash";

/// What one session (log) holds.
#[derive(Debug, Default)]
pub struct SessionStats {
    /// Text of the first MSG message that names a vehicle (else of the first MSG).
    pub first_msg: Option<String>,
    pub first_time_us: Option<u64>,
    pub last_time_us: Option<u64>,
}

/// Collects, while messages are read, what the report says about the flight.
#[derive(Debug, Default)]
pub struct Observer {
    /// What each session holds, in file order.
    pub sessions: Vec<SessionStats>,
    /// The highest `Dp` (messages the logger dropped) of the DSF messages.
    pub logger_dropped: Option<u64>,
    /// Per gap between messages: where it starts, the last `TimeUS` before it and the first after
    /// it (the flight time a corrupt span covers).
    gaps: Vec<(u64, Option<u64>, Option<u64>)>,
    /// End of the last message seen, and the last `TimeUS` seen.
    last_end: Option<u64>,
    last_time: Option<u64>,
}

impl Observer {
    /// The `TimeUS` before and after a corrupt span starting at `start`.
    fn times_around(&self, start: u64) -> (Option<u64>, Option<u64>) {
        match self.gaps.binary_search_by_key(&start, |g| g.0) {
            Ok(i) => (self.gaps[i].1, self.gaps[i].2),
            Err(_) if self.last_end.is_some_and(|end| start >= end) => (self.last_time, None),
            Err(_) => (None, None),
        }
    }
}

impl Sink for Observer {
    #[inline]
    fn message(&mut self, message: &Message<'_>) {
        if self.sessions.is_empty() {
            self.sessions.push(SessionStats::default());
        }
        let stats = self.sessions.last_mut().expect("one session at least");
        let time = message.clock_us();
        if let Some(t) = time {
            stats.first_time_us.get_or_insert(t);
            stats.last_time_us = Some(t);
        }
        // Keep the times on both sides of each gap between messages.
        if self.last_end.unwrap_or(0) != message.offset {
            self.gaps
                .push((self.last_end.unwrap_or(0), self.last_time, None));
        }
        if let Some(t) = time {
            if let Some(gap) = self.gaps.last_mut().filter(|g| g.2.is_none()) {
                gap.2 = Some(t);
            }
            self.last_time = Some(t);
        }
        self.last_end = Some(message.offset + message.bytes.len() as u64);
        match message.format.role {
            // The firmware's MSG: the first that names a vehicle (a plane may log "Ground start"
            // before it), else the first.
            Role::Msg
                if stats
                    .first_msg
                    .as_deref()
                    .is_none_or(|m| vehicle_of(m).is_none()) =>
            {
                let text = message
                    .fields()
                    .find_map(|v| v.as_text())
                    .map(|t| Text::new(t).to_string());
                if stats.first_msg.is_none() || text.as_deref().and_then(vehicle_of).is_some() {
                    stats.first_msg = text;
                }
            }
            Role::LoggerStats => {
                let dropped = message
                    .format
                    .columns
                    .iter()
                    .position(|c| c == "Dp")
                    .and_then(|i| message.fields().nth(i))
                    .and_then(|v| v.as_integer())
                    .and_then(|v| u64::try_from(v).ok());
                if let Some(d) = dropped {
                    self.logger_dropped = Some(self.logger_dropped.map_or(d, |m| m.max(d)));
                }
            }
            _ => {}
        }
    }

    fn session(&mut self, _offset: u64) {
        self.sessions.push(SessionStats::default());
    }
}

/// What only a DataFlash report has.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataflashSummary {
    /// The vehicle the first MSG names (`Copter`, `Plane`, `Rover`, `Sub`, `Tracker`, `Blimp`).
    pub vehicle: Option<String>,
    /// The text of the first MSG (firmware and version).
    pub firmware: Option<String>,
    /// Accepted messages and the bytes they take.
    pub messages: u64,
    pub message_bytes: u64,
    /// End of the last accepted message.
    pub end_offset: u64,
    /// Accepted messages per type name.
    pub counts: BTreeMap<String, u64>,
    /// Types defined at the end of the file.
    pub formats: usize,
    /// FMT messages that define a type badly.
    pub format_problems: Vec<FormatProblem>,
    pub format_problems_omitted: u64,
    /// Headers of defined types whose body could not be read (their type's FMT is inconsistent).
    pub unreadable_headers: u64,
    /// Damaged ranges beyond the first [`MAX_GAPS`](super::reader::MAX_GAPS), merged into the
    /// last corrupt span (which then also covers the messages between them).
    pub spans_merged: u64,
    /// The message the file ends inside.
    pub truncated_last_message: Option<TruncatedMessage>,
    /// Types whose FMT is lost, their messages stepped over by the length their headers show.
    pub undefined_types: Vec<UndefinedType>,
    /// Messages the logger itself dropped before writing, by the highest `Dp` of its DSF
    /// messages: flight data lost although no byte of the file is damaged.
    pub logger_dropped: Option<u64>,
    /// Messages of a text-mode copy whose line feeds their columns' last values decided (each
    /// may have been a carriage return): trusted as they read.
    pub line_feeds_read: u64,
}

/// A `check` report of a DataFlash log: the shared report with the DataFlash summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataflashReport {
    #[serde(flatten)]
    pub file: FileReport,
    pub dataflash: DataflashSummary,
}

impl DataflashReport {
    /// Whether nothing in the file is damaged.
    pub fn is_clean(&self) -> bool {
        self.file.is_clean()
    }
}

/// The vehicle a firmware message names, by the rules pymavlink uses.
pub fn vehicle_of(text: &str) -> Option<&'static str> {
    if text.contains("Rover") {
        Some("Rover")
    } else if text.contains("Plane") {
        Some("Plane")
    } else if text.contains("Copter") {
        Some("Copter")
    } else if text.starts_with("Antenna") {
        Some("Tracker")
    } else if text.contains("ArduSub") {
        Some("Sub")
    } else if text.contains("Blimp") {
        Some("Blimp")
    } else {
        None
    }
}

fn span(start: u64, end: u64, reason: DamageReason) -> CorruptSpan {
    CorruptSpan {
        start,
        end,
        reason,
        session: 1,
        frames_lost: 0,
        iterations_lost: 0,
        time_start_us: None,
        time_end_us: None,
    }
}

/// Regions and corrupt spans tiling `[0, data.len())`.
fn account(data: &[u8], scan: &Scan) -> (Vec<Region>, Vec<CorruptSpan>) {
    let mut regions = Vec::new();
    let mut spans = Vec::new();
    let mut cursor = 0u64;
    let messages = |start: u64, end: u64, regions: &mut Vec<Region>| {
        if start < end {
            regions.push(Region {
                start,
                end,
                kind: RegionKind::Frames,
            });
        }
    };
    // Gaps (damage), old data and messages of types no FMT defines, in file order, with accepted
    // messages between them. (Beyond their bounds, gaps and undefined runs are merged over what
    // lies between: a later one starts where the one before ended at the earliest.)
    enum Mark {
        Gap(DamageReason),
        Region(RegionKind),
    }
    let mut marks: Vec<(u64, u64, Mark)> = scan
        .gaps
        .iter()
        .map(|g| (g.start, g.end, Mark::Gap(g.reason)))
        .chain(
            scan.old_data
                .iter()
                .map(|&(start, end)| (start, end, Mark::Region(RegionKind::OldData))),
        )
        .chain(
            scan.undefined
                .iter()
                .map(|&(start, end)| (start, end, Mark::Region(RegionKind::UndefinedType))),
        )
        .collect();
    marks.sort_by_key(|m| m.0);
    for (start, end, mark) in marks {
        let start = start.max(cursor);
        if start >= end {
            continue;
        }
        messages(cursor, start, &mut regions);
        match mark {
            Mark::Gap(reason) => spans.push(span(start, end, reason)),
            Mark::Region(kind) => regions.push(Region { start, end, kind }),
        }
        cursor = end;
    }
    messages(cursor, scan.end_offset, &mut regions);
    let len = data.len() as u64;
    let tail_start = scan.end_offset;
    match &scan.truncated {
        // Logging stopped inside the message right after the last one read: a normal end.
        Some(cut) if cut.offset == tail_start => regions.push(Region {
            start: cut.offset,
            end: len,
            kind: RegionKind::CutShort,
        }),
        Some(cut) => {
            if tail_start < cut.offset {
                spans.push(span(tail_start, cut.offset, DamageReason::Garbage));
            }
            spans.push(span(cut.offset, len, DamageReason::Truncated));
        }
        None if tail_start < len => {
            let tail = usize::try_from(tail_start)
                .ok()
                .and_then(|t| data.get(t..))
                .unwrap_or_default();
            let padding = match tail.last() {
                Some(&fill @ (0x00 | 0xFF)) => {
                    let run = tail.iter().rev().take_while(|&&b| b == fill).count() as u64;
                    let kind = if fill == 0xFF {
                        RegionKind::ErasedFlash
                    } else {
                        RegionKind::ZeroFill
                    };
                    Some((len - run, kind))
                }
                _ => None,
            };
            let garbage_end = padding.map_or(len, |(start, _)| start);
            if tail_start < garbage_end {
                spans.push(span(tail_start, garbage_end, DamageReason::Garbage));
            }
            if let Some((start, kind)) = padding {
                regions.push(Region {
                    start,
                    end: len,
                    kind,
                });
            }
        }
        None => {}
    }
    (regions, spans)
}

/// Build the report of a scanned file.
pub fn build(path: &str, data: &[u8], scan: Scan, observer: Observer) -> DataflashReport {
    let (regions, mut corrupt_spans) = account(data, &scan);
    for span in &mut corrupt_spans {
        // Types are not written in strict time order: the range is whichever comes first.
        let (before, after) = observer.times_around(span.start);
        (span.time_start_us, span.time_end_us) = match (before, after) {
            (Some(a), Some(b)) => (Some(a.min(b)), Some(a.max(b))),
            other => other,
        };
    }
    let size = data.len() as u64;
    let mut header_problems: Vec<String> = scan
        .problems
        .iter()
        .map(ToString::to_string)
        .chain(scan.undefined_types.iter().map(ToString::to_string))
        .collect();
    // Sessions: from each start to the next; regions split where a session starts.
    let bounds: Vec<(u64, u64)> = scan
        .sessions
        .iter()
        .zip(scan.sessions.iter().skip(1).chain([&size]))
        .map(|(&a, &b)| (a, b))
        .collect();
    let mut sessions = Vec::with_capacity(bounds.len());
    for (i, &(start, end)) in bounds.iter().enumerate() {
        let stats = observer.sessions.get(i);
        let first_time_us = stats.and_then(|s| s.first_time_us);
        let last_time_us = stats.and_then(|s| s.last_time_us);
        let session_regions = regions
            .iter()
            .filter(|r| r.start < end && start < r.end)
            .map(|r| Region {
                start: r.start.max(start),
                end: r.end.min(end),
                kind: r.kind,
            })
            .collect();
        let session_spans = corrupt_spans
            .iter()
            .filter(|c| c.start < end && start < c.end)
            .map(|c| CorruptSpan {
                start: c.start.max(start),
                end: c.end.min(end),
                session: i + 1,
                ..c.clone()
            })
            .collect();
        sessions.push(SessionReport {
            index: i + 1,
            start,
            end,
            data_start: start,
            firmware: Firmware::Unknown,
            firmware_revision: stats.and_then(|s| s.first_msg.clone()),
            craft_name: None,
            header_from: None,
            frames: FrameCounts::default(),
            events: BTreeMap::new(),
            first_iteration: None,
            last_iteration: None,
            first_time_us,
            last_time_us,
            duration_us: first_time_us
                .zip(last_time_us)
                .and_then(|(a, b)| b.checked_sub(a)),
            loop_time_us: None,
            log_end: false,
            // Format problems are the file's; the first session lists them.
            header_problems: if i == 0 {
                std::mem::take(&mut header_problems)
            } else {
                Vec::new()
            },
            corrupt_spans: session_spans,
            suspect_spans: scan
                .suspects
                .iter()
                .filter(|r| start <= r.start && r.start < end)
                .map(|r| SuspectSpan {
                    start: r.start,
                    end: r.end,
                    session: i + 1,
                    frames: r.messages,
                    time_start_us: r.first_time_us,
                    time_end_us: r.last_time_us,
                    evidence: r.evidence.clone(),
                })
                .collect(),
            regions: session_regions,
        });
    }
    let first_msg = observer.sessions.first().and_then(|s| s.first_msg.clone());
    let mut file = FileReport::new(path.to_owned(), size, sessions, Vec::new());
    file.format = FORMAT_NAME;
    let summary = DataflashSummary {
        vehicle: first_msg.as_deref().and_then(vehicle_of).map(str::to_owned),
        firmware: first_msg,
        messages: scan.messages,
        message_bytes: scan.message_bytes,
        end_offset: scan.end_offset,
        counts: scan.counts,
        formats: scan.formats.iter().count(),
        format_problems: scan.problems,
        format_problems_omitted: scan.problems_omitted,
        unreadable_headers: scan.unreadable_headers,
        spans_merged: scan.gaps_merged,
        truncated_last_message: scan.truncated,
        undefined_types: scan.undefined_types,
        logger_dropped: observer.logger_dropped,
        line_feeds_read: scan.line_feeds_read,
    };
    DataflashReport {
        file,
        dataflash: summary,
    }
}

/// The human summary of a DataFlash report (without its corrupt spans, which the caller lists).
pub fn write_summary(out: &mut impl Write, report: &DataflashReport) -> io::Result<()> {
    let file = &report.file;
    let df = &report.dataflash;
    writeln!(
        out,
        "{}: {} bytes, ArduPilot DataFlash: {}",
        file.path, file.size, file.verdict
    )?;
    match (&df.firmware, &df.vehicle) {
        (Some(firmware), Some(vehicle)) => writeln!(out, "  firmware: {firmware} ({vehicle})")?,
        (Some(firmware), None) => writeln!(out, "  firmware: {firmware}")?,
        (None, _) => writeln!(out, "  firmware: unknown (no MSG message)")?,
    }
    write!(
        out,
        "  messages: {} of {} types in {} bytes; {} formats defined",
        df.messages,
        df.counts.len(),
        df.message_bytes,
        df.formats
    )?;
    let times = |s: &SessionReport| match (s.first_time_us, s.last_time_us) {
        (Some(a), Some(b)) => format!("TimeUS {} – {}", seconds(a), seconds(b)),
        _ => "no TimeUS".to_owned(),
    };
    match file.sessions.as_slice() {
        [only] => writeln!(out, "; {}", times(only))?,
        sessions => {
            writeln!(out, "; {} logs", sessions.len())?;
            for s in sessions {
                let firmware = s.firmware_revision.as_deref().unwrap_or("unknown firmware");
                writeln!(
                    out,
                    "  log {} [{}..{}): {firmware}; {}",
                    s.index,
                    s.start,
                    s.end,
                    times(s)
                )?;
            }
        }
    }
    let counts: Vec<String> = df
        .counts
        .iter()
        .map(|(name, count)| format!("{name} {count}"))
        .collect();
    for line in counts.chunks(8) {
        writeln!(out, "    {}", line.join(", "))?;
    }
    for problem in &df.format_problems {
        writeln!(out, "  format: {problem}")?;
    }
    if df.format_problems_omitted > 0 {
        writeln!(
            out,
            "  format: {} more problems not listed",
            df.format_problems_omitted
        )?;
    }
    for undefined in &df.undefined_types {
        writeln!(out, "  format: {undefined}")?;
    }
    if df.unreadable_headers > 0 {
        writeln!(
            out,
            "  {} message headers of inconsistently defined types skipped",
            df.unreadable_headers
        )?;
    }
    if let Some(dropped) = df.logger_dropped.filter(|&d| d > 0) {
        writeln!(
            out,
            "  the logger dropped {dropped} messages before writing them (DSF Dp)"
        )?;
    }
    if df.line_feeds_read > 0 {
        writeln!(
            out,
            "  {} messages holding line feeds read by their columns' last values and the clock",
            df.line_feeds_read
        )?;
    }
    if df.spans_merged > 0 {
        writeln!(
            out,
            "  {} more damaged ranges merged into the last corrupt span",
            df.spans_merged
        )?;
    }
    for session in &file.sessions {
        for region in &session.regions {
            let what = match region.kind {
                RegionKind::ErasedFlash => "erased flash (0xFF)",
                RegionKind::ZeroFill => "zero fill",
                _ => continue,
            };
            writeln!(
                out,
                "  padding [{}..{}) {} bytes: {what}",
                region.start,
                region.end,
                region.end - region.start
            )?;
        }
    }
    if let Some(cut) = &df.truncated_last_message {
        match (&cut.name, cut.declared_length) {
            (Some(name), Some(declared)) => writeln!(
                out,
                "  stops inside its last message: {name} at {}, {} of {declared} bytes",
                cut.offset, cut.bytes_present
            )?,
            _ => writeln!(
                out,
                "  stops inside its last message at {}: {} header bytes",
                cut.offset, cut.bytes_present
            )?,
        }
    }
    Ok(())
}
