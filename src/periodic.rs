//! Periodic insertions, for both formats. A download over a serial or MSP link can leave a chunk
//! header in the file at a fixed stride (3 bytes `00 08 00` every 2051 bytes, say), and container
//! tools interleave their own blocks: bytes that were never part of the log, the same length at
//! the same stride, and the same bytes each time.
//!
//! [`find`] looks for such blocks from the bytes alone: a block that recurs, byte for byte, at one
//! stride from the first stride of the file to its last. A log's own data does that only by
//! chance over a few repeats, so whoever removes them ([`remove`]) must also see that the log
//! reads in step without them where it did not with them.

use serde::Serialize;

/// Blocks a file must hold to be taken for periodic insertions.
pub const MIN_REPEATS: u64 = 4;
/// The shortest stride looked for (a block and the log bytes up to the next).
pub const MIN_STRIDE: usize = 256;
/// The longest stride looked for.
pub const MAX_STRIDE: usize = 64 << 10;
/// The longest block looked for.
pub const MAX_LENGTH: usize = 1024;
/// Bytes at the start of a file searched for a recurring block: enough for [`MIN_REPEATS`]
/// strides of [`MAX_STRIDE`].
const SEARCHED: usize = (MIN_REPEATS as usize) * MAX_STRIDE;
/// Recurrences followed through the file before the search gives up (a log's own data recurs by
/// chance; a regular DataFlash log often).
const MAX_TRIED: usize = 4096;
/// Buckets of the table of recent positions of each 2-byte sequence, and positions kept in each.
const BUCKETS: usize = 1 << 16;
const KEPT: usize = 4;

/// Blocks inserted into a file at a fixed stride, read as the file is without them: offsets,
/// sizes and spans of the report are then the log's without them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Insertions {
    /// Offset of the first block in the file as it is.
    pub first: u64,
    /// Bytes from one block's start to the next's.
    pub stride: u64,
    /// Bytes in each block.
    pub length: u64,
    /// Blocks removed.
    pub count: u64,
    /// The bytes of each block, in hex.
    pub bytes: String,
    /// The size of the file as it is.
    pub input_size: u64,
}

/// Recurring blocks in `data`, most bytes first: each the same bytes at one stride, from within
/// the first stride of the file to within the last, at least [`MIN_REPEATS`] times.
pub fn find(data: &[u8]) -> Vec<Insertions> {
    let mut found: Vec<Insertions> = Vec::new();
    let mut tried = std::collections::HashSet::new();
    recurring_sequences(data, |at, stride| {
        if !tried.insert((at % stride, stride)) {
            return tried.len() < MAX_TRIED;
        }
        if let Some(candidate) = extend(data, at, stride)
            && !found
                .iter()
                .any(|f| f.stride == candidate.stride && f.first == candidate.first)
        {
            found.push(candidate);
        }
        tried.len() < MAX_TRIED
    });
    found.sort_by_key(|f| std::cmp::Reverse(f.count * f.length));
    found
}

/// Of the places blocks disturbed the reading, at most one in this many may still lie by a
/// corrupt span without them.
pub const HEALED: u64 = 10;

/// Candidates of [`find`] tried before giving up.
const TRIED: usize = 3;

/// How near (bytes) a block must lie to a corrupt span to have disturbed the reading, and how far
/// from every corrupt span the place it was taken from must lie once it is gone.
const NEAR: u64 = 256;

