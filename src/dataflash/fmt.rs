//! Message formats: the format characters, FMT definitions, and the FMTU/UNIT/MULT metadata that
//! names the unit and multiplier of each column.
//!
//! A FMT message is `A3 95 80`, then `Type` (u8), `Length` (u8, the whole message including its
//! 3 header bytes), `Name` (`char[4]`), `Format` (`char[16]`, one character per field) and
//! `Columns` (`char[64]`, comma separated). FMT itself is predefined as type 0x80, 89 bytes,
//! `BBnNZ`; a log may redefine it (FMT-of-FMT), and any type whose name is `FMT` defines formats.

use nom::IResult;
use nom::bytes::complete::take;
use nom::number::complete::u8 as le_u8;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};

/// The type id FMT has before any FMT-of-FMT redefines it.
pub const FMT_TYPE: u8 = 0x80;
/// Length of the predefined FMT message, header included.
pub const FMT_LENGTH: usize = 89;
/// Every message starts with these two bytes, then its type byte.
pub const HEADER: [u8; 2] = [0xA3, 0x95];
/// Bytes of `A3 95 <type>` in front of every message body.
pub const HEADER_LEN: usize = 3;

macro_rules! field_types {
    ($($ch:literal => $variant:ident, $size:literal, $c_type:literal;)*) => {
        /// One format character: the C type of one field.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum FieldType {
            $($variant,)*
        }

        impl FieldType {
            /// The field type of a format character, or `None` for a character no logger writes.
            pub fn from_char(c: u8) -> Option<FieldType> {
                match c {
                    $($ch => Some(FieldType::$variant),)*
                    _ => None,
                }
            }

            /// The format character.
            pub fn as_char(self) -> char {
                match self {
                    $(FieldType::$variant => $ch as char,)*
                }
            }

            /// Bytes the field takes in a message body.
            pub fn size(self) -> usize {
                match self {
                    $(FieldType::$variant => $size,)*
                }
            }

            /// The stored C type.
            pub fn c_type(self) -> &'static str {
                match self {
                    $(FieldType::$variant => $c_type,)*
                }
            }
        }
    };
}

field_types! {
    b'a' => Int16Array, 64, "int16_t[32]";
    b'b' => I8, 1, "int8_t";
    b'B' => U8, 1, "uint8_t";
    b'h' => I16, 2, "int16_t";
    b'H' => U16, 2, "uint16_t";
    b'i' => I32, 4, "int32_t";
    b'I' => U32, 4, "uint32_t";
    b'f' => F32, 4, "float";
    b'd' => F64, 8, "double";
    b'g' => F16, 2, "float16";
    b'n' => Char4, 4, "char[4]";
    b'N' => Char16, 16, "char[16]";
    b'Z' => Char64, 64, "char[64]";
    b'c' => I16Centi, 2, "int16_t * 100";
    b'C' => U16Centi, 2, "uint16_t * 100";
    b'e' => I32Centi, 4, "int32_t * 100";
    b'E' => U32Centi, 4, "uint32_t * 100";
    b'L' => LatLon, 4, "int32_t degrees * 1e7";
    b'M' => FlightMode, 1, "uint8_t flight mode";
    b'q' => I64, 8, "int64_t";
    b'Q' => U64, 8, "uint64_t";
}

impl FieldType {
    /// Whether the stored value is an integer (scaled types included: their raw value is one).
    pub fn is_integer(self) -> bool {
        !matches!(
            self,
            FieldType::Int16Array
                | FieldType::F32
                | FieldType::F64
                | FieldType::F16
                | FieldType::Char4
                | FieldType::Char16
                | FieldType::Char64
        )
    }

    /// Whether the stored value is a float.
    pub fn is_float(self) -> bool {
        matches!(self, FieldType::F32 | FieldType::F64 | FieldType::F16)
    }

    /// Whether the field is a NUL-padded character array.
    pub fn is_text(self) -> bool {
        matches!(
            self,
            FieldType::Char4 | FieldType::Char16 | FieldType::Char64
        )
    }
}

