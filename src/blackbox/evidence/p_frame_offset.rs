//! A bit flipped in a P frame changes one field's value there; every P frame after it carries
//! the error on by the field's predictor (in full for "previous", settling at two thirds for
//! "average of two"), and the next I frame takes it back. The error that best explains the
//! field's steps is fitted and compared with the field's recent [`Motion`] and with every step it
//! leaves unexplained (threshold: [`p_offset_threshold`] of both), and with the field's steps
//! between held values over a longer past (it must pass them), and at least [`MIN_CARRIED`] P
//! frames must carry it. An offset that other fields answer in the same frame is flight (a stick
//! moved, and the motors followed). Level: suspect (`p-frame-offset`). Calibration: on every
//! clean flight the error stays under 2.5 times (2 more than) the largest of the two, so a factor
//! of [`P_OFFSET_FACTOR`] (3) leaves a margin of 1.2. A field at rest (changing by at most
//! [`REST_CHANGE`](super::REST_CHANGE) elsewhere) asks 2 more than 3 times it (clean flights
//! reach 0.72 of that, a margin of 1.39): a flipped low bit of a field at rest is found (an error
//! of 2 or more). With one carrying frame the rule fired on the generated transients peaking at
//! a group's end and on an Indiflight estimator state. On Betaflight 3.4 flights outside the
//! corpus it fired, before the held steps and the answering fields were read, on a current
//! sensor resting at the top of its range for seconds and then reading lower for one reading
//! (errors of 650 to 7,013, scores up to 600) and on D terms stepping with the receiver's frames
//! after a calm stretch, the motors answering (scores up to 2.37) (`docs/quality.md`).

use super::{ANSWER_FACTOR, MIN_ANSWERING, MIN_MAINS_FOR_OFFSET, Offset, beyond, beyond_fraction};
use crate::blackbox::group::Group;
use crate::blackbox::predictor::Predictor;

/// P frames after the one a P-frame offset starts at that must carry it.
pub const MIN_CARRIED: usize = 2;

/// How many times (2 more than) a field's recent motion and every step left unexplained the
/// error fitted to a P-frame offset must reach. Clean flights reach 2.5.
pub const P_OFFSET_FACTOR: i64 = 3;

/// What a P-frame offset of a field at rest must reach beyond [`P_OFFSET_FACTOR`] times its
/// change: clean flights reach 0.72 of this (margin 1.39), so a field that did not move is
/// offset by 2.
pub const P_OFFSET_AT_REST: i64 = 2;

/// The error a P-frame offset must reach beside a field's `change` elsewhere: [`beyond`] it by
/// [`P_OFFSET_FACTOR`] ([`P_OFFSET_AT_REST`] at rest).
#[inline(always)]
pub fn p_offset_threshold(change: i64) -> i64 {
    beyond(P_OFFSET_FACTOR, change, P_OFFSET_AT_REST)
}

/// I-frame intervals in one window of [`Motion`].
pub const MOTION_WINDOW_GROUPS: u32 = 4;
/// I-frame intervals in one window of [`Motion`]'s held steps: a sensor may rest at the top of
/// its range for many seconds and then step as far as it did before.
pub const HELD_WINDOW_GROUPS: u32 = 256;
/// Held steps are read in one I-frame interval of this many (a sensor read at a lower rate steps
/// in every one; reading them all cost 15 % of a check).
pub const HELD_SAMPLE_GROUPS: u32 = 4;

/// Groups [`Motion`] must have learnt from before it is compared with.
pub const MIN_MOTION_GROUPS: u32 = 3;

/// How far each main field moved in the recent trusted groups: the bits of its changes between
/// consecutive main frames and into the next I frame (so at least the largest change and less
/// than twice it), over the current window of [`MOTION_WINDOW_GROUPS`] I-frame intervals and the
/// one before. Some fields hold a value for several frames and then jump (a current sensor read
/// at a lower rate, a receiver's frames), which inside one group looks like a P frame offset;
/// the flight's recent motion tells the two apart. A field that held a value and stepped to
/// another it held before (two main frames each) is read at a lower rate: such steps count over
/// windows of [`HELD_WINDOW_GROUPS`] intervals, as a sensor resting at a limit for a while steps
/// as far as it did before. Windows are counted by iteration, so two decoders that learnt from
/// the same groups since two windows hold the same motion.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Motion {
    /// Fields compared at all.
    watched: Vec<bool>,
    /// The bits of each field's changes, over windows of [`MOTION_WINDOW_GROUPS`] intervals.
    changes: Windows,
    /// The bits of each field's steps between held values, over windows of
    /// [`HELD_WINDOW_GROUPS`] intervals.
    held: Windows,
    /// Per field, what a step to the next I frame must reach to be looked at: the
    /// [`p_offset_threshold`] of its motion; `i64::MAX` for a field not watched, or before enough
    /// groups were learnt.
    thresholds: Vec<i64>,
}

