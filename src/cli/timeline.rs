//! What the page's timelines draw, collected while the file decodes by [`Timeline`], a sink whose
//! size does not grow with the file: per session, fixed-size histograms of accepted bytes by
//! offset and of main frames (or DataFlash messages) by flight time, and a bounded list of
//! markers.

use crate::blackbox::Session;
use crate::blackbox::event::Event;
use crate::blackbox::frame::FrameKind;
use crate::blackbox::header::Firmware;
use crate::blackbox::sink::{EventFrame, Frame, Sink};
use crate::dataflash::{self, Message, fmt::Role};

/// Buckets of each histogram.
pub const BUCKETS: usize = 512;
/// Sessions drawn with a timeline; the others are listed only.
pub const MAX_TIMELINES: usize = 64;
/// Markers kept per session.
pub const MAX_MARKERS: usize = 256;

/// Counts over `[origin, origin + BUCKETS * width)`; a value beyond the end doubles the width,
/// merging neighbouring buckets, so any range fits in the same memory.
#[derive(Debug, Clone)]
pub struct Histogram {
    origin: Option<u64>,
    width: u64,
    counts: Box<[u64; BUCKETS]>,
}

impl Histogram {
    /// Counts from `origin`, or from the first value added.
    fn new(origin: Option<u64>) -> Histogram {
        Histogram {
            origin,
            width: 1,
            counts: Box::new([0; BUCKETS]),
        }
    }

    /// Add `n` at `x` (values before the origin count in the first bucket).
    #[inline]
    fn add(&mut self, x: u64, n: u64) {
        let origin = *self.origin.get_or_insert(x);
        let d = x.saturating_sub(origin);
        while d / self.width >= BUCKETS as u64 {
            self.coarsen();
        }
        let bucket = &mut self.counts[(d / self.width) as usize];
        *bucket = bucket.saturating_add(n);
    }

    fn coarsen(&mut self) {
        for i in 0..BUCKETS / 2 {
            self.counts[i] = self.counts[2 * i].saturating_add(self.counts[2 * i + 1]);
        }
        self.counts[BUCKETS / 2..].fill(0);
        self.width *= 2;
    }

    /// The used part: origin, width and the counts up to the last that is not 0 (`None` before
    /// any value).
    pub fn used(&self) -> Option<(u64, u64, &[u64])> {
        let origin = self.origin?;
        let used = self
            .counts
            .iter()
            .rposition(|&c| c > 0)
            .map_or(0, |i| i + 1);
        Some((origin, self.width, &self.counts[..used]))
    }
}

/// The count a full-height bar of `counts` stands for: the 95th percentile of the buckets that
/// hold any, so that a burst in a few buckets (a DataFlash log's parameters at its start) tops
/// out its own bars instead of flattening all the others.
pub fn full_scale(counts: &[u64]) -> u64 {
    let mut held: Vec<u64> = counts.iter().copied().filter(|&c| c > 0).collect();
    if held.is_empty() {
        return 1;
    }
    let at = (held.len() - 1) * 95 / 100;
    *held.select_nth_unstable(at).1
}

/// What a marker on the timeline stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerKind {
    /// The ARM switch went on (or was on when the first flags were logged).
    Arm,
    /// The firmware's disarm event (with its reason), or the ARM switch going off.
    Disarm {
        reason: Option<u32>,
        from_event: bool,
    },
    /// The flight-mode flags changed (`last` is `None` for the flags first seen).
    Mode { flags: u32, last: Option<u32> },
    /// Logging resumed after a pause.
    Resume,
    /// The log-end event (INAV adds the disarm reason).
    LogEnd { disarm_reason: Option<u32> },
    /// Any other event, by name.
    Other(&'static str),
    /// DataFlash `MODE` message.
    DataflashMode(i64),
    /// DataFlash `EV` message other than arm and disarm.
    DataflashEvent(i64),
}

/// A point of interest in a session.
#[derive(Debug, Clone, Copy)]
pub struct Marker {
    pub kind: MarkerKind,
    pub offset: u64,
    /// Flight time; `None` until a main frame gives one.
    pub time: Option<u64>,
}