/// What a message type is used for beyond carrying data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Ordinary data.
    Data,
    /// Defines formats (`FMT`).
    Fmt,
    /// Names the units and multipliers of a format's columns (`FMTU`).
    Fmtu,
    /// Defines a unit id (`UNIT`).
    Unit,
    /// Defines a multiplier id (`MULT`).
    Mult,
    /// A text message (`MSG`); the first one names the firmware.
    Msg,
    /// The logger's own statistics (`DSF`): its `Dp` column counts messages it dropped.
    LoggerStats,
}

/// The definition of one message type.
#[derive(Debug, Clone, PartialEq)]
pub struct Format {
    /// The type byte the definition was installed for.
    pub type_id: u8,
    /// The message length the FMT declares, header included.
    pub declared_length: i64,
    /// The name, cut at the first NUL (bytes that are not UTF-8 are written `\xNN`).
    pub name: String,
    /// The name as a JSON string, quotes included.
    pub name_json: String,
    /// The format characters as written.
    pub format: String,
    pub columns: Vec<String>,
    pub fields: Vec<FieldType>,
    /// Bytes the fields take: what a body must hold.
    pub body_size: usize,
    /// Offset of the FMT message that defined it (`None` for the predefined FMT).
    pub defined_at: Option<u64>,
    pub role: Role,
    /// Whether the first field is a microsecond timestamp (`TimeUS`, an integer).
    pub time_us: bool,
    /// Whether the first field is a millisecond timestamp on the same clock (`TimeMS`, an
    /// integer, as logs before ArduPilot 3.3 write it).
    pub time_ms: bool,
    /// Unit and multiplier ids per column, from FMTU.
    pub unit_ids: Option<String>,
    pub mult_ids: Option<String>,
}

/// The values a FMT message carries.
#[derive(Debug, Clone, Copy)]
pub struct Definition<'a> {
    /// The type being defined (wider than a byte when a FMT-of-FMT widens the column).
    pub type_value: i128,
    pub length: i128,
    pub name: &'a [u8],
    pub format: &'a [u8],
    pub columns: &'a [u8],
}

/// Parse the body of a FMT message in the predefined `BBnNZ` layout.
pub fn fmt_body(input: &[u8]) -> IResult<&[u8], Definition<'_>, ()> {
    let (input, type_id) = le_u8(input)?;
    let (input, length) = le_u8(input)?;
    let (input, name) = take(4usize)(input)?;
    let (input, format) = take(16usize)(input)?;
    let (input, columns) = take(64usize)(input)?;
    Ok((
        input,
        Definition {
            type_value: type_id.into(),
            length: length.into(),
            name,
            format,
            columns,
        },
    ))
}

/// How many FMT messages of `data` declare a line feed (10) for the length of a type whose
/// format needs 13, a carriage return: the mark a text-mode copy leaves on definitions. A FMT
/// counts where the next message, or the end of the data, follows it.
pub fn line_feed_lengths(data: &[u8]) -> usize {
    let carriage_return = usize::from(b'\r');
    let mut count = 0;
    for at in memchr::memmem::find_iter(data, &[HEADER[0], HEADER[1], FMT_TYPE]) {
        let next = data.get(at + FMT_LENGTH..).unwrap_or_default();
        if !(next.is_empty() || next.starts_with(&HEADER)) {
            continue;
        }
        let body = data.get(at + HEADER_LEN..).unwrap_or_default();
        let Ok((_, d)) = fmt_body(body) else {
            continue;
        };
        let problem = Format::define(&d, None)
            .ok()
            .and_then(|(_, problem)| problem);
        let line_feed_for_return = matches!(
            problem,
            Some(ProblemKind::LengthMismatch { needed, .. }) if needed == carriage_return
        );
        count += usize::from(d.length == i128::from(b'\n') && line_feed_for_return);
    }
    count
}

