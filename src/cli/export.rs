//! `bbcheck export`: the accepted frames as JSON Lines on standard output, or as one CSV file per
//! session in the layout of the reference C decoder.

use super::output::{AtomicFile, ClosedFile, WRITE_BUFFER};
use super::{Detected, Error, LogFormat, detect, exit_once_written, input};
use crate::blackbox::export::csv::{self, ReferenceCsv};
use crate::blackbox::export::jsonl::JsonlSink;
use crate::blackbox::frame::FrameKind;
use crate::blackbox::sink::{EventFrame, Frame, Sink};
use crate::blackbox::{self, Session};
use crate::report::{FileReport, Keep};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("format").required(true).args(["jsonl", "csv"])))]
pub struct Args {
    /// Log file to export.
    file: PathBuf,
    /// JSON Lines on standard output: a session record, then one record per frame and event.
    #[arg(long)]
    jsonl: bool,
    /// CSV files. Blackbox: per session NN (from 01) the files blackbox_decode writes with its
    /// default options: `<stem>.NN.csv` (main frames with units, energyCumulative and the
    /// slow-frame fields, flags as names), `<stem>.NN.gps.csv` and `<stem>.NN.gps.gpx` when the
    /// session has GPS frames, `<stem>.NN.event` when it has events; Betaflight's or INAV's
    /// formatting by firmware. DataFlash: one per message type, `<stem>.<NAME>.csv` (units in the
    /// headings).
    #[arg(long)]
    csv: bool,
    /// Directory for CSV files, created if missing (default: the input's directory).
    #[arg(long, short = 'o')]
    output_dir: Option<PathBuf>,
    /// Read the file as this format instead of deciding from its content.
    #[arg(long = "format", id = "log_format", value_enum, default_value_t)]
    log_format: LogFormat,
    /// Leave out suspect frames and messages (read in step, values in doubt). Without it they
    /// are exported, JSON Lines records marking them `"trust":"suspect"`.
    #[arg(long)]
    drop_suspect: bool,
    /// Exit 1 when the input is damaged (the output is written all the same); without it the
    /// command exits 0 once its output is written.
    #[arg(long)]
    fail_on_damage: bool,
    /// DataFlash CSV: write the values as stored (`Roll` 755), not scaled as pymavlink and
    /// mavlogdump show them (7.55).
    #[arg(long)]
    raw: bool,
    /// DataFlash: export only these message types (comma-separated names, e.g. `ATT,GPS`).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    types: Option<Vec<String>>,
    /// Blackbox: export only this session (1-based), as `blackbox_decode --index N` does (its
    /// CSV's current meter starts from nothing).
    #[arg(long, value_name = "N")]
    session: Option<usize>,
}

impl Args {
    /// Which frames to export.
    fn keep(&self) -> Keep {
        Keep::dropping_suspect(self.drop_suspect)
    }
}

/// Where CSV files go (an `-o` directory is created when missing), and the stem their names start
/// with.
fn csv_destination(args: &Args) -> Result<(PathBuf, String), Error> {
    let dir = match &args.output_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            dir.clone()
        }
        None => args
            .file
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    };
    // Standard input has no name: its files are `stdin.*`, as its --html page is.
    let stem = match args.file.file_stem() {
        _ if args.file == Path::new("-") => "stdin".to_owned(),
        Some(stem) => stem.to_string_lossy().into_owned(),
        None => "log".to_owned(),
    };
    Ok((dir, stem))
}

/// Export a DataFlash log (its mapped pages released as the scans go by). Each of its two scans
/// (formats, then messages) moves the progress bar across the file.
fn run_dataflash(args: &Args, input: &input::Input) -> Result<u8, Error> {
    let reached = AtomicU64::new(0);
    let bar = input::progress_bar(input.len() as u64);
    input::bounded(input, std::slice::from_ref(&reached), &bar, || {
        export_dataflash(args, input, &reached)
    })
}

fn export_dataflash(args: &Args, data: &[u8], reached: &AtomicU64) -> Result<u8, Error> {
    if args.session.is_some() {
        return Err(Error::Usage(format!(
            "{}: --session applies to Blackbox logs; a DataFlash log is exported whole",
            args.file.display()
        )));
    }
    let name = input::name(&args.file);
    let selection = crate::dataflash::export::csv::Selection {
        keep: args.keep(),
        values: if args.raw {
            crate::dataflash::export::csv::Values::Stored
        } else {
            crate::dataflash::export::csv::Values::Scaled
        },
        types: args.types.clone(),
    };
    let to_stdout = args.output_dir.as_deref() == Some(Path::new("-"));
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
    } else if to_stdout {
        // One table on standard output.
        if args.types.as_ref().is_none_or(|t| t.len() != 1) {
            return Err(Error::Usage(
                "-o -: standard output takes one table; name its type with --types NAME".into(),
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
        let (dir, stem) = csv_destination(args)?;
        // The first error creating a file, with its path.
        let mut failed: Option<Error> = None;
        let result = crate::dataflash::export::csv::write_csv(
            &name,
            data,
            selection,
            |table| {
                // Type names are printable ASCII; keep only what is safe in a file name.
                let table: String = table
                    .chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() || c == '.' {
                            c
                        } else {
                            '_'
                        }
                    })
                    .collect();
                let path = dir.join(format!("{stem}.{table}.csv"));
                AtomicFile::create(&path).map_err(|e| {
                    failed = Some(e);
                    io::Error::other("cannot create a CSV file")
                })
            },
            reached,
        );
        let (report, files) = match (result, failed) {
            (_, Some(e)) => return Err(e),
            (Err(e), None) => return Err(Error::io(&dir, e)),
            (Ok(done), None) => done,
        };
        for file in files {
            file.commit()?;
        }
        report
    };
    Ok(exit_once_written(!report.is_clean(), args.fail_on_damage))
}

