//! Salvage: the trusted messages of a DataFlash log, in file order, as a clean log.
//!
//! Every message the thorough rules accept is copied byte for byte; nothing else is written, so a
//! clean log salvages to its messages exactly. Each type's FMT comes before the type's first
//! message: the input's own FMT when it was kept, or one written from the format table when the
//! definition came from elsewhere (a donor log's, with `--fmt-from`, where the input's FMT was
//! lost to damage). A definition written from the table brings its units along: the UNIT and MULT
//! messages of the ids it uses and its FMTU, as the donor defined them, unless the output already
//! declares them.

use super::fmt::{
    Definition, FMT_TYPE, FieldType, Format, Formats, HEADER, Role, line_feed_lengths,
};
use super::message::{
    Message, definition_from_values, fmtu_from_values, mult_from_values, unit_from_values,
};
use super::reader::{
    LINE_FEEDS_CHECKED, LINE_FEEDS_IN_DOUBT, Noting, Rules, Sink, copied_in_text_mode,
    says_line_feeds_in_doubt, says_line_feeds_stand, scan_with, shows_copy,
};
use super::report::{DataflashReport, Observer, build};
use crate::report::{Keep, Trust};
use crate::textmode::NewlineCounts;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};

/// What a salvaged log holds and what was left out.
#[derive(Debug, Clone, Serialize)]
pub struct SalvageSummary {
    /// Messages copied from the input.
    pub messages_kept: u64,
    /// Types whose FMT was written from the format table because the input's was lost or
    /// borrowed from a donor log, by name.
    pub formats_added: Vec<String>,
    /// Messages left out because their type could not be defined in the output (a name or
    /// format longer than the output's FMT layout holds).
    pub messages_undefinable: u64,
    /// Suspect messages (read in step, values in doubt) copied, and left out by `--drop-suspect`.
    pub suspect_kept: u64,
    pub suspect_dropped: u64,
    /// Input byte spans left out, with where the output continues after each.
    pub dropped: Vec<DroppedSpan>,
    /// Whether the output ends with a message saying its line feeds stand as written (without
    /// it, the output would read as a text-mode copy though the input did not), or that they are
    /// in doubt (salvaged from a copy, it would not read as one).
    pub line_feeds_marked: bool,
}

/// A span of the input that the output leaves out.
#[derive(Debug, Clone, Serialize)]
pub struct DroppedSpan {
    pub input_start: u64,
    pub input_end: u64,
    pub reason: &'static str,
    /// Where the output continues after the span.
    pub output_offset: u64,
}

/// A salvaged log.
#[derive(Debug, Clone)]
pub struct Salvaged {
    pub summary: SalvageSummary,
    pub bytes: Vec<u8>,
}

/// A definition as the output declares it: what a message's type must match to be read alike.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Declared {
    name: String,
    format: String,
    length: i64,
}

impl Declared {
    fn of(format: &Format) -> Declared {
        Declared {
            name: format.name.clone(),
            format: format.format.clone(),
            length: format.declared_length,
        }
    }
}

/// Writes accepted messages, declaring each type before its first message.
struct Writer<'a> {
    /// Bytes written and not yet passed to `to`.
    out: Vec<u8>,
    /// Bytes passed to `to` so far.
    taken: u64,
    to: &'a mut dyn Write,
    /// The first error `to` gave; nothing more is passed to it after that.
    error: Option<io::Error>,
    /// The input offset the scan has reached.
    reached: &'a AtomicU64,
    /// What the output has declared for each type byte.
    declared: Vec<Option<Declared>>,
    /// The FMT layout the output is read with at this point.
    fmt_layout: Format,
    /// Where the last copied message ended in the input.
    input_end: Option<u64>,
    /// (input offset, output offset) of each message that follows skipped input bytes.
    anchors: Vec<(u64, u64)>,
    summary: SalvageSummary,
    /// Where units of a definition written from the table come from.
    units: UnitSource,
    /// UNIT and MULT ids, and types with a FMTU, the output declares so far.
    units_declared: BTreeSet<char>,
    multipliers_declared: BTreeSet<char>,
    fmtu_declared: BTreeSet<u8>,
    /// The last TimeUS copied: the time of messages written from the table.
    last_time: u64,
    keep: Keep,
    /// Line feeds and carriage returns of the bytes passed on.
    newlines: NewlineCounts,
    /// FMT messages passed on that declare a line feed for a carriage return.
    line_feed_lengths: usize,
}

