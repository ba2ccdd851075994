//! Export as CSV: one table per message type, values scaled as pymavlink scales them (what
//! mavlogdump and the ArduPilot tools show), or as stored, and the unit of each column in its
//! heading as FMTU names it.
//!
//! Scaled, the format characters `c`, `C`, `e` and `E` are hundredths and `L` is 1e-7 degrees:
//! the stored integer is divided by 100 or by 1/1e-7 as pymavlink divides it (`Roll` 755 is
//! 7.55). A heading is the column name, then in brackets what one written step is worth when FMTU
//! gives the column a unit: `TimeUS [1e-6 s]`, `Roll [deg]`, `Alt [m]` (multiplier 1 or none), or
//! the bare name; stored values keep FMTU's multiplier (`Roll [0.01 deg]`). Integers, floats in
//! their shortest exact form (`NaN`, `inf`), text cut at the first NUL (quoted when it holds a
//! comma, quote or line break), and `a` arrays as `[v,v,…]`.

use super::{Key, WriteMessages, column_names, export, holds, key_of, table_name};
use crate::dataflash::fmt::{FieldType, Format, Formats};
use crate::dataflash::message::{Message, Text, Value, int16_array};
use crate::dataflash::reader::{Noting, Rules, Sink, scan_with};
use crate::dataflash::report::DataflashReport;
use crate::report::Keep;
use std::io::{self, Write};
use std::sync::atomic::AtomicU64;

/// What pymavlink divides a stored value of `ty` by (`None`: it keeps the stored value).
pub fn divisor(ty: FieldType) -> Option<f64> {
    match ty {
        FieldType::I16Centi | FieldType::U16Centi | FieldType::I32Centi | FieldType::U32Centi => {
            Some(1.0 / 0.01)
        }
        FieldType::LatLon => Some(1.0 / 1.0e-7),
        _ => None,
    }
}

/// Which values a table holds: scaled as pymavlink scales them, or as stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Values {
    #[default]
    Scaled,
    Stored,
}

/// Per field of `format`, its unit as the table's FMTU names it and what one step of the
/// `values` written is worth in it.
pub fn column_units(
    formats: &Formats,
    format: &Format,
    values: Values,
) -> Vec<(Option<String>, Option<f64>)> {
    let units = formats.column_units(format);
    let multipliers = formats.column_multipliers(format);
    (0..format.fields.len())
        .map(|i| {
            let unit = units.as_ref().and_then(|u| u.get(i)).cloned();
            let scaled_by = match values {
                Values::Scaled => format.fields.get(i).copied().and_then(divisor),
                Values::Stored => None,
            };
            let multiplier = multipliers
                .as_ref()
                .and_then(|m| m.get(i).copied().flatten())
                .map(|m| m * scaled_by.unwrap_or(1.0))
                .map(|m| if (m - 1.0).abs() < 1e-9 { 1.0 } else { m });
            (unit, multiplier)
        })
        .collect()
}

/// The heading of each field of `format`: its column name, with its unit as the table's FMTU
/// names it and what one step of the `values` written is worth.
pub fn headings(formats: &Formats, format: &Format, values: Values) -> Vec<String> {
    column_names(format)
        .zip(column_units(formats, format, values))
        .map(
            |(column, (unit, multiplier))| match (unit.as_deref(), multiplier) {
                (Some(""), _) => column,
                (Some(unit), Some(m)) if m != 1.0 && m != 0.0 => format!("{column} [{m:e} {unit}]")
                    .replace("1e-2 ", "0.01 ")
                    .replace("1e-1 ", "0.1 "),
                (Some(unit), _) => format!("{column} [{unit}]"),
                (None, _) => column,
            },
        )
        .collect()
}

/// Write `text` as one CSV field, quoted when it must be.
fn write_text(out: &mut impl Write, text: &str) -> io::Result<()> {
    if text.contains([',', '"', '\n', '\r']) {
        write!(out, "\"{}\"", text.replace('"', "\"\""))
    } else {
        out.write_all(text.as_bytes())
    }
}

