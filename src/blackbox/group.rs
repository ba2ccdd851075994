//! Group validation: the frames of an I-frame group (the I frame, the P frames predicted from it
//! and whatever S, G, H and E frames come between) are held until the frames after them show
//! whether the group can be trusted.
//!
//! An I frame that follows the previous group without a break is corroborated by it. One that
//! comes after damage is trusted only when P frames decode from it (a misaligned or bogus I frame
//! is followed by bytes that do not decode as P frames) or the next I frame follows it cleanly.
//!
//! A byte dropped inside a multi-byte field of an I frame can leave a frame that still decodes in
//! step, with that one field wrong. Every P frame predicted from it carries the same offset (the
//! predictors' weights sum to one), and the next I frame takes it back: the field steps by +e where
//! the group starts and by about -e where it ends, while it moves far less from frame to frame
//! inside. [`Group::offset_by_its_i_frame`] looks for that signature; no clean real log shows it.
//! A bit flipped in a P frame leaves the same signature from that P frame on, which
//! [`Group::first_offset_p_frame`] measures against the flight's recent [`Motion`].

use super::event::Event;
use super::frame::FrameKind;
use super::predictor::{MainHistory, Predictor};
use crate::report::{DamageReason, Evidence, Rule};
use std::ops::Range;

/// How many times the largest change inside the groups a field's step into and out of a group
/// must be to set the group's I frame apart (clean real logs stay under 2).
pub const OFFSET_FACTOR: i64 = 4;

/// The step an offset must reach to stand out from a field's largest `change` elsewhere:
/// [`OFFSET_FACTOR`] times (2 more than) it. A flipped bit's error is a power of two and this a
/// multiple of 4, so a field at rest is offset by 8 or more. (Changes of 32-bit values are far
/// from overflowing it; plain arithmetic keeps loops over fields on vectors.)
#[inline(always)]
pub fn offset_threshold(change: i64) -> i64 {
    OFFSET_FACTOR * (change + 2)
}
/// Main frames a group needs before the steps into and out of it are compared with its inside.
const MIN_MAINS_FOR_OFFSET: usize = 3;

/// P frames after the one a P-frame offset starts at that must carry it.
const MIN_CARRIED: usize = 2;

/// How much better the read values must join their neighbours than those a carriage return would
/// give, for a line feed in a text-mode copy to be read as a line feed.
const LINE_FEED_MARGIN: f64 = 2.0;

/// Steps between main frames that must tell the readings of a line feed apart (one step alone,
/// into or out of a group, is too often a jump in the flight's own data).
const MIN_LINE_FEED_STEPS: usize = 2;

/// A field value that would differ had a line feed of a text-mode copy been a carriage return.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineFeedValue {
    /// The line feed's offset in the file (values of one line feed are judged together).
    pub offset: usize,
    pub field: usize,
    /// The value a carriage return gives, minus the value read.
    pub delta: i64,
}

/// What a value rule measured on one field: the step (or fitted error) and the threshold it
/// reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offset {
    pub field: usize,
    pub offset: i64,
    pub threshold: i64,
}

/// Value evidence against a group's main frames from `from` on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Suspicion {
    pub from: usize,
    pub rule: Rule,
    /// What the rule measured, when it looks at one field.
    pub offset: Option<Offset>,
}

impl Suspicion {
    /// The suspicion of a rule that measured `offset` from main frame item `from` on.
    pub fn of(rule: Rule, from: usize, offset: Offset) -> Suspicion {
        Suspicion {
            from,
            rule,
            offset: Some(offset),
        }
    }

    /// The evidence as reports state it, naming the field from the main-frame `names`.
    pub fn evidence(&self, names: &[String]) -> Evidence {
        match self.offset {
            Some(o) => Evidence::new(
                self.rule,
                names.get(o.field).cloned(),
                o.offset,
                o.threshold,
            ),
            None => Evidence::new(self.rule, None, 0, 0),
        }
    }
}

