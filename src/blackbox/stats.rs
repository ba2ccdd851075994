//! The statistics `blackbox_decode` prints after each session (`export --stats`), in its layout,
//! counted from the frames bbcheck reads: frames and bytes per type, loop time, data rate, and
//! the iterations the session is missing or never logged.

use super::Session;
use super::event::Event;
use super::export::csv::Flavour;
use super::frame::FrameKind;
use super::header::LoggedCount;
use super::sink::{EventFrame, Frame, Sink};
use crate::report::{Keep, SessionReport};
use std::io::{self, Write};
use std::num::NonZeroU64;

/// The frame types in the order `blackbox_decode` lists them.
const KINDS: [FrameKind; 6] = [
    FrameKind::I,
    FrameKind::P,
    FrameKind::H,
    FrameKind::G,
    FrameKind::E,
    FrameKind::S,
];

/// Frames of one type and their bytes.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    frames: u64,
    bytes: u64,
}

/// Mean and sample standard deviation of a series, updated as it grows (Welford's method).
#[derive(Debug, Default)]
struct Series {
    count: u64,
    mean: f64,
    squares: f64,
}

impl Series {
    fn push(&mut self, x: f64) {
        self.count += 1;
        let step = x - self.mean;
        self.mean += step / self.count as f64;
        self.squares += step * (x - self.mean);
    }

    fn std_dev(&self) -> f64 {
        match self.count {
            0 | 1 => 0.0,
            n => (self.squares / (n - 1) as f64).sqrt(),
        }
    }
}

/// What one session's statistics are made of.
#[derive(Debug)]
struct SessionStats {
    index: usize,
    logged: LoggedCount,
    /// Where main frames hold `loopIteration`.
    iteration_field: usize,
    /// Whether a frame's bytes count its type byte: INAV's decoder counts it, Betaflight's not.
    type_byte: bool,
    /// Per type, in the order of [`KINDS`].
    kinds: [Tally; 6],
    /// Least and greatest main-frame time (µs, 64-bit monotonic) and loop iteration.
    times: Option<(u64, u64)>,
    iterations: Option<(u32, u32)>,
    last_main: Option<(u32, u64)>,
    /// Microseconds per iteration between consecutive main frames.
    loop_time: Series,
    /// Where the log-end event ends: nothing after it is the session's.
    log_end: Option<u64>,
}

/// A sink that passes everything on to `inner` and counts, per session, what `keep` keeps.
pub struct Statistics<S> {
    pub inner: S,
    keep: Keep,
    sessions: Vec<SessionStats>,
}

impl<S> Statistics<S> {
    pub fn new(inner: S, keep: Keep) -> Self {
        Statistics {
            inner,
            keep,
            sessions: Vec::new(),
        }
    }

    /// The sink passed on to, and the statistics apart from it.
    pub fn split(self) -> (S, Statistics<()>) {
        let stats = Statistics {
            inner: (),
            keep: self.keep,
            sessions: self.sessions,
        };
        (self.inner, stats)
    }

    /// Count what follows as `session`'s.
    pub fn start_session(&mut self, session: &Session) {
        self.sessions.push(SessionStats {
            index: session.bounds.index,
            logged: session.header.logged_count(),
            iteration_field: (session.header.i.as_ref())
                .and_then(|d| d.index_of("loopIteration"))
                .unwrap_or(0),
            type_byte: Flavour::of(session.header.firmware) == Flavour::Inav,
            kinds: [Tally::default(); 6],
            times: None,
            iterations: None,
            last_main: None,
            loop_time: Series::default(),
            log_end: None,
        });
    }

    fn count(&mut self, kind: FrameKind, len: usize) -> Option<&mut SessionStats> {
        let stats = self.sessions.last_mut()?;
        let at = KINDS.iter().position(|&k| k == kind)?;
        let tally = &mut stats.kinds[at];
        tally.frames += 1;
        tally.bytes += len.saturating_sub(usize::from(!stats.type_byte)) as u64;
        Some(stats)
    }

    /// The statistics of every session counted, as `blackbox_decode` prints them; `sessions`
    /// are the file's (what the decoder found in each).
    pub fn write(&self, out: &mut impl Write, sessions: &[SessionReport]) -> io::Result<()> {
        for stats in &self.sessions {
            if let Some(report) = sessions.iter().find(|s| s.index == stats.index) {
                stats.write(out, report, sessions.len())?;
            }
        }
        Ok(())
    }
}

impl<S: Sink> Sink for Statistics<S> {
    fn frame(&mut self, frame: &Frame<'_>) {
        self.inner.frame(frame);
        if !self.keep.keeps(frame.trust) {
            return;
        }
        let Some(stats) = self.count(frame.kind, frame.len) else {
            return;
        };
        let (FrameKind::I | FrameKind::P, Some((_, time))) = (frame.kind, frame.time) else {
            return;
        };
        let iteration = frame
            .values
            .get(stats.iteration_field)
            .map_or(0, |&v| v as u32);
        let (low, high) = stats.times.unwrap_or((time, time));
        stats.times = Some((low.min(time), high.max(time)));
        let (low, high) = stats.iterations.unwrap_or((iteration, iteration));
        stats.iterations = Some((low.min(iteration), high.max(iteration)));
        if let Some((last_iteration, last_time)) = stats.last_main
            && iteration > last_iteration
        {
            let per_iteration =
                time.saturating_sub(last_time) / u64::from(iteration - last_iteration);
            stats.loop_time.push(per_iteration as f64);
        }
        stats.last_main = Some((iteration, time));
    }

