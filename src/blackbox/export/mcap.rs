//! MCAP: a recording per session (`NN`), opened in Foxglove or PlotJuggler. Channels `/main` (I
//! and P frames), `/slow`, `/gps` and `/home` carry each frame as a JSON object of its fields
//! (the fields `name[0]`, `name[1]`, … as one array `name`; `"trust":"suspect"` on a suspect
//! frame), stamped with the frame's time (slow and home frames, which have none: the last main
//! frame's). `/log` (`foxglove.Log`) holds the events and the session's corrupt and suspect spans
//! at their flight time, `/gps/fix` (`foxglove.LocationFix`) the GPS positions.

use crate::blackbox::Session;
use crate::blackbox::frame::{FrameDef, FrameKind};
use crate::blackbox::header::Header;
use crate::blackbox::sink::{EventFrame, Frame, Sink};
use crate::decimal::write_number;
use crate::recording::{Level, Recording};
use crate::report::{Firmware, Keep, SessionReport, Trust};
use serde_json::{Value, json};
use std::io::{self, Seek, Write};

/// The channels of a session's frames, in the order of [`TOPICS`].
const TOPICS: [&str; 4] = ["/main", "/slow", "/gps", "/home"];

fn channel_of(kind: FrameKind) -> Option<usize> {
    match kind {
        FrameKind::I | FrameKind::P => Some(0),
        FrameKind::S => Some(1),
        FrameKind::G => Some(2),
        FrameKind::H => Some(3),
        FrameKind::E => None,
    }
}

/// One member of a frame's JSON object: a field, or the fields `name[0]`, `name[1]`, … as one
/// array.
enum Member {
    Field { key: String, field: usize },
    Array { key: String, fields: Vec<usize> },
}

/// How a frame kind's fields become a JSON object.
struct Shape {
    members: Vec<Member>,
    time: Option<usize>,
}

impl Shape {
    fn of(def: &FrameDef) -> Shape {
        let mut members: Vec<Member> = Vec::new();
        for (field, name) in def.names.iter().enumerate() {
            let element = name
                .strip_suffix(']')
                .and_then(|n| n.split_once('['))
                .and_then(|(base, i)| Some((base, i.parse::<usize>().ok()?)));
            match (element, members.last_mut()) {
                (Some((base, i)), Some(Member::Array { key, fields }))
                    if *key == json_string(base) && i == fields.len() =>
                {
                    fields.push(field)
                }
                (Some((base, 0)), _) => members.push(Member::Array {
                    key: json_string(base),
                    fields: vec![field],
                }),
                _ => members.push(Member::Field {
                    key: json_string(name),
                    field,
                }),
            }
        }
        Shape {
            members,
            time: def.index_of("time"),
        }
    }

    /// The JSON Schema properties of the objects.
    fn properties(&self) -> Value {
        let mut properties = serde_json::Map::new();
        for member in &self.members {
            let (key, schema) = match member {
                Member::Field { key, .. } => (key, json!({"type": "integer"})),
                Member::Array { key, .. } => {
                    (key, json!({"type": "array", "items": {"type": "integer"}}))
                }
            };
            let key: String = serde_json::from_str(key).unwrap_or_default();
            properties.insert(key, schema);
        }
        properties.insert("trust".into(), json!({"type": "string"}));
        Value::Object(properties)
    }

    /// `frame` as a JSON object, into `line`.
    fn write(&self, line: &mut Vec<u8>, frame: &Frame<'_>) {
        let value = |field: usize| -> i64 {
            match frame.time {
                Some((t, time)) if Some(t) == self.time && t == field => {
                    i64::try_from(time).unwrap_or(i64::MAX)
                }
                _ => frame.values.get(field).copied().unwrap_or(0),
            }
        };
        let number =
            |line: &mut Vec<u8>, v: i64| write_number(line, v < 0, v.unsigned_abs(), 0, b' ');
        line.push(b'{');
        for (i, member) in self.members.iter().enumerate() {
            if i > 0 {
                line.push(b',');
            }
            match member {
                Member::Field { key, field } => {
                    line.extend_from_slice(key.as_bytes());
                    line.push(b':');
                    number(line, value(*field));
                }
                Member::Array { key, fields } => {
                    line.extend_from_slice(key.as_bytes());
                    line.extend_from_slice(b":[");
                    for (j, &field) in fields.iter().enumerate() {
                        if j > 0 {
                            line.push(b',');
                        }
                        number(line, value(field));
                    }
                    line.push(b']');
                }
            }
        }
        if frame.trust == Trust::Suspect {
            line.extend_from_slice(b",\"trust\":\"suspect\"");
        }
        line.push(b'}');
    }
}

