//! Export as JSON Lines: per session (log) a session record with the formats defined by the end
//! of the session, then one record per accepted message (FMT messages included) with its raw
//! stored values.
//!
//! Values are unscaled: `c C e E L` stay the integers the logger stored, floats are JSON numbers
//! (NaN and infinities are `null`), character arrays are strings cut at the first NUL, `a` is an
//! array of 32 integers.

use super::csv::Selection;
use super::{WriteMessages, export};
use crate::dataflash::fmt::{Format, Formats};
use crate::dataflash::message::{Message, Text, Value, int16_array};
use crate::dataflash::reader::{self, Noting, Rules};
use crate::dataflash::report::{DataflashReport, FORMAT_NAME};
use crate::report::Trust;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};
use std::rc::Rc;
use std::sync::atomic::AtomicU64;

/// One format in the session record.
#[derive(Serialize)]
struct FormatRecord<'a> {
    id: u8,
    length: i64,
    format: &'a str,
    columns: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    units: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    multipliers: Option<Vec<Option<f64>>>,
}

/// The first record.
#[derive(Serialize)]
struct SessionRecord<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    session: usize,
    offset: u64,
    format: &'static str,
    formats: BTreeMap<&'a str, FormatRecord<'a>>,
}

fn format_record<'a>(formats: &'a Formats, f: &'a Format) -> FormatRecord<'a> {
    FormatRecord {
        id: f.type_id,
        length: f.declared_length,
        format: &f.format,
        columns: &f.columns,
        units: formats.column_units(f),
        multipliers: formats.column_multipliers(f),
    }
}

/// Write `text` as a JSON string.
fn write_json_str(out: &mut impl Write, text: Text<'_>) -> io::Result<()> {
    out.write_all(b"\"")?;
    match text {
        // The common case: nothing to escape, written in one piece.
        Text::Utf8(s) if !s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') => {
            out.write_all(s.as_bytes())?;
        }
        _ => {
            let mut utf8 = [0u8; 4];
            for c in text.chars() {
                match c {
                    '"' => out.write_all(b"\\\"")?,
                    '\\' => out.write_all(b"\\\\")?,
                    '\n' => out.write_all(b"\\n")?,
                    '\r' => out.write_all(b"\\r")?,
                    '\t' => out.write_all(b"\\t")?,
                    c if u32::from(c) < 0x20 => write!(out, "\\u{:04x}", u32::from(c))?,
                    c => out.write_all(c.encode_utf8(&mut utf8).as_bytes())?,
                }
            }
        }
    }
    out.write_all(b"\"")
}

/// Write one value.
#[inline]
pub(crate) fn write_value(out: &mut impl Write, value: Value<'_>) -> io::Result<()> {
    let mut digits = itoa::Buffer::new();
    match value {
        Value::Signed(v) => out.write_all(digits.format(v).as_bytes()),
        Value::Unsigned(v) => out.write_all(digits.format(v).as_bytes()),
        // serde_json writes the shortest form that reads back to the same value, and `null` for
        // NaN and infinities.
        Value::F32(v) => serde_json::to_writer(&mut *out, &v).map_err(io::Error::from),
        Value::F64(v) => serde_json::to_writer(&mut *out, &v).map_err(io::Error::from),
        Value::Text(bytes) => write_json_str(out, Text::new(bytes)),
        Value::Int16Array(bytes) => {
            out.write_all(b"[")?;
            for (i, v) in int16_array(bytes).enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                out.write_all(digits.format(v).as_bytes())?;
            }
            out.write_all(b"]")
        }
    }
}

/// Writes session and message records.
struct JsonlWriter<'f, W: Write> {
    out: W,
    /// The format table at the end of each session (from a first pass).
    session_formats: &'f [Rc<Formats>],
    /// The session being written, from 1.
    session: usize,
}

impl<W: Write> JsonlWriter<'_, W> {
    fn session_record(&mut self, offset: u64) -> io::Result<()> {
        let empty = Formats::new();
        let formats = self
            .session_formats
            .get(self.session - 1)
            .map_or(&empty, |f| &**f);
        let record = SessionRecord {
            kind: "session",
            session: self.session,
            offset,
            format: FORMAT_NAME,
            formats: formats
                .iter()
                .map(|f| (f.name.as_str(), format_record(formats, f)))
                .collect(),
        };
        serde_json::to_writer(&mut self.out, &record)?;
        writeln!(self.out)
    }
}

impl<W: Write> WriteMessages for JsonlWriter<'_, W> {
    fn message(&mut self, message: &Message<'_>) -> io::Result<()> {
        let out = &mut self.out;
        let mut digits = itoa::Buffer::new();
        out.write_all(b"{\"type\":\"message\",\"session\":")?;
        out.write_all(digits.format(self.session).as_bytes())?;
        out.write_all(b",\"offset\":")?;
        out.write_all(digits.format(message.offset).as_bytes())?;
        out.write_all(b",\"name\":")?;
        out.write_all(message.format.name_json.as_bytes())?;
        out.write_all(b",\"values\":[")?;
        for (i, value) in message.fields().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            write_value(out, value)?;
        }
        match message.trust {
            Trust::Trusted => out.write_all(b"]}\n"),
            Trust::Suspect => out.write_all(b"],\"trust\":\"suspect\"}\n"),
        }
    }

    fn session(&mut self, offset: u64) -> io::Result<()> {
        self.session += 1;
        self.session_record(offset)
    }
}

/// Decode `data` by the thorough rules and write it as JSON Lines to `out`: per session a session
/// record with the formats defined by the session's end, then the messages `selection` takes, with
/// their stored values (a suspect one ends with `"trust":"suspect"`). Returns the `check` report
/// of the file.
pub fn write_jsonl(
    path: &str,
    data: &[u8],
    selection: &Selection,
    out: impl Write,
    reached: &AtomicU64,
) -> io::Result<DataflashReport> {
    // The formats as each session's end defines them: a first pass reads only the headers.
    let first = reader::scan_with(data, Rules::Thorough, Formats::new(), &mut Noting(reached));
    let mut writer = JsonlWriter {
        out: BufWriter::with_capacity(1 << 16, out),
        session_formats: &first.session_formats,
        session: 1,
    };
    writer.session_record(0)?;
    let (mut writer, report) = export(path, data, writer, selection, reached)?;
    writer.out.flush()?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(value: Value<'_>) -> String {
        let mut out = Vec::new();
        write_value(&mut out, value).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn values_are_raw_json() {
        assert_eq!(json(Value::Signed(-713_657_293)), "-713657293");
        assert_eq!(json(Value::Unsigned(u64::MAX)), "18446744073709551615");
        assert_eq!(json(Value::F32(0.003)), "0.003");
        assert_eq!(json(Value::F32(f32::NAN)), "null");
        assert_eq!(json(Value::F64(f64::NEG_INFINITY)), "null");
        assert_eq!(json(Value::Text(b"Hz\0\0\0")), "\"Hz\"");
        assert_eq!(
            json(Value::Text(b"a\"b\\\x01\xe9\0")),
            "\"a\\\"b\\\\\\u0001\u{e9}\""
        );
        let mut array = [0u8; 64];
        array[0] = 0xFF;
        array[1] = 0xFF;
        assert_eq!(
            json(Value::Int16Array(&array)),
            format!("[-1{}]", ",0".repeat(31))
        );
    }
}
