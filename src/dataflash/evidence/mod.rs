//! The evidence the DataFlash reader weighs, one rule a file. Each says what it sees, its
//! threshold, how it was calibrated and the level of trust it yields:
//!
//! - corrupt (structural: the bytes cannot be read in step, they are reported as a corrupt span):
//!   a message must end where another starts, the end of the data or its padding; its type must
//!   be defined; its `TimeUS` must fit the messages around it. These live in the reader's scan.
//! - in a text-mode copy, a message holding a [`line_feed`] is suspect where it lies in a value
//!   (the byte may have been a carriage return), and refused where it lies in the header, the
//!   time or a definition.
//! - suspect (value evidence only: the message ends in step and is kept, marked): [`value_range`]
//!   and [`not_a_number`], on the float columns of each (type, instance), learned from the
//!   messages accepted before it in the log, and [`physical_range`] on the columns whose FMTU
//!   unit bounds them. A message spliced from the head of one and the tail of another that ends
//!   in step carries the tail's bytes as values: floats of 1e-38 or 1e10, NaN, a latitude of
//!   -178°.
//!
//! Integer columns are not judged by a learned range: on clean logs they leave rest (0) for
//! values up to 2^16 at once (flags, angles in centidegrees, counters), so it says little.
//! `tests/suite/clean_flights.rs` holds the calibration: on every clean real log no rule fires.

pub mod line_feed;
pub mod not_a_number;
pub mod physical_range;
pub mod value_range;

use super::fmt::{FieldType, Format, Formats, HEADER_LEN, Role};
use super::message::{Message, f16_to_f32, field};
use crate::report::Evidence;

/// Values a column must have held before one is judged against them.
pub const MIN_VALUES: u32 = 8;

/// Instances of one type whose columns are learned; messages of further instances (a garbled
/// instance number, say) are not judged.
pub const MAX_INSTANCES: usize = 32;

/// What the values of one float column have been.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Column {
    /// Values seen.
    pub values: u32,
    /// The largest magnitude of a finite value, taken as at least 1: a value below it needs no
    /// judging.
    pub top: f64,
    /// Whether a finite value other than zero was seen: a column that held nothing but zeros
    /// shows no scale, and is judged against a higher bar.
    pub scaled: bool,
    /// Whether a value was NaN or infinite.
    pub not_finite: bool,
}

impl Default for Column {
    fn default() -> Self {
        Column {
            values: 0,
            top: 1.0,
            scaled: false,
            not_finite: false,
        }
    }
}

impl Column {
    /// Take `x` into what the column has held.
    #[inline]
    pub fn learn(&mut self, x: f64) {
        self.values = self.values.saturating_add(1);
        if x.is_finite() {
            self.top = self.top.max(x.abs());
            self.scaled |= x != 0.0;
        } else {
            self.not_finite = true;
        }
    }
}

/// The columns learned for one instance of a type.
#[derive(Debug, Clone)]
struct Instance {
    id: u8,
    /// One a float column of the layout.
    columns: Vec<Column>,
    /// One a bounded column of the layout.
    held: Vec<physical_range::Held>,
    /// One a number column of the layout, learned in text-mode copies only.
    recent: Vec<line_feed::Recent>,
}

/// A column whose unit bounds its values.
#[derive(Debug, Clone, Copy)]
struct Bounded {
    column: usize,
    offset: usize,
    ty: FieldType,
    /// What one step of the stored value is worth in the unit.
    multiplier: f64,
    /// The values the unit allows.
    bounds: (f64, f64),
}

/// Where a type's judged values lie in its body.
#[derive(Debug, Clone, Default)]
struct Layout {
    /// Column index, byte offset and type of each float column.
    floats: Vec<(usize, usize, FieldType)>,
    /// Byte offset and type of the instance column (FMTU's `#`).
    instance: Option<(usize, FieldType)>,
    /// Byte offset and type of each number column but the time and the instance.
    numbers: Vec<(usize, FieldType)>,
    /// Each column whose unit bounds its values.
    bounded: Vec<Bounded>,
    /// Whether the layout was read with the type's FMTU units known.
    with_units: bool,
}

