//! **line-feed** (suspect, or corrupt): in a text-mode copy, a message that ends where the next
//! one starts but holds a line feed.
//!
//! What it sees: each line feed of such a message may have been a carriage return (a CR LF pair
//! turned into one line feed would have left the message a byte short, out of step). Where the
//! line feed lies in a data or text column, the message is kept with the line feed read as it
//! is, and marked suspect: the evidence names the column and how much its raw value would differ
//! as a carriage return (3 in the byte that holds it). Where it lies in the message's header, in
//! the time the messages around it are judged by (`TimeUS`), or in a message that defines
//! formats, units or multipliers, nothing stands on it and the message is refused
//! (`newline-converted`).
//!
//! Calibration: clean logs are never read as text-mode copies (`tests/suite/clean_flights.rs`);
//! in copies of the real logs the line-feed reading is the log's own in about half of the
//! messages kept this way (`docs/quality.md`).

use super::super::fmt::{Format, HEADER_LEN, Role};
use crate::report::{Evidence, Rule};

/// The difference between a carriage return and a line feed.
const CR_MINUS_LF: i64 = (b'\r' - b'\n') as i64;

/// What the line feeds of a message leave.
#[derive(Debug, Clone, PartialEq)]
pub enum LineFeeds {
    /// It holds none.
    None,
    /// It stands on them, suspect, with the evidence of the first.
    Suspect(Evidence),
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
    // Nothing stands on a line feed in the header or in the time.
    let timed = format.time_us || format.time_ms;
    for at in line_feeds {
        match column_of(at) {
            None => return LineFeeds::Refused,
            Some((0, _)) if timed => return LineFeeds::Refused,
            Some(_) => {}
        }
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
    fn a_line_feed_in_a_value_is_suspect_and_in_the_time_refused() {
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
        assert_eq!(judge(&f, &bytes), LineFeeds::Refused);
    }
}
