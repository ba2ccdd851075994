//! MCAP: one recording per log file, opened in Foxglove or PlotJuggler. A channel per message
//! type (`/NAME`; a type redefined with another layout `/NAME.2`) carries each message as a JSON
//! object of its columns (scaled as pymavlink scales them unless stored values are asked for;
//! NaN as null; `"trust":"suspect"` on a suspect message), stamped with its `TimeUS` (or
//! `TimeMS`; a message without either: the last time before it). `/log` (`foxglove.Log`) holds
//! the `MSG` texts and the corrupt spans at their flight time, `/gps/fix`
//! (`foxglove.LocationFix`) the positions of `GPS` messages.

use super::csv::{Selection, Values, divisor};
use super::jsonl::write_value;
use super::{Key, WriteMessages, column_names, export, holds, key_of, table_name};
use crate::dataflash::fmt::{FieldType, Format};
use crate::dataflash::message::{Message, Text, Value};
use crate::dataflash::report::DataflashReport;
use crate::recording::{Level, Recording};
use crate::report::Trust;
use serde_json::json;
use std::io::{self, Seek, Write};
use std::sync::atomic::AtomicU64;

/// Most messages that wait for the log's first time: past them, they are written at 0.
const MOST_WAITING: usize = 4096;

/// The JSON Schema of a column of type `ty`, written as `values` asks.
fn column_schema(ty: FieldType, values: Values) -> serde_json::Value {
    match ty {
        _ if values == Values::Scaled && divisor(ty).is_some() => json!({"type": "number"}),
        FieldType::Int16Array => json!({"type": "array", "items": {"type": "integer"}}),
        ty if ty.is_text() => json!({"type": "string"}),
        ty if ty.is_float() => json!({"type": ["number", "null"]}),
        _ => json!({"type": "integer"}),
    }
}

/// Where a `GPS` message's position is.
struct Fix {
    latitude: usize,
    longitude: usize,
    altitude: Option<usize>,
}

impl Fix {
    fn of(format: &Format) -> Option<Fix> {
        let column = |name: &str| format.columns.iter().position(|c| c == name);
        (format.name == "GPS").then_some(())?;
        Some(Fix {
            latitude: column("Lat")?,
            longitude: column("Lng")?,
            altitude: column("Alt"),
        })
    }
}

/// A value as a number, scaled as pymavlink scales its type.
fn scaled(value: Option<Value<'_>>, ty: FieldType) -> Option<f64> {
    let v = match value? {
        Value::Signed(v) => v as f64,
        Value::Unsigned(v) => v as f64,
        Value::F32(v) => v.into(),
        Value::F64(v) => v,
        _ => return None,
    };
    Some(divisor(ty).map_or(v, |d| v / d))
}

/// Records every message.
struct McapWriter<'s, W: Write + Seek> {
    recording: Recording<W>,
    selection: &'s Selection,
    /// Channels by type byte, and all of them with their keys.
    current: Vec<Option<usize>>,
    channels: Vec<(Key, u16)>,
    /// The last time a message carried.
    time_us: Option<u64>,
    /// Messages before the first time, with their channels (`None`: a log entry).
    waiting: Vec<(Option<u16>, Vec<u8>)>,
    line: Vec<u8>,
}

