//! In a text-mode copy each line feed may have been a carriage return or a CR LF pair. A main
//! frame whose values would differ had a line feed been a carriage return (or a pair) notes those
//! values, each reading apart; the group reads the line feed as whichever reading joins the
//! frames around them best, and the reading stands where it does so by [`LINE_FEED_MARGIN`]
//! against each other reading, over at least [`MIN_LINE_FEED_STEPS`] steps (or one step from a
//! kept frame before the group). Otherwise the frames from there on are suspect (`line-feed`), or
//! refused (`newline-converted`) where the iteration or time rests on the line feed. Calibration
//! (`docs/quality.md`): at 1.75× the text-mode copies of 14 real logs keep 65.7 % of their intact
//! frames and 1,217 materially wrong frames trusted, against 63.7 % and 878 at 2×, 68.0 % and
//! 1,487 at 1.5×; 1.75× is the highest margin that keeps 65 %. Clean logs are never read this
//! way.

use super::p_frame_offset::carried_error;
use super::value_bounds::within;
use crate::blackbox::frame::FrameKind;
use crate::blackbox::group::{Group, LineFeedValue, Neighbours};
use crate::blackbox::predictor::{Context, Predictor, keep_32_bits};

/// How much better (in squared steps) one reading of a line feed in a text-mode copy must join
/// its neighbours than the other, for the reading to stand.
pub const LINE_FEED_MARGIN: f64 = 1.75;

/// Steps between main frames that must tell the readings of a line feed apart (one step alone,
/// into or out of a group, is too often a jump in the flight's own data).
pub const MIN_LINE_FEED_STEPS: usize = 2;

impl Group {
    /// Note that the main frame held last starting at `start` reads otherwise if line feeds in it
    /// were carriage returns.
    pub fn note_line_feeds(&mut self, start: usize, values: &[LineFeedValue]) {
        let Some(item) = self.items.len().checked_sub(1) else {
            return;
        };
        if self.items[item].start == start && self.last_main.is_some() {
            self.line_feeds.extend(values.iter().map(|&v| (item, v)));
        }
    }

