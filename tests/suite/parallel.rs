//! Sessions shared among threads: `check` on one file of many sessions uses every core, and its
//! report is the one a single thread gives.

use crate::common;

use bbcheck::blackbox::{self, sink::Discard};
use std::path::PathBuf;

fn blackbox_files() -> Vec<PathBuf> {
    let mut dirs = vec![
        common::own_corpus().join("generated"),
        common::own_corpus().join("damaged"),
    ];
    if let Some(corpus) = common::corpus() {
        dirs.push(corpus.join("real/blackbox"));
    }
    let mut files: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| std::fs::read(p).is_ok_and(|d| blackbox::is_blackbox(&d)))
        .collect();
    files.sort();
    files
}

#[test]
fn sessions_decoded_on_several_threads_give_the_single_thread_report() {
    let files = blackbox_files();
    assert!(files.len() >= 20, "{} Blackbox files", files.len());
    let mut sessions = 0;
    for path in &files {
        let data = std::fs::read(path).unwrap();
        // Two copies: more sessions than threads, and sessions of every size in each thread.
        let data = [&data[..], &data[..]].concat();
        let one = blackbox::decode("log", &data, |_, _| {}, &mut Discard);
        sessions += one.sessions.len();
        for workers in [1, 2, 3, 8] {
            let shared = blackbox::decode_in_parallel("log", &data, workers, |_| Discard);
            assert_eq!(shared, one, "{} on {workers} threads", path.display());
        }
    }
    assert!(sessions >= 100, "{sessions} sessions");
}

#[test]
fn sessions_decoded_in_pieces_give_the_single_thread_report() {
    let mut splits = blackbox::Splits::default();
    for path in blackbox_files() {
        let data = std::fs::read(&path).unwrap();
        let one = blackbox::decode("log", &data, |_, _| {}, &mut Discard);
        for (workers, piece) in [(2, 64 << 10), (3, 32 << 10), (8, 16 << 10)] {
            let (shared, s) = blackbox::decode_in_pieces("log", &data, workers, piece, |_| Discard);
            assert_eq!(
                shared,
                one,
                "{} in pieces of {piece} bytes on {workers} threads",
                path.display()
            );
            splits.pieces += s.pieces;
            splits.joined += s.joined;
        }
    }
    println!("{splits:?}");
    assert!(splits.pieces > 0);
}

#[test]
fn one_long_session_split_between_threads_joins_and_gives_the_single_thread_report() {
    use bbcheck::testkit::blackbox::{FlightSpec, Layout};
    use bbcheck::testkit::damage::{self, Model};
    let spec = FlightSpec {
        iterations: 200_000,
        ..FlightSpec::new(Layout::Betaflight4)
    };
    let clean = bbcheck::testkit::blackbox::flight(&spec);
    let piece = clean.len() / 3;
    let one = blackbox::decode("log", &clean, |_, _| {}, &mut Discard);
    assert_eq!(one.sessions.len(), 1);
    for workers in [2, 3] {
        let (split, splits) =
            blackbox::decode_in_pieces("log", &clean, workers, piece, |_| Discard);
        assert_eq!(split, one, "{workers} threads");
        // Each later piece meets the state of the piece before soon after it starts.
        let pieces = workers - 1;
        assert_eq!(
            splits,
            blackbox::Splits {
                pieces,
                joined: pieces
            }
        );
    }
    // Damage anywhere, the split points included, leaves the report the single thread's.
    let mut joined = 0;
    for model in Model::ALL {
        for seed in 0..3 {
            let data = damage::damage(&clean, model, seed).data;
            let one = blackbox::decode("log", &data, |_, _| {}, &mut Discard);
            for workers in [2, 3] {
                let (split, splits) =
                    blackbox::decode_in_pieces("log", &data, workers, piece, |_| Discard);
                assert_eq!(
                    split,
                    one,
                    "{} seed {seed}, {workers} threads",
                    model.name()
                );
                joined += splits.joined;
            }
        }
    }
    assert!(joined >= 50, "{joined} of 90 later pieces joined");
}
