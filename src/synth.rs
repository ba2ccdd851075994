//! Synthetic flights: small, deterministic Blackbox logs with the field layout Betaflight 4.2
//! writes (its predictors and encodings), used as the project's own corpus and test input.

use crate::blackbox::event::Event;
use crate::blackbox::frame::FrameKind;
use crate::blackbox::writer::SessionWriter;

/// What to generate.
#[derive(Debug, Clone)]
pub struct FlightSpec {
    /// Seed of the deterministic noise.
    pub seed: u64,
    /// Main-loop iterations to log.
    pub iterations: u32,
    /// Loop time in µs.
    pub loop_time_us: u32,
    /// Boot time of the first iteration in µs (set near 2^32 to exercise the rollover).
    pub start_time_us: u64,
    pub i_interval: u32,
    /// `P interval` header value, e.g. `16` or `1/2`.
    pub p_interval: String,
    /// Log GPS home and position frames.
    pub gps: bool,
}

impl Default for FlightSpec {
    fn default() -> Self {
        FlightSpec {
            seed: 1,
            iterations: 4096,
            loop_time_us: 125,
            start_time_us: 30_000_000,
            i_interval: 256,
            p_interval: "8".into(),
            gps: true,
        }
    }
}

/// A small xorshift generator: deterministic noise without a dependency.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in `[-amplitude, amplitude]`.
    fn jitter(&mut self, amplitude: i64) -> i64 {
        (self.next() % (2 * amplitude as u64 + 1)) as i64 - amplitude
    }
}

const MAIN_FIELDS: [(&str, u8, u8, u8, u8, u8); 27] = [
    // name, signed, I predictor, I encoding, P predictor, P encoding
    ("loopIteration", 0, 0, 1, 6, 9),
    ("time", 0, 0, 1, 2, 0),
    ("axisP[0]", 1, 0, 0, 1, 0),
    ("axisP[1]", 1, 0, 0, 1, 0),
    ("axisP[2]", 1, 0, 0, 1, 0),
    ("axisI[0]", 1, 0, 0, 1, 7),
    ("axisI[1]", 1, 0, 0, 1, 7),
    ("axisI[2]", 1, 0, 0, 1, 7),
    ("axisD[0]", 1, 0, 0, 1, 0),
    ("axisD[1]", 1, 0, 0, 1, 0),
    ("rcCommand[0]", 1, 0, 0, 1, 8),
    ("rcCommand[1]", 1, 0, 0, 1, 8),
    ("rcCommand[2]", 1, 0, 0, 1, 8),
    ("rcCommand[3]", 0, 0, 1, 1, 8),
    ("vbatLatest", 0, 9, 3, 1, 6),
    ("amperageLatest", 1, 0, 0, 1, 6),
    ("gyroADC[0]", 1, 0, 0, 3, 0),
    ("gyroADC[1]", 1, 0, 0, 3, 0),
    ("gyroADC[2]", 1, 0, 0, 3, 0),
    ("accSmooth[0]", 1, 0, 0, 3, 0),
    ("accSmooth[1]", 1, 0, 0, 3, 0),
    ("accSmooth[2]", 1, 0, 0, 3, 0),
    ("debug[0]", 1, 0, 0, 3, 0),
    ("motor[0]", 0, 11, 1, 3, 0),
    ("motor[1]", 0, 5, 0, 3, 0),
    ("motor[2]", 0, 5, 0, 3, 0),
    ("motor[3]", 0, 5, 0, 3, 0),
];

fn column<T: ToString>(items: impl Iterator<Item = T>) -> String {
    items.map(|x| x.to_string()).collect::<Vec<_>>().join(",")
}

