//! Throughput (criterion), side by side on the same bytes: a plain pass over the bytes (the
//! physical yardstick: `memchr` counting frame bytes plus a byte checksum), bbcheck's `check` and
//! `export --jsonl`, and the `blackbox-log` crate's decoder, on the largest real Betaflight log
//! that crate supports, repeated to at least 100 MiB, its main CSV rows formatted into memory and
//! its Parquet tables and MCAP recordings written to memory; `check` on one generated session of
//! over 100 MiB, on one thread and split between two; then DataFlash `check`, `export --jsonl`,
//! `--parquet` and `--mcap` (to memory) and `--csv` (each table through a buffered writer to
//! nowhere) on the largest real DataFlash log, repeated likewise. Without the real corpus, the
//! shipped demo log and DataFlash seed stand in.

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

const TARGET: usize = 100 << 20;

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

/// The yardstick: every byte read once, as cheaply as a useful pass can.
fn yardstick(data: &[u8]) -> u64 {
    let frames = memchr::memchr2_iter(b'I', b'P', data).count() as u64;
    let sum = data.chunks(8).fold(0u64, |s, c| {
        s.wrapping_add(c.iter().map(|&b| u64::from(b)).sum())
    });
    frames ^ sum
}

/// The main CSV rows `export --csv` writes for `data`, formatted into a buffer emptied at every
/// mebibyte instead of written to files; returns the bytes formatted.
fn csv_main_rows(data: &[u8]) -> u64 {
    use bbcheck::blackbox::export::csv::ReferenceCsv;
    use bbcheck::blackbox::frame::FrameKind;
    use bbcheck::blackbox::sink::{Frame, Sink};
    struct Rows {
        csv: ReferenceCsv,
        rows: Vec<u8>,
        bytes: u64,
    }
    impl Sink for Rows {
        fn frame(&mut self, frame: &Frame<'_>) {
            match frame.kind {
                FrameKind::S => self.csv.slow_frame(&mut self.rows, frame),
                FrameKind::I | FrameKind::P => {
                    self.csv.write_main_row(&mut self.rows, frame);
                    if self.rows.len() >= 1 << 20 {
                        self.bytes += self.rows.len() as u64;
                        self.rows.clear();
                    }
                }
                _ => {}
            }
        }
    }
    let mut rows = Rows {
        csv: ReferenceCsv::new(),
        rows: Vec::with_capacity(2 << 20),
        bytes: 0,
    };
    bbcheck::blackbox::decode(
        "bench",
        data,
        |session, rows: &mut Rows| {
            if rows.csv.start_session(session, data) {
                rows.csv.write_header(&mut rows.rows);
            }
        },
        &mut rows,
    );
    rows.bytes + rows.rows.len() as u64
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

/// The bytes of the Parquet tables `export --parquet` writes for `data`, written to memory.
fn blackbox_parquet(data: &[u8]) -> usize {
    use bbcheck::blackbox::export::parquet::ParquetSink;
    let mut bytes = 0;
    let mut sink = ParquetSink::new(
        |_| Ok(Vec::new()),
        |_, table: Vec<u8>| {
            bytes += table.len();
            Ok(())
        },
        bbcheck::report::Keep::All,
    )
    .expect("an encoding thread");
    bbcheck::blackbox::decode(
        "bench",
        data,
        |session, sink: &mut ParquetSink<_, _, _>| sink.start_session(session),
        &mut sink,
    );
    sink.finish().expect("export");
    bytes
}

/// The bytes of the MCAP recordings `export --mcap` writes for `data`, written to memory.
fn blackbox_mcap(data: &[u8]) -> usize {
    use bbcheck::blackbox::export::mcap::McapSink;
    let mut bytes = 0;
    let mut sink = McapSink::new(
        |_| Ok(std::io::Cursor::new(Vec::new())),
        |_, recording: std::io::Cursor<Vec<u8>>| {
            bytes += recording.into_inner().len();
            Ok(())
        },
        bbcheck::report::Keep::All,
    );
    bbcheck::blackbox::decode(
        "bench",
        data,
        |session, sink: &mut McapSink<_, _, _>| sink.start_session(session),
        &mut sink,
    );
    sink.finish().expect("export");
    bytes
}

fn bench(c: &mut Criterion) {
    let blackbox = largest(&corpus().join("real/blackbox"), &["betaflight-4.5."])
        .unwrap_or_else(|| own("corpus/generated/demo.bbl"));
    let data = repeated(&blackbox);
    let mut group = with_yardstick(c, "blackbox", &blackbox, &data);
    bench_check(&mut group, &data, "sessions on 2 threads");
    group.bench_function("bbcheck export --jsonl", |b| {
        b.iter(|| {
            bbcheck::blackbox::export::jsonl::write_jsonl(
                "bench",
                &data,
                bbcheck::report::Keep::All,
                std::io::sink(),
            )
            .expect("export")
        })
    });
    group.bench_function("bbcheck export --csv, main rows to memory", |b| {
        b.iter(|| black_box(csv_main_rows(&data)))
    });
    group.bench_function("bbcheck export --parquet, tables to memory", |b| {
        b.iter(|| black_box(blackbox_parquet(&data)))
    });
    group.bench_function("bbcheck export --mcap, recordings to memory", |b| {
        b.iter(|| black_box(blackbox_mcap(&data)))
    });
    group.bench_function("blackbox-log 0.4", |b| {
        b.iter(|| black_box(blackbox_log_main_frames(&data)))
    });
    group.finish();

    // One session of over 100 MiB (a generated Betaflight 4 flight of about 15 minutes at 8 kHz):
    // split between two threads.
    let spec = bbcheck::testkit::blackbox::FlightSpec {
        iterations: 14_000_000,
        ..bbcheck::testkit::blackbox::FlightSpec::new(
            bbcheck::testkit::blackbox::Layout::Betaflight4,
        )
    };
    let data = bbcheck::testkit::blackbox::flight(&spec);
    let mut group = with_yardstick(c, "blackbox", Path::new("one long session"), &data);
    bench_check(&mut group, &data, "split between 2 threads");
    group.finish();

    let dataflash = largest(&corpus().join("real/ardupilot"), &["ardupilot-"])
        .unwrap_or_else(|| own("corpus/seeds/dataflash/copter-3s.bin"));
    let data = repeated(&dataflash);
    let mut group = with_yardstick(c, "dataflash", &dataflash, &data);
    group.bench_function("bbcheck check", |b| {
        b.iter(|| bbcheck::dataflash::check("bench", &data))
    });
    group.bench_function("bbcheck export --jsonl", |b| {
        let reached = AtomicU64::new(0);
        b.iter(|| {
            bbcheck::dataflash::export::jsonl::write_jsonl(
                "bench",
                &data,
                &Default::default(),
                std::io::sink(),
                &reached,
            )
            .expect("export")
        })
    });
    group.bench_function("bbcheck export --parquet, tables to memory", |b| {
        let reached = AtomicU64::new(0);
        b.iter(|| {
            bbcheck::dataflash::export::parquet::write_parquet(
                "bench",
                &data,
                &Default::default(),
                |_| Ok(Vec::new()),
                &reached,
            )
            .expect("export")
        })
    });
    group.bench_function("bbcheck export --mcap, recording to memory", |b| {
        let reached = AtomicU64::new(0);
        b.iter(|| {
            bbcheck::dataflash::export::mcap::write_mcap(
                "bench",
                &data,
                &Default::default(),
                std::io::Cursor::new(Vec::new()),
                &reached,
            )
            .expect("export")
        })
    });
    group.bench_function("bbcheck export --csv, tables to memory", |b| {
        let reached = AtomicU64::new(0);
        b.iter(|| {
            bbcheck::dataflash::export::csv::write_csv(
                "bench",
                &data,
                Default::default(),
                |_| Ok(std::io::BufWriter::new(std::io::sink())),
                &reached,
            )
            .expect("export")
        })
    });
    group.finish();
}

/// Blackbox `check` of `data` on one thread, then on two (`two` says how they share the work).
fn bench_check(group: &mut BenchmarkGroup<'_, WallTime>, data: &[u8], two: &str) {
    use bbcheck::blackbox::sink::Discard;
    group.bench_function("bbcheck check", |b| {
        b.iter(|| bbcheck::blackbox::decode("bench", data, |_, _| {}, &mut Discard))
    });
    group.bench_function(format!("bbcheck check, {two}"), |b| {
        b.iter(|| bbcheck::blackbox::decode_in_parallel("bench", data, 2, |_| Discard))
    });
}

/// A group measuring throughput over `data` (made from `path`), its yardstick already run.
fn with_yardstick<'c>(
    c: &'c mut Criterion,
    format: &str,
    path: &Path,
    data: &[u8],
) -> BenchmarkGroup<'c, WallTime> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let mut group = c.benchmark_group(format!("{format} {name}"));
    group
        .sample_size(10)
        .throughput(Throughput::Bytes(data.len() as u64));
    group.bench_function("yardstick (memchr + sum)", |b| {
        b.iter(|| black_box(yardstick(data)))
    });
    group
}

criterion_group!(benches, bench);
criterion_main!(benches);