/// What one session's timeline holds.
#[derive(Debug)]
pub struct Track {
    /// Accepted frame (message) bytes by file offset.
    pub bytes: Histogram,
    /// Accepted main frames (messages with a time) by flight time.
    pub frames: Histogram,
    pub markers: Vec<Marker>,
    pub markers_omitted: u64,
    /// Whether bit 0 of the flight-mode flags is the ARM switch (Betaflight and INAV log the mode
    /// switches there, the ARM box first).
    arm_bit: bool,
    /// Index of `flightModeFlags` in S frames.
    mode_field: Option<usize>,
    /// The session has flight-mode events: S frames then only repeat what they say.
    mode_events: bool,
    flags: Option<u32>,
    armed: Option<bool>,
    /// A disarm read from the flags, not yet confirmed by a disarm event.
    flag_disarm: Option<usize>,
    last_time: Option<u64>,
    /// First marker still waiting for the next main frame's time.
    untimed: Option<usize>,
}

impl Track {
    fn new(origin: u64, arm_bit: bool, mode_field: Option<usize>) -> Track {
        Track {
            bytes: Histogram::new(Some(origin)),
            frames: Histogram::new(None),
            markers: Vec::with_capacity(MAX_MARKERS),
            markers_omitted: 0,
            arm_bit,
            mode_field,
            mode_events: false,
            flags: None,
            armed: None,
            flag_disarm: None,
            last_time: None,
            untimed: None,
        }
    }

    fn mark(&mut self, kind: MarkerKind, offset: u64, time: Option<u64>) -> Option<usize> {
        if self.markers.len() >= MAX_MARKERS {
            self.markers_omitted += 1;
            return None;
        }
        if time.is_none() {
            self.untimed.get_or_insert(self.markers.len());
        }
        self.markers.push(Marker { kind, offset, time });
        Some(self.markers.len() - 1)
    }

    /// A main frame at flight time `time`: markers waiting for a time get it.
    fn timed(&mut self, time: u64) {
        if let Some(first) = self.untimed.take() {
            for marker in &mut self.markers[first..] {
                marker.time.get_or_insert(time);
            }
        }
        self.last_time = Some(time);
        self.frames.add(time, 1);
    }

    /// The flight-mode flags seen at `offset`, from a flight-mode event (with the flags before it)
    /// or from an S frame.
    fn flags_seen(&mut self, flags: u32, event_last: Option<u32>, from_event: bool, offset: u64) {
        if from_event {
            self.mode_events = true;
        } else if self.mode_events {
            return;
        }
        let time = self.last_time;
        let before = self.flags.or(event_last);
        self.flags = Some(flags);
        // Where bit 0 is the ARM switch, the arm and disarm markers tell its changes.
        let other_bits = if self.arm_bit { !1 } else { !0 };
        let changed = match before {
            Some(before) => (before ^ flags) & other_bits != 0,
            None => flags & other_bits != 0 || !self.arm_bit,
        };
        if changed {
            self.mark(
                MarkerKind::Mode {
                    flags,
                    last: before,
                },
                offset,
                time,
            );
        }
        if !self.arm_bit {
            return;
        }
        let on = flags & 1 != 0;
        match (self.armed, on) {
            (Some(true), true) | (Some(false) | None, false) => {}
            (Some(false) | None, true) => {
                self.flag_disarm = None;
                self.mark(MarkerKind::Arm, offset, time);
            }
            (Some(true), false) => {
                self.flag_disarm = self.mark(
                    MarkerKind::Disarm {
                        reason: None,
                        from_event: false,
                    },
                    offset,
                    time,
                );
            }
        }
        self.armed = Some(on);
    }

    /// The firmware's disarm event: it replaces a disarm already read from the flags.
    fn disarm_event(&mut self, reason: u32, offset: u64) {
        let kind = MarkerKind::Disarm {
            reason: Some(reason),
            from_event: true,
        };
        let time = self.last_time;
        match self.flag_disarm.take() {
            Some(i) => {
                self.markers[i] = Marker { kind, offset, time };
                if time.is_none() {
                    self.untimed.get_or_insert(i);
                }
            }
            None => {
                self.mark(kind, offset, time);
            }
        }
        self.armed = Some(false);
    }
}

