//! The ledger of a session: every trusted frame is passed to the sink and counted, and every byte
//! lands in exactly one region or corrupt span of the report.

use super::event::Event;
use super::frame::FrameKind;
use super::group::Item;
use super::header::LoggedCount;
use super::sink::{EventFrame, Frame, Sink};
use crate::report::{
    CorruptSpan, DamageReason, Evidence, RegionKind, SessionReport, SuspectSpan, Trust,
};

/// Turns 32-bit timestamps into a monotonic 64-bit time across rollovers.
#[derive(Debug, Default, Clone, PartialEq)]
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

/// Field positions and the I/P schedule the ledger needs.
pub struct Layout {
    pub iteration_index: usize,
    pub time_index: usize,
    pub gps_time_index: Option<usize>,
    pub logged: LoggedCount,
}

/// A ledger's state between frames (see [`Ledger::state`]).
#[derive(Debug, Clone, PartialEq)]
pub struct State {
    pub accounted: usize,
    gap: Option<DamageReason>,
    refused: u64,
    /// Corrupt spans waiting to learn what they cost.
    pub awaiting: usize,
    pub last_main: Option<(u32, u64)>,
    main_clock: Clock,
    gps_clock: Clock,
    log_end: bool,
}

/// Accounting and reporting for one session.
pub struct Ledger {
    pub report: SessionReport,
    layout: Layout,
    /// End of the bytes accounted for so far.
    pub accounted: usize,
    /// Why the bytes since `accounted` were not trusted (the first reason in file order).
    gap: Option<DamageReason>,
    /// Main frames decoded but not trusted since `accounted`.
    refused: u64,
    /// Corrupt spans still waiting for the next trusted main frame to learn what they cost, with
    /// the main frames each holds that were decoded but not trusted.
    awaiting: Vec<(usize, u64)>,
    last_main: Option<(u32, u64)>,
    main_clock: Clock,
    gps_clock: Clock,
    /// The suspect main frames committed since the last [`Ledger::close_suspect`] (a group's).
    suspect: Option<SuspectRun>,
}

/// Suspect main frames committed in a row: their bytes, how many, and their first and last
/// flight times.
struct SuspectRun {
    start: usize,
    end: usize,
    frames: u64,
    times: (u64, u64),
}

impl Ledger {
    pub fn new(report: SessionReport, layout: Layout, data_start: usize) -> Ledger {
        Ledger {
            report,
            layout,
            accounted: data_start,
            gap: None,
            refused: 0,
            awaiting: Vec::new(),
            last_main: None,
            main_clock: Clock::default(),
            gps_clock: Clock::default(),
            suspect: None,
        }
    }

    /// Note why the bytes from here on are not trusted, unless an earlier reason is known.
    pub fn note_gap(&mut self, reason: DamageReason) {
        self.gap.get_or_insert(reason);
    }

    /// Record a frame: trusted and suspect frames reach the sink, the others (`None`) join the
    /// damage around them.
    pub fn commit(
        &mut self,
        item: &Item,
        values: &[i64],
        trust: Option<Trust>,
        sink: &mut impl Sink,
    ) {
        let Some(trust) = trust else {
            self.gap = self.gap.or(item.gap).or(Some(DamageReason::SuspectGroup));
            self.refused += u64::from(matches!(item.kind, FrameKind::I | FrameKind::P));
            return;
        };
        if item.start > self.accounted {
            let reason = self.gap.or(item.gap).unwrap_or(DamageReason::Garbage);
            self.push_corrupt(self.accounted, item.start, reason);
        }
        self.gap = None;
        self.refused = 0;
        self.push_region(item.start, item.end, RegionKind::Frames);
        self.accounted = item.end;
        let (start, len) = (item.start as u64, item.end - item.start);
        let frames = &mut self.report.frames;
        let time = match item.kind {
            FrameKind::I | FrameKind::P => {
                if item.kind == FrameKind::I {
                    frames.i += 1;
                } else {
                    frames.p += 1;
                }
                let time = self.main_frame(values);
                if trust == Trust::Suspect {
                    self.note_suspect(item, time.1);
                }
                Some(time)
            }
            FrameKind::S => {
                frames.s += 1;
                None
            }
            FrameKind::H => {
                frames.h += 1;
                None
            }
            FrameKind::G => {
                frames.g += 1;
                self.layout
                    .gps_time_index
                    .map(|t| (t, self.gps_clock.advance(values[t] as u32)))
            }
            FrameKind::E => {
                frames.e += 1;
                if let Some(event) = &item.event {
                    *self
                        .report
                        .events
                        .entry(event.name().to_owned())
                        .or_default() += 1;
                    if matches!(event, Event::LogEnd { .. }) {
                        self.report.log_end = true;
                    }
                    sink.event(&EventFrame {
                        offset: start,
                        len,
                        event,
                    });
                }
                return;
            }
        };
        sink.frame(&Frame {
            kind: item.kind,
            offset: start,
            len,
            values,
            time,
            trust,
        });
    }

