//! GPS frames are predicted from the last GPS home (H) frame. After damage that home may have been
//! lost, so a GPS frame is trusted again only once it continues the track of the last one
//! accepted, or a new home arrives. Measured on every clean real log with GPS tracks.

use crate::common;

use bbcheck::blackbox::frame::FrameKind;
use bbcheck::blackbox::sink::{EventFrame, Frame, Sink};
use bbcheck::blackbox::writer::SessionWriter;
use bbcheck::blackbox::{Session, event::Event};
use bbcheck::report::{DamageReason, FileReport};
use bbcheck::testkit::damage::{self, Model};

const LOG: &str = "real/blackbox/betaflight-4.5.3-bucksaw-btfl_005.bbl";

/// Frames and events of one session (or of all, when `wanted` is 0), in order.
#[derive(Default)]
struct Records {
    session: usize,
    wanted: usize,
    frames: Vec<(FrameKind, Vec<i64>)>,
    events: Vec<Event>,
}

impl Sink for Records {
    fn frame(&mut self, frame: &Frame<'_>) {
        if self.wanted == 0 || self.session == self.wanted {
            self.frames.push((frame.kind, frame.values.to_vec()));
        }
    }
    fn event(&mut self, event: &EventFrame<'_>) {
        if self.wanted == 0 || self.session == self.wanted {
            self.events.push(event.event.clone());
        }
    }
}

fn decode(data: &[u8], session: usize) -> (Records, FileReport) {
    let mut records = Records {
        wanted: session,
        ..Records::default()
    };
    let report = bbcheck::blackbox::decode(
        "t",
        data,
        |s: &Session, r: &mut Records| r.session = s.bounds.index,
        &mut records,
    );
    (records, report)
}

/// GPS frames by their time: every one must be the clean log's frame of that time.
fn gps(records: &Records) -> Vec<&Vec<i64>> {
    records
        .frames
        .iter()
        .filter(|(k, _)| *k == FrameKind::G)
        .map(|(_, v)| v)
        .collect()
}

fn no_gps_home(report: &FileReport) -> usize {
    report
        .corrupt_spans
        .iter()
        .filter(|s| s.reason == DamageReason::NoGpsHome)
        .count()
}

#[test]
fn gps_frames_that_continue_the_track_are_trusted_after_damage() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let mut logs_with_gps = 0;
    for entry in std::fs::read_dir(corpus.join("real/blackbox")).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let (clean, report) = decode(&data, 0);
        let clean_gps = gps(&clean);
        if !report.is_clean() || clean_gps.is_empty() {
            continue;
        }
        logs_with_gps += 1;
        for model in [Model::DropBytes, Model::DropRuns, Model::LostBlocks] {
            for seed in 0..3 {
                let damaged = damage::damage(&data, model, seed).data;
                let (got, _) = decode(&damaged, 0);
                let case = format!("{} {} seed {seed}", path.display(), model.name());
                let got_gps = gps(&got);
                // Only GPS frames between damage and the next main frame are lost.
                assert!(
                    got_gps.len() * 100 >= clean_gps.len() * 98,
                    "{case}: {} of {} GPS frames",
                    got_gps.len(),
                    clean_gps.len()
                );
                for g in got_gps {
                    assert!(clean_gps.contains(&g), "{case}: GPS frame {g:?} is wrong");
                }
            }
        }
    }
    // The corpus holds GPS tracks (Betaflight 4.2.0, 4.2.9, 4.5.3, 2025.12 and 2026.6, INAV 9).
    assert!(
        logs_with_gps >= 1,
        "no clean log with GPS frames was measured"
    );
}

#[test]
fn one_dropped_byte_is_not_hundreds_of_gps_spans() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let data = std::fs::read(corpus.join(LOG)).unwrap();
    for seed in 0..3 {
        let damaged = damage::damage(&data, Model::DropBytes, seed).data;
        let (_, report) = decode(&damaged, 3);
        // The damage holds no H frame: no GPS frame waits for one.
        assert_eq!(no_gps_home(&report), 0, "seed {seed}");
    }
}

/// Session 3 of the log re-written with a second H frame halfway through its GPS frames, moving
/// the home by `shift` (the GPS frames after it keep their positions); and that H frame's range.
fn with_second_home(data: &[u8], shift: i64) -> (Vec<u8>, std::ops::Range<usize>) {
    let (records, report) = decode(data, 3);
    let session = &report.sessions[2];
    let header = &data[session.start as usize..session.data_start as usize];
    let mut writer = SessionWriter::from_header_bytes(header);
    let mut home = None;
    let (mut gps_seen, mut range) = (0, 0..0);
    for (kind, values) in &records.frames {
        match kind {
            FrameKind::I | FrameKind::P => writer.main(*kind, values),
            FrameKind::H => {
                home = Some(values.clone());
                writer.other(*kind, values)
            }
            FrameKind::G => {
                gps_seen += 1;
                if gps_seen == 800 {
                    let moved: Vec<i64> = home.clone().unwrap().iter().map(|h| h + shift).collect();
                    range.start = writer.bytes().len();
                    writer.other(FrameKind::H, &moved);
                    range.end = writer.bytes().len();
                }
                writer.other(*kind, values)
            }
            FrameKind::S => writer.other(*kind, values),
            FrameKind::E => {}
        }
    }
    // Events (sync beep, disarm, log end) after the frames: where they were does not matter here.
    for event in &records.events {
        writer.event(event);
    }
    (writer.finish(), range)
}

#[test]
fn gps_frames_after_a_lost_home_that_moved_are_refused() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let data = std::fs::read(corpus.join(LOG)).unwrap();
    for shift in [0, 50_000] {
        let (log, home) = with_second_home(&data, shift);
        let (clean, report) = decode(&log, 1);
        assert!(report.is_clean(), "{:?}", report.corrupt_spans.first());
        let clean_gps = gps(&clean);
        // Lose the second H frame with 300 bytes of the frames around it.
        let mut damaged = log.clone();
        damaged.drain(home.start - 150..home.end + 150);
        let (got, report) = decode(&damaged, 1);
        assert!(!report.is_clean(), "the loss is seen");
        let got_gps = gps(&got);
        for g in &got_gps {
            assert!(
                clean_gps.contains(g),
                "shift {shift}: GPS frame {g:?} is wrong"
            );
        }
        if shift == 0 {
            // The home did not move: the track continues and every later GPS frame is kept.
            assert_eq!(no_gps_home(&report), 0);
            assert!(got_gps.len() + 2 >= clean_gps.len());
        } else {
            // Read with the old home the track leaps 556 m: nothing after the loss is trusted.
            assert!(no_gps_home(&report) > 500, "{}", no_gps_home(&report));
            assert!(got_gps.len() < 800);
        }
    }
}