/// Which of a group's items not to trust (`items.len()` when each may be trusted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Untrusted {
    /// The first main frame not to trust, and why.
    pub from: usize,
    pub reason: DamageReason,
    /// The first main frame whose time is in doubt (at or after `from`): a GPS frame's time is
    /// predicted from the main frame before it.
    pub time_from: usize,
    /// Whether only the I frame is kept of a group that drifted: the damage may have begun
    /// inside it.
    pub after_i_frame: bool,
}

/// A frame the rules accept, waiting for the group's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub kind: FrameKind,
    pub start: usize,
    pub end: usize,
    /// Why the bytes between the previous item and this one were rejected, if there are any.
    pub gap: Option<DamageReason>,
    /// The frame's values in [`Group::values`].
    pub values: Range<usize>,
    pub event: Option<Event>,
}

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

/// I-frame intervals in one window of [`Motion`].
const MOTION_WINDOW_GROUPS: u32 = 32;
/// [`Motion`] learns from one I-frame interval in this many (reading every change of every
/// group costs over a tenth of the decoding).
const MOTION_SAMPLE: u32 = 4;
/// Groups [`Motion`] must have learnt from before it is compared with.
const MIN_MOTION_GROUPS: u32 = 6;

/// How far each main field moved in the recent trusted groups: the bits of its changes between
/// consecutive main frames and into the next I frame (so at least the largest change and less
/// than twice it), over one I-frame interval in [`MOTION_SAMPLE`] of the current window of
/// [`MOTION_WINDOW_GROUPS`] intervals and of the one before. Some fields hold a value for
/// several frames and then jump (a current sensor read at a lower rate, a receiver's frames),
/// which inside one group looks like a P frame offset; the flight's recent motion tells the two
/// apart. Windows and samples are counted by iteration, so two decoders that learnt from the
/// same groups since two windows hold the same motion.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Motion {
    /// Fields compared at all.
    watched: Vec<bool>,
    window: u32,
    current: Vec<i64>,
    current_groups: u32,
    previous: Vec<i64>,
    previous_groups: u32,
    /// Per field, what a step to the next I frame must reach to be looked at: the
    /// [`offset_threshold`] of its motion; `i64::MAX` for a field not watched, or before enough
    /// groups were learnt.
    thresholds: Vec<i64>,
}

impl Motion {
    /// No motion learnt yet, of main frames whose fields marked in `watched` are compared.
    pub fn new(watched: &[bool]) -> Self {
        let n = watched.len();
        Motion {
            watched: watched.to_vec(),
            current: vec![0; n],
            previous: vec![0; n],
            thresholds: vec![i64::MAX; n],
            ..Motion::default()
        }
    }

    /// Learn from a trusted `group` followed in step by the next I frame, `next`, at `iteration`
    /// (I frames are `i_interval` iterations apart).
    pub fn learn(&mut self, group: &Group, next: &[i64], iteration: u32, i_interval: u32) {
        let n = self.watched.len();
        let interval = iteration / i_interval.max(1);
        if next.len() != n || !interval.is_multiple_of(MOTION_SAMPLE) {
            return;
        }
        let window = interval / MOTION_WINDOW_GROUPS;
        if window != self.window {
            std::mem::swap(&mut self.previous, &mut self.current);
            self.previous_groups = self.current_groups;
            self.current.fill(0);
            self.current_groups = 0;
            self.window = window;
        }
        self.current_groups += 1;
        let mut frames = group
            .main_frames()
            .chain(std::iter::once(next))
            .filter(|f| f.len() == n);
        if let Some(mut previous) = frames.next() {
            for frame in frames {
                fold_change_bits(&mut self.current[..n], &previous[..n], &frame[..n]);
                previous = frame;
            }
        }
        let warm = self.current_groups + self.previous_groups >= MIN_MOTION_GROUPS;
        for f in 0..n {
            self.thresholds[f] = if warm && self.watched[f] {
                offset_threshold(self.largest(f))
            } else {
                i64::MAX
            };
        }
    }

