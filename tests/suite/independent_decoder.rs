//! An independent decoder, the `blackbox-log` crate, reads every salvaged log without an error and
//! finds the frames salvage wrote. It supports Betaflight 4.2–4.5 and INAV 5–8: in the real corpus
//! that is the Betaflight 4.2.0, 4.2.8, 4.2.9, 4.2.11 and 4.5.3 logs, plus the shipped demo log.

use crate::common;

use bbcheck::blackbox::salvage::salvage;
use bbcheck::testkit::damage::{self, Model};
use blackbox_log::data::ParserEvent;

fn supported(revision: &str) -> bool {
    [
        "Betaflight 4.2.",
        "Betaflight 4.3.",
        "Betaflight 4.4.",
        "Betaflight 4.5.",
    ]
    .iter()
    .any(|p| revision.starts_with(p))
}

#[test]
fn salvaged_logs_read_cleanly_in_an_independent_decoder() {
    let mut logs = vec![common::own_corpus().join("generated/demo.bbl")];
    if let Some(corpus) = common::corpus() {
        for entry in std::fs::read_dir(corpus.join("real/blackbox")).unwrap() {
            logs.push(entry.unwrap().path());
        }
    }
    let mut checked = 0;
    for path in logs {
        let data = std::fs::read(&path).unwrap();
        let sessions = bbcheck::blackbox::sessions(&data);
        let Some(first) = sessions.first() else {
            continue;
        };
        if !first
            .header
            .firmware_revision
            .as_deref()
            .is_some_and(supported)
        {
            continue;
        }
        // A text-mode copy's salvaged log lists its suspect frames in header lines of its own.
        for model in [
            Model::DropRuns,
            Model::LostBlocks,
            Model::ZeroRuns,
            Model::Truncate,
            Model::Newline,
        ] {
            let damaged = damage::damage(&data, model, 1).data;
            let (_, salvaged) = salvage("t", &damaged, None);
            for out in salvaged {
                let kept = out.summary.kept;
                if kept.i + kept.p == 0 {
                    continue;
                }
                let file = blackbox_log::File::new(&out.bytes);
                assert_eq!(file.log_count(), 1);
                let headers = file
                    .parse(0)
                    .unwrap()
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let mut parser = headers.data_parser();
                let (mut main, mut slow, mut gps) = (0u64, 0u64, 0u64);
                while let Some(event) = parser.next() {
                    match event {
                        ParserEvent::Main(_) => main += 1,
                        ParserEvent::Slow(_) => slow += 1,
                        ParserEvent::Gps(_) => gps += 1,
                        ParserEvent::Event(_) => {}
                    }
                }
                let case = format!(
                    "{} {} session {}",
                    path.display(),
                    model.name(),
                    out.summary.index
                );
                assert_eq!(main, kept.i + kept.p, "{case}: main frames");
                assert_eq!(slow, kept.s, "{case}: slow frames");
                assert_eq!(gps, kept.g, "{case}: GPS frames");
                checked += 1;
            }
        }
    }
    assert!(checked > 0, "no salvaged log was checked");
    eprintln!("{checked} salvaged sessions read by blackbox-log");
}
