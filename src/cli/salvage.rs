//! `bbcheck salvage`: write the trusted frames of a damaged log as a clean log.

use super::output::AtomicFile;
use super::{Detected, EXIT_CLEAN, EXIT_DAMAGED, Error, LogFormat, detect, input, terminal};
use crate::blackbox::{self, salvage::SalvagedSession};
use crate::dataflash;
use crate::report::CorruptSpan;
use indicatif::ProgressBar;
use serde::Serialize;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

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
    /// input's header is missing or does not define the frames.
    #[arg(long, value_name = "DONOR", conflicts_with = "fmt_from")]
    header_from: Option<PathBuf>,
    /// DataFlash: borrow the FMT definitions the input lost from another log of the same
    /// firmware.
    #[arg(long, value_name = "DONOR")]
    fmt_from: Option<PathBuf>,
    /// Read the input as this format instead of deciding from its content.
    #[arg(long, value_enum, default_value_t)]
    format: LogFormat,
}

/// The JSON summary of a salvaged DataFlash log.
#[derive(Serialize)]
struct DataflashSummary<'a> {
    input: String,
    output: String,
    #[serde(flatten)]
    salvaged: &'a dataflash::salvage::SalvageSummary,
}

/// The JSON summary.
#[derive(Serialize)]
struct Summary<'a> {
    input: String,
    outputs: Vec<Output>,
    /// What was dropped, as byte spans of the input with their reasons.
    dropped: &'a [CorruptSpan],
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

pub fn run(args: &Args) -> Result<u8, Error> {
    let data = input::open(&args.input)?;
    let format = match (args.format, &args.fmt_from, &args.header_from) {
        (LogFormat::Auto, Some(_), _) => LogFormat::Dataflash,
        (LogFormat::Auto, _, Some(_)) => LogFormat::Blackbox,
        (chosen, _, _) => chosen,
    };
    let detected = detect(&args.input, &data, format)?;
    // The input's mapped pages are released as the work goes by (the output is held whole); what
    // is printed waits for the progress bar to be gone.
    let reached = AtomicU64::new(0);
    let mut printed = String::new();
    let code = match detected {
        Detected::Dataflash => input::bounded(&data, &reached, &ProgressBar::hidden(), || {
            run_dataflash(args, &data, &mut printed)
        }),
        Detected::Blackbox => {
            let bar = input::progress_bar(data.len() as u64);
            input::bounded(&data, &reached, &bar, || {
                run_blackbox(args, &data, &reached, &mut printed)
            })
        }
    }?;
    io::stdout()
        .write_all(printed.as_bytes())
        .map_err(|e| Error::io(Path::new("<stdout>"), e))?;
    Ok(code)
}

fn run_dataflash(args: &Args, input: &[u8], out: &mut String) -> Result<u8, Error> {
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
    let formats = match &args.fmt_from {
        Some(donor) => dataflash::salvage::donor_formats(&input::open(donor)?),
        None => dataflash::fmt::Formats::new(),
    };
    refuse_input(&args.output, &args.input)?;
    let name = input::name(&args.input);
    let (report, salvaged) = dataflash::salvage::salvage(&name, input, formats);
    let mut file = AtomicFile::create(&args.output)?;
    file.writer()
        .write_all(&salvaged.bytes)
        .map_err(|e| Error::io(&args.output, e))?;
    file.commit()?;
    if !args.json && !terminal::quiet() {
        let s = &salvaged.summary;
        let dropped = s.dropped.iter().map(|d| d.input_end - d.input_start);
        let mut line = format!(
            "wrote {}: {} messages{}",
            args.output.display(),
            s.messages_kept,
            left_out(s.dropped.len(), dropped.sum())
        );
        if !s.formats_added.is_empty() {
            line.push_str(&format!("; FMT written for {}", s.formats_added.join(", ")));
        }
        out.push_str(&line);
        out.push('\n');
    }
    if args.json {
        let summary = DataflashSummary {
            input: name,
            output: args.output.display().to_string(),
            salvaged: &salvaged.summary,
        };
        push_json(out, &summary)?;
    }
    Ok(if report.is_clean() {
        EXIT_CLEAN
    } else {
        EXIT_DAMAGED
    })
}

fn run_blackbox(
    args: &Args,
    input: &[u8],
    reached: &AtomicU64,
    out: &mut String,
) -> Result<u8, Error> {
    if args.fmt_from.is_some() {
        return Err(Error::Usage(format!(
            "{}: --fmt-from applies to DataFlash logs",
            args.input.display()
        )));
    }
    let name = input::name(&args.input);
    let borrowed = match &args.header_from {
        Some(donor_path) => {
            let donor = input::open(donor_path)?;
            let borrowed = blackbox::salvage::borrow_header(input, &donor).map_err(|e| {
                Error::Usage(format!(
                    "{}: header from {}: {e}",
                    args.input.display(),
                    donor_path.display()
                ))
            })?;
            Some(borrowed)
        }
        None if !blackbox::is_blackbox(input) => {
            return Err(Error::NotALog {
                path: args.input.clone(),
                size: input.len() as u64,
            });
        }
        None => None,
    };
    let data = borrowed.as_ref().map_or(input, |b| &b.bytes[..]);
    let to_input = |offset: u64| borrowed.as_ref().map_or(offset, |b| b.input_offset(offset));
    let (mut report, mut sessions) =
        blackbox::salvage::salvage_noting(&name, data, args.session, reached);
    for s in &mut sessions {
        s.summary.input_start = to_input(s.summary.input_start);
        s.summary.input_end = to_input(s.summary.input_end);
        for d in &mut s.summary.dropped {
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
    // Group the sessions into output files.
    let mut files: Vec<(PathBuf, Vec<_>)> = Vec::new();
    if args.split {
        for s in sessions {
            files.push((split_name(&args.output, s.summary.index), vec![s]));
        }
    } else {
        files.push((args.output.clone(), sessions));
    }
    for (path, _) in &files {
        refuse_input(path, &args.input)?;
    }
    let mut pending = Vec::new();
    let mut outputs = Vec::new();
    for (path, sessions) in files {
        let mut file = AtomicFile::create(&path)?;
        let mut offset = 0u64;
        let mut summaries = Vec::new();
        for s in sessions {
            file.writer()
                .write_all(&s.bytes)
                .map_err(|e| Error::io(&path, e))?;
            let mut summary = s.summary;
            summary.output_start = offset;
            summary.output_end = offset + s.bytes.len() as u64;
            offset = summary.output_end;
            summaries.push(summary);
        }
        pending.push(file);
        outputs.push(Output {
            path: path.display().to_string(),
            sessions: summaries,
        });
    }
    for file in pending {
        file.commit()?;
    }
    if !args.json && !terminal::quiet() {
        for output in &outputs {
            let main: u64 = output.sessions.iter().map(|s| s.kept.i + s.kept.p).sum();
            let spans = output.sessions.iter().flat_map(|s| &s.dropped);
            let bytes = spans.clone().map(|d| d.input_end - d.input_start).sum();
            let n = output.sessions.len();
            out.push_str(&format!(
                "wrote {}: {n} session{}, {main} main frames{}\n",
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
            outputs,
            dropped: &dropped,
        };
        push_json(out, &summary)?;
    }
    Ok(if report.is_clean() {
        EXIT_CLEAN
    } else {
        EXIT_DAMAGED
    })
}
