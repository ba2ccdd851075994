//! `bbcheck salvage`: write the trusted frames of a damaged log as a clean log.

use super::output::{AtomicFile, ClosedFile};
use super::{Detected, Error, LogFormat, detect, exit_once_written, input, terminal};
use crate::blackbox::library::{Choice, HeaderLibrary};
use crate::blackbox::{self, salvage::SalvagedSession, sink::Discard};
use crate::dataflash::{self, library::Source};
use crate::report::{CorruptSpan, Keep};
use indicatif::ProgressBar;
use serde::Serialize;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Log to salvage (never modified).
    input: PathBuf,
    /// Clean log to write (with --split, the name each flight's file is derived from:
    /// `<stem>.NN.<ext>`).
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
    /// Keep only this session (1-based).
    #[arg(long)]
    session: Option<usize>,
    /// Write one file per session.
    #[arg(long)]
    split: bool,
    /// Print a JSON summary of what was kept and dropped.
    #[arg(long)]
    json: bool,
    /// Blackbox: borrow the frame definitions from another log of the same firmware when the
    /// input's header is missing or does not define the frames. With `auto` (and by default
    /// for frame data without any header) they come from bbcheck's library of headers: the one
    /// under which the most of the data forms trusted frames.
    #[arg(long, value_name = "DONOR|auto", conflicts_with = "fmt_from")]
    header_from: Option<PathBuf>,
    /// DataFlash: borrow the FMT definitions the input lost from another log of the same
    /// firmware. Without it (or with `auto`) they come from bbcheck's library of firmware
    /// builds: the input's own build's, or one every build in the library agrees on.
    #[arg(long, value_name = "DONOR|auto")]
    fmt_from: Option<PathBuf>,
    /// Read the input as this format instead of deciding from its content.
    #[arg(long, value_enum, default_value_t)]
    format: LogFormat,
    /// Leave out suspect frames and messages (read in step, values in doubt) as if they were
    /// damaged.
    #[arg(long)]
    drop_suspect: bool,
    /// Exit 1 when the input is damaged (the output is written all the same); without it the
    /// command exits 0 once its output is written.
    #[arg(long)]
    fail_on_damage: bool,
}

/// The JSON summary of a salvaged DataFlash log.
#[derive(Serialize)]
struct DataflashSummary<'a> {
    input: String,
    output: String,
    /// Definitions the format library gave types whose FMT was lost.
    formats_from_library: Vec<LentFormat>,
    #[serde(flatten)]
    salvaged: &'a dataflash::salvage::SalvageSummary,
}

/// A type defined from the format library, and the firmware builds the definition is theirs.
#[derive(Serialize)]
struct LentFormat {
    name: String,
    builds: Vec<String>,
}

/// Where the lent definitions came from, in words.
fn lent_from(lent: &[(String, Source)]) -> String {
    let own: Vec<&str> = lent
        .iter()
        .filter(|(_, s)| *s == Source::SameBuild)
        .map(|(name, _)| name.as_str())
        .collect();
    let mut parts: Vec<String> = Vec::new();
    if !own.is_empty() {
        parts.push(format!("{} of the log's own build", own.join(", ")));
    }
    for (name, source) in lent {
        match source {
            Source::SameBuild => {}
            Source::Agreeing(builds) if builds.len() == 1 => {
                parts.push(format!("{name} of {}", builds[0]));
            }
            Source::Agreeing(builds) => {
                parts.push(format!("{name} as {} builds define it", builds.len()));
            }
        }
    }
    parts.join("; ")
}

/// The JSON summary.
#[derive(Serialize)]
struct Summary<'a> {
    input: String,
    /// The header bbcheck's library gave frame data that lost its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    header_from_library: Option<LibraryHeader>,
    outputs: Vec<Output>,
    /// What was dropped, as byte spans of the input with their reasons.
    dropped: &'a [CorruptSpan],
}

