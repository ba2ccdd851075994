//! `bbcheck export`: the accepted frames as JSON Lines on standard output, as one CSV file per
//! session in the layout of the reference C decoder, or as Parquet tables.

use super::output::{AtomicFile, ClosedFile, WRITE_BUFFER};
use super::{Detected, EXIT_CLEAN, Error, LogFormat, detect, exit_once_written, input, terminal};
use crate::blackbox::export::csv::{self, ReferenceCsv};
use crate::blackbox::export::jsonl::JsonlSink;
use crate::blackbox::export::mcap::McapSink;
use crate::blackbox::export::parquet::ParquetSink;
use crate::blackbox::frame::FrameKind;
use crate::blackbox::sink::{EventFrame, Frame, Sink};
use crate::blackbox::stats::Statistics;
use crate::blackbox::{self, Session};
use crate::report::{FileReport, Keep};
use std::collections::HashSet;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("format").required(true).args(["jsonl", "csv", "parquet", "mcap"])))]
pub struct Args {
    /// Log files to export (`-` reads standard input); directories are searched recursively,
    /// and files in them that hold no log are skipped. With several, JSON Lines gives each
    /// file's records after a `{"type":"file","path":…}` record, and CSV files of two inputs
    /// with the same stem in one directory are told apart as `<stem>.2.*`.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// JSON Lines on standard output: a session record, then one record per frame and event.
    #[arg(long)]
    jsonl: bool,
    /// CSV files. Blackbox: per session NN (from 01) the files blackbox_decode writes with its
    /// default options (or with the `--unit-*`, `--merge-gps` and `--datetime` given):
    /// `<stem>.NN.csv` (main frames with units, energyCumulative and the
    /// slow-frame fields, flags as names), `<stem>.NN.gps.csv` and `<stem>.NN.gps.gpx` when the
    /// session has GPS frames, `<stem>.NN.event` when it has events; Betaflight's or INAV's
    /// formatting by firmware. DataFlash: one per message type, `<stem>.<NAME>.csv` (units in the
    /// headings).
    #[arg(long)]
    csv: bool,
    /// Parquet tables (zstd), typed as the log declares its fields, for pandas, polars, DuckDB
    /// or Spark. Blackbox: per session NN `<stem>.NN.main.parquet` (I and P frames),
    /// `.slow`, `.gps`, `.home` and `.events` when the session has such frames, the header
    /// lines as the file's metadata. DataFlash: one per message type, `<stem>.<NAME>.parquet`,
    /// units and multipliers as column metadata. Each row also has its `offset` and `trust`.
    #[arg(long)]
    parquet: bool,
    /// MCAP recordings for Foxglove and PlotJuggler, at the flight controller's time: per
    /// Blackbox session `<stem>.NN.mcap` (channels /main, /slow, /gps, /home), per DataFlash log
    /// `<stem>.mcap` (a channel per message type, values scaled unless --raw); events, MSG texts
    /// and damaged spans on /log (foxglove.Log), GPS positions on /gps/fix
    /// (foxglove.LocationFix).
    #[arg(long)]
    mcap: bool,
    /// Directory for CSV, Parquet and MCAP files, created if missing (default: the input's
    /// directory).
    #[arg(long, short = 'o')]
    output_dir: Option<PathBuf>,
    /// Read the file as this format instead of deciding from its content.
    #[arg(long = "format", id = "log_format", value_enum, default_value_t)]
    log_format: LogFormat,
    /// Leave out suspect frames and messages (read in step, values in doubt). Without it they
    /// are exported, marked where the format can say so: `"trust":"suspect"` in JSON Lines and
    /// MCAP messages, `suspect` in the Parquet `trust` column.
    #[arg(long)]
    drop_suspect: bool,
    /// Exit 1 when the input is damaged (the output is written all the same); without it the
    /// command exits 0 once its output is written.
    #[arg(long)]
    fail_on_damage: bool,
    /// DataFlash CSV, Parquet and MCAP: write the values as stored (`Roll` 755), not scaled as
    /// pymavlink and mavlogdump show them (7.55).
    #[arg(long)]
    raw: bool,
    /// DataFlash: export only these message types (comma-separated names, e.g. `ATT,GPS`).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    types: Option<Vec<String>>,
    /// DataFlash CSV: every message type in one table, `<stem>.csv` (or standard output with
    /// `-o -`): a `type` column, then each type's columns as `NAME.column`, empty in other
    /// types' rows.
    #[arg(long, conflicts_with_all = ["jsonl", "parquet", "mcap"])]
    combined: bool,
    /// Blackbox: export only this session (1-based), as `blackbox_decode --index N` does (its
    /// CSV's current meter starts from nothing); `--index N` is the same.
    #[arg(long, value_name = "N", alias = "index")]
    session: Option<usize>,
    /// Blackbox CSV: unit of the current (amperageLatest; INAV: amperage), as blackbox_decode's
    /// option of that name [default: A]; energyCumulative stays in mAh.
    #[arg(long, value_enum, ignore_case = true, value_name = "UNIT")]
    unit_amperage: Option<csv::AmperageUnit>,
    /// Blackbox CSV: flightModeFlags, stateFlags and failsafePhase as names or as numbers
    /// [default: flags].
    #[arg(long, value_enum, ignore_case = true, value_name = "UNIT")]
    unit_flags: Option<csv::FlagsUnit>,
    /// Blackbox CSV: unit of the time in the main and GPS CSV, `%.3f` in ms, `%.6f` in s
    /// [default: us].
    #[arg(long, value_enum, ignore_case = true, value_name = "UNIT")]
    unit_frame_time: Option<csv::FrameTimeUnit>,
    /// Blackbox CSV: unit of BaroAlt [default: cm] (Betaflight 4's `baroAlt` stays as logged, as
    /// the tools leave it).
    #[arg(long, value_enum, ignore_case = true, value_name = "UNIT")]
    unit_height: Option<csv::HeightUnit>,
    /// Blackbox CSV: unit of gyroADC, from the header's gyro_scale [default: raw]. Degrees a
    /// second for every firmware type but Baseflight, where the tools take Betaflight 2025.12's
    /// and Rotorflight's for radians a microsecond.
    #[arg(long, value_enum, ignore_case = true, value_name = "UNIT")]
    unit_rotation: Option<csv::RotationUnit>,
    /// Blackbox CSV: unit of accSmooth, from the header's acc_1G [default: raw].
    #[arg(long, value_enum, ignore_case = true, value_name = "UNIT")]
    unit_acceleration: Option<csv::AccelerationUnit>,
    /// Blackbox CSV: unit of GPS_speed (km/h, mi/h) [default: mps].
    #[arg(long, value_enum, ignore_case = true, value_name = "UNIT")]
    unit_gps_speed: Option<csv::GpsSpeedUnit>,
    /// Blackbox CSV: unit of the battery voltage (vbatLatest; INAV: vbat) [default: V]. mV are
    /// millivolts, also for Betaflight 4.3.0 and later, where Betaflight's tool writes ten times
    /// them.
    #[arg(long, value_enum, ignore_case = true, value_name = "UNIT")]
    unit_vbat: Option<csv::VbatUnit>,
    /// Blackbox CSV: the GPS fields at the end of the main rows instead of in `<stem>.NN.gps.csv`,
    /// as blackbox_decode --merge-gps writes them (each row with the last GPS frame's fields;
    /// Betaflight's tool also repeats the last main frame at each GPS frame's time).
    #[arg(long)]
    merge_gps: bool,
    /// Blackbox CSV: a `dateTime` column after each time (main and GPS CSV), the UTC time as
    /// INAV's blackbox_decode --datetime gives it: `Log start datetime` plus the time since the
    /// session's first row. Betaflight logs get the same column.
    #[arg(long)]
    datetime: bool,
    /// Blackbox: after the export, print to standard error the statistics blackbox_decode
    /// prints for each session (frames and bytes per type, loop time, data rate, iterations
    /// missing or not logged by the schedule), counted from the frames exported.
    #[arg(long)]
    stats: bool,
}

