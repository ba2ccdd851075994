//! Elias delta (4, 5) and Elias gamma (10, 11 in the original Cleanflight tools) bit-stream codes.
//!
//! Both code `value + 1`; `0xFFFFFFFF` is an escape followed by one bit that picks `u32::MAX - 1` or
//! `u32::MAX`. Bits are read most significant first. The stream is padded with zeros to a whole byte
//! before the next byte-aligned field and at the end of the frame (the caller does that).

use super::varint::{zigzag_decode, zigzag_encode};
use super::{BitResult, CodecError, CodecErrorKind};
use nom::bits::complete::take;

#[inline]
fn bits(input: (&[u8], usize), count: usize) -> BitResult<'_, u32> {
    take::<_, u32, usize, CodecError>(count)(input)
}

/// Count leading zero bits, at most `limit`; more is damage.
#[inline]
fn leading_zeros(mut input: (&[u8], usize), limit: usize) -> BitResult<'_, usize> {
    let mut zeros = 0;
    loop {
        let (rest, bit) = bits(input, 1)?;
        if bit == 1 {
            return Ok((input, zeros));
        }
        zeros += 1;
        if zeros > limit {
            return Err(CodecError::at(rest.0, CodecErrorKind::OverlongElias));
        }
        input = rest;
    }
}

/// Undo the `+1` and the escape for the two largest values.
#[inline]
fn unescape(input: (&[u8], usize), coded: u32) -> BitResult<'_, u32> {
    if coded == u32::MAX {
        let (rest, bit) = bits(input, 1)?;
        Ok((rest, u32::MAX - 1 + bit))
    } else {
        Ok((input, coded - 1))
    }
}

/// Decode an Elias delta code (encoding 4).
pub fn elias_delta_u32(input: (&[u8], usize)) -> BitResult<'_, u32> {
    // The length of a 32-bit value's length fits in 6 bits: at most 5 leading zeros.
    let (input, zeros) = leading_zeros(input, 5)?;
    let (input, value_len) = bits(input, zeros + 1)?;
    if value_len == 0 || value_len > 32 {
        return Err(CodecError::at(input.0, CodecErrorKind::OverlongElias));
    }
    let (input, low) = bits(input, value_len as usize - 1)?;
    let coded = if value_len == 32 {
        (1u32 << 31) | low
    } else {
        (1u32 << (value_len - 1)) | low
    };
    unescape(input, coded)
}

/// Decode a signed Elias delta code (encoding 5).
pub fn elias_delta_s32(input: (&[u8], usize)) -> BitResult<'_, i32> {
    let (rest, v) = elias_delta_u32(input)?;
    Ok((rest, zigzag_decode(v)))
}

/// Decode an Elias gamma code (encoding 10 in the original Cleanflight tools).
pub fn elias_gamma_u32(input: (&[u8], usize)) -> BitResult<'_, u32> {
    let (input, zeros) = leading_zeros(input, 31)?;
    let (input, coded) = bits(input, zeros + 1)?;
    unescape(input, coded)
}

/// Decode a signed Elias gamma code (encoding 11 in the original Cleanflight tools).
pub fn elias_gamma_s32(input: (&[u8], usize)) -> BitResult<'_, i32> {
    let (rest, v) = elias_gamma_u32(input)?;
    Ok((rest, zigzag_decode(v)))
}

/// Writes bits most significant first, padding the last byte with zeros.
#[derive(Debug, Default)]
pub struct BitWriter {
    acc: u64,
    count: u32,
}

impl BitWriter {
    /// Append the low `count` bits of `value` (at most 32).
    pub fn write(&mut self, out: &mut Vec<u8>, value: u32, count: u32) {
        if count == 0 {
            return;
        }
        let mask = if count == 32 {
            u32::MAX
        } else {
            (1 << count) - 1
        };
        self.acc = (self.acc << count) | u64::from(value & mask);
        self.count += count;
        while self.count >= 8 {
            self.count -= 8;
            out.push((self.acc >> self.count) as u8);
        }
        self.acc &= (1u64 << self.count) - 1;
    }

    /// Pad the pending bits to a whole byte.
    pub fn flush(&mut self, out: &mut Vec<u8>) {
        if self.count > 0 {
            out.push((self.acc << (8 - self.count)) as u8);
            self.acc = 0;
            self.count = 0;
        }
    }