/// The UNIT, MULT and FMTU definitions and the id tables of the format table a scan starts from
/// (a donor log's), to declare the units of a definition written from it.
#[derive(Default)]
struct UnitSource {
    unit: Option<Format>,
    mult: Option<Format>,
    fmtu: Option<Format>,
    units: BTreeMap<char, String>,
    multipliers: BTreeMap<char, f64>,
}

impl UnitSource {
    fn of(formats: &Formats) -> UnitSource {
        let role = |role| formats.iter().find(|f| f.role == role).cloned();
        UnitSource {
            unit: role(Role::Unit),
            mult: role(Role::Mult),
            fmtu: role(Role::Fmtu),
            units: formats.units.clone(),
            multipliers: formats.multipliers.clone(),
        }
    }
}

/// A value to write into a message built from a definition.
#[derive(Debug, Clone, Copy)]
enum Field<'a> {
    Integer(i128),
    Float(f64),
    Text(&'a [u8]),
}

/// A message of `format` whose columns take the values `value` gives by column name; `None` when a
/// column is unknown or a value does not fit its field.
fn build_message<'a>(
    format: &Format,
    value: impl Fn(&str) -> Option<Field<'a>>,
) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(format.message_len()?);
    out.extend_from_slice(&HEADER);
    out.push(format.type_id);
    for (field, column) in format.fields.iter().zip(&format.columns) {
        match (value(column)?, *field) {
            (Field::Integer(v), f) if f.is_integer() => put_integer(&mut out, f, v)?,
            (Field::Float(v), FieldType::F32) => out.extend_from_slice(&(v as f32).to_le_bytes()),
            (Field::Float(v), FieldType::F64) => out.extend_from_slice(&v.to_le_bytes()),
            (Field::Text(t), f) if f.is_text() && t.len() <= f.size() => {
                out.extend_from_slice(t);
                out.resize(out.len() + f.size() - t.len(), 0);
            }
            _ => return None,
        }
    }
    (Some(out.len()) == format.message_len()).then_some(out)
}

/// Bytes are passed on in pieces of about this size, so that memory holds one piece of the output
/// rather than the whole of it.
const PIECE: usize = 1 << 16;

