//! **not-a-number** (suspect): a NaN no arithmetic makes, in a float column that held only
//! finite values, some of them not zero, before it in the log.
//!
//! What it sees: the first value of a column, of that type and instance, that is a signalling
//! NaN (all exponent bits set, a mantissa other than zero with its highest bit, the quiet bit,
//! clear), once the column has held [`MIN_VALUES`](super::MIN_VALUES) finite values and one of
//! them was not zero. A column that goes on reading NaN is doubted once: the values after the
//! first are learned.
//!
//! Why: four bytes read from elsewhere are a signalling NaN about once in 512; arithmetic yields
//! only quiet NaNs (an operation on a signalling one quiets it) and infinities, which loggers
//! write where a quantity is not known: from the start, for a while, or for one message. An
//! ArduCopter 4.7 log outside the corpus reads `AHR2.Alt` as a quiet NaN (`0x7FC04152`) for one
//! message between finite ones; an ArduCopter 3.4 log's `MOTB.BatRes`, a battery's resistance
//! estimated as a ratio, reads 0 for 57 messages, then NaN for seconds at a time.
//!
//! Calibration (every clean real ArduPilot log, `tests/suite/clean_flights.rs`, and 31 outside
//! the corpus): no column holds a signalling NaN. The rule yields suspect only.

use super::Column;
use crate::dataflash::fmt::FieldType;
use crate::report::Rule;

/// The rule, when `x` is the first value of `column` that is not finite and a NaN no arithmetic
/// makes (`signalling`, read from its bits when asked).
#[inline]
pub fn judge(column: &Column, x: f64, signalling: impl FnOnce() -> bool) -> Option<Rule> {
    (x.is_nan() && !column.not_finite && column.scaled && signalling()).then_some(Rule::NotANumber)
}

/// Whether the float of type `ty` at `offset` of `body` is a signalling NaN.
pub fn signalling_nan(body: &[u8], offset: usize, ty: FieldType) -> bool {
    let bits = |n: usize| {
        let mut raw = [0u8; 8];
        let bytes = body.get(offset..offset.checked_add(n)?)?;
        raw[..n].copy_from_slice(bytes);
        Some(u64::from_le_bytes(raw))
    };
    // The exponent's bits, the mantissa's and its quiet bit, per width.
    let (bits, exponent, mantissa, quiet) = match ty {
        FieldType::F16 => (bits(2), 0x7C00, 0x03FF, 0x0200),
        FieldType::F32 => (bits(4), 0x7F80_0000, 0x007F_FFFF, 0x0040_0000),
        FieldType::F64 => (
            bits(8),
            0x7FF0_0000_0000_0000,
            0x000F_FFFF_FFFF_FFFF,
            0x0008_0000_0000_0000,
        ),
        _ => return false,
    };
    bits.is_some_and(|b| b & exponent == exponent && b & mantissa != 0 && b & quiet == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIGNALLING: fn() -> bool = || true;
    const QUIET: fn() -> bool = || false;

    #[test]
    fn only_the_first_signalling_nan() {
        let mut c = Column::default();
        (0..8).for_each(|_| c.learn(1.5));
        assert_eq!(judge(&c, f64::NAN, SIGNALLING), Some(Rule::NotANumber));
        assert_eq!(judge(&c, f64::NAN, QUIET), None);
        assert_eq!(judge(&c, f64::NEG_INFINITY, SIGNALLING), None);
        assert_eq!(judge(&c, 1e30, SIGNALLING), None);
        c.learn(f64::NAN);
        assert_eq!(judge(&c, f64::NAN, SIGNALLING), None);
    }

    #[test]
    fn not_after_zeros_alone() {
        let mut c = Column::default();
        (0..60).for_each(|_| c.learn(0.0));
        assert_eq!(judge(&c, f64::NAN, SIGNALLING), None);
        c.learn(0.25);
        assert_eq!(judge(&c, f64::NAN, SIGNALLING), Some(Rule::NotANumber));
    }

    #[test]
    fn signalling_nans_are_told_by_their_quiet_bit() {
        let f32_at = |bits: u32| signalling_nan(&bits.to_le_bytes(), 0, FieldType::F32);
        assert!(f32_at(0x7F80_0001));
        assert!(f32_at(0xFFA0_0000));
        // The default NaN, one carrying a payload, an infinity, a number.
        assert!(!f32_at(0x7FC0_0000));
        assert!(!f32_at(0x7FC0_4152));
        assert!(!f32_at(0x7F80_0000));
        assert!(!f32_at(1.5f32.to_bits()));
        let f64_at = |bits: u64| signalling_nan(&bits.to_le_bytes(), 0, FieldType::F64);
        assert!(f64_at(0x7FF0_0000_0000_0001));
        assert!(!f64_at(f64::NAN.to_bits()));
        let f16_at = |bits: u16| signalling_nan(&bits.to_le_bytes(), 0, FieldType::F16);
        assert!(f16_at(0x7C01));
        assert!(!f16_at(0x7E00));
        // Past the end of the body: not read.
        assert!(!signalling_nan(&[0x01, 0x00, 0x80], 0, FieldType::F32));
    }
}
