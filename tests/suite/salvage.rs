//! Salvage: clean logs re-encode byte for byte; damaged ones become clean logs holding exactly the
//! trusted frames; salvaging twice changes nothing.

use crate::common;

use bbcheck::blackbox::event::Event;
use bbcheck::blackbox::frame::FrameKind;
use bbcheck::blackbox::salvage::salvage;
use bbcheck::blackbox::sink::{EventFrame, Frame, Sink};
use bbcheck::report::{Keep, RegionKind, Trust};
use bbcheck::testkit::damage::{self, Model};
use std::path::PathBuf;

#[derive(Default, PartialEq, Debug)]
struct Collect {
    frames: Vec<(FrameKind, Vec<i64>)>,
    /// Per frame, whether it is suspect.
    suspect: Vec<bool>,
    events: Vec<Event>,
}

impl Sink for Collect {
    fn frame(&mut self, frame: &Frame<'_>) {
        self.frames.push((frame.kind, frame.values.to_vec()));
        self.suspect.push(frame.trust == Trust::Suspect);
    }
    fn event(&mut self, event: &EventFrame<'_>) {
        self.events.push(event.event.clone());
    }
}

fn decode(data: &[u8]) -> (Collect, bbcheck::report::FileReport) {
    let mut c = Collect::default();
    let report = bbcheck::blackbox::decode("t", data, |_, _| {}, &mut c);
    (c, report)
}

fn salvage_all(data: &[u8]) -> Vec<u8> {
    salvage("t", data, None)
        .1
        .into_iter()
        .flat_map(|s| s.bytes)
        .collect()
}

fn logs() -> Vec<PathBuf> {
    let mut logs = vec![common::own_corpus().join("generated/demo.bbl")];
    if let Some(corpus) = common::corpus() {
        for entry in std::fs::read_dir(corpus.join("real/blackbox")).unwrap() {
            logs.push(entry.unwrap().path());
        }
    }
    logs.sort();
    logs
}

#[test]
fn clean_sessions_re_encode_byte_for_byte() {
    for path in logs() {
        let data = std::fs::read(&path).unwrap();
        let (report, sessions) = salvage("t", &data, None);
        if !report.is_clean() {
            continue;
        }
        assert_eq!(sessions.len(), report.sessions.len());
        for (s, out) in report.sessions.iter().zip(&sessions) {
            let trusted_end = s
                .regions
                .iter()
                .filter(|r| matches!(r.kind, RegionKind::Frames | RegionKind::Header))
                .map(|r| r.end)
                .max()
                .unwrap();
            let mut expected = data[s.start as usize..trusted_end as usize].to_vec();
            if !s.log_end {
                expected.extend_from_slice(b"E\xFFEnd of log\0");
            }
            assert!(
                out.bytes == expected,
                "{} session {}: salvage differs from the input ({} vs {} bytes)",
                path.display(),
                s.index,
                out.bytes.len(),
                expected.len()
            );
        }
    }
}

#[test]
fn damaged_logs_salvage_to_clean_logs_of_exactly_the_trusted_frames() {
    let (mut cases, mut suspect) = (0, 0);
    for path in logs().into_iter().take(5) {
        let data = std::fs::read(&path).unwrap();
        for model in Model::ALL {
            for seed in 0..2 {
                let damaged = damage::damage(&data, model, seed).data;
                let (trusted, _) = decode(&damaged);
                let salvaged = salvage_all(&damaged);
                let (got, report) = decode(&salvaged);
                let case = format!("{} {} seed {seed}", path.display(), model.name());
                assert!(
                    report.is_clean(),
                    "{case}: {:?}",
                    report.corrupt_spans.first()
                );
                report.check_accounting().unwrap();
                assert_eq!(got.frames.len(), trusted.frames.len(), "{case}");
                assert!(got.frames == trusted.frames, "{case}: frames differ");
                // What was suspect stays so, though writing the log may take its evidence away
                // (a line feed written as the reading chosen).
                let laundered = (trusted.suspect.iter().zip(&got.suspect))
                    .filter(|&(&was, &is)| was && !is)
                    .count();
                assert_eq!(laundered, 0, "{case}: suspect frames come back trusted");
                suspect += trusted.suspect.iter().filter(|&&s| s).count();
                // Events: the trusted ones, plus logging-resume and log-end events salvage adds.
                let added =
                    |e: &Event| matches!(e, Event::LoggingResume { .. } | Event::LogEnd { .. });
                let kept: Vec<&Event> = got.events.iter().filter(|e| !added(e)).collect();
                let want: Vec<&Event> = trusted.events.iter().filter(|e| !added(e)).collect();
                assert_eq!(kept, want, "{case}");
                assert_eq!(
                    salvage_all(&salvaged),
                    salvaged,
                    "{case}: salvage is not idempotent"
                );
                cases += 1;
            }
        }
    }
    assert!(cases >= 20);
    assert!(suspect > 0, "no case kept a suspect frame");
}

#[test]
fn one_session_can_be_salvaged_alone() {
    let data = std::fs::read(common::own_corpus().join("generated/demo.bbl")).unwrap();
    let (_, all) = salvage("t", &data, None);
    let (_, second) = salvage("t", &data, Some(2));
    assert_eq!(all.len(), 2);
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].summary.index, 2);
    assert_eq!(second[0].bytes, all[1].bytes);
}

#[test]
fn the_hand_damaged_real_log_salvages_to_a_clean_log() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let path =
        corpus.join("real/blackbox/betaflight-4.2.11-blackbox-log-error-recovery-edited.bbl");
    let data = std::fs::read(&path).unwrap();
    let (trusted, report) = decode(&data);
    assert!(!report.is_clean());
    let salvaged = salvage_all(&data);
    let (got, report) = decode(&salvaged);
    assert!(report.is_clean(), "{:?}", report.corrupt_spans);
    assert_eq!(got.frames, trusted.frames);
    assert_eq!(salvage_all(&salvaged), salvaged);
}

