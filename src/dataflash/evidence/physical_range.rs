//! **physical-range** (suspect): a value its unit cannot take.
//!
//! What it sees: a column whose FMTU unit has bounds (a latitude within ±90°, a longitude
//! within ±180°, a pulse width of [`MAX_PULSE_US`] µs at most, a speed of [`MAX_RPM`] rpm at
//! most either way, a temperature above absolute zero) reading past them, its stored value scaled by its FMTU multiplier (`-`, "none", counts
//! as 1). The column of that type and instance must have held [`MIN_VALUES`](super::MIN_VALUES)
//! values first, all inside: a column whose unit id the log gave two labels, or that a logger
//! labels loosely, shows it from its first values and is not judged. A unit id the log gave
//! several labels (ArduPilot 3.6 gives `U` to longitudes and to pulse widths) bounds its columns
//! by what any of them allows (-180 to 4,000). The offset is the value
//! read, the threshold the bound it passed; once past, the column is not judged again.
//!
//! Why: integer columns leave rest for values up to 2^16 at once in clean logs (flags,
//! counters), so their learned range says little; but a spliced or flipped fix at latitude
//! -178° or a servo output of 65,356 µs is no flight at all, whatever came before.
//!
//! Calibration (every clean real ArduPilot log, `tests/suite/clean_flights.rs`): latitudes reach
//! 52.5° (0.58 of the bound), longitudes 77.6° (0.43), pulse widths 2,006 µs (0.50), temperatures
//! stay above 0 °C; the one log with ESC speeds reads 0 rpm throughout, so that bound rests on
//! physics alone. The rule yields suspect only.

use crate::report::Rule;

/// The rule this file holds.
pub const RULE: Rule = Rule::PhysicalRange;

/// The widest pulse taken for a servo or ESC signal: they span 500 to 2,500 µs.
pub const MAX_PULSE_US: f64 = 4000.0;

/// The fastest a motor or rotor is taken to turn: turbines reach 150,000 rpm.
pub const MAX_RPM: f64 = 1_000_000.0;

/// Absolute zero, in degrees Celsius.
const ABSOLUTE_ZERO_C: f64 = -273.15;

/// The values a column can take whose unit is any of `labels` (UNIT labels; a log may give one
/// id to several units): none when one of them is unbounded, or there are none.
pub fn bounds<'a>(mut labels: impl Iterator<Item = &'a str>) -> Option<(f64, f64)> {
    let first = bounds_of(labels.next()?)?;
    labels.try_fold(first, |(low, high), label| {
        let (l, h) = bounds_of(label)?;
        Some((low.min(l), high.max(h)))
    })
}

/// The values a quantity labelled `label` can take.
fn bounds_of(label: &str) -> Option<(f64, f64)> {
    match label {
        "deglatitude" => Some((-90.0, 90.0)),
        "deglongitude" => Some((-180.0, 180.0)),
        "us" => Some((0.0, MAX_PULSE_US)),
        "rpm" => Some((-MAX_RPM, MAX_RPM)),
        "degC" => Some((ABSOLUTE_ZERO_C, f64::INFINITY)),
        _ => None,
    }
}

/// What a bounded column has held.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Held {
    /// Values seen, all inside the bounds while `left` is false.
    pub values: u32,
    /// Whether a value lay outside.
    pub left: bool,
}

impl Held {
    /// The value read (rounded) and the bound it passed, when `x` (scaled) lies outside the
    /// bounds and the column held enough values, all inside, before it; then learn `x`.
    #[inline]
    pub fn judge(&mut self, (low, high): (f64, f64), x: f64) -> Option<(i64, i64)> {
        if x.is_nan() {
            // Another rule's.
            return None;
        }
        let inside = (low..=high).contains(&x);
        let judged = !self.left && self.values >= super::MIN_VALUES;
        self.values = self.values.saturating_add(1);
        self.left |= !inside;
        (judged && !inside).then(|| {
            let bound = if x > high { high } else { low };
            (x.round() as i64, bound.round() as i64)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataflash::evidence::MIN_VALUES;

    fn judge_all(label: &str, values: &[f64]) -> Vec<Option<(i64, i64)>> {
        let bounds = bounds([label].into_iter()).unwrap();
        let mut held = Held::default();
        values.iter().map(|&x| held.judge(bounds, x)).collect()
    }

    #[test]
    fn a_value_past_its_units_bounds_once_the_column_kept_them() {
        let mut lat = vec![52.4; MIN_VALUES as usize];
        lat.extend([-178.3, 52.4, -95.0]);
        let judged = judge_all("deglatitude", &lat);
        assert!(judged[..8].iter().all(Option::is_none));
        assert_eq!(judged[8], Some((-178, -90)));
        // Once past, the column is not judged again.
        assert_eq!(judged[9..], [None, None]);
        let mut pwm = vec![1100.0; MIN_VALUES as usize];
        pwm.extend([65356.0, f64::NAN]);
        assert_eq!(judge_all("us", &pwm)[8..], [Some((65356, 4000)), None]);
        let mut spin = vec![0.0; MIN_VALUES as usize];
        spin.push(-1.47e7);
        assert_eq!(judge_all("rpm", &spin)[8], Some((-14_700_000, -1_000_000)));
        let mut cold = vec![-40.0; MIN_VALUES as usize];
        cold.push(-300.0);
        assert_eq!(judge_all("degC", &cold)[8], Some((-300, -273)));
    }

    #[test]
    fn a_column_that_leaves_its_bounds_early_is_not_judged() {
        // A longitude labelled in microseconds, say: it reads -71° from the start.
        let mut values = vec![-71.3; MIN_VALUES as usize];
        values.push(-71.4);
        values.push(65356.0);
        assert!(judge_all("us", &values).iter().all(Option::is_none));
        // Nor are units without bounds.
        assert_eq!(bounds(["m/s"].into_iter()), None);
        assert_eq!(bounds(["us", "m/s"].into_iter()), None);
        assert_eq!(bounds([].into_iter()), None);
    }

    #[test]
    fn a_unit_id_given_several_labels_allows_what_any_of_them_allows() {
        let either = bounds(["us", "deglongitude"].into_iter());
        assert_eq!(either, Some((-180.0, MAX_PULSE_US)));
    }
}
