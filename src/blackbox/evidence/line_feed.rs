//! In a text-mode copy each line feed may have been a carriage return or a CR LF pair. A main
//! frame whose values would differ had a line feed been a carriage return notes those values;
//! the group reads the line feed as one only where the read values join the frames around them
//! better, by [`LINE_FEED_MARGIN`], over at least [`MIN_LINE_FEED_STEPS`] steps. Otherwise the
//! frames from there on are refused (`newline-converted`).

use super::p_frame_offset::carried_error;
use crate::blackbox::frame::FrameKind;
use crate::blackbox::group::{Group, LineFeedValue};
use crate::blackbox::predictor::Predictor;

/// How much better the read values must join their neighbours than those a carriage return would
/// give, for a line feed in a text-mode copy to be read as a line feed.
pub const LINE_FEED_MARGIN: f64 = 2.0;

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

    /// The first item whose values rest on a line feed that its neighbours do not show to be one
    /// (`items.len()` when there is none), and the first whose value of `field` does. The read values and those a carriage return would give are carried through the P
    /// frames held (`predictors`), and each is joined to the main frame before it (`before` for
    /// the I frame, when known) and the last to `next`, the next I frame: a line feed stands when
    /// the read values step less, by [`LINE_FEED_MARGIN`]. Without `next` no line feed stands.
    pub fn first_unsettled_line_feeds(
        &self,
        before: &[i64],
        next: Option<&[i64]>,
        predictors: &[Predictor],
        field: usize,
    ) -> (usize, usize) {
        let (mut first, mut first_in_field) = (self.items.len(), self.items.len());
        let mut i = 0;
        while i < self.line_feeds.len() {
            let (item, lf) = self.line_feeds[i];
            let count = self.line_feeds[i..]
                .iter()
                .take_while(|(it, v)| *it == item && v.offset == lf.offset)
                .count();
            let values = &self.line_feeds[i..i + count];
            i += count;
            let in_field = values.iter().any(|(_, v)| v.field == field);
            if item >= first && !(in_field && item < first_in_field) {
                continue;
            }
            let settled = next.is_some_and(|next| {
                let (read, other, steps) = self.join_steps(item, values, before, next, predictors);
                steps >= MIN_LINE_FEED_STEPS && read * LINE_FEED_MARGIN < other
            });
            if !settled {
                first = first.min(item);
                if in_field {
                    first_in_field = first_in_field.min(item);
                }
            }
        }
        (first, first_in_field)
    }

    /// How much the read values and the carriage-return values change between consecutive main
    /// frames (sums of squares), from the main frame before `item` to `next`, over the steps the
    /// difference changes, summed over `values`' fields.
    pub(in crate::blackbox) fn join_steps(
        &self,
        item: usize,
        values: &[(usize, LineFeedValue)],
        before: &[i64],
        next: &[i64],
        predictors: &[Predictor],
    ) -> (f64, f64, usize) {
        let main = |i: usize| {
            let it = &self.items[i];
            matches!(it.kind, FrameKind::I | FrameKind::P).then(|| self.values(it))
        };
        let intra = self.items[item].kind == FrameKind::I;
        let previous = (0..item)
            .rev()
            .find_map(main)
            .or_else(|| (intra && !before.is_empty()).then_some(before));
        let (mut read, mut other, mut steps) = (0.0, 0.0, 0);
        let mut step = |a: Option<(i64, f64)>, b: (i64, f64)| {
            if let Some((va, ea)) = a
                && ea != b.1
            {
                steps += 1;
                read += ((b.0 - va) as f64).powi(2);
                other += (b.0 as f64 + b.1 - va as f64 - ea).powi(2);
            }
        };
        for (_, lf) in values {
            let f = lf.field;
            let at = |frame: &[i64]| frame.get(f).copied();
            let (Some(v), Some(n)) = (main(item).and_then(at), at(next)) else {
                return (0.0, 0.0, 0);
            };
            let delta = lf.delta as f64;
            step(previous.and_then(at).map(|p| (p, 0.0)), (v, delta));
            // The difference carried through the P frames held, by the field's P predictor (an I
            // frame fills both history slots).
            let (mut last, mut e1, mut e2) = ((v, delta), delta, if intra { delta } else { 0.0 });
            for frame in (item + 1..self.items.len()).filter_map(main) {
                let e = carried_error(predictors.get(f), e1, e2);
                (e2, e1) = (e1, e);
                let value = at(frame).unwrap_or(last.0);
                step(Some(last), (value, e));
                last = (value, e);
            }
            step(Some(last), (n, 0.0));
        }
        (read, other, steps)
    }
}
