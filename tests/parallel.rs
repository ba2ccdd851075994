//! Sessions shared among threads: `check` on one file of many sessions uses every core, and its
//! report is the one a single thread gives.

mod common;

use bbcheck::blackbox::{self, decoder::Discard};
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