/// Why a FMT message is a problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProblemKind {
    /// A format character no logger writes: the definition is rejected, the FMT is not read.
    UnknownFormatChar(char),
    /// The declared length is not what the format needs: no message of the type can be read.
    LengthMismatch { declared: i64, needed: usize },
    /// The type being defined does not fit the type byte: nothing can use the definition.
    TypeOutOfRange(i128),
    /// A type named FMT whose fields are not (type, length, name, format, columns).
    NotADefinition,
    /// The column names are not one per field: the messages read, but the names do not fit.
    ColumnCount { columns: usize, fields: usize },
}

/// A FMT message that defines a type badly.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FormatProblem {
    /// Offset of the FMT message.
    pub offset: u64,
    /// The type it defines, when it says.
    #[serde(rename = "type")]
    pub type_value: Option<i64>,
    pub name: String,
    pub problem: String,
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProblemKind::UnknownFormatChar(c) => write!(
                f,
                "unknown format character {c:?}: the definition is ignored"
            ),
            ProblemKind::LengthMismatch { declared, needed } => write!(
                f,
                "declares length {declared} but its format needs {needed}: its messages cannot be read"
            ),
            ProblemKind::TypeOutOfRange(t) => {
                write!(f, "defines type {t}, which no message can carry")
            }
            ProblemKind::NotADefinition => write!(
                f,
                "named FMT but its fields are not type, length, name, format, columns"
            ),
            ProblemKind::ColumnCount { columns, fields } => write!(
                f,
                "names {columns} columns for {fields} fields: in CSV the fields past the names are headed fieldN"
            ),
        }
    }
}

impl fmt::Display for FormatProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FMT at {}", self.offset)?;
        if let Some(t) = self.type_value {
            write!(f, " for type {t}")?;
        }
        if !self.name.is_empty() {
            write!(f, " ({})", self.name)?;
        }
        write!(f, ": {}", self.problem)
    }
}

/// Clamp a value read from a file into `i64` (lengths and types beyond it are equally unusable).
fn clamp_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

impl Format {
    /// The predefined FMT format.
    pub fn fmt() -> Format {
        let definition = Definition {
            type_value: FMT_TYPE.into(),
            length: FMT_LENGTH as i128,
            name: b"FMT",
            format: b"BBnNZ",
            columns: b"Type,Length,Name,Format,Columns",
        };
        match Format::define(&definition, None) {
            Ok((format, _)) => format,
            Err(_) => unreachable!("the predefined FMT is valid"),
        }
    }

    /// Build the format a FMT message defines. `Err` when the definition is rejected (the FMT
    /// message itself is then not read); `Ok` with a problem when the type is defined but unusable.
    pub fn define(
        d: &Definition<'_>,
        defined_at: Option<u64>,
    ) -> Result<(Format, Option<ProblemKind>), ProblemKind> {
        let format_bytes = cut_at_nul(d.format);
        let mut fields = Vec::with_capacity(format_bytes.len());
        let mut body_size = 0usize;
        for &c in format_bytes {
            let Some(field) = FieldType::from_char(c) else {
                return Err(ProblemKind::UnknownFormatChar(char::from(c)));
            };
            fields.push(field);
            // At most 16 (or, after a FMT-of-FMT, 64) characters of at most 64 bytes each.
            body_size = body_size.saturating_add(field.size());
        }
        let name = decode_name(d.name);
        let columns_text = decode_name(d.columns);
        let columns: Vec<String> = if columns_text.is_empty() {
            Vec::new()
        } else {
            columns_text.split(',').map(str::to_owned).collect()
        };
        let role = match name.as_str() {
            "FMT" => Role::Fmt,
            "FMTU" => Role::Fmtu,
            "UNIT" => Role::Unit,
            "MULT" => Role::Mult,
            "MSG" => Role::Msg,
            "DSF" => Role::LoggerStats,
            _ => Role::Data,
        };
        let integer_time = matches!(
            fields.first(),
            Some(FieldType::U64 | FieldType::U32 | FieldType::I64)
        );
        let time_us = integer_time && columns.first().is_some_and(|c| c == "TimeUS");
        let time_ms = integer_time && columns.first().is_some_and(|c| c == "TimeMS");
        let declared_length = clamp_i64(d.length);
        let type_id = u8::try_from(d.type_value);
        let problem = match type_id {
            Err(_) => Some(ProblemKind::TypeOutOfRange(d.type_value)),
            Ok(_) if usize::try_from(declared_length).ok() != body_size.checked_add(HEADER_LEN) => {
                Some(ProblemKind::LengthMismatch {
                    declared: declared_length,
                    needed: body_size.saturating_add(HEADER_LEN),
                })
            }
            Ok(_) if columns.len() != fields.len() => Some(ProblemKind::ColumnCount {
                columns: columns.len(),
                fields: fields.len(),
            }),
            Ok(_) => None,
        };
        let format = Format {
            type_id: type_id.unwrap_or(0),
            declared_length,
            name_json: serde_json::to_string(&name).unwrap_or_else(|_| "\"\"".into()),
            name,
            format: format_bytes.iter().map(|&c| char::from(c)).collect(),
            columns,
            fields,
            body_size,
            defined_at,
            role,
            time_us,
            time_ms,
            unit_ids: None,
            mult_ids: None,
        };
        Ok((format, problem))
    }

