//! Periodic insertions, for both formats. A download over a serial or MSP link can leave a chunk
//! header in the file at a fixed stride (3 bytes `00 08 00` every 2051 bytes, say), and container
//! tools interleave their own blocks: bytes that were never part of the log, the same length at
//! the same stride, and the same bytes each time.
//!
//! [`find`] looks for such blocks from the bytes alone: a block that recurs, byte for byte, at one
//! stride from the first stride of the file to its last. A log's own data does that only by
//! chance over a few repeats, so whoever removes them ([`remove`]) must also see that the log
//! reads in step without them where it did not with them. Blocks whose bytes differ (a signed
//! log's signatures) show only in the reading: [`infer`] finds them from damage that recurs at one
//! stride.

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
pub const SEARCHED: usize = (MIN_REPEATS as usize) * MAX_STRIDE;
/// Recurrences followed through the file before the search gives up (a log's own data recurs by
/// chance; a regular DataFlash log often).
const MAX_TRIED: usize = 4096;
/// Buckets of the table of recent positions of each 3-byte sequence, and positions kept in each.
const BUCKETS: usize = 1 << 16;
const KEPT: usize = 4;

/// Blocks at a fixed stride that were never part of the log: inserted into the file (read as
/// the file is without them: offsets, sizes and spans of the report are then the log's without
/// them), or written over it (see [`written_over`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Blocks {
    /// Offset of the first block in the file as it is.
    pub first: u64,
    /// Bytes from one block's start to the next's.
    pub stride: u64,
    /// Bytes in each block.
    pub length: u64,
    /// Blocks in the file.
    pub count: u64,
    /// The bytes of each block, in hex, when every block holds the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<String>,
    /// The size of the file as it is.
    pub input_size: u64,
}

impl Blocks {
    /// Whether the bytes `start..end` hold some of a block.
    pub fn overlaps(&self, start: u64, end: u64) -> bool {
        // Of the blocks that start before `end`, the last ends last.
        let Some(from_first) = end.checked_sub(1).and_then(|e| e.checked_sub(self.first)) else {
            return false;
        };
        let last = (from_first / self.stride).min(self.count.saturating_sub(1));
        self.first + last * self.stride + self.length > start
    }

    /// Whether the blocks run over a file of `size` bytes: the first within its first stride,
    /// the last within its last.
    fn cover(&self, size: u64) -> bool {
        let last_end = self.first + self.count.saturating_sub(1) * self.stride + self.length;
        self.first < self.stride && size.saturating_sub(last_end) < self.stride
    }
}

/// Bytes in `spans`.
fn span_bytes(spans: &[(u64, u64)]) -> u64 {
    spans.iter().map(|(start, end)| end - start).sum()
}

