//! A session header under blocks written over the log (see [`crate::periodic::written_over`]).
//! The bytes under a block are lost, but the line around it keeps its length, so the same line
//! elsewhere fills the hole: another session's header in the file (any line: the same craft), the
//! header library (the lines that say how frames decode, which a firmware build fixes), the log
//! start marker (the same in every log), or, for
//! a frame definition whose name alone is hit, the one definition line of that length the header
//! lacks. A hole nothing fills leaves the header in doubt where its line may have been one the
//! decoding reads.

use super::decoder::SessionBounds;
use super::header::{Header, HeaderProblem, LOG_START_MARKER, MAX_HEADER, is_text_byte};
use super::library::LIBRARY;
use crate::periodic::Blocks;
use std::ops::Range;

/// What a hole nothing fills reads as: text no value parses as a number.
const UNKNOWN: u8 = b'?';

/// Bytes of a line outside its holes that a source must match for its bytes to fill them.
const MIN_CONTEXT: usize = 8;

/// Frame kinds and the definition lines each may have.
const KINDS: [&str; 5] = ["I", "P", "S", "G", "H"];
const DEFINITIONS: [&str; 4] = ["name", "signed", "predictor", "encoding"];

/// Header lines other than the frame definitions whose values decide what frames decode to: the
/// layout, and the constants predictors add. (A schedule line read wrong shows in the frames'
/// iterations.)
const READ: [&str; 4] = ["Data version", "Firmware type", "minthrottle", "vbatref"];

/// A header read with the holes blocks left in it filled where a source shows their bytes.
#[derive(Debug, Clone)]
pub struct Mended {
    pub header: Header,
    /// Holes were left where a line the decoding reads may have been: the frames cannot be read
    /// as the log wrote them.
    pub in_doubt: bool,
}

/// The bytes from the start of the session at `bounds` where its header may lie: blocks in the
/// header may have stopped its reading short.
pub fn reach(bounds: SessionBounds) -> Range<usize> {
    bounds.start..bounds.end.min(bounds.start + MAX_HEADER)
}

/// The header of the session at `bounds` with the holes of `blocks` in it mended; `others` are
/// the byte ranges of the file's other session headers. `None` when no block lies in the
/// header.
pub fn mend(
    file: &[u8],
    bounds: SessionBounds,
    blocks: &Blocks,
    others: &[Range<usize>],
) -> Option<Mended> {
    let region = reach(bounds);
    let holes = (0..blocks.count)
        .map(|k| {
            let start = (blocks.first + k * blocks.stride) as usize;
            start.max(region.start)..(start + blocks.length as usize).min(region.end)
        })
        .filter(|hole| hole.start < hole.end);
    let lines = lines_with(
        &file[region.clone()],
        holes.map(|h| h.start - region.start..h.end - region.start),
    );
    let mut bytes = file[region.clone()].to_vec();
    let parse = |bytes: &[u8]| {
        let mut header = Header::parse(bytes, 0, bytes.len());
        header.shift(region.start as u64);
        header
    };
    let others: Vec<&[u8]> = others.iter().map(|r| &file[r.clone()]).collect();
    // The other headers and the library first; then the definitions the header, so mended,
    // lacks.
    let mut unfilled = Vec::new();
    for line in &lines {
        match line.filled_by_sources(&others) {
            Some(fill) => line.fill(&mut bytes, &fill),
            None => unfilled.push(line),
        }
    }
    let mended = parse(&bytes);
    unfilled.retain(|line| match line.definition(&mended) {
        Some(fill) => {
            line.fill(&mut bytes, &fill);
            false
        }
        None => true,
    });
    // What nothing fills reads as unknown text: a block's control bytes would end the header
    // at the line, and every line after it would be lost.
    for line in &unfilled {
        line.fill_unknown(&mut bytes);
    }
    let mut header = parse(&bytes);
    header.mended = true;
    // A line with holes belongs to the header if it starts there.
    let in_header = |line: &Line<'_>| ((region.start + line.start) as u64) < header.data_start;
    if !lines.iter().any(in_header) {
        return None;
    }
    let in_doubt = unfilled.iter().any(|line| {
        in_header(line) && (line.may_be_read(&header) || is_read(&bytes[line.start..]))
    });
    for line in unfilled.iter().filter(|line| in_header(line)) {
        let start = (region.start + line.start) as u64;
        header.problems.push(HeaderProblem {
            start,
            end: start + line.bytes.len() as u64,
            message: "a block written over the line left bytes nothing shows".into(),
        });
    }
    header.problems.sort_by_key(|p| p.start);
    Some(Mended { header, in_doubt })
}