/// Per field, bits folded over the current window of I-frame intervals and the one before, and
/// the groups learnt from in each.
#[derive(Debug, Clone, Default, PartialEq)]
struct Windows {
    window: u32,
    current: Vec<i64>,
    current_groups: u32,
    previous: Vec<i64>,
    previous_groups: u32,
}

impl Windows {
    fn new(n: usize) -> Self {
        Windows {
            current: vec![0; n],
            previous: vec![0; n],
            ..Windows::default()
        }
    }

    /// Learn a group in `window`: a new window makes the current one the one before.
    fn enter(&mut self, window: u32) {
        if window != self.window {
            std::mem::swap(&mut self.previous, &mut self.current);
            self.previous_groups = self.current_groups;
            self.current.fill(0);
            self.current_groups = 0;
            self.window = window;
        }
        self.current_groups += 1;
    }

    /// Field `f`'s bits over both windows: at least its largest step, under twice it.
    fn bits(&self, f: usize) -> i64 {
        self.current[f] | self.previous[f]
    }

    fn groups(&self) -> u32 {
        self.current_groups + self.previous_groups
    }
}

impl Motion {
    /// No motion learnt yet, of main frames whose fields marked in `watched` are compared.
    pub fn new(watched: &[bool]) -> Self {
        let n = watched.len();
        Motion {
            watched: watched.to_vec(),
            changes: Windows::new(n),
            held: Windows::new(n),
            thresholds: vec![i64::MAX; n],
        }
    }

    /// Learn from a trusted `group` followed in step by the next I frame, `next`, at `iteration`
    /// (I frames are `i_interval` iterations apart).
    pub fn learn(&mut self, group: &Group, next: &[i64], iteration: u32, i_interval: u32) {
        let n = self.watched.len();
        let interval = iteration / i_interval.max(1);
        if next.len() != n {
            return;
        }
        self.changes.enter(interval / MOTION_WINDOW_GROUPS);
        self.held.enter(interval / HELD_WINDOW_GROUPS);
        let frames = group
            .main_frames()
            .chain(std::iter::once(next))
            .filter(|f| f.len() == n);
        let read_held = interval.is_multiple_of(HELD_SAMPLE_GROUPS);
        let (changes, held) = (&mut self.changes.current[..n], &mut self.held.current[..n]);
        // The three frames before each: a step from the second to the third is between held
        // values when the first equals the second and the third the frame.
        let mut before: [Option<&[i64]>; 3] = [None; 3];
        for frame in frames {
            match before {
                [Some(a), Some(b), Some(c)] if read_held => {
                    fold_steps(changes, held, [a, b, c, frame]);
                }
                [.., Some(c)] => fold_change_bits(changes, c, frame),
                _ => {}
            }
            before = [before[1], before[2], Some(frame)];
        }
        let warm = self.changes.groups() >= MIN_MOTION_GROUPS;
        for f in 0..n {
            self.thresholds[f] = if warm && self.watched[f] {
                p_offset_threshold(self.largest(f)).max(self.held(f) + 1)
            } else {
                i64::MAX
            };
        }
    }

    /// Field `f`'s recent motion: at least its largest recent step, under twice it.
    fn largest(&self, f: usize) -> i64 {
        self.changes.bits(f)
    }

    /// How far field `f` stepped between held values: at least its largest such step in the two
    /// windows of held steps, under twice it. An offset must reach further.
    fn held(&self, f: usize) -> i64 {
        self.held.bits(f)
    }
}

