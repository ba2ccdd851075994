//! One message: its bytes, the format it was read with, and its fields unpacked on demand.
//!
//! Unpacking borrows from the file: integers and floats are decoded as they are iterated, character
//! arrays and `int16[32]` arrays stay byte slices. Nothing here allocates per message.

use super::fmt::{Definition, FieldType, Format, HEADER_LEN, cut_at_nul, decode_name};
use crate::report::Trust;
use nom::IResult;
use nom::bytes::complete::take;
use nom::number::complete::{
    le_f32, le_f64, le_i8, le_i16, le_i32, le_i64, le_u8, le_u16, le_u32, le_u64,
};
use std::fmt::{self, Write as _};

/// An accepted message.
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    /// Absolute offset of the `0xA3` byte.
    pub offset: u64,
    /// The format it was read with.
    pub format: &'a Format,
    /// The whole message, header included (`format.message_len()` bytes).
    pub bytes: &'a [u8],
    /// Whether its values are trusted or in doubt (it ends in step either way).
    pub trust: Trust,
}

impl<'a> Message<'a> {
    /// The bytes after the 3-byte header.
    #[inline]
    pub fn body(&self) -> &'a [u8] {
        self.bytes.get(HEADER_LEN..).unwrap_or_default()
    }

    /// The stored values, one per format character.
    #[inline]
    pub fn fields(&self) -> Fields<'a> {
        Fields::new(&self.format.fields, self.body())
    }

    /// The `TimeUS` of the message, when its first column is one.
    #[inline]
    pub fn time_us(&self) -> Option<u64> {
        if !self.format.time_us {
            return None;
        }
        self.first_integer()
    }

    /// The time of the flight controller's clock the message carries, in microseconds: its
    /// `TimeUS`, or its `TimeMS` (older logs) in microseconds.
    #[inline]
    pub fn clock_us(&self) -> Option<u64> {
        match (self.format.time_us, self.format.time_ms) {
            (true, _) => self.first_integer(),
            (false, true) => self.first_integer()?.checked_mul(1000),
            (false, false) => None,
        }
    }

    /// The first field, when it is a non-negative integer.
    #[inline]
    fn first_integer(&self) -> Option<u64> {
        let (_, first) = field(*self.format.fields.first()?, self.body()).ok()?;
        u64::try_from(first.as_integer()?).ok()
    }
}

/// One stored value, unscaled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    Signed(i64),
    Unsigned(u64),
    /// `f`, and `g` (float16) widened exactly.
    F32(f32),
    F64(f64),
    /// A character array, whole (NUL padding included).
    Text(&'a [u8]),
    /// `a`: 32 little-endian int16 values.
    Int16Array(&'a [u8]),
}

impl<'a> Value<'a> {
    /// The value of an integer field.
    pub fn as_integer(self) -> Option<i128> {
        match self {
            Value::Signed(v) => Some(v.into()),
            Value::Unsigned(v) => Some(v.into()),
            _ => None,
        }
    }

    /// The bytes of a character array.
    pub fn as_text(self) -> Option<&'a [u8]> {
        match self {
            Value::Text(t) => Some(t),
            _ => None,
        }
    }

    /// The value of a float field.
    pub fn as_float(self) -> Option<f64> {
        match self {
            Value::F32(v) => Some(v.into()),
            Value::F64(v) => Some(v),
            _ => None,
        }
    }
}

/// Widen an IEEE 754 half-precision value to `f32` (exact: every half is an `f32`).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = u32::from((h >> 10) & 0x1F);
    let mantissa = u32::from(h & 0x3FF);
    match exponent {
        // Zero and subnormals: mantissa × 2^-24, exact in f32.
        0 => sign * (mantissa as f32) * (1.0 / 16_777_216.0),
        0x1F => f32::from_bits((u32::from(h & 0x8000) << 16) | 0x7F80_0000 | (mantissa << 13)),
        _ => f32::from_bits(
            (u32::from(h & 0x8000) << 16) | ((exponent + 112) << 23) | (mantissa << 13),
        ),
    }
}