    /// Field `f`'s recent motion: at least its largest recent step, under twice it.
    fn largest(&self, f: usize) -> i64 {
        self.current[f] | self.previous[f]
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

/// The open group.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Group {
    pub items: Vec<Item>,
    /// The held frames' values, then room the next main frame decodes into: only the first
    /// `held` are the group's (the rest is reused, so holding a frame neither allocates nor
    /// clears memory).
    values: Vec<i64>,
    held: usize,
    /// Main frames held.
    mains: usize,
    /// Whether the I frame followed the previous group's last main frame without a break.
    joined: bool,
    /// Whether the I frame re-anchored the stream after an implausible jump.
    anchor: bool,
    /// Whether the frames after the group's held ones failed the iteration or time checks.
    drifted: bool,
    /// Where the first, last and last-but-one main frames' values are in `values`.
    first_main: Option<Range<usize>>,
    last_main: Option<Range<usize>>,
    penultimate_main: Option<Range<usize>>,
    /// Values of held main frames that carriage returns would change, with the item holding them.
    line_feeds: Vec<(usize, LineFeedValue)>,
}

impl Group {
    /// The last two main frames held (the last twice after the I frame alone): what the next P
    /// frame is predicted from.
    #[inline]
    pub fn last_mains(&self) -> MainHistory<'_> {
        last_two(&self.values, &self.last_main, &self.penultimate_main)
    }

    /// Whether a group is open (an I frame started it).
    pub fn is_open(&self) -> bool {
        self.mains > 0
    }

    /// Whether anything is held.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Hold a frame.
    pub fn push(&mut self, item: Item, values: &[i64]) {
        self.room(values.len()).1.copy_from_slice(values);
        self.push_next(item, values.len());
    }

    /// The held values, and room for `len` more after them.
    #[inline]
    fn room(&mut self, len: usize) -> (&[i64], &mut [i64]) {
        let end = self.held + len;
        if self.values.len() < end {
            self.values.resize(end, 0);
        }
        let (held, room) = self.values.split_at_mut(self.held);
        (held, &mut room[..len])
    }

    /// What the next P frame is predicted from (see [`Group::last_mains`]), and room for its
    /// `len` values after those held (see [`Group::push_next`]).
    #[inline]
    pub fn next_main(&mut self, len: usize) -> (MainHistory<'_>, &mut [i64]) {
        let (last, penultimate) = (self.last_main.clone(), self.penultimate_main.clone());
        let (held, room) = self.room(len);
        (last_two(held, &last, &penultimate), room)
    }

    /// The values of the frame decoded into the room [`Group::next_main`] gave.
    #[inline]
    pub fn next_values(&self, len: usize) -> &[i64] {
        &self.values[self.held..self.held + len]
    }

    /// Hold a frame whose `len` values were decoded into the room [`Group::next_main`] gave.
    #[inline]
    pub fn push_next(&mut self, mut item: Item, len: usize) {
        let range = self.held..self.held + len;
        self.held = range.end;
        item.values = range.clone();
        if matches!(item.kind, FrameKind::I | FrameKind::P) {
            self.mains += 1;
            self.first_main.get_or_insert(range.clone());
            self.penultimate_main = self.last_main.replace(range);
        }
        self.items.push(item);
    }

    /// The values of a held item.
    pub fn values(&self, item: &Item) -> &[i64] {
        &self.values[item.values.clone()]
    }

    /// The group as it stands, without the room after the held values: two groups that hold the
    /// same are equal.
    pub fn snapshot(&self) -> Group {
        let mut group = self.clone();
        group.values.truncate(self.held);
        group
    }

    /// Whether the group can be trusted when no clean I frame follows it (damage came next, or
    /// the session ended): its I frame followed a trusted group, or P frames decoded from it.
    pub fn trusted_without_join(&self) -> bool {
        let needed = if self.anchor { 3 } else { 2 };
        self.joined || self.mains >= needed
    }

    /// Note that the values predicted inside the group may be off: the stream after it failed the
    /// iteration or time checks, or the next I frame shows frames lost inside it or a time error
    /// carried on (its I frame's values are its own).
    pub fn drifted(&mut self) {
        self.drifted = true;
    }

