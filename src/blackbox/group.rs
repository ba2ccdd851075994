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

use super::event::Event;
use super::frame::FrameKind;
use crate::report::DamageReason;
use std::ops::Range;

/// How many times the largest change inside the groups a field's step into and out of a group
/// must be to set the group's I frame apart (clean real logs stay under 2).
pub const OFFSET_FACTOR: i64 = 4;
/// Main frames a group needs before the steps into and out of it are compared with its inside.
const MIN_MAINS_FOR_OFFSET: usize = 3;

/// Widen `scale`, per field the largest change between consecutive main frames, by the change
/// from `previous` to `values` (frames of another length are not compared).
pub fn widen_scale(scale: &mut Vec<i64>, previous: &[i64], values: &[i64]) {
    if previous.len() != values.len() {
        return;
    }
    scale.resize(values.len(), 0);
    for ((s, a), b) in scale.iter_mut().zip(previous).zip(values) {
        *s = (*s).max((b - a).abs());
    }
}

/// A frame the rules accept, waiting for the group's verdict.
#[derive(Debug, Clone)]
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

/// The open group.
#[derive(Debug, Default)]
pub struct Group {
    pub items: Vec<Item>,
    pub values: Vec<i64>,
    /// Main frames held.
    mains: usize,
    /// Whether the I frame followed the previous group's last main frame without a break.
    joined: bool,
    /// Whether the I frame re-anchored the stream after an implausible jump.
    anchor: bool,
    /// Where the first and last main frames' values are in `values`.
    first_main: Option<Range<usize>>,
    last_main: Option<Range<usize>>,
    /// Per field, the largest change between consecutive main frames held.
    scale: Vec<i64>,
}

impl Group {
    /// Whether a group is open (an I frame started it).
    pub fn is_open(&self) -> bool {
        self.mains > 0
    }

    /// Whether anything is held.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Hold a frame.
    pub fn push(&mut self, mut item: Item, values: &[i64]) {
        let start = self.values.len();
        self.values.extend_from_slice(values);
        let range = start..self.values.len();
        item.values = range.clone();
        if matches!(item.kind, FrameKind::I | FrameKind::P) {
            self.mains += 1;
            if let Some(previous) = self.last_main.clone() {
                let (held, new) = self.values.split_at(range.start);
                widen_scale(&mut self.scale, &held[previous], new);
            }
            self.first_main.get_or_insert(range.clone());
            self.last_main = Some(range);
        }
        self.items.push(item);
    }

    /// Whether the group can be trusted when no clean I frame follows it (damage came next, or
    /// the session ended): its I frame followed a trusted group, or P frames decoded from it.
    pub fn trusted_without_join(&self) -> bool {
        let needed = if self.anchor { 3 } else { 2 };
        self.joined || self.mains >= needed
    }

    /// Per field, the largest change between consecutive main frames held, when the group holds
    /// enough of them to compare the next group's I frame with (empty otherwise).
    pub fn settled_scale(&self) -> &[i64] {
        if self.mains >= MIN_MAINS_FOR_OFFSET {
            &self.scale
        } else {
            &[]
        }
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

    /// Whether one field of the group's I frame is offset from both its neighbours (for a group
    /// whose I frame joined the previous one): it steps from `before` (the previous group's last
    /// main frame, whose changes were at most `before_scale`)
    /// by more than [`OFFSET_FACTOR`] times the largest change inside either group, and the step to
    /// `next` (the next I frame) takes it back to within a quarter. Only fields marked in
    /// `checked` are compared.
    pub fn offset_by_its_i_frame(
        &self,
        before: &[i64],
        before_scale: &[i64],
        next: &[i64],
        checked: &[bool],
    ) -> bool {
        if !self.joined || self.mains < MIN_MAINS_FOR_OFFSET {
            return false;
        }
        let (Some(first), Some(last)) = (self.first_main.clone(), self.last_main()) else {
            return false;
        };
        let (first, scale) = (&self.values[first], &self.scale);
        let n = first.len();
        if [
            before.len(),
            before_scale.len(),
            next.len(),
            last.len(),
            scale.len(),
            checked.len(),
        ]
        .iter()
        .any(|&len| len != n)
        {
            return false;
        }
        (0..n).any(|f| {
            let (into, out) = (first[f] - before[f], next[f] - last[f]);
            let inside = scale[f].max(before_scale[f]);
            // The rarest condition first: most fields stop here.
            into.abs().min(out.abs()) > OFFSET_FACTOR * (inside + 2)
                && checked[f]
                && (into < 0) != (out < 0)
                && (into + out).abs() * 4 < into.abs() + out.abs()
        })
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
        self.values.clear();
        self.mains = 0;
        self.first_main = None;
        self.last_main = None;
        self.scale.clear();
        self.joined = false;
        self.anchor = false;
    }
}
