//! Event (E) frames: an id byte and a payload whose layout only the id tells.

use super::codec::varint::{signed_vb, unsigned_vb, write_signed_vb, write_unsigned_vb};
use super::codec::{CodecError, CodecErrorKind, CodecResult, byte, bytes};
use super::header::{Firmware, Header};
use nom::bytes::complete::tag;
use nom::character::complete::u32 as dec_u32;

/// A decoded event.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// 0: the beeper sounded (for syncing video).
    SyncBeep { time: u32 },
    /// 10: an autotune cycle started.
    AutotuneCycleStart {
        phase: u8,
        cycle: u8,
        rising: bool,
        p: u8,
        i: u8,
        d: u8,
    },
    /// 11: an autotune cycle ended.
    AutotuneCycleResult { overshot: u8, p: u8, i: u8, d: u8 },
    /// 12: autotune angles, in tenths of a degree except the targets.
    AutotuneTargets {
        current_angle: i16,
        target_angle: i8,
        target_angle_at_peak: i8,
        first_peak_angle: i16,
        second_peak_angle: i16,
    },
    /// 13: a setting was changed in flight.
    InflightAdjustment {
        function: u8,
        value: AdjustmentValue,
    },
    /// 14: logging resumed after a pause; the iteration and time it resumed at.
    LoggingResume { iteration: u32, time: u32 },
    /// 15: the craft disarmed.
    Disarm { reason: u32 },
    /// 20: a G-Tune cycle result.
    GtuneCycleResult { axis: u8, gyro_avg: i32, new_p: i16 },
    /// 30: the flight mode flags changed.
    FlightMode { flags: u32, last_flags: u32 },
    /// 40 (Betaflight): a twitch-test stage.
    TwitchTest { stage: u8, value: f32 },
    /// 40 (INAV): the IMU failed.
    ImuFailure { code: u32 },
    /// 50 (Rotorflight): the governor's state changed.
    GovernorState { state: u32 },
    /// 51 (Rotorflight): the rescue's state changed.
    RescueState { state: u32 },
    /// 52 (Rotorflight): the craft took off or landed.
    AirborneState { state: u32 },
    /// 100 (Rotorflight): bytes the firmware logged, at most 255.
    CustomData { bytes: Box<[u8]> },
    /// 101 (Rotorflight): text the firmware logged, at most 255 bytes.
    CustomText { text: Box<[u8]> },
    /// 255: the log ends here; INAV adds the disarm reason.
    LogEnd { disarm_reason: Option<u32> },
}

/// The new value of an in-flight adjustment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AdjustmentValue {
    Int(i32),
    Float(f32),
}

/// Event ids.
pub mod id {
    pub const SYNC_BEEP: u8 = 0;
    pub const AUTOTUNE_CYCLE_START: u8 = 10;
    pub const AUTOTUNE_CYCLE_RESULT: u8 = 11;
    pub const AUTOTUNE_TARGETS: u8 = 12;
    pub const INFLIGHT_ADJUSTMENT: u8 = 13;
    pub const LOGGING_RESUME: u8 = 14;
    pub const DISARM: u8 = 15;
    pub const GTUNE_CYCLE_RESULT: u8 = 20;
    pub const FLIGHT_MODE: u8 = 30;
    pub const TWITCH_TEST_OR_IMU_FAILURE: u8 = 40;
    pub const GOVERNOR_STATE: u8 = 50;
    pub const RESCUE_STATE: u8 = 51;
    pub const AIRBORNE_STATE: u8 = 52;
    pub const CUSTOM_DATA: u8 = 100;
    pub const CUSTOM_TEXT: u8 = 101;
    pub const LOG_END: u8 = 255;
}

/// Whose event ids a log's E frames use: past Betaflight's, an id means what its firmware says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Betaflight's, Cleanflight's and their forks' (40: a twitch test).
    Betaflight,
    /// INAV's (40: an IMU failure).
    Inav,
    /// Rotorflight's: Betaflight's, 50 to 52 for its governor's, rescue's and airborne states,
    /// and 100 and 101 for data and text of a length given in their first byte.
    Rotorflight,
}

impl Dialect {
    /// The event ids of the firmware `header` names.
    pub fn of(header: &Header) -> Dialect {
        let revision = header.firmware_revision.as_deref().unwrap_or("");
        if header.firmware == Firmware::Inav {
            Dialect::Inav
        } else if revision.starts_with("Rotorflight") {
            Dialect::Rotorflight
        } else {
            Dialect::Betaflight
        }
    }
}

/// Why an E frame could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventError {
    /// The id is not one any supported firmware writes, so the payload length is unknown.
    UnknownId(u8),
    /// The payload is cut short or malformed.
    Codec(CodecError),
}

