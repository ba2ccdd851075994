//! Group validation: the frames of an I-frame group (the I frame, the P frames predicted from it
//! and whatever S, G, H and E frames come between) are held until the frames after them show
//! whether the group can be trusted.
//!
//! An I frame that follows the previous group without a break is corroborated by it. One that
//! comes after damage is trusted only when P frames decode from it (a misaligned or bogus I frame
//! is followed by bytes that do not decode as P frames) or the next I frame follows it cleanly.
//!
//! The value rules that weigh a held group (offsets of its I frame or from one of its P frames,
//! line feeds of a text-mode copy) are in [`super::evidence`], one file a rule.

use super::event::Event;
use super::frame::FrameKind;
use super::predictor::{MainHistory, Predictor};
use crate::report::DamageReason;
use std::ops::Range;

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
    /// The first main frame resting on a line feed that its neighbours do not show to be one or
    /// a carriage return (`items.len()` when there is none): from there on, values are in doubt.
    pub line_feed_from: usize,
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

/// A field value that would differ had a line feed of a text-mode copy been a carriage return
/// (the line feed rule of the evidence layer judges them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineFeedValue {
    /// The line feed's offset in the file (values of one line feed are judged together).
    pub offset: usize,
    pub field: usize,
    /// The value a carriage return gives, minus the value read: a step between 32-bit values,
    /// so it wraps.
    pub delta: i64,
    /// Whether that carriage return is one the copy took away (CR LF read as LF), not one it
    /// turned into the line feed: the two readings of a line feed, judged apart. Once the group
    /// reads the line feed otherwise, the flag of the reading it took marks the line feed as it
    /// was read.
    pub pair: bool,
}

/// What the line feeds of a group are joined to: the main frames on either side.
#[derive(Debug, Clone, Copy, Default)]
pub struct Neighbours<'a> {
    /// The last main frame before the group, not long before it (empty when there is none).
    pub before: &'a [i64],
    /// Fields of `before` whose values rest on a line feed that was not settled, with the
    /// difference reading it otherwise makes.
    pub before_doubtful: &'a [(usize, i64)],
    /// The next I frame, following in step.
    pub next: Option<&'a [i64]>,
    /// Values of the next I frame that carriage returns would change.
    pub next_line_feeds: &'a [LineFeedValue],
}

