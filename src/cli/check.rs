//! `bbcheck check`: a summary per file and session, and every corrupt span, as text or JSON.

use super::checked::{Checked, verdict_tally};
use super::hexdump::write_span_bytes;
use super::timeline::Timeline;
use super::{
    Detected, EXIT_CLEAN, EXIT_DAMAGED, EXIT_ERROR, Error, LogFormat, detect, html, input,
    terminal, terminal::Paint,
};
use crate::blackbox::{self, sink::Discard};
use crate::dataflash;
use crate::report::{
    CorruptSpan, FileReport, RegionKind, Rule, SessionReport, SuspectSpan, seconds,
};
use indicatif::ProgressBar;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Log files to check (`-` reads standard input); directories are searched recursively, and
    /// files in them that hold no log are skipped. Files are checked in parallel on all cores.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print one JSON document per file instead of text.
    #[arg(long)]
    json: bool,
    /// Show the bytes around each corrupt span (text output).
    #[arg(long, conflicts_with = "json")]
    hexdump: bool,
    /// Read the files as this format instead of deciding from their content.
    #[arg(long, value_enum, default_value_t)]
    format: LogFormat,
    /// Also write a self-contained HTML page per file: timelines, corrupt spans and their bytes.
    /// With one file, PATH is the page (or, when PATH is an existing directory, the page goes in
    /// it); with several files or a directory, PATH is a directory (created if missing) holding
    /// `<file name>.html` per file, `<file name>.2.html` for a later file of the same name, and
    /// `index.html`, which lists the files and links their pages.
    #[arg(long, value_name = "PATH")]
    html: Option<PathBuf>,
    /// Count suspect spans (frames read in step whose values a value rule doubts) as damage:
    /// exit 1 when a file has any.
    #[arg(long)]
    strict: bool,
}

/// Check `data`, the bytes of `path`, read as `format`; a Blackbox log's sessions are shared among
/// as many threads as `reached` has offsets (each noting where its thread has reached, and in
/// `done`, how many bytes it has decoded).
pub fn check_data(
    path: &Path,
    data: &[u8],
    format: LogFormat,
    reached: &[AtomicU64],
    done: &[AtomicU64],
    timeline: Option<&mut Timeline>,
) -> Result<Checked, Error> {
    let name = input::name(path);
    match detect(path, data, format)? {
        Detected::Dataflash => {
            let mut noting = dataflash::reader::Noting(&reached[0]);
            let report = match timeline {
                Some(timeline) => {
                    let mut sink = input::Progress::new((timeline, &mut noting), &done[0]);
                    dataflash::decode(&name, data, &mut sink)
                }
                None => dataflash::decode(&name, data, &mut input::Progress::new(noting, &done[0])),
            };
            Ok(Checked::Dataflash(Box::new(report)))
        }
        Detected::Blackbox if !blackbox::is_blackbox(data) => {
            Err(Error::not_a_blackbox_log(path, data))
        }
        // A timeline follows the sessions in file order, on one thread.
        Detected::Blackbox => Ok(Checked::Blackbox(match timeline {
            Some(timeline) => {
                let reached = input::Reached {
                    inner: timeline,
                    reached: &reached[0],
                };
                let mut sink = input::Progress::new(reached, &done[0]);
                blackbox::decode(
                    &name,
                    data,
                    |session, sink: &mut input::Progress<'_, input::Reached<'_, &mut Timeline>>| {
                        sink.inner.inner.blackbox_session(session)
                    },
                    &mut sink,
                )
            }
            None => blackbox::decode_in_parallel(&name, data, reached.len(), |worker| {
                let reached = input::Reached {
                    inner: Discard,
                    reached: &reached[worker],
                };
                input::Progress::new(reached, &done[worker])
            }),
        })),
    }
}

/// A file to check; one found by walking a directory is skipped, not an error, when it holds no
/// log.
struct Job {
    path: PathBuf,
    found: bool,
    /// Bytes, for the progress bar (0 when it cannot be told).
    size: u64,
    /// Where its HTML page goes (`--html`).
    page: Option<PathBuf>,
}