/// The header the library gave, as the JSON summary states it.
#[derive(Serialize)]
struct LibraryHeader {
    /// The firmware of the log the library's header came from.
    firmware: String,
    i_interval: u32,
    p_interval: String,
    /// Bytes of frame data tried, and those that formed trusted frames under this header and
    /// under the best of another frame layout.
    probed: u64,
    trusted: u64,
    runner_up: u64,
    /// The craft's constants the header's predictors add, as that log set them: motor outputs
    /// and battery voltage rest on them and may be offset by the lost header's difference.
    assumed: Vec<AssumedConstant>,
}

#[derive(Serialize)]
struct AssumedConstant {
    setting: String,
    value: i64,
    fields: Vec<String>,
}

impl LibraryHeader {
    fn of(c: &Choice) -> LibraryHeader {
        LibraryHeader {
            firmware: c.firmware.clone(),
            i_interval: c.i_interval,
            p_interval: c.p_interval.clone(),
            probed: c.probed,
            trusted: c.trusted,
            runner_up: c.runner_up,
            assumed: c
                .constants
                .iter()
                .map(|(setting, value, fields)| AssumedConstant {
                    setting: setting.clone(),
                    value: *value,
                    fields: fields.clone(),
                })
                .collect(),
        }
    }
}

/// What the summary says of a header from the library.
fn library_note(c: &Choice) -> String {
    let share = |n: u64| 100.0 * n as f64 / c.probed.max(1) as f64;
    let mut note = format!(
        "header from bbcheck's library: the frame layout of {}, I interval {}, P interval {} (as \
         the frames show); {:.1} % of the first {} bytes of frame data form trusted frames under \
         it, {:.1} % under the next layout",
        c.firmware,
        c.i_interval,
        c.p_interval,
        share(c.trusted),
        c.probed,
        share(c.runner_up)
    );
    let assumed: Vec<String> = c
        .constants
        .iter()
        .map(|(setting, value, fields)| format!("{setting} {value} ({})", fields.join(", ")))
        .collect();
    if !assumed.is_empty() {
        note.push_str(&format!(
            ". Values that rest on the craft's own settings take that log's: {}; they are offset \
             by whatever the lost header set otherwise",
            assumed.join("; ")
        ));
    }
    note.push('\n');
    note
}

#[derive(Serialize)]
struct Output {
    path: String,
    sessions: Vec<SalvagedSession>,
}

/// What the summary line says was left out.
fn left_out(spans: usize, bytes: u64) -> String {
    match spans {
        0 => String::new(),
        1 => format!("; left out {bytes} damaged bytes in 1 span (bbcheck check lists it)"),
        n => format!("; left out {bytes} damaged bytes in {n} spans (bbcheck check lists them)"),
    }
}

/// One JSON document on a line of `out`.
fn push_json(out: &mut String, value: &impl Serialize) -> Result<(), Error> {
    let json = serde_json::to_string(value)
        .map_err(|e| Error::io(Path::new("<stdout>"), io::Error::from(e)))?;
    out.push_str(&json);
    out.push('\n');
    Ok(())
}

/// The files a Blackbox salvage writes as the sessions arrive: the output, or with `--split` one
/// file per session. None is moved into place before every one is complete.
struct Files<'a> {
    args: &'a Args,
    /// The file being written, and the session it received last.
    open: Option<(AtomicFile, usize)>,
    /// Files complete, waiting to be moved into place.
    closed: Vec<ClosedFile>,
    /// What stopped the writing, with the file it concerns.
    failed: Option<Error>,
}

impl Files<'_> {
    /// Start the file of session `index` (with `--split`), closing the one before.
    fn start(&mut self, index: usize) -> Result<(), Error> {
        if let Some((file, _)) = self.open.take() {
            self.closed.push(file.close()?);
        }
        let path = split_name(&self.args.output, index);
        refuse_input(&path, &self.args.input)?;
        self.open = Some((AtomicFile::create(&path)?, index));
        Ok(())
    }

    /// Move every file into place.
    fn commit(mut self) -> Result<(), Error> {
        if let Some((file, _)) = self.open.take() {
            self.closed.push(file.close()?);
        }
        for file in self.closed.drain(..) {
            file.commit()?;
        }
        Ok(())
    }
}