/// Collects, while a file decodes, what its timelines show: [`Track`]s of at most
/// [`MAX_TIMELINES`] sessions.
#[derive(Debug, Default)]
pub struct Timeline {
    pub tracks: Vec<Track>,
    /// Sessions started (drawn or not).
    sessions: usize,
}

impl Timeline {
    fn current(&mut self) -> Option<&mut Track> {
        if self.sessions > self.tracks.len() {
            return None;
        }
        self.tracks.last_mut()
    }

    fn start(&mut self, track: impl FnOnce() -> Track) {
        self.sessions += 1;
        if self.tracks.len() < MAX_TIMELINES {
            self.tracks.push(track());
        }
    }

    /// A Blackbox session starts.
    pub fn blackbox_session(&mut self, session: &Session) {
        let header = &session.header;
        let arm_bit = matches!(header.firmware, Firmware::Betaflight | Firmware::Inav);
        let mode_field = header
            .def(FrameKind::S)
            .and_then(|d| d.index_of("flightModeFlags"));
        let start = session.bounds.start as u64;
        self.start(|| Track::new(start, arm_bit, mode_field));
    }
}

impl Sink for Timeline {
    #[inline]
    fn frame(&mut self, frame: &Frame<'_>) {
        let Some(track) = self.current() else { return };
        track.bytes.add(frame.offset, frame.len as u64);
        match frame.kind {
            FrameKind::I | FrameKind::P => {
                if let Some((_, time)) = frame.time {
                    track.timed(time);
                }
            }
            FrameKind::S => {
                if let Some(&flags) = track.mode_field.and_then(|f| frame.values.get(f))
                    && (track.flags != Some(flags as u32) || track.armed.is_none())
                {
                    track.flags_seen(flags as u32, None, false, frame.offset);
                }
            }
            _ => {}
        }
    }

    fn event(&mut self, event: &EventFrame<'_>) {
        let Some(track) = self.current() else { return };
        track.bytes.add(event.offset, event.len as u64);
        let (offset, time) = (event.offset, track.last_time);
        match *event.event {
            Event::FlightMode { flags, last_flags } => {
                track.flags_seen(flags, Some(last_flags), true, offset);
            }
            Event::Disarm { reason } => track.disarm_event(reason, offset),
            Event::LoggingResume { .. } => {
                // The time jumps at the next main frame: the marker takes that frame's time.
                if let Some(i) = track.mark(MarkerKind::Resume, offset, None) {
                    track.untimed.get_or_insert(i);
                }
            }
            Event::LogEnd { disarm_reason } => {
                track.mark(MarkerKind::LogEnd { disarm_reason }, offset, time);
            }
            ref other => {
                track.mark(MarkerKind::Other(other.name()), offset, time);
            }
        }
    }
}

impl dataflash::Sink for Timeline {
    #[inline]
    fn message(&mut self, message: &Message<'_>) {
        if self.sessions == 0 {
            self.start(|| Track::new(0, false, None));
        }
        let Some(track) = self.current() else { return };
        track.bytes.add(message.offset, message.bytes.len() as u64);
        let time = message.time_us();
        if let Some(t) = time {
            track.timed(t);
        }
        if message.format.role != Role::Data {
            return;
        }
        // ArduPilot logs arming as EV messages (10 armed, 11 disarmed) and mode changes as MODE.
        let column = |name: &str| {
            let i = message.format.columns.iter().position(|c| c == name)?;
            message.fields().nth(i)?.as_integer()
        };
        let value = |name| column(name).and_then(|v| i64::try_from(v).ok());
        let kind = match message.format.name.as_str() {
            "EV" => match value("Id") {
                Some(10) => MarkerKind::Arm,
                Some(11) => MarkerKind::Disarm {
                    reason: None,
                    from_event: true,
                },
                Some(id) => MarkerKind::DataflashEvent(id),
                None => return,
            },
            "MODE" => match value("Mode") {
                Some(mode) => MarkerKind::DataflashMode(mode),
                None => return,
            },
            _ => return,
        };
        track.mark(kind, message.offset, time.or(track.last_time));
    }