/// The absolute value of a change between two field values, in steps that 64-bit vector lanes
/// have (SSE2 has no 64-bit absolute value), so that a loop over fields runs on vectors.
#[inline(always)]
fn magnitude(change: i64) -> i64 {
    let sign = change >> 63;
    (change ^ sign).wrapping_sub(sign)
}

/// Set in `bits` the bits of each field's change from `a` to `b`, made positive (so that `bits`
/// is at least the largest change and less than twice it).
#[inline]
fn fold_change_bits(bits: &mut [i64], a: &[i64], b: &[i64]) {
    let n = bits.len().min(a.len()).min(b.len());
    let (bits, a, b) = (&mut bits[..n], &a[..n], &b[..n]);
    for i in 0..n {
        bits[i] |= magnitude(b[i].wrapping_sub(a[i]));
    }
}

/// [`fold_change_bits`] from the third of four consecutive main frames to the fourth into
/// `changes`, and into `held` the bits of each field's step from the second to the third where
/// the first equals the second and the third the fourth, made positive: one pass for both.
#[inline]
fn fold_steps(changes: &mut [i64], held: &mut [i64], [a, b, c, d]: [&[i64]; 4]) {
    let n = changes.len().min(held.len());
    let n = [a, b, c, d].iter().fold(n, |n, f| n.min(f.len()));
    let (changes, held) = (&mut changes[..n], &mut held[..n]);
    let (a, b, c, d) = (&a[..n], &b[..n], &c[..n], &d[..n]);
    for i in 0..n {
        let change = d[i].wrapping_sub(c[i]);
        changes[i] |= magnitude(change);
        let still = ((a[i] ^ b[i]) | change) == 0;
        held[i] |= magnitude(c[i].wrapping_sub(b[i])) & -i64::from(still);
    }
}

impl Group {
    /// The first P frame from which one field of the group is offset, to the end of the group
    /// (see [`Motion`]): a bit flipped in a P frame changes one field's value there, every P frame
    /// after it carries the error on (by the field's predictor), and the next I frame (`next`)
    /// takes it back. Only fields whose step to `next` reaches their threshold in `motion` are
    /// looked at. The field's largest step inside the group is taken for the error's start, and
    /// the error that best explains the steps from there to `next` is fitted: the frame is offset
    /// when that error reaches the [`p_offset_threshold`] of the field's recent motion and of every
    /// step it leaves unexplained, passes the field's steps between held values, and no other
    /// fields answer it (`flight_answered`).
    pub fn first_offset_p_frame(
        &self,
        next: &[i64],
        predictors: &[Predictor],
        motion: &Motion,
    ) -> Option<(usize, Offset)> {
        let last = self.last_main()?;
        let n = motion.thresholds.len();
        if self.mains < MIN_MAINS_FOR_OFFSET || last.len() != n || next.len() != n {
            return None;
        }
        let (last, next, thresholds) = (&last[..n], &next[..n], &motion.thresholds[..n]);
        let under = |f: usize| thresholds[f] - 1 - magnitude(next[f] - last[f]);
        // Almost every field's step stays under its threshold: a first pass over all of them,
        // without a branch, says whether any reaches it.
        if (0..n).fold(0, |any, f| any | under(f)) >= 0 {
            return None;
        }
        let offset_from = |f: usize| {
            let (quiet, held) = (motion.largest(f), motion.held(f));
            self.offset_from_p_frame(f, next[f] - last[f], predictors.get(f), quiet, held)
        };
        let first = (0..n)
            .filter(|&f| under(f) < 0)
            .filter_map(offset_from)
            .filter(|&(start, offset)| {
                !self.flight_answered(start, offset.field, &motion.watched, offset_from)
            })
            .min_by_key(|&(start, _)| start)?;
        // The item holding that main frame.
        let (start, offset) = first;
        self.main_items().nth(start).map(|(item, _)| (item, offset))
    }