impl blackbox::salvage::Output for Files<'_> {
    fn searched(&mut self, offset: usize) {
        input::release_searched(offset);
    }

    fn restart(&mut self) -> io::Result<()> {
        // Dropped uncommitted, the files written so far are removed.
        self.closed.clear();
        if let Some((file, index)) = self.open.take() {
            let path = file.path().to_owned();
            drop(file);
            if !self.args.split {
                let reopened = AtomicFile::create(&path).map_err(|e| {
                    let message = e.to_string();
                    self.failed = Some(e);
                    io::Error::other(message)
                })?;
                self.open = Some((reopened, index));
            }
        }
        Ok(())
    }

    fn write(&mut self, session: usize, bytes: &[u8]) -> io::Result<()> {
        if self.failed.is_some() {
            return Err(io::Error::other("writing stopped"));
        }
        let switch = self.args.split && self.open.as_ref().is_none_or(|(_, s)| *s != session);
        let written = if switch { self.start(session) } else { Ok(()) }.and_then(|()| {
            let (file, _) = self.open.as_mut().expect("opened above");
            file.write_all(bytes).map_err(|e| Error::io(file.path(), e))
        });
        written.map_err(|e| {
            let message = e.to_string();
            self.failed = Some(e);
            io::Error::other(message)
        })
    }
}

fn split_name(output: &Path, index: usize) -> PathBuf {
    let stem = output
        .file_stem()
        .map_or_else(|| "salvaged".into(), |s| s.to_string_lossy().into_owned());
    let name = match output.extension() {
        Some(ext) => format!("{stem}.{index:02}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{index:02}"),
    };
    output.with_file_name(name)
}

/// Whether two paths name the same file (the output need not exist yet).
fn same_file(a: &Path, b: &Path) -> bool {
    let canonical = |p: &Path| {
        std::fs::canonicalize(p).ok().or_else(|| {
            let parent = p
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            std::fs::canonicalize(parent)
                .ok()
                .map(|d| d.join(p.file_name().unwrap_or_default()))
        })
    };
    canonical(a).is_some_and(|x| Some(x) == canonical(b))
}

/// Refuse to write over the input.
fn refuse_input(output: &Path, input: &Path) -> Result<(), Error> {
    if same_file(output, input) {
        return Err(Error::Usage(format!(
            "{}: refusing to write the salvaged log over its input",
            output.display()
        )));
    }
    Ok(())
}

/// Salvage as the arguments ask, printing what was kept and dropped.
pub fn run(args: &Args) -> Result<u8, Error> {
    let (code, printed) = salvage(args)?;
    io::stdout()
        .write_all(printed.as_bytes())
        .map_err(|e| Error::io(Path::new("<stdout>"), e))?;
    Ok(code)
}