impl Layout {
    /// The layout of `format`, its units read in `formats`: empty when its messages are not
    /// judged (a name among its columns: a parameter's, say, with unrelated quantities in one
    /// column).
    #[cold]
    fn of(format: &Format, formats: &Formats) -> Layout {
        let mut layout = Layout {
            with_units: format.unit_ids.is_some(),
            ..Layout::default()
        };
        if format.role != Role::Data || format.fields.iter().any(|f| f.is_text()) {
            return layout;
        }
        let mut units = format.unit_ids.as_deref().unwrap_or("").chars();
        let mut multipliers = format.mult_ids.as_deref().unwrap_or("").chars();
        let timed = format.time_us || format.time_ms;
        let mut offset = 0;
        for (i, &field) in format.fields.iter().enumerate() {
            let unit = units.next();
            let multiplier = multipliers
                .next()
                .and_then(|id| formats.multipliers.get(&id));
            let bounds = unit.and_then(|id| physical_range::bounds(formats.unit_labels(id)));
            if let (Some(bounds), Some(&multiplier)) = (bounds, multiplier)
                && field != FieldType::Int16Array
            {
                // ArduPilot's `-` multiplier, 0, means none.
                let multiplier = if multiplier == 0.0 { 1.0 } else { multiplier };
                layout.bounded.push(Bounded {
                    column: i,
                    offset,
                    ty: field,
                    multiplier,
                    bounds,
                });
            }
            if field.is_float() {
                layout.floats.push((i, offset, field));
            } else if unit == Some('#') && layout.instance.is_none() {
                layout.instance = Some((offset, field));
                offset += field.size();
                continue;
            }
            if !(i == 0 && timed) && field != FieldType::Int16Array {
                layout.numbers.push((offset, field));
            }
            offset += field.size();
        }
        layout
    }
}

/// What is learned about one type.
#[derive(Debug, Clone, Default)]
struct Learned {
    layout: Option<Layout>,
    instances: Vec<Instance>,
}

impl Learned {
    /// The layout of the type's messages, `format`, its units read in `formats`: read anew
    /// when FMTU named the units after the first messages.
    #[inline]
    fn layout(&mut self, format: &Format, formats: &Formats) -> &Layout {
        let with_units = format.unit_ids.is_some();
        if self
            .layout
            .as_ref()
            .is_none_or(|l| l.with_units != with_units)
        {
            self.layout = Some(Layout::of(format, formats));
        }
        self.layout.get_or_insert_with(Layout::default)
    }

    /// The layout (once [`Learned::layout`] read it), the instance `body` names and what was
    /// learned of that instance; none for an instance past [`MAX_INSTANCES`].
    #[inline(always)]
    fn instance(&mut self, body: &[u8]) -> Option<(&Layout, Option<u8>, &mut Instance)> {
        let layout = self.layout.as_ref()?;
        let value_at = |offset: usize, ty: FieldType| Some(field(ty, body.get(offset..)?).ok()?.1);
        let instance = match layout.instance {
            Some((offset, ty)) => Some(u8::try_from(value_at(offset, ty)?.as_integer()?).ok()?),
            None => None,
        };
        let id = instance.unwrap_or(0);
        let at = match self.instances.iter().position(|i| i.id == id) {
            Some(at) => at,
            None if self.instances.len() < MAX_INSTANCES => {
                self.instances.push(Instance {
                    id,
                    columns: Vec::new(),
                    held: Vec::new(),
                    recent: Vec::new(),
                });
                self.instances.len() - 1
            }
            None => return None,
        };
        Some((layout, instance, &mut self.instances[at]))
    }
}