    /// The message length when messages of this type can be read: the declared length, if it is
    /// what the format needs. A message is at least its 3 header bytes.
    #[inline]
    pub fn message_len(&self) -> Option<usize> {
        let len = usize::try_from(self.declared_length).ok()?;
        (len >= HEADER_LEN && len - HEADER_LEN == self.body_size).then_some(len)
    }

    /// Whether the format has the field layout of a FMT message, so that its messages can define
    /// formats: two integers then three character arrays.
    pub fn defines_formats(&self) -> bool {
        self.role == Role::Fmt
            && self.fields.len() >= 5
            && self.fields[..2].iter().all(|f| f.is_integer())
            && self.fields[2..5].iter().all(|f| f.is_text())
    }
}

/// `bytes` up to the first NUL.
pub fn cut_at_nul(bytes: &[u8]) -> &[u8] {
    match memchr::memchr(0, bytes) {
        Some(end) => &bytes[..end],
        None => bytes,
    }
}

/// A name or format string cut at the first NUL; bytes that are not UTF-8 become `\xNN`, as
/// pymavlink names types (`decode(errors="backslashreplace")`).
pub fn decode_name(bytes: &[u8]) -> String {
    let mut rest = cut_at_nul(bytes);
    let mut out = String::with_capacity(rest.len());
    loop {
        match std::str::from_utf8(rest) {
            Ok(valid) => {
                out.push_str(valid);
                return out;
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                // `valid_up_to` marks a character boundary, so this part is UTF-8.
                out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                let bad = e.error_len().unwrap_or(after.len()).min(after.len());
                for b in &after[..bad] {
                    let _ = write!(out, "\\x{b:02x}");
                }
                rest = &after[bad..];
            }
        }
    }
}

/// The format table: one definition per type byte, and the unit and multiplier ids.
#[derive(Debug, Clone)]
pub struct Formats {
    slots: Vec<Option<Format>>,
    /// UNIT: id character → label (the last one given).
    pub units: BTreeMap<char, String>,
    /// UNIT ids given more than one label (ArduPilot 3.6 gives `U` to degrees of longitude and
    /// to microseconds): the labels given before the last.
    earlier_labels: BTreeMap<char, BTreeSet<String>>,
    /// MULT: id character → multiplier.
    pub multipliers: BTreeMap<char, f64>,
}

impl Formats {
    /// Whether both tables define the same types the same way, wherever their FMT messages are.
    pub fn same_definitions(&self, other: &Formats) -> bool {
        let same = |a: &Format, b: &Format| {
            a.type_id == b.type_id
                && a.declared_length == b.declared_length
                && a.name == b.name
                && a.format == b.format
                && a.columns == b.columns
                && a.fields == b.fields
                && a.role == b.role
                && a.unit_ids == b.unit_ids
                && a.mult_ids == b.mult_ids
        };
        self.units == other.units
            && self.multipliers == other.multipliers
            && self.slots.len() == other.slots.len()
            && self.slots.iter().zip(&other.slots).all(|pair| match pair {
                (None, None) => true,
                (Some(a), Some(b)) => same(a, b),
                _ => false,
            })
    }
}