    /// The line feeds noted, one at a time: the range of [`Group::line_feeds`] holding the values
    /// of each (one item, one offset), every reading of it.
    fn each_line_feed(&self) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
        runs(&self.line_feeds, 0, |(item, v)| (*item, v.offset))
    }

    /// The other readings of the line feeds noted, one at a time: the range of
    /// [`Group::line_feeds`] holding the values of each (a line feed may have been a carriage
    /// return, or a CR LF pair that lost its CR: two readings of one line feed).
    fn each_reading(&self) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
        self.readings_in(0..self.line_feeds.len())
    }

    /// The readings of the line feeds in `within`, a range of [`Group::line_feeds`], as
    /// [`Group::each_reading`] gives them.
    fn readings_in(
        &self,
        within: std::ops::Range<usize>,
    ) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
        let start = within.start;
        runs(&self.line_feeds[within], start, |(item, v)| {
            (*item, v.offset, v.pair)
        })
    }

    /// How the readings of one line feed (`values`, of `item`) join their neighbours: the read
    /// values', the carriage return's, and whether the steps that tell them apart are enough
    /// ([`MIN_LINE_FEED_STEPS`], or one from the frame before the group to its I frame).
    fn judge(
        &self,
        item: usize,
        values: &[(usize, LineFeedValue)],
        around: &Neighbours<'_>,
        predictors: &[Predictor],
    ) -> (f64, f64, bool) {
        let (read, other, steps) = self.join_steps(item, values, around, predictors);
        let anchored = self.items[item].kind == FrameKind::I && !around.before.is_empty();
        let enough = steps >= MIN_LINE_FEED_STEPS || anchored && steps > 0;
        (read, other, enough)
    }

    /// Read each line feed as whichever other reading (a carriage return, a CR LF pair) joins
    /// its neighbours best, where one joins them better than the line feed: its values, and those
    /// of the P frames predicted from them, become what that reading gives (the line feed is then
    /// one of the other readings). Whether the reading stands is judged after, by
    /// [`LINE_FEED_MARGIN`]. Readings that would change a field of `timing` (the iteration and
    /// time), or give a main frame a value past its field's bound (`bounds`, see
    /// [`value_bounds`](super::value_bounds::value_bounds)), are left alone.
    pub fn read_carriage_returns(
        &mut self,
        around: &Neighbours<'_>,
        predictors: &[Predictor],
        high_bits: &[i64],
        bounds: &[u64],
        timing: [usize; 2],
    ) {
        if self.line_feeds.is_empty() {
            return;
        }
        let feeds: Vec<_> = self.each_line_feed().collect();
        // Rereading a line feed may change the count of its values (those after it move).
        let mut moved = 0isize;
        for feed in feeds {
            let feed =
                feed.start.saturating_add_signed(moved)..feed.end.saturating_add_signed(moved);
            let item = self.line_feeds[feed.start].0;
            // Where no reading stands, the frames are kept in doubt with the best one.
            let mut better: Vec<(f64, std::ops::Range<usize>)> = Vec::new();
            for reading in self.readings_in(feed.clone()) {
                let values = &self.line_feeds[reading.clone()];
                if values.iter().any(|(_, v)| timing.contains(&v.field)) {
                    continue;
                }
                let (read, other, _) = self.judge(item, values, around, predictors);
                if other < read {
                    better.push((other, reading));
                }
            }
            better.sort_by(|a, b| a.0.total_cmp(&b.0));
            let Some((_, chosen)) = better.into_iter().find(|(_, reading)| {
                let before = self.reread(item, reading.clone(), predictors, high_bits);
                let possible = self.possible_from(item, bounds);
                if !possible {
                    self.values = before;
                }
                possible
            }) else {
                continue;
            };
            let values = self.read_instead(feed.clone(), chosen);
            moved += values.len() as isize - feed.len() as isize;
            self.line_feeds.splice(feed, values);
        }
    }

    /// The values of the line feed `feed` once its reading `chosen` is the one read: that
    /// reading's differences turn round (the line feed as it was read is now the other
    /// reading), and each other reading's become the differences from it.
    fn read_instead(
        &self,
        feed: std::ops::Range<usize>,
        chosen: std::ops::Range<usize>,
    ) -> Vec<(usize, LineFeedValue)> {
        let chosen_values = &self.line_feeds[chosen.clone()];
        let delta_in = |values: &[(usize, LineFeedValue)], field: usize| {
            values
                .iter()
                .find(|(_, v)| v.field == field)
                .map_or(0, |(_, v)| v.delta)
        };
        let mut out: Vec<(usize, LineFeedValue)> = chosen_values
            .iter()
            .map(|&(item, v)| {
                (
                    item,
                    LineFeedValue {
                        delta: -v.delta,
                        ..v
                    },
                )
            })
            .collect();
        for reading in self.readings_in(feed) {
            if reading == chosen {
                continue;
            }
            let values = &self.line_feeds[reading];
            let (item, first) = values[0];
            let mut fields: Vec<usize> = values
                .iter()
                .chain(chosen_values)
                .map(|(_, v)| v.field)
                .collect();
            fields.sort_unstable();
            fields.dedup();
            for field in fields {
                let delta = delta_in(values, field) - delta_in(chosen_values, field);
                // Values are 32 bits wide: the step between them wraps.
                let delta = i64::from(delta as i32);
                if delta != 0 {
                    out.push((
                        item,
                        LineFeedValue {
                            field,
                            delta,
                            ..first
                        },
                    ));
                }
            }
        }
        out
    }

    /// Whether the main frames from `item` on hold only values their fields can take.
    fn possible_from(&self, item: usize, bounds: &[u64]) -> bool {
        self.items[item..]
            .iter()
            .filter(|it| matches!(it.kind, FrameKind::I | FrameKind::P))
            .all(|it| within(&self.values[it.values.clone()], bounds))
    }

    /// Give `item` the values the line feed `feed` of [`Group::line_feeds`] has as a carriage
    /// return, and the main frames after it what they are then predicted to be; the values as
    /// they were before.
    fn reread(
        &mut self,
        item: usize,
        feed: std::ops::Range<usize>,
        predictors: &[Predictor],
        high_bits: &[i64],
    ) -> Vec<i64> {
        let old = self.values.clone();
        let at = self.items[item].values.start;
        for &(_, v) in &self.line_feeds[feed] {
            let high_bits = high_bits.get(v.field).copied().unwrap_or(0);
            let value = &mut self.values[at + v.field];
            *value = keep_32_bits(*value + v.delta, high_bits);
        }
        let mains: Vec<std::ops::Range<usize>> = self
            .items
            .iter()
            .filter(|it| matches!(it.kind, FrameKind::I | FrameKind::P))
            .map(|it| it.values.clone())
            .collect();
        let Some(from) = mains.iter().position(|r| r.start == at) else {
            return old;
        };
        // A P frame is predicted from the two main frames before it (the I frame fills both).
        for k in from + 1..mains.len() {
            let (p1, p2) = (mains[k - 1].clone(), mains[k.saturating_sub(2)].clone());
            let frame = mains[k].clone();
            for (f, predictor) in predictors.iter().enumerate().take(frame.len()) {
                let predict = |values: &[i64]| {
                    let context = Context {
                        previous: Some(&values[p1.clone()]),
                        previous2: Some(&values[p2.clone()]),
                        ..Context::default()
                    };
                    predictor.predict(f, &context, &values[frame.clone()])
                };
                let (then, now) = (predict(&old), predict(&self.values));
                if now != then {
                    let high_bits = high_bits.get(f).copied().unwrap_or(0);
                    self.values[frame.start + f] =
                        keep_32_bits(old[frame.start + f] + now - then, high_bits);
                }
            }
        }
        old
    }

    /// The first item whose values rest on a line feed that its neighbours do not show to be one
    /// (`items.len()` when there is none), and the first whose value of `field` does. The read
    /// values and those a carriage return would give are carried through the P frames held
    /// (`predictors`), and each is joined to the main frame before it (`around.before` for the I
    /// frame, when known) and the last to the next I frame, when known: the reading stands when
    /// its values step less, by [`LINE_FEED_MARGIN`], over enough steps (see [`Group::judge`]).
    pub fn first_unsettled_line_feeds(
        &self,
        around: &Neighbours<'_>,
        predictors: &[Predictor],
        field: usize,
    ) -> (usize, usize) {
        let (mut first, mut first_in_field) = (self.items.len(), self.items.len());
        for range in self.each_reading() {
            let values = &self.line_feeds[range];
            let item = values[0].0;
            let in_field = values.iter().any(|(_, v)| v.field == field);
            if item >= first && !(in_field && item < first_in_field) {
                continue;
            }
            if !self.settled(item, values, around, predictors) {
                first = first.min(item);
                if in_field {
                    first_in_field = first_in_field.min(item);
                }
            }
        }
        (first, first_in_field)
    }

    /// The fields whose values in the group's last main frame rest on a line feed its neighbours
    /// do not show to be one, with the difference reading it otherwise makes there, into
    /// `doubts`.
    pub fn unsettled_fields(
        &self,
        around: &Neighbours<'_>,
        predictors: &[Predictor],
        doubts: &mut Vec<(usize, i64)>,
    ) {
        for range in self.each_reading() {
            let values = &self.line_feeds[range];
            let item = values[0].0;
            if self.settled(item, values, around, predictors) {
                continue;
            }
            let intra = self.items[item].kind == FrameKind::I;
            let later = self.items[item + 1..]
                .iter()
                .filter(|it| matches!(it.kind, FrameKind::I | FrameKind::P))
                .count();
            for (_, v) in values {
                let (mut e1, mut e2) = (v.delta as f64, if intra { v.delta as f64 } else { 0.0 });
                for _ in 0..later {
                    (e2, e1) = (e1, carried_error(predictors.get(v.field), e1, e2));
                }
                let carried = e1.round() as i64;
                if carried != 0 {
                    doubts.push((v.field, carried));
                }
            }
        }
    }

    /// Whether the values read of one line feed stand (see [`Group::first_unsettled_line_feeds`]).
    fn settled(
        &self,
        item: usize,
        values: &[(usize, LineFeedValue)],
        around: &Neighbours<'_>,
        predictors: &[Predictor],
    ) -> bool {
        let (read, other, enough) = self.judge(item, values, around, predictors);
        enough && read * LINE_FEED_MARGIN < other
    }

    /// How much the read values and the carriage-return values change between consecutive main
    /// frames (sums of squares), from the main frame before `item` to the next I frame, over the
    /// steps the difference changes, summed over `values`' fields.
    pub(in crate::blackbox) fn join_steps(
        &self,
        item: usize,
        values: &[(usize, LineFeedValue)],
        around: &Neighbours<'_>,
        predictors: &[Predictor],
    ) -> (f64, f64, usize) {
        let before = around.before;
        let main = |i: usize| {
            let it = &self.items[i];
            matches!(it.kind, FrameKind::I | FrameKind::P).then(|| self.values(it))
        };
        let intra = self.items[item].kind == FrameKind::I;
        let within = (0..item).rev().find_map(main);
        let item_is_first = within.is_none();
        let previous = within.or_else(|| (intra && !before.is_empty()).then_some(before));
        let mut join = Join::default();
        for (_, lf) in values {
            let f = lf.field;
            let at = |frame: &[i64]| frame.get(f).copied();
            let Some(v) = main(item).and_then(at) else {
                return (0.0, 0.0, 0);
            };
            let delta = lf.delta as f64;
            // The frame before the group and the next I frame may rest on line feeds of their
            // own: each reading joins whichever of their readings fits best.
            if let Some(p) = previous.and_then(at) {
                let doubts = around.before_doubtful.iter().filter(|_| item_is_first);
                let before = Candidates::of(p, f, doubts.copied());
                join.step(before.values(), 0.0, &[v], delta);
            }
            // The difference carried through the P frames held, by the field's P predictor (an I
            // frame fills both history slots).
            let (mut last, mut e1, mut e2) = ((v, delta), delta, if intra { delta } else { 0.0 });
            for frame in (item + 1..self.items.len()).filter_map(main) {
                let e = carried_error(predictors.get(f), e1, e2);
                (e2, e1) = (e1, e);
                let value = at(frame).unwrap_or(last.0);
                join.step(&[last.0], last.1, &[value], e);
                last = (value, e);
            }
            if let Some(n) = around.next.and_then(at) {
                let doubts = around.next_line_feeds.iter().map(|v| (v.field, v.delta));
                let next = Candidates::of(n, f, doubts);
                join.step(&[last.0], last.1, next.values(), 0.0);
            }
        }
        (join.read, join.other, join.steps)
    }
}

