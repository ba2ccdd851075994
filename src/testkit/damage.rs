//! Damage models: deterministic ways to break a log the way storage and transfers break real ones,
//! recording where every change is so that recovery can be measured against the truth.

use crate::blackbox;
use serde::Serialize;

/// A way logs get damaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Model {
    /// A few runs of 1–64 bytes dropped (a logger's buffer overflowing: the dominant real fault).
    DropRuns,
    /// Single bytes dropped here and there.
    DropBytes,
    /// Whole 512-byte blocks lost (a flash page or SD sector).
    LostBlocks,
    /// Blocks of 512–4096 bytes written twice, the copy right after the block (a download that
    /// fetched a chunk again and kept both).
    RepeatedBlocks,
    /// One long dropout: 40 % of a session's data gone at once.
    LongDropout,
    /// Single bits flipped in place (worn flash).
    BitFlips,
    /// Runs of random bytes inserted.
    InsertGarbage,
    /// Runs of bytes overwritten with zeros.
    ZeroRuns,
    /// The file cut short (power lost while writing).
    Truncate,
    /// Copied in text mode: CR LF → LF, then CR → LF.
    Newline,
    /// Copied by a tool that converts most line ends: CR LF and LF CR → LF, seven in eight other
    /// CRs → LF, the rest left as they were.
    NewlineMixed,
    /// One header line garbled (a Blackbox field other than the frame definitions; the format
    /// characters of one DataFlash FMT message).
    HeaderLine,
    /// One block of 2–64 bytes inserted after every 512–8192 bytes of the file (a download's
    /// chunk headers, a container's blocks).
    PeriodicInsertions,
    /// The same, each block of other random bytes (a signed log's signatures).
    DifferingInsertions,
    /// A chunk header of 3–8 bytes (a kind byte, the chunk's length in 16 bits, zeros) written
    /// over the file every 1024, 2048 or 4096 bytes and its length, from anywhere in the first chunk: a
    /// download that writes each chunk's header over the chunk's first bytes.
    PeriodicOverwrites,
}

impl Model {
    /// The periodic insertions, measured apart: by what reading the file without them recovers
    /// (`tests/suite/periodic.rs`).
    pub const PERIODIC: [Model; 2] = [Model::PeriodicInsertions, Model::DifferingInsertions];
    /// Blocks written over a Blackbox log at a fixed stride, measured with the models of
    /// [`Model::ALL`] for Blackbox (`tests/suite/quality.rs`).
    pub const WRITTEN_OVER: [Model; 1] = [Model::PeriodicOverwrites];
    /// Every model that damages bytes where they lie, in the order reports list them.
    pub const ALL: [Model; 12] = [
        Model::DropRuns,
        Model::DropBytes,
        Model::LostBlocks,
        Model::RepeatedBlocks,
        Model::LongDropout,
        Model::BitFlips,
        Model::InsertGarbage,
        Model::ZeroRuns,
        Model::Truncate,
        Model::Newline,
        Model::NewlineMixed,
        Model::HeaderLine,
    ];

    /// The model's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Model::DropRuns => "drop-runs",
            Model::DropBytes => "drop-bytes",
            Model::LostBlocks => "lost-blocks",
            Model::RepeatedBlocks => "repeated-blocks",
            Model::LongDropout => "long-dropout",
            Model::BitFlips => "bit-flips",
            Model::InsertGarbage => "insert-garbage",
            Model::ZeroRuns => "zero-runs",
            Model::Truncate => "truncate",
            Model::Newline => "newline",
            Model::NewlineMixed => "newline-mixed",
            Model::HeaderLine => "header-line",
            Model::PeriodicInsertions => "periodic-insertions",
            Model::DifferingInsertions => "differing-insertions",
            Model::PeriodicOverwrites => "periodic-overwrites",
        }
    }

    /// Whether the seed changes what the model does (a text-mode copy converts every line end,
    /// so it has one outcome per input).
    pub fn uses_seed(self) -> bool {
        self != Model::Newline
    }

    /// Whether the model changes values in place (rather than removing, inserting or zeroing).
    pub fn changes_values_in_place(self) -> bool {
        matches!(
            self,
            Model::BitFlips | Model::Newline | Model::NewlineMixed | Model::PeriodicOverwrites
        )
    }

    /// Whether the model is a text-mode copy.
    pub fn is_text_mode_copy(self) -> bool {
        matches!(self, Model::Newline | Model::NewlineMixed)
    }
}

