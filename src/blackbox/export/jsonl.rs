//! JSON Lines: per session a session record (field names per frame type, the header lines),
//! then one record per accepted frame (its values, the time field widened to 64 bits, and
//! `"trust":"suspect"` where the evidence is suspect) and per event, in file order.

use crate::blackbox::frame::FrameKind;
use crate::blackbox::sink::{EventFrame, Frame, Sink};
use crate::blackbox::{self, Session};
use crate::decimal::{NUMBER_ROOM, put_int, put_number, write_number};
use crate::report::{FileReport, Keep, Trust};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};

/// Decode `data` and write it as JSON Lines to `out`: per session a session record, then the
/// accepted frames `keep` names and the events, in file order.
pub fn write_jsonl(name: &str, data: &[u8], keep: Keep, out: impl Write) -> io::Result<FileReport> {
    let mut sink = JsonlSink::new(out, keep);
    let report = blackbox::decode(
        name,
        data,
        |session, sink: &mut JsonlSink<_>| sink.start_session(session),
        &mut sink,
    );
    sink.finish().map(|()| report)
}

/// Append `frame`'s values separated by commas to `line`, the time field replaced by its 64-bit
/// monotonic value.
fn put_values(line: &mut Vec<u8>, frame: &Frame<'_>) {
    let start = line.len();
    line.resize(start + frame.values.len() * (NUMBER_ROOM + 1), 0);
    let mut at = start;
    for (i, &v) in frame.values.iter().enumerate() {
        at = match frame.time {
            Some((t, time)) if t == i => put_number(line, at, false, time, 0, b' '),
            _ => put_int(line, at, v, 0),
        };
        line[at] = b',';
        at += 1;
    }
    // Without the last comma.
    line.truncate(at.saturating_sub(1).max(start));
}

/// The first record of a session in JSON Lines.
#[derive(Serialize)]
struct SessionRecord<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    session: usize,
    offset: usize,
    fields: FieldNames<'a>,
    headers: BTreeMap<&'a str, &'a str>,
}

/// Field names per frame type (P frames share the I names).
#[derive(Serialize)]
struct FieldNames<'a> {
    #[serde(rename = "I")]
    i: &'a [String],
    #[serde(rename = "P")]
    p: &'a [String],
    #[serde(rename = "S")]
    s: &'a [String],
    #[serde(rename = "G")]
    g: &'a [String],
    #[serde(rename = "H")]
    h: &'a [String],
}

/// An event in JSON Lines.
#[derive(Serialize)]
struct EventRecord {
    #[serde(rename = "type")]
    kind: &'static str,
    session: usize,
    offset: u64,
    event: u8,
    name: &'static str,
    data: serde_json::Value,
}

/// Writes what it is given as JSON Lines: a session record at [`JsonlSink::start_session`],
/// then one record per frame `keep` names and per event.
pub struct JsonlSink<W: Write> {
    out: W,
    /// One frame's record, reused.
    line: Vec<u8>,
    session: usize,
    keep: Keep,
    error: Option<io::Error>,
}

impl<W: Write> JsonlSink<W> {
    /// A sink writing to `out`, buffered.
    pub fn new(out: W, keep: Keep) -> JsonlSink<BufWriter<W>> {
        JsonlSink {
            out: BufWriter::with_capacity(1 << 16, out),
            line: Vec::with_capacity(4096),
            session: 0,
            keep,
            error: None,
        }
    }

    /// The first error met in writing, or that of flushing what is buffered.
    pub fn finish(&mut self) -> io::Result<()> {
        match self.error.take() {
            Some(e) => Err(e),
            None => self.out.flush(),
        }
    }

    /// Write the session record of `session`; its frames and events follow.
    pub fn start_session(&mut self, session: &Session) {
        self.session = session.bounds.index;
        let h = &session.header;
        let names = |kind| h.def(kind).map_or(&[][..], |d| &d.names[..]);
        // A repeated header name keeps its last value, as the decoders read it.
        let headers: BTreeMap<&str, &str> = h
            .lines
            .iter()
            .map(|l| (l.name.as_str(), l.value.as_str()))
            .collect();
        let record = SessionRecord {
            kind: "session",
            session: session.bounds.index,
            offset: session.bounds.start,
            fields: FieldNames {
                i: names(FrameKind::I),
                p: names(FrameKind::P),
                s: names(FrameKind::S),
                g: names(FrameKind::G),
                h: names(FrameKind::H),
            },
            headers,
        };
        self.emit(|out| {
            serde_json::to_writer(&mut *out, &record)?;
            writeln!(out)
        });
    }

    fn emit(&mut self, f: impl FnOnce(&mut W) -> io::Result<()>) {
        if self.error.is_none()
            && let Err(e) = f(&mut self.out)
        {
            self.error = Some(e);
        }
    }
}

impl<W: Write> Sink for JsonlSink<W> {
    fn frame(&mut self, frame: &Frame<'_>) {
        if !self.keep.keeps(frame.trust) {
            return;
        }
        let line = &mut self.line;
        line.clear();
        line.extend_from_slice(b"{\"type\":\"");
        line.extend_from_slice(frame.kind.as_str().as_bytes());
        line.extend_from_slice(b"\",\"session\":");
        write_number(line, false, self.session as u64, 0, b' ');
        line.extend_from_slice(b",\"offset\":");
        write_number(line, false, frame.offset, 0, b' ');
        line.extend_from_slice(b",\"values\":[");
        put_values(line, frame);
        line.extend_from_slice(if frame.trust == Trust::Suspect {
            b"],\"trust\":\"suspect\"}\n"
        } else {
            b"]}\n"
        });
        if self.error.is_none()
            && let Err(e) = self.out.write_all(&self.line)
        {
            self.error = Some(e);
        }
    }

    fn event(&mut self, event: &EventFrame<'_>) {
        let record = EventRecord {
            kind: "E",
            session: self.session,
            offset: event.offset,
            event: event.event.id(),
            name: event.event.name(),
            data: event.event.data(),
        };
        self.emit(|out| {
            serde_json::to_writer(&mut *out, &record)?;
            writeln!(out)
        });
    }
}