    fn session(&mut self, offset: u64) {
        self.start(|| Track::new(offset, false, None));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_doubles_its_width_and_keeps_every_count() {
        let mut h = Histogram::new(Some(100));
        for x in 100..100 + 3 * BUCKETS as u64 {
            h.add(x, 1);
        }
        let (_, width, counts) = h.used().unwrap();
        assert_eq!(width, 4);
        assert_eq!(counts.iter().sum::<u64>(), 3 * BUCKETS as u64);
        assert!(counts.iter().all(|&c| c == 4 || c == 0));
        // Before the origin counts in the first bucket; a huge value still fits.
        h.add(0, 5);
        h.add(u64::MAX, 1);
        let (_, _, counts) = h.used().unwrap();
        assert_eq!(counts.iter().sum::<u64>(), 3 * BUCKETS as u64 + 6);
        assert!(counts.len() <= BUCKETS);
    }

    #[test]
    fn a_burst_does_not_set_the_full_scale() {
        let mut counts = vec![100; 100];
        counts[0] = 100_000;
        counts[50] = 0;
        assert_eq!(full_scale(&counts), 100);
        // Steady counts: the full scale is their level.
        assert_eq!(full_scale(&[7, 8, 9]), 8);
        assert_eq!(full_scale(&[0, 0]), 1);
        assert_eq!(full_scale(&[]), 1);
    }

    #[test]
    fn histogram_starts_at_its_first_value_when_told_no_origin() {
        let mut h = Histogram::new(None);
        assert!(h.used().is_none());
        h.add(5_000_000, 1);
        h.add(5_000_010, 1);
        let (origin, width, counts) = h.used().unwrap();
        assert_eq!((origin, width), (5_000_000, 1));
        assert_eq!(counts.len(), 11);
    }

    fn track() -> Track {
        Track::new(0, true, Some(0))
    }

    #[test]
    fn arming_is_read_from_bit_zero_and_a_disarm_event_confirms_it() {
        let mut t = track();
        t.flags_seen(1, None, false, 10);
        t.timed(1000);
        t.flags_seen(3, Some(1), true, 20);
        t.flags_seen(2, Some(3), true, 30);
        t.disarm_event(4, 40);
        let kinds: Vec<MarkerKind> = t.markers.iter().map(|m| m.kind).collect();
        // The ARM bit alone makes arm and disarm markers, not mode changes.
        assert_eq!(
            kinds,
            [
                MarkerKind::Arm,
                MarkerKind::Mode {
                    flags: 3,
                    last: Some(1)
                },
                MarkerKind::Disarm {
                    reason: Some(4),
                    from_event: true
                },
            ]
        );
        // Markers logged before the first main frame take its time.
        assert_eq!(t.markers[0].time, Some(1000));
        assert_eq!(t.markers[2].offset, 40);
        // S frames repeat what flight-mode events said: once there are events they are ignored.
        t.flags_seen(5, None, false, 50);
        assert_eq!(t.markers.len(), 3);
        // Without a disarm event, the ARM bit turning off is the disarm.
        let mut t = track();
        t.flags_seen(3, None, false, 10);
        t.flags_seen(2, None, false, 20);
        let kinds: Vec<MarkerKind> = t.markers.iter().map(|m| m.kind).collect();
        assert_eq!(
            kinds,
            [
                MarkerKind::Mode {
                    flags: 3,
                    last: None
                },
                MarkerKind::Arm,
                MarkerKind::Disarm {
                    reason: None,
                    from_event: false
                },
            ]
        );
    }

    #[test]
    fn markers_are_bounded() {
        let mut t = track();
        for i in 0..(MAX_MARKERS as u32 + 10) {
            t.flags_seen(i % 2, None, false, u64::from(i));
        }
        assert_eq!(t.markers.len(), MAX_MARKERS);
        assert!(t.markers_omitted > 0);
    }
}