/// The lines of `text` that `holes` (sorted, within `text`) lie in, each with its holes: from
/// the newline before a hole to the newline after it, where no hole lies (a hole may have taken
/// the newline between two lines).
fn lines_with(text: &[u8], holes: impl Iterator<Item = Range<usize>>) -> Vec<Line<'_>> {
    let mut lines: Vec<Line<'_>> = Vec::new();
    for hole in holes {
        let start = text[..hole.start]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        let end = text[hole.end..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(text.len(), |p| hole.end + p + 1);
        match lines.last_mut() {
            Some(line) if start < line.start + line.bytes.len() => {
                line.holes
                    .push(hole.start - line.start..hole.end - line.start);
                line.bytes = &text[line.start..end.max(line.start + line.bytes.len())];
            }
            _ => lines.push(Line {
                start,
                bytes: &text[start..end],
                holes: std::iter::once(hole.start - start..hole.end - start).collect(),
            }),
        }
    }
    lines
}

/// A header line with holes (offsets in the line): its bytes from its start to its newline.
struct Line<'a> {
    /// Where it starts in the bytes searched.
    start: usize,
    bytes: &'a [u8],
    holes: Vec<Range<usize>>,
}

impl Line<'_> {
    /// Whether byte `i` of the line lies outside every hole.
    fn solid(&self, i: usize) -> bool {
        !self.holes.iter().any(|h| h.contains(&i))
    }

    /// Write `fill` (the holes' bytes one after the other) into the holes, in `bytes` (the bytes
    /// searched).
    fn fill(&self, bytes: &mut [u8], fill: &[u8]) {
        let mut from = fill.iter();
        for hole in &self.holes {
            for (b, f) in bytes[self.start + hole.start..self.start + hole.end]
                .iter_mut()
                .zip(from.by_ref())
            {
                *b = *f;
            }
        }
    }

    /// Fill the holes with [`UNKNOWN`], but for a line's `H ` (in `bytes`, the bytes searched).
    fn fill_unknown(&self, bytes: &mut [u8]) {
        for hole in &self.holes {
            for i in hole.clone() {
                bytes[self.start + i] = match i {
                    0 => b'H',
                    1 => b' ',
                    _ => UNKNOWN,
                };
            }
        }
    }

    /// The bytes the other headers of the file (`others`) and the library agree the holes held.
    fn filled_by_sources(&self, others: &[&[u8]]) -> Option<Vec<u8>> {
        let solid = (0..self.bytes.len()).filter(|&i| self.solid(i)).count();
        if solid < MIN_CONTEXT {
            return None;
        }
        let from_others = others.iter().flat_map(|text| self.fills_in(text, |_| true));
        let from_library = self.fills_in(LIBRARY.as_bytes(), is_layout_line);
        let from_marker = self.fills_in(LOG_START_MARKER, |_| true);
        let mut fills = from_others.chain(from_library).chain(from_marker);
        let first = fills.next()?;
        fills.all(|f| f == first).then_some(first)
    }

    /// The fills `text` offers: where the line's bytes outside its holes stand in it from a
    /// line's start, the bytes in the holes' places, when they are text and every line they run
    /// through passes `allowed` (given the line from its `H`).
    fn fills_in<'t>(
        &'t self,
        text: &'t [u8],
        allowed: impl Fn(&[u8]) -> bool + 't,
    ) -> impl Iterator<Item = Vec<u8>> + 't {
        // Found by the longest stretch between holes.
        let mut edges: Vec<usize> = vec![0, self.bytes.len()];
        edges.extend(self.holes.iter().flat_map(|h| [h.start, h.end]));
        edges.sort_unstable();
        let needle = edges
            .windows(2)
            .map(|w| w[0]..w[1])
            .filter(|r| self.solid(r.start))
            .max_by_key(|r| r.len())
            .unwrap_or(0..0);
        memchr::memmem::find_iter(text, &self.bytes[needle.clone()])
            .filter_map(move |q| q.checked_sub(needle.start))
            .filter(move |&p| p == 0 || text[p - 1] == b'\n')
            .filter_map(move |p| {
                let there = text.get(p..p + self.bytes.len())?;
                let same = (0..there.len()).all(|i| !self.solid(i) || there[i] == self.bytes[i]);
                let fill: Vec<u8> = self
                    .holes
                    .iter()
                    .flat_map(|h| &there[h.clone()])
                    .copied()
                    .collect();
                let mut lines = there.split(|&b| b == b'\n').filter(|l| !l.is_empty());
                (same && fill.iter().all(|&b| is_text_byte(b)) && lines.all(&allowed))
                    .then_some(fill)
            })
    }

    /// The fill a frame definition line gives whose name alone the holes took: the one definition
    /// name of the line's length that fits the bytes around the holes, which the header lacks and
    /// whose values are as many as the frame's fields.
    fn definition(&self, header: &Header) -> Option<Vec<u8>> {
        let colon = (0..self.bytes.len()).find(|&i| self.solid(i) && self.bytes[i] == b':')?;
        if self.holes.iter().any(|h| h.end > colon) {
            return None;
        }
        let count = self.bytes[colon + 1..].split(|&b| b == b',').count();
        let mut fits = KINDS.iter().flat_map(|kind| {
            DEFINITIONS.iter().filter_map(move |what| {
                let name = format!("Field {kind} {what}");
                let text = format!("H {name}:");
                let names_from = if *kind == "P" { "I" } else { kind };
                let fields = header
                    .get(&format!("Field {names_from} name"))
                    .map(|n| n.split(',').count());
                let fits = text.len() == colon + 1
                    && self.matches(text.as_bytes(), 0)
                    && header.get(&name).is_none()
                    && (*what == "name" || fields == Some(count));
                let fill = self.holes.iter().flat_map(|h| &text.as_bytes()[h.clone()]);
                fits.then(|| fill.copied().collect())
            })
        });
        let fill = fits.next()?;
        fits.next().is_none().then_some(fill)
    }

    /// Whether a line the decoding reads may have stood here: a definition or one of [`READ`]
    /// that the header (read as `header`) lacks, from the line's start or from anywhere in a
    /// hole (which may have taken a newline).
    fn may_be_read(&self, header: &Header) -> bool {
        let names = KINDS
            .iter()
            .flat_map(|kind| {
                DEFINITIONS
                    .iter()
                    .map(move |what| format!("Field {kind} {what}"))
            })
            .chain(READ.iter().map(|n| n.to_string()))
            .filter(|name| header.get(name).is_none());
        let starts: Vec<usize> = std::iter::once(0)
            .chain(self.holes.iter().flat_map(|h| h.start..=h.end))
            .collect();
        names
            .map(|name| format!("H {name}:"))
            .any(|text| starts.iter().any(|&at| self.matches(text.as_bytes(), at)))
    }

    /// Whether `text`, standing at `at` in the line, agrees with every byte of the line outside
    /// the holes (and ends inside the line).
    fn matches(&self, text: &[u8], at: usize) -> bool {
        at + text.len() <= self.bytes.len()
            && text
                .iter()
                .enumerate()
                .all(|(i, &c)| !self.solid(at + i) || self.bytes[at + i] == c)
    }
}

