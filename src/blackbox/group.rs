//! Group validation: the frames of an I-frame group (the I frame, the P frames predicted from it
//! and whatever S, G, H and E frames come between) are held until the frames after them show
//! whether the group can be trusted.
//!
//! An I frame that follows the previous group without a break is corroborated by it. One that
//! comes after damage is trusted only when P frames decode from it (a misaligned or bogus I frame
//! is followed by bytes that do not decode as P frames) or the next I frame follows it cleanly.

use super::event::Event;
use super::frame::FrameKind;
use crate::report::DamageReason;
use std::ops::Range;

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
        item.values = start..self.values.len();
        if matches!(item.kind, FrameKind::I | FrameKind::P) {
            self.mains += 1;
        }
        self.items.push(item);
    }

    /// Whether the group can be trusted when no clean I frame follows it (damage came next, or
    /// the session ended): its I frame followed a trusted group, or P frames decoded from it.
    pub fn trusted_without_join(&self) -> bool {
        let needed = if self.anchor { 3 } else { 2 };
        self.joined || self.mains >= needed
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
        self.joined = false;
        self.anchor = false;
    }
}