impl Args {
    /// Which frames to export.
    fn keep(&self) -> Keep {
        Keep::dropping_suspect(self.drop_suspect)
    }

    /// The blackbox_decode options of a Blackbox CSV export.
    fn csv_options(&self) -> csv::Options {
        csv::Options {
            units: csv::Units {
                amperage: self.unit_amperage.unwrap_or_default(),
                flags: self.unit_flags.unwrap_or_default(),
                frame_time: self.unit_frame_time.unwrap_or_default(),
                height: self.unit_height.unwrap_or_default(),
                rotation: self.unit_rotation.unwrap_or_default(),
                acceleration: self.unit_acceleration.unwrap_or_default(),
                gps_speed: self.unit_gps_speed.unwrap_or_default(),
                vbat: self.unit_vbat.unwrap_or_default(),
            },
            merge_gps: self.merge_gps,
            datetime: self.datetime,
        }
    }

    /// The first blackbox_decode option given, which only a Blackbox CSV export takes.
    fn blackbox_csv_option(&self) -> Option<&'static str> {
        [
            (self.unit_amperage.is_some(), "--unit-amperage"),
            (self.unit_flags.is_some(), "--unit-flags"),
            (self.unit_frame_time.is_some(), "--unit-frame-time"),
            (self.unit_height.is_some(), "--unit-height"),
            (self.unit_rotation.is_some(), "--unit-rotation"),
            (self.unit_acceleration.is_some(), "--unit-acceleration"),
            (self.unit_gps_speed.is_some(), "--unit-gps-speed"),
            (self.unit_vbat.is_some(), "--unit-vbat"),
            (self.merge_gps, "--merge-gps"),
            (self.datetime, "--datetime"),
        ]
        .into_iter()
        .find_map(|(given, name)| given.then_some(name))
    }
}