/// Judges the float columns of each message against what the log's earlier messages of its type
/// and instance held, and the bounded ones against their units, and learns from every accepted
/// message (a suspect one too, so that a
/// lasting change is doubted once, and a salvaged log that keeps it is judged the same).
#[derive(Debug, Clone)]
pub struct Judge {
    types: Vec<Learned>,
    /// The time of the messages accepted in a text-mode copy, whatever their type.
    clock: line_feed::Recent,
}

impl Default for Judge {
    fn default() -> Self {
        Judge {
            types: vec![Learned::default(); 256],
            clock: line_feed::Recent::default(),
        }
    }
}

impl Judge {
    /// Forget a type's columns: it was redefined.
    pub fn forget_type(&mut self, type_id: u8) {
        self.types[usize::from(type_id)] = Learned::default();
    }

    /// Forget everything: a new log starts.
    pub fn forget_all(&mut self) {
        self.types.fill(Learned::default());
        self.clock = line_feed::Recent::default();
    }

    /// The evidence against `message`'s values, if any; then learn them. `formats` holds the
    /// units.
    pub fn judge(&mut self, message: &Message<'_>, formats: &Formats) -> Option<Evidence> {
        let format = message.format;
        let learned = &mut self.types[usize::from(format.type_id)];
        let layout = learned.layout(format, formats);
        if layout.floats.is_empty() && layout.bounded.is_empty() {
            return None;
        }
        let body = message.body();
        let (layout, instance, learned) = learned.instance(body)?;
        let field = |i: usize| column_name(&format.name, instance, format.columns.get(i));
        let columns = &mut learned.columns;
        columns.resize(layout.floats.len(), Column::default());
        let mut evidence = None;
        for (column, &(i, offset, ty)) in columns.iter_mut().zip(&layout.floats) {
            let Some(x) = float_at(body, offset, ty) else {
                continue;
            };
            // Most values lie inside what their column held: nothing to judge (NaN compares false).
            let inside = x.abs() < column.top;
            let judged = !inside && column.values >= MIN_VALUES;
            if judged && evidence.is_none() {
                let signalling = || not_a_number::signalling_nan(body, offset, ty);
                evidence = match not_a_number::judge(column, x, signalling) {
                    Some(rule) => Some(Evidence::seen(rule, Some(field(i)))),
                    None => value_range::judge(column, x).map(|(octaves, threshold)| {
                        Evidence::new(value_range::RULE, Some(field(i)), octaves, threshold)
                    }),
                };
            }
            column.learn(x);
        }
        let held = &mut learned.held;
        held.resize(layout.bounded.len(), Default::default());
        for (held, b) in held.iter_mut().zip(&layout.bounded) {
            let Some(x) = number_at(body, b.offset, b.ty) else {
                continue;
            };
            if let Some((value, bound)) = held.judge(b.bounds, x * b.multiplier)
                && evidence.is_none()
            {
                evidence = Some(Evidence::new(
                    physical_range::RULE,
                    Some(field(b.column)),
                    value,
                    bound,
                ));
            }
        }
        evidence
    }

    /// Learn the number columns of `message`, whose values are not in doubt, to read the line
    /// feeds of a text-mode copy by (see [`line_feed`]).
    pub fn learn_numbers(&mut self, message: &Message<'_>, formats: &Formats) {
        let format = message.format;
        let learned = &mut self.types[usize::from(format.type_id)];
        if learned.layout(format, formats).numbers.is_empty() {
            return;
        }
        let body = message.body();
        let Some((layout, _, learned)) = learned.instance(body) else {
            return;
        };
        learned
            .recent
            .resize(layout.numbers.len(), Default::default());
        for (recent, &(offset, ty)) in learned.recent.iter_mut().zip(&layout.numbers) {
            if let Some(x) = number_at(body, offset, ty) {
                recent.learn(x);
            }
        }
    }