    /// The first main frame not to trust and why: in a group that drifted, every one after the I
    /// frame, or the I frame too when neither the group before it nor `next` (the next I frame,
    /// following in step) corroborates it; and the first resting on an unsettled line feed (see
    /// [`Group::first_unsettled_line_feeds`]). Also the first whose `time_field` is in doubt.
    pub fn first_untrusted(
        &self,
        before: &[i64],
        next: Option<&[i64]>,
        predictors: &[Predictor],
        time_field: usize,
    ) -> Untrusted {
        let (line_feed, time) =
            self.first_unsettled_line_feeds(before, next, predictors, time_field);
        let drift = if self.drifted {
            let corroborated = self.joined || next.is_some();
            // In a text-mode copy a line feed is the only byte changed: the frames before the
            // first one that reads otherwise as a carriage return hold what was logged.
            let first_line_feed = self.line_feeds.first().map_or(1, |&(item, _)| item.max(1));
            self.items
                .len()
                .min(first_line_feed * usize::from(corroborated))
        } else {
            self.items.len()
        };
        let (from, reason) = if drift < line_feed {
            (drift, DamageReason::SuspectGroup)
        } else {
            (line_feed, DamageReason::NewlineConverted)
        };
        Untrusted {
            from,
            reason,
            time_from: drift.min(time),
            after_i_frame: self.drifted && drift == 1 && drift < line_feed,
        }
    }

    /// The largest change of `field` between consecutive main frames held (frames of another
    /// length are not compared).
    fn largest_change(&self, field: usize) -> i64 {
        let mut mains = self.main_frames();
        let Some(mut previous) = mains.next() else {
            return 0;
        };
        let mut largest = 0;
        for frame in mains {
            if let (Some(a), Some(b), true) = (
                previous.get(field),
                frame.get(field),
                previous.len() == frame.len(),
            ) {
                largest = largest.max((b - a).abs());
            }
            previous = frame;
        }
        largest
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

    /// The main frames held, in order, with their places among the items.
    fn main_items(&self) -> impl DoubleEndedIterator<Item = (usize, &Item)> {
        self.items
            .iter()
            .enumerate()
            .filter(|(_, i)| matches!(i.kind, FrameKind::I | FrameKind::P))
    }

    /// The values of the main frames held, in order.
    fn main_frames(&self) -> impl DoubleEndedIterator<Item = &[i64]> {
        self.main_items().map(|(_, i)| self.values(i))
    }

    /// Whether a logging-resume event is held: frames went unlogged before the next I frame.
    pub fn resumed(&self) -> bool {
        self.items
            .iter()
            .any(|i| matches!(i.event, Some(Event::LoggingResume { .. })))
    }

    /// The last main frame held.
    pub fn last_main(&self) -> Option<&[i64]> {
        self.last_main.clone().map(|r| &self.values[r])
    }

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
        (0..n).find_map(|f| {
            if joins.cheap_conditions(f) >= 0 || !checked[f] {
                return None;
            }
            let (into, out) = joins.steps(f);
            let step = into.abs().min(out.abs());
            // The largest changes inside, read from the frames held, last.
            let threshold = offset_threshold(self.largest_change(f).max(before.largest_change(f)));
            ((into + out).abs() * 4 < into.abs() + out.abs() && step >= threshold).then_some(
                Offset {
                    field: f,
                    offset: into,
                    threshold,
                },
            )
        })
    }