    /// Whether bits are waiting for a flush.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

fn bit_length(v: u32) -> u32 {
    32 - v.leading_zeros()
}

fn write_delta_coded(w: &mut BitWriter, out: &mut Vec<u8>, coded: u32) {
    let value_len = bit_length(coded);
    let len_len = bit_length(value_len);
    w.write(out, 0, len_len - 1);
    w.write(out, value_len, len_len);
    w.write(out, coded, value_len - 1);
}

fn write_gamma_coded(w: &mut BitWriter, out: &mut Vec<u8>, coded: u32) {
    let len = bit_length(coded);
    w.write(out, 0, len - 1);
    w.write(out, coded, len);
}

fn write_escaped(
    w: &mut BitWriter,
    out: &mut Vec<u8>,
    value: u32,
    code: fn(&mut BitWriter, &mut Vec<u8>, u32),
) {
    if value >= u32::MAX - 1 {
        code(w, out, u32::MAX);
        w.write(out, value - (u32::MAX - 1), 1);
    } else {
        code(w, out, value + 1);
    }
}

/// Append an Elias delta code.
pub fn write_elias_delta_u32(w: &mut BitWriter, out: &mut Vec<u8>, value: u32) {
    write_escaped(w, out, value, write_delta_coded);
}

/// Append a signed Elias delta code.
pub fn write_elias_delta_s32(w: &mut BitWriter, out: &mut Vec<u8>, value: i32) {
    write_elias_delta_u32(w, out, zigzag_encode(value));
}

/// Append an Elias gamma code.
pub fn write_elias_gamma_u32(w: &mut BitWriter, out: &mut Vec<u8>, value: u32) {
    write_escaped(w, out, value, write_gamma_coded);
}

/// Append a signed Elias gamma code.
pub fn write_elias_gamma_s32(w: &mut BitWriter, out: &mut Vec<u8>, value: i32) {
    write_elias_gamma_u32(w, out, zigzag_encode(value));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encode one value and return its bit string (without padding).
    fn delta_bits(value: u32) -> String {
        let mut w = BitWriter::default();
        let mut out = Vec::new();
        write_elias_delta_u32(&mut w, &mut out, value);
        let pending = w.count;
        w.flush(&mut out);
        let total = (out.len() as u32 - u32::from(pending > 0)) * 8 + pending;
        out.iter()
            .map(|b| format!("{b:08b}"))
            .collect::<String>()
            .chars()
            .take(total as usize)
            .collect()
    }

    #[test]
    fn delta_table_from_the_spec() {
        let table = [
            (0u32, "1"),
            (1, "0100"),
            (2, "0101"),
            (3, "01100"),
            (4, "01101"),
            (5, "01110"),
            (6, "01111"),
            (7, "00100000"),
            (8, "00100001"),
            (9, "00100010"),
            (10, "00100011"),
            (11, "00100100"),
            (12, "00100101"),
            (13, "00100110"),
            (14, "00100111"),
            (15, "001010000"),
            (225, "00010001100010"),
            (4294967292, "000001000001111111111111111111111111111101"),
            (4294967293, "000001000001111111111111111111111111111110"),
            (4294967294, "0000010000011111111111111111111111111111110"),
            (4294967295, "0000010000011111111111111111111111111111111"),
        ];
        for (value, expected) in table {
            assert_eq!(delta_bits(value), expected, "encode {value}");
            let mut w = BitWriter::default();
            let mut out = Vec::new();
            write_elias_delta_u32(&mut w, &mut out, value);
            w.flush(&mut out);
            let (_, decoded) = elias_delta_u32((&out, 0)).unwrap();
            assert_eq!(decoded, value, "decode {value}");
        }
    }

    #[test]
    fn consecutive_codes_share_bytes_and_round_trip() {
        let values = [0u32, 1, u32::MAX, 225, u32::MAX - 1, 7, i32::MAX as u32, 0];
        let signed = [0i32, -1, 1, i32::MIN, i32::MAX];
        for gamma in [false, true] {
            let mut w = BitWriter::default();
            let mut out = Vec::new();
            for &v in &values {
                if gamma {
                    write_elias_gamma_u32(&mut w, &mut out, v);
                } else {
                    write_elias_delta_u32(&mut w, &mut out, v);
                }
            }
            for &v in &signed {
                if gamma {
                    write_elias_gamma_s32(&mut w, &mut out, v);
                } else {
                    write_elias_delta_s32(&mut w, &mut out, v);
                }
            }
            w.flush(&mut out);
            let mut input = (&out[..], 0usize);
            for &v in &values {
                let (rest, got) = if gamma {
                    elias_gamma_u32(input).unwrap()
                } else {
                    elias_delta_u32(input).unwrap()
                };
                assert_eq!(got, v);
                input = rest;
            }
            for &v in &signed {
                let (rest, got) = if gamma {
                    elias_gamma_s32(input).unwrap()
                } else {
                    elias_delta_s32(input).unwrap()
                };
                assert_eq!(got, v);
                input = rest;
            }
        }
    }

    #[test]
    fn zeros_and_truncation_are_damage() {
        assert!(matches!(
            elias_delta_u32((&[0x00, 0x00], 0)),
            Err(nom::Err::Error(CodecError {
                kind: CodecErrorKind::OverlongElias,
                ..
            }))
        ));
        assert!(matches!(
            elias_delta_u32((&[0b0000_0100], 0)),
            Err(nom::Err::Error(CodecError {
                kind: CodecErrorKind::Eof,
                ..
            }))
        ));
        assert!(elias_gamma_u32((&[0, 0, 0, 0, 0], 0)).is_err());
    }
}