    /// Read the line feeds of `message` (in a text-mode copy, every one in a number) by its
    /// columns' last values, and its time by the time of the messages before (see
    /// [`line_feed`]): true, with the message as it reads into `restored`, when a reading stands
    /// for each.
    pub fn read_line_feeds(
        &mut self,
        message: &Message<'_>,
        formats: &Formats,
        restored: &mut [u8],
    ) -> bool {
        let format = message.format;
        let bytes = message.bytes;
        let Some(restored) = restored.get_mut(..bytes.len()) else {
            return false;
        };
        restored.copy_from_slice(bytes);
        let clock = self.clock;
        // The time, in microseconds, if the first column holds it.
        let time = match (format.time_us, format.time_ms, format.fields.first()) {
            (true, _, Some(&ty)) => Some((ty, 1.0)),
            (false, true, Some(&ty)) => Some((ty, 1000.0)),
            _ => None,
        };
        let learned = &mut self.types[usize::from(format.type_id)];
        learned.layout(format, formats);
        let Some((layout, _, learned)) = learned.instance(message.body()) else {
            return false;
        };
        let mut line_feeds = memchr::memchr_iter(b'\n', bytes).peekable();
        while let Some(&at) = line_feeds.peek() {
            let holds = |offset: usize, ty: FieldType| {
                (HEADER_LEN + offset..HEADER_LEN + offset + ty.size()).contains(&at)
            };
            let (offset, ty, recent, scale, is_time) = match time {
                Some((ty, scale)) if holds(0, ty) => (0, ty, clock, scale, true),
                _ => {
                    let Some(column) = layout.numbers.iter().position(|&(o, ty)| holds(o, ty))
                    else {
                        return false;
                    };
                    let (offset, ty) = layout.numbers[column];
                    let recent = learned.recent.get(column).copied().unwrap_or_default();
                    (offset, ty, recent, 1.0, false)
                }
            };
            let (start, end) = (HEADER_LEN + offset, HEADER_LEN + offset + ty.size());
            let mut held = [0usize; line_feed::MAX_LINE_FEEDS_READ];
            let mut count = 0;
            while let Some(&at) = line_feeds.peek().filter(|&&at| at < end) {
                if count == held.len() {
                    return false;
                }
                held[count] = at - start;
                count += 1;
                line_feeds.next();
            }
            let value = |choice: usize| {
                let mut raw = [0u8; 8];
                raw[..ty.size()].copy_from_slice(&bytes[start..end]);
                for (bit, &at) in held[..count].iter().enumerate() {
                    if choice >> bit & 1 == 1 {
                        raw[at] = b'\r';
                    }
                }
                number_at(&raw, 0, ty).map_or(f64::NAN, |x| x * scale)
            };
            let mut readings = [0f64; 1 << line_feed::MAX_LINE_FEEDS_READ];
            let readings = &mut readings[..1 << count];
            for (choice, reading) in readings.iter_mut().enumerate() {
                *reading = value(choice);
            }
            let Some(choice) = recent.reading(readings, ty, is_time) else {
                return false;
            };
            for (bit, &at) in held[..count].iter().enumerate() {
                if choice >> bit & 1 == 1 {
                    restored[start + at] = b'\r';
                }
            }
        }
        true
    }

    /// Note that `message` is kept with line feeds left in doubt: its columns learn nothing from
    /// it, and may have moved further by the next message of its type and instance.
    pub fn miss(&mut self, message: &Message<'_>, formats: &Formats) {
        let learned = &mut self.types[usize::from(message.format.type_id)];
        learned.layout(message.format, formats);
        if let Some((_, _, learned)) = learned.instance(message.body()) {
            learned.recent.iter_mut().for_each(line_feed::Recent::miss);
        }
    }

    /// Learn the time, in microseconds, of a message accepted in a text-mode copy.
    pub fn learn_clock(&mut self, time_us: u64) {
        self.clock.learn(time_us as f64);
    }
}