/// The files one export writes into a directory, `<stem>.<name>.<extension>` (`<stem>.<extension>`
/// for the name `""`): created on demand and closed as their writer finishes them, to be
/// committed together once the export succeeds. Keeps the first error with its path.
struct Files<'a> {
    dir: &'a Path,
    stem: &'a str,
    extension: &'static str,
    buffer: usize,
    failed: std::cell::RefCell<Option<Error>>,
    closed: std::cell::RefCell<Vec<ClosedFile>>,
}

impl<'a> Files<'a> {
    fn new(dir: &'a Path, stem: &'a str, extension: &'static str, buffer: usize) -> Self {
        Files {
            dir,
            stem,
            extension,
            buffer,
            failed: Default::default(),
            closed: Default::default(),
        }
    }

    fn create(&self, name: &str) -> io::Result<AtomicFile> {
        let (stem, extension) = (self.stem, self.extension);
        let path = match name {
            "" => self.dir.join(format!("{stem}.{extension}")),
            name => self.dir.join(format!("{stem}.{name}.{extension}")),
        };
        AtomicFile::with_buffer(&path, self.buffer).map_err(|e| self.fail(e))
    }

    fn close(&self, file: AtomicFile) -> io::Result<()> {
        let file = file.close().map_err(|e| self.fail(e))?;
        self.closed.borrow_mut().push(file);
        Ok(())
    }

    /// Keep the first error; what the writer is told.
    fn fail(&self, e: Error) -> io::Error {
        let message = e.to_string();
        self.failed.borrow_mut().get_or_insert(e);
        io::Error::other(message)
    }

    /// The closed files, once the writer's `result` and every file are good.
    fn finish(self, dir: &Path, result: io::Result<()>) -> Result<Vec<ClosedFile>, Error> {
        match (result, self.failed.into_inner()) {
            (_, Some(e)) => Err(e),
            (Err(e), None) => Err(Error::io(dir, e)),
            (Ok(()), None) => Ok(self.closed.into_inner()),
        }
    }
}

/// Bytes a Parquet file gathers before each write: its writer gathers a row group's pages
/// itself, and a DataFlash export has a file open per message type.
const PARQUET_BUFFER: usize = 64 << 10;

/// One file to export: its path, whether it was found in a directory (skipped, not an error,
/// when it holds no log), and the stem its CSV files are named with.
struct Job {
    path: PathBuf,
    found: bool,
    stem: String,
}