/// Parse one field of type `ty`.
#[inline]
pub fn field(ty: FieldType, input: &[u8]) -> IResult<&[u8], Value<'_>, ()> {
    use FieldType as T;
    match ty {
        T::I8 => le_i8(input).map(|(r, v)| (r, Value::Signed(v.into()))),
        T::U8 | T::FlightMode => le_u8(input).map(|(r, v)| (r, Value::Unsigned(v.into()))),
        T::I16 | T::I16Centi => le_i16(input).map(|(r, v)| (r, Value::Signed(v.into()))),
        T::U16 | T::U16Centi => le_u16(input).map(|(r, v)| (r, Value::Unsigned(v.into()))),
        T::I32 | T::I32Centi | T::LatLon => {
            le_i32(input).map(|(r, v)| (r, Value::Signed(v.into())))
        }
        T::U32 | T::U32Centi => le_u32(input).map(|(r, v)| (r, Value::Unsigned(v.into()))),
        T::I64 => le_i64(input).map(|(r, v)| (r, Value::Signed(v))),
        T::U64 => le_u64(input).map(|(r, v)| (r, Value::Unsigned(v))),
        T::F32 => le_f32(input).map(|(r, v)| (r, Value::F32(v))),
        T::F64 => le_f64(input).map(|(r, v)| (r, Value::F64(v))),
        T::F16 => le_u16(input).map(|(r, v)| (r, Value::F32(f16_to_f32(v)))),
        T::Char4 | T::Char16 | T::Char64 => {
            take(ty.size())(input).map(|(r, v)| (r, Value::Text(v)))
        }
        T::Int16Array => take(ty.size())(input).map(|(r, v)| (r, Value::Int16Array(v))),
    }
}

/// The values of a message body, in format order. Stops early if the body is short.
#[derive(Debug, Clone)]
pub struct Fields<'a> {
    types: std::slice::Iter<'a, FieldType>,
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    pub fn new(types: &'a [FieldType], body: &'a [u8]) -> Self {
        Fields {
            types: types.iter(),
            rest: body,
        }
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Value<'a>;

    #[inline]
    fn next(&mut self) -> Option<Value<'a>> {
        let &ty = self.types.next()?;
        let (rest, value) = field(ty, self.rest).ok()?;
        self.rest = rest;
        Some(value)
    }
}

/// The 32 values of an `int16[32]` field.
pub fn int16_array(bytes: &[u8]) -> impl Iterator<Item = i16> + '_ {
    bytes
        .chunks_exact(2)
        .map(|pair| i16::from_le_bytes([pair[0], pair[1]]))
}

/// A character array as text: cut at the first NUL, UTF-8 when the whole array is UTF-8,
/// otherwise Latin-1 (every byte one character), as pymavlink reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Text<'a> {
    Utf8(&'a str),
    Latin1(&'a [u8]),
}

impl<'a> Text<'a> {
    pub fn new(field: &'a [u8]) -> Text<'a> {
        let cut = cut_at_nul(field);
        // A NUL is always a character boundary, so the array is UTF-8 when both parts are.
        match (
            std::str::from_utf8(cut),
            std::str::from_utf8(&field[cut.len()..]),
        ) {
            (Ok(text), Ok(_)) => Text::Utf8(text),
            _ => Text::Latin1(cut),
        }
    }

    /// The characters.
    pub fn chars(self) -> impl Iterator<Item = char> + 'a {
        let (utf8, latin1) = match self {
            Text::Utf8(s) => (Some(s.chars()), None),
            Text::Latin1(b) => (None, Some(b.iter().map(|&b| char::from(b)))),
        };
        utf8.into_iter()
            .flatten()
            .chain(latin1.into_iter().flatten())
    }
}

impl fmt::Display for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Text::Utf8(s) => f.write_str(s),
            Text::Latin1(_) => self.chars().try_for_each(|c| f.write_char(c)),
        }
    }
}

/// Read a definition from the values of a message whose type defines formats.
pub fn definition_from_values<'a>(
    mut values: impl Iterator<Item = Value<'a>>,
) -> Option<Definition<'a>> {
    let type_value = values.next()?.as_integer()?;
    let length = values.next()?.as_integer()?;
    let name = values.next()?.as_text()?;
    let format = values.next()?.as_text()?;
    let columns = values.next()?.as_text()?;
    Some(Definition {
        type_value,
        length,
        name,
        format,
        columns,
    })
}

/// The values of a UNIT message: id character and label.
pub fn unit_from_values<'a>(mut values: impl Iterator<Item = Value<'a>>) -> Option<(char, String)> {
    let _time = values.next()?;
    let id = values.next()?.as_integer()?;
    let label = values.next()?.as_text()?;
    Some((id_char(id)?, decode_name(label)))
}