impl<'a> Writer<'a> {
    fn new(
        formats: &Formats,
        keep: Keep,
        to: &'a mut dyn Write,
        reached: &'a AtomicU64,
    ) -> Writer<'a> {
        let mut declared = vec![None; 256];
        let fmt = Format::fmt();
        declared[usize::from(FMT_TYPE)] = Some(Declared::of(&fmt));
        Writer {
            out: Vec::new(),
            taken: 0,
            to,
            error: None,
            reached,
            declared,
            fmt_layout: fmt,
            input_end: None,
            anchors: Vec::new(),
            summary: SalvageSummary {
                messages_kept: 0,
                formats_added: Vec::new(),
                messages_undefinable: 0,
                suspect_kept: 0,
                suspect_dropped: 0,
                dropped: Vec::new(),
                line_feeds_marked: false,
            },
            units: UnitSource::of(formats),
            units_declared: BTreeSet::new(),
            multipliers_declared: BTreeSet::new(),
            fmtu_declared: BTreeSet::new(),
            last_time: 0,
            keep,
            newlines: NewlineCounts::default(),
            line_feed_lengths: 0,
        }
    }

    /// How many bytes the output holds so far.
    fn len(&self) -> u64 {
        self.taken + self.out.len() as u64
    }

    /// Pass the bytes held on once they make a piece, or whatever is held when `all`.
    fn pass_on(&mut self, all: bool) {
        if !all && self.out.len() < PIECE {
            return;
        }
        if self.error.is_none()
            && let Err(e) = self.to.write_all(&self.out)
        {
            self.error = Some(e);
        }
        self.newlines.add(&self.out);
        self.line_feed_lengths += line_feed_lengths(&self.out);
        self.taken += self.out.len() as u64;
        self.out.clear();
    }

    /// Write a type of its own (the highest type byte the output leaves free) and one message of
    /// it, `note` ([`LINE_FEEDS_CHECKED`] or [`LINE_FEEDS_IN_DOUBT`]).
    fn mark_line_feeds(&mut self, note: &'static [u8]) {
        let Some(type_id) = (1..FMT_TYPE)
            .rev()
            .chain((FMT_TYPE + 1..=u8::MAX).rev())
            .find(|&t| self.declared[usize::from(t)].is_none() && t != b'\n' && t != b'\r')
        else {
            return;
        };
        let definition = Definition {
            type_value: i128::from(type_id),
            length: 67,
            name: b"LFOK",
            format: b"Z",
            columns: b"Note",
        };
        let Ok((format, None)) = Format::define(&definition, None) else {
            return;
        };
        let Some(fmt) = fmt_message(&self.fmt_layout, &format) else {
            return;
        };
        let note = Field::Text(note);
        let Some(message) = build_message(&format, |_| Some(note)) else {
            return;
        };
        self.out.extend_from_slice(&fmt);
        self.out.extend_from_slice(&message);
        self.declared[usize::from(type_id)] = Some(Declared::of(&format));
        self.summary.line_feeds_marked = true;
    }

    /// Declare `format` (its FMT from the table) unless the output already declares it the same
    /// way; false when it cannot be written.
    fn declare(&mut self, format: &Format) -> bool {
        let type_slot = usize::from(format.type_id);
        let wanted = Declared::of(format);
        if self.declared[type_slot].as_ref() == Some(&wanted) {
            return true;
        }
        let Some(fmt) = fmt_message(&self.fmt_layout, format) else {
            return false;
        };
        self.out.extend_from_slice(&fmt);
        self.summary.formats_added.push(format.name.clone());
        self.declared[type_slot] = Some(wanted);
        true
    }

    /// Write a message of a support type (UNIT, MULT, FMTU), declaring the type first.
    fn write_support(&mut self, format: &Format, message: Option<Vec<u8>>) {
        if let Some(message) = message
            && self.declare(format)
        {
            self.out.extend_from_slice(&message);
        }
    }

    /// After a definition written from the table: the UNIT and MULT messages of the ids it uses
    /// and its FMTU, where the table knows them and the output does not declare them yet.
    fn declare_units(&mut self, format: &Format) {
        let (Some(unit_ids), Some(mult_ids)) = (&format.unit_ids, &format.mult_ids) else {
            return;
        };
        if self.fmtu_declared.contains(&format.type_id) {
            return;
        }
        let time = Field::Integer(i128::from(self.last_time));
        if let Some(unit) = self.units.unit.clone() {
            for id in unit_ids.chars() {
                let Some(label) = self.units.units.get(&id).cloned() else {
                    continue;
                };
                if !self.units_declared.insert(id) {
                    continue;
                }
                let message = build_message(&unit, |column| match column {
                    "TimeUS" => Some(time),
                    "Id" => Some(Field::Integer(i128::from(u32::from(id)))),
                    "Label" => Some(Field::Text(label.as_bytes())),
                    _ => None,
                });
                self.write_support(&unit, message);
            }
        }
        if let Some(mult) = self.units.mult.clone() {
            for id in mult_ids.chars() {
                let Some(&value) = self.units.multipliers.get(&id) else {
                    continue;
                };
                if !self.multipliers_declared.insert(id) {
                    continue;
                }
                let message = build_message(&mult, |column| match column {
                    "TimeUS" => Some(time),
                    "Id" => Some(Field::Integer(i128::from(u32::from(id)))),
                    "Mult" => Some(Field::Float(value)),
                    _ => None,
                });
                self.write_support(&mult, message);
            }
        }
        if let Some(fmtu) = self.units.fmtu.clone() {
            let message = build_message(&fmtu, |column| match column {
                "TimeUS" => Some(time),
                "FmtType" => Some(Field::Integer(i128::from(format.type_id))),
                "UnitIds" => Some(Field::Text(unit_ids.as_bytes())),
                "MultIds" => Some(Field::Text(mult_ids.as_bytes())),
                _ => None,
            });
            self.fmtu_declared.insert(format.type_id);
            self.write_support(&fmtu, message);
        }
    }

    /// Note the units a UNIT, MULT or FMTU message being copied declares.
    fn note_units(&mut self, message: &Message<'_>) {
        match message.format.role {
            Role::Unit => {
                if let Some((id, _)) = unit_from_values(message.fields()) {
                    self.units_declared.insert(id);
                }
            }
            Role::Mult => {
                if let Some((id, _)) = mult_from_values(message.fields()) {
                    self.multipliers_declared.insert(id);
                }
            }
            // Readers ignore a FMTU for a type not defined yet.
            Role::Fmtu => {
                if let Some(t) = fmtu_from_values(message.fields())
                    .and_then(|(t, _, _)| u8::try_from(t).ok())
                    .filter(|&t| self.declared[usize::from(t)].is_some())
                {
                    self.fmtu_declared.insert(t);
                }
            }
            _ => {}
        }
    }

    /// Note what a FMT message being copied declares.
    fn note_definition(&mut self, message: &Message<'_>) {
        let Some(definition) = definition_from_values(message.fields()) else {
            return;
        };
        let Ok((format, _)) = Format::define(&definition, None) else {
            return;
        };
        let Ok(type_id) = u8::try_from(definition.type_value) else {
            return;
        };
        if type_id == FMT_TYPE && format.defines_formats() {
            self.fmt_layout = format.clone();
        }
        self.declared[usize::from(type_id)] = Some(Declared::of(&format));
    }
}