/// The values a field of a frame beside the group may have: the one read, and those line feeds
/// read otherwise would give (the first few).
struct Candidates {
    values: [i64; 5],
    count: usize,
}

impl Candidates {
    /// `value` of `field`, and `value` plus each difference `doubts` holds for that field.
    fn of(value: i64, field: usize, doubts: impl Iterator<Item = (usize, i64)>) -> Candidates {
        let mut c = Candidates {
            values: [value; 5],
            count: 1,
        };
        for (_, delta) in doubts.filter(|&(f, _)| f == field).take(4) {
            c.values[c.count] = value + delta;
            c.count += 1;
        }
        c
    }

    fn values(&self) -> &[i64] {
        &self.values[..self.count]
    }
}

/// Sums of squared steps between consecutive main frames, as the read values and the other
/// reading of a line feed take them, over the steps that tell the two apart.
#[derive(Default)]
struct Join {
    read: f64,
    other: f64,
    steps: usize,
}

impl Join {
    /// The step from a frame whose value may be any of `from`, the other reading adding
    /// `from_diff`, to one whose value may be any of `to`, the other reading adding `to_diff`.
    /// A step where the difference does not change, or where candidates make both readings
    /// join alike, tells nothing.
    fn step(&mut self, from: &[i64], from_diff: f64, to: &[i64], to_diff: f64) {
        if from_diff == to_diff {
            return;
        }
        let best = |shift: f64| {
            let mut best = f64::INFINITY;
            for &a in from {
                for &b in to {
                    best = best.min((b as f64 - a as f64 + shift).powi(2));
                }
            }
            best
        };
        let (read, other) = (best(0.0), best(to_diff - from_diff));
        if from.len() + to.len() == 2 || read != other {
            self.steps += 1;
            self.read += read;
            self.other += other;
        }
    }
}

/// The runs of `values` that share a `key`, as ranges offset by `start`.
fn runs<'a, K: PartialEq>(
    values: &'a [(usize, LineFeedValue)],
    start: usize,
    key: impl Fn(&(usize, LineFeedValue)) -> K + 'a,
) -> impl Iterator<Item = std::ops::Range<usize>> + 'a {
    let mut i = 0;
    std::iter::from_fn(move || {
        let first = key(values.get(i)?);
        let count = values[i..].iter().take_while(|v| key(v) == first).count();
        i += count;
        Some(start + i - count..start + i)
    })
}