/// One change made to the input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// `drop`, `insert`, `repeat`, `flip`, `zero`, `truncate`, `newline`, `header` or
    /// `overwrite`.
    pub kind: &'static str,
    /// Where the change is in the damaged output.
    pub offset: u64,
    /// Bytes of the output the change wrote (0 for a drop or a truncation).
    pub length: u64,
    /// Where the change is in the input.
    pub input_offset: u64,
    /// Bytes of the input it removed or overwrote.
    pub input_length: u64,
}

/// A damaged copy and the truth about it.
#[derive(Debug, Clone, Serialize)]
pub struct Damaged {
    pub model: Model,
    pub seed: u64,
    #[serde(skip)]
    pub data: Vec<u8>,
    pub changes: Vec<Change>,
}

/// An edit at an input offset.
enum Edit {
    Remove(usize),
    Insert(Vec<u8>),
    Replace(Vec<u8>),
}

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03 | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in `[lo, hi)` (`lo` when the range is empty).
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        if hi <= lo {
            lo
        } else {
            lo + (self.next() % (hi - lo) as u64) as usize
        }
    }
}

/// Where a log's data is, and the header text a damage may garble.
struct Layout {
    /// Each Blackbox session's frame data, from the end of its header to its end; the whole of a
    /// DataFlash log.
    ranges: Vec<(usize, usize)>,
    /// Header text that is not a frame definition: Blackbox header lines `(start, len)` past their
    /// `H `, or the format characters of a DataFlash FMT message.
    header_spots: Vec<(usize, usize)>,
}

impl Layout {
    fn of(input: &[u8]) -> Layout {
        let sessions = blackbox::sessions(input);
        if sessions.is_empty() && crate::dataflash::is_dataflash(input) {
            return Layout::of_dataflash(input);
        }
        let ranges = sessions
            .iter()
            .map(|s| {
                (
                    (s.header.data_start as usize).min(s.bounds.end),
                    s.bounds.end,
                )
            })
            .filter(|(a, b)| a < b)
            .collect();
        let header_spots = sessions
            .iter()
            .flat_map(|s| s.header.lines.iter())
            .filter(|l| {
                !l.name.starts_with("Field") && l.name != "Product" && l.name != "Data version"
            })
            .map(|l| {
                // Between the leading `H ` and the newline.
                let text = l.offset as usize + 2..l.end as usize - 1;
                (text.start, text.len())
            })
            .collect();
        Layout {
            ranges,
            header_spots,
        }
    }

    fn of_dataflash(input: &[u8]) -> Layout {
        use crate::dataflash::{Message, Sink, fmt::Role};
        struct Fmts(Vec<(usize, usize)>);
        impl Sink for Fmts {
            fn message(&mut self, m: &Message<'_>) {
                // `A3 95 80`, type, length, name[4], then the format characters up to a NUL.
                if m.format.role == Role::Fmt && m.bytes.len() >= 25 {
                    let chars = crate::dataflash::fmt::cut_at_nul(&m.bytes[9..25]).len();
                    if chars > 0 {
                        self.0.push((m.offset as usize + 9, chars));
                    }
                }
            }
        }
        let mut fmts = Fmts(Vec::new());
        crate::dataflash::scan(input, &mut fmts);
        Layout {
            ranges: vec![(0, input.len())],
            header_spots: fmts.0,
        }
    }
}

/// Pick `count` non-overlapping runs inside the ranges, sorted, lengths from `len`.
fn runs(
    rng: &mut Rng,
    ranges: &[(usize, usize)],
    count: usize,
    len: impl Fn(&mut Rng) -> usize,
) -> Vec<(usize, usize)> {
    let total: usize = ranges.iter().map(|(a, b)| b - a).sum();
    let mut picked: Vec<(usize, usize)> = Vec::new();
    for _ in 0..count * 4 {
        if picked.len() == count || total == 0 {
            break;
        }
        let n = len(rng).max(1);
        let mut u = rng.range(0, total);
        let Some(&(lo, hi)) = ranges.iter().find(|(a, b)| {
            let inside = u < b - a;
            if !inside {
                u -= b - a;
            }
            inside
        }) else {
            continue;
        };
        let at = lo + u;
        if at + n > hi
            || picked
                .iter()
                .any(|&(a, m)| at < a + m + 1 && a < at + n + 1)
        {
            continue;
        }
        picked.push((at, n));
    }
    picked.sort_unstable();
    picked
}