impl Job {
    fn new(path: PathBuf, found: bool) -> Job {
        let size = std::fs::metadata(&path).map_or(0, |m| m.len());
        Job {
            path,
            found,
            size,
            page: None,
        }
    }
}

/// What checking one file came to.
enum Outcome {
    Checked {
        /// The text or JSON written for the file.
        text: Vec<u8>,
        row: Row,
    },
    /// A file found in a directory that holds no log.
    Skipped(PathBuf),
    Failed(Error),
}

/// A file's line in the batch summary.
struct Row {
    path: String,
    /// Its HTML page (`--html`).
    page: Option<PathBuf>,
    format: &'static str,
    size: u64,
    sessions: usize,
    spans: usize,
    /// `clean`, `suspect` or `damaged`.
    verdict: &'static str,
    /// Whether the file leaves the exit code at 0.
    clean: bool,
}

/// The files to check: the paths given, with directories walked recursively in name order.
fn jobs(paths: &[PathBuf]) -> Result<Vec<Job>, Error> {
    Ok(input::walk(paths)?
        .into_iter()
        .map(|(path, found)| Job::new(path, found))
        .collect())
}

/// Open and check the file at `path`, read as `format`; `reached` and `done` hold an offset and a
/// byte count per thread its sessions may share. With `page`, also write its HTML page there.
fn check_file(
    path: &Path,
    format: LogFormat,
    page: Option<&Path>,
    reached: &[AtomicU64],
    done: &[AtomicU64],
) -> Result<(input::Input, Checked), Error> {
    let data = input::open(path)?;
    let mut timeline = page.map(|_| Timeline::default());
    let mut report = input::bounded(&data, reached, &ProgressBar::hidden(), || {
        check_data(path, &data, format, reached, done, timeline.as_mut())
    })?;
    report.file_mut().text_mode_copy = data.text_mode_copy();
    report.file_mut().periodic_insertions = data.insertions().cloned().map(Box::new);
    if let (Some(page), Some(timeline)) = (page, &timeline) {
        html::write(page, &report, timeline, &data)?;
    }
    Ok((data, report))
}

/// The report `check --json` prints for the file at `path`, read as `format` (without the line
/// end), its sessions shared among the cores.
pub fn json_report(path: &Path, format: LogFormat) -> Result<String, Error> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let counters = || -> Vec<AtomicU64> { (0..cores).map(|_| AtomicU64::new(0)).collect() };
    let (_, report) = check_file(path, format, None, &counters(), &counters())?;
    Ok(to_json(&report))
}

/// A report as JSON.
fn to_json(report: &Checked) -> String {
    match report {
        Checked::Blackbox(report) => serde_json::to_string(report),
        Checked::Dataflash(report) => serde_json::to_string(report),
    }
    .expect("a report serialises")
}