fn s16(input: &[u8]) -> CodecResult<'_, i16> {
    bytes::<2>(input).map(|(r, b)| (r, i16::from_le_bytes(b)))
}

fn f32le(input: &[u8]) -> CodecResult<'_, f32> {
    bytes::<4>(input).map(|(r, b)| (r, f32::from_le_bytes(b)))
}

/// A byte giving a length, and that many bytes.
fn counted(input: &[u8]) -> CodecResult<'_, Box<[u8]>> {
    let (rest, length) = byte(input)?;
    let length = usize::from(length);
    match rest.get(..length) {
        Some(taken) => Ok((&rest[length..], taken.into())),
        None => Err(CodecError::at(rest, CodecErrorKind::Eof)),
    }
}

fn log_end(input: &[u8]) -> CodecResult<'_, Option<u32>> {
    let bad = |input: &[u8]| CodecError::at(input, CodecErrorKind::Other);
    let (rest, _) = tag::<_, _, CodecError>("End of log")(input).map_err(|_| bad(input))?;
    if let Ok((rest, _)) = tag::<_, _, CodecError>("\0")(rest) {
        return Ok((rest, None));
    }
    let (rest, _) = tag::<_, _, CodecError>(" (disarm reason:")(rest).map_err(|_| bad(rest))?;
    let (rest, reason) = dec_u32::<_, CodecError>(rest).map_err(|_| bad(rest))?;
    let (rest, _) = tag::<_, _, CodecError>(")\0")(rest).map_err(|_| bad(rest))?;
    Ok((rest, Some(reason)))
}

impl Event {
    /// Decode the bytes after an `E` type byte; returns the event and the bytes it took.
    pub fn decode(body: &[u8], dialect: Dialect) -> Result<(Event, usize), EventError> {
        let codec = |e: nom::Err<CodecError>| match e {
            nom::Err::Error(e) | nom::Err::Failure(e) => EventError::Codec(e),
            nom::Err::Incomplete(_) => EventError::Codec(CodecError {
                kind: CodecErrorKind::Eof,
                remaining: 0,
            }),
        };
        let (input, event_id) = byte(body).map_err(codec)?;
        let (rest, event) = Event::payload(event_id, input, dialect).map_err(codec)?;
        let event = event.ok_or(EventError::UnknownId(event_id))?;
        Ok((event, body.len() - rest.len()))
    }