/// A FMT message defining `format`, in the FMT layout `layout`; `None` when a value does not fit.
pub fn fmt_message(layout: &Format, format: &Format) -> Option<Vec<u8>> {
    let columns = format.columns.join(",");
    let mut out = Vec::with_capacity(layout.message_len()?);
    out.extend_from_slice(&HEADER);
    out.push(layout.type_id);
    for (i, &field) in layout.fields.iter().enumerate() {
        let integer = match i {
            0 => Some(i128::from(format.type_id)),
            1 => Some(i128::from(format.declared_length)),
            _ => None,
        };
        match (field, integer) {
            (f, Some(v)) if f.is_integer() => put_integer(&mut out, f, v)?,
            (f, None) if f.is_text() => {
                let text = match i {
                    2 => format.name.as_bytes(),
                    3 => format.format.as_bytes(),
                    4 => columns.as_bytes(),
                    _ => b"",
                };
                if text.len() > f.size() {
                    return None;
                }
                out.extend_from_slice(text);
                out.resize(out.len() + f.size() - text.len(), 0);
            }
            // Fields after the five a definition needs are left zero.
            (f, _) if i >= 5 => out.resize(out.len() + f.size(), 0),
            _ => return None,
        }
    }
    (Some(out.len()) == layout.message_len()).then_some(out)
}

/// Append `value` as the little-endian integer field `field`, if it fits.
fn put_integer(out: &mut Vec<u8>, field: FieldType, value: i128) -> Option<()> {
    let size = field.size();
    let signed = matches!(
        field,
        FieldType::I8
            | FieldType::I16
            | FieldType::I32
            | FieldType::I64
            | FieldType::I16Centi
            | FieldType::I32Centi
            | FieldType::LatLon
    );
    let bits = 8 * size as u32;
    let fits = if signed {
        let half = 1i128 << (bits - 1);
        (-half..half).contains(&value)
    } else {
        value >= 0 && value < (1i128 << bits)
    };
    if !fits {
        return None;
    }
    out.extend_from_slice(&value.to_le_bytes()[..size]);
    Some(())
}

impl Sink for Writer<'_> {
    fn message(&mut self, message: &Message<'_>) {
        if message.trust == Trust::Suspect {
            if !self.keep.keeps(message.trust) {
                self.summary.suspect_dropped += 1;
                return;
            }
            self.summary.suspect_kept += 1;
        }
        let format = message.format;
        let added = self.summary.formats_added.len();
        if !self.declare(format) {
            self.summary.messages_undefinable += 1;
            return;
        }
        if self.summary.formats_added.len() > added {
            self.declare_units(format);
        }
        self.reached.store(message.offset, Ordering::Relaxed);
        if self.input_end != Some(message.offset) {
            self.anchors.push((message.offset, self.len()));
        }
        self.input_end = Some(message.offset + message.bytes.len() as u64);
        self.out.extend_from_slice(message.bytes);
        self.summary.messages_kept += 1;
        if let Some(t) = message.time_us() {
            self.last_time = t;
        }
        match format.role {
            Role::Fmt if format.defines_formats() => self.note_definition(message),
            Role::Unit | Role::Mult | Role::Fmtu => self.note_units(message),
            _ => {}
        }
        self.pass_on(false);
    }
}

/// Salvage `data`: its messages read in step (suspect ones too) as a clean log held in memory,
/// and the report of what the input held. `formats` is the table the scan starts from: FMT alone, or definitions borrowed
/// from a donor.
pub fn salvage(path: &str, data: &[u8], formats: Formats) -> (DataflashReport, Salvaged) {
    let mut bytes = Vec::new();
    let (report, summary) = salvage_into(
        path,
        data,
        formats,
        Keep::All,
        &AtomicU64::new(0),
        &mut bytes,
    )
    .expect("writing to memory cannot fail");
    (report, Salvaged { summary, bytes })
}