/// Check one file; `reached` and `done` hold an offset and a byte count per thread its sessions
/// may share.
fn check_one(job: &Job, args: &Args, reached: &[AtomicU64], done: &[AtomicU64]) -> Outcome {
    let checked = check_file(&job.path, args.format, job.page.as_deref(), reached, done);
    let (data, report) = match checked {
        Ok(checked) => checked,
        Err(Error::NotALog { .. } | Error::UnknownFormat { .. }) if job.found => {
            return Outcome::Skipped(job.path.clone());
        }
        Err(e) => return Outcome::Failed(e),
    };
    let mut text = Vec::new();
    let hexdump = args.hexdump.then_some(&data[..]);
    let paint = Paint::stdout();
    let written = match (&report, args.json) {
        (report, true) => writeln!(text, "{}", to_json(report)),
        // Quiet: only the corrupt spans.
        (Checked::Blackbox(report), false) if terminal::quiet() => {
            write_spans(&mut text, report, hexdump, paint)
        }
        (Checked::Dataflash(report), false) if terminal::quiet() => {
            write_spans(&mut text, &report.file, hexdump, paint)
        }
        (Checked::Blackbox(report), false) => write_human(&mut text, report, hexdump, paint),
        (Checked::Dataflash(report), false) => dataflash::report::write_summary(&mut text, report)
            .and_then(|()| write_text_mode_copy(&mut text, &report.file))
            .and_then(|()| write_spans(&mut text, &report.file, hexdump, paint))
            .and_then(|()| write_total_lost(&mut text, &report.file)),
    };
    written.expect("writing to memory cannot fail");
    let file = match &report {
        Checked::Blackbox(report) => report,
        Checked::Dataflash(report) => &report.file,
    };
    Outcome::Checked {
        text,
        row: Row {
            path: file.path.clone(),
            page: job.page.clone(),
            format: file.format,
            size: file.size,
            sessions: file.sessions.len(),
            spans: file.corrupt_spans.len(),
            verdict: file.verdict,
            clean: report.is_clean() && (!args.strict || file.suspect_spans.is_empty()),
        },
    }
}