    fn event(&mut self, event: &EventFrame<'_>) {
        self.inner.event(event);
        if let Some(stats) = self.count(FrameKind::E, event.len)
            && matches!(event.event, Event::LogEnd { .. })
        {
            stats.log_end.get_or_insert(event.offset + event.len as u64);
        }
    }

    fn searched(&mut self, offset: usize) {
        self.inner.searched(offset);
    }

    fn started(&mut self, range: std::ops::Range<usize>) {
        self.inner.started(range);
    }
    fn decoded(&mut self, report: &crate::report::SessionReport) {
        self.inner.decoded(report);
    }
}

/// `mm:ss.mmm` of a time in milliseconds.
fn clock(ms: u64) -> String {
    format!("{:02}:{:02}.{:03}", ms / 60_000, ms / 1000 % 60, ms % 1000)
}

impl SessionStats {
    fn write(&self, out: &mut impl Write, report: &SessionReport, of: usize) -> io::Result<()> {
        let (first, last) = self.times.unwrap_or_default();
        let interval_ms = (last - first) / 1000;
        write!(out, "\nLog {} of {of}", self.index)?;
        if interval_ms > 0 {
            write!(
                out,
                ", start {}, end {}, duration {}",
                clock(first / 1000),
                clock(last / 1000),
                clock(interval_ms)
            )?;
        }
        writeln!(out, "\n\nStatistics")?;
        if self.loop_time.count > 0 {
            let (mean, std_dev) = (self.loop_time.mean, self.loop_time.std_dev());
            writeln!(
                out,
                "Looptime {:14} avg {std_dev:14.1} std dev ({:.1}%)",
                mean as i64,
                std_dev / mean * 100.0
            )?;
        }
        for (kind, tally) in KINDS.iter().zip(&self.kinds) {
            if tally.frames > 0 {
                // Single precision, as the reference computes it.
                let mean = tally.bytes as f32 / tally.frames as f32;
                writeln!(
                    out,
                    "{} frames {:7} {mean:6.1} bytes avg {:8} bytes total",
                    kind.byte() as char,
                    tally.frames,
                    tally.bytes
                )?;
            }
        }
        let [i, p, ..] = self.kinds;
        let (mains, main_bytes) = (i.frames + p.frames, i.bytes + p.bytes);
        if mains > 0 {
            let mean = main_bytes as f32 / mains as f32;
            writeln!(
                out,
                "Frames {mains:9} {mean:6.1} bytes avg {main_bytes:8} bytes total"
            )?;
        } else {
            writeln!(out, "Frames {:8}", 0)?;
        }
        let bytes = self
            .log_end
            .unwrap_or(report.end)
            .saturating_sub(report.start);
        if let Some(ms) = NonZeroU64::new(interval_ms) {
            // The baud rate at 10 bits a byte, rounded up to a multiple of 100.
            let baud = (bytes.saturating_mul(10_000) / ms).div_ceil(100) * 100;
            writeln!(
                out,
                "Data rate {:4}Hz {:6} bytes/s {baud:10} baud",
                mains.saturating_mul(1000) / ms,
                bytes.saturating_mul(1000) / ms
            )?;
        } else {
            writeln!(out, "Data rate: Unknown, no timing information available.")?;
        }
        let Some((low, high)) = self.iterations else {
            return Ok(());
        };
        let (low, high) = (u64::from(low), u64::from(high));
        let span = high - low + 1;
        let logged = self.logged.below(high + 1) - self.logged.below(low);
        let (absent, missing) = (span - logged, logged.saturating_sub(mains));
        let failed = report.corrupt_spans.len();
        if failed == 0 && missing == 0 && absent == 0 {
            return Ok(());
        }
        writeln!(out)?;
        // What `n` iterations are of the session: milliseconds and share.
        let share = |n: u64| {
            let ms = u128::from(n) * u128::from(interval_ms) / u128::from(span);
            format!("({ms}ms, {:.2}%)", n as f64 / span as f64 * 100.0)
        };
        if failed > 0 {
            let unreadable: u64 = report.corrupt_spans.iter().map(|s| s.frames_lost).sum();
            write!(
                out,
                "{failed} frames failed to decode, rendering {unreadable} loop iterations unreadable. "
            )?;
            if missing == 0 {
                writeln!(out)?;
            }
        }
        if missing > 0 {
            writeln!(
                out,
                "{missing} iterations are missing in total {}",
                share(missing)
            )?;
        }
        if absent > 0 {
            writeln!(
                out,
                "{absent} loop iterations weren't logged because of your blackbox_rate settings {}",
                share(absent)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_has_the_mean_and_sample_deviation_of_its_values() {
        let mut series = Series::default();
        assert_eq!(series.std_dev(), 0.0);
        for x in [1.0, 2.0, 3.0, 4.0] {
            series.push(x);
        }
        assert_eq!(series.mean, 2.5);
        assert!((series.std_dev() - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn clock_times_are_minutes_seconds_and_milliseconds() {
        assert_eq!(clock(0), "00:00.000");
        assert_eq!(clock(4_292_817), "71:32.817");
    }
}