    /// A suspect main frame at `time`: it joins the run of them.
    fn note_suspect(&mut self, item: &Item, time: u64) {
        let run = self.suspect.get_or_insert(SuspectRun {
            start: item.start,
            end: item.end,
            frames: 0,
            times: (time, time),
        });
        run.end = item.end;
        run.frames += 1;
        run.times.1 = time;
    }

    /// Report the suspect main frames committed since the last call as one span, with what the
    /// rule that doubts them saw.
    pub fn close_suspect(&mut self, evidence: Option<Evidence>) {
        if let (Some(run), Some(evidence)) = (self.suspect.take(), evidence) {
            self.report.suspect_spans.push(SuspectSpan {
                start: run.start as u64,
                end: run.end as u64,
                session: self.report.index,
                frames: run.frames,
                time_start_us: Some(run.times.0),
                time_end_us: Some(run.times.1),
                evidence,
            });
        }
    }

    /// A trusted main frame: its 64-bit time, and what the spans before it cost.
    fn main_frame(&mut self, values: &[i64]) -> (usize, u64) {
        let iteration = values[self.layout.iteration_index] as u32;
        let time = values[self.layout.time_index] as u32;
        let time64 = self.main_clock.advance(time);
        self.close_awaiting(iteration, time64);
        self.last_main = Some((iteration, time64));
        let r = &mut self.report;
        r.first_iteration.get_or_insert(iteration);
        r.first_time_us.get_or_insert(time64);
        r.last_iteration = Some(iteration);
        r.last_time_us = Some(time64);
        (self.layout.time_index, time64)
    }

    /// Logged iterations in `[0, n)` under the I/P schedule.
    fn logged_below(&self, n: u64) -> u64 {
        self.layout.logged.below(n)
    }

    /// The iteration of the `n`-th logged iteration after `after` (`n` ≥ 1), searched below
    /// `below`, which it must be under.
    fn nth_logged_after(&self, after: u64, n: u64, below: u64) -> u64 {
        let base = self.logged_below(after + 1);
        let (mut low, mut high) = (after + 1, below);
        while low < high {
            let mid = low + (high - low) / 2;
            if self.logged_below(mid + 1) - base >= n {
                high = mid;
            } else {
                low = mid + 1;
            }
        }
        low
    }

    /// The spans since the last trusted main frame learn what they cost now that `iteration`
    /// follows. Each is given the main frames it holds that were decoded but not trusted; the
    /// frames lost with no bytes left go to the first. The iterations between the two trusted
    /// frames are shared at the first frame each later span is given.
    fn close_awaiting(&mut self, iteration: u32, time64: u64) {
        if self.awaiting.is_empty() {
            return;
        }
        // Without a trusted main frame before, or when the iteration went back, nothing is known
        // lost: every count below comes out 0.
        let (a, b) = self
            .last_main
            .map_or((0, 0), |(last, _)| (u64::from(last), u64::from(iteration)));
        let total = self
            .logged_below(b)
            .saturating_sub(self.logged_below(a + 1));
        let refused: u64 = self.awaiting.iter().map(|&(_, r)| r).sum();
        let mut left = total;
        let mut from = a + 1;
        for (n, &(i, held)) in self.awaiting.iter().enumerate() {
            let unheld = if n == 0 {
                total.saturating_sub(refused)
            } else {
                0
            };
            let frames = (held + unheld).min(left);
            left -= frames;
            // Where the next span's first lost frame was logged, or the trusted frame after all.
            let to = if left > 0 {
                self.nth_logged_after(a, total - left + 1, b)
            } else {
                b
            };
            let span = &mut self.report.corrupt_spans[i];
            span.time_end_us = Some(time64);
            span.frames_lost = frames;
            span.iterations_lost = to.saturating_sub(from);
            from = to;
        }
        self.awaiting.clear();
    }

    /// Add a corrupt span.
    pub fn push_corrupt(&mut self, start: usize, end: usize, reason: DamageReason) {
        let refused = std::mem::take(&mut self.refused);
        self.awaiting
            .push((self.report.corrupt_spans.len(), refused));
        self.report.corrupt_spans.push(CorruptSpan {
            start: start as u64,
            end: end as u64,
            reason,
            session: self.report.index,
            frames_lost: 0,
            iterations_lost: 0,
            time_start_us: self.last_main.map(|(_, t)| t),
            time_end_us: None,
        });
    }

    /// Add a region (see [`SessionReport::push_region`]).
    pub fn push_region(&mut self, start: usize, end: usize, kind: RegionKind) {
        self.report.push_region(start as u64, end as u64, kind);
    }

    /// What decides how the ledger goes on: all but the report's contents.
    pub fn state(&self) -> State {
        State {
            accounted: self.accounted,
            gap: self.gap,
            refused: self.refused,
            awaiting: self.awaiting.len(),
            last_main: self.last_main,
            main_clock: self.main_clock.clone(),
            gps_clock: self.gps_clock.clone(),
            log_end: self.report.log_end,
        }
    }

    /// Why the bytes since the last trusted frame were not trusted, if any reason is known.
    pub fn pending_gap(&self, scanned: Option<DamageReason>) -> Option<DamageReason> {
        self.gap.or(scanned)
    }
}