/// `data` without the recurring blocks of [`find`] that the log reads in step without: of the
/// candidates whose blocks lie by corrupt spans, at least half of them, and without which a
/// corrupt span is left near at most one in [`HEALED`] of the places they disturbed, the one
/// that leaves the fewest corrupt bytes, fewer than with them. `corrupt_spans` reads a log and gives its corrupt spans. A log that reads clean as it
/// is is never changed.
pub fn restore(
    data: &[u8],
    corrupt_spans: impl Fn(&[u8]) -> Vec<(u64, u64)>,
) -> Option<(Vec<u8>, Insertions)> {
    let candidates = find(data);
    if candidates.is_empty() {
        return None;
    }
    let before = corrupt_spans(data);
    let near = |spans: &[(u64, u64)], at: u64, len: u64| {
        spans
            .iter()
            .any(|&(start, end)| start <= at + len + NEAR && at < end + NEAR)
    };
    let bytes = |spans: &[(u64, u64)]| spans.iter().map(|(a, b)| b - a).sum::<u64>();
    let mut best: Option<(u64, Vec<u8>, Insertions)> = None;
    for blocks in candidates.into_iter().take(TRIED) {
        let disturbed = (0..blocks.count)
            .filter(|k| near(&before, blocks.first + k * blocks.stride, blocks.length))
            .count() as u64;
        if disturbed * 2 < blocks.count {
            continue;
        }
        let restored = remove(data, &blocks);
        let after = corrupt_spans(&restored);
        // Damage of the log's own may lie by a few of the places.
        let still = removal_points(&blocks)
            .filter(|&at| near(&after, at, 0))
            .count() as u64;
        let left = bytes(&after);
        if still * HEALED <= disturbed
            && left < bytes(&before)
            && best.as_ref().is_none_or(|b| left < b.0)
        {
            best = Some((left, restored, blocks));
        }
    }
    best.map(|(_, restored, blocks)| (restored, blocks))
}

/// The bytes of `data` without the blocks.
pub fn remove(data: &[u8], insertions: &Insertions) -> Vec<u8> {
    let removed = insertions.count * insertions.length;
    let mut out = Vec::with_capacity(data.len().saturating_sub(removed as usize));
    let mut from = 0usize;
    for k in 0..insertions.count {
        let start = (insertions.first + k * insertions.stride) as usize;
        out.extend_from_slice(&data[from..start]);
        from = start + insertions.length as usize;
    }
    out.extend_from_slice(&data[from.min(data.len())..]);
    out
}

/// Where each block was in the log without them: the offsets at which the bytes after each one
/// continue.
pub fn removal_points(insertions: &Insertions) -> impl Iterator<Item = u64> + '_ {
    let step = insertions.stride - insertions.length;
    (0..insertions.count).map(move |k| insertions.first + k * step)
}

/// Pass to `seen` each position and stride at which a 2-byte sequence occurs three times
/// equally spaced in the first [`SEARCHED`] bytes, until it returns false.
fn recurring_sequences(data: &[u8], mut seen: impl FnMut(usize, usize) -> bool) {
    let searched = &data[..data.len().min(SEARCHED)];
    // Per bucket, the last positions (plus one; 0 for none) of the sequences hashed to it.
    let mut recent = vec![[0u32; KEPT]; BUCKETS];
    let mut sequence = 0u32;
    for (i, &byte) in searched.iter().enumerate() {
        sequence = (sequence << 8 | u32::from(byte)) & 0xFFFF;
        // A run of one byte recurs at every stride.
        if i < 1 || sequence == u32::from(byte) * 0x0101 {
            continue;
        }
        let at = i - 1;
        let bucket = &mut recent[(sequence.wrapping_mul(0x9E37_79B1) >> 16) as usize];
        for &p in bucket.iter() {
            let Some(p) = (p as usize).checked_sub(1) else {
                break;
            };
            let stride = at - p;
            if (MIN_STRIDE..=MAX_STRIDE).contains(&stride)
                && p >= stride
                && bucket.contains(&((p - stride + 1) as u32))
                && !seen(p - stride, stride)
            {
                return;
            }
        }
        bucket.copy_within(..KEPT - 1, 1);
        bucket[0] = at as u32 + 1;
    }
}

