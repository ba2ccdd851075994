//! **line-feed** (suspect, or corrupt): in a text-mode copy, a message that ends where the next
//! one starts but holds a line feed.
//!
//! What it sees: each line feed of such a message may have been a carriage return (a CR LF pair
//! turned into one line feed would have left the message a byte short, out of step). Where the
//! line feeds lie in number columns of a type whose columns are learned (see [`super::Judge`]),
//! each reading (every line feed read as it is or as a carriage return) is set beside the
//! column's last value: the nearest stands when it lies within the column's [`Recent`] motion and
//! every other reading lies [`READING_FACTOR`] times as far or farther; the message is then
//! trusted with that reading. The time the messages around it are judged by (`TimeUS`) is read
//! the same way, by the time of the last message accepted, of any type (see [`Recent::reading`]
//! for why its nearest reading may lie anywhere ahead). Otherwise, where the line feed lies
//! in a value, the message is kept with the line feed read as it is, and marked suspect: the
//! evidence names the column and how much its raw value would differ as a carriage return (3 in
//! the byte that holds it). Where it lies in the time, in the message's header, or in a message
//! that defines formats, units or multipliers, nothing stands on it and the message is refused
//! (`newline-converted`).
//!
//! Calibration: clean logs are never read as text-mode copies (`tests/suite/clean_flights.rs`).
//! In the copies of the nine clean real DataFlash logs no reading that stands is wrong, down to
//! a factor of [`CALIBRATED_FACTOR`] (`docs/quality.md`); of the line feeds left in doubt, the
//! reading as it is is the log's own in about half of the messages.

use super::super::fmt::{FieldType, Format, HEADER_LEN, Role};
use crate::report::{Evidence, Rule};

/// The difference between a carriage return and a line feed.
const CR_MINUS_LF: i64 = (b'\r' - b'\n') as i64;

/// How many times as far from a column's last value as its recent motion (and one unit) every
/// other reading of its line feeds must lie for the nearest to stand.
pub const READING_FACTOR: f64 = 6.0;

/// The lowest factor at which a reading that stands was wrong in the calibration.
pub const CALIBRATED_FACTOR: f64 = 2.5;

/// Messages in one window of a column's [`Recent`] motion.
pub const RECENT_WINDOW: u32 = 64;

/// Line feeds of one column read both ways at most (2 to that power readings).
pub const MAX_LINE_FEEDS_READ: usize = 3;

/// A number column's last value and recent motion (its largest change between consecutive
/// messages of its type and instance, over the current window of [`RECENT_WINDOW`] messages and
/// the one before), to read its line feeds by.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Recent {
    values: u32,
    last: f64,
    /// Messages of the type and instance since the last value, not learned (left in doubt).
    missed: u32,
    in_window: u32,
    current: f64,
    previous: f64,
}

impl Recent {
    /// Take the column's next value, `x`.
    pub fn learn(&mut self, x: f64) {
        if !x.is_finite() {
            return;
        }
        if self.values > 0 {
            let steps = f64::from(self.missed) + 1.0;
            self.current = self.current.max((x - self.last).abs() / steps);
        }
        self.last = x;
        self.missed = 0;
        self.values = self.values.saturating_add(1);
        self.in_window += 1;
        if self.in_window == RECENT_WINDOW {
            self.previous = self.current;
            self.current = 0.0;
            self.in_window = 0;
        }
    }

    /// A message of the column's type and instance went by unlearned.
    pub fn miss(&mut self) {
        self.missed = self.missed.saturating_add(1);
    }