    /// Field `f`'s steps from each main frame of the group to the next (every main frame holds
    /// it: the callers check).
    fn steps_of(&self, f: usize) -> impl Iterator<Item = i64> + '_ {
        self.main_frames()
            .zip(self.main_frames().skip(1))
            .map(move |(a, b)| b[f] - a[f])
    }

    /// Whether, at the main frame `start` (counted from the I frame) from which field `f` is
    /// offset, [`MIN_ANSWERING`] other `watched` fields step [`ANSWER_FACTOR`] times (2 more than)
    /// as far as anywhere else in the group, and are not offset from there themselves
    /// (`offset_from` says from where one is): a stick moved or a sensor task ran, and the fields
    /// it drives answered at once (the motors to a D term's step), where a flipped bit moves one
    /// field and leaves the others alone.
    fn flight_answered(
        &self,
        start: usize,
        f: usize,
        watched: &[bool],
        offset_from: impl Fn(usize) -> Option<(usize, Offset)>,
    ) -> bool {
        let n = watched.len();
        if start == 0 || self.main_frames().any(|m| m.len() < n) {
            return false;
        }
        let answering = (0..n).filter(|&g| {
            if g == f || !watched[g] {
                return false;
            }
            let (mut at, mut elsewhere) = (0, 0);
            for (i, step) in self.steps_of(g).map(magnitude).enumerate() {
                if i == start - 1 {
                    at = step;
                } else {
                    elsewhere = elsewhere.max(step);
                }
            }
            at >= ANSWER_FACTOR * (elsewhere + 2)
                && offset_from(g).is_none_or(|(from, _)| from != start)
        });
        answering.take(MIN_ANSWERING).count() == MIN_ANSWERING
    }

    /// The main frame (counted from the I frame) from which field `f` is offset (see
    /// [`Group::first_offset_p_frame`]), with the error fitted, `join` being its step to the next
    /// I frame, `quiet` its recent largest step and `held` its largest step between held values
    /// (which the error must pass).
    fn offset_from_p_frame(
        &self,
        f: usize,
        join: i64,
        predictor: Option<&Predictor>,
        quiet: i64,
        held: i64,
    ) -> Option<(usize, Offset)> {
        if self.main_frames().any(|m| m.len() <= f) {
            return None;
        }
        let steps = || self.steps_of(f);
        // The largest step into a P frame, and how many main frames there are after it.
        let (start, largest) = steps()
            .enumerate()
            .max_by_key(|&(_, s)| s.abs())
            .map(|(i, s)| (i + 1, s))?;
        if (largest ^ join) >= 0 {
            return None;
        }
        let after = self.mains - 1 - start;
        // An error that no P frame after carries is a one- or two-frame excursion, which
        // flights make (a sensor glitch, an estimator's update) as often as damage does.
        if after < MIN_CARRIED {
            return None;
        }
        // A unit error at `start` carried on: the steps it adds, from `start` on, then to `next`.
        let unit_steps = || {
            let (mut e1, mut e2) = (0.0, 0.0);
            (0..=after + 1).map(move |i| {
                let e = match i {
                    0 => 1.0,
                    i if i > after => 0.0,
                    _ => carried_error(predictor, e1, e2),
                };
                let step = e - e1;
                (e2, e1) = (e1, e);
                step
            })
        };
        let observed = || steps().skip(start - 1).chain(std::iter::once(join));
        let (dot, norm) = observed()
            .zip(unit_steps())
            .fold((0.0, 0.0), |(dot, norm), (s, g)| {
                (dot + s as f64 * g, norm + g * g)
            });
        let error = dot / norm;
        let unexplained = observed()
            .zip(unit_steps())
            .map(|(s, g)| (s as f64 - error * g).abs())
            .chain(steps().take(start - 1).map(|s| s.abs() as f64))
            .fold(quiet as f64, f64::max);
        let threshold =
            beyond_fraction(P_OFFSET_FACTOR, unexplained, P_OFFSET_AT_REST).max(held as f64 + 1.0);
        (error.abs() >= threshold).then_some((
            start,
            Offset {
                field: f,
                offset: error.round() as i64,
                threshold: threshold.ceil() as i64,
            },
        ))
    }
}

/// The part of an error in the last two main frames' values of a field (`e1` the last) that a P
/// frame predicted by `predictor` carries on.
pub(in crate::blackbox) fn carried_error(predictor: Option<&Predictor>, e1: f64, e2: f64) -> f64 {
    match predictor {
        Some(Predictor::Previous | Predictor::Increment) => e1,
        Some(Predictor::StraightLine) => 2.0 * e1 - e2,
        Some(Predictor::Average2) => (e1 + e2) / 2.0,
        _ => 0.0,
    }
}
