//! MCAP recordings for `export --mcap`, which Foxglove and PlotJuggler open: a channel per table,
//! each message a JSON object with a JSON schema, stamped with the flight controller's clock, in
//! zstd chunks; entries of the recording's log on a `foxglove.Log` channel, positions on a
//! `foxglove.LocationFix` one (a track on Foxglove's map).

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{self, Seek, Write};

/// Bytes of messages a chunk gathers before it is compressed and written.
pub const CHUNK_BYTES: u64 = 1 << 20;
/// The topic of the log entries and of the positions.
pub const LOG_TOPIC: &str = "/log";
pub const FIX_TOPIC: &str = "/gps/fix";

/// The level of a log entry, as `foxglove.Log` numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info = 2,
    Warning = 3,
    Error = 4,
}

fn mcap_error(e: mcap::McapError) -> io::Error {
    match e {
        mcap::McapError::Io(e) => e,
        e => io::Error::other(e),
    }
}

/// `foxglove.Time` as JSON Schema.
fn time_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "sec": {"type": "integer", "minimum": 0},
            "nsec": {"type": "integer", "minimum": 0, "maximum": 999_999_999}
        }
    })
}

/// `time_us` as `foxglove.Time`.
fn time_json(time_us: u64) -> Value {
    json!({"sec": time_us / 1_000_000, "nsec": time_us % 1_000_000 * 1000})
}

/// A recording being written to `W`.
pub struct Recording<W: Write + Seek> {
    writer: mcap::Writer<W>,
    /// Messages written on each channel so far (their sequence numbers).
    sequences: BTreeMap<u16, u32>,
    log: Option<u16>,
    fix: Option<u16>,
}

impl<W: Write + Seek> Recording<W> {
    /// Start a recording in `out`.
    pub fn new(out: W) -> io::Result<Self> {
        let writer = mcap::WriteOptions::new()
            .compression(Some(mcap::Compression::Zstd))
            // Level 3 spends half the export's time compressing JSON that level 1 packs within
            // a tenth as small.
            .compression_level(1)
            .chunk_size(Some(CHUNK_BYTES))
            .profile("")
            .create(out)
            .map_err(mcap_error)?;
        Ok(Recording {
            writer,
            sequences: BTreeMap::new(),
            log: None,
            fix: None,
        })
    }

    /// A channel on `topic` whose messages are JSON objects of the `properties` (JSON Schema),
    /// under the schema name `schema`; returns its id.
    pub fn channel(&mut self, topic: &str, schema: &str, properties: Value) -> io::Result<u16> {
        let document = json!({"title": schema, "type": "object", "properties": properties});
        let schema_id = self
            .writer
            .add_schema(schema, "jsonschema", document.to_string().as_bytes())
            .map_err(mcap_error)?;
        self.writer
            .add_channel(schema_id, topic, "json", &BTreeMap::new())
            .map_err(mcap_error)
    }

    /// A message of `channel` at `time_us` of the flight controller's clock.
    pub fn write(&mut self, channel: u16, time_us: u64, message: &[u8]) -> io::Result<()> {
        let sequence = self.sequences.entry(channel).or_default();
        *sequence = sequence.wrapping_add(1);
        let time_ns = time_us.saturating_mul(1000);
        let header = mcap::records::MessageHeader {
            channel_id: channel,
            sequence: *sequence,
            log_time: time_ns,
            publish_time: time_ns,
        };
        self.writer
            .write_to_known_channel(&header, message)
            .map_err(mcap_error)
    }

    /// An entry of the recording's log (`foxglove.Log` on [`LOG_TOPIC`]): `message` from `name`.
    pub fn log(&mut self, time_us: u64, level: Level, name: &str, message: &str) -> io::Result<()> {
        let channel = match self.log {
            Some(channel) => channel,
            None => {
                let properties = json!({
                    "timestamp": time_schema(),
                    "level": {"type": "integer", "description": "1 debug, 2 info, 3 warning, 4 error, 5 fatal"},
                    "message": {"type": "string"},
                    "name": {"type": "string"},
                    "file": {"type": "string"},
                    "line": {"type": "integer", "minimum": 0}
                });
                let channel = self.channel(LOG_TOPIC, "foxglove.Log", properties)?;
                *self.log.insert(channel)
            }
        };
        let entry = json!({
            "timestamp": time_json(time_us),
            "level": level as u8,
            "message": message,
            "name": name,
            "file": "",
            "line": 0
        });
        self.write(channel, time_us, entry.to_string().as_bytes())
    }

    /// A position (`foxglove.LocationFix` on [`FIX_TOPIC`]): degrees, and metres above the
    /// ellipsoid or sea level as the receiver gives it.
    pub fn location(
        &mut self,
        time_us: u64,
        latitude: f64,
        longitude: f64,
        altitude: f64,
    ) -> io::Result<()> {
        let channel = match self.fix {
            Some(channel) => channel,
            None => {
                let properties = json!({
                    "timestamp": time_schema(),
                    "frame_id": {"type": "string"},
                    "latitude": {"type": "number"},
                    "longitude": {"type": "number"},
                    "altitude": {"type": "number"},
                    "position_covariance": {"type": "array", "items": {"type": "number"}, "minItems": 9, "maxItems": 9},
                    "position_covariance_type": {"type": "integer", "description": "0 unknown"}
                });
                let channel = self.channel(FIX_TOPIC, "foxglove.LocationFix", properties)?;
                *self.fix.insert(channel)
            }
        };
        let number = |v: f64| serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number);
        let fix = json!({
            "timestamp": time_json(time_us),
            "frame_id": "gps",
            "latitude": number(latitude),
            "longitude": number(longitude),
            "altitude": number(altitude),
            "position_covariance": [0, 0, 0, 0, 0, 0, 0, 0, 0],
            "position_covariance_type": 0
        });
        self.write(channel, time_us, fix.to_string().as_bytes())
    }

    /// Write the last chunk and the summary; returns the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.writer.finish().map_err(mcap_error)?;
        Ok(self.writer.into_inner())
    }
}