/// Write one value of a field of type `ty` as a CSV field, scaled when `values` asks.
fn write_value(
    out: &mut impl Write,
    value: Value<'_>,
    ty: FieldType,
    values: Values,
) -> io::Result<()> {
    let mut digits = itoa::Buffer::new();
    if let (Values::Scaled, Some(divisor)) = (values, divisor(ty)) {
        let stored = match value {
            Value::Signed(v) => v as f64,
            Value::Unsigned(v) => v as f64,
            _ => return write_value(out, value, ty, Values::Stored),
        };
        return write!(out, "{}", stored / divisor);
    }
    match value {
        Value::Signed(v) => out.write_all(digits.format(v).as_bytes()),
        Value::Unsigned(v) => out.write_all(digits.format(v).as_bytes()),
        Value::F32(v) => write!(out, "{v}"),
        Value::F64(v) => write!(out, "{v}"),
        Value::Text(bytes) => write_text(out, &Text::new(bytes).to_string()),
        Value::Int16Array(bytes) => {
            out.write_all(b"\"[")?;
            for (i, v) in int16_array(bytes).enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                out.write_all(digits.format(v).as_bytes())?;
            }
            out.write_all(b"]\"")
        }
    }
}

/// One table being written.
struct Table<W> {
    key: Key,
    out: W,
}

/// Every table in one (`Selection::combined`): a row is the message's table name, then a cell for
/// every column of every table, empty but for its own table's.
struct Combined {
    /// Each table's key, name and first cell.
    blocks: Vec<(Key, String, usize)>,
    cells: usize,
}

/// Writes every message into its type's table.
struct CsvWriter<'f, W, F> {
    /// The format table at the end of the file: the units of every type.
    formats: &'f Formats,
    create: F,
    /// Tables by type byte, and all of them.
    current: Vec<Option<usize>>,
    tables: Vec<Table<W>>,
    combined: Option<Combined>,
    selection: &'f Selection,
}

/// Which messages a CSV export writes, and how.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    pub keep: Keep,
    pub values: Values,
    /// The message types written (all when `None`).
    pub types: Option<Vec<String>>,
    /// Every table in one, written to a single writer (see [`write_csv`]).
    pub combined: bool,
}

impl Selection {
    /// Whether `message` is written.
    pub fn takes(&self, message: &Message<'_>) -> bool {
        self.keep.keeps(message.trust)
            && self
                .types
                .as_ref()
                .is_none_or(|t| t.contains(&message.format.name))
    }
}

impl<W: Write, F: FnMut(&str) -> io::Result<W>> CsvWriter<'_, W, F> {
    /// The headings of the columns of `format`, with units as the file's formats name them.
    fn headings(&self, format: &Format) -> Vec<String> {
        self.formats
            .iter()
            .find(|f| f.name == format.name && f.format == format.format)
            .map_or_else(
                || column_names(format).collect(),
                |f| headings(self.formats, f, self.selection.values),
            )
    }

    /// The table for `format` (or, combined, its block), created (with its heading row) on
    /// first use.
    fn table(&mut self, format: &Format) -> io::Result<usize> {
        let slot = usize::from(format.type_id);
        if let Some(i) = self.current[slot] {
            let key = match &self.combined {
                Some(c) => &c.blocks[i].0,
                None => &self.tables[i].key,
            };
            if holds(key, format) {
                return Ok(i);
            }
        }
        let index = match &self.combined {
            Some(c) => c.blocks.iter().position(|(k, ..)| holds(k, format)),
            None => self.tables.iter().position(|t| holds(&t.key, format)),
        };
        let index = match index {
            Some(i) => i,
            // Every table of a combined export was found before writing.
            None if self.combined.is_some() => {
                return Err(io::Error::other(
                    "a message type the first pass did not see",
                ));
            }
            None => {
                let key = key_of(format);
                let name = table_name(&key, self.tables.iter().map(|t| &t.key));
                let mut out = (self.create)(&name)?;
                for (i, heading) in self.headings(format).iter().enumerate() {
                    if i > 0 {
                        out.write_all(b",")?;
                    }
                    write_text(&mut out, heading)?;
                }
                out.write_all(b"\n")?;
                self.tables.push(Table { key, out });
                self.tables.len() - 1
            }
        };
        self.current[slot] = Some(index);
        Ok(index)
    }

    fn row(&mut self, message: &Message<'_>) -> io::Result<()> {
        let index = self.table(message.format)?;
        let (out, around) = match &self.combined {
            Some(c) => {
                let (_, name, start) = &c.blocks[index];
                let out = &mut self.tables[0].out;
                write_text(out, name)?;
                let end = start + message.format.fields.len();
                (out, Some((*start, c.cells - end.min(c.cells))))
            }
            None => (&mut self.tables[index].out, None),
        };
        let (before, after) = around.unwrap_or_default();
        for _ in 0..before {
            out.write_all(b",")?;
        }
        let values = self.selection.values;
        let types = message.format.fields.iter().copied();
        for (i, (value, ty)) in message.fields().zip(types).enumerate() {
            if i > 0 || around.is_some() {
                out.write_all(b",")?;
            }
            write_value(out, value, ty, values)?;
        }
        for _ in 0..after {
            out.write_all(b",")?;
        }
        out.write_all(b"\n")
    }

    /// Lay out a combined table of the `keys` and write its heading row: `type`, then each
    /// table's headings as `NAME.heading`.
    fn combine(&mut self, keys: Vec<(Key, Format)>) -> io::Result<()> {
        let mut out = (self.create)("")?;
        out.write_all(b"type")?;
        let mut blocks: Vec<(Key, String, usize)> = Vec::with_capacity(keys.len());
        let mut cells = 0;
        for (key, format) in keys {
            let name = table_name(&key, blocks.iter().map(|(k, ..)| k));
            for heading in self.headings(&format) {
                out.write_all(b",")?;
                write_text(&mut out, &format!("{name}.{heading}"))?;
            }
            blocks.push((key, name, cells));
            cells += format.fields.len();
        }
        out.write_all(b"\n")?;
        self.tables.push(Table {
            key: (String::new(), String::new(), Vec::new()),
            out,
        });
        self.combined = Some(Combined { blocks, cells });
        Ok(())
    }
}

