//! `bbcheck check`: a summary per file and session, and every corrupt span, as text or JSON.

use super::{Detected, EXIT_CLEAN, EXIT_DAMAGED, EXIT_ERROR, Error, LogFormat, detect, read_input};
use crate::blackbox::{self, decoder::Discard};
use crate::dataflash::{self, DataflashReport};
use crate::report::{FileReport, SessionReport};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Log files to check.
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
}

/// The report of a checked file, by format.
pub enum Checked {
    Blackbox(FileReport),
    Dataflash(Box<DataflashReport>),
}

impl Checked {
    fn is_clean(&self) -> bool {
        match self {
            Checked::Blackbox(report) => report.is_clean(),
            Checked::Dataflash(report) => report.is_clean(),
        }
    }
}

/// Check one file read as `format`; returns its bytes and the report.
pub fn check_file_as(path: &Path, format: LogFormat) -> Result<(Vec<u8>, Checked), Error> {
    let data = read_input(path)?;
    if detect(path, &data, format)? == Detected::Dataflash {
        let report = dataflash::check(&path.display().to_string(), &data);
        return Ok((data, Checked::Dataflash(Box::new(report))));
    }
    let report = check_blackbox(path, &data)?;
    Ok((data, Checked::Blackbox(report)))
}

/// Check one Blackbox file; returns its bytes and the report.
pub fn check_file(path: &Path) -> Result<(Vec<u8>, FileReport), Error> {
    let data = read_input(path)?;
    let report = check_blackbox(path, &data)?;
    Ok((data, report))
}

fn check_blackbox(path: &Path, data: &[u8]) -> Result<FileReport, Error> {
    if !blackbox::is_blackbox(data) {
        return Err(Error::NotALog {
            path: path.to_owned(),
            size: data.len() as u64,
        });
    }
    let name = path.display().to_string();
    Ok(blackbox::decode(&name, data, |_, _| {}, &mut Discard))
}

pub fn run(args: &Args) -> Result<u8, Error> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut code = EXIT_CLEAN;
    for path in &args.files {
        let (data, report) = match check_file_as(path, args.format) {
            Ok(checked) => checked,
            Err(Error::BrokenPipe) => return Err(Error::BrokenPipe),
            Err(e) => {
                eprintln!("bbcheck: {e}");
                code = EXIT_ERROR;
                continue;
            }
        };
        if !report.is_clean() && code == EXIT_CLEAN {
            code = EXIT_DAMAGED;
        }
        let hexdump = args.hexdump.then_some(&data[..]);
        let written = match (&report, args.json) {
            (Checked::Blackbox(report), true) => serde_json::to_writer(&mut out, report)
                .map_err(io::Error::from)
                .and_then(|()| writeln!(out)),
            (Checked::Dataflash(report), true) => serde_json::to_writer(&mut out, report)
                .map_err(io::Error::from)
                .and_then(|()| writeln!(out)),
            (Checked::Blackbox(report), false) => write_human(&mut out, report, hexdump),
            (Checked::Dataflash(report), false) => {
                dataflash::report::write_summary(&mut out, report)
                    .and_then(|()| write_spans(&mut out, &report.file, hexdump))
            }
        };
        written.map_err(|e| Error::io(Path::new("<stdout>"), e))?;
    }
    Ok(code)
}

fn seconds(us: u64) -> String {
    format!("{:.3} s", us as f64 / 1e6)
}

fn write_session(out: &mut impl Write, s: &SessionReport) -> io::Result<()> {
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
    let ending = if s.log_end {
        "ends with a log-end event"
    } else {
        "no log-end event (recording cut short)"
    };
    let verdict = if s.is_clean() { "clean" } else { "damaged" };
    writeln!(out, "    {verdict}; {ending}")?;
    for problem in &s.header_problems {
        writeln!(out, "    header: {problem}")?;
    }
    Ok(())
}

/// Bytes shown before and after a span, and at most at each end of a long one.
const CONTEXT: usize = 16;
const SPAN_ENDS: usize = 48;

/// Write `data[start..end]` as hex and ASCII, 16 bytes a line, marking bytes inside the span.
fn write_hex(
    out: &mut impl Write,
    data: &[u8],
    from: usize,
    to: usize,
    span: (usize, usize),
) -> io::Result<()> {
    for line in (from..to).step_by(16) {
        write!(out, "    {line:08x} ")?;
        let end = (line + 16).min(to);
        for (i, byte) in (line..end).zip(&data[line..end]) {
            let mark = if (span.0..span.1).contains(&i) {
                '>'
            } else {
                ' '
            };
            write!(out, "{mark}{byte:02x}")?;
        }
        write!(out, "{}", "   ".repeat(16 - (end - line)))?;
        let text: String = data[line..end]
            .iter()
            .map(|&b| {
                if b.is_ascii_graphic() || b == b' ' {
                    b as char
                } else {
                    '.'
                }
            })
            .collect();
        writeln!(out, "  |{text}|")?;
    }
    Ok(())
}

/// The bytes around a span: some context, and both ends of a long span.
fn write_span_bytes(out: &mut impl Write, data: &[u8], start: usize, end: usize) -> io::Result<()> {
    let from = start.saturating_sub(CONTEXT) / 16 * 16;
    let to = (end + CONTEXT).min(data.len());
    if end - start <= 2 * SPAN_ENDS {
        return write_hex(out, data, from, to, (start, end));
    }
    let head_end = (start + SPAN_ENDS).div_ceil(16) * 16;
    let tail_start = (end - SPAN_ENDS) / 16 * 16;
    write_hex(out, data, from, head_end, (start, end))?;
    writeln!(out, "    ... {} bytes ...", tail_start - head_end)?;
    write_hex(out, data, tail_start, to, (start, end))
}

fn write_human(
    out: &mut impl Write,
    report: &FileReport,
    hexdump: Option<&[u8]>,
) -> io::Result<()> {
    writeln!(
        out,
        "{}: {} bytes, {} session(s): {}",
        report.path,
        report.size,
        report.sessions.len(),
        report.verdict
    )?;
    for session in &report.sessions {
        write_session(out, session)?;
    }
    write_spans(out, report, hexdump)
}

/// One line per corrupt span, each followed by its bytes when `hexdump` holds the file.
fn write_spans(
    out: &mut impl Write,
    report: &FileReport,
    hexdump: Option<&[u8]>,
) -> io::Result<()> {
    for span in &report.corrupt_spans {
        write!(
            out,
            "{}:{}: damaged [{}..{}) {} bytes, session {}: {}",
            report.path,
            span.start,
            span.start,
            span.end,
            span.end - span.start,
            span.session,
            span.reason.as_str()
        )?;
        if span.frames_lost > 0 {
            write!(out, "; {} main frames lost", span.frames_lost)?;
        }
        if let (Some(a), Some(b)) = (span.time_start_us, span.time_end_us) {
            write!(out, "; flight time {} – {}", seconds(a), seconds(b))?;
        }
        writeln!(out)?;
        if let Some(data) = hexdump {
            write_span_bytes(out, data, span.start as usize, span.end as usize)?;
        }
    }
    Ok(())
}