    /// Which of `readings` (the column's values of type `ty`, read each way) stands, if one does:
    /// the column may have moved by its motion for each message since its last value. A time
    /// (`clock`) goes on: its nearest reading may lie anywhere ahead, so long as every other
    /// lies [`READING_FACTOR`] times as far (and its motion) or farther; otherwise a refused
    /// message, which teaches the clock nothing, would leave every message after it too far.
    pub fn reading(&self, readings: &[f64], ty: FieldType, clock: bool) -> Option<usize> {
        if self.values < super::MIN_VALUES {
            return None;
        }
        // One step of an integer column; half a step of a float's type near the last value.
        let precision = match ty {
            FieldType::F16 => 11,
            FieldType::F32 => 24,
            FieldType::F64 => 53,
            _ => 0,
        };
        let unit = match precision {
            0 => 1.0,
            bits => (self.last.abs() * 2f64.powi(-bits)).max(f64::MIN_POSITIVE),
        };
        let steps = f64::from(self.missed) + 1.0;
        let near = self.current.max(self.previous) * steps + unit;
        let distance = |x: f64| {
            let d = (x - self.last).abs();
            if d.is_nan() { f64::INFINITY } else { d }
        };
        let (best, nearest) = readings
            .iter()
            .map(|&x| distance(x))
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(&b.1))?;
        let (limit, reach) = match clock {
            true => (f64::INFINITY, nearest + near),
            false => (near, near),
        };
        let apart = readings
            .iter()
            .enumerate()
            .all(|(i, &x)| i == best || distance(x) >= READING_FACTOR * reach);
        (nearest <= limit && apart).then_some(best)
    }
}

/// What the line feeds of a message leave.
#[derive(Debug, Clone, PartialEq)]
pub enum LineFeeds {
    /// It holds none.
    None,
    /// It stands on them, suspect, with the evidence of the first.
    Suspect(Evidence),
    /// Some lie in the time the messages around it are judged by: nothing stands on them unless
    /// they read as the time of the messages accepted before.
    InTime,
    /// Nothing stands on them.
    Refused,
}

/// What the line feeds of message `bytes` (of `format`, ending in step) leave.
pub fn judge(format: &Format, bytes: &[u8]) -> LineFeeds {
    let mut line_feeds = memchr::memchr_iter(b'\n', bytes).peekable();
    let Some(&first) = line_feeds.peek() else {
        return LineFeeds::None;
    };
    if !matches!(format.role, Role::Data | Role::Msg) {
        return LineFeeds::Refused;
    }
    let column_of = |at: usize| {
        let mut start = HEADER_LEN;
        for (i, ty) in format.fields.iter().enumerate() {
            let end = start + ty.size();
            if (start..end).contains(&at) {
                return Some((i, at - start));
            }
            start = end;
        }
        None
    };
    // Nothing stands on a line feed in the header, nor on one in the time unless it is read.
    let timed = format.time_us || format.time_ms;
    let mut in_time = false;
    for at in line_feeds {
        match column_of(at) {
            None => return LineFeeds::Refused,
            Some((0, _)) if timed => in_time = true,
            Some(_) => {}
        }
    }
    if in_time {
        return LineFeeds::InTime;
    }
    let Some((column, byte)) = column_of(first) else {
        return LineFeeds::Refused;
    };
    // Text columns are up to 64 bytes: the byte's weight is kept for numbers (8 bytes or fewer).
    let offset = match u32::try_from(byte).ok().filter(|&b| b < 8) {
        Some(b) => CR_MINUS_LF << (8 * b),
        None => CR_MINUS_LF,
    };
    let name = format.columns.get(column).cloned();
    LineFeeds::Suspect(Evidence::new(Rule::LineFeed, name, offset, offset))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataflash::fmt::Definition;

    fn format(columns: &[u8], types: &[u8]) -> Format {
        let definition = Definition {
            type_value: 130,
            length: 3 + 8 + 4 + 2,
            name: b"TEST",
            format: types,
            columns,
        };
        Format::define(&definition, None).unwrap().0
    }

    #[test]
    fn a_line_feed_in_a_value_is_suspect_in_the_time_read_or_refused_in_the_header_refused() {
        let f = format(b"TimeUS,Alt,Rate", b"Qfh");
        let mut bytes = vec![0xA3, 0x95, 130];
        bytes.extend_from_slice(&[0; 14]);
        assert_eq!(judge(&f, &bytes), LineFeeds::None);
        bytes[3 + 8 + 1] = b'\n';
        let LineFeeds::Suspect(e) = judge(&f, &bytes) else {
            panic!("a line feed in a value is suspect");
        };
        assert_eq!((e.field.as_deref(), e.offset), (Some("Alt"), 3 << 8));
        bytes[3 + 2] = b'\n';
        assert_eq!(judge(&f, &bytes), LineFeeds::InTime);
        bytes[1] = b'\n';
        assert_eq!(judge(&f, &bytes), LineFeeds::Refused);
    }
}