/// Salvage as the arguments ask: the exit code and what `run` prints (with `--json`, the
/// summary).
pub fn salvage(args: &Args) -> Result<(u8, String), Error> {
    if args.output == Path::new("-") {
        return Err(Error::Usage(
            "-o -: salvage writes a log file (complete or not at all); name one".into(),
        ));
    }
    let data = input::open(&args.input)?;
    let format = match (args.format, &args.fmt_from, &args.header_from) {
        (LogFormat::Auto, Some(_), _) => LogFormat::Dataflash,
        (LogFormat::Auto, _, Some(_)) => LogFormat::Blackbox,
        (chosen, _, _) => chosen,
    };
    // Frame data without a header borrows one from the library unless a donor is named.
    let detected = match detect(&args.input, &data, format) {
        Err(Error::Headless { .. }) if args.header_from.is_none() => Detected::Blackbox,
        detected => detected?,
    };
    let source = match args.header_from.as_deref() {
        Some(p) if p != Path::new("auto") => Some(HeaderSource::Donor(p)),
        _ if detected == Detected::Blackbox && lacks_header(&data) => Some(HeaderSource::Library),
        _ => None,
    };
    // The output is written as the work goes by and the input's mapped pages are released behind
    // it; what is printed waits for the progress bar to be gone.
    let reached = AtomicU64::new(0);
    let mut printed = String::new();
    let code = match (detected, source) {
        (Detected::Blackbox, Some(source)) => {
            let refused = |e: String| match source {
                HeaderSource::Donor(donor) => Error::Usage(format!(
                    "{}: header from {}: {e}",
                    args.input.display(),
                    donor.display()
                )),
                HeaderSource::Library => Error::NoHeaderFits {
                    path: args.input.clone(),
                    why: e,
                },
            };
            let donor = match source {
                HeaderSource::Donor(donor) => Some(input::open(donor)?),
                HeaderSource::Library => None,
            };
            // The input with the donor's header goes to a scratch file beside the output (removed
            // however the work ends), which is then read like any input: mapped when large.
            let name = args
                .output
                .file_name()
                .unwrap_or_default()
                .to_string_lossy();
            let mut scratch =
                AtomicFile::create(&args.output.with_file_name(format!("{name}.borrowed")))?;
            let hidden = ProgressBar::hidden();
            let mut choice = None;
            let borrowed = input::bounded(&data, std::slice::from_ref(&reached), &hidden, || {
                let searched = &mut input::release_searched;
                let borrowed = match &donor {
                    Some(donor) => blackbox::salvage::borrow_header(&data, donor, searched),
                    None => {
                        let library = HeaderLibrary::builtin();
                        blackbox::salvage::borrow_from_library(&data, &library, searched).map(
                            |(borrowed, chosen)| {
                                choice = Some(chosen);
                                borrowed
                            },
                        )
                    }
                }
                .map_err(refused)?;
                let out = scratch.writer();
                borrowed
                    .write_to(&data, out, |at| reached.store(at as u64, Ordering::Relaxed))
                    .and_then(|()| out.flush())
                    .map_err(|e| Error::io(scratch.temp_path(), e))?;
                Ok::<_, Error>(borrowed)
            })?;
            let copy = input::open(scratch.temp_path())?;
            let bar = input::progress_bar(copy.len() as u64);
            input::bounded(&copy, std::slice::from_ref(&reached), &bar, || {
                let mut followed = input::Reached {
                    inner: Discard,
                    reached: &reached,
                };
                borrowed.check(&copy, &mut followed).map_err(refused)?;
                let borrowed = Borrowing {
                    plan: &borrowed,
                    choice: choice.as_ref(),
                };
                run_blackbox(args, &copy, Some(borrowed), &reached, &mut printed)
            })?
        }
        _ => {
            let bar = input::progress_bar(data.len() as u64);
            input::bounded(
                &data,
                std::slice::from_ref(&reached),
                &bar,
                || match detected {
                    Detected::Dataflash => run_dataflash(args, &data, &reached, &mut printed),
                    Detected::Blackbox => run_blackbox(args, &data, None, &reached, &mut printed),
                },
            )?
        }
    };
    if !args.json && !terminal::quiet() {
        printed.insert_str(0, &data.restored_note());
    }
    Ok((code, printed))
}

/// How many suspect frames or messages (`things`) a salvaged log holds, or left out.
fn suspect_note(kept: u64, dropped: u64, things: &str) -> String {
    match (kept, dropped) {
        (0, 0) => String::new(),
        (0, n) => format!("; left out {n} suspect {things}"),
        (n, _) => format!(" ({n} suspect: values in doubt)"),
    }
}