    /// The first P frame from which one field of the group is offset, to the end of the group
    /// (see [`Motion`]): a bit flipped in a P frame changes one field's value there, every P frame
    /// after it carries the error on (by the field's predictor), and the next I frame (`next`)
    /// takes it back. Only fields whose step to `next` reaches their threshold in `motion` are
    /// looked at. The field's largest step inside the group is taken for the error's start, and
    /// the error that best explains the steps from there to `next` is fitted: the frame is offset
    /// when that error reaches the [`offset_threshold`] of the field's recent motion and of every
    /// step it leaves unexplained.
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
        let first = (0..n)
            .filter(|&f| under(f) < 0)
            .filter_map(|f| {
                self.offset_from_p_frame(f, next[f] - last[f], predictors.get(f), motion.largest(f))
            })
            .min_by_key(|&(start, _)| start)?;
        // The item holding that main frame.
        let (start, offset) = first;
        self.main_items().nth(start).map(|(item, _)| (item, offset))
    }

    /// The main frame (counted from the I frame) from which field `f` is offset (see
    /// [`Group::first_offset_p_frame`]), with the error fitted, `join` being its step to the next
    /// I frame and `quiet` its recent largest step.
    fn offset_from_p_frame(
        &self,
        f: usize,
        join: i64,
        predictor: Option<&Predictor>,
        quiet: i64,
    ) -> Option<(usize, Offset)> {
        if self.main_frames().any(|m| m.len() <= f) {
            return None;
        }
        let steps = || {
            self.main_frames()
                .zip(self.main_frames().skip(1))
                .map(move |(a, b)| b[f] - a[f])
        };
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
        let threshold = OFFSET_FACTOR as f64 * (unexplained + 2.0);
        (error.abs() >= threshold).then_some((
            start,
            Offset {
                field: f,
                offset: error.round() as i64,
                threshold: threshold.ceil() as i64,
            },
        ))
    }

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
    fn join_steps(
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

    /// Where the item held last starts, if it is a P frame ending at `end`.
    pub fn p_frame_ending_at(&self, end: usize) -> Option<usize> {
        self.items
            .last()
            .filter(|i| i.end == end && i.kind == FrameKind::P)
            .map(|i| i.start)
    }

    /// Let go of the item held last if it is a P frame: its bytes join the damage after it, and
    /// the main frames before it are what the next P frame is predicted from.
    pub fn let_go_of_last_p_frame(&mut self) {
        let Some(last) = self.items.pop_if(|i| i.kind == FrameKind::P) else {
            return;
        };
        let item = self.items.len();
        self.held = last.values.start;
        self.mains -= 1;
        self.line_feeds.retain(|&(i, _)| i != item);
        let mut earlier = self
            .items
            .iter()
            .rev()
            .filter(|i| matches!(i.kind, FrameKind::I | FrameKind::P))
            .map(|i| i.values.clone());
        self.last_main = earlier.next();
        self.penultimate_main = earlier.next();
    }

    /// Forget what is held (keeping the buffers) and start a group at an I frame.
    pub fn restart(&mut self, joined: bool, anchor: bool) {
        self.clear();
        self.joined = joined;
        self.anchor = anchor;
    }

    /// Forget what is held, keeping the buffers.
    pub fn clear(&mut self) {
        self.items.clear();
        self.held = 0;
        self.mains = 0;
        self.first_main = None;
        self.last_main = None;
        self.penultimate_main = None;
        self.line_feeds.clear();
        self.drifted = false;
        self.joined = false;
        self.anchor = false;
    }
}

/// The part of an error in the last two main frames' values of a field (`e1` the last) that a P
/// frame predicted by `predictor` carries on.
fn carried_error(predictor: Option<&Predictor>, e1: f64, e2: f64) -> f64 {
    match predictor {
        Some(Predictor::Previous | Predictor::Increment) => e1,
        Some(Predictor::StraightLine) => 2.0 * e1 - e2,
        Some(Predictor::Average2) => (e1 + e2) / 2.0,
        _ => 0.0,
    }
}

