//! Text-mode copies, for both formats. A log copied as text (an ASCII-mode transfer, a Windows
//! editor, `git` with `core.autocrlf`) has its line feeds rewritten, one way or the other:
//!
//! - Windows → Unix turns each CR LF pair, and often each lone CR, into a line feed (some tools
//!   also take LF CR for a line end, or leave some CRs): bytes are lost, and which line feed was
//!   which is left to the decoders ([`is_newline_converted`]);
//! - Unix → Windows turns each line feed into CR LF: nothing is lost, and every line feed then
//!   follows a carriage return ([`is_crlf_copy`]); [`restore_crlf`] undoes it exactly.

use serde::Serialize;

/// Log data at least this long whose line feeds outnumber its carriage returns many times over
/// was copied in text mode. In binary logs the two bytes are about as frequent (clean real logs
/// hold 0.48 to 4.2 carriage returns a line feed); a copy that turned every carriage return, or
/// seven in eight, into line feeds holds none, or about 0.04.
const NEWLINE_EVIDENCE: usize = 16 * 1024;

/// At most one carriage return for this many line feeds in log data copied in text mode.
const LINE_FEEDS_PER_CARRIAGE_RETURN: usize = 8;

/// Line feeds beyond [`LINE_FEEDS_PER_CARRIAGE_RETURN`] times the carriage returns that make
/// the evidence: counted, not a share of the length, so that a copy with part of its data taken
/// out (a salvaged log) reads as the file did.
const MIN_LINE_FEED_EXCESS: usize = 64;

/// Line feeds a file must hold, each right after a carriage return, to be taken for a copy whose
/// line feeds all became CR LF: a Blackbox header alone has dozens, and in binary data one line
/// feed in 256 follows a carriage return by chance.
pub const MIN_CRLF_PAIRS: usize = 16;

/// How a text-mode copy changed a file that is read restored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Conversion {
    /// Every line feed became CR LF; the carriage return before each line feed is removed.
    #[serde(rename = "lf-to-crlf")]
    LfToCrLf,
}

/// Whether log data shows the marks of a Windows → Unix text-mode copy: long, with many line
/// feeds and few carriage returns, if any.
pub fn is_newline_converted(data: &[u8]) -> bool {
    if data.len() < NEWLINE_EVIDENCE {
        return false;
    }
    let mut counts = NewlineCounts::default();
    counts.add(data);
    counts.is_newline_converted()
}

/// Line feeds and carriage returns of log data counted piece by piece, for data that is never
/// held whole (a salvaged log as it is written).
#[derive(Debug, Default, Clone, Copy)]
pub struct NewlineCounts {
    bytes: usize,
    line_feeds: usize,
    carriage_returns: usize,
}

impl NewlineCounts {
    /// Count the next piece of the data.
    pub fn add(&mut self, piece: &[u8]) {
        self.bytes = self.bytes.saturating_add(piece.len());
        let count = |byte| memchr::memchr_iter(byte, piece).count();
        self.line_feeds = self.line_feeds.saturating_add(count(b'\n'));
        self.carriage_returns = self.carriage_returns.saturating_add(count(b'\r'));
    }

    /// Line feeds counted so far.
    pub fn line_feeds(&self) -> usize {
        self.line_feeds
    }

    /// Carriage returns counted so far.
    pub fn carriage_returns(&self) -> usize {
        self.carriage_returns
    }

    /// Bytes counted so far.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether the data counted so far reads as a Windows → Unix text-mode copy (see
    /// [`is_newline_converted`]).
    pub fn is_newline_converted(&self) -> bool {
        self.bytes >= NEWLINE_EVIDENCE
            && self.line_feeds >= self.expected().saturating_add(MIN_LINE_FEED_EXCESS)
    }

    /// Whether the line feeds outnumber the carriage returns as in a text-mode copy, though too
    /// few to tell by themselves: a copy if the format's structure shows carriage returns made
    /// line feeds.
    pub fn may_be_newline_converted(&self) -> bool {
        self.line_feeds > 0 && self.line_feeds >= self.expected()
    }

    /// The most line feeds of data copied in binary, for its carriage returns.
    fn expected(&self) -> usize {
        self.carriage_returns
            .saturating_mul(LINE_FEEDS_PER_CARRIAGE_RETURN)
    }
}

/// Whether `data` is a Unix → Windows text-mode copy: at least [`MIN_CRLF_PAIRS`] line feeds,
/// each right after a carriage return. (A binary file has a line feed with no carriage return
/// before it within its first kilobytes, where the scan stops.)
pub fn is_crlf_copy(data: &[u8]) -> bool {
    let mut pairs = 0;
    for at in memchr::memchr_iter(b'\n', data) {
        if at == 0 || data[at - 1] != b'\r' {
            return false;
        }
        pairs += 1;
    }
    pairs >= MIN_CRLF_PAIRS
}

/// The bytes before a Unix → Windows copy: the carriage return before each line feed removed.
pub fn restore_crlf(data: &[u8]) -> Vec<u8> {
    let mut restored = Vec::with_capacity(data.len());
    let mut from = 0;
    for at in memchr::memchr_iter(b'\n', data) {
        let end = if at > from && data[at - 1] == b'\r' {
            at - 1
        } else {
            at
        };
        restored.extend_from_slice(&data[from..end]);
        from = at;
    }
    restored.extend_from_slice(&data[from..]);
    restored
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Unix → Windows copy of `data`.
    fn to_crlf(data: &[u8]) -> Vec<u8> {
        data.iter()
            .flat_map(|&b| {
                if b == b'\n' {
                    vec![b'\r', b'\n']
                } else {
                    vec![b]
                }
            })
            .collect()
    }

    #[test]
    fn a_crlf_copy_is_recognised_and_restored_exactly() {
        // Line feeds, carriage returns, and CR LF pairs that the copy turns into CR CR LF.
        let mut original = b"H line\n".repeat(20);
        original.extend_from_slice(&[0, 13, 10, 13, 13, 10, 255, 10, 10, 13]);
        let copy = to_crlf(&original);
        assert!(is_crlf_copy(&copy));
        assert!(!is_crlf_copy(&original));
        assert_eq!(restore_crlf(&copy), original);
    }

    #[test]
    fn a_few_crlf_pairs_are_not_a_copy() {
        let copy = to_crlf(&b"a\n".repeat(MIN_CRLF_PAIRS - 1));
        assert!(!is_crlf_copy(&copy));
        assert!(is_crlf_copy(&to_crlf(&b"a\n".repeat(MIN_CRLF_PAIRS))));
    }
}
