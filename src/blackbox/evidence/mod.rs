//! The evidence the Blackbox decoder weighs, one rule a file. Each says what it sees, its
//! threshold, how it was calibrated and the level of trust it yields:
//!
//! - corrupt (structural: the bytes cannot be read in step, the frames are refused and their
//!   bytes reported as a corrupt span): the next byte must start a frame, the frame length and
//!   the codes' bounds, the iteration and time schedule, the header's [`value_bounds`], the
//!   [`gps_track`] a GPS frame after damage must continue, the schedule of the next I frame after
//!   a group (frames lost inside it) and the time step into it (a time error carried on), the
//!   frames that corroborate an I frame after damage. These live in the decoder's scan.
//! - suspect (value evidence only: the frames are read in step and kept, marked, with a
//!   [`Suspicion`]): [`i_frame_offset`], [`p_frame_offset`], and the I frame of a group in which
//!   frames were lost or the time drifted (the loss may begin inside it). Evidence scored at
//!   [`CORRUPT_SCORE`] or more refuses the frames after all.
//! - in a text-mode copy, the [`line_feed`] each frame holds is read as a line feed or as a
//!   carriage return where the frames around it show which; elsewhere the frames from there on
//!   are suspect (`line-feed`, with the better reading), or refused where the iteration or time
//!   rests on it.
//! - in a log that salvage wrote, the frames its header lists as kept suspect
//!   ([`listed_suspect`]) are suspect again.
//!
//! `tests/suite/clean_flights.rs` holds the calibration: on every clean real log and on generated hard
//! flights no value rule fires.

pub mod gps_track;
pub mod i_frame_offset;
pub mod line_feed;
pub mod listed_suspect;
pub mod p_frame_offset;
pub mod value_bounds;

use crate::blackbox::group::LineFeedValue;
use crate::report::{Evidence, Rule};

/// The score from which value evidence alone refuses frames rather than marking them suspect:
/// no value rule fires on a clean flight at all (`tests/suite/clean_flights.rs`).
pub const CORRUPT_SCORE: f64 = 64.0;

/// How many times the largest change inside the groups a field's step into and out of a group
/// must be to set the group's I frame apart (clean flights reach 2.14).
pub const OFFSET_FACTOR: i64 = 4;

/// A field whose largest change elsewhere is at most this is at rest (or creeping): a step of it
/// is not lost in its own motion, so the offset rules ask less than `factor` times 2 more than
/// its change ([`beyond`]).
pub const REST_CHANGE: i64 = 3;

/// `factor` times 2 more than a field's largest `change` elsewhere, or, for a field at rest
/// ([`REST_CHANGE`]), `factor` times it and `at_rest` more. Without a branch, so that loops over
/// fields stay on vectors (changes of 32-bit values are far from overflowing it).
#[inline(always)]
pub fn beyond(factor: i64, change: i64, at_rest: i64) -> i64 {
    let rest = (change - REST_CHANGE - 1) >> 63;
    factor * change + ((2 * factor) & !rest) + (at_rest & rest)
}

/// [`beyond`] for a change that need not be whole (one left unexplained by a fitted error).
#[inline(always)]
pub fn beyond_fraction(factor: i64, change: f64, at_rest: i64) -> f64 {
    let more = if change <= REST_CHANGE as f64 {
        at_rest
    } else {
        2 * factor
    };
    factor as f64 * change + more as f64
}

/// What an I-frame offset of a field at rest must reach beyond [`OFFSET_FACTOR`] times its
/// change: clean flights step by 2 at rest into an I frame and back out of it, and reach 0.81
/// of this at most (a change of 3; margin 1.23).
pub const OFFSET_AT_REST: i64 = 4;

/// The step an offset must reach to stand out from a field's largest `change` elsewhere:
/// [`beyond`] it by [`OFFSET_FACTOR`] ([`OFFSET_AT_REST`] at rest). A flipped bit's error is a
/// power of two and this a multiple of 4, so a field at rest is offset by 4 or more.
#[inline(always)]
pub fn offset_threshold(change: i64) -> i64 {
    beyond(OFFSET_FACTOR, change, OFFSET_AT_REST)
}

/// Main frames a group needs before the steps into and out of it are compared with its inside.
pub const MIN_MAINS_FOR_OFFSET: usize = 3;

/// How many times (2 more than) its largest change elsewhere a field must step where an offset
/// starts to answer it: flight, not damage, moves several fields at once.
pub const ANSWER_FACTOR: i64 = 2;
/// How many other fields must answer an offset for it to be flight.
pub const MIN_ANSWERING: usize = 2;

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

    /// The suspicion of a line feed not settled, `value` of main frame item `from`: the readings
    /// differ by its difference, and neither joins the frames around it clearly better (a score
    /// of 1).
    pub fn of_line_feed(from: usize, value: LineFeedValue) -> Suspicion {
        let offset = Offset {
            field: value.field,
            offset: value.delta,
            threshold: value.delta,
        };
        Suspicion::of(Rule::LineFeed, from, offset)
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