fn run_dataflash(
    args: &Args,
    input: &[u8],
    reached: &AtomicU64,
    out: &mut String,
) -> Result<u8, Error> {
    let usage = |what: &str| {
        Error::Usage(format!(
            "{}: {what} applies to Blackbox logs; a DataFlash log is salvaged whole",
            args.input.display()
        ))
    };
    if args.session.is_some() {
        return Err(usage("--session"));
    }
    if args.split {
        return Err(usage("--split"));
    }
    if args.header_from.is_some() {
        return Err(usage("--header-from"));
    }
    let mut lent = Vec::new();
    let formats = match &args.fmt_from {
        Some(donor) if donor != Path::new("auto") => {
            // Scanned whole, its mapped pages released behind the scan.
            let donor = input::open(donor)?;
            let at = AtomicU64::new(0);
            input::bounded(
                &donor,
                std::slice::from_ref(&at),
                &ProgressBar::hidden(),
                || dataflash::salvage::donor_formats(&donor, &at),
            )
        }
        _ => {
            // The library's definitions for the types whose FMT is lost, at the lengths their
            // headers show.
            let report = dataflash::check(&input::name(&args.input), input).dataflash;
            let library = dataflash::library::Library::builtin();
            let given = library.lend(report.firmware.as_deref(), &report.undefined_types);
            lent = given.defined;
            given.formats
        }
    };
    refuse_input(&args.output, &args.input)?;
    let name = input::name(&args.input);
    let mut file = AtomicFile::create(&args.output)?;
    let (report, summary) = dataflash::salvage::salvage_into(
        &name,
        input,
        formats,
        Keep::dropping_suspect(args.drop_suspect),
        reached,
        file.writer(),
    )
    .map_err(|e| Error::io(&args.output, e))?;
    file.commit()?;
    if !args.json && !terminal::quiet() {
        let s = &summary;
        let dropped = s.dropped.iter().map(|d| d.input_end - d.input_start);
        let mut line = format!(
            "wrote {}: {} messages{}{}",
            args.output.display(),
            s.messages_kept,
            suspect_note(s.suspect_kept, s.suspect_dropped, "messages"),
            left_out(s.dropped.len(), dropped.sum())
        );
        if !s.formats_added.is_empty() {
            line.push_str(&format!("; FMT written for {}", s.formats_added.join(", ")));
        }
        if !lent.is_empty() {
            line.push_str(&format!(" (from the format library: {})", lent_from(&lent)));
        }
        let undefined = &report.dataflash.undefined_types;
        if !undefined.is_empty() {
            let messages: u64 = undefined.iter().map(|u| u.messages).sum();
            line.push_str(&format!(
                "; left out {messages} messages of {} type(s) whose FMT is lost, with no definition \
                 at hand (--fmt-from DONOR reads them)",
                undefined.len()
            ));
        }
        out.push_str(&line);
        out.push('\n');
    }
    if args.json {
        let summary = DataflashSummary {
            input: name,
            output: args.output.display().to_string(),
            formats_from_library: lent
                .iter()
                .map(|(name, source)| LentFormat {
                    name: name.clone(),
                    builds: match source {
                        Source::SameBuild => report.dataflash.firmware.iter().cloned().collect(),
                        Source::Agreeing(builds) => builds.clone(),
                    },
                })
                .collect(),
            salvaged: &summary,
        };
        push_json(out, &summary)?;
    }
    Ok(exit_once_written(!report.is_clean(), args.fail_on_damage))
}

/// Whether some frame data of `data` has no header, searched with the mapped pages released
/// behind the search.
fn lacks_header(data: &input::Input) -> bool {
    input::bounded(data, &[], &ProgressBar::hidden(), || {
        blackbox::salvage::lacks_header(data, &mut input::release_searched)
    })
}

/// Where a Blackbox header that the input lost comes from.
#[derive(Clone, Copy)]
enum HeaderSource<'a> {
    Donor(&'a Path),
    Library,
}

/// The input with a borrowed header in front of the data that lost its own, and the choice from
/// the library when the header came from there.
#[derive(Clone, Copy)]
struct Borrowing<'a> {
    plan: &'a blackbox::salvage::Borrowed,
    choice: Option<&'a Choice>,
}