fn json_string(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

/// Where a GPS frame's position is, and what one step of its altitude is worth in metres.
struct Fix {
    latitude: usize,
    longitude: usize,
    altitude: Option<usize>,
    metres: f64,
}

impl Fix {
    fn of(header: &Header) -> Option<Fix> {
        let g = header.g.as_ref()?;
        // Betaflight logs centimetres before 4.0 and decimetres since; INAV metres.
        let major = header
            .firmware_revision
            .as_deref()
            .and_then(|r| r.split_whitespace().nth(1))
            .and_then(|v| v.split('.').next()?.parse::<u32>().ok());
        let metres = match (header.firmware, major) {
            (Firmware::Inav, _) => 1.0,
            (_, Some(major)) if major >= 4 => 0.1,
            _ => 0.01,
        };
        Some(Fix {
            latitude: g.index_of("GPS_coord[0]")?,
            longitude: g.index_of("GPS_coord[1]")?,
            altitude: g.index_of("GPS_altitude"),
            metres,
        })
    }
}

/// The session being recorded.
struct SessionRecording<W: Write + Seek> {
    index: usize,
    recording: Recording<W>,
    shapes: [Option<Shape>; 4],
    channels: [Option<u16>; 4],
    fix: Option<Fix>,
    /// The last main frame's time, once there is one.
    time_us: Option<u64>,
    /// Frames and events that came before the first main frame: they wait for its time.
    waiting: Vec<Waiting>,
}

/// A message waiting for the session's first time.
enum Waiting {
    Message { channel: u16, json: Vec<u8> },
    Log { text: String },
}

/// Most messages that wait for a session's first time: past them, they are written at 0.
const MOST_WAITING: usize = 4096;

impl<W: Write + Seek> SessionRecording<W> {
    /// Write the messages waiting, at `time_us`.
    fn write_waiting(&mut self, time_us: u64) -> io::Result<()> {
        for waiting in std::mem::take(&mut self.waiting) {
            match waiting {
                Waiting::Message { channel, json } => {
                    self.recording.write(channel, time_us, &json)?
                }
                Waiting::Log { text } => {
                    self.recording.log(time_us, Level::Info, "event", &text)?
                }
            }
        }
        Ok(())
    }

    /// Write a message at the last main frame's time, or keep it until there is one.
    fn write_or_wait(&mut self, waiting: Waiting) -> io::Result<()> {
        self.waiting.push(waiting);
        match self.time_us {
            Some(time_us) => self.write_waiting(time_us),
            None if self.waiting.len() > MOST_WAITING => self.write_waiting(0),
            None => Ok(()),
        }
    }
}

/// Records every session, each to a writer `create` opens for its name (`NN`) and hands to
/// `close` once the session is decoded.
pub struct McapSink<W, F, C>
where
    W: Write + Seek,
    F: FnMut(&str) -> io::Result<W>,
    C: FnMut(&str, W) -> io::Result<()>,
{
    create: F,
    close: C,
    keep: Keep,
    session: Option<SessionRecording<W>>,
    /// One message, reused.
    line: Vec<u8>,
    error: Option<io::Error>,
}

impl<W, F, C> McapSink<W, F, C>
where
    W: Write + Seek,
    F: FnMut(&str) -> io::Result<W>,
    C: FnMut(&str, W) -> io::Result<()>,
{
    /// A sink recording the frames `keep` names.
    pub fn new(create: F, close: C, keep: Keep) -> Self {
        McapSink {
            create,
            close,
            keep,
            session: None,
            line: Vec::with_capacity(4096),
            error: None,
        }
    }

    /// Start the recording of `session`.
    pub fn start_session(&mut self, session: &Session) {
        self.close_session();
        if self.error.is_some() {
            return;
        }
        let index = session.bounds.index;
        let h = &session.header;
        let recording = (self.create)(&format!("{index:02}")).and_then(Recording::new);
        match recording {
            Ok(recording) => {
                self.session = Some(SessionRecording {
                    index,
                    recording,
                    shapes: [FrameKind::I, FrameKind::S, FrameKind::G, FrameKind::H]
                        .map(|kind| h.def(kind).map(Shape::of)),
                    channels: [None; 4],
                    fix: Fix::of(h),
                    time_us: None,
                    waiting: Vec::new(),
                })
            }
            Err(e) => self.error = Some(e),
        }
    }

    /// Finish the session's recording and hand it to `close`.
    fn close_session(&mut self) {
        let Some(session) = self.session.take() else {
            return;
        };
        let closed = session
            .recording
            .finish()
            .and_then(|out| (self.close)(&format!("{:02}", session.index), out));
        if let Err(e) = closed {
            self.error.get_or_insert(e);
        }
    }

    /// Finish the last recording; the first error met, if any.
    pub fn finish(mut self) -> io::Result<()> {
        self.close_session();
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn record(
        &mut self,
        write: impl FnOnce(&mut SessionRecording<W>, &mut Vec<u8>) -> io::Result<()>,
    ) {
        if self.error.is_some() {
            return;
        }
        let Some(session) = self.session.as_mut() else {
            return;
        };
        if let Err(e) = write(session, &mut self.line) {
            self.error = Some(e);
        }
    }
}

impl<W, F, C> Sink for McapSink<W, F, C>
where
    W: Write + Seek,
    F: FnMut(&str) -> io::Result<W>,
    C: FnMut(&str, W) -> io::Result<()>,
{
    fn frame(&mut self, frame: &Frame<'_>) {
        let Some(slot) = channel_of(frame.kind) else {
            return;
        };
        if !self.keep.keeps(frame.trust) {
            return;
        }
        self.record(|session, line| {
            let Some(shape) = &session.shapes[slot] else {
                return Ok(());
            };
            let channel = match session.channels[slot] {
                Some(channel) => channel,
                None => {
                    let schema = format!("blackbox.{}", &TOPICS[slot][1..]);
                    let channel =
                        session
                            .recording
                            .channel(TOPICS[slot], &schema, shape.properties())?;
                    *session.channels[slot].insert(channel)
                }
            };
            line.clear();
            shape.write(line, frame);
            let time_us = match (frame.time, slot) {
                (Some((_, time)), 0) => {
                    session.time_us = Some(time);
                    session.write_waiting(time)?;
                    time
                }
                (Some((_, time)), _) => time,
                (None, _) => {
                    let json = line.clone();
                    return session.write_or_wait(Waiting::Message { channel, json });
                }
            };
            session.recording.write(channel, time_us, line)?;
            if let (2, Some(fix)) = (slot, &session.fix) {
                let value = |i: usize| frame.values.get(i).copied().unwrap_or(0);
                let (lat, lon) = (value(fix.latitude) as i32, value(fix.longitude) as i32);
                // A receiver without a fix reports 0, 0.
                if lat != 0 || lon != 0 {
                    let altitude = fix
                        .altitude
                        .map_or(0.0, |i| value(i) as i32 as f64 * fix.metres);
                    session.recording.location(
                        time_us,
                        f64::from(lat) * 1e-7,
                        f64::from(lon) * 1e-7,
                        altitude,
                    )?;
                }
            }
            Ok(())
        });
    }

    fn event(&mut self, event: &EventFrame<'_>) {
        self.record(|session, _| {
            let text = format!("{} {}", event.event.name(), event.event.data());
            session.write_or_wait(Waiting::Log { text })
        });
    }

    fn decoded(&mut self, report: &SessionReport) {
        self.record(|session, _| {
            let at = |time: Option<u64>| time.or(report.first_time_us).unwrap_or(0);
            session.write_waiting(at(None))?;
            for span in &report.corrupt_spans {
                let text = format!(
                    "damaged [{}..{}) {} bytes: {}; {} main frames lost",
                    span.start,
                    span.end,
                    span.end - span.start,
                    span.reason.as_str(),
                    span.frames_lost
                );
                session
                    .recording
                    .log(at(span.time_start_us), Level::Warning, "damage", &text)?;
            }
            for span in &report.suspect_spans {
                let field = span.evidence.field.as_deref().unwrap_or("");
                let text = format!(
                    "suspect [{}..{}) {} main frames: {} {field}",
                    span.start,
                    span.end,
                    span.frames,
                    span.evidence.rule.as_str()
                );
                session
                    .recording
                    .log(at(span.time_start_us), Level::Info, "suspect", &text)?;
            }
            Ok(())
        });
        self.close_session();
    }
}