pub fn run(args: &Args) -> Result<u8, Error> {
    let data = input::open(&args.file)?;
    if detect(&args.file, &data, args.log_format)? == Detected::Dataflash {
        return run_dataflash(args, &data);
    }
    if !blackbox::is_blackbox(&data) {
        return Err(Error::not_a_blackbox_log(&args.file, &data));
    }
    if args.raw || args.types.is_some() {
        return Err(Error::Usage(format!(
            "{}: --raw and --types apply to DataFlash logs; a Blackbox export is whole",
            args.file.display()
        )));
    }
    if args.session == Some(0) {
        return Err(Error::Usage(format!(
            "{}: --session counts from 1",
            args.file.display()
        )));
    }
    if !args.jsonl && args.output_dir.as_deref() == Some(Path::new("-")) {
        return Err(Error::Usage(format!(
            "{}: -o -: a Blackbox CSV export writes several files; name a directory",
            args.file.display()
        )));
    }
    let name = input::name(&args.file);
    let reached = AtomicU64::new(0);
    let bar = input::progress_bar(data.len() as u64);
    let report = if args.jsonl {
        let stdout = io::stdout();
        input::bounded(&data, std::slice::from_ref(&reached), &bar, || {
            write_jsonl_of(
                &name,
                &data,
                args.keep(),
                args.session,
                stdout.lock(),
                &reached,
            )
        })
        .map_err(|e| Error::io(Path::new("<stdout>"), e))?
    } else {
        let created = args.output_dir.as_deref().is_some_and(|d| !d.exists());
        let (dir, stem) = csv_destination(args)?;
        let mut sink = input::Reached {
            inner: OneSession::new(CsvSink::new(dir.clone(), stem, args.keep()), args.session),
            reached: &reached,
        };
        let report = input::bounded(&data, std::slice::from_ref(&reached), &bar, || {
            blackbox::decode(
                &name,
                &data,
                |session, sink: &mut input::Reached<OneSession<CsvSink>>| {
                    if sink.inner.start(session) {
                        sink.inner.inner.start_session(session, &data);
                    }
                },
                &mut sink,
            )
        });
        let csv = &mut sink.inner.inner;
        csv.finish_session();
        if let Some(e) = csv.error.take() {
            return Err(e);
        }
        if no_such_session(args, &report).is_none() {
            for file in std::mem::take(&mut csv.done) {
                file.commit()?;
            }
        } else if created {
            // Nothing to write: the directory made for it goes too (it is empty).
            let _ = std::fs::remove_dir(&dir);
        }
        report
    };
    if let Some(e) = no_such_session(args, &report) {
        return Err(e);
    }
    let damaged = report
        .corrupt_spans
        .iter()
        .any(|s| args.session.is_none_or(|n| s.session == n));
    Ok(exit_once_written(damaged, args.fail_on_damage))
}

/// The error of a `--session` the file does not have.
fn no_such_session(args: &Args, report: &FileReport) -> Option<Error> {
    let n = args.session?;
    (n > report.sessions.len()).then(|| {
        Error::Usage(format!(
            "{}: there is no session {n} (the file has {})",
            args.file.display(),
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
}

/// [`crate::blackbox::export::jsonl::write_jsonl`] of session `only` (1-based), or of every session, noting in `reached`
/// how far decoding has got.
fn write_jsonl_of(
    name: &str,
    data: &[u8],
    keep: Keep,
    only: Option<usize>,
    out: impl Write,
    reached: &AtomicU64,
) -> io::Result<FileReport> {
    let mut sink = input::Reached {
        inner: OneSession::new(JsonlSink::new(out, keep), only),
        reached,
    };
    let report = blackbox::decode(
        name,
        data,
        |session, sink: &mut input::Reached<OneSession<JsonlSink<_>>>| {
            if sink.inner.start(session) {
                sink.inner.inner.start_session(session);
            }
        },
        &mut sink,
    );
    sink.inner.inner.finish().map(|()| report)
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
    fn new(dir: PathBuf, stem: String, keep: Keep) -> CsvSink {
        CsvSink {
            dir,
            stem,
            keep,
            reference: ReferenceCsv::new(),
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
            FrameKind::S => self.reference.slow_frame(frame),
            FrameKind::I | FrameKind::P => {
                self.reference.write_main_row(&mut self.rows, frame);
                if self.rows.len() >= WRITE_BUFFER {
                    self.write_rows();
                }
            }
            FrameKind::G => {
                self.line.clear();
                if self.reference.write_gpx_point(&mut self.line, frame) {
                    let preamble = self.reference.gpx_preamble();
                    self.append(|f| &mut f.gpx, ".gps.gpx", preamble.as_bytes());
                }
                let mut header = Vec::new();
                if self.session.as_ref().is_some_and(|f| f.gps.is_none()) {
                    self.reference.write_gps_header(&mut header);
                }
                self.line.clear();
                self.reference.write_gps_row(&mut self.line, frame);
                self.append(|f| &mut f.gps, ".gps.csv", &header);
            }
            FrameKind::H => self.reference.home_frame(frame),
            FrameKind::E => {}
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