fn header_lines(spec: &FlightSpec) -> Vec<(String, String)> {
    let mut lines: Vec<(String, String)> = vec![
        ("Data version".into(), "2".into()),
        ("I interval".into(), spec.i_interval.to_string()),
        ("P interval".into(), spec.p_interval.clone()),
        ("P ratio".into(), "16".into()),
        (
            "Field I name".into(),
            column(MAIN_FIELDS.iter().map(|f| f.0)),
        ),
        (
            "Field I signed".into(),
            column(MAIN_FIELDS.iter().map(|f| f.1)),
        ),
        (
            "Field I predictor".into(),
            column(MAIN_FIELDS.iter().map(|f| f.2)),
        ),
        (
            "Field I encoding".into(),
            column(MAIN_FIELDS.iter().map(|f| f.3)),
        ),
        (
            "Field P predictor".into(),
            column(MAIN_FIELDS.iter().map(|f| f.4)),
        ),
        (
            "Field P encoding".into(),
            column(MAIN_FIELDS.iter().map(|f| f.5)),
        ),
        (
            "Field S name".into(),
            "flightModeFlags,stateFlags,failsafePhase,rxSignalReceived,rxFlightChannelsValid"
                .into(),
        ),
        ("Field S signed".into(), "0,0,0,0,0".into()),
        ("Field S predictor".into(), "0,0,0,0,0".into()),
        ("Field S encoding".into(), "1,1,7,7,7".into()),
    ];
    if spec.gps {
        lines.extend([
            ("Field H name".into(), "GPS_home[0],GPS_home[1]".into()),
            ("Field H signed".into(), "1,1".into()),
            ("Field H predictor".into(), "0,0".into()),
            ("Field H encoding".into(), "0,0".into()),
            ("Field G name".into(), "time,GPS_numSat,GPS_coord[0],GPS_coord[1],GPS_altitude,GPS_speed,GPS_ground_course".into()),
            ("Field G signed".into(), "0,0,1,1,1,0,0".into()),
            ("Field G predictor".into(), "10,0,7,7,0,0,0".into()),
            ("Field G encoding".into(), "1,1,0,0,1,1,1".into()),
        ]);
    }
    lines.extend([
        ("Firmware type".into(), "Cleanflight".into()),
        (
            "Firmware revision".into(),
            "Betaflight 4.2.9 (synthetic) SYNTH".into(),
        ),
        ("Firmware date".into(), "Jan  1 2026 00:00:00".into()),
        ("Craft name".into(), format!("synthetic-{}", spec.seed)),
        ("looptime".into(), spec.loop_time_us.to_string()),
        ("minthrottle".into(), "1070".into()),
        ("vbatref".into(), "1650".into()),
        ("motorOutput".into(), "158,2047".into()),
        ("motor_pwm_protocol".into(), "6".into()),
        ("debug_mode".into(), "0".into()),
        ("acc_1G".into(), "2048".into()),
    ]);
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

/// The main-frame values of iteration `n`: smooth motion plus noise.
fn main_values(spec: &FlightSpec, n: u32, noise: &mut Noise, out: &mut [i64]) {
    let t = spec.start_time_us + u64::from(n) * u64::from(spec.loop_time_us) + noise.next() % 3;
    out[0] = i64::from(n);
    out[1] = (t & 0xFFFF_FFFF) as i64;
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

/// Generate one session.
pub fn flight(spec: &FlightSpec) -> Vec<u8> {
    let mut w = SessionWriter::new(&header_lines(spec));
    let mut noise = Noise(spec.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut values = vec![0i64; MAIN_FIELDS.len()];
    let header = w.header().clone();
    w.event(&Event::SyncBeep {
        time: spec.start_time_us as u32,
    });
    w.other(FrameKind::S, &[0, 0, 0, 1, 1]);
    let (home_lat, home_lon) = (473_977_420, 85_455_940);
    let mut gps_count = 0i64;
    for n in 0..spec.iterations {
        if !header.is_logged(n) {
            continue;
        }
        main_values(spec, n, &mut noise, &mut values);
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

/// The log the project ships: two flights, one with GPS and one whose time rolls over 2^32 µs,
/// followed by erased flash.
pub fn demo_log() -> Vec<u8> {
    let mut log = flight(&FlightSpec::default());
    log.extend(flight(&FlightSpec {
        seed: 2,
        iterations: 3000,
        start_time_us: (1 << 32) - 150_000,
        p_interval: "1/2".into(),
        i_interval: 32,
        gps: false,
        ..FlightSpec::default()
    }));
    log.extend(std::iter::repeat_n(0xFF, 700));
    log
}