/// [`salvage`], keeping the messages `keep` asks for, writing the clean log to `to` as the scan
/// goes, and noting in `reached` the input offset it has reached. Stops writing at the first
/// error of `to`, and returns it.
pub fn salvage_into(
    path: &str,
    data: &[u8],
    formats: Formats,
    keep: Keep,
    reached: &AtomicU64,
    to: &mut dyn Write,
) -> io::Result<(DataflashReport, SalvageSummary)> {
    let mut writer = Writer::new(&formats, keep, to, reached);
    let mut observer = Observer::default();
    let scan = scan_with(
        data,
        Rules::Thorough,
        formats,
        &mut (&mut observer, &mut writer),
    );
    let report = build(path, data, scan, observer);
    writer.pass_on(true);
    // Read as a text-mode copy, the output would have its line feeds doubted: it says they
    // were checked (unless the input was read as such a copy, or says so already). Salvaged from
    // a copy, it keeps the messages holding line feeds as suspect: it says they are in doubt
    // where its counts would not show it to be a copy.
    let converted = shows_copy(&writer.newlines, || writer.line_feed_lengths);
    let input_copy = copied_in_text_mode(data);
    if converted && !input_copy && !says_line_feeds_stand(data) {
        writer.mark_line_feeds(LINE_FEEDS_CHECKED);
        writer.pass_on(true);
    } else if input_copy
        && !converted
        && writer.newlines.line_feeds() > 0
        && !says_line_feeds_in_doubt(data)
    {
        writer.mark_line_feeds(LINE_FEEDS_IN_DOUBT);
        writer.pass_on(true);
    }
    if let Some(e) = writer.error {
        return Err(e);
    }
    let end = writer.len();
    let mut summary = writer.summary;
    summary.dropped = report
        .file
        .corrupt_spans
        .iter()
        .map(|span| DroppedSpan {
            input_start: span.start,
            input_end: span.end,
            reason: span.reason.as_str(),
            output_offset: writer
                .anchors
                .iter()
                .find(|&&(input, _)| input >= span.end)
                .map_or(end, |&(_, output)| output),
        })
        .collect();
    Ok((report, summary))
}

