//! Field predictors: what is subtracted from a value before it is encoded.

/// A field predictor with the header constants it needs already resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Predictor {
    /// 0: nothing.
    Zero,
    /// 1: the field's value in the previous frame.
    Previous,
    /// 2: `2 * previous - previous2`.
    StraightLine,
    /// 3: `(previous + previous2) / 2`, truncated toward zero.
    Average2,
    /// 4: the header's `minthrottle`.
    MinThrottle(i64),
    /// 5: `motor[0]` of the same frame (its field index).
    Motor0(usize),
    /// 6: previous + 1 + the iterations the I/P schedule skips on purpose.
    Increment,
    /// 7: a coordinate of the last GPS home frame (0 = latitude, 1 = longitude).
    HomeCoord(usize),
    /// 8: the constant 1500.
    Fixed1500,
    /// 9: the header's `vbatref`.
    VbatRef(i64),
    /// 10: `time` of the last main frame.
    LastMainFrameTime,
    /// 11: the minimum of the header's `motorOutput` range.
    MinMotor(i64),
}

impl Predictor {
    /// The predictor's id in the header.
    pub fn id(self) -> u32 {
        match self {
            Predictor::Zero => 0,
            Predictor::Previous => 1,
            Predictor::StraightLine => 2,
            Predictor::Average2 => 3,
            Predictor::MinThrottle(_) => 4,
            Predictor::Motor0(_) => 5,
            Predictor::Increment => 6,
            Predictor::HomeCoord(_) => 7,
            Predictor::Fixed1500 => 8,
            Predictor::VbatRef(_) => 9,
            Predictor::LastMainFrameTime => 10,
            Predictor::MinMotor(_) => 11,
        }
    }

    /// Whether the predictor reads the previous frames of the same type.
    pub fn uses_history(self) -> bool {
        matches!(
            self,
            Predictor::Previous
                | Predictor::StraightLine
                | Predictor::Average2
                | Predictor::Increment
        )
    }
}

/// The last main frame and the one before it (the same frame right after an I frame): what a P
/// frame is predicted from.
pub type MainHistory<'a> = (Option<&'a [i64]>, Option<&'a [i64]>);

/// What a prediction may draw on besides the frame being decoded.
#[derive(Debug, Clone, Copy, Default)]
pub struct Context<'a> {
    /// The previous frame of the same type, if there is one.
    pub previous: Option<&'a [i64]>,
    /// The frame before that (equal to `previous` right after an I frame).
    pub previous2: Option<&'a [i64]>,
    /// Iterations skipped on purpose since the previous main frame.
    pub skipped: u32,
    /// The last GPS home frame.
    pub home: Option<&'a [i64]>,
    /// `time` of the last main frame (0 before any).
    pub last_main_time: i64,
}

/// The bits above 32 a value of a field keeps from its sign extension when reduced to 32 bits:
/// all of them for a signed field, none for an unsigned one.
pub fn high_bits(signed: bool) -> i64 {
    if signed { !0xFFFF_FFFF } else { 0 }
}

/// Reduce a value to 32 bits without a branch: its low 32 bits, with the sign extension's high
/// bits where `high_bits` (see [`high_bits`]) keeps them.
#[inline(always)]
pub fn keep_32_bits(value: i64, high_bits: i64) -> i64 {
    i64::from(value as u32) | (i64::from(value as i32) & high_bits)
}

/// Reduce a value to 32 bits: `i32` range when signed, `u32` range otherwise.
#[inline]
pub fn normalise(value: i64, signed: bool) -> i64 {
    keep_32_bits(value, high_bits(signed))
}

impl Predictor {
    /// The prediction for field `index`, given the fields of this frame decoded so far.
    #[inline]
    pub fn predict(self, index: usize, ctx: &Context<'_>, current: &[i64]) -> i64 {
        let prev = |frame: Option<&[i64]>| frame.and_then(|f| f.get(index).copied());
        match self {
            Predictor::Zero => 0,
            Predictor::Previous => prev(ctx.previous).unwrap_or(0),
            Predictor::StraightLine => match (prev(ctx.previous), prev(ctx.previous2)) {
                (Some(p1), Some(p2)) => 2 * p1 - p2,
                _ => 0,
            },
            Predictor::Average2 => match (prev(ctx.previous), prev(ctx.previous2)) {
                (Some(p1), Some(p2)) => (p1 + p2) / 2,
                _ => 0,
            },
            Predictor::MinThrottle(c) | Predictor::VbatRef(c) | Predictor::MinMotor(c) => c,
            Predictor::Fixed1500 => 1500,
            Predictor::Motor0(m) => current.get(m).copied().unwrap_or(0),
            Predictor::Increment => 1 + i64::from(ctx.skipped) + prev(ctx.previous).unwrap_or(0),
            Predictor::HomeCoord(k) => ctx.home.and_then(|h| h.get(k).copied()).unwrap_or(0),
            Predictor::LastMainFrameTime => ctx.last_main_time,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn average_truncates_toward_zero_like_the_firmware() {
        let p1 = [-3i64];
        let p2 = [-2i64];
        let ctx = Context {
            previous: Some(&p1),
            previous2: Some(&p2),
            ..Context::default()
        };
        assert_eq!(Predictor::Average2.predict(0, &ctx, &[]), -2);
        assert_eq!(Predictor::StraightLine.predict(0, &ctx, &[]), -4);
    }

    #[test]
    fn increment_counts_skipped_iterations() {
        let p1 = [100i64];
        let ctx = Context {
            previous: Some(&p1),
            previous2: Some(&p1),
            skipped: 15,
            ..Context::default()
        };
        assert_eq!(Predictor::Increment.predict(0, &ctx, &[]), 116);
    }

    #[test]
    fn normalise_wraps_to_32_bits() {
        assert_eq!(normalise(-1, false), u32::MAX as i64);
        assert_eq!(normalise(u32::MAX as i64, true), -1);
        assert_eq!(normalise(1 << 32, false), 0);
    }
}