/// Recurring blocks in `data`, most bytes first: each the same bytes at one stride, from within
/// the first stride of the file to within the last, at least [`MIN_REPEATS`] times. A block is
/// looked for by its 3-byte sequences (2 bytes, as common in frames as `06 00`, recur too often
/// between two strides of some KiB to be followed): shorter ones show in the reading alone (see
/// [`infer`]).
pub fn find(data: &[u8]) -> Vec<Blocks> {
    let mut found: Vec<Blocks> = Vec::new();
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

/// Blocks of the same bytes at one stride that were written over the log rather than inserted
/// into it (a download that wrote each chunk's header over the chunk's first bytes): they show in
/// a log's header (`headers`, the byte ranges of the headers of `data` that read as damaged) as
/// bytes no header holds in place of its text (where a header's reading may have stopped, so
/// `headers` reach past where their reading ended). From each such run of bytes, the same bytes are
/// looked for a stride on, and the blocks must then recur from the first stride of the file to
/// the last, as [`find`] asks of blocks. The log's own bytes under them are lost.
pub fn written_over(data: &[u8], headers: &[std::ops::Range<usize>]) -> Option<Blocks> {
    let foreign = |b: u8| (b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t')) || b == 0x7f;
    let text =
        |b: Option<&u8>| b.is_some_and(|&b| (0x20..0x7f).contains(&b) || b"\n\r\t".contains(&b));
    // Runs of such bytes with text on either side: in a header, whose reading may have stopped
    // at them.
    let mut runs = headers.iter().flat_map(|h| {
        let header = &data[h.start.min(data.len())..h.end.min(data.len())];
        let mut at = 0;
        std::iter::from_fn(move || {
            loop {
                let start = at + header[at..].iter().position(|&b| foreign(b))?;
                let len = header[start..].iter().take_while(|&&b| foreign(b)).count();
                at = start + len;
                let before = start.checked_sub(1).and_then(|i| header.get(i));
                if text(before) && text(header.get(at)) {
                    return Some(h.start + start..h.start + start + len.max(2));
                }
            }
        })
    });
    runs.by_ref().take(MAX_HEADER_RUNS).find_map(|run| {
        let seed = data.get(run.clone())?;
        let after = run.start + MIN_STRIDE..(run.start + MAX_STRIDE + seed.len()).min(data.len());
        let ahead = data.get(after.clone())?;
        memchr::memmem::find_iter(ahead, seed)
            .take(MAX_SEED_MATCHES)
            .find_map(|p| extend(data, run.start, after.start + p - run.start))
    })
}

/// Runs of bytes in damaged headers that [`written_over`] follows, and the places a stride on
/// where it tries each.
const MAX_HEADER_RUNS: usize = 16;
const MAX_SEED_MATCHES: usize = 64;

/// Of the places blocks disturbed the reading, at most one in this many may still lie by a
/// corrupt span without them.
pub const HEALED: u64 = 10;

/// Candidates of [`find`] tried before giving up.
const TRIED: usize = 3;

/// How near (bytes) a block must lie to a corrupt span to have disturbed the reading, and how far
/// from every corrupt span the place it was taken from must lie once it is gone.
pub const NEAR: u64 = 256;

/// `data` without the recurring blocks of [`find`] (or, when it finds none, of [`infer`]) that
/// the log reads in step without: of the candidates whose blocks lie by corrupt spans, at least
/// half of them, and without which a corrupt span is left near at most one in [`HEALED`] of the
/// places they disturbed, the one that leaves the fewest corrupt bytes, fewer than with them.
/// `corrupt_spans` reads a log and gives its corrupt spans. A log that reads clean as it is is
/// never changed.
pub fn restore(
    data: &[u8],
    corrupt_spans: impl Fn(&[u8]) -> Vec<(u64, u64)>,
) -> Option<(Vec<u8>, Blocks)> {
    let candidates = find(data);
    // A file no longer than the bytes `infer` reads first is read once for both.
    let mut before =
        (!candidates.is_empty() || data.len() <= SEARCHED).then(|| corrupt_spans(data));
    if let Some(spans) = before.as_ref().filter(|_| !candidates.is_empty())
        && let Some(restored) = best_without(data, candidates, spans, &corrupt_spans)
    {
        return Some(restored);
    }
    let searched_spans = match &before {
        Some(spans) if data.len() <= SEARCHED => spans.clone(),
        _ => corrupt_spans(&data[..SEARCHED.min(data.len())]),
    };
    let candidates = infer_from(data, searched_spans, &corrupt_spans);
    if candidates.is_empty() {
        return None;
    }
    let spans = before.get_or_insert_with(|| corrupt_spans(data));
    best_without(data, candidates, spans, &corrupt_spans)
}

/// Whether `spans` hold a span that `at..at + len` lies in or [`NEAR`] to.
fn near(spans: &[(u64, u64)], at: u64, len: u64) -> bool {
    spans
        .iter()
        .any(|&(start, end)| start <= at + len + NEAR && at < end + NEAR)
}

/// How many of `blocks` lie in or [`NEAR`] to a corrupt span of `spans`: the places where they
/// disturbed a reading.
pub fn disturbed(blocks: &Blocks, spans: &[(u64, u64)]) -> u64 {
    (0..blocks.count)
        .filter(|k| near(spans, blocks.first + k * blocks.stride, blocks.length))
        .count() as u64
}

/// Of `candidates`, the blocks without which `data` reads best, if it reads well enough (see
/// [`restore`]); `before` are its corrupt spans with them.
fn best_without(
    data: &[u8],
    candidates: Vec<Blocks>,
    before: &[(u64, u64)],
    corrupt_spans: &impl Fn(&[u8]) -> Vec<(u64, u64)>,
) -> Option<(Vec<u8>, Blocks)> {
    let mut best: Option<(u64, Vec<u8>, Blocks)> = None;
    for blocks in candidates.into_iter().take(TRIED) {
        let disturbed = disturbed(&blocks, before);
        if disturbed * 2 < blocks.count {
            continue;
        }
        let restored = remove(data, &blocks);
        let after = corrupt_spans(&restored);
        // Damage of the log's own may lie by a few of the places.
        let still = removal_points(&blocks)
            .filter(|&at| near(&after, at, 0))
            .count() as u64;
        let left = span_bytes(&after);
        if still * HEALED <= disturbed
            && left < span_bytes(before)
            && best.as_ref().is_none_or(|b| left < b.0)
        {
            best = Some((left, restored, blocks));
        }
    }
    best.map(|(_, restored, blocks)| (restored, blocks))
}

/// Width (bytes) of the bins in which [`infer`] counts the distances between damage starts.
const GAP_BIN: u64 = 32;
/// Bins of distances whose strides [`infer`] tries, the fullest first; and how far (bytes) on
/// either side of a bin it tries them: about the longest message or frame, which a block may cut
/// into anywhere.
const GAP_BINS_TRIED: usize = 8;
const GAP_REACH: u64 = 128;
/// The largest multiple of the stride a bin of distances is taken for.
const MAX_MULTIPLE: u64 = 4;
/// Strides [`infer`] reads the log without blocks at, the likeliest first.
const STRIDES_TRIED: usize = 3;
/// How far (bytes) from where the damage [`infer`] reads puts a block's ends it tries them.
const MAX_END_MOVE: u64 = 64;
/// Blocks [`infer`] must see the damage of: fewer, in a short file, recur by chance.
pub const MIN_INFERRED: u64 = 12;
/// Strides of a log [`infer`] reads to see where a block's ends leave it best, and the most bytes
/// it reads for that.
const PROBED_BLOCKS: u64 = MIN_REPEATS + 2;
const MAX_PROBED: u64 = 64 << 10;
/// Readings of the first blocks [`infer`] makes in all (a reading that ends the search comes
/// within the first hundreds where blocks made the damage).
const MAX_READS: usize = 500;

/// Pairs of ends as good over the first blocks that [`infer`] reads over all it searched.
const MAX_ENDS_READ: usize = 16;

/// Strides of a log [`infer`] reads at `stride` to see where a block's ends leave it best.
fn probed_blocks(stride: u64) -> u64 {
    (MAX_PROBED / stride).clamp(MIN_REPEATS, PROBED_BLOCKS)
}

/// Blocks of any bytes inserted at one stride, found from where a reading of the first
/// 256 KiB of `data` (`corrupt_spans`) is damaged: a stride and a place in it at which
/// nine in ten of the places from the first damage on lie inside a corrupt span (damage of other
/// causes may lie between them), and at least [`MIN_INFERRED`] do. The block's ends are taken
/// where the reading without the blocks leaves the fewest corrupt bytes. The blocks found extend
/// over the whole file, as those of [`find`] do.
pub fn infer(data: &[u8], corrupt_spans: &impl Fn(&[u8]) -> Vec<(u64, u64)>) -> Vec<Blocks> {
    let searched = &data[..data.len().min(SEARCHED)];
    infer_from(data, corrupt_spans(searched), corrupt_spans)
}

/// [`infer`], given the corrupt spans of the first [`SEARCHED`] bytes.
fn infer_from(
    data: &[u8],
    searched_spans: Vec<(u64, u64)>,
    corrupt_spans: &impl Fn(&[u8]) -> Vec<(u64, u64)>,
) -> Vec<Blocks> {
    let searched = &data[..data.len().min(SEARCHED)];
    let cut = searched.len() as u64;
    // A span by the cut may be the cut's.
    let mut spans: Vec<(u64, u64)> = searched_spans
        .into_iter()
        .filter(|&(start, end)| start < end && end.saturating_add(NEAR) < cut)
        .collect();
    spans.sort_unstable();
    // Damage denser than blocks at the shortest stride, or over half the bytes, is no sign of
    // them: any place at any stride would lie in it.
    if (spans.len() as u64) < MIN_INFERRED
        || spans.len() as u64 > cut / MIN_STRIDE as u64
        || span_bytes(&spans) * 2 > cut
    {
        return Vec::new();
    }
    let strides = likely_strides(&spans);
    let mut places: Vec<(u64, u64, u64, u64)> = strides
        .into_iter()
        .filter_map(|stride| best_place(&spans, stride, cut, false))
        .collect();
    // Inside the most spans; a stride a little off narrows the stretch the spans share.
    places.sort_unstable_by_key(|&(inside, stride, lo, hi)| {
        std::cmp::Reverse((inside, hi - lo, std::cmp::Reverse(stride)))
    });
    let blocks_in = |bytes: &[u8], stride: u64, start: u64, end: u64| {
        let first = start % stride;
        let length = end - start;
        let count = (bytes.len() as u64)
            .checked_sub(first + length)
            .map_or(0, |room| room / stride + 1);
        Blocks {
            first,
            stride,
            length,
            count,
            bytes: None,
            input_size: bytes.len() as u64,
        }
    };
    // Where the ends leave the fewest corrupt bytes, read as far as `upto` of the first blocks.
    let corrupt_bytes = |stride: u64, start: u64, end: u64, upto: u64| -> u64 {
        let upto = start.saturating_add(upto.saturating_mul(stride));
        let read = &searched[..upto.min(cut) as usize];
        span_bytes(&corrupt_spans(&remove(
            read,
            &blocks_in(read, stride, start, end),
        )))
    };
    // Every stride and pair of ends tried over the first few blocks; the best of them then over
    // all blocks read. A block's end moved into the log may change bytes inside a message only
    // (no frame or message shows it): the more blocks read, the fewer such ends stay as good.
    let mut ends: Vec<(u64, u64, u64, u64)> = Vec::new();
    let try_ends = |ends: &mut Vec<(u64, u64, u64, u64)>, stride: u64, lo: u64, hi: u64| {
        // Pairs of ends in the stretch, those nearest its ends first, as far as the budget. A pair
        // that reads clean ends the search once every pair as far moved is read (moving both ends
        // one way, into the log's bytes that frame no message, reads as clean).
        let reach = (hi - lo).min(MAX_END_MOVE);
        for moved in 0..=2 * reach {
            for from_start in 0..=moved.min(reach) {
                let from_end = moved - from_start;
                let (start, Some(end)) = (lo + from_start, hi.checked_sub(from_end)) else {
                    continue;
                };
                if from_end > reach || start >= end || ends.len() >= MAX_READS {
                    continue;
                }
                let left = corrupt_bytes(stride, start, end, probed_blocks(stride));
                ends.push((left, stride, start, end));
            }
            if ends.iter().any(|e| e.0 == 0) || ends.len() >= MAX_READS {
                return;
            }
        }
    };
    let likeliest = &places[..places.len().min(STRIDES_TRIED)];
    for &(_, stride, lo, hi) in likeliest {
        if !ends.iter().any(|e| e.0 == 0) {
            try_ends(&mut ends, stride, lo, hi);
        }
    }
    // When no pair of ends reads clean, the stretches a tenth of the spans may miss.
    if ends.iter().all(|e| e.0 > 0) {
        for &(_, stride, ..) in likeliest {
            if let Some((_, _, lo, hi)) = best_place(&spans, stride, cut, true) {
                try_ends(&mut ends, stride, lo, hi);
            }
        }
    }
    let fewest = |ends: &[(u64, u64, u64, u64)]| ends.iter().map(|e| e.0).min();
    let least = fewest(&ends);
    ends.retain(|e| Some(e.0) == least);
    ends.truncate(MAX_ENDS_READ);
    for e in &mut ends {
        e.0 = corrupt_bytes(e.1, e.2, e.3, u64::MAX);
    }
    let least = fewest(&ends);
    ends.into_iter()
        .filter(|e| Some(e.0) == least)
        .map(|(_, stride, start, end)| blocks_in(data, stride, start, end))
        .filter(|blocks| blocks.count >= MIN_REPEATS && blocks.cover(data.len() as u64))
        .take(TRIED)
        .collect()
}

/// The strides at which blocks could have made the damage of `spans` (sorted): about the most
/// frequent distances from each damage start to the next few, and their halves, thirds and
/// quarters (damage of other causes may lie between two blocks).
fn likely_strides(spans: &[(u64, u64)]) -> std::collections::BTreeSet<u64> {
    let mut bins = std::collections::HashMap::<u64, u32>::new();
    for (i, &(start, _)) in spans.iter().enumerate() {
        for &(later, _) in spans.iter().skip(i + 1).take(4) {
            let gap = later - start;
            if (MIN_STRIDE as u64..=MAX_STRIDE as u64).contains(&gap) {
                *bins.entry(gap / GAP_BIN).or_default() += 1;
            }
        }
    }
    let mut bins: Vec<(u64, u32)> = bins.into_iter().collect();
    bins.sort_by_key(|&(bin, count)| (std::cmp::Reverse(count), bin));
    bins.iter()
        .take(GAP_BINS_TRIED)
        .flat_map(|&(bin, _)| {
            (1..=MAX_MULTIPLE).flat_map(move |times| {
                let from = ((bin * GAP_BIN) / times).saturating_sub(GAP_REACH);
                let to = ((bin + 1) * GAP_BIN) / times + GAP_REACH;
                from.max(MIN_STRIDE as u64)..=to.min(MAX_STRIDE as u64)
            })
        })
        .collect()
}

/// Where in `stride` a block lies inside the most `spans` (each shorter than the stride): how
/// many, the stride, and the stretch `lo..hi` (offsets in the file) of the first block from the
/// first span that lies inside all of them (`tolerant`: nine in ten); when nine in ten of the
/// places at that stride from there to `cut` do, and at least [`MIN_INFERRED`].
fn best_place(
    spans: &[(u64, u64)],
    stride: u64,
    cut: u64,
    tolerant: bool,
) -> Option<(u64, u64, u64, u64)> {
    // Where a block's first byte may lie in the stride, for each span: a circular stretch.
    let mut events: Vec<(u64, i32)> = Vec::with_capacity(spans.len() * 4);
    for &(start, end) in spans.iter().filter(|&&(a, b)| b - a < stride) {
        let (from, to) = (start % stride, (end - 1) % stride);
        if from <= to {
            events.extend([(from, 1), (to + 1, -1)]);
        } else {
            events.extend([(from, 1), (stride, -1), (0, 1), (to + 1, -1)]);
        }
    }
    events.sort_unstable();
    // The stretches of the stride inside at least `least` spans; one that runs to the end of the
    // stride goes on from its start.
    let stretches = |least: i32| {
        let mut inside = 0;
        let mut found: Vec<std::ops::Range<u64>> = Vec::new();
        for (i, &(at, change)) in events.iter().enumerate() {
            inside += change;
            let next = events.get(i + 1).map_or(stride, |e| e.0);
            if inside >= least && next > at {
                match found.last_mut() {
                    Some(last) if last.end == at => last.end = next,
                    _ => found.push(at..next),
                }
            }
        }
        found
    };
    let mut inside = 0;
    let most = events
        .iter()
        .map(|&(_, change)| {
            inside += change;
            inside
        })
        .max()?;
    // Tolerant, one span in ten may end inside a block (a reading can find its step again in
    // foreign bytes) or start after its first byte.
    let mut found = stretches(if tolerant { most - most / 10 } else { most });
    if found.len() > 1 && found[0].start == 0 && found[found.len() - 1].end == stride {
        let wrapped = found.remove(0);
        if let Some(last) = found.last_mut() {
            last.end = stride + wrapped.end;
        }
    }
    let place = found.into_iter().max_by_key(|r| r.end - r.start)?;
    let first_span = spans.first()?.0;
    let first = first_span + (place.start + stride - first_span % stride) % stride;
    let places = cut.saturating_sub(first + NEAR) / stride + 1;
    let inside = most as u64;
    // `place` holds the block's possible first bytes, and the spans' common end is one past it.
    (inside >= MIN_INFERRED && inside * 10 >= places * 9)
        .then(|| (inside, stride, first, first + (place.end - place.start)))
}

/// The bytes of `data` without the blocks.
pub fn remove(data: &[u8], insertions: &Blocks) -> Vec<u8> {
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
pub fn removal_points(insertions: &Blocks) -> impl Iterator<Item = u64> + '_ {
    let step = insertions.stride - insertions.length;
    (0..insertions.count).map(move |k| insertions.first + k * step)
}

/// Pass to `seen` each position and stride at which a 3-byte sequence occurs three times
/// equally spaced in the first [`SEARCHED`] bytes, until it returns false.
fn recurring_sequences(data: &[u8], mut seen: impl FnMut(usize, usize) -> bool) {
    let searched = &data[..data.len().min(SEARCHED)];
    // Per bucket, the last positions (plus one; 0 for none) of the sequences hashed to it.
    let mut recent = vec![[0u32; KEPT]; BUCKETS];
    let mut sequence = 0u32;
    for (i, &byte) in searched.iter().enumerate() {
        sequence = (sequence << 8 | u32::from(byte)) & 0xFF_FFFF;
        // A run of one byte recurs at every stride.
        if i < 2 || sequence == u32::from(byte) * 0x01_0101 {
            continue;
        }
        let at = i - 2;
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
fn extend(data: &[u8], at: usize, stride: usize) -> Option<Blocks> {
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
    let all_same = starts(first, len).all(|s| &data[s..s + len] == block);
    let one_byte = block.iter().all(|&b| b == block[0]);
    let blocks = Blocks {
        first: first as u64,
        stride: stride as u64,
        length: len as u64,
        count: starts(first, len).count() as u64,
        bytes: Some(block.iter().map(|b| format!("{b:02x}")).collect()),
        input_size: data.len() as u64,
    };
    let whole_file = blocks.cover(data.len() as u64);
    (all_same && blocks.count >= MIN_REPEATS && whole_file && !one_byte).then_some(blocks)
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
        assert_eq!(best.bytes.as_deref(), Some("000800"));
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

    /// A log of 12-byte frames, each starting with `A5`, read as a decoder would: where a frame
    /// is not followed by the next one, a corrupt span runs to the next two that follow each other.
    fn framed_log(frames: usize) -> Vec<u8> {
        let noise = log(frames * 11);
        noise
            .chunks(11)
            .flat_map(|payload| {
                std::iter::once(0xA5).chain(payload.iter().map(|&b| if b == 0xA5 { 0 } else { b }))
            })
            .collect()
    }

    fn framed_spans(data: &[u8]) -> Vec<(u64, u64)> {
        let frame_at = |i: usize| {
            data.get(i) == Some(&0xA5) && (i + 12 == data.len() || data.get(i + 12) == Some(&0xA5))
        };
        let (mut spans, mut i) = (Vec::new(), 0);
        while i + 12 <= data.len() {
            if frame_at(i) {
                i += 12;
                continue;
            }
            let start = i;
            while i + 12 <= data.len() && !frame_at(i) {
                i += 1;
            }
            spans.push((start as u64, i as u64));
        }
        spans
    }

    #[test]
    fn blocks_of_differing_bytes_are_found_from_the_damage_they_do() {
        let log = framed_log(4000);
        assert!(framed_spans(&log).is_empty());
        // A 20-byte block of other bytes after every 1001 bytes of the log: inside frames, at
        // every place in them, and between two.
        let mut copy = Vec::new();
        for (i, chunk) in log.chunks(1001).enumerate() {
            if i > 0 {
                copy.extend((0..20).map(|b| (i * 31 + b * 7) as u8 | 1));
            }
            copy.extend_from_slice(chunk);
        }
        let found = infer(&copy, &framed_spans);
        let best = &found[0];
        assert_eq!(
            (
                best.first,
                best.stride,
                best.length,
                best.count,
                &best.bytes
            ),
            (1001, 1021, 20, 47, &None)
        );
        let (restored, blocks) = restore(&copy, framed_spans).unwrap();
        assert_eq!((restored, blocks), (log.clone(), best.clone()));
        // Damage at no stride is no block.
        let mut scattered = log.clone();
        for at in [700, 2900, 3100, 9000, 20_000, 31_000] {
            scattered[at] ^= 0x5A;
        }
        assert!(infer(&scattered, &framed_spans).is_empty());
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
