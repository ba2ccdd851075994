//! After damage a GPS home frame may have been lost, and GPS frames are predicted from the home.
//! A GPS frame is trusted without a new home when it continues the track of the last one
//! accepted: within [`MAX_GPS_GAP_US`] of it, and within reach at twice the faster ground speed
//! plus [`GPS_SPEED_MARGIN_CM_S`], north and east. Level: corrupt (`no-gps-home`) when it does
//! not.

use crate::blackbox::header::Header;
use crate::blackbox::predictor::Predictor;

/// After damage, a GPS frame that lies within reach of the last one accepted continues its track,
/// so the home it is predicted from was not lost with the damage: reach is twice the faster of the
/// two ground speeds plus this much, in cm/s, over the time between them, plus [`GPS_SLACK_CM`].
pub const GPS_SPEED_MARGIN_CM_S: f64 = 500.0;
/// See [`GPS_SPEED_MARGIN_CM_S`].
pub const GPS_SLACK_CM: f64 = 300.0;
/// GPS frames further apart than this, in µs, do not continue a track.
pub const MAX_GPS_GAP_US: u32 = 2_000_000;
/// Centimetres per unit of latitude (1e-7 degree).
pub const CM_PER_COORDINATE: f64 = 1.113;

/// The G-frame fields that place the craft.
pub(in crate::blackbox) struct GpsFields {
    time: usize,
    latitude: usize,
    longitude: usize,
    speed: usize,
}

/// Where and when a GPS frame placed the craft, and its ground speed in cm/s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(in crate::blackbox) struct GpsFix {
    time: u32,
    latitude: i64,
    longitude: i64,
    speed: i64,
}

impl GpsFields {
    pub(in crate::blackbox) fn of(header: &Header) -> Option<GpsFields> {
        let g = header.g.as_ref()?;
        let home = |k| {
            g.fields
                .iter()
                .position(|f| f.predictor == Predictor::HomeCoord(k))
        };
        Some(GpsFields {
            time: g.index_of("time")?,
            latitude: home(0)?,
            longitude: home(1)?,
            speed: g.index_of("GPS_speed")?,
        })
    }

    pub(in crate::blackbox) fn fix(&self, values: &[i64]) -> Option<GpsFix> {
        Some(GpsFix {
            time: *values.get(self.time)? as u32,
            latitude: *values.get(self.latitude)?,
            longitude: *values.get(self.longitude)?,
            speed: *values.get(self.speed)?,
        })
    }
}

impl GpsFix {
    /// Whether `next` lies within reach of this fix (see [`GPS_SPEED_MARGIN_CM_S`]).
    pub(in crate::blackbox) fn reaches(&self, next: &GpsFix) -> bool {
        let elapsed = next.time.wrapping_sub(self.time);
        if elapsed > MAX_GPS_GAP_US {
            return false;
        }
        let speed = self.speed.max(next.speed).max(0) as f64;
        let reach_cm =
            (2.0 * speed + GPS_SPEED_MARGIN_CM_S) * f64::from(elapsed) / 1e6 + GPS_SLACK_CM;
        let latitude = (next.latitude as f64 * 1e-7).to_radians();
        let north_cm = (next.latitude - self.latitude).abs() as f64 * CM_PER_COORDINATE;
        let east_cm =
            (next.longitude - self.longitude).abs() as f64 * CM_PER_COORDINATE * latitude.cos();
        north_cm <= reach_cm && east_cm <= reach_cm
    }
}