/// The tables a selection writes, in the order of their first message (for a combined table).
struct Keys<'s> {
    selection: &'s Selection,
    seen: Vec<(Key, Format)>,
}

impl Sink for Keys<'_> {
    fn message(&mut self, message: &Message<'_>) {
        if self.selection.combined
            && self.selection.takes(message)
            && !self.seen.iter().any(|(k, _)| holds(k, message.format))
        {
            self.seen
                .push((key_of(message.format), message.format.clone()));
        }
    }
}

impl<W: Write, F: FnMut(&str) -> io::Result<W>> WriteMessages for CsvWriter<'_, W, F> {
    fn message(&mut self, message: &Message<'_>) -> io::Result<()> {
        self.row(message)
    }
}

/// Decode `data` by the thorough rules and write one CSV table per message type, each to a writer
/// `create` opens for the type's name (`NAME`, or `NAME.2`… for a type redefined with another
/// layout), with the messages and values `selection` asks for; or, `combined`, every table in one
/// opened with the name `""`. Returns the `check` report and the writers, in the order they were
/// opened.
pub fn write_csv<W: Write>(
    path: &str,
    data: &[u8],
    selection: Selection,
    create: impl FnMut(&str) -> io::Result<W>,
    reached: &AtomicU64,
) -> io::Result<(DataflashReport, Vec<W>)> {
    // The units as the end of the file defines them, and for a combined table every table
    // written: a first pass.
    let mut keys = Keys {
        selection: &selection,
        seen: Vec::new(),
    };
    let first = scan_with(
        data,
        Rules::Thorough,
        Formats::new(),
        &mut (&mut keys, &mut Noting(reached)),
    );
    let keys = keys.seen;
    let combined = selection.combined;
    let mut writer = CsvWriter {
        formats: &first.formats,
        create,
        current: vec![None; 256],
        tables: Vec::new(),
        combined: None,
        selection: &selection,
    };
    if combined {
        writer.combine(keys)?;
    }
    let (writer, report) = export(path, data, writer, &selection, reached)?;
    let mut writers = Vec::with_capacity(writer.tables.len());
    for mut table in writer.tables {
        table.out.flush()?;
        writers.push(table.out);
    }
    Ok((report, writers))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::dataflash::{fmt, message, text};

    /// Tables by name, as text, with `values`.
    fn export_values(data: &[u8], values: Values) -> Vec<(String, String)> {
        let mut names = Vec::new();
        let reached = AtomicU64::new(0);
        let selection = Selection {
            values,
            ..Selection::default()
        };
        let (_, writers) = write_csv(
            "t",
            data,
            selection,
            |name| {
                names.push(name.to_owned());
                Ok(Vec::new())
            },
            &reached,
        )
        .unwrap();
        names
            .into_iter()
            .zip(writers)
            .map(|(n, w)| (n, String::from_utf8(w).unwrap()))
            .collect()
    }

    /// Tables by name, as text, scaled.
    fn export(data: &[u8]) -> Vec<(String, String)> {
        export_values(data, Values::Scaled)
    }

    #[test]
    fn headings_carry_the_units_fmtu_names() {
        let mut log = fmt(0x40, 13, "ATT", "Qc", "TimeUS,Roll");
        log.extend(fmt(0x41, 16, "UNIT", "Qbn", "TimeUS,Id,Label"));
        log.extend(fmt(
            0x42,
            44,
            "FMTU",
            "QBNN",
            "TimeUS,FmtType,UnitIds,MultIds",
        ));
        for (id, label) in [(b's', "s"), (b'd', "deg")] {
            let mut body = 0u64.to_le_bytes().to_vec();
            body.push(id);
            body.extend(text(label, 4));
            log.extend(message(0x41, &body));
        }
        let mut mult = fmt(0x44, 20, "MULT", "Qbd", "TimeUS,Id,Mult");
        for (id, value) in [(b'F', 1e-6f64), (b'B', 1e-2)] {
            let mut body = 0u64.to_le_bytes().to_vec();
            body.push(id);
            body.extend(value.to_le_bytes());
            mult.extend(message(0x44, &body));
        }
        log.extend(mult);
        let mut body = 0u64.to_le_bytes().to_vec();
        body.push(0x40);
        body.extend(text("sd", 16));
        body.extend(text("FB", 16));
        log.extend(message(0x42, &body));
        for (t, roll) in [(1000u64, -150i16), (2000, 275)] {
            let mut body = t.to_le_bytes().to_vec();
            body.extend(roll.to_le_bytes());
            log.extend(message(0x40, &body));
        }
        let tables = export_values(&log, Values::Stored);
        let att = &tables.iter().find(|(n, _)| n == "ATT").unwrap().1;
        assert_eq!(
            att,
            "TimeUS [1e-6 s],Roll [0.01 deg]\n1000,-150\n2000,275\n"
        );
        // Scaled as pymavlink scales `c`: what the heading's unit says.
        let scaled = export(&log);
        let att = &scaled.iter().find(|(n, _)| n == "ATT").unwrap().1;
        assert_eq!(att, "TimeUS [1e-6 s],Roll [deg]\n1000,-1.5\n2000,2.75\n");
        let unit = &tables.iter().find(|(n, _)| n == "UNIT").unwrap().1;
        assert_eq!(unit, "TimeUS,Id,Label\n0,115,s\n0,100,deg\n");
    }

    #[test]
    fn every_field_has_one_heading_whatever_the_fmt_names() {
        // Three fields, two names; two fields, three names.
        let mut log = fmt(0x40, 8, "ABC", "Bhh", "A,B");
        log.extend(message(0x40, &[1, 2, 0, 0xFD, 0xFF]));
        log.extend(fmt(0x41, 5, "DE", "BB", "D,E,Extra"));
        log.extend(message(0x41, &[4, 5]));
        let tables = export(&log);
        let table = |name: &str| &tables.iter().find(|(n, _)| n == name).unwrap().1;
        assert_eq!(table("ABC"), "A,B,field3\n1,2,-3\n");
        assert_eq!(table("DE"), "D,E\n4,5\n");
    }

    #[test]
    fn text_is_quoted_when_it_must_be_and_redefined_types_get_their_own_table() {
        let mut log = fmt(0x40, 75, "MSG", "QZ", "TimeUS,Message");
        let mut body = 5u64.to_le_bytes().to_vec();
        body.extend(text("Mode \"AUTO\", armed", 64));
        log.extend(message(0x40, &body));
        log.extend(fmt(0x40, 11, "MSG", "Q", "TimeUS"));
        log.extend(message(0x40, &6u64.to_le_bytes()));
        let tables = export(&log);
        let names: Vec<&str> = tables.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["FMT", "MSG", "MSG.2"]);
        assert_eq!(
            tables[1].1,
            "TimeUS,Message\n5,\"Mode \"\"AUTO\"\", armed\"\n"
        );
        assert_eq!(tables[2].1, "TimeUS\n6\n");
    }
}
