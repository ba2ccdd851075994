//! Variable-byte integers: unsigned (1), signed zigzag (0) and negated 14-bit (3).

use super::{CodecError, CodecErrorKind, CodecResult, sign_extend};

/// Longest variable-byte integer a 32-bit value needs.
pub const MAX_VARINT_LEN: usize = 5;

/// Decode an unsigned variable-byte integer: 7 bits a byte, least significant first.
///
/// A fifth byte carrying more than the 4 bits a `u32` has left, or a sixth byte, is damage: the
/// firmware never writes one.
#[inline]
pub fn unsigned_vb(input: &[u8]) -> CodecResult<'_, u32> {
    // Most values of a flight take one byte.
    match input {
        [b, rest @ ..] if *b < 0x80 => Ok((rest, u32::from(*b))),
        _ => unsigned_vb_long(input),
    }
}

/// [`unsigned_vb`] of a value that takes more than one byte (or of no value at all).
#[inline]
fn unsigned_vb_long(input: &[u8]) -> CodecResult<'_, u32> {
    let mut result = 0u32;
    for (i, &b) in input.iter().take(MAX_VARINT_LEN).enumerate() {
        if i == MAX_VARINT_LEN - 1 && b > 0x0F {
            return Err(CodecError::at(&input[i..], CodecErrorKind::OverlongVarint));
        }
        result |= u32::from(b & 0x7F) << (7 * i);
        if b < 0x80 {
            return Ok((&input[i + 1..], result));
        }
    }
    // Every byte had its continuation bit set and the fifth cannot, so the data ended first.
    Err(CodecError::at(&[], CodecErrorKind::Eof))
}

/// Fold a signed value into an unsigned one: 0, -1, 1, -2 … → 0, 1, 2, 3 …
#[inline]
pub fn zigzag_encode(value: i32) -> u32 {
    ((value << 1) ^ (value >> 31)) as u32
}

/// Inverse of [`zigzag_encode`].
#[inline]
pub fn zigzag_decode(value: u32) -> i32 {
    ((value >> 1) as i32) ^ -((value & 1) as i32)
}

/// Decode a signed (zigzag) variable-byte integer.
#[inline]
pub fn signed_vb(input: &[u8]) -> CodecResult<'_, i32> {
    let (rest, v) = unsigned_vb(input)?;
    Ok((rest, zigzag_decode(v)))
}

/// Decode a negated 14-bit value (encoding 3).
#[inline]
pub fn neg_14bit(input: &[u8]) -> CodecResult<'_, i32> {
    let (rest, v) = unsigned_vb(input)?;
    Ok((rest, sign_extend(v & 0x3FFF, 14).wrapping_neg()))
}

/// Append an unsigned variable-byte integer.
pub fn write_unsigned_vb(out: &mut Vec<u8>, mut value: u32) {
    while value > 127 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Append a signed (zigzag) variable-byte integer.
pub fn write_signed_vb(out: &mut Vec<u8>, value: i32) {
    write_unsigned_vb(out, zigzag_encode(value));
}

/// Append a negated 14-bit value; only the low 14 bits of `-value` survive, as in the firmware.
pub fn write_neg_14bit(out: &mut Vec<u8>, value: i32) {
    write_unsigned_vb(out, (value.wrapping_neg() as u32) & 0x3FFF);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc_u(v: u32) -> Vec<u8> {
        let mut out = Vec::new();
        write_unsigned_vb(&mut out, v);
        out
    }

    #[test]
    fn unsigned_table_from_the_spec() {
        let table: [(u32, &[u8]); 6] = [
            (1, &[0x01]),
            (42, &[0x2A]),
            (127, &[0x7F]),
            (128, &[0x80, 0x01]),
            (129, &[0x81, 0x01]),
            (23456, &[0xA0, 0xB7, 0x01]),
        ];
        for (value, bytes) in table {
            assert_eq!(enc_u(value), bytes, "encode {value}");
            assert_eq!(unsigned_vb(bytes), Ok((&[][..], value)), "decode {value}");
        }
    }

    #[test]
    fn zigzag_table_from_the_spec() {
        let table = [
            (0, 0),
            (-1, 1),
            (1, 2),
            (-2, 3),
            (2147483647, 4294967294),
            (-2147483648, 4294967295u32),
        ];
        for (signed, unsigned) in table {
            assert_eq!(zigzag_encode(signed), unsigned);
            assert_eq!(zigzag_decode(unsigned), signed);
        }
    }

    #[test]
    fn round_trip_edge_values() {
        for v in [
            0u32,
            1,
            127,
            128,
            16383,
            16384,
            i32::MAX as u32,
            u32::MAX - 1,
            u32::MAX,
        ] {
            assert_eq!(unsigned_vb(&enc_u(v)), Ok((&[][..], v)));
        }
        for v in [0i32, 1, -1, 63, -64, 64, i32::MIN, i32::MAX] {
            let mut out = Vec::new();
            write_signed_vb(&mut out, v);
            assert_eq!(signed_vb(&out), Ok((&[][..], v)));
        }
    }

    #[test]
    fn neg_14bit_round_trips_in_its_range() {
        for v in [0i32, -1, 1, -8191, 8192, -100, 50] {
            let mut out = Vec::new();
            write_neg_14bit(&mut out, v);
            assert_eq!(neg_14bit(&out), Ok((&[][..], v)), "value {v}");
        }
    }

    #[test]
    fn damage_is_reported_not_guessed() {
        assert_eq!(
            unsigned_vb(&[0x80, 0x80]).unwrap_err(),
            nom::Err::Error(CodecError {
                kind: CodecErrorKind::Eof,
                remaining: 0
            })
        );
        // A fifth byte above 0x0F would need more than 32 bits.
        let overlong = [0xFF, 0xFF, 0xFF, 0xFF, 0x10];
        assert!(matches!(
            unsigned_vb(&overlong),
            Err(nom::Err::Error(CodecError {
                kind: CodecErrorKind::OverlongVarint,
                ..
            }))
        ));
        let six = [0xFF, 0xFF, 0xFF, 0xFF, 0x8F, 0x01];
        assert!(matches!(
            unsigned_vb(&six),
            Err(nom::Err::Error(CodecError {
                kind: CodecErrorKind::OverlongVarint,
                ..
            }))
        ));
        assert_eq!(
            unsigned_vb(&[0xFF, 0xFF, 0xFF, 0xFF, 0x0F]).unwrap().1,
            u32::MAX
        );
    }
}