impl<W: Write + Seek> McapWriter<'_, W> {
    /// The channel of `format`, created on first use.
    fn channel(&mut self, format: &Format) -> io::Result<u16> {
        let slot = usize::from(format.type_id);
        if let Some(i) = self.current[slot]
            && holds(&self.channels[i].0, format)
        {
            return Ok(self.channels[i].1);
        }
        let index = match self.channels.iter().position(|(k, _)| holds(k, format)) {
            Some(i) => i,
            None => {
                let key = key_of(format);
                let name = table_name(&key, self.channels.iter().map(|(k, _)| k));
                let mut properties = serde_json::Map::new();
                for (column, &ty) in column_names(format).zip(&format.fields) {
                    properties.insert(column, column_schema(ty, self.selection.values));
                }
                properties.insert("trust".into(), json!({"type": "string"}));
                let channel = self.recording.channel(
                    &format!("/{name}"),
                    &format!("ardupilot.{name}"),
                    serde_json::Value::Object(properties),
                )?;
                self.channels.push((key, channel));
                self.channels.len() - 1
            }
        };
        self.current[slot] = Some(index);
        Ok(self.channels[index].1)
    }

    /// `message` as a JSON object, into `line`.
    fn write_json(&mut self, message: &Message<'_>) -> io::Result<()> {
        let line = &mut self.line;
        line.clear();
        line.push(b'{');
        let mut fields = message.fields();
        for (i, (column, &ty)) in column_names(message.format)
            .zip(&message.format.fields)
            .enumerate()
        {
            if i > 0 {
                line.push(b',');
            }
            serde_json::to_writer(&mut *line, &column)?;
            line.push(b':');
            let value = fields.next();
            match (self.selection.values, divisor(ty)) {
                (Values::Scaled, Some(_)) => match scaled(value, ty) {
                    Some(v) => serde_json::to_writer(&mut *line, &v)?,
                    None => line.extend_from_slice(b"null"),
                },
                _ => match value {
                    Some(value) => write_value(line, value)?,
                    None => line.extend_from_slice(b"null"),
                },
            }
        }
        if message.trust == Trust::Suspect {
            line.extend_from_slice(b",\"trust\":\"suspect\"");
        }
        line.push(b'}');
        Ok(())
    }

    /// Write what waits for a time, at `time_us`.
    fn write_waiting(&mut self, time_us: u64) -> io::Result<()> {
        for (channel, bytes) in std::mem::take(&mut self.waiting) {
            match channel {
                Some(channel) => self.recording.write(channel, time_us, &bytes)?,
                None => {
                    let text = String::from_utf8_lossy(&bytes);
                    self.recording.log(time_us, Level::Info, "MSG", &text)?
                }
            }
        }
        Ok(())
    }
}

impl<W: Write + Seek> WriteMessages for McapWriter<'_, W> {
    fn message(&mut self, message: &Message<'_>) -> io::Result<()> {
        let channel = self.channel(message.format)?;
        self.write_json(message)?;
        if let Some(time) = message.clock_us() {
            self.time_us = Some(time);
        }
        let text = match message.format.name == "MSG" {
            true => message.fields().find_map(Value::as_text).map(Text::new),
            false => None,
        };
        match self.time_us {
            // Once there is a time, messages go straight to the recording.
            Some(time) => {
                self.write_waiting(time)?;
                self.recording.write(channel, time, &self.line)?;
                if let Some(text) = text {
                    self.recording
                        .log(time, Level::Info, "MSG", &text.to_string())?;
                }
            }
            None => {
                self.waiting.push((Some(channel), self.line.clone()));
                if let Some(text) = text {
                    self.waiting.push((None, text.to_string().into_bytes()));
                }
                if self.waiting.len() > MOST_WAITING {
                    self.write_waiting(0)?;
                }
            }
        }
        if let (Some(fix), Some(time)) = (Fix::of(message.format), self.time_us) {
            let fields: Vec<Value<'_>> = message.fields().collect();
            let types = &message.format.fields;
            let value = |i: usize| scaled(fields.get(i).copied(), *types.get(i)?);
            if let (Some(lat), Some(lon)) = (value(fix.latitude), value(fix.longitude))
                && (lat != 0.0 || lon != 0.0)
            {
                let altitude = fix.altitude.and_then(value).unwrap_or(0.0);
                self.recording.location(time, lat, lon, altitude)?;
            }
        }
        Ok(())
    }
}

/// Decode `data` by the thorough rules and record the messages `selection` takes into `out`, then
/// the corrupt spans; returns the `check` report and the writer.
pub fn write_mcap<W: Write + Seek>(
    path: &str,
    data: &[u8],
    selection: &Selection,
    out: W,
    reached: &AtomicU64,
) -> io::Result<(DataflashReport, W)> {
    let writer = McapWriter {
        recording: Recording::new(out)?,
        selection,
        current: vec![None; 256],
        channels: Vec::new(),
        time_us: None,
        waiting: Vec::new(),
        line: Vec::with_capacity(1024),
    };
    let (mut writer, report) = export(path, data, writer, selection, reached)?;
    writer.write_waiting(0)?;
    let mut recording = writer.recording;
    for span in &report.file.corrupt_spans {
        let text = format!(
            "damaged [{}..{}) {} bytes: {}",
            span.start,
            span.end,
            span.end - span.start,
            span.reason.as_str()
        );
        let at = span.time_start_us.unwrap_or(0);
        recording.log(at, Level::Warning, "damage", &text)?;
    }
    Ok((report, recording.finish()?))
}