impl Default for Formats {
    fn default() -> Self {
        Formats::new()
    }
}

impl Formats {
    /// The table before any FMT is read: FMT alone.
    pub fn new() -> Formats {
        let mut slots = vec![None; 256];
        slots[usize::from(FMT_TYPE)] = Some(Format::fmt());
        Formats {
            slots,
            units: BTreeMap::new(),
            earlier_labels: BTreeMap::new(),
            multipliers: BTreeMap::new(),
        }
    }

    /// Record a UNIT message: `id` names `label`.
    pub fn define_unit(&mut self, id: char, label: String) {
        if let Some(old) = self.units.insert(id, label)
            && self.units.get(&id) != Some(&old)
        {
            self.earlier_labels.entry(id).or_default().insert(old);
        }
    }

    /// Every label the log gave unit `id`: none when it defined no such unit, more than one
    /// when it gave the id to several units, any of which a column of that id may be in.
    pub fn unit_labels(&self, id: char) -> impl Iterator<Item = &str> {
        let earlier = self.earlier_labels.get(&id).into_iter().flatten();
        self.units
            .get(&id)
            .into_iter()
            .chain(earlier)
            .map(String::as_str)
    }

    /// The definition of a type byte.
    #[inline]
    pub fn get(&self, type_id: u8) -> Option<&Format> {
        self.slots.get(usize::from(type_id))?.as_ref()
    }

    /// Install (or replace) a definition. A redefinition keeps the unit and multiplier ids FMTU
    /// gave the type until a FMTU names new ones.
    pub fn install(&mut self, mut format: Format) {
        let Some(slot) = self.slots.get_mut(usize::from(format.type_id)) else {
            return;
        };
        if let Some(old) = slot.take()
            && format.unit_ids.is_none()
        {
            format.unit_ids = old.unit_ids;
            format.mult_ids = old.mult_ids;
        }
        *slot = Some(format);
    }

    /// Every defined type, by type byte.
    pub fn iter(&self) -> impl Iterator<Item = &Format> {
        self.slots.iter().flatten()
    }

    /// Record a FMTU message: the unit and multiplier ids of a type's columns.
    pub fn set_units(&mut self, type_value: i128, unit_ids: String, mult_ids: String) {
        let Some(format) = u8::try_from(type_value)
            .ok()
            .and_then(|t| self.slots.get_mut(usize::from(t)))
            .and_then(Option::as_mut)
        else {
            return;
        };
        format.unit_ids = Some(unit_ids);
        format.mult_ids = Some(mult_ids);
    }

    /// Per column of `format`, the unit label its FMTU names (empty when none).
    pub fn column_units(&self, format: &Format) -> Option<Vec<String>> {
        let ids = format.unit_ids.as_deref()?;
        let mut ids = ids.chars();
        Some(
            format
                .columns
                .iter()
                .map(|_| {
                    ids.next()
                        .and_then(|id| self.units.get(&id))
                        .cloned()
                        .unwrap_or_default()
                })
                .collect(),
        )
    }

