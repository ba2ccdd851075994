//! Parquet: one table per message type (a type redefined with another layout gets `NAME.2`…),
//! each column typed by its format character, then `session` (from 1), `offset` (of the message
//! in the file) and `trust` (`trusted` or `suspect`).
//!
//! Integers keep their width and sign (`b` Int8 … `Q` UInt64), floats their precision (`g`, a
//! float16, widened to Float32), character arrays are text cut at the first NUL, `a` is a list of
//! 32 Int16. Scaled (the default), `c C e E L` are Float64 divided as pymavlink divides them;
//! stored, they keep their integer type. Each column's metadata names its `format` character,
//! and where FMTU gives them its `unit` and the `multiplier` one written step is worth in it;
//! the file's metadata names the `type`, its `format` characters and its `columns`.

use super::csv::{Selection, Values, column_units, divisor};
use super::{Key, WriteMessages, column_names, export, holds, key_of, table_name};
use crate::columnar::{Column, ColumnType, Encoder, Table};
use crate::dataflash::fmt::{FieldType, Format, Formats};
use crate::dataflash::message::{Message, Text, Value, int16_array};
use crate::dataflash::reader::{Noting, Rules, scan_with};
use crate::dataflash::report::DataflashReport;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::sync::atomic::AtomicU64;

/// The column type a field of `ty` is written as.
fn column_type(ty: FieldType, values: Values) -> ColumnType {
    if values == Values::Scaled && divisor(ty).is_some() {
        return ColumnType::F64;
    }
    match ty {
        FieldType::I8 => ColumnType::I8,
        FieldType::U8 | FieldType::FlightMode => ColumnType::U8,
        FieldType::I16 | FieldType::I16Centi => ColumnType::I16,
        FieldType::U16 | FieldType::U16Centi => ColumnType::U16,
        FieldType::I32 | FieldType::I32Centi | FieldType::LatLon => ColumnType::I32,
        FieldType::U32 | FieldType::U32Centi => ColumnType::U32,
        FieldType::I64 => ColumnType::I64,
        FieldType::U64 => ColumnType::U64,
        FieldType::F16 | FieldType::F32 => ColumnType::F32,
        FieldType::F64 => ColumnType::F64,
        FieldType::Char4 | FieldType::Char16 | FieldType::Char64 => ColumnType::Text,
        FieldType::Int16Array => ColumnType::I16List,
    }
}

/// The columns of the table of `format`, with units as the file's formats (`end`) name them.
fn columns(end: &Formats, format: &Format, values: Values) -> Vec<Column> {
    let units = end
        .iter()
        .find(|f| f.name == format.name && f.format == format.format)
        .map(|f| column_units(end, f, values));
    let mut columns: Vec<Column> = column_names(format)
        .zip(&format.fields)
        .enumerate()
        .map(|(i, (name, &ty))| {
            let mut column = Column::new(name, column_type(ty, values));
            column
                .metadata
                .insert("format".into(), ty.as_char().to_string());
            if let Some((unit, multiplier)) = units.as_ref().and_then(|u| u.get(i)) {
                if let Some(unit) = unit {
                    column.metadata.insert("unit".into(), unit.clone());
                }
                if let Some(m) = multiplier {
                    column.metadata.insert("multiplier".into(), m.to_string());
                }
            }
            column
        })
        .collect();
    columns.push(Column::new("session", ColumnType::U32));
    columns.push(Column::new("offset", ColumnType::U64));
    columns.push(Column::new("trust", ColumnType::Label));
    columns
}

/// Writes every message into its type's table.
struct ParquetWriter<'f, W: Write + Send + 'static, F> {
    /// The format table at the end of the file: the units of every type.
    formats: &'f Formats,
    create: F,
    /// Tables by type byte, and all of them with their keys and names.
    current: Vec<Option<usize>>,
    tables: Vec<(Key, String, Table<W>)>,
    selection: &'f Selection,
    session: u32,
    /// One text value, reused.
    text: String,
    encoder: &'f Encoder,
}