/// The open group.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Group {
    pub items: Vec<Item>,
    /// The held frames' values, then room the next main frame decodes into: only the first
    /// `held` are the group's (the rest is reused, so holding a frame neither allocates nor
    /// clears memory).
    pub(in crate::blackbox) values: Vec<i64>,
    held: usize,
    /// Main frames held.
    pub(in crate::blackbox) mains: usize,
    /// Whether the I frame followed the previous group's last main frame without a break.
    joined: bool,
    /// Whether the I frame re-anchored the stream after an implausible jump.
    anchor: bool,
    /// Whether the frames after the group's held ones failed the iteration or time checks.
    drifted: bool,
    /// Where the first, last and last-but-one main frames' values are in `values`.
    pub(in crate::blackbox) first_main: Option<Range<usize>>,
    pub(in crate::blackbox) last_main: Option<Range<usize>>,
    penultimate_main: Option<Range<usize>>,
    /// Values of held main frames that carriage returns would change, with the item holding them.
    pub(in crate::blackbox) line_feeds: Vec<(usize, LineFeedValue)>,
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
    /// the session ended): its I frame followed a trusted group, P frames decoded from it and
    /// kept (before item `kept`: a salvaged log holds only those to show it), or it runs in step
    /// into the log-end event.
    pub fn trusted_without_join(&self, kept: usize) -> bool {
        let needed = if self.anchor { 3 } else { 2 };
        let mains = self.items[..kept.min(self.items.len())]
            .iter()
            .filter(|it| matches!(it.kind, FrameKind::I | FrameKind::P))
            .count();
        let ends_the_log = self.items.iter().skip(1).all(|it| it.gap.is_none())
            && self
                .items
                .last()
                .is_some_and(|it| matches!(it.event, Some(Event::LogEnd { .. })));
        self.joined || mains >= needed || !self.anchor && ends_the_log
    }

    /// Note that the values predicted inside the group may be off: the stream after it failed the
    /// iteration or time checks, or the next I frame shows frames lost inside it or a time error
    /// carried on (its I frame's values are its own).
    pub fn drifted(&mut self) {
        self.drifted = true;
    }

    /// The first main frame not to trust and why: in a group that drifted, every one after the I
    /// frame, or the I frame too when neither the group before it nor the next I frame
    /// corroborates it; and the first whose iteration or time (`timing`) rests on an unsettled
    /// line feed (see [`Group::first_unsettled_line_feeds`]). Also the first whose time is in
    /// doubt, and the first whose other values are.
    pub fn first_untrusted(
        &self,
        around: &Neighbours<'_>,
        predictors: &[Predictor],
        timing: [usize; 2],
    ) -> Untrusted {
        let (line_feed_from, iteration) =
            self.first_unsettled_line_feeds(around, predictors, timing[0]);
        let time = if line_feed_from < self.items.len() {
            self.first_unsettled_line_feeds(around, predictors, timing[1])
                .1
        } else {
            self.items.len()
        };
        let refused = iteration.min(time);
        let drift = if self.drifted {
            let corroborated = self.joined || around.next.is_some();
            // In a text-mode copy a line feed is the only byte changed: the frames before the
            // first one that reads otherwise as a carriage return hold what was logged.
            let first_line_feed = self.line_feeds.first().map_or(1, |&(item, _)| item.max(1));
            self.items
                .len()
                .min(first_line_feed * usize::from(corroborated))
        } else {
            self.items.len()
        };
        let (from, reason) = if drift < refused {
            (drift, DamageReason::SuspectGroup)
        } else {
            (refused, DamageReason::NewlineConverted)
        };
        Untrusted {
            from,
            reason,
            time_from: drift.min(time),
            after_i_frame: self.drifted && drift == 1 && drift <= refused,
            line_feed_from,
        }
    }

    /// The first value of `item` that a carriage return would change.
    pub fn line_feed_of(&self, item: usize) -> Option<LineFeedValue> {
        self.line_feeds
            .iter()
            .find(|(it, _)| *it == item)
            .map(|&(_, v)| v)
    }

    /// The largest change of `field` between consecutive main frames held (frames of another
    /// length are not compared).
    pub(in crate::blackbox) fn largest_change(&self, field: usize) -> i64 {
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

    /// The main frames held, in order, with their places among the items.
    pub(in crate::blackbox) fn main_items(
        &self,
    ) -> impl DoubleEndedIterator<Item = (usize, &Item)> {
        self.items
            .iter()
            .enumerate()
            .filter(|(_, i)| matches!(i.kind, FrameKind::I | FrameKind::P))
    }

    /// The values of the main frames held, in order.
    pub(in crate::blackbox) fn main_frames(&self) -> impl DoubleEndedIterator<Item = &[i64]> {
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
                    pair: false,
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
            g.first_unsettled_line_feeds(
                &Neighbours {
                    next: Some(&[14]),
                    ..Neighbours::default()
                },
                &[Predictor::Previous],
                0
            )
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
            g.first_unsettled_line_feeds(
                &Neighbours {
                    next: Some(&[10]),
                    ..Neighbours::default()
                },
                &previous,
                0
            )
            .0,
            1
        );
        // Without the next I frame nothing shows what the line feed was.
        let g = group(&[10, 11, 12, 13], &[(3, -12)]);
        assert_eq!(
            g.first_unsettled_line_feeds(&Neighbours::default(), &previous, 0)
                .0,
            3
        );
    }

    #[test]
    fn a_line_feed_in_the_time_refuses_frames_and_one_elsewhere_puts_them_in_doubt() {
        // Field 0 rests on an unsettled line feed from item 3 on (nothing after the group shows
        // what it was). As the time (or the iteration), the frames are refused from there.
        let g = group(&[10, 11, 12, 13], &[(3, -12)]);
        let previous = [Predictor::Previous];
        for timing in [[9, 0], [0, 9]] {
            let untrusted = g.first_untrusted(&Neighbours::default(), &previous, timing);
            assert_eq!(untrusted.from, 3);
            assert_eq!(untrusted.reason, DamageReason::NewlineConverted);
            assert_eq!(untrusted.line_feed_from, 3);
        }
        let untrusted = g.first_untrusted(&Neighbours::default(), &previous, [9, 0]);
        assert_eq!(untrusted.time_from, 3);
        // As another field, they are kept, in doubt from there, and their times stand.
        let untrusted = g.first_untrusted(&Neighbours::default(), &previous, [9, 1]);
        assert_eq!((untrusted.from, untrusted.time_from), (4, 4));
        assert_eq!(untrusted.line_feed_from, 3);
        // A group that drifted puts every time after its I frame in doubt.
        let mut g = group(&[10, 11, 12, 13], &[]);
        g.drifted();
        let untrusted = g.first_untrusted(
            &Neighbours {
                next: Some(&[14]),
                ..Neighbours::default()
            },
            &previous,
            [9, 1],
        );
        assert_eq!((untrusted.from, untrusted.time_from), (1, 1));
    }

    #[test]
    fn one_step_alone_does_not_settle_a_line_feed() {
        // An I-frame value no P frame is predicted from, with nothing before the group: only the
        // step to the first P frame tells the readings apart.
        let g = group(&[10, 11, 12], &[(0, -100)]);
        assert_eq!(
            g.first_unsettled_line_feeds(
                &Neighbours {
                    next: Some(&[13]),
                    ..Neighbours::default()
                },
                &[Predictor::Zero],
                0
            )
            .0,
            0
        );
        // With the frame before the group, the step into it counts too.
        assert_eq!(
            g.first_unsettled_line_feeds(
                &Neighbours {
                    before: &[9],
                    next: Some(&[13]),
                    ..Neighbours::default()
                },
                &[Predictor::Zero],
                0
            )
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
        let around = Neighbours {
            next: Some(&[5]),
            ..Neighbours::default()
        };
        let (read, other, steps) = g.join_steps(1, &g.line_feeds, &around, &straight);
        assert_eq!((read, other, steps), (0.0, 9.0 + 9.0 + 9.0 + 81.0, 4));
        assert_eq!(
            g.first_unsettled_line_feeds(
                &Neighbours {
                    next: Some(&[5]),
                    ..Neighbours::default()
                },
                &straight,
                0
            )
            .0,
            4
        );
        // Averaging halves it: 3, 1.5, 2.25.
        let average = [Predictor::Average2];
        let (_, other, _) = g.join_steps(1, &g.line_feeds, &around, &average);
        assert_eq!(other, 9.0 + 2.25 + 0.5625 + 2.25 * 2.25);
    }

    /// The group's line feeds as (whether a CR LF pair, difference) pairs.
    fn readings(g: &Group) -> Vec<(bool, i64)> {
        g.line_feeds
            .iter()
            .map(|(_, v)| (v.pair, v.delta))
            .collect()
    }

    /// The group's values of field 0, main frame by main frame.
    fn field_0(g: &Group) -> Vec<i64> {
        g.main_frames().map(|f| f[0]).collect()
    }

    #[test]
    fn a_carriage_return_that_joins_better_is_read_and_carried_on() {
        // Read: the field leaps by 12 at the line feed and stays; a carriage return runs flat.
        let around = Neighbours {
            next: Some(&[10]),
            ..Neighbours::default()
        };
        let previous = [Predictor::Previous];
        let mut g = group(&[10, 22, 22, 22], &[(1, -12)]);
        g.read_carriage_returns(&around, &previous, &[0], &[], [1, 2]);
        assert_eq!(field_0(&g), [10, 10, 10, 10]);
        // The line feed is now the other reading, and the frames stand.
        assert_eq!(g.first_unsettled_line_feeds(&around, &previous, 0).0, 4);
        // Averaged predictions carry the difference as the firmware's integer average does:
        // read 10, 22, 19, 21 are predictions of 16 and 20 (20.5 truncated) with residuals 3 and
        // 1; after a carriage return, predictions of 10 and 11.
        let average = [Predictor::Average2];
        let mut g = group(&[10, 22, 19, 21], &[(1, -12)]);
        g.read_carriage_returns(&around, &average, &[0], &[], [1, 2]);
        assert_eq!(field_0(&g), [10, 10, 13, 12]);
        // A line feed in the iteration or time is left as read (refused if it does not stand).
        let mut g = group(&[10, 22, 22, 22], &[(1, -12)]);
        g.read_carriage_returns(&around, &previous, &[0], &[], [0, 2]);
        assert_eq!(field_0(&g), [10, 22, 22, 22]);
        assert_eq!(g.first_unsettled_line_feeds(&around, &previous, 0).0, 1);
    }

    #[test]
    fn a_reading_past_a_field_bound_is_not_read() {
        // A carriage return (+30) would join the frames around better, but gives the field a
        // value it cannot take (past 105): the line feed stays as read, in doubt.
        let around = Neighbours {
            next: Some(&[100]),
            ..Neighbours::default()
        };
        let previous = [Predictor::Previous];
        let mut g = group(&[100, 80, 80, 80], &[(1, 30)]);
        g.read_carriage_returns(&around, &previous, &[0], &[], [1, 2]);
        assert_eq!(field_0(&g), [100, 110, 110, 110]);
        let mut g = group(&[100, 80, 80, 80], &[(1, 30)]);
        g.read_carriage_returns(&around, &previous, &[0], &[105], [1, 2]);
        assert_eq!(field_0(&g), [100, 80, 80, 80]);
        assert_eq!(g.first_unsettled_line_feeds(&around, &previous, 0).0, 1);
    }

    #[test]
    fn each_reading_of_a_line_feed_is_judged_on_its_own() {
        // A line feed that was a carriage return (-12, runs flat) or a CR LF pair that lost its
        // CR (+4000): taken together, the pair's leap would make the line feed look right.
        let around = Neighbours {
            next: Some(&[10]),
            ..Neighbours::default()
        };
        let previous = [Predictor::Previous];
        let mut g = group(&[10, 22, 22, 22], &[(1, -12)]);
        let pair = LineFeedValue {
            offset: 15,
            field: 0,
            delta: 4000,
            pair: true,
        };
        g.line_feeds.push((1, pair));
        assert_eq!(g.first_unsettled_line_feeds(&around, &previous, 0).0, 1);
        g.read_carriage_returns(&around, &previous, &[0], &[], [1, 2]);
        assert_eq!(field_0(&g), [10, 10, 10, 10]);
        // The line feed and the pair are now the other readings, each as far from the carriage
        // return as it is: the frames stand.
        assert_eq!(readings(&g), [(false, 12), (true, 4012)]);
        assert_eq!(g.first_unsettled_line_feeds(&around, &previous, 0).0, 4);
        // Where the pair is the better reading, the carriage return stays one to judge by.
        let mut g = group(&[10, 22, 22, 22], &[(1, -20)]);
        g.line_feeds.push((1, LineFeedValue { delta: -12, ..pair }));
        g.read_carriage_returns(&around, &previous, &[0], &[], [1, 2]);
        assert_eq!(field_0(&g), [10, 10, 10, 10]);
        assert_eq!(readings(&g), [(true, 12), (false, -8)]);
        assert_eq!(g.first_unsettled_line_feeds(&around, &previous, 0).0, 4);
    }

    #[test]
    fn a_neighbour_resting_on_a_line_feed_in_the_same_field_joins_either_reading() {
        // A constant field whose I frames all hold a line feed: the next I frame reads 5 or 17
        // as this one does, so only the frame before the group tells.
        let previous = [Predictor::Previous];
        let next_line_feed = [LineFeedValue {
            offset: 0,
            field: 0,
            delta: 12,
            pair: false,
        }];
        let around = |before: &'static [i64]| Neighbours {
            before,
            next: Some(&[5]),
            next_line_feeds: &next_line_feed,
            ..Neighbours::default()
        };
        let g = group(&[5, 5, 5], &[(0, 12)]);
        assert_eq!(
            g.first_unsettled_line_feeds(&around(&[]), &previous, 0).0,
            0
        );
        assert_eq!(
            g.first_unsettled_line_feeds(&around(&[5]), &previous, 0).0,
            3
        );
        let mut g = group(&[5, 5, 5], &[(0, 12)]);
        g.read_carriage_returns(&around(&[17]), &previous, &[0], &[], [1, 2]);
        assert_eq!(field_0(&g), [17, 17, 17]);
        // A frame before that rests on a line feed of its own, of another size, still tells.
        let g = group(&[5, 5, 5], &[(0, 12)]);
        let small_doubt = [(0, 1)];
        let around = Neighbours {
            before: &[5],
            before_doubtful: &small_doubt,
            next: Some(&[5]),
            next_line_feeds: &next_line_feed,
        };
        assert_eq!(g.first_unsettled_line_feeds(&around, &previous, 0).0, 3);
        // Of the same size, it does not.
        let same_doubt = [(0, -12)];
        let around = Neighbours {
            before: &[17],
            before_doubtful: &same_doubt,
            ..around
        };
        assert_eq!(g.first_unsettled_line_feeds(&around, &previous, 0).0, 0);
    }

    #[test]
    fn an_i_frame_after_damage_stands_on_frames_kept_or_on_the_log_end() {
        let log_end = |gap| Item {
            kind: FrameKind::E,
            start: 30,
            end: 40,
            gap,
            values: 0..0,
            event: Some(Event::LogEnd {
                disarm_reason: None,
            }),
        };
        // P frames decoded from it show it, but only those kept: a salvaged log holds no other.
        let g = group(&[10, 11], &[]);
        assert!(g.trusted_without_join(2));
        assert!(!g.trusted_without_join(1));
        // The log-end event right after it, in step, shows it too.
        let mut g = group(&[10, 11], &[]);
        g.push(log_end(None), &[]);
        assert!(g.trusted_without_join(1));
        let mut g = group(&[10, 11], &[]);
        g.push(log_end(Some(DamageReason::BadEncoding)), &[]);
        assert!(!g.trusted_without_join(1));
        // An I frame that jumped needs two P frames kept.
        let mut g = group(&[10, 11], &[]);
        g.restart(false, true);
        g.push(main_item(FrameKind::I), &[10]);
        g.push(log_end(None), &[]);
        assert!(!g.trusted_without_join(2));
    }
}