    /// Per column of `format`, the multiplier its FMTU names (`None` when unknown).
    pub fn column_multipliers(&self, format: &Format) -> Option<Vec<Option<f64>>> {
        let ids = format.mult_ids.as_deref()?;
        let mut ids = ids.chars();
        Some(
            format
                .columns
                .iter()
                .map(|_| ids.next().and_then(|id| self.multipliers.get(&id)).copied())
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_predefined_fmt_reads_89_bytes() {
        let fmt = Format::fmt();
        assert_eq!(fmt.body_size, 86);
        assert_eq!(fmt.message_len(), Some(FMT_LENGTH));
        assert!(fmt.defines_formats());
        assert_eq!(fmt.columns.len(), 5);
    }

    #[test]
    fn every_format_character_has_its_size() {
        let sizes: Vec<(char, usize)> = b"abBhHifdgnNZcCeELMqQI"
            .iter()
            .map(|&c| {
                let f = FieldType::from_char(c).expect("known");
                assert_eq!(f.as_char(), char::from(c));
                (f.as_char(), f.size())
            })
            .collect();
        let expected = [
            64, 1, 1, 2, 2, 4, 4, 8, 2, 4, 16, 64, 2, 2, 4, 4, 4, 1, 8, 8, 4,
        ];
        assert_eq!(sizes.iter().map(|s| s.1).collect::<Vec<_>>(), expected);
        assert_eq!(FieldType::from_char(b'x'), None);
    }

    fn definition<'a>(format: &'a [u8], length: i128) -> Definition<'a> {
        Definition {
            type_value: 7,
            length,
            name: b"TEST",
            format,
            columns: b"TimeUS,A,B\0\0",
        }
    }

    #[test]
    fn a_length_that_disagrees_with_the_format_is_a_problem() {
        let (f, problem) = Format::define(&definition(b"Qgf\0", 17), Some(5)).unwrap();
        assert_eq!(f.body_size, 14);
        assert_eq!(f.message_len(), Some(17));
        assert_eq!(problem, None);
        assert!(f.time_us);
        let (f, problem) = Format::define(&definition(b"Qgf", 20), Some(5)).unwrap();
        assert_eq!(f.message_len(), None);
        assert_eq!(
            problem,
            Some(ProblemKind::LengthMismatch {
                declared: 20,
                needed: 17
            })
        );
    }

    #[test]
    fn short_lengths_never_make_a_readable_type() {
        for length in 0..3 {
            let (f, _) = Format::define(&definition(b"", length), None).unwrap();
            assert_eq!(f.message_len(), None, "length {length}");
        }
        let (f, problem) = Format::define(&definition(b"", 3), None).unwrap();
        assert_eq!(f.message_len(), Some(3));
        assert!(!matches!(problem, Some(ProblemKind::LengthMismatch { .. })));
    }

    #[test]
    fn column_names_that_do_not_fit_the_fields_are_a_problem_but_the_type_reads() {
        for (format, length, columns) in [(&b"Qg"[..], 13, 3), (b"QgfB", 18, 3)] {
            let (f, problem) = Format::define(&definition(format, length), None).unwrap();
            assert_eq!(f.message_len(), Some(length as usize));
            assert_eq!(
                problem,
                Some(ProblemKind::ColumnCount {
                    columns,
                    fields: format.len()
                })
            );
        }
    }

    #[test]
    fn an_unknown_character_rejects_the_definition() {
        assert_eq!(
            Format::define(&definition(b"Qx", 12), None).unwrap_err(),
            ProblemKind::UnknownFormatChar('x')
        );
    }

    #[test]
    fn a_unit_id_given_several_labels_keeps_them_all() {
        let mut formats = Formats::new();
        formats.define_unit('D', "deglatitude".into());
        formats.define_unit('U', "deglongitude".into());
        formats.define_unit('U', "us".into());
        formats.define_unit('D', "deglatitude".into());
        let labels = |id| formats.unit_labels(id).collect::<Vec<_>>();
        assert_eq!(labels('D'), ["deglatitude"]);
        assert_eq!(labels('U'), ["us", "deglongitude"]);
        assert!(labels('Y').is_empty());
        // Exports name the last.
        assert_eq!(formats.units[&'U'], "us");
    }

    #[test]
    fn fmt_bodies_parse() {
        let mut body = vec![0x40, 20];
        body.extend_from_slice(b"ABC\0");
        body.extend_from_slice(b"QHHf\0\0\0\0\0\0\0\0\0\0\0\0");
        body.extend_from_slice(&[b'x'; 64]);
        let (rest, d) = fmt_body(&body).unwrap();
        assert!(rest.is_empty());
        assert_eq!((d.type_value, d.length), (0x40, 20));
        assert!(fmt_body(&body[..80]).is_err());
    }
}
