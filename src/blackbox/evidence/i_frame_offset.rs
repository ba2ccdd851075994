//! A byte dropped inside a multi-byte field of an I frame can leave a frame that still decodes
//! in step, with that one field wrong. Every P frame predicted from it carries the same offset
//! (the predictors' weights sum to one), and the next I frame takes it back: the field steps by
//! +e where the group starts and by about -e where it ends, while it moves far less from frame
//! to frame inside. Threshold: each step [`offset_threshold`] of the largest change inside the
//! two groups (4 times 2 more than it; 4 more than 4 times it for a field at rest). Level:
//! suspect (`i-frame-offset`). Calibration: no clean flight of the corpus or the generated hard
//! flights shows it with the factor lowered from 4 to 3; at 2 it fires on two real Betaflight
//! logs. Fields at rest step by 2 into an I frame and out of it on clean flights, and reach 0.81
//! of their threshold at most (`docs/quality.md`).
//!
//! Flight answers the step where [`MIN_ANSWERING`] other fields step into the group with it, past
//! [`ANSWER_FACTOR`] times (2 more than) their own change inside, scaled by how far the field
//! passes its threshold, and are not taken back: a throttle punch on an I frame of a Betaflight
//! 3.1.5 flight logged every 8th loop moves the throttle by 44 and the four motors by 50 to 108
//! at once, and the noisiest motor (81 past a threshold of 80) comes partly back at the next I
//! frame. A byte lost in an I frame offsets fields that the next I frame takes back.

use super::{ANSWER_FACTOR, MIN_ANSWERING, MIN_MAINS_FOR_OFFSET, Offset, offset_threshold};
use crate::blackbox::group::Group;

/// The main frames [`Group::offset_by_its_i_frame`] compares, each cut to the same length.
struct Joins<'a> {
    first: &'a [i64],
    second: &'a [i64],
    last: &'a [i64],
    next: &'a [i64],
    before_last: &'a [i64],
    before_penultimate: &'a [i64],
}

impl Joins<'_> {
    /// Field `f`'s steps into the group (from the group before) and out of it (to the next I
    /// frame).
    #[inline(always)]
    fn steps(&self, f: usize) -> (i64, i64) {
        (
            self.first[f] - self.before_last[f],
            self.next[f] - self.last[f],
        )
    }

    /// Negative when field `f`'s steps into and out of the group go opposite ways and both reach
    /// the [`offset_threshold`] of the one change read inside each group, the first of this one
    /// and the last of the group before. Without a branch, and without a minimum or
    /// maximum (which 64-bit lanes lack): each of the four comparisons is the sign of a
    /// difference, and the sign of their `&` says whether all hold.
    #[inline(always)]
    fn cheap_conditions(&self, f: usize) -> i64 {
        let (into, out) = self.steps(f);
        let (into_size, out_size) = (into.abs(), out.abs());
        // The largest step under the threshold.
        let inside = |a: &[i64], b: &[i64]| offset_threshold((a[f] - b[f]).abs()) - 1;
        let this = inside(self.second, self.first);
        let before = inside(self.before_last, self.before_penultimate);
        (into ^ out)
            & (this - into_size)
            & (before - into_size)
            & (this - out_size)
            & (before - out_size)
    }
}

impl Group {
    /// Whether one field of the group's I frame is offset from both its neighbours: it steps from
    /// `before` (the last trusted group: the one right before, or the last before damage) by the
    /// [`offset_threshold`] of the largest change inside either group or more, and the step to `next` (the next I frame) takes it back to within a quarter. Only fields marked in
    /// `checked` are compared, and only groups of [`MIN_MAINS_FOR_OFFSET`] main frames or more.
    pub fn offset_by_its_i_frame(
        &self,
        before: &Group,
        next: &[i64],
        checked: &[bool],
    ) -> Option<Offset> {
        if self.mains < MIN_MAINS_FOR_OFFSET || before.mains < MIN_MAINS_FOR_OFFSET {
            return None;
        }
        let (Some(first), Some(last), Some(before_last)) = (
            self.first_main.clone().map(|r| &self.values[r]),
            self.last_main(),
            before.last_main(),
        ) else {
            return None;
        };
        let n = first.len();
        if [before_last.len(), next.len(), last.len(), checked.len()]
            .iter()
            .any(|&len| len != n)
        {
            return None;
        }
        // One change inside each group (its first, and the last of the group before), which the
        // largest changes are at least.
        let second = self.main_frames().nth(1).filter(|f| f.len() == n);
        let before_penultimate = before.main_frames().nth_back(1).filter(|f| f.len() == n);
        let (second, before_penultimate) = (
            second.unwrap_or(first),
            before_penultimate.unwrap_or(before_last),
        );
        let joins = Joins {
            first,
            second: &second[..n],
            last: &last[..n],
            next: &next[..n],
            before_last: &before_last[..n],
            before_penultimate: &before_penultimate[..n],
        };
        // Almost every field fails the cheap conditions: a first pass over all of them, without a
        // branch, says whether any passes.
        if (0..n).fold(0, |any, f| any | joins.cheap_conditions(f)) >= 0 {
            return None;
        }
        // The largest changes inside, read from the frames held, last.
        let inside = |f: usize| self.largest_change(f).max(before.largest_change(f));
        // Whether field `f` steps into the group and back out of it (to within a quarter).
        let taken_back = |f: usize| {
            let (into, out) = joins.steps(f);
            (into ^ out) < 0 && (into + out).abs() * 4 < into.abs() + out.abs()
        };
        (0..n).find_map(|f| {
            let threshold = offset_threshold(inside(f));
            let (into, out) = joins.steps(f);
            if joins.cheap_conditions(f) >= 0
                || !checked[f]
                || !taken_back(f)
                || into.abs().min(out.abs()) < threshold
            {
                return None;
            }
            // Flight answers a step of `f` where other fields step with it into the group, past
            // their change inside as far as `f` passes its threshold, and stay (a throttle punch
            // moves the throttle and the motors at once); damage offsets fields that the next
            // I frame takes back, and by far more than flight moves the others.
            let step = into.abs().min(out.abs());
            let answering = (0..n).filter(|&g| {
                let bar = ANSWER_FACTOR * (inside(g) + 2);
                g != f
                    && checked[g]
                    && joins.steps(g).0.abs().saturating_mul(threshold) >= bar.saturating_mul(step)
                    && !taken_back(g)
            });
            (answering.take(MIN_ANSWERING).count() < MIN_ANSWERING).then_some(Offset {
                field: f,
                offset: into,
                threshold,
            })
        })
    }

    /// All the offset check reads of a group as the group before the next one: its last main
    /// frame and, per field, its largest change, when it holds enough main frames to be compared
    /// with (both empty otherwise).
    pub fn offset_summary(&self) -> (Vec<i64>, Vec<i64>) {
        match self.last_main() {
            Some(last) if self.mains >= MIN_MAINS_FOR_OFFSET => (
                last.to_vec(),
                (0..last.len()).map(|f| self.largest_change(f)).collect(),
            ),
            _ => (Vec::new(), Vec::new()),
        }
    }
}