/// The directory CSV files of `path` go to: the `-o` directory or the input's own.
fn csv_dir(args: &Args, path: &Path) -> PathBuf {
    match &args.output_dir {
        Some(dir) => dir.clone(),
        None => path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    }
}

/// The files to export, each with a stem no other file going to the same directory has.
fn jobs(args: &Args) -> Result<Vec<Job>, Error> {
    let mut taken = HashSet::new();
    Ok(input::walk(&args.files)?
        .into_iter()
        .map(|(path, found)| {
            // Standard input has no name: its files are `stdin.*`, as its --html page is.
            let stem = match path.file_stem() {
                _ if path == Path::new("-") => "stdin".to_owned(),
                Some(stem) => stem.to_string_lossy().into_owned(),
                None => "log".to_owned(),
            };
            let dir = csv_dir(args, &path);
            let mut unique = stem.clone();
            for n in 2.. {
                if taken.insert((dir.clone(), unique.clone())) {
                    break;
                }
                unique = format!("{stem}.{n}");
            }
            Job {
                path,
                found,
                stem: unique,
            }
        })
        .collect())
}

/// Where CSV files of `job` go (an `-o` directory is created when missing).
fn csv_destination(args: &Args, job: &Job) -> Result<PathBuf, Error> {
    let dir = csv_dir(args, &job.path);
    if args.output_dir.is_some() {
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    }
    Ok(dir)
}

/// Export a DataFlash log (its mapped pages released as the scans go by). Each of its two scans
/// (formats, then messages) moves the progress bar across the file.
fn run_dataflash(args: &Args, job: &Job, input: &input::Input) -> Result<u8, Error> {
    let reached = AtomicU64::new(0);
    let bar = input::progress_bar(input.len() as u64);
    input::bounded(input, std::slice::from_ref(&reached), &bar, || {
        export_dataflash(args, job, input, &reached)
    })
}

fn export_dataflash(args: &Args, job: &Job, data: &[u8], reached: &AtomicU64) -> Result<u8, Error> {
    if args.session.is_some() {
        return Err(Error::Usage(format!(
            "{}: --session applies to Blackbox logs; a DataFlash log is exported whole",
            job.path.display()
        )));
    }
    if let Some(option) = args.blackbox_csv_option() {
        return Err(Error::Usage(format!(
            "{}: {option} applies to Blackbox logs; a DataFlash CSV is written in its own units",
            job.path.display()
        )));
    }
    let name = input::name(&job.path);
    let selection = crate::dataflash::export::csv::Selection {
        keep: args.keep(),
        values: if args.raw {
            crate::dataflash::export::csv::Values::Stored
        } else {
            crate::dataflash::export::csv::Values::Scaled
        },
        types: args.types.clone(),
        combined: args.combined,
    };
    let to_stdout = args.output_dir.as_deref() == Some(Path::new("-"));
    if to_stdout && (args.parquet || args.mcap) {
        return Err(Error::Usage(format!(
            "{}: -o -: Parquet and MCAP exports write files; name a directory",
            job.path.display()
        )));
    }
    let report = if args.jsonl {
        let stdout = io::stdout();
        crate::dataflash::export::jsonl::write_jsonl(
            &name,
            data,
            &selection,
            stdout.lock(),
            reached,
        )
        .map_err(|e| Error::io(Path::new("<stdout>"), e))?
    } else if args.mcap {
        let dir = csv_destination(args, job)?;
        let path = dir.join(format!("{}.mcap", job.stem));
        let file = AtomicFile::create(&path)?;
        let (report, file) =
            crate::dataflash::export::mcap::write_mcap(&name, data, &selection, file, reached)
                .map_err(|e| Error::io(&path, e))?;
        file.commit()?;
        report
    } else if to_stdout {
        // One table on standard output.
        if !args.combined && args.types.as_ref().is_none_or(|t| t.len() != 1) {
            return Err(Error::Usage(
                "-o -: standard output takes one table; name its type with --types NAME, or \
                 --combined"
                    .into(),
            ));
        }
        let mut tables = 0;
        let (report, writers) = crate::dataflash::export::csv::write_csv(
            &name,
            data,
            selection,
            |_| {
                tables += 1;
                match tables {
                    1 => Ok(io::BufWriter::new(io::stdout().lock())),
                    _ => Err(io::Error::other(
                        "the type has two layouts in this log: export it to a directory",
                    )),
                }
            },
            reached,
        )
        .map_err(|e| Error::io(Path::new("<stdout>"), e))?;
        for mut writer in writers {
            writer
                .flush()
                .map_err(|e| Error::io(Path::new("<stdout>"), e))?;
        }
        report
    } else {
        let dir = csv_destination(args, job)?;
        let (extension, buffer) = match args.parquet {
            true => ("parquet", PARQUET_BUFFER),
            false => ("csv", WRITE_BUFFER),
        };
        let files = Files::new(&dir, &job.stem, extension, buffer);
        let create = |table: &str| files.create(&file_safe(table));
        let written = if args.parquet {
            crate::dataflash::export::parquet::write_parquet(
                &name, data, &selection, create, reached,
            )
            .map(|(report, tables)| (report, tables.into_iter().map(|(_, file)| file).collect()))
        } else {
            crate::dataflash::export::csv::write_csv(&name, data, selection, create, reached)
        };
        let written = written.and_then(|(report, tables): (_, Vec<AtomicFile>)| {
            for table in tables {
                files.close(table)?;
            }
            Ok(report)
        });
        let (report, written) = match written {
            Ok(report) => (Some(report), Ok(())),
            Err(e) => (None, Err(e)),
        };
        let closed = files.finish(&dir, written)?;
        for file in closed {
            file.commit()?;
        }
        report.expect("written")
    };
    Ok(exit_once_written(!report.is_clean(), args.fail_on_damage))
}