/// Whether a header line (from its `H`) is one the decoding reads: a frame definition or one of
/// [`READ`].
fn is_read(line: &[u8]) -> bool {
    let named = |name: &str| {
        line.strip_prefix(b"H ")
            .and_then(|l| l.strip_prefix(name.as_bytes()))
            .is_some_and(|l| l.starts_with(b":"))
    };
    line.starts_with(b"H Field ") || READ.iter().any(|name| named(name))
}

/// Whether a header line (from its `H`) is one a firmware build fixes: a frame definition, the
/// data version or the firmware type.
fn is_layout_line(line: &[u8]) -> bool {
    ["H Field ", "H Data version:", "H Firmware type:"]
        .iter()
        .any(|p| line.starts_with(p.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blackbox::predictor::Predictor;

    const BLOCK: &[u8] = b"\x00\x08\x00";

    /// `header` with `BLOCK` written over it at `at`, as one session with blocks there (and a
    /// stride longer than the file, so just one).
    fn mended(header: &[u8], at: usize, others: &[&[u8]]) -> Mended {
        let mut file = Vec::new();
        let mut ranges = Vec::new();
        for other in others {
            ranges.push(file.len()..file.len() + other.len());
            file.extend_from_slice(other);
        }
        let start = file.len();
        file.extend_from_slice(header);
        file[start + at..start + at + BLOCK.len()].copy_from_slice(BLOCK);
        file.extend_from_slice(b"I\x00\x01");
        let blocks = Blocks {
            first: (start + at) as u64,
            stride: 1 << 20,
            length: BLOCK.len() as u64,
            count: 1,
            bytes: None,
            input_size: file.len() as u64,
        };
        let bounds = SessionBounds {
            index: 1,
            start,
            end: file.len(),
        };
        mend(&file, bounds, &blocks, &ranges).expect("a block in the header")
    }

    const HEADER: &[u8] = b"H Product:Blackbox flight data recorder by Nicholas Sherlock\n\
        H Field I name:loopIteration,time,motor[0]\n\
        H Field I signed:0,0,0\n\
        H Field I predictor:0,0,11\n\
        H Field I encoding:1,1,1\n\
        H Field P predictor:6,2,1\n\
        H Field P encoding:9,0,0\n\
        H motorOutput:48,2047\n\
        H thr_mid:50\n";

    fn line_at(name: &str) -> usize {
        let text = std::str::from_utf8(HEADER).unwrap();
        text.find(&format!("H {name}:")).unwrap()
    }

    #[test]
    fn a_hole_is_filled_from_another_header_of_the_file() {
        let at = line_at("motorOutput") + 15;
        let m = mended(HEADER, at, &[HEADER]);
        assert_eq!(m.header.get("motorOutput"), Some("48,2047"));
        assert!(m.header.i.is_some() && !m.in_doubt);
        // Alone in its file, the craft's constant is lost: the first motor cannot be read.
        let m = mended(HEADER, at, &[]);
        assert!(m.header.i.is_none());
    }

    #[test]
    fn a_hole_in_the_log_start_marker_is_filled_from_the_marker() {
        // (A block over its newline joins it to the next line, which the marker cannot fill.)
        for at in [0, 30, LOG_START_MARKER.len() - 4] {
            let m = mended(HEADER, at, &[]);
            assert!(
                m.header.problems.is_empty(),
                "{at}: {:?}",
                m.header.problems
            );
            assert_eq!(
                m.header.get("Product"),
                Some("Blackbox flight data recorder by Nicholas Sherlock")
            );
        }
    }

    #[test]
    fn a_definition_whose_name_alone_was_taken_is_named_again() {
        let at = line_at("Field I signed") + 4;
        let m = mended(HEADER, at, &[]);
        assert_eq!(m.header.get("Field I signed"), Some("0,0,0"));
        assert!(!m.in_doubt);
    }

    #[test]
    fn a_hole_left_in_a_definition_puts_the_header_in_doubt() {
        let at = line_at("Field P encoding") + 19;
        assert!(mended(HEADER, at, &[]).in_doubt);
        // A setting the decoding does not read leaves it as it is.
        let at = line_at("thr_mid") + 3;
        let m = mended(HEADER, at, &[]);
        assert!(!m.in_doubt && m.header.i.is_some());
    }

    #[test]
    fn a_hole_nothing_fills_reads_as_unknown_text_and_the_header_goes_on() {
        // A frame's letter (`S`) after the block would end the header there.
        let revision = b"H Firmware revision:Betaflight 4.5.1 (77d0abcde) STM32F405\n";
        let split = line_at("motorOutput");
        let header = [&HEADER[..split], revision, &HEADER[split..]].concat();
        let m = mended(&header, split + 41, &[]);
        let revision_text = "Betaflight 4.5.1 (77d???cde) STM32F405";
        assert_eq!(m.header.get("Firmware revision"), Some(revision_text));
        assert_eq!(m.header.get("motorOutput"), Some("48,2047"));
        assert!(m.header.i.is_some() && !m.in_doubt);
        let spans: Vec<_> = m.header.problems.iter().map(|p| (p.start, p.end)).collect();
        assert_eq!(spans, [(split as u64, (split + revision.len()) as u64)]);
        // Of a setting's values, those the hole spares read; the others are no numbers.
        let m = mended(HEADER, line_at("motorOutput") + 17, &[]);
        assert_eq!(m.header.get("motorOutput"), Some("48,???7"));
        let first_motor = m.header.i.as_ref().map(|i| i.fields[2].predictor);
        assert_eq!(first_motor, Some(Predictor::MinMotor(48)));
    }
}