/// The blocks through `at` at `stride`: the sequence there widened to every byte all its
/// recurrences share, and followed through the whole file; `None` unless it recurs from the
/// first stride of the file to the last.
fn extend(data: &[u8], at: usize, stride: usize) -> Option<Insertions> {
    // The starts of the blocks at `first` that `len` bytes fit in the file.
    let starts = |first: usize, len: usize| {
        (first..)
            .step_by(stride)
            .take_while(move |s| s + len <= data.len())
    };
    // Whether byte `column` of every block at `first` of `len` bytes is the same.
    let column_same = |first: usize, len: usize, column: usize| {
        let mut bytes = starts(first, len).map(|s| data[s + column]);
        bytes.next().is_some_and(|b| bytes.all(|c| c == b))
    };
    let (mut first, mut len) = (at % stride, 2usize);
    if !(0..2).all(|c| column_same(first, len, c)) {
        return None;
    }
    let longest = MAX_LENGTH.min(stride / 2);
    while first > 0 && len < longest && column_same(first - 1, len + 1, 0) {
        first -= 1;
        len += 1;
    }
    while len < longest && column_same(first, len + 1, len) {
        len += 1;
    }
    let block = &data[first..first + len];
    let count = starts(first, len).count();
    let all_same = starts(first, len).all(|s| &data[s..s + len] == block);
    let last_end = first + (count - 1) * stride + len;
    let whole_file = first < stride && data.len() - last_end < stride;
    let one_byte = block.iter().all(|&b| b == block[0]);
    (all_same && count as u64 >= MIN_REPEATS && whole_file && !one_byte).then(|| Insertions {
        first: first as u64,
        stride: stride as u64,
        length: len as u64,
        count: count as u64,
        bytes: block.iter().map(|b| format!("{b:02x}")).collect(),
        input_size: data.len() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `log` with `block` inserted after every `every` bytes of it.
    fn with_blocks(log: &[u8], block: &[u8], every: usize) -> Vec<u8> {
        log.chunks(every)
            .enumerate()
            .flat_map(|(i, chunk)| {
                let head = if i == 0 { &[][..] } else { block };
                head.iter().chain(chunk).copied().collect::<Vec<u8>>()
            })
            .collect()
    }

    fn log(len: usize) -> Vec<u8> {
        let mut x = 0x1234_5678u32;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x >> 24) as u8
            })
            .collect()
    }

    #[test]
    fn chunk_headers_are_found_and_removed_exactly() {
        let log = log(29_000);
        let copy = with_blocks(&log, &[0, 8, 0], 2048);
        let found = find(&copy);
        let best = &found[0];
        assert_eq!(
            (best.first, best.stride, best.length, best.count),
            (2048, 2051, 3, 14)
        );
        assert_eq!(best.bytes, "000800");
        assert_eq!(remove(&copy, best), log);
        assert_eq!(
            removal_points(best).take(2).collect::<Vec<_>>(),
            [2048, 4096]
        );
    }

    #[test]
    fn long_blocks_and_a_block_at_the_start() {
        let log = log(40_000);
        let block: Vec<u8> = (0..64u8).map(|b| b.wrapping_mul(37)).collect();
        let mut copy = block.clone();
        copy.extend(with_blocks(&log, &block, 4096));
        let best = &find(&copy)[0];
        assert_eq!((best.first, best.stride, best.length), (0, 4096 + 64, 64));
        assert_eq!(remove(&copy, best), log);
    }

    #[test]
    fn blocks_are_removed_only_where_the_log_reads_better_without_them() {
        let log = log(29_000);
        let copy = with_blocks(&log, &[0, 8, 0], 2048);
        // A reading that finds the blocks' bytes corrupt, and nothing in the log without them.
        let blocks = |data: &[u8]| -> Vec<(u64, u64)> {
            memchr::memmem::find_iter(data, &[0, 8, 0])
                .map(|at| (at as u64, at as u64 + 3))
                .collect()
        };
        let (restored, found) = restore(&copy, blocks).unwrap();
        assert_eq!((restored, found.count), (log.clone(), 14));
        // A log that reads clean is left as it is; so is one that reads no better without them.
        assert!(restore(&copy, |_| Vec::new()).is_none());
        assert!(restore(&copy, |d| vec![(0, d.len() as u64)]).is_none());
    }

    #[test]
    fn a_log_without_blocks_has_none() {
        assert!(find(&log(200_000)).is_empty());
        let start = std::time::Instant::now();
        let big = log(4 << 20);
        let t0 = start.elapsed();
        assert!(find(&big).is_empty());
        eprintln!(
            "find on 4 MiB: {:?} (making it {:?})",
            start.elapsed() - t0,
            t0
        );
        // A block that stops recurring half way is no download artefact.
        let log = log(40_000);
        let mut copy = with_blocks(&log[..20_000], &[0, 8, 0], 2048);
        copy.extend_from_slice(&log[20_000..]);
        assert!(find(&copy).is_empty());
    }
}
