//! **not-a-number** (suspect): NaN or an infinity in a float column that held only finite
//! values, some of them not zero, before it in the log.
//!
//! What it sees: the first value of a column, of that type and instance, that is not finite,
//! once the column has held [`MIN_VALUES`](super::MIN_VALUES) finite values and one of them was
//! not zero. A column that goes on reading NaN is doubted once: the values after the first are
//! learned.
//!
//! Why: four bytes read from elsewhere are NaN about once in 256; loggers write NaN only where a
//! quantity is not known, and then from the start or for a while. A quantity not known yet may
//! also read 0 first: an ArduCopter 3.4 log's `MOTB.BatRes`, a battery's resistance estimated
//! as a ratio, reads 0 for 57 messages, then NaN for seconds at a time.
//!
//! Calibration (every clean real ArduPilot log, `tests/suite/clean_flights.rs`): no column goes
//! from finite values, not all zero, to NaN. The rule yields suspect only.

use super::Column;
use crate::report::Rule;

/// The rule, when `x` is the first value of `column` that is not finite.
#[inline]
pub fn judge(column: &Column, x: f64) -> Option<Rule> {
    (!x.is_finite() && !column.not_finite && column.scaled).then_some(Rule::NotANumber)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_first_value_that_is_not_finite() {
        let mut c = Column::default();
        (0..8).for_each(|_| c.learn(1.5));
        assert_eq!(judge(&c, f64::NAN), Some(Rule::NotANumber));
        assert_eq!(judge(&c, f64::NEG_INFINITY), Some(Rule::NotANumber));
        assert_eq!(judge(&c, 1e30), None);
        c.learn(f64::NAN);
        assert_eq!(judge(&c, f64::NAN), None);
    }

    #[test]
    fn not_after_zeros_alone() {
        let mut c = Column::default();
        (0..60).for_each(|_| c.learn(0.0));
        assert_eq!(judge(&c, f64::NAN), None);
        c.learn(0.25);
        assert_eq!(judge(&c, f64::NAN), Some(Rule::NotANumber));
    }
}