/// Salvage `data`: the input, or its copy with a borrowed header in front of its sessions'
/// data (`borrowed`), whose offsets are mapped back to the input's in what is printed.
fn run_blackbox(
    args: &Args,
    data: &[u8],
    borrowing: Option<Borrowing<'_>>,
    reached: &AtomicU64,
    out: &mut String,
) -> Result<u8, Error> {
    let borrowed = borrowing.map(|b| b.plan);
    let choice = borrowing.and_then(|b| b.choice);
    if args.fmt_from.is_some() {
        return Err(Error::Usage(format!(
            "{}: --fmt-from applies to DataFlash logs",
            args.input.display()
        )));
    }
    let name = input::name(&args.input);
    if borrowed.is_none() && !blackbox::is_blackbox(data) {
        return Err(Error::not_a_blackbox_log(&args.input, data));
    }
    let to_input = |offset: u64| borrowed.map_or(offset, |b| b.input_offset(offset));
    let mut files = Files {
        args,
        open: None,
        closed: Vec::new(),
        failed: None,
    };
    if !args.split {
        refuse_input(&args.output, &args.input)?;
        files.open = Some((AtomicFile::create(&args.output)?, 0));
    }
    let keep = Keep::dropping_suspect(args.drop_suspect);
    let salvaged =
        blackbox::salvage::salvage_into(&name, data, args.session, keep, reached, &mut files);
    let (mut report, mut sessions) = match (salvaged, files.failed.take()) {
        (_, Some(e)) => return Err(e),
        (Err(e), None) => return Err(Error::io(&args.output, e)),
        (Ok(done), None) => done,
    };
    for s in &mut sessions {
        s.input_start = to_input(s.input_start);
        s.input_end = to_input(s.input_end);
        for d in &mut s.dropped {
            d.input_start = to_input(d.input_start);
            d.input_end = to_input(d.input_end);
        }
    }
    for span in &mut report.corrupt_spans {
        span.start = to_input(span.start);
        span.end = to_input(span.end);
    }
    if let Some(n) = args.session
        && sessions.is_empty()
    {
        return Err(Error::Usage(format!(
            "{}: there is no session {n} (the file has {})",
            args.input.display(),
            report.sessions.len()
        )));
    }
    // Where each session landed: its own file with --split, otherwise one after the other.
    let mut outputs: Vec<Output> = Vec::new();
    let mut offset = 0;
    for mut summary in sessions {
        if args.split || outputs.is_empty() {
            let path = match args.split {
                true => split_name(&args.output, summary.index),
                false => args.output.clone(),
            };
            outputs.push(Output {
                path: path.display().to_string(),
                sessions: Vec::new(),
            });
            offset = 0;
        }
        summary.output_start = offset;
        summary.output_end += offset;
        offset = summary.output_end;
        outputs
            .last_mut()
            .expect("pushed above")
            .sessions
            .push(summary);
    }
    if !args.split && outputs.is_empty() {
        outputs.push(Output {
            path: args.output.display().to_string(),
            sessions: Vec::new(),
        });
    }
    files.commit()?;
    if !args.json
        && !terminal::quiet()
        && let Some(c) = choice
    {
        out.push_str(&library_note(c));
    }
    if !args.json && !terminal::quiet() {
        for output in &outputs {
            let main: u64 = output.sessions.iter().map(|s| s.kept.i + s.kept.p).sum();
            let sum = |f: fn(&SalvagedSession) -> u64| output.sessions.iter().map(f).sum::<u64>();
            let suspect = suspect_note(
                sum(|s| s.suspect_kept),
                sum(|s| s.suspect_dropped),
                "main frames",
            );
            let spans = output.sessions.iter().flat_map(|s| &s.dropped);
            let bytes = spans.clone().map(|d| d.input_end - d.input_start).sum();
            let n = output.sessions.len();
            let undefinable: u64 = output.sessions.iter().map(|s| s.frames_undefinable).sum();
            let undefinable = match undefinable {
                0 => String::new(),
                n => format!("; left out {n} trusted frames the rewritten header cannot define"),
            };
            out.push_str(&format!(
                "wrote {}: {n} session{}, {main} main frames{suspect}{}{undefinable}\n",
                output.path,
                if n == 1 { "" } else { "s" },
                left_out(spans.count(), bytes)
            ));
        }
    }
    if args.json {
        let dropped: Vec<CorruptSpan> = report
            .corrupt_spans
            .iter()
            .filter(|s| args.session.is_none_or(|n| s.session == n))
            .cloned()
            .collect();
        let summary = Summary {
            input: name,
            header_from_library: choice.map(LibraryHeader::of),
            outputs,
            dropped: &dropped,
        };
        push_json(out, &summary)?;
    }
    Ok(exit_once_written(!report.is_clean(), args.fail_on_damage))
}
