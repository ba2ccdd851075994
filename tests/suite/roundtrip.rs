//! Write → read: frames written with every predictor and encoding decode to the values given.

use bbcheck::blackbox::event::Event;
use bbcheck::blackbox::frame::FrameKind;
use bbcheck::blackbox::sink::{EventFrame, Frame, Sink};
use bbcheck::blackbox::writer::SessionWriter;

#[derive(Default)]
struct Collect {
    frames: Vec<(FrameKind, u64, Vec<i64>)>,
    events: Vec<Event>,
}

impl Sink for Collect {
    fn frame(&mut self, frame: &Frame<'_>) {
        let mut values = frame.values.to_vec();
        if let Some((t, time)) = frame.time {
            values[t] = time as i64;
        }
        self.frames.push((frame.kind, frame.offset, values));
    }
    fn event(&mut self, event: &EventFrame<'_>) {
        self.events.push(event.event.clone());
    }
}

/// Deterministic pseudo-random values.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn small(&mut self, bits: u32) -> i64 {
        let v = (self.next() % (1 << bits)) as i64;
        v - (1 << (bits - 1))
    }
}

/// A header using every predictor (0–11) and every encoding, in Data version `version`.
fn lines(version: u32, revision: &str) -> Vec<(String, String)> {
    let names = "loopIteration,time,a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,vbat,motor[0],motor[1],q,r,s";
    let i_pred = "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,8,4,9,11,5,0,0,0";
    let i_enc = "1,1,0,0,4,5,1,0,0,0,0,0,0,0,0,0,0,0,3,1,0,0,0,0";
    let p_pred = "6,2,1,3,1,1,1,1,1,1,1,1,1,2,3,1,1,1,1,3,3,1,1,1";
    let p_enc = "9,0,4,5,7,7,7,8,8,8,8,6,6,6,10,10,10,0,0,0,0,6,6,6".to_owned();
    let signed = "0,0,1,1,0,1,0,1,1,1,1,1,1,1,1,1,1,1,0,0,0,1,1,1";
    [
        ("Data version", version.to_string()),
        ("I interval", "32".into()),
        ("P interval", "1/2".into()),
        ("Firmware type", "Cleanflight".into()),
        ("Firmware revision", revision.into()),
        ("minthrottle", "1070".into()),
        ("vbatref", "1650".into()),
        ("motorOutput", "48,2047".into()),
        ("Field I name", names.into()),
        ("Field I signed", signed.into()),
        ("Field I predictor", i_pred.into()),
        ("Field I encoding", i_enc.into()),
        ("Field P predictor", p_pred.into()),
        ("Field P encoding", p_enc),
        ("Field S name", "flags,state,x".into()),
        ("Field S signed", "0,0,1".into()),
        ("Field S predictor", "0,0,0".into()),
        ("Field S encoding", "1,1,0".into()),
        ("Field H name", "GPS_home[0],GPS_home[1]".into()),
        ("Field H signed", "1,1".into()),
        ("Field H predictor", "0,0".into()),
        ("Field H encoding", "0,0".into()),
        (
            "Field G name",
            "time,GPS_numSat,GPS_coord[0],GPS_coord[1],GPS_altitude".into(),
        ),
        ("Field G signed", "0,0,1,1,1".into()),
        ("Field G predictor", "10,0,7,7,0".into()),
        ("Field G encoding", "1,1,0,0,4".into()),
    ]
    .into_iter()
    .map(|(n, v)| (n.to_owned(), v))
    .collect()
}