/// Damage `input` with `model`, deterministically for `seed`.
pub fn damage(input: &[u8], model: Model, seed: u64) -> Damaged {
    let mut rng = Rng::new(seed);
    let layout = Layout::of(input);
    let ranges = &layout.ranges;
    let hi = input.len();
    let lo = ranges.first().map_or(0, |r| r.0);
    let mut edits: Vec<(usize, Edit, &'static str)> = Vec::new();
    match model {
        Model::DropRuns => {
            let count = rng.range(1, 6);
            for (at, n) in runs(&mut rng, ranges, count, |r| r.range(1, 65)) {
                edits.push((at, Edit::Remove(n), "drop"));
            }
        }
        Model::DropBytes => {
            let count = rng.range(3, 11);
            for (at, _) in runs(&mut rng, ranges, count, |_| 1) {
                edits.push((at, Edit::Remove(1), "drop"));
            }
        }
        Model::LostBlocks => {
            let count = rng.range(1, 4);
            for (at, _) in runs(&mut rng, ranges, count, |_| 512) {
                let block = at / 512 * 512;
                if edits.iter().all(|(a, _, _)| *a != block) && block + 512 <= hi {
                    edits.push((block, Edit::Remove(512), "drop"));
                }
            }
        }
        Model::RepeatedBlocks => {
            let count = rng.range(1, 4);
            let sizes = |r: &mut Rng| 512 << r.range(0, 4);
            for (at, n) in runs(&mut rng, ranges, count, sizes) {
                let block = at / n * n;
                if edits.iter().all(|(a, _, _)| *a != block + n) && block + n <= hi {
                    let copy = input[block..block + n].to_vec();
                    edits.push((block + n, Edit::Insert(copy), "repeat"));
                }
            }
        }
        Model::LongDropout => {
            if let Some(&(a, b)) = ranges.iter().max_by_key(|(a, b)| b - a) {
                let n = (b - a) * 2 / 5;
                if n > 0 {
                    let at = rng.range(a + (b - a) / 10, b - n);
                    edits.push((at, Edit::Remove(n), "drop"));
                }
            }
        }
        Model::BitFlips => {
            let count = rng.range(3, 11);
            for (at, _) in runs(&mut rng, ranges, count, |_| 1) {
                let flipped = input[at] ^ (1 << rng.range(0, 8));
                edits.push((at, Edit::Replace(vec![flipped]), "flip"));
            }
        }
        Model::InsertGarbage => {
            let count = rng.range(1, 6);
            for (at, n) in runs(&mut rng, ranges, count, |r| r.range(1, 65)) {
                let garbage = (0..n).map(|_| rng.next() as u8).collect();
                edits.push((at, Edit::Insert(garbage), "insert"));
            }
        }
        Model::ZeroRuns => {
            let count = rng.range(1, 6);
            for (at, n) in runs(&mut rng, ranges, count, |r| r.range(1, 513)) {
                edits.push((at, Edit::Replace(vec![0; n]), "zero"));
            }
        }
        Model::Truncate => {
            let at = rng.range(lo + (hi - lo) / 2, hi);
            edits.push((at, Edit::Remove(hi - at), "truncate"));
        }
        Model::Newline => {
            let mut i = 0;
            while i < input.len() {
                if input[i] == b'\r' {
                    if input.get(i + 1) == Some(&b'\n') {
                        edits.push((i, Edit::Remove(1), "newline"));
                    } else {
                        edits.push((i, Edit::Replace(vec![b'\n']), "newline"));
                    }
                }
                i += 1;
            }
        }
        Model::NewlineMixed => {
            for i in memchr::memchr_iter(b'\r', input) {
                let paired = input.get(i + 1) == Some(&b'\n') || i > 0 && input[i - 1] == b'\n';
                if paired {
                    edits.push((i, Edit::Remove(1), "newline"));
                } else if rng.range(0, 8) != 0 {
                    edits.push((i, Edit::Replace(vec![b'\n']), "newline"));
                }
            }
        }
        Model::PeriodicInsertions | Model::DifferingInsertions => {
            let every = rng.range(512, 8193);
            let len = rng.range(2, 65);
            let mut block = Vec::new();
            for at in (every..input.len()).step_by(every) {
                if block.is_empty() || model == Model::DifferingInsertions {
                    block = (0..len).map(|_| rng.next() as u8).collect();
                    // Not one byte repeated: a run of one byte is the erased flash or zero fill
                    // of a log.
                    block[0] = block[1].wrapping_add(1);
                }
                edits.push((at, Edit::Insert(block.clone()), "insert"));
            }
        }
        Model::PeriodicOverwrites => {
            let len = rng.range(3, 9);
            let chunk = 1024 << rng.range(0, 3);
            let mut block = vec![0; len];
            block[0] = rng.range(0, 16) as u8;
            block[1..3].copy_from_slice(&(chunk as u16).to_le_bytes());
            let every = chunk + len;
            for at in (rng.range(0, every)..input.len()).step_by(every) {
                let over = block[..len.min(input.len() - at)].to_vec();
                edits.push((at, Edit::Replace(over), "overwrite"));
            }
        }
        Model::HeaderLine => {
            let spots = &layout.header_spots;
            if !spots.is_empty() {
                let (start, len) = spots[rng.range(0, spots.len())];
                let at = start + rng.range(0, len);
                let garbage = (0..rng.range(1, 4))
                    .map(|_| (rng.next() as u8) | 0x80)
                    .collect();
                edits.push((at, Edit::Replace(garbage), "header"));
            }
        }
    }
    apply(input, model, seed, edits)
}

fn apply(
    input: &[u8],
    model: Model,
    seed: u64,
    edits: Vec<(usize, Edit, &'static str)>,
) -> Damaged {
    let mut data = Vec::with_capacity(input.len());
    let mut changes = Vec::with_capacity(edits.len());
    let mut pos = 0;
    for (at, edit, kind) in edits {
        if at < pos || at > input.len() {
            continue;
        }
        // A replacement records only the bytes it changes: zeroing bytes that were already zero
        // is no damage, and no reader could find it.
        let (at, edit) = match edit {
            Edit::Replace(bytes) => {
                let old = &input[at..(at + bytes.len()).min(input.len())];
                let differs = |i: &usize| old[*i] != bytes[*i];
                let Some(first) = (0..old.len()).find(differs) else {
                    continue;
                };
                let last = (0..old.len()).rev().find(differs).unwrap_or(first);
                (at + first, Edit::Replace(bytes[first..=last].to_vec()))
            }
            edit => (at, edit),
        };
        data.extend_from_slice(&input[pos..at]);
        let offset = data.len() as u64;
        let (input_length, written) = match edit {
            Edit::Remove(n) => (n.min(input.len() - at), 0),
            Edit::Insert(bytes) => {
                data.extend_from_slice(&bytes);
                (0, bytes.len())
            }
            Edit::Replace(bytes) => {
                let n = bytes.len().min(input.len() - at);
                data.extend_from_slice(&bytes[..n]);
                (n, n)
            }
        };
        pos = at + input_length;
        changes.push(Change {
            kind,
            offset,
            length: written as u64,
            input_offset: at as u64,
            input_length: input_length as u64,
        });
    }
    data.extend_from_slice(&input[pos..]);
    Damaged {
        model,
        seed,
        data,
        changes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo() -> Vec<u8> {
        crate::testkit::blackbox::demo_log()
    }

    #[test]
    fn changes_say_exactly_what_happened() {
        let input = demo();
        for model in Model::ALL.into_iter().chain(Model::PERIODIC) {
            for seed in 0..5 {
                let d = damage(&input, model, seed);
                assert_eq!(d.data, damage(&input, model, seed).data, "deterministic");
                // Rebuild the output from the input and the changes.
                let mut rebuilt = Vec::new();
                let mut pos = 0usize;
                for c in &d.changes {
                    rebuilt.extend_from_slice(&input[pos..c.input_offset as usize]);
                    assert_eq!(rebuilt.len() as u64, c.offset, "{model:?}");
                    rebuilt.extend_from_slice(
                        &d.data[c.offset as usize..(c.offset + c.length) as usize],
                    );
                    pos = (c.input_offset + c.input_length) as usize;
                }
                rebuilt.extend_from_slice(&input[pos..]);
                assert_eq!(rebuilt, d.data, "{model:?} seed {seed}");
                // A byte-for-byte replacement starts and ends with a changed byte.
                for c in d
                    .changes
                    .iter()
                    .filter(|c| c.length > 0 && c.length == c.input_length)
                {
                    let (i, o) = (c.input_offset as usize, c.offset as usize);
                    let n = c.length as usize;
                    assert_ne!(input[i], d.data[o], "{model:?} seed {seed}");
                    assert_ne!(input[i + n - 1], d.data[o + n - 1], "{model:?} seed {seed}");
                }
                if !model.is_text_mode_copy() {
                    assert!(
                        !d.changes.is_empty(),
                        "{model:?} seed {seed} changed nothing"
                    );
                }
            }
        }
    }

    #[test]
    fn the_seed_changes_the_damage_of_every_model_but_the_text_mode_copy() {
        let input = demo();
        for model in Model::ALL.into_iter().chain(Model::PERIODIC) {
            let first = damage(&input, model, 0).data;
            let varies = (1..6).any(|seed| damage(&input, model, seed).data != first);
            assert_eq!(varies, model.uses_seed(), "{model:?}");
        }
    }
}