impl<W: Write + Send + 'static, F: FnMut(&str) -> io::Result<W>> ParquetWriter<'_, W, F> {
    /// The table for `format`, created on first use.
    fn table(&mut self, format: &Format) -> io::Result<usize> {
        let slot = usize::from(format.type_id);
        if let Some(i) = self.current[slot]
            && holds(&self.tables[i].0, format)
        {
            return Ok(i);
        }
        let index = match self.tables.iter().position(|(k, ..)| holds(k, format)) {
            Some(i) => i,
            None => {
                let key = key_of(format);
                let name = table_name(&key, self.tables.iter().map(|(k, ..)| k));
                let metadata = vec![
                    ("type".to_owned(), format.name.clone()),
                    ("format".to_owned(), format.format.clone()),
                    ("columns".to_owned(), format.columns.join(",")),
                ];
                let columns = columns(self.formats, format, self.selection.values);
                let table = Table::new((self.create)(&name)?, &columns, metadata, self.encoder)?;
                self.tables.push((key, name, table));
                self.tables.len() - 1
            }
        };
        self.current[slot] = Some(index);
        Ok(index)
    }
}

impl<W: Write + Send + 'static, F: FnMut(&str) -> io::Result<W>> WriteMessages
    for ParquetWriter<'_, W, F>
{
    fn message(&mut self, message: &Message<'_>) -> io::Result<()> {
        let index = self.table(message.format)?;
        let table = &mut self.tables[index].2;
        let values = self.selection.values;
        let mut fields = message.fields();
        for &ty in &message.format.fields {
            let scaled = match values {
                Values::Scaled => divisor(ty),
                Values::Stored => None,
            };
            match (fields.next(), scaled) {
                (Some(Value::Signed(v)), Some(d)) => table.push_float(v as f64 / d),
                (Some(Value::Unsigned(v)), Some(d)) => table.push_float(v as f64 / d),
                (Some(Value::Signed(v)), None) => table.push_int(v),
                (Some(Value::Unsigned(v)), None) if ty == FieldType::U64 => table.push_u64(v),
                (Some(Value::Unsigned(v)), None) => table.push_int(v as i64),
                (Some(Value::F32(v)), _) => table.push_float(v.into()),
                (Some(Value::F64(v)), _) => table.push_float(v),
                (Some(Value::Text(bytes)), _) => {
                    self.text.clear();
                    let _ = write!(self.text, "{}", Text::new(bytes));
                    table.push_text(&self.text);
                }
                (Some(Value::Int16Array(bytes)), _) => table.push_i16_list(int16_array(bytes)),
                (None, _) => table.push_null(),
            }
        }
        table.push_int(self.session.into());
        table.push_u64(message.offset);
        table.push_text(message.trust.as_str());
        table.end_row()
    }

    fn session(&mut self, _offset: u64) -> io::Result<()> {
        self.session = self.session.saturating_add(1);
        Ok(())
    }
}

/// Decode `data` by the thorough rules and write one Parquet table per message type, each to a
/// writer `create` opens for the table's name (`NAME`, or `NAME.2`… for a type redefined with
/// another layout), with the messages and values `selection` asks for (`combined` does not
/// apply). Returns the `check` report and the finished writers with their tables' names, in the
/// order they were opened.
pub fn write_parquet<W: Write + Send + 'static>(
    path: &str,
    data: &[u8],
    selection: &Selection,
    create: impl FnMut(&str) -> io::Result<W>,
    reached: &AtomicU64,
) -> io::Result<(DataflashReport, Vec<(String, W)>)> {
    // The units as the end of the file defines them: a first pass.
    let first = scan_with(data, Rules::Thorough, Formats::new(), &mut Noting(reached));
    // Declared before the sink, so that its tables are dropped before it waits for its thread.
    let encoder = Encoder::new()?;
    let writer = ParquetWriter {
        formats: &first.formats,
        create,
        current: vec![None; 256],
        tables: Vec::new(),
        selection,
        session: 1,
        text: String::new(),
        encoder: &encoder,
    };
    let (writer, report) = export(path, data, writer, selection, reached)?;
    let mut closing = Vec::with_capacity(writer.tables.len());
    for (_, name, table) in writer.tables {
        closing.push((name, table.close()?));
    }
    let mut written = Vec::with_capacity(closing.len());
    for (name, table) in closing {
        written.push((name, table.wait()?));
    }
    Ok((report, written))
}