/// A table's name as a file name: type names are printable ASCII, and only what is safe in a
/// file name is kept.
fn file_safe(table: &str) -> String {
    table
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Export one file; `named`: its JSON Lines follow a record naming it.
fn export_one(args: &Args, job: &Job, named: bool) -> Result<u8, Error> {
    let data = input::open(&job.path)?;
    let format = detect(&job.path, &data, args.log_format)?;
    if format == Detected::Blackbox && !blackbox::is_blackbox(&data) {
        return Err(Error::not_a_blackbox_log(&job.path, &data));
    }
    if named && args.jsonl {
        let path = serde_json::to_string(&job.path.to_string_lossy())
            .map_err(|e| Error::io(Path::new("<stdout>"), e.into()))?;
        writeln!(io::stdout().lock(), "{{\"type\":\"file\",\"path\":{path}}}")
            .map_err(|e| Error::io(Path::new("<stdout>"), e))?;
    }
    if format == Detected::Dataflash {
        return run_dataflash(args, job, &data);
    }
    if args.raw || args.types.is_some() {
        return Err(Error::Usage(format!(
            "{}: --raw and --types apply to DataFlash logs; a Blackbox export is whole",
            job.path.display()
        )));
    }
    if args.session == Some(0) {
        return Err(Error::Usage(format!(
            "{}: --session counts from 1",
            job.path.display()
        )));
    }
    if !args.jsonl && args.output_dir.as_deref() == Some(Path::new("-")) {
        return Err(Error::Usage(format!(
            "{}: -o -: a Blackbox CSV, Parquet or MCAP export writes several files; name a directory",
            job.path.display()
        )));
    }
    if let Some(option) = args.blackbox_csv_option().filter(|_| !args.csv) {
        return Err(Error::Usage(format!(
            "{}: {option} applies to a CSV export",
            job.path.display()
        )));
    }
    let (report, stats) = if args.jsonl {
        let stdout = io::stdout();
        let (report, mut jsonl, stats) = decode_into(
            args,
            job,
            &data,
            JsonlSink::new(stdout.lock(), args.keep()),
            |jsonl: &mut JsonlSink<_>, session: &Session| jsonl.start_session(session),
        );
        jsonl
            .finish()
            .map_err(|e| Error::io(Path::new("<stdout>"), e))?;
        (report, stats)
    } else {
        let created = args.output_dir.as_deref().is_some_and(|d| !d.exists());
        let dir = csv_destination(args, job)?;
        let (report, done, stats) = if args.mcap {
            let files = Files::new(&dir, &job.stem, "mcap", WRITE_BUFFER);
            let (report, mcap, stats) = decode_into(
                args,
                job,
                &data,
                McapSink::new(|n| files.create(n), |_, f| files.close(f), args.keep()),
                |mcap: &mut McapSink<_, _, _>, session: &Session| mcap.start_session(session),
            );
            let finished = mcap.finish();
            (report, files.finish(&dir, finished)?, stats)
        } else if args.parquet {
            let files = Files::new(&dir, &job.stem, "parquet", PARQUET_BUFFER);
            let sink = ParquetSink::new(|n| files.create(n), |_, f| files.close(f), args.keep())
                .map_err(|e| Error::io(&dir, e))?;
            let (report, parquet, stats) = decode_into(
                args,
                job,
                &data,
                sink,
                |parquet: &mut ParquetSink<_, _, _>, session: &Session| {
                    parquet.start_session(session)
                },
            );
            let finished = parquet.finish();
            (report, files.finish(&dir, finished)?, stats)
        } else {
            let csv = CsvSink::new(
                dir.clone(),
                job.stem.clone(),
                args.keep(),
                args.csv_options(),
            );
            let (report, mut csv, stats) = decode_into(
                args,
                job,
                &data,
                csv,
                |csv: &mut CsvSink, session: &Session| csv.start_session(session, &data),
            );
            csv.finish_session();
            if let Some(e) = csv.error.take() {
                return Err(e);
            }
            (report, std::mem::take(&mut csv.done), stats)
        };
        if no_such_session(args, &job.path, &report).is_none() {
            for file in done {
                file.commit()?;
            }
        } else if created {
            // Nothing to write: the directory made for it goes too (it is empty).
            let _ = std::fs::remove_dir(&dir);
        }
        (report, stats)
    };
    if let Some(e) = no_such_session(args, &job.path, &report) {
        return Err(e);
    }
    if args.stats {
        stats
            .write(&mut io::stderr().lock(), &report.sessions)
            .map_err(|e| Error::io(Path::new("<stderr>"), e))?;
    }
    let damaged = report
        .corrupt_spans
        .iter()
        .any(|s| args.session.is_none_or(|n| s.session == n));
    Ok(exit_once_written(damaged, args.fail_on_damage))
}

/// Export every file named (directories walked), one after the other: a file that cannot be
/// exported is reported and the others are still written (exit 2 at the end).
pub fn run(args: &Args) -> Result<u8, Error> {
    let jobs = jobs(args)?;
    let several = jobs.len() > 1 || args.files.iter().any(|f| f.is_dir());
    if several && args.session.is_some() {
        return Err(Error::Usage(
            "--session N names a session of one file: export one file with it".into(),
        ));
    }
    if several && args.output_dir.as_deref() == Some(Path::new("-")) {
        return Err(Error::Usage(
            "-o -: standard output takes one table of one file".into(),
        ));
    }
    let (mut code, mut skipped) = (EXIT_CLEAN, 0);
    for job in &jobs {
        match export_one(args, job, several) {
            Ok(done) => code = code.max(done),
            Err(Error::NotALog { .. } | Error::UnknownFormat { .. }) if job.found => {
                skipped += 1;
                if !terminal::quiet() {
                    eprintln!("{}: skipped (not a log)", job.path.display());
                }
            }
            Err(e @ Error::BrokenPipe) => return Err(e),
            Err(e) if several => {
                super::report_error(&e);
                code = code.max(e.exit_code());
            }
            Err(e) => return Err(e),
        }
    }
    if skipped == jobs.len() {
        return Err(Error::no_log(&args.files, skipped));
    }
    Ok(code)
}

/// The error of a `--session` the file does not have.
fn no_such_session(args: &Args, path: &Path, report: &FileReport) -> Option<Error> {
    let n = args.session?;
    (n > report.sessions.len()).then(|| {
        Error::Usage(format!(
            "{}: there is no session {n} (the file has {})",
            path.display(),
            report.sessions.len()
        ))
    })
}

/// Passes on what one session decodes to (`--session N`; every session without it).
struct OneSession<S> {
    inner: S,
    only: Option<usize>,
    current: usize,
}

impl<S> OneSession<S> {
    fn new(inner: S, only: Option<usize>) -> Self {
        OneSession {
            inner,
            only,
            current: 0,
        }
    }

    /// Note the start of `session`; returns whether its frames are passed on.
    fn start(&mut self, session: &Session) -> bool {
        self.current = session.bounds.index;
        self.passes()
    }

    fn passes(&self) -> bool {
        self.only.is_none_or(|n| n == self.current)
    }
}

impl<S: Sink> Sink for OneSession<S> {
    fn frame(&mut self, frame: &Frame<'_>) {
        if self.passes() {
            self.inner.frame(frame);
        }
    }
    fn event(&mut self, event: &EventFrame<'_>) {
        if self.passes() {
            self.inner.event(event);
        }
    }
    fn searched(&mut self, offset: usize) {
        self.inner.searched(offset);
    }
    fn started(&mut self, range: std::ops::Range<usize>) {
        self.inner.started(range);
    }
    fn decoded(&mut self, report: &crate::report::SessionReport) {
        if self.passes() {
            self.inner.decoded(report);
        }
    }
}

/// Decode `data`, the input of `job`, into `inner`: the frames and events of the session
/// `--session` names, or of every session, each session started by `start`, with a progress
/// bar; also counts the statistics of the frames exported.
fn decode_into<S: Sink>(
    args: &Args,
    job: &Job,
    data: &input::Input,
    inner: S,
    start: impl Fn(&mut S, &Session),
) -> (FileReport, S, Statistics<()>) {
    let reached = AtomicU64::new(0);
    let bar = input::progress_bar(data.len() as u64);
    let mut sink = input::Reached {
        inner: OneSession::new(Statistics::new(inner, args.keep()), args.session),
        reached: &reached,
    };
    let report = input::bounded(data, std::slice::from_ref(&reached), &bar, || {
        blackbox::decode(
            &input::name(&job.path),
            data,
            |session, sink: &mut input::Reached<OneSession<Statistics<S>>>| {
                if sink.inner.start(session) {
                    sink.inner.inner.start_session(session);
                    start(&mut sink.inner.inner.inner, session);
                }
            },
            &mut sink,
        )
    });
    let (inner, stats) = sink.inner.inner.split();
    (report, inner, stats)
}

/// The files of the session being written: the CSV from its start, the others once the session
/// has something for them (as the C decoder creates them).
struct SessionFiles {
    index: usize,
    csv: AtomicFile,
    gps: Option<AtomicFile>,
    gpx: Option<AtomicFile>,
    event: Option<AtomicFile>,
}

/// Writes the reference C decoder's files for every session.
struct CsvSink {
    dir: PathBuf,
    stem: String,
    reference: ReferenceCsv,
    /// One formatted line, reused.
    line: Vec<u8>,
    /// Main rows not yet written: they go to the file in blocks of [`WRITE_BUFFER`] bytes.
    rows: Vec<u8>,
    session: Option<SessionFiles>,
    /// Complete files, moved into place once the whole log is written.
    done: Vec<ClosedFile>,
    keep: Keep,
    error: Option<Error>,
}

impl CsvSink {
    fn new(dir: PathBuf, stem: String, keep: Keep, options: csv::Options) -> CsvSink {
        CsvSink {
            dir,
            stem,
            keep,
            reference: ReferenceCsv::with_options(options),
            line: Vec::with_capacity(4096),
            rows: Vec::with_capacity(2 * WRITE_BUFFER),
            session: None,
            done: Vec::new(),
            error: None,
        }
    }

    /// Create `<stem>.NN<suffix>` starting with `first`.
    fn create(&self, index: usize, suffix: &str, first: &[u8]) -> Result<AtomicFile, Error> {
        let path = self.dir.join(format!("{}.{index:02}{suffix}", self.stem));
        let mut file = AtomicFile::create(&path)?;
        file.write_all(first).map_err(|e| Error::io(&path, e))?;
        Ok(file)
    }

    /// Write the main rows gathered so far.
    fn write_rows(&mut self) {
        let Some(files) = self.session.as_mut() else {
            return;
        };
        if let Err(e) = files.csv.write_all(&self.rows) {
            let e = Error::io(files.csv.path(), e);
            self.fail(e);
        }
        self.rows.clear();
    }

    /// Close the files of the session being written.
    fn finish_session(&mut self) {
        self.reference.finish_session(&mut self.rows);
        self.write_rows();
        let Some(files) = self.session.take() else {
            return;
        };
        let mut gpx = files.gpx;
        if let Some(file) = gpx.as_mut()
            && let Err(e) = file.write_all(csv::GPX_TRAILER.as_bytes())
        {
            self.fail(Error::io(file.path(), e));
            return;
        }
        for file in [Some(files.csv), files.gps, gpx, files.event]
            .into_iter()
            .flatten()
        {
            match file.close() {
                Ok(closed) => self.done.push(closed),
                Err(e) => return self.fail(e),
            }
        }
    }

    fn fail(&mut self, error: Error) {
        if self.error.is_none() {
            self.error = Some(error);
        }
    }

    fn start_session(&mut self, session: &Session, data: &[u8]) {
        self.finish_session();
        if self.error.is_some() {
            return;
        }
        let index = session.bounds.index;
        self.line.clear();
        if self.reference.start_session(session, data) {
            self.reference.write_header(&mut self.line);
        }
        match self.create(index, ".csv", &self.line) {
            Ok(csv) => {
                self.session = Some(SessionFiles {
                    index,
                    csv,
                    gps: None,
                    gpx: None,
                    event: None,
                })
            }
            Err(e) => self.fail(e),
        }
    }

    /// Append the formatted line to a session file, creating it with `first` if needed.
    fn append(
        &mut self,
        pick: fn(&mut SessionFiles) -> &mut Option<AtomicFile>,
        suffix: &str,
        first: &[u8],
    ) {
        let Some(files) = self.session.as_mut() else {
            return;
        };
        let index = files.index;
        if pick(files).is_none() {
            match self.create(index, suffix, first) {
                Ok(file) => *pick(self.session.as_mut().expect("a session")) = Some(file),
                Err(e) => return self.fail(e),
            }
        }
        let file = pick(self.session.as_mut().expect("a session"))
            .as_mut()
            .expect("created");
        if let Err(e) = file.write_all(&self.line) {
            let e = Error::io(file.path(), e);
            self.fail(e);
        }
    }
}

impl Sink for CsvSink {
    fn frame(&mut self, frame: &Frame<'_>) {
        if self.error.is_some() || self.session.is_none() || !self.keep.keeps(frame.trust) {
            return;
        }
        match frame.kind {
            FrameKind::S => self.reference.slow_frame(&mut self.rows, frame),
            FrameKind::I | FrameKind::P => self.reference.write_main_row(&mut self.rows, frame),
            FrameKind::G => {
                let merged = self.reference.merges_gps();
                if merged {
                    self.reference.merge_gps_frame(&mut self.rows, frame);
                }
                self.line.clear();
                if self.reference.write_gpx_point(&mut self.line, frame) {
                    let preamble = self.reference.gpx_preamble();
                    self.append(|f| &mut f.gpx, ".gps.gpx", preamble.as_bytes());
                }
                if !merged {
                    let mut header = Vec::new();
                    if self.session.as_ref().is_some_and(|f| f.gps.is_none()) {
                        self.reference.write_gps_header(&mut header);
                    }
                    self.line.clear();
                    self.reference.write_gps_row(&mut self.line, frame);
                    self.append(|f| &mut f.gps, ".gps.csv", &header);
                }
            }
            FrameKind::H => self.reference.home_frame(frame),
            FrameKind::E => {}
        }
        if self.rows.len() >= WRITE_BUFFER {
            self.write_rows();
        }
    }

    fn event(&mut self, event: &EventFrame<'_>) {
        if self.error.is_some() || self.session.is_none() {
            return;
        }
        self.line.clear();
        if self.reference.write_event(&mut self.line, event.event) {
            self.append(|f| &mut f.event, ".event", b"");
        }
    }
}