    fn payload(id: u8, input: &[u8], dialect: Dialect) -> CodecResult<'_, Option<Event>> {
        let (rest, event) = match id {
            id::SYNC_BEEP => {
                let (r, time) = unsigned_vb(input)?;
                (r, Event::SyncBeep { time })
            }
            id::AUTOTUNE_CYCLE_START => {
                let (r, [phase, cycle, p, i, d]) = bytes::<5>(input)?;
                let event = Event::AutotuneCycleStart {
                    phase,
                    cycle: cycle & 0x7F,
                    rising: cycle & 0x80 != 0,
                    p,
                    i,
                    d,
                };
                (r, event)
            }
            id::AUTOTUNE_CYCLE_RESULT => {
                let (r, [overshot, p, i, d]) = bytes::<4>(input)?;
                (r, Event::AutotuneCycleResult { overshot, p, i, d })
            }
            id::AUTOTUNE_TARGETS => {
                let (r, current_angle) = s16(input)?;
                let (r, [target, at_peak]) = bytes::<2>(r)?;
                let (r, first_peak_angle) = s16(r)?;
                let (r, second_peak_angle) = s16(r)?;
                let event = Event::AutotuneTargets {
                    current_angle,
                    target_angle: target as i8,
                    target_angle_at_peak: at_peak as i8,
                    first_peak_angle,
                    second_peak_angle,
                };
                (r, event)
            }
            id::INFLIGHT_ADJUSTMENT => {
                let (r, function) = byte(input)?;
                let (r, value) = if function >= 128 {
                    let (r, v) = f32le(r)?;
                    (r, AdjustmentValue::Float(v))
                } else {
                    let (r, v) = signed_vb(r)?;
                    (r, AdjustmentValue::Int(v))
                };
                let event = Event::InflightAdjustment {
                    function: function & 0x7F,
                    value,
                };
                (r, event)
            }
            id::LOGGING_RESUME => {
                let (r, iteration) = unsigned_vb(input)?;
                let (r, time) = unsigned_vb(r)?;
                (r, Event::LoggingResume { iteration, time })
            }
            id::DISARM => {
                let (r, reason) = unsigned_vb(input)?;
                (r, Event::Disarm { reason })
            }
            id::GTUNE_CYCLE_RESULT => {
                let (r, axis) = byte(input)?;
                let (r, gyro_avg) = signed_vb(r)?;
                let (r, new_p) = s16(r)?;
                (
                    r,
                    Event::GtuneCycleResult {
                        axis,
                        gyro_avg,
                        new_p,
                    },
                )
            }
            id::FLIGHT_MODE => {
                let (r, flags) = unsigned_vb(input)?;
                let (r, last_flags) = unsigned_vb(r)?;
                (r, Event::FlightMode { flags, last_flags })
            }
            id::TWITCH_TEST_OR_IMU_FAILURE if dialect == Dialect::Inav => {
                let (r, code) = unsigned_vb(input)?;
                (r, Event::ImuFailure { code })
            }
            id::TWITCH_TEST_OR_IMU_FAILURE => {
                let (r, stage) = byte(input)?;
                let (r, value) = f32le(r)?;
                (r, Event::TwitchTest { stage, value })
            }
            id::GOVERNOR_STATE | id::RESCUE_STATE | id::AIRBORNE_STATE
                if dialect == Dialect::Rotorflight =>
            {
                let (r, state) = unsigned_vb(input)?;
                let event = match id {
                    id::GOVERNOR_STATE => Event::GovernorState { state },
                    id::RESCUE_STATE => Event::RescueState { state },
                    _ => Event::AirborneState { state },
                };
                (r, event)
            }
            id::CUSTOM_DATA | id::CUSTOM_TEXT if dialect == Dialect::Rotorflight => {
                let (r, bytes) = counted(input)?;
                let event = match id {
                    id::CUSTOM_DATA => Event::CustomData { bytes },
                    _ => Event::CustomText { text: bytes },
                };
                (r, event)
            }
            id::LOG_END => {
                let (r, disarm_reason) = log_end(input)?;
                (r, Event::LogEnd { disarm_reason })
            }
            _ => return Ok((input, None)),
        };
        Ok((rest, Some(event)))
    }

    /// The event id.
    pub fn id(&self) -> u8 {
        match self {
            Event::SyncBeep { .. } => id::SYNC_BEEP,
            Event::AutotuneCycleStart { .. } => id::AUTOTUNE_CYCLE_START,
            Event::AutotuneCycleResult { .. } => id::AUTOTUNE_CYCLE_RESULT,
            Event::AutotuneTargets { .. } => id::AUTOTUNE_TARGETS,
            Event::InflightAdjustment { .. } => id::INFLIGHT_ADJUSTMENT,
            Event::LoggingResume { .. } => id::LOGGING_RESUME,
            Event::Disarm { .. } => id::DISARM,
            Event::GtuneCycleResult { .. } => id::GTUNE_CYCLE_RESULT,
            Event::FlightMode { .. } => id::FLIGHT_MODE,
            Event::TwitchTest { .. } | Event::ImuFailure { .. } => id::TWITCH_TEST_OR_IMU_FAILURE,
            Event::GovernorState { .. } => id::GOVERNOR_STATE,
            Event::RescueState { .. } => id::RESCUE_STATE,
            Event::AirborneState { .. } => id::AIRBORNE_STATE,
            Event::CustomData { .. } => id::CUSTOM_DATA,
            Event::CustomText { .. } => id::CUSTOM_TEXT,
            Event::LogEnd { .. } => id::LOG_END,
        }
    }

    /// A stable snake_case name.
    pub fn name(&self) -> &'static str {
        match self {
            Event::SyncBeep { .. } => "sync_beep",
            Event::AutotuneCycleStart { .. } => "autotune_cycle_start",
            Event::AutotuneCycleResult { .. } => "autotune_cycle_result",
            Event::AutotuneTargets { .. } => "autotune_targets",
            Event::InflightAdjustment { .. } => "inflight_adjustment",
            Event::LoggingResume { .. } => "logging_resume",
            Event::Disarm { .. } => "disarm",
            Event::GtuneCycleResult { .. } => "gtune_cycle_result",
            Event::FlightMode { .. } => "flight_mode",
            Event::TwitchTest { .. } => "twitch_test",
            Event::ImuFailure { .. } => "imu_failure",
            Event::GovernorState { .. } => "governor_state",
            Event::RescueState { .. } => "rescue_state",
            Event::AirborneState { .. } => "airborne_state",
            Event::CustomData { .. } => "custom_data",
            Event::CustomText { .. } => "custom_text",
            Event::LogEnd { .. } => "log_end",
        }
    }

    /// The payload as JSON, with the field names the reference viewer uses.
    pub fn data(&self) -> serde_json::Value {
        use serde_json::json;
        match *self {
            Event::SyncBeep { time } => json!({ "time": time }),
            Event::AutotuneCycleStart {
                phase,
                cycle,
                rising,
                p,
                i,
                d,
            } => {
                json!({ "phase": phase, "cycle": cycle, "rising": rising, "p": p, "i": i, "d": d })
            }
            Event::AutotuneCycleResult { overshot, p, i, d } => {
                json!({ "overshot": overshot, "p": p, "i": i, "d": d })
            }
            Event::AutotuneTargets {
                current_angle,
                target_angle,
                target_angle_at_peak,
                first_peak_angle,
                second_peak_angle,
            } => json!({
                "currentAngle": f64::from(current_angle) / 10.0,
                "targetAngle": target_angle,
                "targetAngleAtPeak": target_angle_at_peak,
                "firstPeakAngle": f64::from(first_peak_angle) / 10.0,
                "secondPeakAngle": f64::from(second_peak_angle) / 10.0,
            }),
            Event::InflightAdjustment { function, value } => match value {
                AdjustmentValue::Int(v) => json!({ "func": function, "value": v }),
                AdjustmentValue::Float(v) => json!({ "func": function, "value": v }),
            },
            Event::LoggingResume { iteration, time } => {
                json!({ "logIteration": iteration, "currentTime": time })
            }
            Event::Disarm { reason } => json!({ "reason": reason }),
            Event::GtuneCycleResult {
                axis,
                gyro_avg,
                new_p,
            } => json!({ "axis": axis, "gyroAVG": gyro_avg, "newP": new_p }),
            Event::FlightMode { flags, last_flags } => {
                json!({ "newFlags": flags, "lastFlags": last_flags })
            }
            Event::TwitchTest { stage, value } => json!({ "stage": stage, "value": value }),
            Event::ImuFailure { code } => json!({ "code": code }),
            Event::GovernorState { state } => json!({ "govState": state }),
            Event::RescueState { state } => json!({ "rescueState": state }),
            Event::AirborneState { state } => json!({ "airborneState": state }),
            Event::CustomData { ref bytes } => json!({ "data": bytes }),
            Event::CustomText { ref text } => json!({ "text": String::from_utf8_lossy(text) }),
            Event::LogEnd { disarm_reason } => match disarm_reason {
                Some(r) => json!({ "disarmReason": r }),
                None => json!({}),
            },
        }
    }

    /// Encode the event as an E frame, type byte included.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(b'E');
        out.push(self.id());
        match *self {
            Event::SyncBeep { time } => write_unsigned_vb(out, time),
            Event::AutotuneCycleStart {
                phase,
                cycle,
                rising,
                p,
                i,
                d,
            } => out.extend_from_slice(&[phase, cycle & 0x7F | u8::from(rising) << 7, p, i, d]),
            Event::AutotuneCycleResult { overshot, p, i, d } => {
                out.extend_from_slice(&[overshot, p, i, d])
            }
            Event::AutotuneTargets {
                current_angle,
                target_angle,
                target_angle_at_peak,
                first_peak_angle,
                second_peak_angle,
            } => {
                out.extend_from_slice(&current_angle.to_le_bytes());
                out.extend_from_slice(&[target_angle as u8, target_angle_at_peak as u8]);
                out.extend_from_slice(&first_peak_angle.to_le_bytes());
                out.extend_from_slice(&second_peak_angle.to_le_bytes());
            }
            Event::InflightAdjustment { function, value } => match value {
                AdjustmentValue::Int(v) => {
                    out.push(function & 0x7F);
                    write_signed_vb(out, v);
                }
                AdjustmentValue::Float(v) => {
                    out.push(function | 0x80);
                    out.extend_from_slice(&v.to_le_bytes());
                }
            },
            Event::LoggingResume { iteration, time } => {
                write_unsigned_vb(out, iteration);
                write_unsigned_vb(out, time);
            }
            Event::Disarm { reason } => write_unsigned_vb(out, reason),
            Event::GtuneCycleResult {
                axis,
                gyro_avg,
                new_p,
            } => {
                out.push(axis);
                write_signed_vb(out, gyro_avg);
                out.extend_from_slice(&new_p.to_le_bytes());
            }
            Event::FlightMode { flags, last_flags } => {
                write_unsigned_vb(out, flags);
                write_unsigned_vb(out, last_flags);
            }
            Event::TwitchTest { stage, value } => {
                out.push(stage);
                out.extend_from_slice(&value.to_le_bytes());
            }
            Event::ImuFailure { code } => write_unsigned_vb(out, code),
            Event::GovernorState { state }
            | Event::RescueState { state }
            | Event::AirborneState { state } => write_unsigned_vb(out, state),
            Event::CustomData { bytes: ref counted } | Event::CustomText { text: ref counted } => {
                // Decoded from a length byte, so at most 255 long.
                let counted = &counted[..counted.len().min(255)];
                out.push(counted.len() as u8);
                out.extend_from_slice(counted);
            }
            Event::LogEnd { disarm_reason } => match disarm_reason {
                Some(r) => {
                    out.extend_from_slice(format!("End of log (disarm reason:{r})\0").as_bytes())
                }
                None => out.extend_from_slice(b"End of log\0"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_round_trips() {
        let events = [
            (Event::SyncBeep { time: 123456 }, Dialect::Betaflight),
            (
                Event::AutotuneCycleStart {
                    phase: 1,
                    cycle: 5,
                    rising: true,
                    p: 40,
                    i: 30,
                    d: 20,
                },
                Dialect::Betaflight,
            ),
            (
                Event::AutotuneCycleResult {
                    overshot: 1,
                    p: 2,
                    i: 3,
                    d: 4,
                },
                Dialect::Betaflight,
            ),
            (
                Event::AutotuneTargets {
                    current_angle: -123,
                    target_angle: -20,
                    target_angle_at_peak: 15,
                    first_peak_angle: 300,
                    second_peak_angle: -5,
                },
                Dialect::Betaflight,
            ),
            (
                Event::InflightAdjustment {
                    function: 5,
                    value: AdjustmentValue::Int(-7),
                },
                Dialect::Betaflight,
            ),
            (
                Event::InflightAdjustment {
                    function: 6,
                    value: AdjustmentValue::Float(1.5),
                },
                Dialect::Betaflight,
            ),
            (
                Event::LoggingResume {
                    iteration: 9000,
                    time: 77_000_000,
                },
                Dialect::Betaflight,
            ),
            (Event::Disarm { reason: 4 }, Dialect::Betaflight),
            (
                Event::GtuneCycleResult {
                    axis: 2,
                    gyro_avg: -50,
                    new_p: 45,
                },
                Dialect::Betaflight,
            ),
            (
                Event::FlightMode {
                    flags: 5,
                    last_flags: 1,
                },
                Dialect::Inav,
            ),
            (
                Event::TwitchTest {
                    stage: 3,
                    value: 0.25,
                },
                Dialect::Betaflight,
            ),
            (Event::ImuFailure { code: 2 }, Dialect::Inav),
            (Event::GovernorState { state: 4 }, Dialect::Rotorflight),
            (Event::RescueState { state: 1 }, Dialect::Rotorflight),
            (Event::AirborneState { state: 300 }, Dialect::Rotorflight),
            (
                Event::CustomData {
                    bytes: [0, 255, 7].into(),
                },
                Dialect::Rotorflight,
            ),
            (
                Event::CustomText {
                    text: b"governor spooled up".as_slice().into(),
                },
                Dialect::Rotorflight,
            ),
            (Event::CustomText { text: [].into() }, Dialect::Rotorflight),
            (
                Event::LogEnd {
                    disarm_reason: None,
                },
                Dialect::Betaflight,
            ),
            (
                Event::LogEnd {
                    disarm_reason: Some(4),
                },
                Dialect::Inav,
            ),
        ];
        for (event, dialect) in events {
            let mut out = Vec::new();
            event.encode(&mut out);
            assert_eq!(
                Event::decode(&out[1..], dialect),
                Ok((event.clone(), out.len() - 1)),
                "{event:?}"
            );
        }
    }

    #[test]
    fn unknown_ids_and_bad_end_markers_are_errors() {
        assert_eq!(
            Event::decode(&[77, 1, 2], Dialect::Betaflight),
            Err(EventError::UnknownId(77))
        );
        assert!(Event::decode(b"\xFFEnd of lag\0", Dialect::Betaflight).is_err());
        assert!(Event::decode(b"\xFFEnd of log (disarm reason:x)\0", Dialect::Inav).is_err());
        // Rotorflight's ids are its own.
        assert_eq!(
            Event::decode(&[50, 4], Dialect::Betaflight),
            Err(EventError::UnknownId(50))
        );
        assert_eq!(
            Event::decode(&[101, 1, b'a'], Dialect::Betaflight),
            Err(EventError::UnknownId(101))
        );
        // A length past the bytes there are is a cut payload.
        assert!(matches!(
            Event::decode(&[100, 3, 1, 2], Dialect::Rotorflight),
            Err(EventError::Codec(_))
        ));
    }
}
