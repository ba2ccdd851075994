//! A main or slow frame read in step can still hold a value its field cannot take: a byte
//! dropped or inserted inside it, or garbage read as a frame. The bounds come from the header
//! where the firmware's units are known. Level: corrupt (`implausible-value`); real logs stay
//! well inside.

use crate::blackbox::frame::FrameKind;
use crate::blackbox::header::Header;

/// Fields (by the start of their names) that every firmware keeps in 16-bit integers: gyro,
/// accelerometer and compass readings, stick commands and setpoints, servo outputs.
const SIXTEEN_BIT_FIELDS: [&str; 7] = [
    "gyroADC[",
    "gyroUnfilt[",
    "accSmooth[",
    "magADC[",
    "rcCommand[",
    "setpoint[",
    "servo[",
];

/// The largest magnitude of a signed 16-bit integer.
const SIXTEEN_BIT_BOUND: u64 = 1 << 15;

/// The largest size each field of `kind` (main or slow) can take either way. Real logs stay well inside; a value further out (a byte dropped or inserted
/// inside the frame, read in step, or garbage read as a frame) is damage.
///
/// - motor outputs (`motor[N]`): twice the highest output the header declares (`motorOutput`'s
///   high end, or `maxthrottle`);
/// - throttle (`rcCommand[3]`): twice `maxthrottle`;
/// - battery voltage (`vbatLatest`, INAV's `vbat`): 65535, as every firmware logs it in 16 bits
///   (ADC counts or hundredths of a volt);
/// - the sensors and commands ([`SIXTEEN_BIT_FIELDS`]) otherwise, when declared signed: 32768,
///   as every firmware keeps them in 16-bit integers between reading and logging (Betaflight 2
///   to 2025.12, Cleanflight, INAV, EmuFlight, Rotorflight and Indiflight alike; clean logs
///   saturate at 32,765, accelerometers in a crash);
/// - the failsafe phase (`failsafePhase`): 15, as the firmwares number their phases below 8;
/// - the receiver flags (`rxSignalReceived`, `rxFlightChannelsValid`): 1.
///
/// One bound a field, `u64::MAX` for a field the header declares no bound for; empty where no
/// field is bounded.
pub(in crate::blackbox) fn value_bounds(header: &Header, kind: FrameKind) -> Vec<u64> {
    let Some(def) = header.def(kind) else {
        return Vec::new();
    };
    let number = |v: &str| {
        v.trim()
            .parse::<u64>()
            .ok()
            .filter(|&h| (1..=1 << 20).contains(&h))
    };
    // Forks may scale these fields otherwise (Indiflight logs its throttle from 0 to 10000).
    let known = outputs_in_header_units(header);
    let max_throttle = header.get("maxthrottle").and_then(number).filter(|_| known);
    let highest_motor = header
        .get("motorOutput")
        .and_then(|v| v.split(',').nth(1))
        .and_then(number)
        .filter(|_| known)
        .or(max_throttle);
    let bounds: Vec<Option<u64>> = def
        .names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let is_motor = name
                .strip_prefix("motor[")
                .and_then(|rest| rest.strip_suffix(']'))
                .is_some_and(|n| n.parse::<u8>().is_ok());
            let sixteen_bit = kind == FrameKind::I
                && SIXTEEN_BIT_FIELDS.iter().any(|p| name.starts_with(p))
                && def.fields.get(i).is_some_and(|f| f.signed);
            let bound = match (kind, name.as_str()) {
                (FrameKind::I, _) if is_motor => highest_motor.map(|h| 2 * h),
                (FrameKind::I, "rcCommand[3]") => max_throttle.map(|h| 2 * h),
                (FrameKind::I, "vbatLatest" | "vbat") => Some(u64::from(u16::MAX)),
                (FrameKind::S, "failsafePhase") => Some(15),
                (FrameKind::S, "rxSignalReceived" | "rxFlightChannelsValid") => Some(1),
                _ => None,
            };
            bound.or(sixteen_bit.then_some(SIXTEEN_BIT_BOUND))
        })
        .collect();
    if bounds.iter().all(Option::is_none) {
        return Vec::new();
    }
    bounds.into_iter().map(|b| b.unwrap_or(u64::MAX)).collect()
}

/// Whether every value is within its field's bound (`bounds` as [`value_bounds`] gives them, one
/// per field, `u64::MAX` where a field is unbounded; fields past the end of `bounds` unbounded).
#[inline]
pub(in crate::blackbox) fn within(values: &[i64], bounds: &[u64]) -> bool {
    // Every field at once, without a branch (it vectorises).
    values
        .iter()
        .zip(bounds)
        .fold(true, |ok, (v, &bound)| ok & (v.unsigned_abs() <= bound))
}

/// Whether the firmware logs throttle and motor outputs in the units of `maxthrottle` and
/// `motorOutput`: Betaflight, INAV, EmuFlight and Cleanflight (whose oldest logs name the build
/// by a bare git hash).
fn outputs_in_header_units(header: &Header) -> bool {
    let revision = header.firmware_revision.as_deref().unwrap_or("");
    let name = revision.split_whitespace().next().unwrap_or("");
    matches!(name, "Betaflight" | "INAV" | "EmuFlight" | "Cleanflight")
        || (name.len() >= 7 && name.bytes().all(|b| b.is_ascii_hexdigit()))
}