/// The number of type `ty` at `offset` in `body`, as a float.
#[inline]
fn number_at(body: &[u8], offset: usize, ty: FieldType) -> Option<f64> {
    use FieldType as T;
    let bytes = |n: usize| body.get(offset..offset.checked_add(n)?);
    Some(match ty {
        T::I8 => i8::from_le_bytes(bytes(1)?.try_into().ok()?).into(),
        T::U8 | T::FlightMode => bytes(1)?[0].into(),
        T::I16 | T::I16Centi => i16::from_le_bytes(bytes(2)?.try_into().ok()?).into(),
        T::U16 | T::U16Centi => u16::from_le_bytes(bytes(2)?.try_into().ok()?).into(),
        T::I32 | T::I32Centi | T::LatLon => i32::from_le_bytes(bytes(4)?.try_into().ok()?).into(),
        T::U32 | T::U32Centi => u32::from_le_bytes(bytes(4)?.try_into().ok()?).into(),
        T::I64 => i64::from_le_bytes(bytes(8)?.try_into().ok()?) as f64,
        T::U64 => u64::from_le_bytes(bytes(8)?.try_into().ok()?) as f64,
        T::F32 | T::F64 | T::F16 => float_at(body, offset, ty)?,
        T::Char4 | T::Char16 | T::Char64 | T::Int16Array => return None,
    })
}

/// The float of type `ty` at `offset` in `body`.
#[inline]
fn float_at(body: &[u8], offset: usize, ty: FieldType) -> Option<f64> {
    let bytes = |n: usize| body.get(offset..offset.checked_add(n)?);
    match ty {
        FieldType::F32 => Some(f32::from_le_bytes(bytes(4)?.try_into().ok()?).into()),
        FieldType::F64 => Some(f64::from_le_bytes(bytes(8)?.try_into().ok()?)),
        FieldType::F16 => Some(f16_to_f32(u16::from_le_bytes(bytes(2)?.try_into().ok()?)).into()),
        _ => None,
    }
}