fn round_trip(version: u32, revision: &str) {
    let mut w = SessionWriter::new(&lines(version, revision));
    let header = w.header().clone();
    assert!(header.problems.is_empty(), "{:?}", header.problems);
    let n_fields = header.i.as_ref().unwrap().len();
    let mut rng = Rng(0x1234_5678_9abc_def1 + u64::from(version));
    let mut expected = Vec::new();
    let mut values = vec![0i64; n_fields];
    for n in 0u32..400 {
        if !header.is_logged(n) {
            continue;
        }
        values[0] = i64::from(n);
        values[1] = 1_000_000 + i64::from(n) * 250 + rng.small(3);
        for (i, v) in values.iter_mut().enumerate().skip(2) {
            // Fields 7..=10 are TAG8_4S16 in P frames: 16-bit residuals at most.
            let bits = if (7..=10).contains(&i) {
                10
            } else {
                1 + (rng.next() % 24) as u32
            };
            *v = (*v + rng.small(bits)).clamp(-30000, 30000);
        }
        values[18] = 1600 + rng.small(6); // vbat: 14-bit negated against vbatref in I frames
        values[19] = 1000 + rng.small(8);
        values[20] = 1000 + rng.small(8);
        let signed = header.i.as_ref().unwrap().fields.iter().map(|f| f.signed);
        let normalised: Vec<i64> = values
            .iter()
            .zip(signed)
            .map(|(&v, s)| if s { v as i32 as i64 } else { v as u32 as i64 })
            .collect();
        let kind = if n % 32 == 0 {
            FrameKind::I
        } else {
            FrameKind::P
        };
        w.main(kind, &normalised);
        expected.push((kind, normalised.clone()));
        if n == 0 {
            // A session's first frame is a main frame: an `H` right after the header would read
            // as a header line.
            w.other(FrameKind::H, &[473_977_420, 85_455_940]);
            expected.push((FrameKind::H, vec![473_977_420, 85_455_940]));
        }
        if n % 50 == 0 {
            let s = [rng.next() as u32 as i64, 7, rng.small(20)];
            w.other(FrameKind::S, &s);
            expected.push((FrameKind::S, s.to_vec()));
            let g = [
                normalised[1] + 100,
                9,
                473_977_420 + rng.small(12),
                85_455_940 + rng.small(12),
                rng.small(10),
            ];
            w.other(FrameKind::G, &g);
            expected.push((FrameKind::G, g.to_vec()));
        }
    }
    let events = [
        Event::SyncBeep { time: 5 },
        Event::LoggingResume {
            iteration: 400,
            time: 1_100_000,
        },
        Event::LogEnd {
            disarm_reason: None,
        },
    ];
    for e in &events {
        w.event(e);
    }
    let log = w.finish();
    let mut sink = Collect::default();
    let report = bbcheck::blackbox::decode("roundtrip", &log, |_, _| {}, &mut sink);
    assert!(report.is_clean(), "{:?}", report.corrupt_spans);
    report.check_accounting().unwrap();
    let got: Vec<(FrameKind, Vec<i64>)> = sink.frames.into_iter().map(|(k, _, v)| (k, v)).collect();
    assert_eq!(got.len(), expected.len());
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(
            g, e,
            "frame {i}, data version {version}, revision {revision}"
        );
    }
    assert_eq!(sink.events, events);
}

#[test]
fn every_predictor_and_encoding_round_trips_in_data_version_2() {
    // Betaflight and INAV read encoding 10 as TAG2_3SVARIABLE.
    round_trip(2, "Betaflight 4.4.0 (test) TEST");
}

#[test]
fn data_version_1_lays_out_tag8_4s16_its_own_way() {
    round_trip(1, "Betaflight 2.9.0 (test) TEST");
}

#[test]
fn elias_gamma_is_encoding_10_in_original_cleanflight_logs() {
    // A bare git hash as revision: the original Cleanflight, where 10 is Elias gamma.
    let w = SessionWriter::new(&lines(2, "c49bd40"));
    let p = w.header().p.as_ref().unwrap();
    assert_eq!(
        p.fields[14].encoding,
        bbcheck::blackbox::codec::Encoding::EliasGammaU32
    );
    round_trip(2, "c49bd40");
}

#[test]
fn a_first_step_off_the_loop_time_does_not_hold_the_time_checks() {
    // The scheduler's jitter puts the first P frame 7 µs late on a 16 µs loop, and the third
    // frame's time back on the loop: the step into the I frame is 9 µs. The loop time is the mean
    // of the steps so far (19.5 µs), not the first step (23 µs), so the step is within the 2.5 ×
    // the time checks allow.
    let mut w = SessionWriter::new(&[
        ("Data version", "2"),
        ("I interval", "3"),
        ("P interval", "1/1"),
        ("Firmware type", "Cleanflight"),
        ("Field I name", "loopIteration,time"),
        ("Field I signed", "0,0"),
        ("Field I predictor", "0,0"),
        ("Field I encoding", "1,1"),
        ("Field P predictor", "6,2"),
        ("Field P encoding", "9,0"),
    ]);
    let times = [0, 23, 39, 48, 64, 80, 96, 112, 128, 144];
    for (n, &t) in times.iter().enumerate() {
        let kind = if n % 3 == 0 {
            FrameKind::I
        } else {
            FrameKind::P
        };
        w.main(kind, &[n as i64, t]);
    }
    let data = w.finish();
    let mut sink = Collect::default();
    let report = bbcheck::blackbox::decode("t", &data, |_, _| {}, &mut sink);
    assert!(
        report.corrupt_spans.is_empty(),
        "{:?}",
        report.corrupt_spans
    );
    assert_eq!(sink.frames.len(), times.len());
}