/// The format table a donor log defines by its end, to start a scan from with `--fmt-from`,
/// noting in `reached` the offset the scan has reached.
pub fn donor_formats(donor: &[u8], reached: &AtomicU64) -> Formats {
    scan_with(donor, Rules::Thorough, Formats::new(), &mut Noting(reached)).formats
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::dataflash::{fmt, message};

    fn log() -> Vec<u8> {
        let mut log = fmt(0x40, 11, "TST", "Q", "TimeUS");
        log.extend(fmt(0x41, 7, "TWO", "I", "Value"));
        for t in 0..20u64 {
            log.extend(message(0x40, &(1000 + t).to_le_bytes()));
            log.extend(message(0x41, &(t as u32).to_le_bytes()));
        }
        log
    }

    /// A writer that records the size of every write.
    #[derive(Default)]
    struct Pieces {
        bytes: Vec<u8>,
        largest: usize,
        count: usize,
    }

    impl Write for Pieces {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.bytes.extend_from_slice(buf);
            self.largest = self.largest.max(buf.len());
            self.count += 1;
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_long_log_is_written_out_as_it_goes() {
        let data = crate::testkit::dataflash::flight(3, 900);
        assert!(data.len() > 2 << 20, "{} bytes", data.len());
        let mut pieces = Pieces::default();
        let reached = AtomicU64::new(0);
        let (report, summary) =
            salvage_into("t", &data, Formats::new(), Keep::All, &reached, &mut pieces).unwrap();
        assert!(report.file.is_clean());
        assert_eq!(pieces.bytes, data);
        assert_eq!(summary.messages_kept, report.dataflash.messages);
        assert!(pieces.count > 16, "{} writes", pieces.count);
        assert!(
            pieces.largest <= 2 * PIECE,
            "a write of {} bytes",
            pieces.largest
        );
        assert!(reached.load(Ordering::Relaxed) as usize > data.len() - 1024);
    }

    #[test]
    fn a_clean_log_salvages_to_its_messages() {
        let mut input = log();
        let messages = input.clone();
        input.extend([0xFF; 300]);
        let (report, salvaged) = salvage("t", &input, Formats::new());
        assert!(report.is_clean());
        assert_eq!(salvaged.bytes, messages);
        assert!(salvaged.summary.formats_added.is_empty());
        assert!(salvaged.summary.dropped.is_empty());
    }

    #[test]
    fn a_lost_fmt_is_written_again_before_the_first_message() {
        // The first FMT is garbled; a FMT for the type later in the file defines it.
        let mut input = log();
        input[10] = b'x';
        input.extend(fmt(0x40, 11, "TST", "Q", "TimeUS"));
        input.extend(message(0x40, &5000u64.to_le_bytes()));
        let (_, salvaged) = salvage("t", &input, Formats::new());
        assert!(
            salvaged.summary.formats_added.is_empty(),
            "no definition yet"
        );
        // From a donor's table, the type is defined from the start.
        let donor = donor_formats(&log(), &AtomicU64::new(0));
        let (report, salvaged) = salvage("t", &input, donor);
        assert_eq!(salvaged.summary.formats_added, ["TST"]);
        let (again, resalvaged) = salvage("t", &salvaged.bytes, Formats::new());
        assert!(again.is_clean(), "{:?}", again.file.corrupt_spans);
        assert_eq!(resalvaged.bytes, salvaged.bytes, "idempotent");
        assert_eq!(
            again.dataflash.counts["TST"],
            report.dataflash.counts["TST"]
        );
        assert_eq!(again.dataflash.counts["TST"], 21);
        assert_eq!(salvaged.summary.dropped.len(), 1);
        assert_eq!(salvaged.summary.dropped[0].input_start, 0);
    }

    /// `log()` with units: UNIT, MULT and FMTU definitions, the ids TST uses and its FMTU.
    fn log_with_units() -> Vec<u8> {
        let body = log();
        let mut log = fmt(0x51, 76, "UNIT", "QbZ", "TimeUS,Id,Label");
        log.extend(fmt(0x52, 20, "MULT", "Qbd", "TimeUS,Id,Mult"));
        log.extend(fmt(
            0x53,
            44,
            "FMTU",
            "QBNN",
            "TimeUS,FmtType,UnitIds,MultIds",
        ));
        let mut unit = 0u64.to_le_bytes().to_vec();
        unit.push(b's');
        unit.extend(b"s".iter().chain([0u8; 63].iter()));
        log.extend(message(0x51, &unit));
        let mut mult = 0u64.to_le_bytes().to_vec();
        mult.push(b'F');
        mult.extend(1e-6f64.to_le_bytes());
        log.extend(message(0x52, &mult));
        let first_data = 2 * 89;
        log.extend(&body[..first_data]);
        let mut fmtu = 0u64.to_le_bytes().to_vec();
        fmtu.push(0x40);
        fmtu.extend(b"s".iter().chain([0u8; 15].iter()));
        fmtu.extend(b"F".iter().chain([0u8; 15].iter()));
        log.extend(message(0x53, &fmtu));
        log.extend(&body[first_data..]);
        log
    }

    #[test]
    fn borrowed_formats_bring_their_units() {
        let whole = log_with_units();
        let donor = donor_formats(&whole, &AtomicU64::new(0));
        let tst = donor.get(0x40).unwrap();
        assert_eq!(donor.column_units(tst).unwrap(), ["s"]);
        // Everything before the first TST message is lost.
        let at = whole
            .windows(3)
            .position(|w| w == [0xA3, 0x95, 0x40])
            .unwrap();
        let (_, salvaged) = salvage("t", &whole[at..], donor.clone());
        assert_eq!(
            salvaged.summary.formats_added,
            ["TST", "UNIT", "MULT", "FMTU", "TWO"]
        );
        let table = donor_formats(&salvaged.bytes, &AtomicU64::new(0));
        let tst = table.get(0x40).unwrap();
        assert_eq!(table.column_units(tst).unwrap(), ["s"]);
        assert_eq!(table.column_multipliers(tst).unwrap(), [Some(1e-6)]);
        // Without units in the donor, the definition comes alone.
        let (_, salvaged) = salvage(
            "t",
            &log()[2 * 89..],
            donor_formats(&log(), &AtomicU64::new(0)),
        );
        assert_eq!(salvaged.summary.formats_added, ["TST", "TWO"]);
    }

    #[test]
    fn fmt_messages_round_trip_through_the_table() {
        let bytes = fmt(0x41, 7, "TWO", "I", "Value");
        let formats = donor_formats(&bytes, &AtomicU64::new(0));
        let two = formats.get(0x41).unwrap();
        assert_eq!(fmt_message(&Format::fmt(), two).unwrap(), bytes);
        // A name longer than the layout's 4 characters cannot be written.
        let mut long = two.clone();
        long.name = "TOOLONG".into();
        assert!(fmt_message(&Format::fmt(), &long).is_none());
    }
}
