//! Synthetic flights: small, deterministic Blackbox logs used as the project's own corpus and test
//! input.
//!
//! Each [`Layout`] writes the header a firmware writes: its field names, signed flags, predictors
//! and encodings (copied from real logs of that firmware), its settings lines, and its sequence of
//! slow frames, GPS frames and events. [`Codes`] swaps in the encodings no firmware layout uses
//! (Elias delta and gamma, TAG2_3SVARIABLE) so that every encoding of the format can be tested.
//! [`flight`] writes one session, [`flights`] several in one file.

use crate::blackbox::event::Event;
use crate::blackbox::frame::FrameKind;
use crate::blackbox::writer::SessionWriter;
use std::ops::Range;

/// Which firmware's header, field layout and frame sequence to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Betaflight 3.1: 30 main fields (four debug channels, no feed-forward), P interval as a
    /// fraction (`1/4`), no disarm event.
    Betaflight3,
    /// Betaflight 4.2: 38 main fields (feed-forward, setpoints, RSSI, four debug channels), P
    /// interval as an integer with `P ratio`, a disarm event before the log end.
    Betaflight4,
    /// INAV 9.0 on a multirotor: 97 main fields (navigation, gyro peaks, attitude), 28 slow fields
    /// written often, a GPS frame with fix type and velocities, the disarm reason in the log end.
    Inav,
    /// A reduced Betaflight 4.2 field set (27 fields: no feed-forward, setpoints or RSSI, one debug
    /// channel) with Betaflight 4.2's predictors and encodings: the layout of the shipped demo log.
    Reduced,
}

impl Layout {
    /// Every layout.
    pub const ALL: [Layout; 4] = [
        Layout::Betaflight3,
        Layout::Betaflight4,
        Layout::Inav,
        Layout::Reduced,
    ];
}

/// Which encodings the frames use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codes {
    /// The encodings the firmware writes.
    Firmware,
    /// Elias delta (ids 4 and 5) for `loopIteration` and `time` and for the fields predicted from
    /// the average of two frames, and TAG2_3SVARIABLE (id 10, as Betaflight and INAV logs mean it)
    /// for the triples the firmware writes as TAG2_3S32.
    EliasDelta,
    /// Elias gamma (ids 10 and 11, as logs of the original Cleanflight mean them) and Elias delta.
    /// The header names a Cleanflight build by a bare git hash, which gives id 10 that meaning.
    EliasGamma,
}

/// What to generate.
#[derive(Debug, Clone)]
pub struct FlightSpec {
    /// The firmware whose layout and frame sequence to write.
    pub layout: Layout,
    /// Which encodings to write.
    pub codes: Codes,
    /// `H Data version` (1 lays TAG8_4S16 out differently from 2).
    pub data_version: u32,
    /// Seed of the deterministic noise.
    pub seed: u64,
    /// Main-loop iterations to log.
    pub iterations: u32,
    /// Time between main-loop iterations in µs.
    pub loop_time_us: u32,
    /// Boot time of the first iteration in µs (set near 2^32 to exercise the rollover).
    pub start_time_us: u64,
    /// `H I interval`.
    pub i_interval: u32,
    /// `H P interval` as the firmware writes it: `1/4` (Betaflight 3, INAV) or `4` (Betaflight 4,
    /// which adds `P ratio`).
    pub p_interval: String,
    /// Log GPS home and position frames.
    pub gps: bool,
    /// Iterations during which logging is paused; it resumes at `end` (on the I interval) with a
    /// logging-resume event, as the firmware does when the Blackbox switch is flipped back.
    pub paused: Option<Range<u32>>,
    /// Fly hard: what real flights do that a value rule could take for damage: a throttle punch,
    /// sensors read every few frames (the current now and then reading 0), sharp transients with
    /// a motor at each end of its range, a crash, scheduler slips.
    pub hazards: bool,
}

impl FlightSpec {
    /// A flight with the settings the firmware of `layout` typically logs with.
    pub fn new(layout: Layout) -> FlightSpec {
        let (iterations, loop_time_us, i_interval, p_interval, gps) = match layout {
            Layout::Betaflight3 => (1024, 125, 32, "1/4", false),
            Layout::Betaflight4 => (2048, 250, 128, "4", true),
            Layout::Inav => (512, 500, 32, "1/2", true),
            Layout::Reduced => (4096, 125, 256, "8", true),
        };
        FlightSpec {
            layout,
            codes: Codes::Firmware,
            data_version: 2,
            seed: 1,
            iterations,
            loop_time_us,
            start_time_us: 30_000_000,
            i_interval,
            p_interval: p_interval.into(),
            gps,
            paused: None,
            hazards: false,
        }
    }

    fn is_paused(&self, n: u32) -> bool {
        self.paused.as_ref().is_some_and(|p| p.contains(&n))
    }
}

impl Default for FlightSpec {
    fn default() -> Self {
        FlightSpec::new(Layout::Betaflight4)
    }
}

/// A small xorshift generator: deterministic noise without a dependency.
pub(crate) struct Noise(u64);

