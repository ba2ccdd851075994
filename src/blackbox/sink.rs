//! What a session decodes to, as the decoder and its ledger pass it on: accepted frames (with
//! their trust) and events, in file order, to a [`Sink`].

use super::event::Event;
use super::frame::FrameKind;
use crate::report::{SessionReport, Trust};
use std::ops::Range;

/// An accepted I, P, S, G or H frame.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    pub kind: FrameKind,
    /// Absolute offset of the type byte.
    pub offset: u64,
    /// Length, type byte included.
    pub len: usize,
    /// One value per field after predictors, normalised to 32 bits by the field's signed flag.
    pub values: &'a [i64],
    /// The `time` field's index and its 64-bit monotonic value (I, P and G frames).
    pub time: Option<(usize, u64)>,
    /// Whether a value rule doubts the frame.
    pub trust: Trust,
}

/// An accepted event.
#[derive(Debug, Clone, Copy)]
pub struct EventFrame<'a> {
    pub offset: u64,
    pub len: usize,
    pub event: &'a Event,
}

/// Receives what a session decodes to, in file order.
pub trait Sink {
    /// An accepted data frame.
    fn frame(&mut self, _frame: &Frame<'_>) {}
    /// An accepted event.
    fn event(&mut self, _event: &EventFrame<'_>) {}
    /// The bytes before `offset` were searched for sessions, which happens to the whole file
    /// before any session is decoded; they are not read again until their session is.
    fn searched(&mut self, _offset: usize) {}
    /// Decoding starts at `range.start`, for the frames up to `range.end`: a session's, or a piece
    /// of them decoded on a thread of its own (a piece decodes past its end until it meets the
    /// next one).
    fn started(&mut self, _range: Range<usize>) {}
    /// A session is decoded (on one thread: [`super::decode`]): its report, spans included.
    fn decoded(&mut self, _report: &SessionReport) {}
}

/// A sink that keeps nothing (for `check`).
pub struct Discard;
impl Sink for Discard {}

/// A sink borrowed is a sink.
impl<S: Sink + ?Sized> Sink for &mut S {
    fn frame(&mut self, frame: &Frame<'_>) {
        (**self).frame(frame);
    }
    fn event(&mut self, event: &EventFrame<'_>) {
        (**self).event(event);
    }
    fn searched(&mut self, offset: usize) {
        (**self).searched(offset);
    }
    fn started(&mut self, range: Range<usize>) {
        (**self).started(range);
    }
    fn decoded(&mut self, report: &SessionReport) {
        (**self).decoded(report);
    }
}
