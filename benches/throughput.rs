//! Throughput, side by side on the same bytes: a plain pass over the bytes (the physical
//! yardstick: `memchr` counting frame bytes plus a byte checksum), bbcheck's `check` and
//! `export --jsonl`, and the `blackbox-log` crate's decoder, on the largest real Betaflight log
//! that crate supports, repeated to at least 100 MiB; then DataFlash `check` on the largest real
//! DataFlash log, repeated likewise. Prints MiB/s (best of 5) and ratios. Without the real corpus,
//! the shipped demo log and DataFlash seed stand in.

use std::path::{Path, PathBuf};
use std::time::Instant;

const TARGET: usize = 100 << 20;
const RUNS: usize = 5;

fn corpus() -> PathBuf {
    std::env::var_os("BBCHECK_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"))
}

fn own(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The largest file in `dir` whose name starts with one of `prefixes`.
fn largest(dir: &Path, prefixes: &[&str]) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            prefixes.iter().any(|p| name.starts_with(p))
        })
        .max_by_key(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
        .map(|e| e.path())
}

fn repeated(path: &Path) -> Vec<u8> {
    let one = std::fs::read(path).expect("benchmark input");
    let mut data = Vec::with_capacity(TARGET + one.len());
    while data.len() < TARGET {
        data.extend_from_slice(&one);
    }
    data
}

/// Seconds of the fastest of [`RUNS`] runs.
fn best(mut f: impl FnMut()) -> f64 {
    (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// The yardstick: every byte read once, as cheaply as a useful pass can.
fn yardstick(data: &[u8]) -> u64 {
    let frames = memchr::memchr2_iter(b'I', b'P', data).count() as u64;
    let sum = data.chunks(8).fold(0u64, |s, c| {
        s.wrapping_add(c.iter().map(|&b| u64::from(b)).sum())
    });
    frames ^ sum
}

fn blackbox_log_main_frames(data: &[u8]) -> u64 {
    let file = blackbox_log::File::new(data);
    let mut frames = 0;
    for index in 0..file.log_count() {
        let Some(Ok(headers)) = file.parse(index) else {
            continue;
        };
        let mut parser = headers.data_parser();
        while let Some(event) = parser.next() {
            if let blackbox_log::data::ParserEvent::Main(_) = event {
                frames += 1;
            }
        }
    }
    frames
}

fn row(name: &str, mib: f64, seconds: f64, yardstick: f64, note: &str) {
    println!(
        "{name:28} {:8.1} MiB/s  {:5.1} % of the yardstick  {note}",
        mib / seconds,
        100.0 * yardstick / seconds
    );
}

fn main() {
    let blackbox = largest(&corpus().join("real/blackbox"), &["betaflight-4.5."])
        .unwrap_or_else(|| own("corpus/generated/demo.bbl"));
    let data = repeated(&blackbox);
    let mib = data.len() as f64 / (1 << 20) as f64;
    println!("Blackbox: {} repeated to {mib:.1} MiB", blackbox.display());
    let yard = best(|| {
        std::hint::black_box(yardstick(&data));
    });
    row("yardstick (memchr + sum)", mib, yard, yard, "");
    let mut ours = 0;
    let check = best(|| {
        let report = bbcheck::blackbox::decode(
            "bench",
            &data,
            |_, _| {},
            &mut bbcheck::blackbox::decoder::Discard,
        );
        ours = report
            .sessions
            .iter()
            .map(|s| s.frames.i + s.frames.p)
            .sum::<u64>();
    });
    row(
        "bbcheck check",
        mib,
        check,
        yard,
        &format!("{ours} main frames"),
    );
    let export = best(|| {
        let reached = std::sync::atomic::AtomicU64::new(0);
        bbcheck::cli::export::write_jsonl("bench", &data, std::io::sink(), &reached)
            .expect("export");
    });
    row("bbcheck export --jsonl", mib, export, yard, "");
    let mut theirs = 0;
    let peer = best(|| theirs = blackbox_log_main_frames(&data));
    row(
        "blackbox-log 0.4 (crate)",
        mib,
        peer,
        yard,
        &format!("{theirs} main frames"),
    );
    println!(
        "bbcheck check is {:.2} x blackbox-log's speed",
        peer / check
    );

    let dataflash = largest(&corpus().join("real/ardupilot"), &["ardupilot-"])
        .unwrap_or_else(|| own("corpus/seeds/dataflash/copter-3s.bin"));
    let data = repeated(&dataflash);
    let mib = data.len() as f64 / (1 << 20) as f64;
    println!(
        "DataFlash: {} repeated to {mib:.1} MiB",
        dataflash.display()
    );
    let yard = best(|| {
        std::hint::black_box(yardstick(&data));
    });
    row("yardstick (memchr + sum)", mib, yard, yard, "");
    let check = best(|| {
        std::hint::black_box(bbcheck::dataflash::check("bench", &data));
    });
    row("bbcheck check", mib, check, yard, "");
}