/// A column as evidence names it: `TYPE.Column`, or `TYPE[instance].Column` (a FMT may name fewer
/// columns than it has fields: `TYPE.?`).
fn column_name(type_name: &str, instance: Option<u8>, column: Option<&String>) -> String {
    let column = column.map_or("?", String::as_str);
    match instance {
        Some(i) => format!("{type_name}[{i}].{column}"),
        None => format!("{type_name}.{column}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataflash::fmt::Definition;
    use crate::report::{Rule, Trust};
    use crate::testkit::dataflash::message;

    /// `VIBE` (`QBf`: time, IMU instance, a float), with FMTU's unit ids if any.
    fn vibe(units: Option<&str>) -> Format {
        let definition = Definition {
            type_value: 0x50,
            length: 16,
            name: b"VIBE",
            format: b"QBf",
            columns: b"TimeUS,IMU,VibeX",
        };
        let (mut format, _) = Format::define(&definition, None).unwrap();
        format.unit_ids = units.map(str::to_owned);
        format
    }

    /// The evidence against each of `values` (instance, value), judged in turn.
    fn judge_all(format: &Format, values: &[(u8, f32)]) -> Vec<Option<Evidence>> {
        let mut judge = Judge::default();
        let mut time = 0u64;
        values
            .iter()
            .map(|&(imu, x)| {
                time += 1000;
                let mut body = time.to_le_bytes().to_vec();
                body.push(imu);
                body.extend(x.to_le_bytes());
                let bytes = message(0x50, &body);
                let message = Message {
                    offset: 0,
                    format,
                    bytes: &bytes,
                    trust: Trust::Trusted,
                };
                judge.judge(&message, &Formats::default())
            })
            .collect()
    }

    #[test]
    fn each_instance_has_its_own_range() {
        // IMU 0 reads about 1, IMU 1 about a million; then IMU 0 reads a million.
        let mut values: Vec<(u8, f32)> = (0..20)
            .map(|i| if i % 2 == 0 { (0, 1.0) } else { (1, 1e6) })
            .collect();
        values.push((0, 1e6));
        let judged = judge_all(&vibe(Some("s#-")), &values);
        assert!(judged[..20].iter().all(Option::is_none), "{judged:?}");
        let last = judged[20].as_ref().unwrap();
        assert_eq!(last.rule, Rule::ValueRange);
        assert_eq!(last.field.as_deref(), Some("VIBE[0].VibeX"));
        assert_eq!((last.offset, last.threshold), (19, 16));
        // Without FMTU the instances share the column: a million is nothing new.
        let shared = judge_all(&vibe(None), &values);
        assert!(shared.iter().all(Option::is_none), "{shared:?}");
    }

    #[test]
    fn a_column_is_judged_once_it_has_held_enough_values() {
        let mut values = vec![(0, 1.0); MIN_VALUES as usize - 1];
        values.push((0, 1e9));
        assert!(judge_all(&vibe(None), &values).iter().all(Option::is_none));
        values.insert(0, (0, 1.0));
        assert!(judge_all(&vibe(None), &values).last().unwrap().is_some());
    }

    /// `ALT` (`QIf`: time, an altitude in cm, a float rate), its messages of `(cm, rate)`.
    fn altitudes(values: &[(u32, f32)]) -> (Format, Vec<Vec<u8>>) {
        let definition = Definition {
            type_value: 0x51,
            length: 3 + 8 + 4 + 4,
            name: b"ALT",
            format: b"QIf",
            columns: b"TimeUS,Alt,Rate",
        };
        let (format, _) = Format::define(&definition, None).unwrap();
        let messages = values
            .iter()
            .enumerate()
            .map(|(i, &(alt, rate))| {
                let mut body = (1000 * i as u64).to_le_bytes().to_vec();
                body.extend(alt.to_le_bytes());
                body.extend(rate.to_le_bytes());
                message(0x51, &body)
            })
            .collect();
        (format, messages)
    }

    /// Learn every message but the last of `values`, then read the last one's line feeds.
    fn read_last(values: &[(u32, f32)]) -> Option<Vec<u8>> {
        let (format, messages) = altitudes(values);
        let mut judge = Judge::default();
        let of = |bytes| Message {
            offset: 0,
            format: &format,
            bytes,
            trust: Trust::Trusted,
        };
        let (last, learned) = messages.split_last().unwrap();
        for bytes in learned {
            judge.learn_numbers(&of(bytes), &Formats::default());
        }
        let mut restored = [0; 256];
        judge
            .read_line_feeds(&of(last), &Formats::default(), &mut restored)
            .then(|| restored[..last.len()].to_vec())
    }

    #[test]
    fn a_line_feed_reads_as_the_value_that_continues_its_column() {
        // The altitude climbs by 1 cm a message to 0x0D_0105 (a carriage return, copied as a
        // line feed, in its third byte): the line feed reading, 0x0A_0105, lies 196,608 cm off.
        let climb = |to: u32| (to - 20..=to).map(|alt| (alt, 0.5)).collect::<Vec<_>>();
        let mut values = climb(0x0D_0105);
        let (_, clean) = altitudes(&values);
        let last = values.len() - 1;
        values[last].0 = 0x0A_0105;
        let restored = read_last(&values).expect("the carriage return reading stands");
        assert_eq!(restored, clean[last]);
        // A true line feed stands as read.
        let values = climb(0x0A_0105);
        let (_, clean) = altitudes(&values);
        assert_eq!(read_last(&values).as_deref(), Some(&clean[last][..]));
    }

    #[test]
    fn a_line_feed_whose_readings_both_fit_stays_in_doubt() {
        // In the lowest byte the readings are 3 cm apart: the column moves by 4 a message.
        let values: Vec<(u32, f32)> = (0..11).map(|i| (0xE2 + 4 * i, 0.5)).collect();
        assert_eq!(values[10].0, 0x010A);
        assert_eq!(read_last(&values), None);
        // Nor does a column learned from too few messages decide anything.
        let few = vec![(0x0A_0105, 0.5); MIN_VALUES as usize - 1];
        assert_eq!(read_last(&few[..]), None);
    }
}
