//! Throughput of `check` and `export --jsonl` on the largest real Blackbox log, repeated to at
//! least 100 MiB (the shipped demo log when the real corpus is absent). Prints MiB/s, best of 5.

use std::path::PathBuf;
use std::time::Instant;

const TARGET: usize = 100 << 20;

fn input() -> (String, Vec<u8>) {
    let corpus = std::env::var_os("BBCHECK_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    let largest = std::fs::read_dir(corpus.join("real/blackbox"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .max_by_key(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
        .map(|e| e.path())
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus/generated/demo.bbl")
        });
    let one = std::fs::read(&largest).expect("benchmark input");
    let mut data = Vec::with_capacity(TARGET + one.len());
    while data.len() < TARGET {
        data.extend_from_slice(&one);
    }
    (largest.display().to_string(), data)
}

fn best_of(runs: usize, mut f: impl FnMut()) -> f64 {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let (name, data) = input();
    let mib = data.len() as f64 / (1 << 20) as f64;
    println!("input: {name} repeated to {mib:.1} MiB");
    let mut frames = 0;
    let check = best_of(5, || {
        let report = bbcheck::blackbox::decode(
            "bench",
            &data,
            |_, _| {},
            &mut bbcheck::blackbox::decoder::Discard,
        );
        frames = report
            .sessions
            .iter()
            .map(|s| s.frames.i + s.frames.p)
            .sum::<u64>();
    });
    println!(
        "check:          {:8.1} MiB/s  ({frames} main frames, {:.3} s)",
        mib / check,
        check
    );
    let export = best_of(5, || {
        bbcheck::cli::export::write_jsonl("bench", &data, std::io::sink()).expect("export");
    });
    println!(
        "export --jsonl: {:8.1} MiB/s  ({:.3} s)",
        mib / export,
        export
    );
}
