//! Decoding a file on several threads: its sessions side by side, and a long session in pieces.
//!
//! Sessions decode independently of each other. Within a session every frame depends on the
//! decoder's state after the one before, so a later piece starts with a fresh decoder at its first
//! I frame and publishes its state after each of its first accepted I frames. The piece before
//! runs on past the split until, after one of those I frames, its own state equals the published
//! one: from there on both would decode alike, so its report up to that frame is joined to the
//! later piece's report from that frame on. A piece that never meets the next one's state decodes
//! to the session's end, and the report is still the one a single thread gives.

use super::Plan;
use super::decoder::{Piece, PieceEnd, Validation};
use super::sink::Sink;
use crate::report::{FileReport, SessionReport};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::channel;

/// Sessions at least twice this long are split between threads, in pieces of at least this.
pub const MIN_PIECE: usize = 16 << 20;

/// How the sessions of a decode were split.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Splits {
    /// Pieces beyond the first of each session.
    pub pieces: usize,
    /// Of those, the pieces whose report was joined to the one before.
    pub joined: usize,
}

/// [`super::decode`] on `workers` threads, each passing its frames to the sink `sink_of` makes for
/// it: sessions side by side, and sessions of at least 2 × [`MIN_PIECE`] bytes in pieces. The
/// report is the one [`super::decode`] gives. Frames of different sessions interleave, and the
/// frames where a split session's pieces overlap reach two sinks: fit for sinks that follow
/// progress, not for ones that keep frames.
pub fn decode_in_parallel<S: Sink>(
    path: &str,
    file: &[u8],
    workers: usize,
    sink_of: impl Fn(usize) -> S + Sync,
) -> FileReport {
    decode_in_pieces(path, file, workers, MIN_PIECE, sink_of).0
}

/// [`decode_in_parallel`] with sessions of at least 2 × `min_piece` bytes split, and how they were.
pub fn decode_in_pieces<S: Sink>(
    path: &str,
    file: &[u8],
    workers: usize,
    min_piece: usize,
    sink_of: impl Fn(usize) -> S + Sync,
) -> (FileReport, Splits) {
    if workers <= 1 {
        let report =
            super::decode_with(Validation::Thorough, path, file, |_, _| {}, &mut sink_of(0));
        return (report, Splits::default());
    }
    let plan = Plan::of(file, &mut sink_of(0), Validation::Thorough);
    let units = units(&plan, workers, min_piece.max(1));
    let next = AtomicUsize::new(0);
    let mut ends: Vec<(usize, PieceEnd)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers.min(units.len().max(1)))
            .map(|worker| {
                let (plan, units, next, sink_of) = (&plan, &units, &next, &sink_of);
                scope.spawn(move || {
                    let mut sink = sink_of(worker);
                    let mut done = Vec::new();
                    // Units are taken in order, so a piece's next piece has always been taken
                    // or is taken next by a thread that does not wait.
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(unit) = units.get(i) else {
                            return done;
                        };
                        let session = plan.session(file, unit.session);
                        let end = plan
                            .decoder(file, &session, Validation::Thorough)
                            .run_piece(unit.take_piece(), &mut sink);
                        done.push((i, end));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    ends.sort_unstable_by_key(|&(i, _)| i);
    let mut splits = Splits::default();
    let mut reports = Vec::with_capacity(plan.bounds.len());
    let mut ends = ends.into_iter().zip(&units).peekable();
    while let Some(((_, first), unit)) = ends.next() {
        let mut later = Vec::new();
        while let Some(((_, end), _)) = ends.next_if(|(_, u)| u.session == unit.session) {
            later.push(end);
        }
        splits.pieces += later.len();
        let (report, joined) = join(first, later);
        splits.joined += joined;
        reports.push(report);
    }
    (plan.report(path, file, reports), splits)
}

/// One piece of work: a whole session, or a piece of one.
struct Unit {
    session: usize,
    /// Taken by the thread that decodes it.
    piece: Mutex<Piece>,
}

impl Unit {
    fn take_piece(&self) -> Piece {
        self.piece
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default()
    }
}

/// The units of work: each session in as many pieces of at least `min_piece` bytes as there are
/// threads, in file order.
fn units(plan: &Plan, workers: usize, min_piece: usize) -> Vec<Unit> {
    let mut units = Vec::with_capacity(plan.bounds.len());
    for (session, b) in plan.bounds.iter().enumerate() {
        let len = b.end - b.start;
        let count = (len / min_piece).clamp(1, workers);
        let start = |k: usize| b.start + len / count * k;
        let mut pieces: Vec<Piece> = (0..count)
            .map(|k| Piece {
                from: (k > 0).then(|| start(k)),
                ..Piece::default()
            })
            .collect();
        for k in 1..count {
            let (sender, receiver) = channel();
            let until = if k + 1 < count { start(k + 1) } else { b.end };
            pieces[k - 1].join = Some((receiver, start(k)));
            pieces[k].publish = Some((sender, until));
        }
        units.extend(pieces.into_iter().map(|piece| Unit {
            session,
            piece: Mutex::new(piece),
        }));
    }
    units
}

/// A session's report from its pieces: the first piece's up to where it met the second, then the
/// second's up to where it met the third, and so on; and how many pieces were joined.
fn join(first: PieceEnd, later: Vec<PieceEnd>) -> (SessionReport, usize) {
    let mut report = first.report;
    let mut at = first.joined_at;
    let mut joined = 0;
    for piece in later {
        let Some(offset) = at else { break };
        let Some(then) = piece.published.iter().find(|p| p.offset == offset) else {
            unreachable!("a piece joins only at a state the next one published")
        };
        let accounted = then.accounted as u64;
        let next = piece.report;
        report.frames.add_since(&next.frames, &then.frames);
        for (name, &count) in &next.events {
            let since = count.saturating_sub(then.events.get(name).copied().unwrap_or(0));
            if since > 0 {
                *report.events.entry(name.clone()).or_default() += since;
            }
        }
        report.last_iteration = next.last_iteration;
        report.last_time_us = next.last_time_us;
        report.log_end = next.log_end;
        report.corrupt_spans.extend(
            next.corrupt_spans
                .into_iter()
                .filter(|s| s.start >= accounted),
        );
        report.suspect_spans.extend(
            next.suspect_spans
                .into_iter()
                .filter(|s| s.start >= accounted),
        );
        for region in next.regions {
            report.push_region(region.start.max(accounted), region.end, region.kind);
        }
        joined += 1;
        at = piece.joined_at;
    }
    report.settle();
    (report, joined)
}
