//! **value-range** (suspect): a float far above every value its column has held in the log.
//!
//! What it sees: a finite value whose magnitude lies [`ABOVE_OCTAVES`] octaves or more above
//! the column's largest magnitude so far (taken as at least 1), once the column of that type and
//! instance has held [`MIN_VALUES`](super::MIN_VALUES) values. The offset is the octaves above,
//! the threshold the octaves needed. A column that held only zeros shows no scale: a command's
//! parameters (ArduPilot's `MAVC`, `CMD`) rest at 0 until a command uses them, with a message
//! interval of 500,000 µs, say, or a latitude in units of 1e-7 degrees (4.2e8), so there a value
//! must reach [`ABOVE_ZEROS_OCTAVES`] (2^32: past any 32-bit integer a float carries).
//!
//! Why: a float read from bytes that belong elsewhere has an exponent spread over the whole
//! range (2^-126 to 2^127 in single precision): two in five lie 2^16 or more above a column's
//! values, wherever the threshold sits within a few octaves. Physical quantities do not grow
//! 65,536 times past anything they reached before in a log (a motor spinning up from rest to
//! 30,000 rpm does not, in one message). Tiny values are no evidence: a filtered RMS decays to 1e-22 in a
//! clean log, 62 octaves below anything it held before.
//!
//! Calibration (every clean real ArduPilot log, `tests/suite/clean_flights.rs`): the largest
//! rise seen is 7.3 octaves (a GPS course from 0 to 154°, its column holding only zeros before,
//! so judged against 32), then 5.8 (an accelerometer in a crash); the threshold keeps a margin
//! of 10.2 octaves. Outside the corpus, an ArduCopter 4.7 log's `MAVC.P2` went from 0 to 500,000 (18.9
//! octaves), under the 32 a column of zeros asks (a margin of 13.1). The rule yields suspect
//! only: a splice is not told from a sensor fault by its values alone.

use super::Column;
use crate::report::Rule;

/// The rule this file holds.
pub const RULE: Rule = Rule::ValueRange;

/// Octaves above the column's largest magnitude (at least 1) from which a value is in doubt.
pub const ABOVE_OCTAVES: i64 = 16;

/// Octaves above 1 from which a value of a column that held only zeros is in doubt.
pub const ABOVE_ZEROS_OCTAVES: i64 = 32;

/// The octaves `x` lies above what `column` held, and the threshold it reached, when it lies far
/// enough.
#[inline]
pub fn judge(column: &Column, x: f64) -> Option<(i64, i64)> {
    let top = column.top;
    let above = match column.scaled {
        true => ABOVE_OCTAVES,
        false => ABOVE_ZEROS_OCTAVES,
    };
    // NaN and the infinities are another rule's.
    (x.is_finite() && x.abs() >= top * (above as f64).exp2())
        .then(|| ((x.abs() / top).log2().floor() as i64, above))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(values: &[f64]) -> Column {
        let mut c = Column::default();
        values.iter().for_each(|&x| c.learn(x));
        c
    }

    #[test]
    fn far_above_the_columns_range() {
        let c = column(&[0.5, -3.0, 2.0, 0.0]);
        assert_eq!(judge(&c, 3.0 * 65536.0), Some((16, 16)));
        assert_eq!(judge(&c, -1e10), Some((31, 16)));
        // Inside, at rest, tiny, or not a number (another rule's).
        for x in [3.0 * 65000.0, 0.0, 1e-38, f64::NAN, f64::INFINITY] {
            assert_eq!(judge(&c, x), None, "{x}");
        }
    }

    #[test]
    fn a_column_of_small_values_counts_as_reaching_1_and_one_of_zeros_shows_no_scale() {
        let mut values = [0.0; 8];
        values[3] = 0.25;
        let c = column(&values);
        assert_eq!(judge(&c, 65535.0), None);
        assert_eq!(judge(&c, 65536.0), Some((16, 16)));
        let zeros = column(&[0.0; 8]);
        assert_eq!(judge(&zeros, 500_000.0), None);
        assert_eq!(judge(&zeros, u32::MAX.into()), None);
        assert_eq!(judge(&zeros, 4.4e10), Some((35, 32)));
    }
}