impl Noise {
    pub(crate) fn new(seed: u64) -> Noise {
        Noise(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in `[-amplitude, amplitude]`.
    pub(crate) fn jitter(&mut self, amplitude: i64) -> i64 {
        (self.next() % (2 * amplitude as u64 + 1)) as i64 - amplitude
    }
}

/// The header columns of main frames.
struct MainColumns {
    names: &'static str,
    signed: &'static str,
    i_predictor: &'static str,
    i_encoding: &'static str,
    p_predictor: &'static str,
    p_encoding: &'static str,
}

/// The header columns of an S, G or H frame.
struct Columns {
    names: &'static str,
    signed: &'static str,
    predictor: &'static str,
    encoding: &'static str,
}

/// Betaflight 3.1.5.
const BF3_MAIN: MainColumns = MainColumns {
    names: "loopIteration,time,axisP[0],axisP[1],axisP[2],axisI[0],axisI[1],axisI[2],axisD[0],\
            axisD[1],axisD[2],rcCommand[0],rcCommand[1],rcCommand[2],rcCommand[3],vbatLatest,\
            gyroADC[0],gyroADC[1],gyroADC[2],accSmooth[0],accSmooth[1],accSmooth[2],debug[0],\
            debug[1],debug[2],debug[3],motor[0],motor[1],motor[2],motor[3]",
    signed: "0,0,1,1,1,1,1,1,1,1,1,1,1,1,0,0,1,1,1,1,1,1,1,1,1,1,0,0,0,0",
    i_predictor: "0,0,0,0,0,0,0,0,0,0,0,0,0,0,4,9,0,0,0,0,0,0,0,0,0,0,11,5,5,5",
    i_encoding: "1,1,0,0,0,0,0,0,0,0,0,0,0,0,1,3,0,0,0,0,0,0,0,0,0,0,1,0,0,0",
    p_predictor: "6,2,1,1,1,1,1,1,1,1,1,1,1,1,1,1,3,3,3,3,3,3,3,3,3,3,3,3,3,3",
    p_encoding: "9,0,0,0,0,7,7,7,0,0,0,8,8,8,8,6,0,0,0,0,0,0,0,0,0,0,0,0,0,0",
};

/// Betaflight 4.2.9 with four debug channels.
const BF4_MAIN: MainColumns = MainColumns {
    names: "loopIteration,time,axisP[0],axisP[1],axisP[2],axisI[0],axisI[1],axisI[2],axisD[0],\
            axisD[1],axisF[0],axisF[1],axisF[2],rcCommand[0],rcCommand[1],rcCommand[2],\
            rcCommand[3],setpoint[0],setpoint[1],setpoint[2],setpoint[3],vbatLatest,\
            amperageLatest,rssi,gyroADC[0],gyroADC[1],gyroADC[2],accSmooth[0],accSmooth[1],\
            accSmooth[2],debug[0],debug[1],debug[2],debug[3],motor[0],motor[1],motor[2],motor[3]",
    signed: "0,0,1,1,1,1,1,1,1,1,1,1,1,1,1,1,0,1,1,1,1,0,1,0,1,1,1,1,1,1,1,1,1,1,0,0,0,0",
    i_predictor: "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,9,0,0,0,0,0,0,0,0,0,0,0,0,11,5,5,5",
    i_encoding: "1,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1,0,0,0,0,3,0,1,0,0,0,0,0,0,0,0,0,0,1,0,0,0",
    p_predictor: "6,2,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,3,3,3,3,3,3,3,3,3,3,3,3,3,3",
    p_encoding: "9,0,0,0,0,7,7,7,0,0,0,0,0,8,8,8,8,8,8,8,8,6,6,6,0,0,0,0,0,0,0,0,0,0,0,0,0,0",
};

/// INAV 9.0.1 on a multirotor.
const INAV_MAIN: MainColumns = MainColumns {
    names: "loopIteration,time,axisRate[0],axisRate[1],axisRate[2],axisP[0],axisP[1],axisP[2],\
            axisI[0],axisI[1],axisI[2],axisD[0],axisD[1],axisF[0],axisF[1],axisF[2],\
            mcPosAxisP[0],mcPosAxisP[1],mcPosAxisP[2],mcVelAxisP[0],mcVelAxisP[1],mcVelAxisP[2],\
            mcVelAxisI[0],mcVelAxisI[1],mcVelAxisI[2],mcVelAxisD[0],mcVelAxisD[1],mcVelAxisD[2],\
            mcVelAxisFF[0],mcVelAxisFF[1],mcVelAxisFF[2],mcVelAxisOut[0],mcVelAxisOut[1],\
            mcVelAxisOut[2],mcSurfaceP,mcSurfaceI,mcSurfaceD,mcSurfaceOut,rcCommand[0],\
            rcCommand[1],rcCommand[2],rcCommand[3],vbat,amperage,magADC[0],magADC[1],magADC[2],\
            BaroAlt,AirSpeed,rssi,gyroADC[0],gyroADC[1],gyroADC[2],gyroRaw[0],gyroRaw[1],\
            gyroRaw[2],gyroPeakRoll[0],gyroPeakRoll[1],gyroPeakRoll[2],gyroPeakPitch[0],\
            gyroPeakPitch[1],gyroPeakPitch[2],gyroPeakYaw[0],gyroPeakYaw[1],gyroPeakYaw[2],\
            accSmooth[0],accSmooth[1],accSmooth[2],accVib,attitude[0],attitude[1],attitude[2],\
            motor[0],motor[1],motor[2],motor[3],navState,navFlags,navEPH,navEPV,navPos[0],\
            navPos[1],navPos[2],navVel[0],navVel[1],navVel[2],navTgtVel[0],navTgtVel[1],\
            navTgtVel[2],navTgtPos[0],navTgtPos[1],navTgtPos[2],navTgtHdg,navSurf,navAcc[0],\
            navAcc[1],navAcc[2]",
    signed: "0,0,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,\
             0,0,1,1,1,1,1,1,0,1,1,1,1,1,1,0,0,0,0,0,0,0,0,0,1,1,1,0,1,1,1,0,0,0,0,1,0,1,1,1,1,\
             1,1,1,1,1,1,1,1,1,1,0,1,1,1,1",
    i_predictor: "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,\
                  0,0,0,4,9,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,4,5,5,5,\
                  0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0",
    i_encoding: "1,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,\
                 0,0,0,1,3,0,0,0,0,0,0,1,0,0,0,0,0,0,1,1,1,1,1,1,1,1,1,0,0,0,1,0,0,0,1,0,0,0,\
                 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0",
    p_predictor: "6,2,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,\
                  1,1,1,1,1,1,1,1,1,1,1,1,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,\
                  1,1,1,1,1,1,1,3,3,3,3,3,3,1,1,1,1,1,3,3,3",
    p_encoding: "9,0,0,0,0,0,0,0,7,7,7,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,\
                 8,8,8,8,6,6,6,6,6,6,6,6,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,\
                 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0",
};

/// The reduced Betaflight 4.2 set of the demo log.
const REDUCED_MAIN: MainColumns = MainColumns {
    names: "loopIteration,time,axisP[0],axisP[1],axisP[2],axisI[0],axisI[1],axisI[2],axisD[0],\
            axisD[1],rcCommand[0],rcCommand[1],rcCommand[2],rcCommand[3],vbatLatest,\
            amperageLatest,gyroADC[0],gyroADC[1],gyroADC[2],accSmooth[0],accSmooth[1],\
            accSmooth[2],debug[0],motor[0],motor[1],motor[2],motor[3]",
    signed: "0,0,1,1,1,1,1,1,1,1,1,1,1,0,0,1,1,1,1,1,1,1,1,0,0,0,0",
    i_predictor: "0,0,0,0,0,0,0,0,0,0,0,0,0,0,9,0,0,0,0,0,0,0,0,11,5,5,5",
    i_encoding: "1,1,0,0,0,0,0,0,0,0,0,0,0,1,3,0,0,0,0,0,0,0,0,1,0,0,0",
    p_predictor: "6,2,1,1,1,1,1,1,1,1,1,1,1,1,1,1,3,3,3,3,3,3,3,3,3,3,3",
    p_encoding: "9,0,0,0,0,7,7,7,0,0,8,8,8,8,6,6,0,0,0,0,0,0,0,0,0,0,0",
};

/// Betaflight's slow frame (3.x and 4.x alike).
const BF_SLOW: Columns = Columns {
    names: "flightModeFlags,stateFlags,failsafePhase,rxSignalReceived,rxFlightChannelsValid",
    signed: "0,0,0,0,0",
    predictor: "0,0,0,0,0",
    encoding: "1,1,7,7,7",
};

/// INAV's slow frame.
const INAV_SLOW: Columns = Columns {
    names: "activeWpNumber,flightModeFlags,flightModeFlags2,activeFlightModeFlags,stateFlags,\
            failsafePhase,rxSignalReceived,rxFlightChannelsValid,rxUpdateRate,hwHealthStatus,\
            powerSupplyImpedance,sagCompensatedVBat,wind[0],wind[1],wind[2],mspOverrideFlags,\
            IMUTemperature,baroTemperature,sens0Temp,sens1Temp,sens2Temp,sens3Temp,sens4Temp,\
            sens5Temp,sens6Temp,sens7Temp,escRPM,escTemperature",
    signed: "0,0,0,0,0,0,0,0,0,0,0,0,1,1,1,0,1,1,1,1,1,1,1,1,1,1,0,1",
    predictor: "0,0,0,0,0,0,0,0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1",
    encoding: "1,1,1,1,1,7,7,7,1,1,1,1,0,0,0,1,0,0,0,0,0,0,0,0,0,0,1,0",
};

/// The GPS home frame (Betaflight and INAV alike).
const HOME: Columns = Columns {
    names: "GPS_home[0],GPS_home[1]",
    signed: "1,1",
    predictor: "0,0",
    encoding: "0,0",
};

/// Betaflight's GPS frame up to 4.4 (the altitude unsigned).
const BF_GPS: Columns = Columns {
    names: "time,GPS_numSat,GPS_coord[0],GPS_coord[1],GPS_altitude,GPS_speed,GPS_ground_course",
    signed: "0,0,1,1,0,0,0",
    predictor: "10,0,7,7,0,0,0",
    encoding: "1,1,0,0,1,1,1",
};

/// INAV's GPS frame.
const INAV_GPS: Columns = Columns {
    names: "time,GPS_fixType,GPS_numSat,GPS_coord[0],GPS_coord[1],GPS_altitude,GPS_speed,\
            GPS_ground_course,GPS_hdop,GPS_eph,GPS_epv,GPS_velned[0],GPS_velned[1],GPS_velned[2]",
    signed: "0,0,0,1,1,1,0,0,0,0,0,1,1,1",
    predictor: "10,0,0,7,7,0,0,0,0,0,0,0,0,0",
    encoding: "1,1,1,0,0,0,1,1,1,1,1,0,0,0",
};

/// The demo log's GPS frame.
const REDUCED_GPS: Columns = Columns {
    names: "time,GPS_numSat,GPS_coord[0],GPS_coord[1],GPS_altitude,GPS_speed,GPS_ground_course",
    signed: "0,0,1,1,1,0,0",
    predictor: "10,0,7,7,0,0,0",
    encoding: "1,1,0,0,1,1,1",
};

/// Everything a layout writes in its header besides the settings.
struct LayoutDef {
    main: MainColumns,
    slow: Columns,
    gps: Columns,
    home: Columns,
}

fn layout_def(layout: Layout) -> LayoutDef {
    match layout {
        Layout::Betaflight3 => LayoutDef {
            main: BF3_MAIN,
            slow: BF_SLOW,
            gps: BF_GPS,
            home: HOME,
        },
        Layout::Betaflight4 => LayoutDef {
            main: BF4_MAIN,
            slow: BF_SLOW,
            gps: BF_GPS,
            home: HOME,
        },
        Layout::Inav => LayoutDef {
            main: INAV_MAIN,
            slow: INAV_SLOW,
            gps: INAV_GPS,
            home: HOME,
        },
        Layout::Reduced => LayoutDef {
            main: REDUCED_MAIN,
            slow: BF_SLOW,
            gps: REDUCED_GPS,
            home: HOME,
        },
    }
}

/// A column of a header line: the items of a comma-separated list (whitespace of line
/// continuations removed).
fn items(column: &str) -> Vec<String> {
    column
        .split(',')
        .map(|s| s.trim().to_owned())
        .collect::<Vec<_>>()
}

fn numbers(column: &str) -> Vec<u32> {
    items(column)
        .iter()
        .map(|s| s.parse().expect("a number"))
        .collect()
}

fn join<T: ToString>(items: &[T]) -> String {
    items
        .iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// The main-frame header lines of a layout with the encodings `codes` asks for.
fn main_lines(main: &MainColumns, codes: Codes) -> Vec<(String, String)> {
    let names = items(main.names);
    let mut i_encoding = numbers(main.i_encoding);
    let p_predictor = numbers(main.p_predictor);
    let mut p_encoding = numbers(main.p_encoding);
    let mut averaged = 0;
    for (k, name) in names.iter().enumerate() {
        let (i_code, p_code) = match (codes, name.as_str()) {
            (Codes::Firmware, _) => continue,
            (Codes::EliasDelta, "loopIteration") => (4, p_encoding[k]),
            (Codes::EliasDelta, "time") => (4, 5),
            (Codes::EliasGamma, "loopIteration") => (10, p_encoding[k]),
            (Codes::EliasGamma, "time") => (4, 11),
            (_, _) if p_predictor[k] == 3 && p_encoding[k] == 0 => {
                averaged += 1;
                let code = match codes {
                    Codes::EliasGamma if averaged % 2 == 0 => 11,
                    _ => 5,
                };
                (i_encoding[k], code)
            }
            (Codes::EliasDelta, _) if p_encoding[k] == 7 => (i_encoding[k], 10),
            _ => continue,
        };
        i_encoding[k] = i_code;
        p_encoding[k] = p_code;
    }
    vec![
        ("Field I name".into(), join(&names)),
        ("Field I signed".into(), join(&items(main.signed))),
        ("Field I predictor".into(), join(&items(main.i_predictor))),
        ("Field I encoding".into(), join(&i_encoding)),
        ("Field P predictor".into(), join(&p_predictor)),
        ("Field P encoding".into(), join(&p_encoding)),
    ]
}

fn frame_lines(letter: &str, columns: &Columns) -> Vec<(String, String)> {
    [
        ("name", columns.names),
        ("signed", columns.signed),
        ("predictor", columns.predictor),
        ("encoding", columns.encoding),
    ]
    .into_iter()
    .map(|(what, column)| (format!("Field {letter} {what}"), join(&items(column))))
    .collect()
}

/// Settings the values depend on.
#[derive(Debug, Clone, Copy)]
struct Settings {
    minthrottle: i64,
    motor_min: i64,
    motor_max: i64,
    vbatref: i64,
    /// Battery sag at full throttle, in the layout's voltage unit.
    vbat_sag: i64,
}

fn settings(layout: Layout) -> Settings {
    match layout {
        // Betaflight 3.1 logs the battery in 0.1 V, later versions in 0.01 V.
        Layout::Betaflight3 => Settings {
            minthrottle: 1070,
            motor_min: 138,
            motor_max: 2047,
            vbatref: 165,
            vbat_sag: 6,
        },
        Layout::Betaflight4 | Layout::Reduced => Settings {
            minthrottle: 1070,
            motor_min: 158,
            motor_max: 2047,
            vbatref: 1650,
            vbat_sag: 60,
        },
        Layout::Inav => Settings {
            minthrottle: 1080,
            motor_min: 1080,
            motor_max: 2000,
            vbatref: 1606,
            vbat_sag: 60,
        },
    }
}

/// A firmware revision for the header: the firmware's own form, or a bare git hash (the original
/// Cleanflight's form) when the encodings need id 10 to mean Elias gamma.
fn revision(spec: &FlightSpec, version: &str) -> String {
    match spec.codes {
        Codes::EliasGamma => {
            let hash = Noise::new(spec.seed ^ 0xC1EA_4F11).next() & 0xFFF_FFFF;
            format!("{hash:07x}")
        }
        _ => format!("{version} (synthetic) SYNTH"),
    }
}

fn s<A: Into<String>, B: Into<String>>(name: A, value: B) -> (String, String) {
    (name.into(), value.into())
}

fn header_lines(spec: &FlightSpec) -> Vec<(String, String)> {
    let def = layout_def(spec.layout);
    let set = settings(spec.layout);
    let mut fields = main_lines(&def.main, spec.codes);
    let gps_lines = || {
        let mut lines = frame_lines("H", &def.home);
        lines.extend(frame_lines("G", &def.gps));
        lines
    };
    let data_version = s("Data version", spec.data_version.to_string());
    let i_interval = s("I interval", spec.i_interval.to_string());
    let p_interval = s("P interval", spec.p_interval.clone());
    let craft = s("Craft name", format!("synthetic-{}", spec.seed));
    let motor_output = s(
        "motorOutput",
        format!("{},{}", set.motor_min, set.motor_max),
    );
    let vbatref = s("vbatref", set.vbatref.to_string());
    let gyro_denom = spec.loop_time_us.div_ceil(125).max(1);
    let mut lines = vec![data_version];
    match spec.layout {
        Layout::Betaflight3 => {
            lines.push(i_interval);
            lines.append(&mut fields);
            if spec.gps {
                lines.extend(gps_lines());
            }
            lines.extend(frame_lines("S", &def.slow));
            lines.extend([
                s("Firmware type", "Cleanflight"),
                s("Firmware revision", revision(spec, "Betaflight 3.1.5")),
                s("Firmware date", "Feb  7 2017 22:20:12"),
                craft,
                p_interval,
                s("minthrottle", set.minthrottle.to_string()),
                s("maxthrottle", "2000"),
                s("gyro_scale", "0x3f800000"),
                motor_output,
                s("acc_1G", "2048"),
                s("vbatscale", "110"),
                s("vbatcellvoltage", "33,35,43"),
                vbatref,
                s("looptime", "125"),
                s("gyro_sync_denom", "1"),
                s("pid_process_denom", gyro_denom.to_string()),
                s("rcRate", "100"),
                s("rollPID", "44,40,30"),
                s("pitchPID", "58,50,35"),
                s("yawPID", "70,45,20"),
                s("debug_mode", "0"),
            ]);
        }
        Layout::Betaflight4 => {
            lines.append(&mut fields);
            if spec.gps {
                lines.extend(gps_lines());
            }
            lines.extend(frame_lines("S", &def.slow));
            let p_ratio = spec.i_interval / spec.p_interval.parse::<u32>().unwrap_or(1).max(1);
            lines.extend([
                s("Firmware type", "Cleanflight"),
                s("Firmware revision", revision(spec, "Betaflight 4.2.9")),
                s("Firmware date", "Apr 27 2021 19:34:29"),
                s("Board information", "SYNT SYNTHETICF7"),
                s("Log start datetime", "0000-01-01T00:00:00.000+00:00"),
                craft,
                i_interval,
                p_interval,
                s("P ratio", p_ratio.to_string()),
                s("minthrottle", set.minthrottle.to_string()),
                s("maxthrottle", "2000"),
                s("gyro_scale", "0x3f800000"),
                motor_output,
                s("acc_1G", "2048"),
                s("vbat_scale", "110"),
                s("vbatcellvoltage", "330,350,430"),
                vbatref,
                s("currentSensor", "0,400"),
                s("looptime", "125"),
                s("gyro_sync_denom", "1"),
                s("pid_process_denom", gyro_denom.to_string()),
                s("rollPID", "45,80,40"),
                s("pitchPID", "47,84,46"),
                s("yawPID", "45,80,0"),
                s("motor_pwm_protocol", "6"),
                s("debug_mode", "6"),
                s("features", "541130760"),
            ]);
        }
        Layout::Inav => {
            lines.push(i_interval);
            lines.append(&mut fields);
            if spec.gps {
                lines.extend(gps_lines());
            }
            lines.extend(frame_lines("S", &def.slow));
            lines.extend([
                s("Firmware type", "Cleanflight"),
                s("Firmware revision", revision(spec, "INAV 9.0.1")),
                s("Firmware date", "Feb 13 2026 06:54:14"),
                s("Log start datetime", "2026-01-01T12:00:00.000+00:00"),
                craft,
                p_interval,
                s("minthrottle", set.minthrottle.to_string()),
                s("maxthrottle", "2000"),
                s("gyro_scale", "0x3f800000"),
                motor_output,
                s("acc_1G", "2048"),
                s("vbat_scale", "110"),
                s("vbatcellvoltage", "33,35,42"),
                vbatref,
                s("currentMeter", "0,200"),
                s("looptime", spec.loop_time_us.to_string()),
                s("rollPID", "32,82,32,100"),
                s("pitchPID", "35,90,35,110"),
                s("yawPID", "40,84,0,100"),
                s("motor_pwm_protocol", "6"),
                s("debug_mode", "0"),
            ]);
        }
        Layout::Reduced => {
            lines.extend([i_interval, p_interval, s("P ratio", "16")]);
            lines.append(&mut fields);
            lines.extend(frame_lines("S", &def.slow));
            if spec.gps {
                lines.extend(gps_lines());
            }
            lines.extend([
                s("Firmware type", "Cleanflight"),
                s("Firmware revision", revision(spec, "Betaflight 4.2.9")),
                s("Firmware date", "Jan  1 2026 00:00:00"),
                craft,
                s("looptime", spec.loop_time_us.to_string()),
                s("minthrottle", set.minthrottle.to_string()),
                vbatref,
                motor_output,
                s("motor_pwm_protocol", "6"),
                s("debug_mode", "0"),
                s("acc_1G", "2048"),
            ]);
        }
    }
    lines
}

/// A triangle wave of `period` iterations between `-amplitude` and `amplitude`: integer-only, so
/// the generated bytes are the same on every machine.
fn wave(n: u32, period: u32, amplitude: i64) -> i64 {
    let period = i64::from(period.max(2));
    let half = period / 2;
    let p = i64::from(n) % period;
    let rise = if p < half { p } else { period - p };
    amplitude * (2 * rise - half) / half
}

/// The 32-bit `time` of iteration `n`, with a little scheduling jitter (and, flying hard, an
/// iteration now and then that runs late by two fifths of the loop time).
fn loop_time(spec: &FlightSpec, n: u32, noise: &mut Noise) -> i64 {
    let slip = if spec.hazards && n % 613 == 300 {
        u64::from(spec.loop_time_us) * 2 / 5
    } else {
        0
    };
    let t =
        spec.start_time_us + u64::from(n) * u64::from(spec.loop_time_us) + noise.next() % 3 + slip;
    (t & 0xFFFF_FFFF) as i64
}

/// What a hard flight does that a value rule could take for damage, by iteration: a throttle
/// punch that stays, a current sensor and a barometer read every few frames (held, then jumping
/// either way; the current now and then reading 0, from a third of the flight near the top of
/// its range and from two fifths to half at its top, but for one reading whose next lands on an I
/// frame), sharp transients
/// (the P term of one axis growing fourfold every four iterations to 2048 and back, the gyro
/// with it, one motor at its top and another at its bottom: a prop strike or a desync) at three
/// fifths of the flight and ending on the I frame after seven tenths, a stick moved after a calm
/// stretch at four fifths (the D term holding a new value from one receiver frame to the next,
/// the second of them on an I frame, the motors answering), and a crash in the last sixteenth
/// (gyro and accelerometer at their limits, swinging, motors at their bottom).
struct Hazards {
    on: bool,
    iterations: u32,
    i_interval: u32,
}

impl Hazards {
    /// Throttle added from a fifth of the flight on.
    fn punch(&self, n: u32) -> i64 {
        if self.on && n >= self.iterations / 5 {
            44
        } else {
            0
        }
    }

    /// The iteration whose reading a sensor read every `every` iterations holds at `n`.
    fn held(&self, n: u32, every: u32) -> u32 {
        if self.on { n - n % every } else { n }
    }

    /// The first iteration, from `from` on, of the last reading of a sensor read every `every`
    /// iterations before a reading that lands on an I frame.
    fn reading_before_i_frame(&self, from: u32, every: u32) -> u32 {
        let interval = self.i_interval.max(1);
        let both = every / gcd(every, interval) * interval;
        from.next_multiple_of(both) + both - every
    }

    /// The current sensor's reading at `n` near the top of its range, from a third to half of
    /// the flight: jumping by up to `CURRENT_JUMPS` from one reading to the next, then from two
    /// fifths on resting at the top, where one reading (the one before a reading on an I frame,
    /// after a rest of at least 16 I-frame intervals) dips by `CURRENT_DIP`.
    fn high_current(&self, n: u32) -> Option<i64> {
        let (start, top, end) = (
            self.iterations / 3,
            self.iterations / 5 * 2,
            self.iterations / 2,
        );
        if !self.on || n < start || n >= end {
            return None;
        }
        let held = self.held(n, CURRENT_EVERY);
        if n < top {
            return Some(CURRENT_TOP - reading_noise(held, CURRENT_JUMPS).abs());
        }
        let dip = self.reading_before_i_frame(top + 16 * self.i_interval, CURRENT_EVERY);
        Some(CURRENT_TOP - if held == dip { CURRENT_DIP } else { 0 })
    }

    /// The receiver frame the stick move holds at `n`, counted from its first, and the
    /// iterations since that first: the move starts at four fifths of the flight on the receiver
    /// frame before one on an I frame, and lasts four receiver frames.
    fn stick_move(&self, n: u32) -> Option<(usize, i64)> {
        let first = self.reading_before_i_frame(self.iterations / 5 * 4, RC_EVERY);
        let since = n
            .checked_sub(first)
            .filter(|&k| self.on && k < 4 * RC_EVERY)?;
        Some(((since / RC_EVERY) as usize, i64::from(since)))
    }

    /// The transients' offset at `n`: -8, -32, -128, -512, -2048 over four iterations each.
    fn transient(&self, n: u32) -> i64 {
        let interval = self.i_interval.max(1);
        let on_i_frame = (self.iterations / 10 * 7).next_multiple_of(interval) - 20;
        [self.iterations / 5 * 3, on_i_frame]
            .into_iter()
            .find_map(|start| n.checked_sub(start).filter(|&k| self.on && k < 20))
            .map_or(0, |k| -8 << (2 * (k / 4)))
    }

    /// Whether the craft has crashed by `n`, and which way its sensors swing then.
    fn crash(&self, n: u32) -> Option<i64> {
        let sign = if (n / 6).is_multiple_of(2) { 1 } else { -1 };
        (self.on && n >= self.iterations - self.iterations / 16).then_some(sign)
    }
}

/// Iterations between two readings of the current sensor of a hard flight.
const CURRENT_EVERY: u32 = 24;
/// The current sensor's top reading, how far its readings near the top jump, and how far one
/// reading at the top dips below it.
const CURRENT_TOP: i64 = 4000;
const CURRENT_JUMPS: i64 = 2000;
const CURRENT_DIP: i64 = 1500;
/// Iterations between two receiver frames of a hard flight.
const RC_EVERY: u32 = 40;
/// The D term of a stick move, one value a receiver frame: the second comes back to rest.
const STICK_D_TERM: [i64; 4] = [-66, 2, -60, 50];

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// A reading that jumps when it is taken: a hash of the iteration read, within ±`amplitude`.
fn reading_noise(n: u32, amplitude: i64) -> i64 {
    Noise::new(u64::from(n)).jitter(amplitude)
}

/// The main-frame values of iteration `n` in the reduced layout: smooth motion plus noise.
fn reduced_values(spec: &FlightSpec, n: u32, noise: &mut Noise, out: &mut [i64]) {
    out[0] = i64::from(n);
    out[1] = loop_time(spec, n, noise);
    for axis in 0..3u32 {
        let period = 2400 + axis * 1700;
        let a = axis as usize;
        out[2 + a] = wave(n, period, 40) + noise.jitter(3);
        out[5 + a] = wave(n, period * 10, 20);
        out[10 + a] = wave(n, period * 2, 300);
        out[16 + a] = wave(n, period, 500) + noise.jitter(20);
        out[19 + a] =
            wave(n, period * 3, 200) + noise.jitter(10) + if axis == 2 { 2048 } else { 0 };
    }
    out[8] = wave(n, 1200, 15) + noise.jitter(2);
    out[9] = wave(n, 1000, 15) + noise.jitter(2);
    out[13] = 1400 + wave(n, 12000, 300);
    out[14] = 1600 - i64::from(n / 64) % 40;
    out[15] = 1200 + wave(n, 12000, 400).abs();
    out[22] = noise.jitter(1000);
    for m in 0..4u32 {
        out[23 + m as usize] = (900 + wave(n, 2400 + m * 480, 250) + noise.jitter(5)).max(158);
    }
}

/// What a main field holds, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quantity {
    Iteration,
    Time,
    PidP(u32),
    PidI(u32),
    PidD(u32),
    FeedForward(u32),
    Rate(u32),
    Stick(u32),
    Throttle,
    ThrottleSetpoint,
    Battery,
    Current,
    Rssi,
    Gyro(u32),
    GyroRaw(u32),
    GyroPeak(u32),
    Acc(u32),
    AccVibration,
    Mag(u32),
    BaroAlt,
    Attitude(u32),
    Debug(u32),
    Motor(u32),
    NavEph,
    NavEpv,
    /// Navigation and fixed-wing controllers, idle in an acro or angle flight.
    Idle,
}

fn quantity(name: &str) -> Quantity {
    let (base, index) = match name.split_once('[') {
        Some((base, rest)) => (base, rest.trim_end_matches(']').parse().unwrap_or(0)),
        None => (name, 0),
    };
    match (base, index) {
        ("loopIteration", _) => Quantity::Iteration,
        ("time", _) => Quantity::Time,
        ("axisP", a) => Quantity::PidP(a),
        ("axisI", a) => Quantity::PidI(a),
        ("axisD", a) => Quantity::PidD(a),
        ("axisF", a) => Quantity::FeedForward(a),
        ("axisRate", a) => Quantity::Rate(a),
        ("setpoint", 3) => Quantity::ThrottleSetpoint,
        ("setpoint", a) => Quantity::Rate(a),
        ("rcCommand", 3) => Quantity::Throttle,
        ("rcCommand", a) => Quantity::Stick(a),
        ("vbatLatest" | "vbat", _) => Quantity::Battery,
        ("amperageLatest" | "amperage", _) => Quantity::Current,
        ("rssi", _) => Quantity::Rssi,
        ("gyroADC", a) => Quantity::Gyro(a),
        ("gyroRaw", a) => Quantity::GyroRaw(a),
        ("gyroPeakRoll", k) => Quantity::GyroPeak(k),
        ("gyroPeakPitch", k) => Quantity::GyroPeak(k + 1),
        ("gyroPeakYaw", k) => Quantity::GyroPeak(k + 2),
        ("accSmooth", a) => Quantity::Acc(a),
        ("accVib", _) => Quantity::AccVibration,
        ("magADC", a) => Quantity::Mag(a),
        ("BaroAlt", _) | ("navPos", 2) => Quantity::BaroAlt,
        ("attitude", a) => Quantity::Attitude(a),
        ("debug", a) => Quantity::Debug(a),
        ("motor", m) => Quantity::Motor(m),
        ("navEPH", _) => Quantity::NavEph,
        ("navEPV", _) => Quantity::NavEpv,
        _ => Quantity::Idle,
    }
}

/// Main-frame values for the firmware layouts, field by field from the names.
struct MainModel {
    quantities: Vec<Quantity>,
    signed: Vec<bool>,
    settings: Settings,
}

impl MainModel {
    fn new(layout: Layout) -> MainModel {
        let def = layout_def(layout);
        MainModel {
            quantities: items(def.main.names).iter().map(|n| quantity(n)).collect(),
            signed: numbers(def.main.signed).iter().map(|&s| s != 0).collect(),
            settings: settings(layout),
        }
    }

    /// Throttle in per mille of its range at iteration `n`.
    fn throttle(n: u32) -> i64 {
        350 + wave(n, 6000, 250)
    }

    fn values(&self, spec: &FlightSpec, n: u32, noise: &mut Noise, out: &mut [i64]) {
        let set = self.settings;
        let hazards = Hazards {
            on: spec.hazards,
            iterations: spec.iterations,
            i_interval: spec.i_interval,
        };
        let crash = hazards.crash(n);
        let thr = if crash.is_some() {
            0
        } else {
            Self::throttle(n) + hazards.punch(n)
        };
        let spike = hazards.transient(n);
        let stick = hazards.stick_move(n);
        for (k, &q) in self.quantities.iter().enumerate() {
            let v = match (q, crash) {
                (Quantity::Gyro(a) | Quantity::GyroRaw(a), Some(sign)) => {
                    sign * (1800 - 200 * i64::from(a)) + noise.jitter(40)
                }
                (Quantity::Acc(a), Some(sign)) => -sign * (3000 - 400 * i64::from(a)),
                (Quantity::PidP(_) | Quantity::PidD(_), Some(sign)) => sign * 500,
                (Quantity::Motor(_), Some(_)) => set.motor_min,
                (Quantity::Motor(0), None) if spike != 0 => set.motor_max,
                (Quantity::Motor(2), None) if spike != 0 => set.motor_min,
                // The motors answer a stick move at once, and go on moving.
                (Quantity::Motor(m), None) if stick.is_some() => {
                    let since = stick.map_or(0, |(_, k)| k);
                    let sign = if m % 2 == 1 { 1 } else { -1 };
                    let v = self.quantity_value(spec, q, n, thr, &hazards, noise);
                    (v + sign * (150 + since)).clamp(set.motor_min, set.motor_max)
                }
                (q, _) => self.quantity_value(spec, q, n, thr, &hazards, noise),
            };
            out[k] = if self.signed[k] { v } else { v.max(0) };
        }
    }

    /// Field `q`'s value at iteration `n` of a flight at throttle `thr` (per mille).
    fn quantity_value(
        &self,
        spec: &FlightSpec,
        q: Quantity,
        n: u32,
        thr: i64,
        hazards: &Hazards,
        noise: &mut Noise,
    ) -> i64 {
        let set = self.settings;
        let period = |a: u32| 2400 + (a % 3) * 1700;
        let spike = hazards.transient(n);
        // A stick move's D term, and the current near the top of its range, where they are.
        if let (Quantity::PidD(1), Some((frame, _))) = (q, hazards.stick_move(n)) {
            return STICK_D_TERM[frame] + noise.jitter(2);
        }
        if let (Quantity::Current, Some(current)) = (q, hazards.high_current(n)) {
            return current;
        }
        {
            match q {
                Quantity::Iteration => i64::from(n),
                Quantity::Time => loop_time(spec, n, noise),
                Quantity::PidP(1) => wave(n, period(1), 40) + noise.jitter(3) + spike,
                Quantity::PidP(a) => wave(n, period(a), 40) + noise.jitter(3),
                Quantity::PidI(a) => wave(n, period(a) * 10, 20),
                Quantity::PidD(a) => wave(n, 1200 + a * 200, 15) + noise.jitter(2),
                Quantity::FeedForward(a) => wave(n, period(a) * 2, 60),
                Quantity::Rate(a) => wave(n, period(a) * 2, 300),
                Quantity::Stick(a) => wave(n, period(a) * 2, 150),
                Quantity::Throttle => 1000 + thr,
                Quantity::ThrottleSetpoint => thr,
                Quantity::Battery => set.vbatref - set.vbat_sag * thr / 1000 - i64::from(n / 512),
                // Read every few frames when flying hard: held, then jumping either way.
                // Now and then a reading comes back 0.
                Quantity::Current
                    if hazards.on && hazards.held(n, CURRENT_EVERY) % 2000 == 1680 =>
                {
                    0
                }
                Quantity::Current if hazards.on => {
                    let held = hazards.held(n, CURRENT_EVERY);
                    300 + 4 * Self::throttle(held) + reading_noise(held, 30)
                }
                Quantity::Current => 300 + 4 * thr + noise.jitter(5),
                Quantity::Rssi => 1000 - i64::from(n / 128) % 20,
                Quantity::Gyro(1) => wave(n, period(1), 500) + noise.jitter(20) + spike / 2,
                Quantity::Gyro(a) => wave(n, period(a), 500) + noise.jitter(20),
                Quantity::GyroRaw(a) => wave(n, period(a), 500) + noise.jitter(40),
                Quantity::GyroPeak(k) => 90 + 40 * i64::from(k) + wave(n, 3000, 30),
                Quantity::Acc(a) => {
                    wave(n, period(a) * 3, 200) + noise.jitter(10) + if a == 2 { 2048 } else { 0 }
                }
                Quantity::AccVibration => 30 + noise.jitter(10),
                Quantity::Mag(a) => [-46, 453, 726][a as usize % 3] + wave(n, period(a) * 4, 20),
                Quantity::BaroAlt => 150 + wave(hazards.held(n, 16), 20000, 100),
                Quantity::Attitude(2) => 1800 + wave(n, 30000, 300),
                Quantity::Attitude(a) => wave(n, period(a) * 2, 150),
                Quantity::Debug(a) => wave(n, period(a), 300) + noise.jitter(15),
                Quantity::Motor(m) => {
                    let range = set.motor_max - set.motor_min;
                    let v = set.motor_min
                        + range * thr / 1400
                        + wave(n, 2400 + m * 480, 60)
                        + noise.jitter(5);
                    v.clamp(set.motor_min, set.motor_max)
                }
                Quantity::NavEph => 55,
                Quantity::NavEpv => 73,
                Quantity::Idle => 0,
            }
        }
    }
}

/// GPS home of the synthetic flights.
const HOME_LAT_LON: (i64, i64) = (473_977_420, 85_455_940);

/// The G-frame values of the `count`-th GPS fix, taken right after a main frame at `time`.
fn gps_values(layout: Layout, time: i64, count: i64) -> Vec<i64> {
    let (lat, lon) = HOME_LAT_LON;
    let def = layout_def(layout);
    items(def.gps.names)
        .iter()
        .map(|name| match name.as_str() {
            "time" => (time + 200) & 0xFFFF_FFFF,
            "GPS_fixType" => 2,
            "GPS_numSat" => 12 + count % 3,
            "GPS_coord[0]" => lat + count * 37,
            "GPS_coord[1]" => lon - count * 21,
            "GPS_altitude" => 620 + count,
            "GPS_speed" => 350,
            "GPS_ground_course" => 1800,
            "GPS_hdop" => 99,
            "GPS_eph" => 55,
            "GPS_epv" => 73,
            "GPS_velned[0]" => 250,
            "GPS_velned[1]" => -120,
            "GPS_velned[2]" => count % 5 - 2,
            _ => 0,
        })
        .collect()
}

/// Flight-mode flags as the slow frame logs them: angle mode, or none (acro).
const ANGLE_MODE: u32 = 1;
/// Flight-mode event flags (the active mode boxes): armed, then armed with angle mode.
const BOX_ARM: u32 = 1;
const BOX_ANGLE: u32 = 2;

/// The S-frame values with the slow state at iteration `n`.
fn slow_values(spec: &FlightSpec, mode: u32, n: u32, noise: &mut Noise) -> Vec<i64> {
    let mode = i64::from(mode);
    let gps = i64::from(spec.gps);
    match spec.layout {
        Layout::Inav => {
            let set = settings(Layout::Inav);
            let mut v = vec![
                0,
                mode,
                0,
                mode,
                8 + 3 * gps,
                0,
                1,
                1,
                180 + noise.jitter(8),
                341,
                0,
                set.vbatref + 1,
                0,
                0,
                0,
                0,
                420 + i64::from(n / 256),
                455,
            ];
            v.extend([-1250; 8]);
            v.extend([0, 0]);
            v
        }
        _ => vec![mode, 3 * gps, 0, 1, 1],
    }
}

/// GPS fixes are logged at 10 Hz.
fn gps_every(spec: &FlightSpec) -> u32 {
    (100_000 / spec.loop_time_us.max(1)).max(1)
}

/// Whether iteration `n` is written: on the I/P schedule and not while logging is paused.
fn logged(spec: &FlightSpec, header: &crate::blackbox::header::Header, n: u32) -> bool {
    header.is_logged(n) && !spec.is_paused(n)
}

/// The iteration whose frame is preceded by a logging-resume event.
fn resume_at(spec: &FlightSpec) -> Option<u32> {
    spec.paused
        .as_ref()
        .filter(|p| p.end < spec.iterations)
        .map(|p| p.end)
}

/// One session of a firmware layout, in the order that firmware writes frames and events.
fn firmware_flight(spec: &FlightSpec) -> Vec<u8> {
    let layout = spec.layout;
    let mut w = SessionWriter::new(&header_lines(spec));
    let header = w.header().clone();
    let mut noise = Noise::new(spec.seed);
    let model = MainModel::new(layout);
    let mut values = vec![0i64; model.quantities.len()];
    let beep_time = spec.start_time_us.wrapping_sub(150_000) as u32;
    let change_at = spec.iterations / 2;
    let (mut slow_mode, mut boxes) = (0u32, BOX_ARM);
    let mut first_p = true;
    let mut changed = false;
    let mut gps_slot = None;
    let mut gps_count = 0i64;
    let mut slow_slot = 0;
    if layout == Layout::Inav {
        w.other(FrameKind::S, &slow_values(spec, slow_mode, 0, &mut noise));
    }
    for n in 0..spec.iterations {
        if !logged(spec, &header, n) {
            continue;
        }
        model.values(spec, n, &mut noise, &mut values);
        let time = values[1];
        if resume_at(spec) == Some(n) {
            w.event(&Event::LoggingResume {
                iteration: n,
                time: time as u32,
            });
        }
        if n % header.i_interval == 0 {
            w.main(FrameKind::I, &values);
            continue;
        }
        // Events and slow frames come before the P frame of the iteration they happen in.
        if first_p {
            first_p = false;
            w.event(&Event::SyncBeep { time: beep_time });
            if layout != Layout::Inav {
                w.event(&Event::FlightMode {
                    flags: boxes,
                    last_flags: 0,
                });
                w.other(FrameKind::S, &slow_values(spec, slow_mode, n, &mut noise));
            }
        }
        if !changed && n >= change_at {
            changed = true;
            w.event(&Event::FlightMode {
                flags: boxes | BOX_ANGLE,
                last_flags: boxes,
            });
            boxes |= BOX_ANGLE;
            slow_mode = ANGLE_MODE;
            w.other(FrameKind::S, &slow_values(spec, slow_mode, n, &mut noise));
        } else if layout == Layout::Inav && n / 64 != slow_slot {
            // INAV's slow frame carries the receiver update rate, which changes all the time.
            slow_slot = n / 64;
            w.other(FrameKind::S, &slow_values(spec, slow_mode, n, &mut noise));
        }
        w.main(FrameKind::P, &values);
        if spec.gps && gps_slot != Some(n / gps_every(spec)) {
            gps_slot = Some(n / gps_every(spec));
            if gps_count % 10 == 0 {
                w.other(FrameKind::H, &[HOME_LAT_LON.0, HOME_LAT_LON.1]);
            }
            w.other(FrameKind::G, &gps_values(layout, time, gps_count));
            gps_count += 1;
        }
    }
    match layout {
        Layout::Inav => w.event(&Event::LogEnd {
            disarm_reason: Some(4),
        }),
        _ => {
            w.event(&Event::FlightMode {
                flags: 0,
                last_flags: boxes,
            });
            w.other(
                FrameKind::S,
                &slow_values(spec, 0, spec.iterations, &mut noise),
            );
            if layout == Layout::Betaflight4 {
                w.event(&Event::Disarm { reason: 4 });
            }
            w.event(&Event::LogEnd {
                disarm_reason: None,
            });
        }
    }
    w.finish()
}

/// One session of the reduced layout, in the demo log's order of frames and events.
fn reduced_flight(spec: &FlightSpec) -> Vec<u8> {
    let mut w = SessionWriter::new(&header_lines(spec));
    let mut noise = Noise::new(spec.seed);
    let mut values = vec![0i64; items(REDUCED_MAIN.names).len()];
    let header = w.header().clone();
    w.event(&Event::SyncBeep {
        time: spec.start_time_us as u32,
    });
    w.other(FrameKind::S, &[0, 0, 0, 1, 1]);
    let (home_lat, home_lon) = HOME_LAT_LON;
    let mut gps_count = 0i64;
    for n in 0..spec.iterations {
        if !logged(spec, &header, n) {
            continue;
        }
        reduced_values(spec, n, &mut noise, &mut values);
        if resume_at(spec) == Some(n) {
            w.event(&Event::LoggingResume {
                iteration: n,
                time: values[1] as u32,
            });
        }
        let kind = if n % header.i_interval == 0 {
            FrameKind::I
        } else {
            FrameKind::P
        };
        w.main(kind, &values);
        if spec.gps && n % 800 == 0 {
            if gps_count % 10 == 0 {
                w.other(FrameKind::H, &[home_lat, home_lon]);
            }
            gps_count += 1;
            let gps = [
                values[1] + 200,
                12,
                home_lat + gps_count * 37,
                home_lon - gps_count * 21,
                1200 + gps_count,
                350,
                1800,
            ];
            w.other(FrameKind::G, &gps);
        }
        if n > 0 && n % 1500 == 0 {
            let flags = (n / 1500) & 3;
            w.event(&Event::FlightMode {
                flags,
                last_flags: flags.wrapping_sub(1) & 3,
            });
            w.other(FrameKind::S, &[i64::from(flags), 0, 0, 1, 1]);
        }
    }
    w.event(&Event::Disarm { reason: 4 });
    w.event(&Event::LogEnd {
        disarm_reason: None,
    });
    w.finish()
}

/// Generate one session.
///
/// # Panics
/// If `spec.paused` does not end on the I interval (logging only resumes with an I frame).
pub fn flight(spec: &FlightSpec) -> Vec<u8> {
    if let Some(p) = &spec.paused {
        assert!(
            p.end.is_multiple_of(spec.i_interval.max(1)),
            "logging resumes on an I frame"
        );
    }
    match spec.layout {
        Layout::Reduced => reduced_flight(spec),
        _ => firmware_flight(spec),
    }
}

/// Flash pages are this long; a session on a flash chip may start on a fresh page.
const FLASH_PAGE: usize = 256;

/// Several sessions in one file, as a flight controller's flash chip holds them: the first session
/// starts right after the previous one's log end, later ones after erased flash (0xFF) up to the
/// next page, the way real multi-session logs alternate between both.
pub fn flights(specs: &[FlightSpec]) -> Vec<u8> {
    let mut log = Vec::new();
    for (k, spec) in specs.iter().enumerate() {
        if k > 1 {
            let pad = FLASH_PAGE - log.len() % FLASH_PAGE;
            log.extend(std::iter::repeat_n(0xFF, pad));
        }
        log.extend(flight(spec));
    }
    log
}

/// The log the project ships: two flights, one with GPS and one whose time rolls over 2^32 µs,
/// followed by erased flash.
pub fn demo_log() -> Vec<u8> {
    let mut log = flight(&FlightSpec::new(Layout::Reduced));
    log.extend(flight(&FlightSpec {
        seed: 2,
        iterations: 3000,
        start_time_us: (1 << 32) - 150_000,
        p_interval: "1/2".into(),
        i_interval: 32,
        gps: false,
        ..FlightSpec::new(Layout::Reduced)
    }));
    log.extend(std::iter::repeat_n(0xFF, 700));
    log
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blackbox::header::Firmware;
    use crate::blackbox::sink::{Discard, Frame, Sink};
    use crate::report::FileReport;

    fn check(log: &[u8]) -> FileReport {
        crate::blackbox::decode("synthetic", log, |_, _| {}, &mut Discard)
    }

    /// The main frames of every session, with the field names.
    #[derive(Default)]
    struct MainFrames {
        sessions: Vec<(Vec<String>, Vec<Vec<i64>>)>,
    }

    impl Sink for MainFrames {
        fn frame(&mut self, frame: &Frame<'_>) {
            if matches!(frame.kind, FrameKind::I | FrameKind::P) {
                let session = self.sessions.last_mut().expect("a session started");
                session.1.push(frame.values.to_vec());
            }
        }
    }

    fn main_frames(log: &[u8]) -> MainFrames {
        let mut frames = MainFrames::default();
        let report = crate::blackbox::decode(
            "synthetic",
            log,
            |session, sink: &mut MainFrames| {
                let names = session.header.i.as_ref().unwrap().names.clone();
                sink.sessions.push((names, Vec::new()));
            },
            &mut frames,
        );
        assert!(report.is_clean(), "{:?}", report.sessions[0].corrupt_spans);
        frames
    }

    #[test]
    fn every_layout_code_set_and_data_version_decodes_clean() {
        for layout in Layout::ALL {
            for codes in [Codes::Firmware, Codes::EliasDelta, Codes::EliasGamma] {
                for data_version in [1, 2] {
                    for gps in [false, true] {
                        let spec = FlightSpec {
                            codes,
                            data_version,
                            gps,
                            iterations: 600,
                            ..FlightSpec::new(layout)
                        };
                        let case = format!("{layout:?} {codes:?} v{data_version} gps {gps}");
                        let report = check(&flight(&spec));
                        assert!(report.is_clean(), "{case}: {:?}", report.sessions);
                        let [session] = &report.sessions[..] else {
                            panic!("{case}: one session");
                        };
                        assert!(session.header_problems.is_empty(), "{case}");
                        assert!(session.log_end, "{case}");
                        assert!(session.frames.i > 0 && session.frames.p > 0, "{case}");
                        assert_eq!(session.frames.g > 0, gps, "{case}");
                        let loop_time = session.loop_time_us.unwrap();
                        assert!(
                            (loop_time - f64::from(spec.loop_time_us)).abs() < 1.0,
                            "{case}: loop time {loop_time}"
                        );
                        let firmware = match (codes, layout) {
                            (Codes::EliasGamma, _) => Firmware::Cleanflight,
                            (_, Layout::Inav) => Firmware::Inav,
                            _ => Firmware::Betaflight,
                        };
                        assert_eq!(session.firmware, firmware, "{case}");
                    }
                }
            }
        }
    }

    #[test]
    fn values_stay_in_the_ranges_the_firmware_logs() {
        for layout in Layout::ALL {
            let spec = FlightSpec::new(layout);
            let log = flight(&spec);
            let header = crate::blackbox::sessions(&log).remove(0).header;
            let setting = |name: &str, k: usize| -> i64 {
                let value = header.get(name).unwrap().split(',').nth(k).unwrap();
                value.parse().unwrap()
            };
            let (motor_min, motor_max) = (setting("motorOutput", 0), setting("motorOutput", 1));
            let vbatref = setting("vbatref", 0);
            let frames = main_frames(&log);
            let (names, rows) = &frames.sessions[0];
            let index = |name: &str| names.iter().position(|n| n == name).unwrap();
            let (iteration, time) = (index("loopIteration"), index("time"));
            let battery = index(if layout == Layout::Inav {
                "vbat"
            } else {
                "vbatLatest"
            });
            let (first_iteration, first_time) = (rows[0][iteration], rows[0][time]);
            for row in rows {
                // Time advances by the loop time per iteration, with at most 2 µs of jitter.
                let expected = (row[iteration] - first_iteration) * i64::from(spec.loop_time_us);
                let elapsed = row[time] - first_time;
                assert!(
                    (0..=2).contains(&(elapsed - expected)),
                    "{layout:?}: {row:?}"
                );
                for m in 0..4 {
                    let motor = row[index(&format!("motor[{m}]"))];
                    assert!((motor_min..=motor_max).contains(&motor), "{layout:?}");
                }
                let throttle = row[index("rcCommand[3]")];
                assert!((1000..=2000).contains(&throttle), "{layout:?}: {throttle}");
                let sag = vbatref - row[battery];
                assert!((0..vbatref / 10).contains(&sag), "{layout:?}: battery");
                let gravity = row[index("accSmooth[2]")];
                assert!((1500..2600).contains(&gravity), "{layout:?}: {gravity}");
            }
        }
    }

    /// Main frames logged in `0..iterations` under an I interval and a P interval of `1/p`.
    fn expected_main(spec: &FlightSpec, p: u32) -> (u64, u64) {
        let (mut i, mut inter) = (0, 0);
        for n in (0..spec.iterations).filter(|&n| !spec.is_paused(n)) {
            let phase = n % spec.i_interval;
            if phase == 0 {
                i += 1;
            } else if phase.is_multiple_of(p) {
                inter += 1;
            }
        }
        (i, inter)
    }

    #[test]
    fn several_sessions_decode_with_their_frames_and_events() {
        let base = FlightSpec {
            iterations: 1024,
            ..FlightSpec::new(Layout::Betaflight4)
        };
        let specs = [
            FlightSpec {
                seed: 7,
                start_time_us: 20_000_000,
                paused: Some(256..640),
                ..base.clone()
            },
            FlightSpec {
                seed: 8,
                start_time_us: 95_000_000,
                gps: false,
                ..base.clone()
            },
            FlightSpec {
                seed: 9,
                start_time_us: (1 << 32) - 100_000,
                ..base.clone()
            },
        ];
        let log = flights(&specs);
        let report = check(&log);
        assert!(report.is_clean(), "{:?}", report.sessions);
        assert_eq!(report.sessions.len(), 3);
        for (spec, session) in specs.iter().zip(&report.sessions) {
            let (i, p) = expected_main(spec, 4);
            assert_eq!((session.frames.i, session.frames.p), (i, p), "{spec:?}");
            // A slow frame with the first P frame, at the mode change and at the disarm.
            assert_eq!(session.frames.s, 3);
            let resumed = u64::from(spec.paused.is_some());
            // Sync beep, three flight modes, disarm, log end and the logging resume.
            assert_eq!(session.frames.e, 6 + resumed);
            assert_eq!(
                session.events.get("logging_resume").copied(),
                spec.paused.as_ref().map(|_| 1)
            );
            // 10 Hz GPS: a fix at the first P frame of every 400 iterations logged.
            let slots: std::collections::BTreeSet<u32> = (0..spec.iterations)
                .filter(|&n| n % spec.i_interval != 0 && n % 4 == 0 && !spec.is_paused(n))
                .map(|n| n / 400)
                .collect();
            let gps = if spec.gps { slots.len() as u64 } else { 0 };
            assert_eq!(session.frames.g, gps);
            assert_eq!(session.frames.h, gps.div_ceil(10));
            assert!(session.log_end);
        }
        // The last session's time rolls over 2^32 µs.
        assert!(report.sessions[2].last_time_us.unwrap() > 1 << 32);
        assert!(report.sessions[2].first_time_us.unwrap() < 1 << 32);
        // The third session starts on a fresh flash page after erased flash, which is no damage.
        assert_eq!(report.sessions[2].start as usize % FLASH_PAGE, 0);
        let erased: u64 = report.sessions[1]
            .regions
            .iter()
            .filter(|r| r.kind == crate::report::RegionKind::AfterLogEnd)
            .map(|r| r.end - r.start)
            .sum();
        assert!((1..=FLASH_PAGE as u64).contains(&erased), "{erased}");
    }

    #[test]
    fn elias_gamma_needs_a_cleanflight_header() {
        let spec = FlightSpec {
            codes: Codes::EliasGamma,
            ..FlightSpec::new(Layout::Betaflight3)
        };
        let header = crate::blackbox::sessions(&flight(&spec)).remove(0).header;
        assert_eq!(header.firmware, Firmware::Cleanflight);
        let revision = header.firmware_revision.unwrap();
        assert!(
            revision.len() == 7 && revision.chars().all(|c| c.is_ascii_hexdigit()),
            "{revision}"
        );
    }
}