/// Check every file, on all cores, printing each file's report in the order given; several files
/// end with a summary table.
pub fn run(args: &Args) -> Result<u8, Error> {
    let mut jobs = jobs(&args.files)?;
    if jobs.is_empty() {
        return Err(Error::no_log(&args.files, 0));
    }
    let mut index = None;
    if let Some(target) = &args.html {
        let inputs: Vec<&Path> = jobs.iter().map(|j| j.path.as_path()).collect();
        let pages = html::page_paths(target, &args.files, &inputs)?;
        for (job, page) in jobs.iter_mut().zip(pages.pages) {
            job.page = Some(page);
        }
        index = pages.index;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = cores.clamp(1, jobs.len());
    // Cores left over when there are fewer files than cores go to the sessions of each file.
    let per_file = (cores / workers).max(1);
    let counters = || -> Vec<Vec<AtomicU64>> {
        (0..workers)
            .map(|_| (0..per_file).map(|_| AtomicU64::new(0)).collect())
            .collect()
    };
    let (reached, decoded) = (counters(), counters());
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let total: u64 = jobs.iter().map(|j| j.size).sum();
    let bar = input::progress_bar(total);
    let (tx, rx) = mpsc::channel();
    let mut printer = Printer {
        out: io::stdout().lock(),
        code: EXIT_CLEAN,
        rows: Vec::new(),
        skipped: 0,
        failed: 0,
        headless: 0,
    };
    let printed = std::thread::scope(|scope| {
        for (reached, decoded) in reached.iter().zip(&decoded) {
            let (tx, next, stop, jobs) = (tx.clone(), &next, &stop, &jobs);
            scope.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = jobs.get(i) else { break };
                    let outcome = check_one(job, args, reached, decoded);
                    for r in reached.iter().chain(decoded) {
                        r.store(0, Ordering::Relaxed);
                    }
                    if tx.send((i, job.size, outcome)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut pending = BTreeMap::new();
        let (mut next_out, mut done) = (0, 0u64);
        loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok((i, size, outcome)) => {
                    done += size;
                    pending.insert(i, outcome);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            let in_flight: u64 = decoded
                .iter()
                .flatten()
                .map(|r| r.load(Ordering::Relaxed))
                .sum();
            bar.set_position((done + in_flight).min(total));
            while let Some(outcome) = pending.remove(&next_out) {
                next_out += 1;
                if let Err(e) = bar.suspend(|| printer.print(outcome)) {
                    stop.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
        Ok(())
    });
    bar.finish_and_clear();
    printed?;
    if let Some(index) = &index {
        let listed: Vec<html::Listed<'_>> = printer
            .rows
            .iter()
            .filter_map(|r| {
                Some(html::Listed {
                    path: &r.path,
                    page: r.page.as_deref()?,
                    format: r.format,
                    size: r.size,
                    sessions: r.sessions,
                    spans: r.spans,
                    verdict: r.verdict,
                })
            })
            .collect();
        html::write_index(index, &listed, printer.skipped, printer.failed)?;
    }
    if printer.rows.is_empty() && printer.failed == 0 && printer.headless == 0 {
        return Err(Error::no_log(&args.files, printer.skipped));
    }
    // A table whenever there is more than one file or a directory was searched.
    if (jobs.len() > 1 || jobs.iter().any(|j| j.found)) && !args.json && !terminal::quiet() {
        printer
            .summary()
            .map_err(|e| Error::io(Path::new("<stdout>"), e))?;
    }
    Ok(printer.code)
}

/// Writes each file's report as it comes, keeping what the summary and exit code need.
struct Printer<W: Write> {
    out: W,
    code: u8,
    rows: Vec<Row>,
    skipped: usize,
    failed: usize,
    /// Files of frame data whose header is lost.
    headless: usize,
}

impl<W: Write> Printer<W> {
    fn print(&mut self, outcome: Outcome) -> Result<(), Error> {
        match outcome {
            Outcome::Checked { text, row } => {
                if !row.clean && self.code == EXIT_CLEAN {
                    self.code = EXIT_DAMAGED;
                }
                self.rows.push(row);
                self.out
                    .write_all(&text)
                    .map_err(|e| Error::io(Path::new("<stdout>"), e))
            }
            Outcome::Skipped(path) => {
                self.skipped += 1;
                if !terminal::quiet() {
                    eprintln!("{}: skipped (not a log)", path.display());
                }
                Ok(())
            }
            Outcome::Failed(Error::BrokenPipe) => Err(Error::BrokenPipe),
            // Frame data whose header is lost is a damaged log, said on standard error.
            Outcome::Failed(e @ Error::Headless { .. }) => {
                super::report_error(&e);
                self.headless += 1;
                self.code = self.code.max(EXIT_DAMAGED);
                Ok(())
            }
            Outcome::Failed(e) => {
                super::report_error(&e);
                self.failed += 1;
                self.code = EXIT_ERROR;
                Ok(())
            }
        }
    }

    /// One line per checked file, then the totals.
    fn summary(&mut self) -> io::Result<()> {
        let out = &mut self.out;
        let width = self
            .rows
            .iter()
            .map(|r| r.path.len())
            .max()
            .unwrap_or(4)
            .max(4);
        writeln!(out)?;
        writeln!(
            out,
            "{:width$}  {:19}  {:>12}  {:>8}  {:>5}  verdict",
            "file", "format", "bytes", "sessions", "spans"
        )?;
        let paint = Paint::stdout();
        for r in &self.rows {
            let verdict = verdict(r.verdict, paint);
            writeln!(
                out,
                "{:width$}  {:19}  {:>12}  {:>8}  {:>5}  {verdict}",
                r.path, r.format, r.size, r.sessions, r.spans
            )?;
        }
        write!(
            out,
            "{} checked: {}; {} skipped (not a log); {} unreadable",
            self.rows.len(),
            verdict_tally(self.rows.iter().map(|r| r.verdict)),
            self.skipped,
            self.failed
        )?;
        match self.headless {
            0 => writeln!(out),
            n => writeln!(out, "; {n} without their header (salvage --header-from)"),
        }
    }
}

fn write_session(out: &mut impl Write, s: &SessionReport, paint: Paint) -> io::Result<()> {
    let firmware = s.firmware_revision.as_deref().unwrap_or("unknown firmware");
    write!(
        out,
        "  session {} [{}..{}): {firmware}",
        s.index, s.start, s.end
    )?;
    if let Some(craft) = &s.craft_name {
        write!(out, ", craft \"{craft}\"")?;
    }
    writeln!(out)?;
    if let Some(from) = &s.header_from {
        writeln!(out, "    header from {from}")?;
    }
    let f = &s.frames;
    write!(
        out,
        "    frames: I {} P {} S {} G {} H {} E {}",
        f.i, f.p, f.s, f.g, f.h, f.e
    )?;
    if let Some(d) = s.duration_us {
        write!(out, "; duration {}", seconds(d))?;
    }
    if let Some(l) = s.loop_time_us {
        write!(out, "; loop {l:.1} µs")?;
    }
    writeln!(out)?;
    if !s.events.is_empty() {
        let events: Vec<String> = s.events.iter().map(|(n, c)| format!("{n} ×{c}")).collect();
        writeln!(out, "    events: {}", events.join(", "))?;
    }
    let cut = s.regions.iter().find(|r| r.kind == RegionKind::CutShort);
    let ending = match (s.log_end, cut) {
        (true, _) => "ends with a log-end event".to_owned(),
        (false, Some(cut)) => format!(
            "no log-end event: stops inside its last frame ({} bytes)",
            cut.end - cut.start
        ),
        (false, None) => "no log-end event (recording cut short)".to_owned(),
    };
    writeln!(out, "    {}; {ending}", verdict(s.verdict(), paint))?;
    for problem in &s.header_problems {
        writeln!(out, "    header: {problem}")?;
    }
    Ok(())
}

/// A verdict (`clean`, `suspect` or `damaged`), coloured.
fn verdict(verdict: &str, paint: Paint) -> String {
    match verdict {
        "clean" => paint.good(verdict),
        "suspect" => paint.doubt(verdict),
        _ => paint.bad(verdict),
    }
}

fn write_human(
    out: &mut impl Write,
    report: &FileReport,
    hexdump: Option<&[u8]>,
    paint: Paint,
) -> io::Result<()> {
    writeln!(
        out,
        "{}: {} bytes, {} session(s): {}",
        paint.strong(&report.path),
        report.size,
        report.sessions.len(),
        verdict(report.verdict, paint)
    )?;
    for r in report
        .regions
        .iter()
        .filter(|r| r.kind == RegionKind::HeaderLost)
    {
        writeln!(
            out,
            "  [{}..{}): {}: Blackbox frame data whose header is lost with the start of the log \
             ({} bytes); `bbcheck salvage` reads it with a header from bbcheck's library when one \
             fits",
            r.start,
            r.end,
            paint.bad("header lost"),
            r.end - r.start
        )?;
    }
    for session in &report.sessions {
        write_session(out, session, paint)?;
    }
    write_text_mode_copy(out, report)?;
    write_spans(out, report, hexdump, paint)?;
    write_total_lost(out, report)
}

/// What the corrupt spans took in all: main frames, and flight time against the time logged.
fn write_total_lost(out: &mut impl Write, report: &FileReport) -> io::Result<()> {
    if report.corrupt_spans.is_empty() {
        return Ok(());
    }
    let frames: u64 = report.corrupt_spans.iter().map(|s| s.frames_lost).sum();
    // Spans split by trusted frames between them can share their stretch of flight: count it once
    // (per session: each has its own clock).
    let mut stretches: Vec<(usize, u64, u64)> = report
        .corrupt_spans
        .iter()
        .filter_map(|s| Some((s.session, s.time_start_us?, s.time_end_us?)))
        .collect();
    stretches.sort_unstable();
    let (mut lost, mut reached) = (0u64, (0usize, 0u64));
    for (session, a, b) in stretches {
        let from = if reached.0 == session {
            a.max(reached.1)
        } else {
            a
        };
        lost += b.saturating_sub(from);
        reached = (
            session,
            if reached.0 == session {
                reached.1.max(b)
            } else {
                b
            },
        );
    }
    let logged: u64 = report.sessions.iter().filter_map(|s| s.duration_us).sum();
    write!(out, "  lost in all:")?;
    if frames > 0 {
        write!(out, " {frames} main frame{},", plural(frames))?;
    }
    write!(out, " {} of flight", seconds(lost))?;
    if logged > 0 {
        let share = 100.0 * lost as f64 / logged as f64;
        write!(out, " ({share:.1} % of the {} logged)", seconds(logged))?;
    }
    writeln!(out)
}

/// One line per corrupt or suspect span, in file order, each corrupt one followed by its bytes
/// when `hexdump` holds the file.
fn write_spans(
    out: &mut impl Write,
    report: &FileReport,
    hexdump: Option<&[u8]>,
    paint: Paint,
) -> io::Result<()> {
    let mut corrupt = report.corrupt_spans.iter().peekable();
    let mut suspect = report.suspect_spans.iter().peekable();
    loop {
        match (corrupt.peek(), suspect.peek()) {
            (Some(c), Some(s)) if s.start < c.start => {
                write_suspect_span(out, report, s, paint)?;
                suspect.next();
            }
            (Some(c), _) => {
                write_corrupt_span(out, report, c, hexdump, paint)?;
                corrupt.next();
            }
            (None, Some(s)) => {
                write_suspect_span(out, report, s, paint)?;
                suspect.next();
            }
            (None, None) => return Ok(()),
        }
    }
}

/// How a file read restored was changed: copied in text mode, blocks inserted at a stride.
fn write_text_mode_copy(out: &mut impl Write, report: &FileReport) -> io::Result<()> {
    if let Some(copy) = report.text_mode_copy {
        writeln!(
            out,
            "  a text-mode copy ({} bytes): every line feed had become CR LF; read as it was before \
             the copy, and offsets are that log's",
            copy.input_size
        )?;
    }
    if let Some(blocks) = &report.periodic_overwrites {
        writeln!(
            out,
            "  {} {}-byte blocks ({}) written over the log every {} bytes from offset {}: the \
             frames that hold one, and those predicted from them, are in doubt",
            blocks.count,
            blocks.length,
            block_bytes(blocks),
            blocks.stride,
            blocks.first,
        )?;
    }
    if let Some(blocks) = &report.periodic_insertions {
        writeln!(
            out,
            "  {} {}-byte insertions ({}) every {} bytes from offset {} of the {}-byte file: \
             removed; offsets are the log's without them",
            blocks.count,
            blocks.length,
            block_bytes(blocks),
            blocks.stride,
            blocks.first,
            blocks.input_size
        )?;
    }
    Ok(())
}

/// A periodic block's bytes as a line shows them.
fn block_bytes(blocks: &crate::periodic::Blocks) -> String {
    blocks
        .bytes
        .as_deref()
        .map_or_else(|| "bytes differing".to_string(), shortened)
}

/// Hex bytes as a line shows them: the first 16, then an ellipsis.
fn shortened(hex: &str) -> String {
    match hex.get(..32) {
        Some(head) if hex.len() > 32 => format!("{head}…"),
        _ => hex.to_owned(),
    }
}

/// `s` unless `n` is 1.
fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn write_corrupt_span(
    out: &mut impl Write,
    report: &FileReport,
    span: &CorruptSpan,
    hexdump: Option<&[u8]>,
    paint: Paint,
) -> io::Result<()> {
    let bytes = span.end - span.start;
    write!(
        out,
        "{}: {} [{}..{}) {bytes} byte{}, session {}: {}",
        paint.strong(&format!("{}:{}", report.path, span.start)),
        paint.bad("damaged"),
        span.start,
        span.end,
        plural(bytes),
        span.session,
        span.reason.as_str()
    )?;
    write!(out, " ({})", span.reason.in_words())?;
    if span.frames_lost > 0 {
        let lost = span.frames_lost;
        write!(out, "; {lost} main frame{} lost", plural(lost))?;
    }
    if let (Some(a), Some(b)) = (span.time_start_us, span.time_end_us) {
        write!(out, "; flight time {} – {}", seconds(a), seconds(b))?;
        // As a log viewer shows it: from the session's first frame.
        let start = report
            .sessions
            .get(span.session.wrapping_sub(1))
            .and_then(|s| s.first_time_us);
        if let Some(t0) = start.filter(|&t0| t0 <= a) {
            write!(
                out,
                " ({} – {} into the log)",
                seconds(a - t0),
                seconds(b.saturating_sub(t0))
            )?;
        }
    }
    writeln!(out)?;
    if let Some(data) = hexdump {
        write_span_bytes(out, data, span.start as usize, span.end as usize)?;
    }
    Ok(())
}

fn write_suspect_span(
    out: &mut impl Write,
    report: &FileReport,
    span: &SuspectSpan,
    paint: Paint,
) -> io::Result<()> {
    let (path, e) = (&report.path, &span.evidence);
    let dataflash = report.format == dataflash::report::FORMAT_NAME;
    write!(
        out,
        "{}: {} [{}..{}), session {}: {}",
        paint.strong(&format!("{path}:{}", span.start)),
        paint.doubt("suspect"),
        span.start,
        span.end,
        span.session,
        e.rule.as_str()
    )?;
    match (&e.field, e.rule) {
        (Some(field), Rule::NotANumber) => {
            write!(out, ", {field} not a number after finite values")?
        }
        (Some(field), Rule::LineFeed) if dataflash => write!(
            out,
            ", a line feed in {field}, which as a carriage return would read {:+} in its raw value",
            e.offset
        )?,
        (Some(field), Rule::LineFeed) => write!(
            out,
            ", {field} {:+} as a carriage return, and neither reading joins the frames around it \
             clearly better",
            e.offset
        )?,
        (Some(field), Rule::PhysicalRange) => write!(
            out,
            ", {field} reads {}, past what its unit allows ({}, score {:.2})",
            e.offset, e.threshold, e.score
        )?,
        (Some(field), Rule::ValueRange) => write!(
            out,
            ", {field} {} octaves above its largest value before (threshold {}, score {:.2})",
            e.offset, e.threshold, e.score
        )?,
        (Some(field), _) => write!(
            out,
            ", {field} off by {} (threshold {}, score {:.2})",
            e.offset, e.threshold, e.score
        )?,
        (None, Rule::ListedSuspect) => write!(
            out,
            ", kept as suspect by the salvage that wrote this log (its header lists the frames)"
        )?,
        (None, Rule::WrittenOver) => write!(
            out,
            ", a block written over the log lies in the first frame, and the frames after it are \
             predicted from it"
        )?,
        (None, _) => {}
    }
    let noun = match dataflash {
        true => "message",
        false => "main frame",
    };
    write!(
        out,
        "; {} {noun}{} kept, values in doubt",
        span.frames,
        plural(span.frames)
    )?;
    if let (Some(a), Some(b)) = (span.time_start_us, span.time_end_us) {
        write!(out, "; flight time {} – {}", seconds(a), seconds(b))?;
    }
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checking_for_a_page_notes_how_far_it_has_reached_in_either_format() {
        let logs = [
            crate::testkit::blackbox::demo_log(),
            crate::testkit::dataflash::flight(1, 20),
        ];
        for data in logs {
            let (reached, done) = (AtomicU64::new(0), AtomicU64::new(0));
            let mut timeline = Timeline::default();
            let mut checked = check_data(
                Path::new("log"),
                &data,
                LogFormat::Auto,
                std::slice::from_ref(&reached),
                std::slice::from_ref(&done),
                Some(&mut timeline),
            )
            .unwrap();
            // One timeline per session.
            assert_eq!(timeline.tracks.len(), checked.file_mut().sessions.len());
            let (reached, done) = (reached.into_inner(), done.into_inner());
            // The last frames or messages start near the end.
            let len = data.len() as u64;
            assert!(
                reached > len * 9 / 10 && reached < len,
                "reached {reached} of {len}"
            );
            assert!(done > len * 9 / 10 && done <= len, "done {done} of {len}");
            assert!(matches!(
                (&checked, data.starts_with(b"H Product")),
                (Checked::Blackbox(_), true) | (Checked::Dataflash(_), false)
            ));
        }
    }
}