#[test]
fn a_salvaged_text_mode_copy_says_its_line_feeds_were_checked() {
    let marker = b"\nH Line feeds:checked\n";
    for path in logs().into_iter().take(5) {
        let data = std::fs::read(&path).unwrap();
        let copied = damage::damage(&data, Model::Newline, 0).data;
        let sessions = bbcheck::blackbox::sessions(&copied);
        // Logs too short to tell a text-mode copy by are read as they are.
        if !bbcheck::blackbox::copied_in_text_mode(&copied, &sessions[0]) {
            continue;
        }
        let (trusted, report) = decode(&copied);
        let case = path.display();
        assert!(!report.is_clean(), "{case}: a text-mode copy is damage");
        let salvaged = salvage_all(&copied);
        let at = salvaged.windows(marker.len()).position(|w| w == marker);
        let Some(at) = at else {
            panic!("{case}: the salvaged header does not say the line feeds were checked");
        };
        let (again, report) = decode(&salvaged);
        assert!(
            report.is_clean(),
            "{case}: {:?}",
            report.corrupt_spans.first()
        );
        assert_eq!(again.frames, trusted.frames, "{case}");
        // Where the salvaged data still reads as a text-mode copy (salvage wrote few carriage
        // returns: line feeds read as such, a logging-resume event), the same bytes without that
        // line are judged as one. (Line feeds read as carriage returns are written as such.)
        let unmarked = [&salvaged[..at + 1], &salvaged[at + marker.len()..]].concat();
        let sessions = bbcheck::blackbox::sessions(&unmarked);
        if bbcheck::blackbox::copied_in_text_mode(&unmarked, &sessions[0]) {
            assert!(!decode(&unmarked).1.is_clean(), "{case}");
        }
    }
}

/// An output that records the size of every piece it is handed.
#[derive(Default)]
struct Pieces {
    bytes: Vec<u8>,
    largest: usize,
    count: usize,
}

impl bbcheck::blackbox::salvage::Output for Pieces {
    fn write(&mut self, _session: usize, bytes: &[u8]) -> std::io::Result<()> {
        self.bytes.extend_from_slice(bytes);
        self.largest = self.largest.max(bytes.len());
        self.count += 1;
        Ok(())
    }

    fn restart(&mut self) -> std::io::Result<()> {
        *self = Pieces::default();
        Ok(())
    }
}

/// A synthetic Betaflight 4 flight of one session logging `iterations` loop iterations.
fn long_flight(iterations: u32) -> Vec<u8> {
    use bbcheck::testkit::blackbox::{FlightSpec, Layout, flight};
    flight(&FlightSpec {
        iterations,
        ..FlightSpec::new(Layout::Betaflight4)
    })
}

#[test]
fn a_long_session_is_written_out_as_it_goes() {
    let data = long_flight(400_000);
    assert!(data.len() > 2 << 20, "{} bytes", data.len());
    let mut pieces = Pieces::default();
    let reached = std::sync::atomic::AtomicU64::new(0);
    let (report, sessions) = bbcheck::blackbox::salvage::salvage_into(
        "t",
        &data,
        None,
        Keep::All,
        &reached,
        &mut pieces,
    )
    .unwrap();
    assert!(report.is_clean());
    assert_eq!(
        pieces.bytes, data,
        "a clean session re-encodes byte for byte"
    );
    assert_eq!(sessions[0].output_end, data.len() as u64);
    // Memory holds a piece of the session at a time, never the whole of it.
    assert!(pieces.count > 16, "{} pieces", pieces.count);
    assert!(
        pieces.largest <= 128 << 10,
        "a piece of {} bytes",
        pieces.largest
    );
    // The offset reached, by which mapped input pages are released, followed the decoding.
    let reached = reached.load(std::sync::atomic::Ordering::Relaxed) as usize;
    assert!(
        reached > data.len() - 1024,
        "reached {reached} of {}",
        data.len()
    );
}

/// An output that fails once it has been handed `room` bytes.
struct Full {
    room: usize,
    calls_after_failing: usize,
}

impl bbcheck::blackbox::salvage::Output for Full {
    fn write(&mut self, _session: usize, bytes: &[u8]) -> std::io::Result<()> {
        if self.room == 0 {
            self.calls_after_failing += 1;
        }
        match self.room.checked_sub(bytes.len()) {
            Some(left) if self.room > 0 => {
                self.room = left;
                Ok(())
            }
            _ => {
                self.room = 0;
                Err(std::io::Error::new(
                    std::io::ErrorKind::StorageFull,
                    "disk full",
                ))
            }
        }
    }

    fn restart(&mut self) -> std::io::Result<()> {
        Err(std::io::Error::other("a full output cannot start again"))
    }
}

#[test]
fn salvage_stops_writing_at_the_first_output_error_and_returns_it() {
    let data = long_flight(100_000);
    let mut full = Full {
        room: 200 << 10,
        calls_after_failing: 0,
    };
    let reached = std::sync::atomic::AtomicU64::new(0);
    let result =
        bbcheck::blackbox::salvage::salvage_into("t", &data, None, Keep::All, &reached, &mut full);
    let Err(error) = result else {
        panic!("salvage went on past the output's error");
    };
    assert_eq!(error.kind(), std::io::ErrorKind::StorageFull);
    assert_eq!(
        full.calls_after_failing, 0,
        "nothing is written after the error"
    );
}
