//! Writing Blackbox sessions: the encoder side of every codec and predictor, with the same
//! prediction state the decoder keeps, so that what is written decodes to the values given.

use super::event::Event;
use super::frame::FrameKind;
use super::header::{Header, LOG_START_MARKER};
use super::predictor::Context;

/// Writes one session: header lines, then frames.
pub struct SessionWriter {
    header: Header,
    /// Bytes written and not yet taken by [`SessionWriter::take`].
    out: Vec<u8>,
    /// Bytes taken so far.
    taken: u64,
    previous: Option<Vec<i64>>,
    previous2: Option<Vec<i64>>,
    last_iteration: Option<u32>,
    last_main_time: i64,
    home: Vec<i64>,
}

impl SessionWriter {
    /// Start a session with the log start marker followed by `lines` (`name`, `value`).
    pub fn new<N: AsRef<str>, V: AsRef<str>>(lines: &[(N, V)]) -> SessionWriter {
        let mut out = LOG_START_MARKER.to_vec();
        for (name, value) in lines {
            out.extend_from_slice(format!("H {}:{}\n", name.as_ref(), value.as_ref()).as_bytes());
        }
        SessionWriter::from_header_bytes(&out)
    }

    /// Start a session with header bytes copied as they are (log start marker included).
    pub fn from_header_bytes(bytes: &[u8]) -> SessionWriter {
        let out = bytes.to_vec();
        let header = Header::parse(&out, 0, out.len());
        let home = vec![0; header.h.as_ref().map_or(0, |d| d.len())];
        SessionWriter {
            header,
            out,
            taken: 0,
            previous: None,
            previous2: None,
            last_iteration: None,
            last_main_time: 0,
            home,
        }
    }

    /// The header as the decoder will read it.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// What the predictors of the next frame of `kind` read: for a P frame the last two main
    /// frames, for a G frame the last home and the last main frame's time.
    pub fn context(&self, kind: FrameKind) -> Context<'_> {
        self.header.context(
            kind,
            (self.previous.as_deref(), self.previous2.as_deref()),
            self.last_iteration,
            &self.home,
            || self.last_main_time,
        )
    }

    /// The last main frame written.
    pub fn previous(&self) -> Option<&[i64]> {
        self.previous.as_deref()
    }

    /// The iteration of the last main frame written, or of the logging-resume event after it.
    pub fn last_iteration(&self) -> Option<u32> {
        self.last_iteration
    }

    fn main_field(&self, values: &[i64], name: &str) -> i64 {
        self.header
            .i
            .as_ref()
            .and_then(|d| d.index_of(name))
            .and_then(|i| values.get(i).copied())
            .unwrap_or(0)
    }

    /// Write a main frame (I or P) holding `values`, one per I field.
    ///
    /// # Panics
    /// If the header does not define the frame type or `values` has the wrong length.
    pub fn main(&mut self, kind: FrameKind, values: &[i64]) {
        self.frame(kind, values);
        self.previous2 = match kind {
            FrameKind::P => self.previous.take(),
            _ => Some(values.to_vec()),
        };
        self.previous = Some(values.to_vec());
        self.last_iteration = Some(self.main_field(values, "loopIteration") as u32);
        self.last_main_time = self.main_field(values, "time");
    }

    /// Write an S, G or H frame.
    ///
    /// # Panics
    /// If the header does not define the frame type or `values` has the wrong length.
    pub fn other(&mut self, kind: FrameKind, values: &[i64]) {
        self.frame(kind, values);
        if kind == FrameKind::H {
            self.home = values.to_vec();
        }
    }

    /// Write the type byte and the fields of a data frame, predicted from what was written before.
    fn frame(&mut self, kind: FrameKind, values: &[i64]) {
        let def = self
            .header
            .def(kind)
            .expect("frame type defined in the header");
        assert_eq!(values.len(), def.len(), "one value per field");
        let mut out = std::mem::take(&mut self.out);
        out.push(kind.byte());
        def.encode(values, &self.context(kind), &mut out);
        self.out = out;
    }

    /// Write an event.
    pub fn event(&mut self, event: &Event) {
        event.encode(&mut self.out);
        if let Event::LoggingResume { iteration, .. } = *event {
            self.last_iteration = Some(iteration);
        }
    }

    /// Append raw bytes (padding, or damage in tests).
    pub fn raw(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    /// The session's bytes written since the last [`SessionWriter::take`] (all of them when
    /// nothing was taken).
    pub fn bytes(&self) -> &[u8] {
        &self.out
    }

    /// How many bytes of the session were written so far, taken or not.
    pub fn written(&self) -> u64 {
        self.taken + self.out.len() as u64
    }

    /// Hand the bytes written since the last call to `to`, and forget them: a long session is
    /// written out as it goes instead of held whole.
    pub fn take<E>(&mut self, to: impl FnOnce(&[u8]) -> Result<(), E>) -> Result<(), E> {
        let result = to(&self.out);
        self.taken += self.out.len() as u64;
        self.out.clear();
        result
    }

    /// The finished session: the bytes not yet taken.
    pub fn finish(self) -> Vec<u8> {
        self.out
    }
}