/// The values of a MULT message: id character and multiplier.
pub fn mult_from_values<'a>(mut values: impl Iterator<Item = Value<'a>>) -> Option<(char, f64)> {
    let _time = values.next()?;
    let id = values.next()?.as_integer()?;
    let mult = values.next()?.as_float()?;
    // Loggers store single-precision multipliers as doubles (1e-6 reads 9.999999974752427e-7):
    // keep 7 significant digits, as pymavlink does.
    let mult = format!("{mult:.6e}").parse().unwrap_or(mult);
    Some((id_char(id)?, mult))
}

/// The values of a FMTU message: the type and its unit and multiplier ids.
pub fn fmtu_from_values<'a>(
    mut values: impl Iterator<Item = Value<'a>>,
) -> Option<(i128, String, String)> {
    let _time = values.next()?;
    let type_value = values.next()?.as_integer()?;
    let unit_ids = values.next()?.as_text()?;
    let mult_ids = values.next()?.as_text()?;
    Some((type_value, decode_name(unit_ids), decode_name(mult_ids)))
}

/// A UNIT or MULT id is one ASCII character stored as an int8.
fn id_char(id: i128) -> Option<char> {
    u8::try_from(id.rem_euclid(256)).ok().map(char::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_floats_widen_exactly() {
        assert_eq!(f16_to_f32(0x3C00), 1.0);
        assert_eq!(f16_to_f32(0xC000), -2.0);
        assert_eq!(f16_to_f32(0x7BFF), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x8000).to_bits(), (-0.0f32).to_bits());
        assert_eq!(f16_to_f32(0x7C00), f32::INFINITY);
        assert!(f16_to_f32(0x7E00).is_nan());
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
    }

    #[test]
    fn fields_unpack_little_endian() {
        let types: Vec<FieldType> = b"bBhHiIqQfdgMLcn"
            .iter()
            .map(|&c| FieldType::from_char(c).unwrap())
            .collect();
        let mut body = vec![0xFF, 0xFF];
        body.extend_from_slice(&(-2i16).to_le_bytes());
        body.extend_from_slice(&65535u16.to_le_bytes());
        body.extend_from_slice(&(-3i32).to_le_bytes());
        body.extend_from_slice(&u32::MAX.to_le_bytes());
        body.extend_from_slice(&i64::MIN.to_le_bytes());
        body.extend_from_slice(&u64::MAX.to_le_bytes());
        body.extend_from_slice(&1.5f32.to_le_bytes());
        body.extend_from_slice(&(-0.25f64).to_le_bytes());
        body.extend_from_slice(&0x3C00u16.to_le_bytes());
        body.push(200);
        body.extend_from_slice(&(-713_657_293i32).to_le_bytes());
        body.extend_from_slice(&(-61i16).to_le_bytes());
        body.extend_from_slice(b"AB\0\0");
        let values: Vec<Value> = Fields::new(&types, &body).collect();
        assert_eq!(
            values,
            vec![
                Value::Signed(-1),
                Value::Unsigned(255),
                Value::Signed(-2),
                Value::Unsigned(65535),
                Value::Signed(-3),
                Value::Unsigned(u32::MAX.into()),
                Value::Signed(i64::MIN),
                Value::Unsigned(u64::MAX),
                Value::F32(1.5),
                Value::F64(-0.25),
                Value::F32(1.0),
                Value::Unsigned(200),
                Value::Signed(-713_657_293),
                Value::Signed(-61),
                Value::Text(b"AB\0\0"),
            ]
        );
        // A short body ends the values instead of failing.
        assert_eq!(Fields::new(&types, &body[..5]).count(), 3);
    }

    #[test]
    fn text_is_utf8_or_latin1() {
        assert_eq!(Text::new(b"Hz\0\0\xff"), Text::Latin1(b"Hz"));
        assert_eq!(Text::new("é\0\0".as_bytes()), Text::Utf8("é"));
        assert_eq!(Text::new(b"caf\xe9\0").to_string(), "café");
    }

    #[test]
    fn names_escape_bytes_that_are_not_utf8() {
        assert_eq!(decode_name(b"ATT\0"), "ATT");
        assert_eq!(decode_name(b"A\xffB\0\xfe"), "A\\xffB");
        assert_eq!(decode_name(b"\xe2\x82"), "\\xe2\\x82");
        assert_eq!(
            int16_array(&[1, 0, 0xFF, 0xFF]).collect::<Vec<_>>(),
            [1, -1]
        );
    }
}