/// The frames at `last` and `penultimate` in `values`, the last standing for both when it is
/// alone.
#[inline]
fn last_two<'a>(
    values: &'a [i64],
    last: &Option<Range<usize>>,
    penultimate: &Option<Range<usize>>,
) -> MainHistory<'a> {
    let frame = |r: &Option<Range<usize>>| r.clone().map(|r| &values[r]);
    let last = frame(last);
    (last, frame(penultimate).or(last))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A group of one field: an I frame then P frames, one main frame per value, 10 bytes each,
    /// with line feeds noted as (frame, value a carriage return gives minus the value read).
    fn group(values: &[i64], line_feeds: &[(usize, i64)]) -> Group {
        let mut group = Group::default();
        for (i, &v) in values.iter().enumerate() {
            let kind = if i == 0 { FrameKind::I } else { FrameKind::P };
            let item = Item {
                kind,
                start: i * 10,
                end: i * 10 + 10,
                gap: None,
                values: 0..0,
                event: None,
            };
            group.push(item, &[v]);
            for &(_, delta) in line_feeds.iter().filter(|&&(at, _)| at == i) {
                let value = LineFeedValue {
                    offset: i * 10 + 5,
                    field: 0,
                    delta,
                };
                group.note_line_feeds(i * 10, &[value]);
            }
        }
        group
    }

    fn main_item(kind: FrameKind) -> Item {
        Item {
            kind,
            start: 0,
            end: 0,
            gap: None,
            values: 0..0,
            event: None,
        }
    }

    #[test]
    fn a_p_frame_decoded_in_place_reads_and_joins_the_last_two_main_frames() {
        let mut g = Group::default();
        g.push(main_item(FrameKind::I), &[1, 10]);
        assert_eq!(g.last_mains(), (Some(&[1, 10][..]), Some(&[1, 10][..])));
        let (history, room) = g.next_main(2);
        assert_eq!(history, (Some(&[1, 10][..]), Some(&[1, 10][..])));
        room.copy_from_slice(&[2, 20]);
        assert_eq!(g.next_values(2), [2, 20]);
        g.push_next(main_item(FrameKind::P), 2);
        assert_eq!(g.last_mains(), (Some(&[2, 20][..]), Some(&[1, 10][..])));
        g.push(main_item(FrameKind::P), &[3, 30]);
        assert_eq!(g.last_mains(), (Some(&[3, 30][..]), Some(&[2, 20][..])));
        let held: Vec<_> = g.items.iter().map(|i| g.values(i).to_vec()).collect();
        assert_eq!(held, [[1, 10], [2, 20], [3, 30]]);
    }

    #[test]
    fn letting_go_of_the_last_p_frame_leaves_the_group_as_it_was_before_it() {
        let mut g = Group::default();
        g.push(main_item(FrameKind::I), &[1, 10]);
        let after_i = g.snapshot();
        g.push(main_item(FrameKind::P), &[2, 20]);
        let after_p = g.snapshot();
        g.push(main_item(FrameKind::P), &[3, 30]);
        assert_eq!(g.p_frame_ending_at(0), Some(0));
        assert_eq!(g.p_frame_ending_at(1), None);
        g.let_go_of_last_p_frame();
        assert_eq!(g.snapshot(), after_p);
        assert_eq!(g.last_mains(), (Some(&[2, 20][..]), Some(&[1, 10][..])));
        g.let_go_of_last_p_frame();
        assert_eq!(g.snapshot(), after_i);
        assert_eq!(g.last_mains(), (Some(&[1, 10][..]), Some(&[1, 10][..])));
        // The I frame stays: the group before may rest on it.
        assert_eq!(g.p_frame_ending_at(0), None);
        g.let_go_of_last_p_frame();
        assert_eq!(g.snapshot(), after_i);
        // So does an S frame held last.
        g.push(main_item(FrameKind::S), &[7]);
        assert_eq!(g.p_frame_ending_at(0), None);
    }

    #[test]
    fn snapshots_of_groups_holding_the_same_are_equal_whatever_their_room_held() {
        let mut used = Group::default();
        used.push(main_item(FrameKind::I), &[1, 10]);
        used.push(main_item(FrameKind::P), &[2, 20]);
        used.next_main(2).1.copy_from_slice(&[9, 90]);
        used.clear();
        used.push(main_item(FrameKind::I), &[5, 50]);
        let mut fresh = Group::default();
        fresh.push(main_item(FrameKind::I), &[5, 50]);
        assert_eq!(used.snapshot(), fresh.snapshot());
        fresh.push(main_item(FrameKind::P), &[6, 60]);
        assert_ne!(used.snapshot(), fresh.snapshot());
    }

    #[test]
    fn a_line_feed_stands_where_the_read_values_join_their_neighbours() {
        // Read: the values climb by one; a carriage return would drop the last three by 12.
        let g = group(&[10, 11, 12, 13], &[(1, -12)]);
        assert_eq!(
            g.first_unsettled_line_feeds(&[], Some(&[14]), &[Predictor::Previous], 0)
                .0,
            4
        );
    }

    #[test]
    fn a_line_feed_falls_where_a_carriage_return_joins_better() {
        // Read: the field leaps by 12 and back at the next I frame; 12 less runs flat.
        let g = group(&[10, 22, 22, 22], &[(1, -12)]);
        let previous = [Predictor::Previous];
        assert_eq!(
            g.first_unsettled_line_feeds(&[], Some(&[10]), &previous, 0)
                .0,
            1
        );
        // Without the next I frame nothing shows what the line feed was.
        let g = group(&[10, 11, 12, 13], &[(3, -12)]);
        assert_eq!(g.first_unsettled_line_feeds(&[], None, &previous, 0).0, 3);
    }

    #[test]
    fn only_a_line_feed_in_the_time_field_puts_the_time_in_doubt() {
        // Field 0 rests on an unsettled line feed from item 3 on (nothing after the group shows
        // what it was).
        let g = group(&[10, 11, 12, 13], &[(3, -12)]);
        let previous = [Predictor::Previous];
        let untrusted = g.first_untrusted(&[], None, &previous, 0);
        assert_eq!((untrusted.from, untrusted.time_from), (3, 3));
        assert_eq!(untrusted.reason, DamageReason::NewlineConverted);
        // With the time in another field, the frames' times stand.
        let untrusted = g.first_untrusted(&[], None, &previous, 1);
        assert_eq!((untrusted.from, untrusted.time_from), (3, 4));
        // A group that drifted puts every time after its I frame in doubt.
        let mut g = group(&[10, 11, 12, 13], &[]);
        g.drifted();
        let untrusted = g.first_untrusted(&[], Some(&[14]), &previous, 1);
        assert_eq!((untrusted.from, untrusted.time_from), (1, 1));
    }

    #[test]
    fn one_step_alone_does_not_settle_a_line_feed() {
        // An I-frame value no P frame is predicted from, with nothing before the group: only the
        // step to the first P frame tells the readings apart.
        let g = group(&[10, 11, 12], &[(0, -100)]);
        assert_eq!(
            g.first_unsettled_line_feeds(&[], Some(&[13]), &[Predictor::Zero], 0)
                .0,
            0
        );
        // With the frame before the group, the step into it counts too.
        assert_eq!(
            g.first_unsettled_line_feeds(&[9], Some(&[13]), &[Predictor::Zero], 0)
                .0,
            3
        );
    }

    #[test]
    fn carried_differences_follow_the_field_predictor() {
        // Straight-line prediction carries a difference that grows by itself each frame: 3, 6, 9,
        // then back to 0 at the next I frame.
        let g = group(&[5, 5, 5, 5], &[(1, 3)]);
        let straight = [Predictor::StraightLine];
        let (read, other, steps) = g.join_steps(1, &g.line_feeds, &[], &[5], &straight);
        assert_eq!((read, other, steps), (0.0, 9.0 + 9.0 + 9.0 + 81.0, 4));
        assert_eq!(
            g.first_unsettled_line_feeds(&[], Some(&[5]), &straight, 0)
                .0,
            4
        );
        // Averaging halves it: 3, 1.5, 2.25.
        let average = [Predictor::Average2];
        let (_, other, _) = g.join_steps(1, &g.line_feeds, &[], &[5], &average);
        assert_eq!(other, 9.0 + 2.25 + 0.5625 + 2.25 * 2.25);
    }
}
